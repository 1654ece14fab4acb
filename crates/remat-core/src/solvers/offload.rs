//! Schedules with transfers: turning the POFO DP's answer into at-once
//! transfers, and the two heuristics of POFO Section 5.1.
//!
//! **Paper.** Beaumont, Eyraud-Dubois, Shilova, *Efficient Combination of
//! Rematerialization and Offloading for Training DNNs*, NeurIPS 2021, Section
//! 5.1 (see `docs/algorithms.md`):
//!
//! * `opportunist` keeps the link busy: F_all on the first stage of a group,
//!   offload its input and its ā, then F_∅ while the copies run; a new group
//!   starts when the link is free, until the rest of the chain fits in memory
//!   as it is. Each group's backward prefetches what it offloaded and runs
//!   the rematerialization algorithm (rotor) over the group. O(L) simulations
//!   of the forward prefix plus one rotor table per group; chains over
//!   [`OPPORTUNIST_MAX_STAGES`] are refused.
//! * `autocapper` runs `capper` for 40 budgets M' evenly spaced from the
//!   budget to M_high and keeps the best simulated schedule. `capper(M')`
//!   takes rotor's schedule for M', finds the peak, offloads the lowest-indexed
//!   activation resident there (right after its last use before the peak, back
//!   right before its next use), and repeats until the schedule fits.
//!   Complexity: one rotor table (O(L³ S)), then 40 × O(L) capper rounds of
//!   O(L) candidates, each judged by an O(L) simulation: O(L³) simulated
//!   operations per try; chains over [`AUTOCAPPER_MAX_STAGES`] are refused.
//!
//! All three place their prefetches by one rule ([`place_prefetches`]): after
//! the loss (pofo, opportunist) or the tensor's offload (capper), at the
//! place before its use where the judged schedule fits and is fastest. So
//! comparing them compares what they offload and recompute, not where they
//! happen to put prefetches.
//!
//! Every schedule here is judged by the simulator with the budget as its
//! memory limit (transfers at once: memory is freed when an offload ends and
//! taken when a prefetch starts).

use super::pofo::{Mode, Pofo, PofoPlan};
use super::{persistent, store_all, Algorithm, Options, Planner, Progress, Solution, SolveError};
use crate::model::units::{format_bytes, format_seconds};
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::simulator::{judge, Lane, TensorId, Trace};

/// [`judge`] for the solvers here: a schedule that does not run is no candidate.
fn run(chain: &Chain, ops: &[Op], budget: u64, bandwidth: Option<f64>) -> Option<Trace> {
    judge(chain, ops, budget, bandwidth).ok()
}

/// Inserts one prefetch per entry of `needs` ((deadline index, stage, tensor),
/// in deadline order) after `first` and before its deadline: each at the
/// place, from its deadline back to the previous prefetch, where the judged
/// schedule fits and is fastest (prefetches keep their order: one copy lane).
/// O(P · L · n) for P prefetches over n ops: one simulation per place tried.
pub fn place_prefetches(
    chain: &Chain,
    ops: &[Op],
    needs: &[(usize, usize, TensorKind)],
    first: usize,
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let earliest = vec![first; needs.len()];
    place_prefetches_after(chain, ops, needs, &earliest, budget, bandwidth)
}

/// The placement of [`place_prefetches`] applied to a schedule that already
/// has its prefetches (opportunist, capper): each is taken out, its deadline
/// is the operation it preceded, and it goes back at the best place after
/// `first` (the loss, for the heuristics whose offloads all come before it)
/// and after its own offload. So the three algorithms that prefetch share one
/// rule and differ only by what they offload and recompute.
fn replace_prefetches(
    chain: &Chain,
    ops: &[Op],
    first: usize,
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let mut bare = Vec::with_capacity(ops.len());
    let mut needs = Vec::new();
    let mut earliest = Vec::new();
    // Index in `bare` after the latest offload of each (stage, tensor).
    let mut offloaded: Vec<((usize, TensorKind), usize)> = Vec::new();
    for op in ops {
        match *op {
            Op::Prefetch { stage, tensor } => {
                let after = offloaded
                    .iter()
                    .rev()
                    .find(|(t, _)| *t == (stage, tensor))
                    .map_or(0, |x| x.1);
                needs.push((bare.len(), stage, tensor));
                earliest.push(after.max(first.min(bare.len())));
            }
            Op::Offload { stage, tensor } => {
                bare.push(*op);
                offloaded.push(((stage, tensor), bare.len()));
            }
            _ => bare.push(*op),
        }
    }
    if needs.is_empty() {
        return ops.to_vec();
    }
    place_prefetches_after(chain, &bare, &needs, &earliest, budget, bandwidth)
}

/// [`place_prefetches`] with a lower bound of its own for each prefetch.
fn place_prefetches_after(
    chain: &Chain,
    ops: &[Op],
    needs: &[(usize, usize, TensorKind)],
    earliest: &[usize],
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let mut places: Vec<usize> = needs.iter().map(|n| n.0).collect();
    let build = |places: &[usize]| -> Vec<Op> {
        let mut out = Vec::with_capacity(ops.len() + needs.len());
        let mut k = 0;
        for (i, op) in ops.iter().enumerate() {
            while k < needs.len() && places[k] == i {
                out.push(Op::Prefetch {
                    stage: needs[k].1,
                    tensor: needs[k].2,
                });
                k += 1;
            }
            out.push(*op);
        }
        out
    };
    // Fitting first, then the makespan: (over the budget, seconds).
    let score = |t: &Option<Trace>| match t {
        Some(t) => (u8::from(!t.fits(budget)), t.makespan_seconds),
        None => (1, f64::INFINITY),
    };
    for k in 0..needs.len() {
        let deadline = needs[k].0;
        let lowest = if k == 0 {
            earliest[k]
        } else {
            places[k - 1].max(earliest[k])
        }
        .min(deadline);
        let mut best = (
            score(&run(chain, &build(&places), budget, bandwidth)),
            deadline,
        );
        // A prefetch listed at p is issued when ops[p − 1] ends: only places
        // after an op that frees memory (a backward, an F_∅), and the first
        // one, can start it earlier than the next such place.
        let frees = |p: usize| {
            p == lowest || matches!(ops[p - 1], Op::Backward { .. } | Op::ForwardNone { .. })
        };
        for p in (lowest..deadline).rev().filter(|&p| frees(p)) {
            places[k] = p;
            let s = score(&run(chain, &build(&places), budget, bandwidth));
            if s.0 < best.0 .0 || (s.0 == best.0 .0 && s.1 < best.0 .1) {
                best = (s, p);
            }
        }
        places[k] = best.1;
    }
    build(&places)
}

/// A finished schedule with the DP's prediction, as a [`Solution`].
fn solution(
    algorithm: Algorithm,
    budget: u64,
    ops: Option<Vec<Op>>,
    predicted_seconds: Option<f64>,
    detail: String,
) -> Solution {
    Solution {
        algorithm,
        budget_bytes: budget,
        ops,
        predicted_seconds,
        predicted_peak_bytes: None,
        detail,
    }
}

/// Any offloading algorithm for one budget; `progress` sees the DP's table
/// (pofo) or autocapper's 40 tries, and can cancel them.
pub fn solve(
    chain: &Chain,
    algorithm: Algorithm,
    budget: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<Solution, SolveError> {
    match algorithm {
        Algorithm::Pofo | Algorithm::OffloadOnly => {
            solve_dp(chain, algorithm, budget, options, progress)
        }
        Algorithm::Opportunist => opportunist(chain, budget, options),
        Algorithm::Autocapper => autocapper(chain, budget, options, progress),
        other => super::solve(chain, other, budget, options),
    }
}

/// `pofo` or `offload-only` for one budget.
pub fn solve_dp(
    chain: &Chain,
    algorithm: Algorithm,
    budget: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<Solution, SolveError> {
    let mode = if algorithm == Algorithm::OffloadOnly {
        Mode::OffloadOnly
    } else {
        Mode::Full
    };
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let slots = options.offload_slots;
    // A bad option is an error whatever the budget (even where store-all fits).
    super::pofo::validate(chain.len(), slots)?;
    // Nothing is faster than Σ u: when store-all fits, it is the answer.
    let all = store_all::schedule(chain);
    if let Some(t) = run(chain, &all, budget, None).filter(|t| t.fits(budget)) {
        return Ok(solution(
            algorithm,
            budget,
            Some(all),
            Some(t.makespan_seconds),
            "everything fits: no transfer, no recomputation".into(),
        ));
    }
    let linked = bandwidth.is_some_and(|b| b > 0.0);
    let grid = format!(
        "{slots} slots of {}",
        format_bytes(budget / slots.max(1) as u64)
    );
    let with_transfers = if linked || mode == Mode::OffloadOnly {
        let mut dp = Pofo::build(
            chain,
            mode,
            budget,
            slots,
            bandwidth,
            options.max_table_bytes,
            progress,
        )?
        .with_loss_step(options.loss_step);
        dp.plan(progress)?
            .and_then(|plan| convert(chain, plan, budget, bandwidth))
    } else {
        None
    };
    // pofo's class holds rotor's: rotor's schedule (on its own, finer grid)
    // is judged too, so pofo is never slower nor less often feasible.
    let without = if mode == Mode::Full {
        let plain = Options {
            bandwidth_bytes_per_s: None,
            ..options.clone()
        };
        super::solve(chain, Algorithm::Rotor, budget, &plain)?
            .ops
            .and_then(|ops| {
                run(chain, &ops, budget, None)
                    .filter(|t| t.fits(budget))
                    .map(|t| (ops, t))
            })
    } else {
        None
    };
    Ok(match (with_transfers, without) {
        (Some((ops, t, predicted)), rotor)
            if rotor
                .as_ref()
                .is_none_or(|r| t.makespan_seconds <= r.1.makespan_seconds) =>
        {
            let detail = format!(
                "{grid}; DP {} with continuous transfers, simulated {} at once",
                format_seconds(predicted),
                format_seconds(t.makespan_seconds)
            );
            solution(algorithm, budget, Some(ops), Some(predicted), detail)
        }
        (dp, Some((ops, t))) => {
            let why = match dp {
                Some((_, d, _)) => format!(
                    "faster than pofo's at-once transfers ({})",
                    format_seconds(d.makespan_seconds)
                ),
                None if !linked => "no host link".into(),
                None => format!("nothing with transfers fits on pofo's grid of {grid}"),
            };
            let detail = format!("rotor's schedule, no transfer: {why}");
            solution(
                algorithm,
                budget,
                Some(ops),
                Some(t.makespan_seconds),
                detail,
            )
        }
        _ if !linked => solution(
            algorithm,
            budget,
            None,
            None,
            "no host link: with nothing to offload, only M_high fits".into(),
        ),
        _ => solution(
            algorithm,
            budget,
            None,
            None,
            format!("no schedule fits on the grid of {grid}"),
        ),
    })
}

/// The DP's plan with its prefetches placed, judged; None if it does not fit.
fn convert(
    chain: &Chain,
    plan: PofoPlan,
    budget: u64,
    bandwidth: Option<f64>,
) -> Option<(Vec<Op>, Trace, f64)> {
    let ops = place_prefetches(
        chain,
        &plan.ops,
        &plan.needs,
        plan.loss_index + 1,
        budget,
        bandwidth,
    );
    let trace = run(chain, &ops, budget, bandwidth).filter(|t| t.fits(budget))?;
    Some((ops, trace, plan.predicted_seconds))
}

/// Stages s..=e of `chain` as a chain of their own whose input is `input_bytes`
/// (a^{s-1} or ā^{s-1}); its ops are renumbered by [`shift`].
fn sub_chain(chain: &Chain, s: usize, e: usize, input_bytes: u64) -> Chain {
    Chain {
        name: format!("{} stages {s}..{e}", chain.name),
        source: chain.source.clone(),
        input_bytes,
        input_gradient_bytes: chain.gradient_bytes(s - 1),
        bandwidth_bytes_per_s: None,
        stages: chain.stages[s - 1..e].to_vec(),
    }
}

fn shift(op: Op, by: usize) -> Op {
    match op {
        Op::ForwardAll { stage } => Op::ForwardAll { stage: stage + by },
        Op::ForwardCheckpoint { stage } => Op::ForwardCheckpoint { stage: stage + by },
        Op::ForwardNone { stage } => Op::ForwardNone { stage: stage + by },
        Op::Backward { stage } => Op::Backward { stage: stage + by },
        Op::Offload { stage, tensor } => Op::Offload {
            stage: stage + by,
            tensor,
        },
        Op::Prefetch { stage, tensor } => Op::Prefetch {
            stage: stage + by,
            tensor,
        },
    }
}

/// Rotor's schedule for stages s..=e from an input of `input_bytes`, within
/// `budget`, renumbered into the whole chain.
fn rotor_segment(
    chain: &Chain,
    s: usize,
    e: usize,
    input_bytes: u64,
    budget: u64,
    options: &Options,
) -> Result<Option<Vec<Op>>, SolveError> {
    let sub = sub_chain(chain, s, e, input_bytes);
    let opts = Options {
        bandwidth_bytes_per_s: None,
        ..options.clone()
    };
    // An error (a table over the limit) is the caller's error, not "no fit".
    let plan = super::solve(&sub, Algorithm::Rotor, budget, &opts)?;
    Ok(plan
        .ops
        .map(|ops| ops.into_iter().map(|op| shift(op, s - 1)).collect()))
}

fn bytes_of(chain: &Chain, (stage, kind): (usize, TensorKind)) -> u64 {
    match kind {
        TensorKind::Output => chain.output_bytes(stage),
        TensorKind::Saved => chain.saved_bytes(stage),
    }
}

/// `opportunist` (POFO Section 5.1) for one budget.
pub fn opportunist(chain: &Chain, budget: u64, options: &Options) -> Result<Solution, SolveError> {
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let fail = |why: String| Ok(solution(Algorithm::Opportunist, budget, None, None, why));
    let n = chain.len();
    check_heuristic_size(Algorithm::Opportunist, n)?;
    // Whether stages s..=L run with F_all from `input`, next to δ^L only.
    let rest_fits = |s: usize, input: (usize, TensorKind)| {
        let sub = sub_chain(chain, s, n, bytes_of(chain, input));
        super::max_useful_budget(&sub) <= budget
    };
    let mut ops: Vec<Op> = Vec::new();
    let mut offloaded: Vec<(usize, TensorKind)> = Vec::new();
    // (first stage, last stage, the input it offloaded)
    let mut groups: Vec<(usize, usize, (usize, TensorKind))> = Vec::new();
    let mut input = (0, TensorKind::Output);
    let mut s = 1;
    while s < n && !rest_fits(s, input) {
        if bandwidth.is_none_or(|b| b <= 0.0) {
            return fail("needs a host↔device bandwidth to offload".into());
        }
        // F_all^s, then its input and ā^s leave while F_∅ runs. ā^s is
        // listed after its reader F^{s+1}: the copy starts when ā^s exists.
        let saved = (s, TensorKind::Saved);
        ops.push(Op::ForwardAll { stage: s });
        ops.push(Op::Offload {
            stage: input.0,
            tensor: input.1,
        });
        offloaded.push(input);
        let mut e = s;
        while e + 1 < n {
            let mut trial = ops.clone();
            if e == s {
                trial.push(Op::Offload {
                    stage: s,
                    tensor: TensorKind::Saved,
                });
            }
            let Some(t) = run(chain, &trial, u64::MAX, bandwidth) else {
                return fail("its forward phase does not run".into());
            };
            let lane_end = |lane| {
                t.spans
                    .iter()
                    .filter(|sp| sp.lane == lane)
                    .map(|sp| sp.end)
                    .fold(0.0, f64::max)
            };
            if lane_end(Lane::Copy) <= lane_end(Lane::Compute) {
                break;
            }
            e += 1;
            ops.push(Op::ForwardNone { stage: e });
            if e == s + 1 {
                ops.push(Op::Offload {
                    stage: s,
                    tensor: TensorKind::Saved,
                });
                offloaded.push(saved);
            }
        }
        groups.push((s, e, input));
        // With no F_∅ after it, ā^s is the next group's input (offloaded there).
        input = if e == s {
            saved
        } else {
            (e, TensorKind::Output)
        };
        s = e + 1;
    }
    if !rest_fits(s, input) {
        return fail(format!(
            "stages {s}..{n} do not fit in {} even with everything before them offloaded",
            format_bytes(budget)
        ));
    }
    let tail = s;
    ops.extend((tail..=n).map(|stage| Op::ForwardAll { stage }));
    ops.extend((tail..=n).rev().map(|stage| Op::Backward { stage }));
    let mut back_on_device: Vec<(usize, TensorKind)> = Vec::new();
    for &(gs, ge, gin) in groups.iter().rev() {
        for t in [(gs, TensorKind::Saved), gin] {
            if offloaded.contains(&t) && !back_on_device.contains(&t) {
                ops.push(Op::Prefetch {
                    stage: t.0,
                    tensor: t.1,
                });
                back_on_device.push(t);
            }
        }
        if ge > gs {
            let room = budget.saturating_sub(bytes_of(chain, gin));
            let Some(seg) = rotor_segment(chain, gs + 1, ge, chain.saved_bytes(gs), room, options)?
            else {
                return fail(format!(
                    "rematerialization cannot fit stages {}..{ge} in what is left",
                    gs + 1
                ));
            };
            ops.extend(seg);
        }
        ops.push(Op::Backward { stage: gs });
    }
    let groups_n = groups.len();
    // Prefetches as pofo places them: from the loss on, as early as fits best.
    let loss = ops
        .iter()
        .position(|op| *op == Op::ForwardAll { stage: n })
        .map_or(0, |p| p + 1);
    let ops = if fits_as_is(chain, &ops, budget, bandwidth) {
        replace_prefetches(chain, &ops, loss, budget, bandwidth)
    } else {
        ops
    };
    Ok(finish(
        chain,
        Algorithm::Opportunist,
        budget,
        bandwidth,
        ops,
        |t| {
            format!(
                "{groups_n} group{} offloaded ({}), stages {tail}..{n} kept",
                if groups_n == 1 { "" } else { "s" },
                format_bytes(t.offloaded_bytes)
            )
        },
    ))
}

/// Whether `ops` runs within `budget`.
fn fits_as_is(chain: &Chain, ops: &[Op], budget: u64, bandwidth: Option<f64>) -> bool {
    run(chain, ops, budget, bandwidth).is_some_and(|t| t.fits(budget))
}

/// Judges `ops`; a Solution that says whether it fits.
fn finish(
    chain: &Chain,
    algorithm: Algorithm,
    budget: u64,
    bandwidth: Option<f64>,
    ops: Vec<Op>,
    detail: impl Fn(&Trace) -> String,
) -> Solution {
    match run(chain, &ops, budget, bandwidth) {
        Some(t) if t.fits(budget) => {
            let d = detail(&t);
            solution(algorithm, budget, Some(ops), None, d)
        }
        Some(t) => solution(
            algorithm,
            budget,
            None,
            None,
            format!("its schedule peaks at {}", format_bytes(t.peak_bytes)),
        ),
        None => solution(
            algorithm,
            budget,
            None,
            None,
            "its schedule does not run".into(),
        ),
    }
}

/// Whether `op` may read `tensor` (as its input, or B^ℓ's ā^ℓ).
fn reads(op: Op, tensor: TensorId) -> bool {
    match (op, tensor) {
        (Op::Offload { .. } | Op::Prefetch { .. }, _) => false,
        (op, TensorId::Activation(l) | TensorId::Saved(l)) if op.stage() == l + 1 => true,
        (Op::Backward { stage }, TensorId::Saved(l)) => stage == l,
        _ => false,
    }
}

/// Whether `op` puts `tensor` on the device.
fn produces(op: Op, tensor: TensorId) -> bool {
    match (op, tensor) {
        (Op::ForwardAll { stage }, TensorId::Saved(l)) => stage == l,
        (Op::ForwardCheckpoint { stage } | Op::ForwardNone { stage }, TensorId::Activation(l)) => {
            stage == l
        }
        (Op::Prefetch { stage, tensor: k }, TensorId::Activation(l)) => {
            stage == l && k == TensorKind::Output
        }
        (Op::Prefetch { stage, tensor: k }, TensorId::Saved(l)) => {
            stage == l && k == TensorKind::Saved
        }
        _ => false,
    }
}

/// `capper(M')`: `rotor`, rotor's schedule for M', with offloads added at
/// each peak over `budget` until it fits.
fn capper(
    chain: &Chain,
    budget: u64,
    rotor: Vec<Op>,
    bandwidth: Option<f64>,
) -> Option<(Vec<Op>, Trace)> {
    let mut ops = rotor;
    let mut tried: Vec<(usize, TensorId)> = Vec::new();
    for _ in 0..8 * chain.len() + 16 {
        let trace = run(chain, &ops, budget, bandwidth)?;
        if trace.fits(budget) {
            return Some((ops, trace));
        }
        let peak_op = trace.peak_op?;
        let mut candidates: Vec<TensorId> = trace
            .resident_at(trace.peak_time)
            .into_iter()
            .map(|r| r.tensor)
            .filter(|t| matches!(t, TensorId::Activation(_) | TensorId::Saved(_)))
            .filter(|t| !reads(ops[peak_op], *t) && !produces(ops[peak_op], *t))
            .filter(|t| !tried.contains(&(peak_op, *t)))
            .collect();
        candidates.sort_by_key(|t| match t {
            TensorId::Activation(l) => (*l, 0),
            TensorId::Saved(l) => (*l, 1),
            _ => (usize::MAX, 2),
        });
        let mut moved = false;
        for t in candidates {
            tried.push((peak_op, t));
            let Some(next) = offload_around(&ops, peak_op, t) else {
                continue;
            };
            if run(chain, &next, budget, bandwidth).is_some() {
                ops = next;
                moved = true;
                break;
            }
        }
        if !moved {
            return None;
        }
    }
    None
}

/// `ops` with `tensor` offloaded after its last use before `peak` and
/// prefetched right before its next use after it.
fn offload_around(ops: &[Op], peak: usize, tensor: TensorId) -> Option<Vec<Op>> {
    let last = (0..peak)
        .rev()
        .find(|&i| reads(ops[i], tensor) || produces(ops[i], tensor))?;
    let next = (peak + 1..ops.len()).find(|&i| reads(ops[i], tensor))?;
    let (stage, kind) = match tensor {
        TensorId::Activation(l) => (l, TensorKind::Output),
        TensorId::Saved(l) => (l, TensorKind::Saved),
        _ => return None,
    };
    let mut out = Vec::with_capacity(ops.len() + 2);
    out.extend_from_slice(&ops[..=last]);
    out.push(Op::Offload {
        stage,
        tensor: kind,
    });
    out.extend_from_slice(&ops[last + 1..next]);
    out.push(Op::Prefetch {
        stage,
        tensor: kind,
    });
    out.extend_from_slice(&ops[next..]);
    Some(out)
}

/// How many budgets M' autocapper tries (POFO Section 5.1).
pub const AUTOCAPPER_TRIES: usize = 40;

/// The most stages `autocapper` takes on: 40 cappers, each O(L) rounds of
/// O(L) candidate offloads judged by an O(L) simulation, then the prefetch
/// placement (O(P · L) simulations): O(L³) simulations' worth in all.
/// Measured on `examples::synthetic` at α = 0.3 (release build): 0.5 s at
/// L = 100, 2.6 s at 200, 17 s at 400; a 5000-stage chain would take days.
pub const AUTOCAPPER_MAX_STAGES: usize = 250;

/// The most stages `opportunist` takes on: O(L) forward-prefix simulations
/// per group, a rotor table per group and the prefetch placement; 0.1 s at
/// L = 400, growing about 3× per doubling.
pub const OPPORTUNIST_MAX_STAGES: usize = 1000;

/// [`SolveError::TooLarge`] for chains longer than the heuristic's limit
/// ([`AUTOCAPPER_MAX_STAGES`], [`OPPORTUNIST_MAX_STAGES`]): refused at once
/// rather than left to run for hours.
fn check_heuristic_size(algorithm: Algorithm, stages: usize) -> Result<(), SolveError> {
    let most = if algorithm == Algorithm::Autocapper {
        AUTOCAPPER_MAX_STAGES
    } else {
        OPPORTUNIST_MAX_STAGES
    };
    if stages > most {
        return Err(SolveError::TooLarge(format!(
            "stages: {algorithm} judges O(L³) candidate schedules in the simulator and takes \
             chains of at most {most} stages; this one has {stages}. Use rotor or pofo"
        )));
    }
    Ok(())
}

/// `autocapper` (POFO Section 5.1) for one budget.
pub fn autocapper(
    chain: &Chain,
    budget: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<Solution, SolveError> {
    check_heuristic_size(Algorithm::Autocapper, chain.len())?;
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let high = super::max_useful_budget(chain).max(budget);
    let low = persistent::min_budget(chain, persistent::Variant::Rotor);
    let plain = Options {
        bandwidth_bytes_per_s: None,
        ..options.clone()
    };
    // One rotor table for M_high answers every M' (read-outs are O(L));
    // M' = budget gets a table of its own, so autocapper is feasible
    // wherever rotor is.
    let table = Planner::build(
        chain,
        Algorithm::Rotor,
        high,
        &plain,
        &mut super::no_progress(),
    )?;
    let mut best: Option<(Vec<Op>, Trace, u64)> = None;
    for k in 0..AUTOCAPPER_TRIES {
        let m_prime =
            budget + ((high - budget) as f64 * k as f64 / (AUTOCAPPER_TRIES - 1) as f64) as u64;
        let rotor = if k == 0 {
            super::solve(chain, Algorithm::Rotor, m_prime, &plain)?.ops
        } else {
            table.plan(chain, m_prime)?.ops
        };
        if let (true, Some(rotor)) = (m_prime >= low, rotor) {
            if let Some((ops, trace)) = capper(chain, budget, rotor, bandwidth) {
                // Prefetches as pofo places them (capper puts each right
                // before its next use): after its offload, as early as fits
                // best. The placement starts from capper's, which fits.
                let placed = replace_prefetches(chain, &ops, 0, budget, bandwidth);
                let (ops, trace) = match run(chain, &placed, budget, bandwidth) {
                    Some(t) if t.fits(budget) => (placed, t),
                    _ => (ops, trace),
                };
                if best
                    .as_ref()
                    .is_none_or(|b| trace.makespan_seconds < b.1.makespan_seconds)
                {
                    best = Some((ops, trace, m_prime));
                }
            }
        }
        if !progress((k + 1) as f64 / AUTOCAPPER_TRIES as f64) {
            return Err(SolveError::Cancelled);
        }
    }
    Ok(match best {
        Some((ops, trace, m_prime)) => solution(
            Algorithm::Autocapper,
            budget,
            Some(ops),
            None,
            format!(
                "capper at M' = {}: {} offloaded",
                format_bytes(m_prime),
                format_bytes(trace.offloaded_bytes)
            ),
        ),
        None => solution(
            Algorithm::Autocapper,
            budget,
            None,
            None,
            format!(
                "no M' from {} up gives a schedule that fits",
                format_bytes(budget)
            ),
        ),
    })
}
