//! Pipeline parallelism: one plan per rank.
//!
//! **Setting.** The chain is cut into p consecutive pieces, one per rank
//! (`split`: stages per rank), and the batch into m micro-batches. Each rank
//! runs its piece's forward for a micro-batch (the *F phase*), sends the
//! output on, and later, once the gradient of that output comes back, its
//! backward (the *B phase*). Between the two, the micro-batch's saved
//! tensors stay on the rank: under GPipe all m micro-batches are in flight
//! at once; under 1F1B (PipeDream-flush, `torch.distributed.pipelining`'s
//! `Schedule1F1B`) rank r of p holds at most min(p − r, m). So rank 0
//! needs the most memory and the last rank the least, and one checkpointing
//! plan for every rank either wastes the late ranks' memory or overflows
//! the early ones (AdaPipe, Sun et al., ASPLOS 2024, plans recomputation
//! per pipeline stage for this reason). Under interleaved 1F1B
//! (`ScheduleInterleaved1F1B`) each rank holds v pieces, *chunks* (piece k
//! on rank k mod p), whose micro-batches are in flight together.
//!
//! **What a rank's step costs** ([`judge`]). A micro-batch runs the rank's
//! persistent schedule S (the piece's [`rank_chain`], any schedule of
//! docs/model.md's operations). Its F phase is S up to its first backward,
//! its B phase the rest. The simulator runs S once; the rank's memory at any
//! moment is the running micro-batch's level plus h(S) for every other
//! micro-batch in flight, where h(S) is the level S leaves at the end of its
//! F phase (the input, its checkpoints, what its last F_all kept) without
//! δ^L, which arrives only with the backward. The rank's order of phases
//! ([`Pipeline::order`]) says how many are in flight at each moment, so its
//! peak is read off that order, not assumed.
//!
//! **The plan** ([`plan`]). For pieces of up to [`EXACT_MAX_STAGES`]
//! stages, the exact optimum over persistent schedules (`exact.rs`: every
//! top-level path, each segment of its B phase by rotor at the budget the
//! path leaves it; tests/pipeline.rs holds it equal to exhaustive search),
//! paths ending in a segment to L included: the F phase then sends a^L
//! and keeps only it and the segment's input, and the B phase runs the
//! segment again ([`forward_phase_len`]), as `checkpoint` around a
//! rank's last block does.
//! Longer pieces take a search over rotor's trade-off curve
//! ([`Search::RotorCurve`]): rotor's optimal schedules of the piece at
//! every budget where its optimum changes, and store-all, each judged at
//! the rank's order, the fastest that fits kept. That is not exact: a
//! schedule optimal at no budget but holding less between its phases can
//! fit where no candidate does. So each rank's plan carries a
//! **certificate** ([`RankPlan::lower_bound_seconds`]): if r micro-batches
//! are held beside a running one, every schedule of that class that fits
//! holds at least h_min = ω_a^0 + min(ω_a^L, ω_a^{L−1} + min_k ω_ā^{L,k})
//! in each of them (the output it sent, or B^L's input and ā^L), so its
//! own peak is at most M − r·h_min + ω_δ^L, and its time at least rotor's
//! optimum there (a path ending in a segment is no faster, and needs no
//! less memory, than the same path running that segment at once). When
//! even that budget has no schedule, no persistent schedule fits the rank:
//! the answer is infeasible with a proof, never a guess.
//!
//! **Interleaved ranks** (`plan.rs`, `plan_chunks`): each chunk's
//! candidates (rotor's curve and store-all, the dominated ones dropped),
//! the fastest combination whose step fits, judged with every chunk's
//! micro-batches in flight ([`judge_chunks`]); each piece certified by
//! rotor's optimum of the piece alone at the budget. O(Π K_c) judgements
//! of O(v·m), at most [`MAX_COMBINATIONS`].
//!
//! **Offloading per rank** (`offload.rs`, [`plan_with`]; PipeOffload,
//! Wan et al. 2025): with a host link of β bytes/s per rank, a
//! micro-batch whose wait spans another phase may send h to host memory
//! after its F phase and fetch it back from the phase before its B phase,
//! its B phase stalling until it is back. Every candidate of the rank's
//! search is judged with and without it ([`judge_offload`]: h counted on
//! the device for every phase during which any of it is there or in
//! transit), the fastest rank step (compute and stalls) that fits kept.
//! The certificate is then rotor's optimum at the whole budget (the others
//! may hold nothing on the device), and the exact search no longer exact.
//! GPipe and 1F1B; interleaved ranks refused.
//!
//! **The pipeline's time** ([`makespan`]): each rank runs its order, a
//! forward after the previous rank's forward of the same micro-batch, a
//! backward after the next rank's backward (and, on a rank that offloads,
//! after its prefetch: [`makespan_offloaded`]); transfers between ranks take
//! no time (a lower bound on a real link), and every micro-batch on a rank
//! costs the same.
//!
//! **Complexity.** Exact: about 3^{L_r−1} top-level paths, each O(L_r + m)
//! to judge, and O(L_r²) rotor tables of slices. Rotor's curve: one
//! breakpoint table per rank, then O(L_r + m) per candidate judged, from
//! the fastest down until one fits.
//!
//! Files: `mod.rs` (this façade, the split and its errors), `order.rs`
//! (GPipe, 1F1B and interleaved 1F1B orders), `judge.rs` (a rank's peak and the pipeline's
//! makespan), `offload.rs` (a rank's step offloading to host memory),
//! `host_link.rs` (which micro-batches offload, and when their copies run),
//! `exact.rs` (the exact search), `plan.rs` (the per-rank plan and its
//! certificate).

mod exact;
pub mod frameworks;
mod host_link;
mod judge;
mod offload;
mod order;
mod plan;

pub use exact::EXACT_MAX_STAGES;
pub use judge::{
    forward_phase_len, judge, judge_chunks, makespan, makespan_offloaded, rank_curve,
    rank_curve_chunks, run_pipeline, CurvePoint, MicrobatchCost, PipelineRun, RankCopies,
    RankJudgement,
};
pub use offload::{
    counted_beside_backward_at_best, judge_offload, offloaded, rank_curve_offloaded, validate_rate,
    Offload, OffloadError, OffloadJudgement,
};
pub use order::{Phase, PipelineSchedule, Slot};
pub use plan::{
    plan, plan_rank, plan_rank_with, plan_with, PipelinePlan, PlanError, RankOptions, RankPlan,
    Search, MAX_COMBINATIONS,
};

use crate::model::Chain;
use std::ops::RangeInclusive;

/// The most micro-batches a pipeline may take (far above any real run;
/// the orders are O(m) per rank).
pub const MAX_MICROBATCHES: usize = 100_000;

/// The most chunks (virtual stages) a rank may hold.
pub const MAX_CHUNKS: usize = 64;

/// A pipeline: how the chain is cut and how micro-batches flow.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    /// Stages per piece, the chain's first stages first: one piece per
    /// rank, or under an interleaved schedule p·v pieces, piece k on rank
    /// k mod p as its chunk ⌊k / p⌋ (PyTorch's stage index k).
    pub split: Vec<usize>,
    /// m, the micro-batches of one step.
    pub microbatches: usize,
    pub schedule: PipelineSchedule,
    /// v, the chunks (virtual stages) each rank holds: 1 but under
    /// [`PipelineSchedule::Interleaved1F1B`].
    pub chunks: usize,
    /// β between two ranks (bytes per second) for the activations and
    /// gradients they send each other; None: sends take no time.
    pub link_bytes_per_s: Option<f64>,
}

/// Why a pipeline cannot be planned, naming the field.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PipelineError {
    #[error("split: give at least one rank")]
    NoRanks,
    #[error("split: rank {rank} has no stages; every rank needs at least one")]
    EmptyRank { rank: usize },
    #[error("split: the ranks hold {given} stages in all, the chain has {chain}")]
    WrongTotal { given: usize, chain: usize },
    #[error("microbatches: {given} is not between 1 and {max}")]
    Microbatches { given: usize, max: usize },
    #[error("budget: {given} budgets for {ranks} ranks; give one for all or one per rank")]
    Budgets { given: usize, ranks: usize },
    #[error("chunks: {given} is not between 1 and {max}")]
    Chunks { given: usize, max: usize },
    #[error("chunks: {chunks} chunks per rank need the interleaved-1f1b schedule, not {schedule}")]
    ChunksNeedInterleaved {
        chunks: usize,
        schedule: PipelineSchedule,
    },
    #[error(
        "split: {pieces} pieces do not make {chunks} chunks on each rank; give ranks × chunks pieces"
    )]
    Pieces { pieces: usize, chunks: usize },
    #[error("link: {given} bytes per second; give a positive bandwidth between ranks")]
    Link { given: f64 },
    #[error(
        "microbatches: {given} is not a multiple of the interleaved schedule's {rounds} rounds \
         (max(1, microbatches / ranks)), which PyTorch's ScheduleInterleaved1F1B requires"
    )]
    Rounds { given: usize, rounds: usize },
}

impl Pipeline {
    /// Checks the pipeline against a chain of `stages` stages.
    pub fn validate(&self, stages: usize) -> Result<(), PipelineError> {
        if self.split.is_empty() {
            return Err(PipelineError::NoRanks);
        }
        if let Some(rank) = self.split.iter().position(|&n| n == 0) {
            return Err(PipelineError::EmptyRank { rank });
        }
        let given = self.split.iter().fold(0usize, |a, &n| a.saturating_add(n));
        if given != stages {
            return Err(PipelineError::WrongTotal {
                given,
                chain: stages,
            });
        }
        if self.microbatches == 0 || self.microbatches > MAX_MICROBATCHES {
            return Err(PipelineError::Microbatches {
                given: self.microbatches,
                max: MAX_MICROBATCHES,
            });
        }
        if let Some(given) = self
            .link_bytes_per_s
            .filter(|b| !(b.is_finite() && *b > 0.0))
        {
            return Err(PipelineError::Link { given });
        }
        if self.chunks == 0 || self.chunks > MAX_CHUNKS {
            return Err(PipelineError::Chunks {
                given: self.chunks,
                max: MAX_CHUNKS,
            });
        }
        if self.schedule != PipelineSchedule::Interleaved1F1B {
            if self.chunks > 1 {
                return Err(PipelineError::ChunksNeedInterleaved {
                    chunks: self.chunks,
                    schedule: self.schedule,
                });
            }
            return Ok(());
        }
        if !self.split.len().is_multiple_of(self.chunks) {
            return Err(PipelineError::Pieces {
                pieces: self.split.len(),
                chunks: self.chunks,
            });
        }
        let rounds = order::interleaved_rounds(self.ranks(), self.microbatches);
        if !self.microbatches.is_multiple_of(rounds) {
            return Err(PipelineError::Rounds {
                given: self.microbatches,
                rounds,
            });
        }
        Ok(())
    }

    /// p, the number of ranks.
    pub fn ranks(&self) -> usize {
        self.split.len() / self.chunks.max(1)
    }

    /// The chain's stages (1-based, as in the papers) piece `piece` runs:
    /// rank `piece`'s, with one chunk per rank.
    pub fn stages(&self, piece: usize) -> RangeInclusive<usize> {
        let first = 1 + self.split[..piece].iter().sum::<usize>();
        first..=first + self.split[piece] - 1
    }

    /// The pieces rank `rank` holds, its chunk 0 first.
    pub fn pieces_of(&self, rank: usize) -> Vec<usize> {
        (0..self.chunks.max(1))
            .map(|c| c * self.ranks() + rank)
            .collect()
    }

    /// The order in which rank `rank` runs the phases of its micro-batches.
    pub fn order(&self, rank: usize) -> Vec<Slot> {
        order::order(
            self.schedule,
            rank,
            self.ranks(),
            self.microbatches,
            self.chunks.max(1),
        )
    }

    /// An even split of `stages` stages over `ranks` ranks, the first ranks
    /// taking one more where it does not divide (what
    /// `torch.distributed.pipelining` users write by hand most often).
    pub fn even_split(stages: usize, ranks: usize) -> Vec<usize> {
        (0..ranks)
            .map(|r| stages / ranks + usize::from(r < stages % ranks))
            .collect()
    }
}

/// The piece of `chain` that one rank runs, as a chain of its own: its
/// input is the previous stage's output (the chain's input on rank 0) and
/// its last stage's gradient δ^L is what the next rank sends back.
pub fn rank_chain(chain: &Chain, stages: RangeInclusive<usize>) -> Chain {
    let first = *stages.start();
    let (input_bytes, input_gradient_bytes) = if first == 1 {
        (chain.input_bytes, chain.input_gradient_bytes)
    } else {
        (
            chain.output_bytes(first - 1),
            // δ alone: the parameter gradients of the ranks after this
            // one stay on their devices.
            chain.activation_gradient_bytes(first - 1),
        )
    };
    // Parameter gradients: a rank's are created by its first micro-batch's
    // backward and summed into by the others, which the per-micro-batch
    // costs cannot place. They are left to the rank's fixed memory (from
    // the step's start: an upper bound; o_b keeps the one in flight).
    let mut pieces = chain.stages[first - 1..*stages.end()].to_vec();
    for s in &mut pieces {
        s.parameter_gradient_bytes = 0;
    }
    Chain {
        name: format!("{} (stages {}–{})", chain.name, first, stages.end()),
        source: chain.source.clone(),
        input_bytes,
        input_gradient_bytes,
        bandwidth_bytes_per_s: chain.bandwidth_bytes_per_s,
        stages: pieces,
        inputs: None,
        model_fingerprint: chain.model_fingerprint.clone(),
        peers: Vec::new(),
        // Which of the step's constants a rank holds is not known here.
        constant_bytes: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_errors_name_the_field() {
        let p = |split: Vec<usize>, m| Pipeline {
            split,
            microbatches: m,
            schedule: PipelineSchedule::OneFOneB,
            chunks: 1,
            link_bytes_per_s: None,
        };
        assert_eq!(p(vec![], 4).validate(3), Err(PipelineError::NoRanks));
        assert_eq!(
            p(vec![2, 0, 1], 4).validate(3),
            Err(PipelineError::EmptyRank { rank: 1 })
        );
        assert!(p(vec![2, 2], 4)
            .validate(3)
            .unwrap_err()
            .to_string()
            .starts_with("split: the ranks hold 4 stages"));
        assert!(p(vec![2, 1], 0)
            .validate(3)
            .unwrap_err()
            .to_string()
            .starts_with("microbatches: 0"));
        assert!(p(vec![usize::MAX, 2], 4).validate(3).is_err());
        assert_eq!(p(vec![2, 1], 4).validate(3), Ok(()));
        // Chunks: only interleaved, a whole number per rank, and PyTorch's
        // rounds dividing the micro-batches.
        let mut two = p(vec![1, 1, 1, 1], 4);
        two.chunks = 2;
        assert!(two
            .validate(4)
            .unwrap_err()
            .to_string()
            .starts_with("chunks: 2 chunks per rank need"));
        two.schedule = PipelineSchedule::Interleaved1F1B;
        assert_eq!(two.validate(4), Ok(()));
        assert_eq!((two.ranks(), two.pieces_of(1)), (2, vec![1, 3]));
        two.split = vec![1, 1, 2];
        assert_eq!(
            two.validate(4),
            Err(PipelineError::Pieces {
                pieces: 3,
                chunks: 2
            })
        );
        two.split = vec![1, 1, 1, 1];
        two.microbatches = 5; // rounds = max(1, 5 / 2) = 2
        assert!(two
            .validate(4)
            .unwrap_err()
            .to_string()
            .starts_with("microbatches: 5 is not a multiple"));
        two.microbatches = 4;
        two.chunks = 0;
        assert!(two
            .validate(4)
            .unwrap_err()
            .to_string()
            .starts_with("chunks: 0"));
    }

    #[test]
    fn stages_and_even_split() {
        let p = Pipeline {
            split: Pipeline::even_split(7, 3),
            microbatches: 2,
            schedule: PipelineSchedule::GPipe,
            chunks: 1,
            link_bytes_per_s: None,
        };
        assert_eq!(p.split, vec![3, 2, 2]);
        assert_eq!(p.stages(0), 1..=3);
        assert_eq!(p.stages(1), 4..=5);
        assert_eq!(p.stages(2), 6..=7);
    }
}
