//! What the Learn place and the strategy cards teach, as plain data: the
//! lesson's steps and answers (`lesson_steps`), the classic strategies
//! side by side on the chain on the page (`classics`: store-all,
//! recompute-all, √n, rotor, the optimum), the step as a graph of forward
//! and backward nodes and which are resident at each operation
//! (`step_graph`), and which of its operations become frames of the GIF
//! (`animated_gif`).

pub mod animated_gif;
pub mod classics;
pub mod lesson_steps;
pub mod step_graph;
