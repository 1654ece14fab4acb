//! Checkpoint segments: a chain cut into runs of consecutive stages, each
//! run under `torch.utils.checkpoint` or stored, and the one schedule
//! PyTorch runs for them. Hong et al.'s checkpoint sets
//! ([`hong`](crate::solvers::hong)) are built as segments, and the export
//! to PyTorch ([`lowering::pytorch`](crate::lowering::pytorch)) reads them off
//! a schedule; both sit above the schedule layer, where the type lives.

use super::Op;
use std::fmt;

/// A run of consecutive stages `first..=last` (1-based, as in the papers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Segment {
    pub first: usize,
    pub last: usize,
    /// Run under `torch.utils.checkpoint` (only its input kept, recomputed
    /// in the backward pass); false: run normally, everything kept.
    pub checkpointed: bool,
}

/// The schedule `torch.utils.checkpoint` runs for these segments (stages
/// 1..=L in order).
pub fn schedule(segs: &[Segment]) -> Vec<Op> {
    let mut ops = Vec::new();
    for s in segs {
        if s.checkpointed {
            ops.push(Op::ForwardCheckpoint { stage: s.first });
            ops.extend((s.first + 1..=s.last).map(|stage| Op::ForwardNone { stage }));
        } else {
            ops.extend((s.first..=s.last).map(Op::forward_all));
        }
    }
    for s in segs.iter().rev() {
        if s.checkpointed {
            ops.extend((s.first..=s.last).map(Op::forward_all));
        }
        ops.extend((s.first..=s.last).rev().map(|stage| Op::Backward { stage }));
    }
    ops
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.checkpointed {
            "checkpointed"
        } else {
            "stored"
        };
        if self.first == self.last {
            write!(f, "{} {what}", self.first)
        } else {
            write!(f, "{}–{} {what}", self.first, self.last)
        }
    }
}
