//! The order in which one rank runs its micro-batches' phases.
//!
//! GPipe (Huang et al., NeurIPS 2019): every forward, then every backward.
//! 1F1B (PipeDream-flush, Narayanan et al., ICML 2021; PyTorch's
//! `Schedule1F1B`): rank r of p first runs w = min(p − r − 1, m − 1)
//! forwards, then alternates one forward and one backward, then runs the
//! backwards left; at most w + 1 = min(p − r, m) micro-batches are in
//! flight.
//! Interleaved 1F1B (Narayanan et al., SC 2021; PyTorch's
//! `ScheduleInterleaved1F1B`): each rank holds v chunks of the model
//! (virtual stages r, r + p, …, r + (v − 1)p) and runs PyTorch's own order
//! ([`interleaved`]): warm-up forwards cycling over its chunks a round of
//! micro-batches at a time, then one forward and one backward, then the
//! backwards left; `python/tests/test_pipeline.py` checks it against
//! PyTorch's `_get_1f1b_rank_ops`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which pipeline schedule the ranks follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PipelineSchedule {
    #[serde(rename = "gpipe")]
    GPipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "interleaved-1f1b")]
    Interleaved1F1B,
}

impl PipelineSchedule {
    /// The names people type (`--schedule`), in the order of [`ALL`](Self::ALL).
    pub const ALL: [PipelineSchedule; 3] = [
        PipelineSchedule::GPipe,
        PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved1F1B,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PipelineSchedule::GPipe => "gpipe",
            PipelineSchedule::OneFOneB => "1f1b",
            PipelineSchedule::Interleaved1F1B => "interleaved-1f1b",
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
    /// Which of the rank's chunks runs (0 but under an interleaved
    /// schedule): chunk c of rank r is the pipeline's piece c·p + r.
    pub chunk: usize,
}

fn forward(microbatch: usize) -> Slot {
    Slot {
        microbatch,
        phase: Phase::Forward,
        chunk: 0,
    }
}

fn backward(microbatch: usize) -> Slot {
    Slot {
        microbatch,
        phase: Phase::Backward,
        chunk: 0,
    }
}

/// Rank `rank` of `ranks` running `m` micro-batches under `schedule`, with
/// `chunks` chunks per rank (1 but under an interleaved schedule).
pub fn order(
    schedule: PipelineSchedule,
    rank: usize,
    ranks: usize,
    m: usize,
    chunks: usize,
) -> Vec<Slot> {
    match schedule {
        PipelineSchedule::Interleaved1F1B => interleaved(rank, ranks, m, chunks),
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

/// How many rounds PyTorch's interleaved schedules cut `m` micro-batches
/// into over `ranks` ranks: max(1, m / p); m must be a multiple of it
/// (`ScheduleInterleaved1F1B` raises otherwise).
pub fn interleaved_rounds(ranks: usize, m: usize) -> usize {
    (m / ranks).max(1)
}

/// PyTorch's `ScheduleInterleaved1F1B` order for rank `rank` (its
/// `_calculate_single_rank_operations` and `_get_1f1b_rank_ops`, without
/// the idle slots, which order nothing): w = min((v − 1)·m_r + 2(p − 1 − r),
/// v·m) warm-up forwards, where m_r is the micro-batches of a round; the
/// forward of step k runs chunk ⌊k / m_r⌋ mod v, the backward of step k
/// chunk v − 1 − ⌊(k − w) / m_r⌋ mod v, each chunk taking its micro-batches
/// in turn.
pub fn interleaved(rank: usize, ranks: usize, m: usize, chunks: usize) -> Vec<Slot> {
    let per_round = m / interleaved_rounds(ranks, m);
    let total = chunks * m;
    let warmup = ((chunks - 1) * per_round + 2 * (ranks - 1 - rank)).min(total);
    let forward_chunk = |step: usize| (step / per_round) % chunks;
    let backward_chunk = |step: usize| chunks - 1 - ((step - warmup) / per_round) % chunks;
    let (mut next_f, mut next_b) = (vec![0usize; chunks], vec![0usize; chunks]);
    let mut out = Vec::with_capacity(2 * total);
    let push = |out: &mut Vec<Slot>, phase: Phase, chunk: usize, next: &mut [usize]| {
        out.push(Slot {
            microbatch: next[chunk],
            phase,
            chunk,
        });
        next[chunk] += 1;
    };
    for step in 0..total + warmup {
        if step < total {
            push(&mut out, Phase::Forward, forward_chunk(step), &mut next_f);
        }
        if step >= warmup {
            push(&mut out, Phase::Backward, backward_chunk(step), &mut next_b);
        }
    }
    out
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
        let o = |r| order(PipelineSchedule::OneFOneB, r, 4, 6, 1);
        assert_eq!(show(&o(0)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
        assert_eq!(show(&o(3)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
        for r in 0..4 {
            assert_eq!(in_flight(&o(r)), 4 - r, "rank {r}");
        }
        // Fewer micro-batches than ranks: all of them, at most.
        assert_eq!(in_flight(&order(PipelineSchedule::OneFOneB, 0, 4, 2, 1)), 2);
        assert_eq!(in_flight(&order(PipelineSchedule::GPipe, 3, 4, 5, 1)), 5);
    }

    #[test]
    fn every_phase_once_forward_first() {
        for schedule in PipelineSchedule::ALL {
            let chunk_counts: &[usize] = match schedule {
                PipelineSchedule::Interleaved1F1B => &[1, 2, 3],
                _ => &[1],
            };
            for &v in chunk_counts {
                for (p, m) in [(1usize, 1usize), (2, 4), (4, 3), (4, 8), (2, 6)] {
                    if !m.is_multiple_of(interleaved_rounds(p, m)) {
                        continue;
                    }
                    for r in 0..p {
                        let o = order(schedule, r, p, m, v);
                        assert_eq!(o.len(), 2 * m * v);
                        for c in 0..v {
                            for j in 0..m {
                                let at = |phase| {
                                    let slot = Slot {
                                        microbatch: j,
                                        phase,
                                        chunk: c,
                                    };
                                    let found = o.iter().filter(|s| **s == slot).count();
                                    assert_eq!(found, 1, "{schedule} v{v} r{r}: {slot:?}");
                                    o.iter().position(|s| *s == slot).unwrap()
                                };
                                let (f, b) = (at(Phase::Forward), at(Phase::Backward));
                                assert!(
                                    f < b,
                                    "{schedule} v{v} r{r}: B{j} before F{j} (chunk {c})"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    fn show_chunks(order: &[Slot]) -> String {
        (order.iter())
            .map(|s| match s.phase {
                Phase::Forward => format!("F{}.{}", s.chunk, s.microbatch),
                Phase::Backward => format!("B{}.{}", s.chunk, s.microbatch),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// PyTorch's `ScheduleInterleaved1F1B` for p = 2, v = 2, m = 4, read
    /// off its `pipeline_order` (idle slots dropped; stage index s is
    /// chunk s div p): rank 0 warms up with 4 forwards (2 + 2·1), rank 1
    /// with 2; the Python test compares every (p, v, m) of a grid.
    #[test]
    fn interleaved_matches_pytorch_by_hand() {
        assert_eq!(
            show_chunks(&interleaved(0, 2, 4, 2)),
            "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3"
        );
        assert_eq!(
            show_chunks(&interleaved(1, 2, 4, 2)),
            "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 F1.3 B1.3 B0.2 B0.3"
        );
    }
}
