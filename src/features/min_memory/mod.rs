//! The "minimum memory" mode (Hong et al.): its context (`state`, the
//! numbers of [`crate::min_memory`] for the chain on the page) and its card.

mod card;
mod state;

pub use card::MinMemoryCard;
pub use state::{use_min_memory, MinMemory};
