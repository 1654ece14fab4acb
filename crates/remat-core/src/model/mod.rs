//! The chain model shared by every algorithm (`docs/model.md`).

mod chain;
pub mod scale;
pub mod units;

pub use chain::{Chain, ChainError, Stage, MAX_STAGES};
pub use scale::{scaled, AffineFit, BatchModel, Scale};
