//! What a runtime and its policy say to each other about one tensor: the
//! [`Candidate`] the Filter scores and the [`Action`] the Director picks.
//! The policies (`dtr.rs`, `delta.rs`) and the [`Policy`](super::Policy)
//! that chooses between them all speak it, so it sits below them.

use super::tensors::Tensor;

/// A resident tensor the Filter may pick, with what the heuristics read.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub tensor: Tensor,
    /// m(t).
    pub bytes: u64,
    /// s(t): seconds since an operation last produced or read it.
    pub staleness: f64,
    /// c_r(t): seconds to bring it back by recomputation, its evicted
    /// ancestors included.
    pub recompute_seconds: f64,
}

/// The Director's decision (DELTA Table I).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Evict,
    Offload,
}
