//! Offloading what waiting micro-batches hold to host memory, per rank
//! (PipeOffload, Wan et al., 2025).
//!
//! **Why.** A pipeline rank's memory is dominated by h ([`MicrobatchCost::held_bytes`]),
//! what every micro-batch waiting between its F phase and its B phase
//! keeps: rank r of p under 1F1B holds up to min(p − r, m) of them, under
//! GPipe all m. A single-step plan (recompute or offload inside one
//! micro-batch's schedule) keeps h on the device through the wait.
//! PipeOffload sends h to the host during the wait and brings it back
//! before the B phase: the wait is long (other micro-batches' phases run
//! meanwhile), so the copies hide behind their compute.
//!
//! **Model.** Each rank has a host link of β bytes/s, full duplex: one
//! device→host (d2h) channel and one host→device (h2d) channel, each FIFO,
//! one copy at a time, each copy of b bytes taking b / β. The rank's phases
//! run back to back in its order (as [`judge`](super::judge) runs them);
//! every micro-batch costs the same ([`MicrobatchCost`]).
//! Policy ([`offloaded`]): micro-batch j, its F phase at slot f_j and its
//! B phase at slot b_j of the order, is offloaded when its wait spans at
//! least one other phase (b_j − f_j ≥ 2). Then
//! * its h goes out on the d2h channel from the end of F_j (or once the
//!   channel is free);
//! * it comes back on the h2d channel from the start of slot b_j − 1, the
//!   phase just before B_j (or once its offload has ended and the channel
//!   is free);
//! * B_j starts no earlier than the prefetch's end: the difference is a
//!   *stall*, which adds to the rank's time.
//!
//! **Memory, at phase boundaries, conservatively.** h_j counts on the
//! device for every phase of the rank during which any part of it is on
//! the device or in transit: from the end of F_j until its offload has
//! ended (a phase counts when it begins before that end), and from its
//! prefetch's start until B_j (a phase counts when it ends after that
//! start; a stall counts as part of the phase it delays). So the phase
//! right after F_j and the phase right before B_j always count it (the
//! copies run during them), and only the phases in between are freed.
//! A rank's level at a phase is the phase's own peak plus h for every other
//! micro-batch counted on the device then, combined as the rank judge
//! combines them; its highest is the judged peak. It is an upper bound on
//! the level at every instant (the copies are taken as whole for the
//! phase), and exactly the level a runtime meets that synchronises the
//! copies at phase boundaries: it frees the device copy of h_j at the
//! first phase boundary after the d2h copy has ended, and allocates the
//! buffer of the prefetch when the phase in which it is issued begins.
//!
//! **Assumptions.** The copies do not slow compute (separate copy engines,
//! as PCIe/NVLink-C2C DMA) and the d2h and h2d channels do not share
//! bandwidth; host memory is unlimited; h is the whole of what the
//! micro-batch holds (its input included), moved as one copy; a
//! micro-batch whose B phase directly follows its F phase is never
//! offloaded. Under an interleaved schedule a rank's chunks would share
//! the channels: not modelled, refused ([`OffloadError::Interleaved`]).
//! In the pipeline ([`makespan_offloaded`](super::makespan_offloaded)) the
//! same channels run at the phases' real start times, which may leave
//! waits between phases; the waits only give the copies more time between
//! the same phase boundaries (a prefetch back early waits through an idle
//! gap, in no phase), so the judged peak stays an upper bound there
//! (`crates/remat-core/tests/pipeline_offload.rs`,
//! `the_judged_peak_bounds_the_real_pipeline`:
//! every instant of [`run_pipeline`](super::run_pipeline)'s timing, ranks
//! of different costs waiting on each other).
//!
//! **Complexity.** O(n log n) per judgement for an order of n = 2m slots
//! (one pass for the times, a binary search per micro-batch for the phases
//! it counts in, a difference array for the levels).

pub use super::host_link::offloaded;
use super::host_link::HostLink;
use super::judge::{curve_and_costs, CurvePoint, MicrobatchCost, RankJudgement};
use super::order::{others_held, Phase, Slot};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::SimError;
use serde::Serialize;

/// Why offloading cannot be judged, naming what to change.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OffloadError {
    #[error("offload: {given} bytes per second; give a positive bandwidth to host memory")]
    Rate { given: f64 },
    #[error(
        "offload: interleaved ranks share one host link between their chunks, which is not \
         modelled; use --schedule 1f1b or gpipe"
    )]
    Interleaved,
}

/// Checks a host link's β.
pub fn validate_rate(bytes_per_s: f64) -> Result<(), OffloadError> {
    if bytes_per_s.is_finite() && bytes_per_s > 0.0 {
        Ok(())
    } else {
        Err(OffloadError::Rate { given: bytes_per_s })
    }
}

/// What offloading did on a rank's step (the plan's `offload`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Offload {
    /// β of the rank's host link, each way.
    pub bytes_per_s: f64,
    /// How many of the m micro-batches went to the host during their wait.
    pub microbatches_offloaded: usize,
    /// Bytes copied, both directions (2·h per offloaded micro-batch).
    pub bytes_moved: u64,
    /// Σ over B phases of the time each waited for its prefetch, phases
    /// back to back (the rank's step is its compute plus this).
    pub stall_seconds: f64,
}

/// A rank's step with offloading ([`judge_offload`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffloadJudgement {
    /// Peak (phase-boundary count), its slot, the others counted on the
    /// device there, and the rank's compute (stalls not included).
    pub rank: RankJudgement,
    pub offload: Offload,
}

impl OffloadJudgement {
    /// The rank's time for the step: compute and stalls.
    pub fn seconds(&self) -> f64 {
        self.rank.compute_seconds + self.offload.stall_seconds
    }
}

/// A rank's step offloading, phase by phase: what [`judge_offload`] and
/// [`rank_curve_offloaded`] both read, so that the page draws the judged
/// levels.
struct Timeline {
    /// Per slot: the stalls up to and including its own (its phase starts
    /// this much later than with the phases back to back).
    shift: Vec<f64>,
    /// Per slot: how many other micro-batches' h is counted on the device.
    counted: Vec<usize>,
    compute: f64,
    stall: f64,
    offloaded: usize,
}

/// Runs `order` with every micro-batch costing `cost`, the phases back to
/// back, offloading as the module doc says.
fn timeline(cost: &MicrobatchCost, order: &[Slot], bytes_per_s: f64) -> Timeline {
    let n = order.len();
    let mut link = HostLink::new(order, cost.held_bytes, bytes_per_s);
    // begin[i]: when slot i's phase may begin (the previous one's end, its
    // stall included in it); end[i]: when it ends.
    let (mut begin, mut end) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut shift = Vec::with_capacity(n);
    let (mut t, mut compute, mut stall) = (0.0f64, 0.0f64, 0.0f64);
    for (i, slot) in order.iter().enumerate() {
        let start = link.earliest_start(slot, t);
        stall += start - t;
        shift.push(stall);
        link.phase_started(order.get(i + 1), start);
        let took = match slot.phase {
            Phase::Forward => cost.forward_seconds,
            Phase::Backward => cost.backward_seconds,
        };
        compute += took;
        begin.push(t);
        t = start + took;
        end.push(t);
        link.phase_ended(slot, t);
    }
    // counted[i]: how many other micro-batches' h is on the device in
    // slot i, by a difference array over each one's slots.
    let mut delta = vec![0i64; n + 1];
    let mut forward_at = vec![0usize; order.len() / 2];
    let mut add = |from: usize, to: usize| {
        if from < to {
            delta[from] += 1;
            delta[to] -= 1;
        }
    };
    for (b, slot) in order.iter().enumerate() {
        let j = slot.microbatch;
        match slot.phase {
            Phase::Forward => forward_at[j] = b,
            Phase::Backward if !link.offloads[j] => add(forward_at[j] + 1, b),
            Phase::Backward => {
                let f = forward_at[j];
                // Counted while the offload runs: slots that begin before it ends.
                let out_until =
                    f + 1 + begin[f + 1..b].partition_point(|&x| x < link.offload_end[j]);
                // Counted once the prefetch starts: slots that end after it.
                let back_from =
                    f + 1 + end[f + 1..b].partition_point(|&x| x <= link.prefetch_start[j]);
                if out_until >= back_from {
                    add(f + 1, b);
                } else {
                    add(f + 1, out_until);
                    add(back_from, b);
                }
            }
        }
    }
    let counted = (delta[..n].iter())
        .scan(0i64, |c, d| {
            *c += d;
            Some(*c as usize)
        })
        .collect();
    Timeline {
        shift,
        counted,
        compute,
        stall,
        offloaded: link.offloads.iter().filter(|&&o| o).count(),
    }
}

/// Runs `order` (one chunk) with every micro-batch costing `cost`, the
/// phases back to back, offloading as the module doc says over a host link
/// of `bytes_per_s` each way.
pub fn judge_offload(cost: &MicrobatchCost, order: &[Slot], bytes_per_s: f64) -> OffloadJudgement {
    let line = timeline(cost, order, bytes_per_s);
    let mut best = (0u64, 0usize, 0usize);
    for (i, (slot, &others)) in order.iter().zip(&line.counted).enumerate() {
        let peak = match slot.phase {
            Phase::Forward => cost.forward_peak_bytes,
            Phase::Backward => cost.backward_peak_bytes,
        };
        let level = peak.saturating_add((others as u64).saturating_mul(cost.held_bytes));
        if level > best.0 {
            best = (level, i, others);
        }
    }
    OffloadJudgement {
        rank: RankJudgement {
            peak_bytes: best.0,
            peak_slot: best.1,
            held_at_peak: best.2,
            others_held: others_held(order),
            compute_seconds: line.compute,
        },
        offload: Offload {
            bytes_per_s,
            microbatches_offloaded: line.offloaded,
            bytes_moved: (2 * line.offloaded as u64).saturating_mul(cost.held_bytes),
            stall_seconds: line.stall,
        },
    }
}

/// [`rank_curve`] for a rank that offloads over `bytes_per_s`
/// ([`judge_offload`]): each phase starts after its stall, and what the
/// waiting micro-batches hold is h for each other micro-batch counted on
/// the device in that phase (those on the host are not). Its highest
/// `running + held` is `judge_offload`'s peak; its last point is before
/// the rank's compute plus its stalls.
pub fn rank_curve_offloaded(
    chain: &Chain,
    ops: &[Op],
    order: &[Slot],
    bytes_per_s: f64,
) -> Result<Vec<CurvePoint>, SimError> {
    let (mut curve, costs) = curve_and_costs(&[(chain, ops)], order)?;
    let cost = &costs[0];
    let line = timeline(cost, order, bytes_per_s);
    for pt in &mut curve {
        pt.seconds += line.shift[pt.slot];
        pt.held_bytes = (line.counted[pt.slot] as u64).saturating_mul(cost.held_bytes);
    }
    Ok(curve)
}

/// The most other micro-batches counted on the device beside a B phase of
/// `order` when copies take no time (β → ∞): the one whose F phase just
/// ended (being offloaded) and the one whose B phase is next (being
/// prefetched), when they are offloaded. What the exact search gives its
/// segments room for when the rank may offload (at most 2; a finite β can
/// only count more).
pub fn counted_beside_backward_at_best(order: &[Slot]) -> usize {
    let offloads = offloaded(order);
    let counts = |s: Option<&Slot>, phase: Phase| {
        s.is_some_and(|s| s.phase == phase && offloads[s.microbatch])
    };
    (0..order.len())
        .filter(|&i| order[i].phase == Phase::Backward)
        .map(|i| {
            let before = i.checked_sub(1).and_then(|k| order.get(k));
            usize::from(counts(before, Phase::Forward))
                + usize::from(counts(order.get(i + 1), Phase::Backward))
        })
        .max()
        .unwrap_or(0)
}

/// How a rank runs a candidate schedule: without offloading (None) or
/// offloading over its host link, and the rank's time and judgement
/// either way.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Way {
    /// The rank's step: compute plus stalls.
    pub seconds: f64,
    pub judged: RankJudgement,
    pub offload: Option<Offload>,
}

/// `cost` on `order`, offloading over `bytes_per_s` or not (None).
pub fn judge_way(cost: &MicrobatchCost, order: &[Slot], bytes_per_s: Option<f64>) -> Way {
    match bytes_per_s {
        None => {
            let judged = super::judge::judge(cost, order);
            Way {
                seconds: judged.compute_seconds,
                judged,
                offload: None,
            }
        }
        Some(beta) => {
            let j = judge_offload(cost, order, beta);
            Way {
                seconds: j.seconds(),
                judged: j.rank,
                offload: Some(j.offload),
            }
        }
    }
}

/// The faster way to run `cost` on `order` that fits `budget`: without
/// offloading, or — with a host link of `offload` bytes/s — offloading
/// (kept only when strictly faster or the only one that fits). None when
/// neither fits.
pub fn fastest_fitting(
    cost: &MicrobatchCost,
    order: &[Slot],
    budget: u64,
    offload: Option<f64>,
) -> Option<Way> {
    let plain = Some(judge_way(cost, order, None)).filter(|w| w.judged.peak_bytes <= budget);
    let moved = offload
        .map(|beta| judge_way(cost, order, Some(beta)))
        .filter(|w| w.judged.peak_bytes <= budget);
    match (plain, moved) {
        (Some(p), Some(o)) if o.seconds < p.seconds => Some(o),
        (Some(p), _) => Some(p),
        (None, o) => o,
    }
}

/// A rank's schedule, what one micro-batch of it costs, and the rank's
/// step judged at its own order (offloading or not): what the searches of
/// `plan.rs` and `exact.rs` answer.
pub(super) type Found = (Vec<crate::schedule::Op>, MicrobatchCost, Way);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{Pipeline, PipelineSchedule};

    fn cost(f: f64, b: f64, fp: u64, bp: u64, h: u64) -> MicrobatchCost {
        MicrobatchCost {
            forward_seconds: f,
            backward_seconds: b,
            forward_peak_bytes: fp,
            backward_peak_bytes: bp,
            held_bytes: h,
            output_bytes: 0,
            output_gradient_bytes: 0,
        }
    }

    fn gpipe(m: usize) -> Vec<Slot> {
        Pipeline {
            split: vec![1],
            microbatches: m,
            schedule: PipelineSchedule::GPipe,
            chunks: 1,
            link_bytes_per_s: None,
        }
        .order(0)
    }

    /// Counted by hand: GPipe, 3 micro-batches, F = 1 s, B = 2 s, h = 10 B,
    /// F peak 10, B peak 15, β = 5 B/s (a copy takes 2 s). Order F0 F1 F2
    /// B0 B1 B2 (slots 0–5); every wait spans another phase: all 3
    /// offloaded. d2h: h0 1–3 s, h1 queued 3–5, h2 queued 5–7. Prefetch of
    /// 0 issued at F2's start (2 s), after its offload: 3–5, so B0 stalls
    /// 3 → 5 (2 s) and runs 5–7; prefetch of 1 at B0's start, 5–7; B1 7–9;
    /// prefetch of 2 at B1's start, 7–9; B2 9–11. Time 9 + 2 = 11 s.
    /// Levels (a phase begins where the previous ended, stall included):
    /// F0 10; F1 [1, 2]: h0 (out until 3) → 20; F2 [2, 3]: h0, h1 → 30;
    /// B0 [3, 7]: h1 (out until 5), h2 (out until 7) → 15 + 20 = 35; B1
    /// [7, 9]: h2's offload ended at 7, its prefetch starts at 7 < 9 →
    /// 25; B2 15. Peak 35 at slot 3 with 2 others counted.
    /// Bytes moved 3 × 2 × 10 = 60.
    /// Mutation run: the prefetch issued at the start of the B phase
    /// itself (`order.get(i)` for `order.get(i + 1)`): no stall (0 s where
    /// 2 s are counted), fails; the fast-link test below fails with it too.
    #[test]
    fn gpipe_counted_by_hand() {
        let c = cost(1.0, 2.0, 10, 15, 10);
        let j = judge_offload(&c, &gpipe(3), 5.0);
        assert_eq!(j.offload.microbatches_offloaded, 3);
        assert_eq!(j.offload.bytes_moved, 60);
        assert_eq!(j.offload.stall_seconds, 2.0);
        assert_eq!(j.rank.compute_seconds, 9.0);
        assert_eq!(j.seconds(), 11.0);
        assert_eq!(
            (j.rank.peak_bytes, j.rank.peak_slot, j.rank.held_at_peak),
            (35, 3, 2)
        );
    }

    /// A fast link (β = 1000 B/s, copies 0.01 s) on GPipe with 4
    /// micro-batches: F0 F1 F2 F3 B0 B1 B2 B3, all 4 offloaded. Each
    /// offload ends in the phase after its F; each prefetch runs in the
    /// phase before its B. F3 [3, 4]: h2 (out until 3.01), h0 (prefetched
    /// from 3) → 30; B0 [4, 6]: h3 (out until 4.01), h1 (prefetched from 4)
    /// → 15 + 20 = 35, where without offloading B0 runs beside h1, h2, h3:
    /// 45. B1: h2 (prefetched) → 25. No stall.
    #[test]
    fn fast_link_frees_all_but_the_neighbours() {
        let c = cost(1.0, 2.0, 10, 15, 10);
        let j = judge_offload(&c, &gpipe(4), 1000.0);
        assert_eq!(j.offload.stall_seconds, 0.0);
        assert_eq!(j.offload.microbatches_offloaded, 4);
        assert_eq!((j.rank.peak_bytes, j.rank.peak_slot), (35, 4));
        assert_eq!(super::super::judge::judge(&c, &gpipe(4)).peak_bytes, 45);
        assert_eq!(counted_beside_backward_at_best(&gpipe(4)), 2);
    }

    #[test]
    fn rates_refused() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(validate_rate(bad).is_err(), "{bad}");
        }
        assert_eq!(validate_rate(25e9), Ok(()));
    }
}
