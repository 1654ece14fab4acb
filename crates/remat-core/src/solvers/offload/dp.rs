//! `pofo` and `offload-only`: the DP's plan ([`super::pofo`]) turned
//! into a schedule of at-once transfers, judged, and compared with rotor's
//! schedule (pofo's class holds rotor's).

use super::prefetch::with_prefetches;
use super::{run, solution};
use crate::model::units::{format_bytes, format_seconds};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::Trace;
use crate::solvers::api::{Algorithm, Options, Problem, Progress, Solution, SolveError};
use crate::solvers::offload::pofo::{self, Filling, Mode, Pofo, PofoPlan};
use crate::solvers::persistent::{self, Variant};
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
            Filling::default(),
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
    Ok(choose(
        algorithm,
        budget,
        &grid,
        res.reduced(),
        linked,
        with_transfers,
        without,
    ))
}

/// pofo's answer from the DP's judged schedule (its ops, trace and the DP's
/// time) and rotor's judged schedule (pofo's class holds rotor's): the
/// faster, the DP's on a tie. `grid` says the DP's grid; `reduced`: coarser
/// than asked ([`Resolution::reduced`](pofo::Resolution::reduced)).
fn choose(
    algorithm: Algorithm,
    budget: u64,
    grid: &str,
    reduced: bool,
    linked: bool,
    with_transfers: Option<(Vec<Op>, Trace, f64)>,
    without: Option<(Vec<Op>, Trace)>,
) -> Solution {
    match (with_transfers, without) {
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
            if reduced && !detail.contains(grid) {
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
    }
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

/// pofo and offload-only for every budget up to a top from one build: the
/// DP's tables over every budget on one absolute grid ([`pofo::Table`]),
/// and for pofo rotor's table for the same top (pofo's class holds
/// rotor's). [`plan`](Self::plan) then answers a budget as [`solve_dp`]
/// does — store-all where it fits, else the faster of the DP's schedule
/// (prefetches placed) and rotor's, each judged by the simulator with the
/// budget as its limit — reading the tables instead of solving: O(L) DP
/// states and a few O(L) simulations.
///
/// The DP's answer is the per-budget DP's on the same grid, bit for bit
/// (`crates/remat-core/tests/pofo_table.rs`); the grid is the top's, u = ⌊top / N⌋ bytes a
/// slot, so a budget B below the top has ⌊B / u⌋ slots, not [`solve_dp`]'s
/// N slots of ⌊B / N⌋ (coarser: [`TableAnswer::slots`] says how many). A
/// caller that wants the paper's grid shows this answer at once, says so,
/// and refines it with [`solve_dp`] in the background. The
/// [`Planner`](crate::solvers::Planner) holds one where it was built for
/// every budget ([`Planner::from_offload_tables`](crate::solvers::Planner::from_offload_tables)).
pub struct Tables {
    algorithm: Algorithm,
    bandwidth: Option<f64>,
    linked: bool,
    /// The DP's tables; None for pofo without a link (rotor's schedule is
    /// its answer, as in [`solve_dp`]).
    table: Option<pofo::Table>,
    /// Rotor's table for the same top (pofo only).
    rotor: Option<persistent::Table>,
    /// The DP's grid at the top ([`grid_for`]).
    resolution: pofo::Resolution,
    top_bytes: u64,
}

/// One budget's answer from a [`Tables`].
#[derive(Clone, Debug, PartialEq)]
pub struct TableAnswer {
    /// As [`solve_dp`] phrases it: `predicted_seconds` is the DP's time with
    /// continuous transfers where the DP's schedule wins, else the
    /// simulated time; `predicted_peak_bytes` the simulated peak.
    pub solution: Solution,
    /// The simulator's time and peak for `solution.ops` (the budget as its
    /// memory limit, the link's bandwidth): None where nothing fits.
    pub seconds: Option<f64>,
    pub peak_bytes: Option<u64>,
    /// ⌊budget / u⌋ (at most the top's): the slots the DP had at this
    /// budget; 0 where it built no table.
    pub slots: usize,
}

impl Tables {
    /// The tables for every budget up to `max_budget_bytes` (capped at
    /// M_high: above it store-all fits), on `options`' grid at that top
    /// ([`grid_for`]: `offload_slots`, or fewer where the tables would pass
    /// `max_table_bytes`).
    pub fn build(
        chain: &Chain,
        mode: Mode,
        max_budget_bytes: u64,
        options: &Options,
        progress: &mut Progress<'_>,
    ) -> Result<Tables, SolveError> {
        let bandwidth = options
            .bandwidth_bytes_per_s
            .or(chain.bandwidth_bytes_per_s);
        pofo::validate(chain.len(), options.offload_slots)?;
        let linked = bandwidth.is_some_and(|b| b > 0.0);
        let resolution = grid_for(chain, mode, options, bandwidth)?;
        let top_bytes = max_budget_bytes
            .min(crate::solvers::max_useful_budget(chain))
            .max(1);
        // Rotor's share of the progress bar: its table is the cheap one.
        const ROTOR_SHARE: f64 = 0.1;
        let rotor = if mode == Mode::Full {
            let plain = Options {
                bandwidth_bytes_per_s: None,
                ..options.clone()
            };
            let mut report = |d: f64| progress(ROTOR_SHARE * d);
            Some(persistent::Table::build(
                chain,
                Variant::Rotor,
                top_bytes,
                &plain,
                &mut report,
            )?)
        } else {
            None
        };
        let table = if linked || mode == Mode::OffloadOnly {
            let mut report = |d: f64| progress(ROTOR_SHARE + (1.0 - ROTOR_SHARE) * d);
            Some(pofo::Table::build(
                chain,
                mode,
                options.loss_step,
                top_bytes,
                resolution.slots,
                bandwidth,
                options.max_table_bytes,
                &mut report,
            )?)
        } else {
            None
        };
        Ok(Tables {
            algorithm: mode.algorithm(),
            bandwidth,
            linked,
            table,
            rotor,
            resolution,
            top_bytes,
        })
    }

    /// pofo or offload-only.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The link's bandwidth the tables were built for (None: no link).
    pub fn bandwidth(&self) -> Option<f64> {
        self.bandwidth
    }

    /// The DP's tables (None for pofo without a link).
    pub fn table(&self) -> Option<&pofo::Table> {
        self.table.as_ref()
    }

    /// The top budget the tables were built for (at most M_high).
    pub fn top_bytes(&self) -> u64 {
        self.top_bytes
    }

    /// The DP's grid at the top: the slots asked for or fewer, and why.
    pub fn resolution(&self) -> pofo::Resolution {
        self.resolution
    }

    /// The answer at `budget_bytes`, judged by the simulator.
    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> TableAnswer {
        let budget = budget_bytes;
        let slots = self.table.as_ref().map_or(0, |t| t.slots_for(budget));
        let solution = self.solution(chain, budget, slots);
        let trace = solution
            .ops
            .as_ref()
            .and_then(|ops| run(chain, ops, budget, self.bandwidth))
            .filter(|t| t.fits(budget));
        TableAnswer {
            solution: Solution {
                predicted_peak_bytes: trace.as_ref().map(|t| t.peak_bytes),
                ..solution
            },
            seconds: trace.as_ref().map(|t| t.makespan_seconds),
            peak_bytes: trace.as_ref().map(|t| t.peak_bytes),
            slots,
        }
    }

    fn solution(&self, chain: &Chain, budget: u64, slots: usize) -> Solution {
        let all = store_all::schedule(chain);
        if let Some(t) = run(chain, &all, budget, None).filter(|t| t.fits(budget)) {
            return solution(
                self.algorithm,
                budget,
                Some(all),
                Some(t.makespan_seconds),
                "everything fits: no transfer, no recomputation".into(),
            );
        }
        let slot_bytes = self.table.as_ref().map_or(0, |t| t.slot_bytes());
        let mut grid = format!(
            "{slots} slots of {} (the table's grid for every budget up to {}: {} slots)",
            format_bytes(slot_bytes),
            format_bytes(self.top_bytes),
            self.resolution.slots
        );
        if self.resolution.reduced() {
            grid = format!("{grid} ({})", self.resolution.note());
        }
        let with_transfers = self
            .table
            .as_ref()
            .and_then(|t| t.plan(budget))
            .and_then(|plan| convert(chain, plan, budget, self.bandwidth));
        let without = self.rotor.as_ref().and_then(|rotor| {
            let ops = rotor.plan(chain, budget)?.ops;
            run(chain, &ops, budget, None)
                .filter(|t| t.fits(budget))
                .map(|t| (ops, t))
        });
        choose(
            self.algorithm,
            budget,
            &grid,
            self.resolution.reduced(),
            self.linked,
            with_transfers,
            without,
        )
    }
}
