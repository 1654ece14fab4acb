//! Learning with the page: the guide (a teaching chain, what to try), the
//! first visit's welcome, and large type for a projector.

mod guide;
mod large_type;
mod welcome;

pub use guide::Guide;
pub use large_type::{LargeType, LargeTypeButton};
pub use welcome::Welcome;
