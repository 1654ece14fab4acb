//! The order in which one rank runs its micro-batches' phases.
//!
//! GPipe (Huang et al., NeurIPS 2019): every forward, then every backward.
//! 1F1B (PipeDream-flush, Narayanan et al., ICML 2021; PyTorch's
//! `Schedule1F1B`): rank r of p first runs w = min(p − r − 1, m − 1)
//! forwards, then alternates one forward and one backward, then runs the
//! backwards left; at most w + 1 = min(p − r, m) micro-batches are in
//! flight. Interleaved schedules (virtual stages) are not modelled.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which pipeline schedule the ranks follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PipelineSchedule {
    #[serde(rename = "gpipe")]
    GPipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
}

impl PipelineSchedule {
    /// The names people type (`--schedule`), in the order of [`ALL`](Self::ALL).
    pub const ALL: [PipelineSchedule; 2] = [PipelineSchedule::GPipe, PipelineSchedule::OneFOneB];

    pub fn name(self) -> &'static str {
        match self {
            PipelineSchedule::GPipe => "gpipe",
            PipelineSchedule::OneFOneB => "1f1b",
        }
    }

    pub fn from_name(name: &str) -> Option<PipelineSchedule> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for PipelineSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One phase of a micro-batch's step on a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The rank's forward: its schedule up to its first backward.
    Forward,
    /// The rest: recomputations and backwards.
    Backward,
}

/// One entry of a rank's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slot {
    pub microbatch: usize,
    pub phase: Phase,
}

fn forward(microbatch: usize) -> Slot {
    Slot {
        microbatch,
        phase: Phase::Forward,
    }
}

fn backward(microbatch: usize) -> Slot {
    Slot {
        microbatch,
        phase: Phase::Backward,
    }
}

/// Rank `rank` of `ranks` running `m` micro-batches under `schedule`.
pub fn order(schedule: PipelineSchedule, rank: usize, ranks: usize, m: usize) -> Vec<Slot> {
    match schedule {
        PipelineSchedule::GPipe => (0..m).map(forward).chain((0..m).map(backward)).collect(),
        PipelineSchedule::OneFOneB => {
            let warmup = (ranks - rank - 1).min(m.saturating_sub(1));
            let mut out: Vec<Slot> = (0..warmup).map(forward).collect();
            for j in 0..m - warmup {
                out.push(forward(warmup + j));
                out.push(backward(j));
            }
            out.extend((m - warmup..m).map(backward));
            out
        }
    }
}

/// The most micro-batches whose forward has run and backward has not,
/// at any moment of `order`.
pub fn in_flight(order: &[Slot]) -> usize {
    let mut held = 0usize;
    let mut most = 0;
    for slot in order {
        match slot.phase {
            Phase::Forward => {
                held += 1;
                most = most.max(held);
            }
            Phase::Backward => held -= 1,
        }
    }
    most
}

/// The fewest other micro-batches held beside the busiest forward and
/// beside the busiest backward of `order`: every schedule meets both, so
/// a bound may assume that many beside its peak.
pub fn others_held(order: &[Slot]) -> usize {
    let mut held = 0usize;
    let (mut forward, mut backward) = (0, 0);
    for slot in order {
        match slot.phase {
            Phase::Forward => {
                forward = forward.max(held);
                held += 1;
            }
            Phase::Backward => {
                held -= 1;
                backward = backward.max(held);
            }
        }
    }
    forward.min(backward)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(order: &[Slot]) -> String {
        (order.iter())
            .map(|s| match s.phase {
                Phase::Forward => format!("F{}", s.microbatch),
                Phase::Backward => format!("B{}", s.microbatch),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_f_one_b_holds_p_minus_r() {
        // The orders of PyTorch's Schedule1F1B for p = 4, m = 6.
        let o = |r| order(PipelineSchedule::OneFOneB, r, 4, 6);
        assert_eq!(show(&o(0)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
        assert_eq!(show(&o(3)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
        for r in 0..4 {
            assert_eq!(in_flight(&o(r)), 4 - r, "rank {r}");
        }
        // Fewer micro-batches than ranks: all of them, at most.
        assert_eq!(in_flight(&order(PipelineSchedule::OneFOneB, 0, 4, 2)), 2);
        assert_eq!(in_flight(&order(PipelineSchedule::GPipe, 3, 4, 5)), 5);
    }

    #[test]
    fn every_phase_once_forward_first() {
        for schedule in PipelineSchedule::ALL {
            for (p, m) in [(1, 1), (2, 5), (4, 3), (4, 8)] {
                for r in 0..p {
                    let o = order(schedule, r, p, m);
                    assert_eq!(o.len(), 2 * m);
                    for j in 0..m {
                        let f = o.iter().position(|s| *s == forward(j)).unwrap();
                        let b = o.iter().position(|s| *s == backward(j)).unwrap();
                        assert!(f < b, "{schedule} r{r}: B{j} before F{j}");
                    }
                }
            }
        }
    }
}
