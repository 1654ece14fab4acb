//! The judge of a rank's step and of the pipeline's time, both read off
//! one simulation of a micro-batch's schedule (the simulator stays the one
//! judge: nothing here re-times an operation).

use super::host_link::HostLink;
use super::order::{others_held, Phase, Slot};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::{simulate, SimError, Trace};
use serde::Serialize;

/// What one micro-batch's schedule costs on its rank, from the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MicrobatchCost {
    /// The F phase's time: its schedule up to its first backward.
    pub forward_seconds: f64,
    /// The B phase's time: the rest (recomputations and backwards).
    pub backward_seconds: f64,
    /// The highest level while the F phase runs, without δ^L.
    pub forward_peak_bytes: u64,
    /// The highest level while the B phase runs.
    pub backward_peak_bytes: u64,
    /// h: what stays between the phases (the level at the F phase's end,
    /// without δ^L): what every other micro-batch in flight holds.
    pub held_bytes: u64,
    /// a^L of the piece: what its F phase sends to the next piece.
    pub output_bytes: u64,
    /// δ^L of the piece: what the next piece's B phase sends back.
    pub output_gradient_bytes: u64,
}

impl MicrobatchCost {
    /// Simulates `ops`, a schedule of `chain` (a rank's piece), and cuts it
    /// where its F phase ends ([`forward_phase_len`]).
    pub fn of(chain: &Chain, ops: &[Op]) -> Result<MicrobatchCost, SimError> {
        Ok(MicrobatchCost::from_trace(
            chain,
            ops,
            &simulate(chain, ops)?,
        ))
    }

    /// [`MicrobatchCost::of`] from `trace`, the simulation of `ops` on
    /// `chain` already run (a curve draws from the same trace).
    fn from_trace(chain: &Chain, ops: &[Op], trace: &Trace) -> MicrobatchCost {
        let first_backward = forward_phase_len(ops, chain.len());
        // δ^L is counted from the start by the single-step model; between
        // phases, and while a forward runs, the gradient of the rank's
        // output has not arrived yet.
        let seed = chain.gradient_bytes(chain.len());
        let memory = trace.op_memory();
        let (fwd, bwd) = memory.split_at(first_backward);
        let initial = chain.input_bytes.saturating_add(seed);
        let forward_peak = fwd.iter().map(|m| m.peak_bytes).fold(initial, u64::max);
        let held = fwd.last().map_or(initial, |m| m.after_bytes);
        let forward_seconds = match first_backward {
            0 => 0.0,
            i => trace.spans[i - 1].end,
        };
        MicrobatchCost {
            forward_seconds,
            backward_seconds: trace.makespan_seconds - forward_seconds,
            forward_peak_bytes: forward_peak.saturating_sub(seed),
            backward_peak_bytes: bwd.iter().map(|m| m.peak_bytes).max().unwrap_or(held),
            held_bytes: held.saturating_sub(seed),
            output_bytes: chain.stage(chain.len()).output_bytes,
            output_gradient_bytes: seed,
        }
    }

    /// One micro-batch's time on its rank.
    pub fn seconds(&self) -> f64 {
        self.forward_seconds + self.backward_seconds
    }
}

/// How many of `ops` (a schedule of a piece of `stages` stages) its F phase
/// runs: up to and including the first forward of the piece's last stage,
/// which makes the output the next rank waits for. In a persistent
/// schedule that is F_all^L, right before B^L, the first backward; a
/// schedule whose top-level path checkpoints a segment to the end (F_ck^s,
/// F_∅ … F_∅^L: `exact.rs`) sends a^L after its last no-grad
/// forward and runs the segment again, F_all^L included, when the gradient
/// arrives — as `checkpoint` on a rank's last block does.
pub fn forward_phase_len(ops: &[Op], stages: usize) -> usize {
    let first_backward = (ops.iter())
        .position(|op| matches!(op, Op::Backward { .. }))
        .unwrap_or(ops.len());
    let forward_of_last = |op: &Op| match *op {
        Op::ForwardAll { stage, .. }
        | Op::ForwardCheckpoint { stage }
        | Op::ForwardNone { stage } => stage == stages,
        _ => false,
    };
    (ops[..first_backward].iter())
        .position(forward_of_last)
        .map_or(first_backward, |i| i + 1)
}

/// One point of a rank's memory over its step ([`rank_curve`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Since the rank's step began, its phases back to back (no waits).
    pub seconds: f64,
    /// The running phase's own level (its micro-batch).
    pub running_bytes: u64,
    /// What the other micro-batches in flight hold then (others × h).
    pub held_bytes: u64,
    /// The slot of the order running.
    pub slot: usize,
}

/// The rank's memory over its step, one point per allocation or free of
/// the running phase: what the page draws, and where the peak of
/// [`judge`] comes from (its highest `running + held` is that peak).
pub fn rank_curve(chain: &Chain, ops: &[Op], order: &[Slot]) -> Result<Vec<CurvePoint>, SimError> {
    rank_curve_chunks(&[(chain, ops)], order)
}

/// [`rank_curve`] under an interleaved schedule: `chunks[c]` is chunk c's
/// piece and its schedule; a phase of chunk c runs c's trace beside h of
/// each chunk for every other micro-batch of it in flight. Its highest
/// `running + held` is [`judge_chunks`]' peak.
pub fn rank_curve_chunks(
    chunks: &[(&Chain, &[Op])],
    order: &[Slot],
) -> Result<Vec<CurvePoint>, SimError> {
    curve_and_costs(chunks, order).map(|(curve, _)| curve)
}

/// [`rank_curve_chunks`] and each chunk's [`MicrobatchCost`], from one
/// simulation per chunk (the offloaded curve needs both).
pub(super) fn curve_and_costs(
    chunks: &[(&Chain, &[Op])],
    order: &[Slot],
) -> Result<(Vec<CurvePoint>, Vec<MicrobatchCost>), SimError> {
    /// What one chunk's phases draw from.
    struct Piece {
        cost: MicrobatchCost,
        memory: Vec<(f64, u64, bool)>,
        input: u64,
        seed: u64,
    }
    let mut pieces = Vec::with_capacity(chunks.len());
    for &(chain, ops) in chunks {
        let trace = simulate(chain, ops)?;
        let first_backward = forward_phase_len(ops, chain.len());
        let in_forward = |op: Option<usize>| op.is_none_or(|i| i < first_backward);
        pieces.push(Piece {
            cost: MicrobatchCost::from_trace(chain, ops, &trace),
            memory: (trace.memory.iter())
                .map(|m| (m.time, m.bytes, in_forward(m.op)))
                .collect(),
            input: chain.input_bytes,
            seed: chain.gradient_bytes(chain.len()),
        });
    }
    let mut out = Vec::new();
    let mut t = 0.0;
    let mut held = vec![0usize; pieces.len()];
    for (i, slot) in order.iter().enumerate() {
        let piece = &pieces[slot.chunk];
        let forward = slot.phase == Phase::Forward;
        let (start, took) = if forward {
            (0.0, piece.cost.forward_seconds)
        } else {
            (piece.cost.forward_seconds, piece.cost.backward_seconds)
        };
        // The micro-batch itself is one of those in flight in its B phase.
        let own = usize::from(!forward);
        let waiting = (held.iter().zip(&pieces).enumerate())
            .map(|(c, (&n, p))| {
                let n = if c == slot.chunk { n - own } else { n };
                (n as u64).saturating_mul(p.cost.held_bytes)
            })
            .fold(0u64, u64::saturating_add);
        // The phase's level as it starts: the input alone, or what the
        // forward left and δ^L.
        out.push(CurvePoint {
            seconds: t,
            running_bytes: if forward {
                piece.input
            } else {
                piece.cost.held_bytes.saturating_add(piece.seed)
            },
            held_bytes: waiting,
            slot: i,
        });
        for &(time, bytes, _) in piece.memory.iter().filter(|m| m.2 == forward) {
            out.push(CurvePoint {
                seconds: t + time - start,
                running_bytes: if forward {
                    bytes.saturating_sub(piece.seed)
                } else {
                    bytes
                },
                held_bytes: waiting,
                slot: i,
            });
        }
        t += took;
        match slot.phase {
            Phase::Forward => held[slot.chunk] += 1,
            Phase::Backward => held[slot.chunk] -= 1,
        }
    }
    Ok((out, pieces.into_iter().map(|p| p.cost).collect()))
}

/// A rank's whole step: every micro-batch in its order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankJudgement {
    /// The rank's highest level: a running phase's peak plus h for every
    /// other micro-batch in flight then.
    pub peak_bytes: u64,
    /// Where in the order it happens.
    pub peak_slot: usize,
    /// How many other micro-batches were held at the peak.
    pub held_at_peak: usize,
    /// The fewest others held beside some forward and beside some backward
    /// of the order at their most: what the certificate may assume.
    pub others_held: usize,
    /// The rank's compute time for the step (m micro-batches).
    pub compute_seconds: f64,
}

/// Runs `order` with every micro-batch costing `cost`.
pub fn judge(cost: &MicrobatchCost, order: &[Slot]) -> RankJudgement {
    judge_chunks(std::slice::from_ref(cost), order)
}

/// Runs `order`, a micro-batch of chunk c costing `costs[c]`: the level
/// at a phase is its own peak plus h of its chunk for every other
/// micro-batch of that chunk in flight, and h of each other chunk for
/// each of theirs.
pub fn judge_chunks(costs: &[MicrobatchCost], order: &[Slot]) -> RankJudgement {
    let mut held = vec![0usize; costs.len()];
    let mut best = (0u64, 0usize, 0usize);
    let mut seconds = 0.0;
    for (i, slot) in order.iter().enumerate() {
        let cost = &costs[slot.chunk];
        // The micro-batch itself is one of those in flight in its B phase.
        let own = usize::from(slot.phase == Phase::Backward);
        let peak = match slot.phase {
            Phase::Forward => {
                seconds += cost.forward_seconds;
                cost.forward_peak_bytes
            }
            Phase::Backward => {
                seconds += cost.backward_seconds;
                cost.backward_peak_bytes
            }
        };
        let (mut level, mut others) = (peak, 0usize);
        for (c, (&n, k)) in held.iter().zip(costs).enumerate() {
            let n = if c == slot.chunk { n - own } else { n };
            others += n;
            level = level.saturating_add((n as u64).saturating_mul(k.held_bytes));
        }
        if level > best.0 {
            best = (level, i, others);
        }
        match slot.phase {
            Phase::Forward => held[slot.chunk] += 1,
            Phase::Backward => held[slot.chunk] -= 1,
        }
    }
    RankJudgement {
        peak_bytes: best.0,
        peak_slot: best.1,
        held_at_peak: best.2,
        others_held: others_held(order),
        compute_seconds: seconds,
    }
}

/// The pipeline's step time: every rank runs its order; a forward starts
/// after the previous piece's forward of its micro-batch, a backward after
/// the next piece's backward of it (the last piece's after its own
/// forward). `costs` has one entry per piece: rank r's chunk c is piece
/// c·p + r (with one chunk per rank, piece r). With `link` (β bytes per
/// second between two ranks) a forward also waits for the previous
/// piece's a^L to arrive (a^L / β after that forward ends) and a backward
/// for the next piece's δ^L; without it transfers take no time (the step
/// is then a bound from below).
pub fn makespan(orders: &[Vec<Slot>], costs: &[MicrobatchCost], link: Option<f64>) -> f64 {
    makespan_offloaded(orders, costs, link, &[])
}

/// [`makespan`] with ranks that offload what their waiting micro-batches
/// hold (`offload.rs`): `offload[r]` is rank r's host link β when it
/// offloads (missing or None: it does not). Its copies run on its two
/// channels at the phases' real start times, and an offloaded
/// micro-batch's backward also waits for its prefetch (the stalls). One
/// chunk per rank: interleaved ranks do not offload.
pub fn makespan_offloaded(
    orders: &[Vec<Slot>],
    costs: &[MicrobatchCost],
    link: Option<f64>,
    offload: &[Option<f64>],
) -> f64 {
    let run = run_pipeline(orders, costs, link, offload);
    (run.phases.iter().flatten()).fold(0.0, |t, &(_, end)| t.max(end))
}

/// When a rank's copies to and from host memory ran, per micro-batch
/// ([`PipelineRun`]; NaN where a micro-batch is not offloaded).
#[derive(Clone, Debug, PartialEq)]
pub struct RankCopies {
    pub offloaded: Vec<bool>,
    /// When its h is off the device (its d2h copy ended).
    pub offload_end: Vec<f64>,
    /// When its h starts coming back (its h2d copy began).
    pub prefetch_start: Vec<f64>,
}

/// The pipeline's step as [`makespan_offloaded`] runs it: per rank, each
/// slot's phase (start, end), and the copies of a rank that offloads.
/// What a check of the judged peaks against the real timing reads
/// (`crates/remat-core/tests/pipeline_offload.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineRun {
    pub phases: Vec<Vec<(f64, f64)>>,
    pub copies: Vec<Option<RankCopies>>,
}

/// Runs the pipeline ([`makespan_offloaded`]'s arguments).
pub fn run_pipeline(
    orders: &[Vec<Slot>],
    costs: &[MicrobatchCost],
    link: Option<f64>,
    offload: &[Option<f64>],
) -> PipelineRun {
    let p = orders.len();
    // Sending `bytes` from piece k to its neighbour: nothing on one rank
    // (p = 1), bytes / β between two (the send overlaps both ranks'
    // compute: it only delays the receiver).
    let hop = |bytes: u64| match link {
        Some(beta) if p > 1 && beta > 0.0 => bytes as f64 / beta,
        _ => 0.0,
    };
    let pieces = costs.len();
    let m = orders.first().map_or(0, |o| o.len() / 2) * p / pieces.max(1);
    // end[k][phase][j]: when piece k finished that phase of micro-batch j.
    let mut end = vec![[vec![f64::NAN; m], vec![f64::NAN; m]]; pieces];
    let mut next = vec![0usize; p];
    let mut free = vec![0.0f64; p];
    let mut phases: Vec<Vec<(f64, f64)>> =
        orders.iter().map(|o| Vec::with_capacity(o.len())).collect();
    let mut host: Vec<Option<HostLink>> = (0..p)
        .map(|r| {
            let beta = offload.get(r).copied().flatten()?;
            assert_eq!(pieces, p, "interleaved ranks do not offload");
            Some(HostLink::new(&orders[r], costs[r].held_bytes, beta))
        })
        .collect();
    let mut left: usize = orders.iter().map(Vec::len).sum();
    while left > 0 {
        let before = left;
        for r in 0..p {
            while let Some(slot) = orders[r].get(next[r]) {
                let j = slot.microbatch;
                let k = slot.chunk * p + r;
                let ready = match slot.phase {
                    Phase::Forward if k == 0 => 0.0,
                    Phase::Forward => end[k - 1][0][j] + hop(costs[k - 1].output_bytes),
                    Phase::Backward if k + 1 == pieces => end[k][0][j],
                    Phase::Backward => end[k + 1][1][j] + hop(costs[k].output_gradient_bytes),
                };
                if ready.is_nan() {
                    break;
                }
                let (phase, took) = match slot.phase {
                    Phase::Forward => (0, costs[k].forward_seconds),
                    Phase::Backward => (1, costs[k].backward_seconds),
                };
                let mut start = free[r].max(ready);
                if let Some(h) = &mut host[r] {
                    start = h.earliest_start(slot, start);
                    h.phase_started(orders[r].get(next[r] + 1), start);
                }
                free[r] = start + took;
                phases[r].push((start, free[r]));
                if let Some(h) = &mut host[r] {
                    h.phase_ended(slot, free[r]);
                }
                end[k][phase][j] = free[r];
                next[r] += 1;
                left -= 1;
            }
        }
        assert!(left < before, "pipeline orders deadlock");
    }
    let copies = (host.into_iter())
        .map(|h| {
            h.map(|h| RankCopies {
                offloaded: h.offloads,
                offload_end: h.offload_end,
                prefetch_start: h.prefetch_start,
            })
        })
        .collect();
    PipelineRun { phases, copies }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{Pipeline, PipelineSchedule};
    use crate::solvers::store_all;
    use crate::Stage;

    fn stage(f: f64, b: f64, out: u64, saved: u64, grad: u64) -> Stage {
        Stage {
            gradient_bytes: grad,
            ..Stage::new("", f, b, out, saved)
        }
    }

    /// Counted by hand: a^0 = 1, ā^1 = 3, ā^2 = 4, δ^1 = δ^2 = 1. Store-all
    /// holds h = 1 + 3 + 4 = 8 between its phases; its F phase peaks at 8
    /// (δ^2 not yet there), its B phase at 10 (B^2 allocates δ^1 beside
    /// a^0, ā^1, ā^2 and δ^2). Rank 0 of two under 1F1B, 3 micro-batches:
    /// F0 F1 B0 F2 B1 B2; B0 runs beside F1's 8: 18.
    #[test]
    fn levels_counted_by_hand() {
        let chain = Chain {
            name: "two".into(),
            source: String::new(),
            input_bytes: 1,
            input_gradient_bytes: 1,
            bandwidth_bytes_per_s: None,
            stages: vec![stage(1.0, 2.0, 2, 3, 1), stage(3.0, 4.0, 1, 4, 1)],
            ..Chain::default()
        };
        let cost = MicrobatchCost::of(&chain, &store_all::schedule(&chain)).unwrap();
        assert_eq!(cost.held_bytes, 8);
        assert_eq!(cost.forward_peak_bytes, 8);
        assert_eq!(cost.backward_peak_bytes, 10);
        assert_eq!((cost.forward_seconds, cost.backward_seconds), (4.0, 6.0));
        let pipeline = Pipeline {
            split: vec![1, 1],
            microbatches: 3,
            schedule: PipelineSchedule::OneFOneB,
            chunks: 1,
            link_bytes_per_s: None,
        };
        let j = judge(&cost, &pipeline.order(0));
        assert_eq!((j.peak_bytes, j.peak_slot, j.held_at_peak), (18, 2, 1));
        assert_eq!(j.compute_seconds, 30.0);
        // The last rank holds one at a time: its own B phase's peak.
        assert_eq!(judge(&cost, &pipeline.order(1)).peak_bytes, 10);
        // Two ranks, equal costs: 3 forwards and 3 backwards on the last
        // rank after the first forward of rank 0 (4 s) and, at the end,
        // rank 0's last backward (6 s): 4 + 3·(4 + 6) + 6 = 40.
        let m = makespan(&[pipeline.order(0), pipeline.order(1)], &[cost, cost], None);
        assert_eq!(m, 40.0);
        // One micro-batch over a link of 0.5 B/s: rank 0's forward (4 s),
        // a^L = 1 B sent (2 s), rank 1's forward and backward (4 + 6 s),
        // δ^L = 1 B sent back (2 s), rank 0's backward (6 s): 24 s, 20 s
        // without the link; on one rank (p = 1) a link adds nothing.
        // Mutation tried: the backward not waiting for δ^L's send → 22 s
        // where 24 are expected, fails.
        let one = Pipeline {
            microbatches: 1,
            ..pipeline.clone()
        };
        let orders = [one.order(0), one.order(1)];
        assert_eq!(makespan(&orders, &[cost, cost], None), 20.0);
        assert_eq!(makespan(&orders, &[cost, cost], Some(0.5)), 24.0);
        assert_eq!(makespan(&[one.order(0)], &[cost], Some(0.5)), 10.0);
    }

    fn cost(f: f64, b: f64, forward_peak: u64, backward_peak: u64, held: u64) -> MicrobatchCost {
        MicrobatchCost {
            forward_seconds: f,
            backward_seconds: b,
            forward_peak_bytes: forward_peak,
            backward_peak_bytes: backward_peak,
            held_bytes: held,
            output_bytes: 0,
            output_gradient_bytes: 0,
        }
    }

    /// Counted by hand on rank 0 of PyTorch's interleaved order for p = 2,
    /// v = 2, m = 4 (`F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 …`, checked against
    /// PyTorch in order.rs): chunk 0 peaks at 10 / 20 and holds 3, chunk 1
    /// at 100 / 200 and holds 30. At B1.0 three micro-batches of chunk 0
    /// and one other of chunk 1 are in flight: 200 + 3·3 + 30 = 239, the
    /// highest (F1.3: 100 + 9 + 30 = 139; B1.2: 200 + 6 + 30 = 236).
    /// Mutation tried: the running micro-batch of a B phase counted as
    /// held too (269 at B1.0).
    #[test]
    fn chunked_levels_counted_by_hand() {
        let pipeline = Pipeline {
            split: vec![1, 1, 1, 1],
            microbatches: 4,
            schedule: PipelineSchedule::Interleaved1F1B,
            chunks: 2,
            link_bytes_per_s: None,
        };
        let costs = [cost(1.0, 2.0, 10, 20, 3), cost(10.0, 20.0, 100, 200, 30)];
        let j = judge_chunks(&costs, &pipeline.order(0));
        assert_eq!((j.peak_bytes, j.peak_slot, j.held_at_peak), (239, 5, 4));
        assert_eq!(j.compute_seconds, 4.0 * 3.0 + 4.0 * 30.0);
        // Four pieces, all costing 1 s forward and 2 s backward: the
        // orders run without deadlock, the last piece's backward after its
        // own forward.
        let unit = [cost(1.0, 2.0, 0, 0, 0); 4];
        let m = makespan(&[pipeline.order(0), pipeline.order(1)], &unit, None);
        assert!(m >= 4.0 * 2.0 * 3.0 && m.is_finite(), "{m}");
    }
}
