//! Learning with the page: the lesson and its presentation, the guide (a
//! teaching chain, what to try), the step as a graph, the first visit's
//! welcome, and large type for a projector.

mod graph;
mod guide;
mod large_type;
mod lesson;
mod welcome;

pub use graph::GraphView;
pub use guide::Guide;
pub use large_type::{LargeType, LargeTypeButton};
pub use lesson::{step_link, Lesson, LessonCard};
pub use welcome::Welcome;
