//! What a runtime asks its policy: when to start releasing (the trigger),
//! which tensor to release (the Filter's score, least first), how (the
//! Director's action), and whether to reload ahead (the Prefetcher).

use super::delta::Delta;
use super::dtr;
use super::release::{Action, Candidate};

/// A dynamic runtime's decision logic.
#[derive(Clone, Debug, PartialEq)]
pub enum Policy {
    /// Recompute only, eviction by h_DTR, released when an allocation does
    /// not fit.
    Dtr,
    Delta(Delta),
}

impl Policy {
    /// Memory in use above which the runtime releases tensors: the budget
    /// for DTR (when the next allocation does not fit), 3/4 of it for DELTA.
    pub fn trigger(&self, budget: u64) -> u64 {
        match self {
            Policy::Dtr => budget,
            Policy::Delta(d) => d.trigger(budget),
        }
    }

    /// The Filter: the candidate of least score is released first.
    pub fn score(&self, c: &Candidate) -> f64 {
        match self {
            Policy::Dtr => dtr::score(c),
            Policy::Delta(d) => d.filter(c),
        }
    }

    /// Whether `c` may be released at all: a tensor no action applies to
    /// (a^0 with no link to offload it) stays.
    pub fn may_release(&self, c: &Candidate) -> bool {
        match self {
            Policy::Dtr => !c.tensor.uncomputable(),
            Policy::Delta(d) => !c.tensor.uncomputable() || d.can_offload(),
        }
    }

    /// The Director.
    pub fn action(&self, c: &Candidate) -> Action {
        match self {
            Policy::Dtr => Action::Evict,
            Policy::Delta(d) => d.director(c),
        }
    }

    /// The estimated seconds to reload `bytes`; None when the policy never
    /// reloads (DTR, or no link).
    pub fn reload_seconds(&self, bytes: u64) -> Option<f64> {
        match self {
            Policy::Dtr => None,
            Policy::Delta(d) => d.transfer_seconds(bytes),
        }
    }

    /// At most this many reloaded tensors waiting for their first read;
    /// None: no Prefetcher.
    pub fn reload_limit(&self) -> Option<usize> {
        match self {
            Policy::Dtr => None,
            Policy::Delta(d) => d.can_offload().then_some(d.reload_limit),
        }
    }
}
