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

pub mod pofo;

use super::api::{Algorithm, Options, Problem, Progress, Solution, SolveError};
use super::persistent::{self, Variant};
use crate::model::units::format_bytes;
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::simulator::{judge, Trace};

mod autocapper;
mod dp;
mod opportunist;
mod prefetch;

pub use autocapper::{autocapper, AUTOCAPPER_TRIES};
pub use dp::{grid_for, solve_dp, TableAnswer, Tables};
pub use opportunist::opportunist;
pub use prefetch::{place_prefetches, with_prefetches};

/// [`judge`] for the solvers here: a schedule that does not run is no candidate.
pub(super) fn run(chain: &Chain, ops: &[Op], budget: u64, bandwidth: Option<f64>) -> Option<Trace> {
    judge(chain, ops, budget, bandwidth).ok()
}

/// A finished schedule with the DP's prediction, as a [`Solution`].
pub(super) fn solution(
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

/// Any offloading algorithm for one budget: the function the planner's
/// per-budget dispatch (`solvers/planner.rs`) gives this family, which the
/// [`Planner`](super::Planner) calls; `progress` sees the DP's table
/// (pofo) or autocapper's 40 tries, and can cancel them.
pub fn solve(problem: &Problem<'_>, progress: &mut Progress<'_>) -> Result<Solution, SolveError> {
    let (chain, budget, options) = (problem.chain, problem.budget, problem.options);
    match problem.algorithm {
        Algorithm::Pofo | Algorithm::OffloadOnly => solve_dp(problem, progress),
        Algorithm::Opportunist => opportunist(chain, budget, options),
        Algorithm::Autocapper => autocapper(chain, budget, options, progress),
        other => Err(SolveError::BadOption(format!(
            "algorithm: {other} does not offload; solve it with solvers::solve"
        ))),
    }
}

/// Stages s..=e of `chain` as a chain of their own whose input is `input_bytes`
/// (a^{s-1} or ā^{s-1}); its ops are renumbered by [`Op::shifted`].
/// The parameter gradients of the stages after `e`, resident all through
/// the piece's backward, ride on its last δ, so that every δ of the piece
/// counts them as the whole chain's do ([`Chain::gradient_bytes`]).
pub(super) fn sub_chain(chain: &Chain, s: usize, e: usize, input_bytes: u64) -> Chain {
    let mut stages = chain.stages[s - 1..e].to_vec();
    if let Some(last) = stages.last_mut() {
        last.gradient_bytes += chain.parameter_gradients_after(e);
    }
    Chain {
        name: format!("{} stages {s}..{e}", chain.name),
        source: chain.source.clone(),
        input_bytes,
        input_gradient_bytes: chain.activation_gradient_bytes(s - 1),
        bandwidth_bytes_per_s: None,
        stages,
        ..Chain::default()
    }
}

/// Rotor's schedule for stages s..=e from an input of `input_bytes`, within
/// `budget`, renumbered into the whole chain.
pub(super) fn rotor_segment(
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
    let plan = persistent::solve(&sub, Variant::Rotor, budget, &opts)?;
    Ok(plan.map(|p| p.ops.into_iter().map(|op| op.shifted(s - 1)).collect()))
}

pub(super) fn bytes_of(chain: &Chain, (stage, kind): (usize, TensorKind)) -> u64 {
    match kind {
        TensorKind::Output => chain.output_bytes(stage),
        TensorKind::Saved => chain.saved_bytes(stage),
    }
}

/// Whether `ops` runs within `budget`.
pub(super) fn fits_as_is(chain: &Chain, ops: &[Op], budget: u64, bandwidth: Option<f64>) -> bool {
    run(chain, ops, budget, bandwidth).is_some_and(|t| t.fits(budget))
}

/// Judges `ops`; a Solution that says whether it fits.
pub(super) fn finish(
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
pub(super) fn check_heuristic_size(algorithm: Algorithm, stages: usize) -> Result<(), SolveError> {
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
