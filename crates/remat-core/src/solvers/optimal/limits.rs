//! How far the exact search goes, and the typed refusal beyond it.
//!
//! The number of states grows exponentially with the chain (up to
//! L · 2^{3L+2} bitsets, see the module doc of `optimal`), so the search
//! refuses a chain longer than [`Limits::max_stages`] before starting and
//! stops with [`LimitError::TooManyStates`] when it has stored
//! [`Limits::max_states`] states (about 200 bytes each) without closing the
//! goal. Both are errors, not "infeasible": they say nothing about whether
//! the budget can be met.

use crate::solvers::api::SolveError;

/// The search's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest chain searched.
    pub max_stages: usize,
    /// The most states stored before giving up.
    pub max_states: usize,
}

/// The longest chain `optimal` accepts. The benchmark (`benches/optimal.rs`,
/// docs/algorithms.md) solves its 16-stage chain in at most 0.34 s and its
/// 18-stage chain in 0.8–2.2 s (medians); another 18-stage chain took
/// 0.6–9 s and reached the state limit at one budget; chains of 20 and 22
/// stages reached it at every budget tried. Past 18 the search rarely
/// finishes, so it is refused at once.
pub const MAX_STAGES: usize = 18;

/// About 0.8 GB of states natively (some 200 bytes each with the map and
/// the queue), and about 10 s of search on this project's build machine.
pub const MAX_STATES: usize = 4_000_000;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_stages: MAX_STAGES,
            max_states: MAX_STATES,
        }
    }
}

/// Why the exact search refused to answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("optimal: the exact search handles chains of at most {limit} stages (its states grow exponentially with L); this chain has {stages}. Use rotor for the best persistent schedule")]
    TooLong { stages: usize, limit: usize },
    #[error("optimal: the exact search stopped after {limit} states without finishing (about 0.8 GB); this chain and budget are too large for it. Use rotor for the best persistent schedule")]
    TooManyStates { limit: usize },
}

impl From<LimitError> for SolveError {
    fn from(e: LimitError) -> SolveError {
        SolveError::TooLarge(e.to_string())
    }
}

impl Limits {
    /// Refuses a chain longer than the limit before any work.
    pub fn check_stages(&self, stages: usize) -> Result<(), LimitError> {
        // The bitsets hold a^0 … a^L in 64 bits.
        let limit = self.max_stages.min(62);
        if stages > limit {
            return Err(LimitError::TooLong { stages, limit });
        }
        Ok(())
    }
}
