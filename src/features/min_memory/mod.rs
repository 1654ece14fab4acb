//! The "minimum memory" mode (Hong et al.): its numbers for the chain on
//! the page (`model`, pure, on the host too), its context (`context`) and
//! its card.

pub mod model;

#[cfg(target_arch = "wasm32")]
mod card;
#[cfg(target_arch = "wasm32")]
mod context;

#[cfg(target_arch = "wasm32")]
pub use card::MinMemoryCard;
#[cfg(target_arch = "wasm32")]
pub use context::{use_min_memory, MinMemory};
