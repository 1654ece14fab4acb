//! The chain model shared by every algorithm (`docs/model.md`).

mod chain;
mod error;
mod inputs;
mod peer;
pub mod scale;
pub mod units;

pub use chain::{Chain, Choice, MenuOption, Stage, MAX_MENU, MAX_STAGES};
pub use error::ChainError;
pub use inputs::{validate as validate_inputs, InputTensor, MAX_INPUTS, MAX_INPUT_DIMS};
pub use peer::{validate as validate_peers, Peer, MAX_PEERS};
pub use scale::{scaled, AffineFit, BatchModel, Scale};
