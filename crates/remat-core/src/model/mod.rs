//! The chain model shared by every algorithm (DESIGN.md, "The chain model").

mod chain;
pub mod units;

pub use chain::{Chain, ChainError, Stage, MAX_STAGES};
