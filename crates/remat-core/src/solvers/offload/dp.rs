//! `pofo` and `offload-only`: the DP's plan ([`super::super::pofo`]) turned
//! into a schedule of at-once transfers, judged, and compared with rotor's
//! schedule (pofo's class holds rotor's).

use super::prefetch::with_prefetches;
use super::{run, solution};
use crate::model::units::{format_bytes, format_seconds};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::Trace;
use crate::solvers::api::{Algorithm, Options, Problem, Progress, Solution, SolveError};
use crate::solvers::persistent::{self, Variant};
use crate::solvers::pofo::{self, Mode, Pofo, PofoPlan};
use crate::solvers::store_all;

/// `pofo` or `offload-only` for one budget.
pub fn solve_dp(
    problem: &Problem<'_>,
    progress: &mut Progress<'_>,
) -> Result<Solution, SolveError> {
    let (chain, budget) = (problem.chain, problem.budget);
    let (algorithm, options) = (problem.algorithm, problem.options);
    let mode = if algorithm == Algorithm::OffloadOnly {
        Mode::OffloadOnly
    } else {
        Mode::Full
    };
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    // A bad option is an error whatever the budget (even where store-all fits).
    pofo::validate(chain.len(), options.offload_slots)?;
    let linked = bandwidth.is_some_and(|b| b > 0.0);
    let res = grid_for(chain, mode, options, bandwidth)?;
    let slots = res.slots;
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
    let mut grid = format!(
        "{slots} slots of {}",
        format_bytes(budget / slots.max(1) as u64)
    );
    if res.reduced() {
        grid = format!("{grid} ({})", res.note());
    }
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
        persistent::solve(chain, Variant::Rotor, budget, &plain)?
            .map(|p| p.ops)
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
            let mut detail = format!("rotor's schedule, no transfer: {why}");
            if res.reduced() && !detail.contains(&grid) {
                detail = format!("{detail}; the DP's grid: {grid}");
            }
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

/// The grid `pofo` or `offload-only` runs on for `chain` under `options`
/// (the link `bandwidth`, if any): `options.offload_slots`, or fewer where
/// their tables would pass `options.max_table_bytes` and the slots were not
/// asked for explicitly ([`pofo::resolution`]). pofo without a link builds
/// no table (it is rotor's schedule): its grid is the one asked for.
pub fn grid_for(
    chain: &Chain,
    mode: Mode,
    options: &Options,
    bandwidth: Option<f64>,
) -> Result<pofo::Resolution, SolveError> {
    let linked = bandwidth.is_some_and(|b| b > 0.0);
    let limit = if linked || mode == Mode::OffloadOnly {
        options.max_table_bytes
    } else {
        u64::MAX
    };
    pofo::resolution(
        chain.len(),
        options.offload_slots,
        linked,
        mode,
        limit,
        options.offload_slots_explicit,
    )
}

/// The DP's plan with its prefetches placed, judged; None if it does not fit.
fn convert(
    chain: &Chain,
    plan: PofoPlan,
    budget: u64,
    bandwidth: Option<f64>,
) -> Option<(Vec<Op>, Trace, f64)> {
    let ops = with_prefetches(chain, &plan, budget, bandwidth);
    let trace = run(chain, &ops, budget, bandwidth).filter(|t| t.fits(budget))?;
    Some((ops, trace, plan.predicted_seconds))
}
