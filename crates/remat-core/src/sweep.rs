//! Overhead over the memory ratio α and the bandwidth β (POFO Section 5.2,
//! Figures 4–5): every algorithm solved at every budget and judged there.
//! The CLI's `remat sweep` and the explorer's sweep panel both compute
//! their points here.
//!
//! A run is one (α, β): the budget is [`budget_at_ratio`]`(m_low, m_high,
//! α)` and offloading algorithms move bytes at β. Each algorithm is asked
//! through a [`Planner`]: store-all, sequential, hong and hong-chen are
//! built once (their answer does not depend on the budget they are built
//! for), the others
//! for each budget, so every point is what [`solve`](crate::solvers::solve)
//! answers for it. Every schedule is [judged](crate::simulator::judge) with
//! the budget as memory limit at the run's β.
//!
//! Errors stop the sweep: a point left out would read as "infeasible".
//!
//! Complexity: R runs × A algorithms solves (each its algorithm's cost at
//! that budget: one rotor table, one pofo DP, …) plus one O(n) judge each.

use crate::model::Chain;
use crate::simulator::{judge, SimError, Trace};
use crate::solvers::{
    budget_at_ratio, persistent, Algorithm, Memory, Options, Planner, Progress, SlotPolicy,
    Solution, SolveError,
};

/// One (α, β) of a sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepRun {
    /// Memory ratio in [0, 1]: 0 is `m_low`, 1 is `m_high`.
    pub alpha: f64,
    /// β for the offloading algorithms and the judge; None: the chain's
    /// own (no link if it has none).
    pub bandwidth: Option<f64>,
}

/// One algorithm at one run, measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub algorithm: Algorithm,
    pub alpha: f64,
    /// The β used: the run's, else the chain's.
    pub bandwidth: Option<f64>,
    pub budget_bytes: u64,
    /// The solver's answer (its detail line, its own predictions).
    pub solution: Solution,
    /// How the answer treated memory (exact or a grid).
    pub memory: Memory,
    /// The judged schedule; None when the algorithm has none for the budget.
    pub trace: Option<Trace>,
}

impl SweepPoint {
    /// Whether the algorithm has a schedule that fits the budget
    /// ([`Trace::fits`]).
    pub fn feasible(&self) -> bool {
        self.trace
            .as_ref()
            .is_some_and(|t| t.fits(self.budget_bytes))
    }

    /// The judged makespan where [`feasible`](Self::feasible).
    pub fn makespan_seconds(&self) -> Option<f64> {
        self.trace
            .as_ref()
            .filter(|t| t.fits(self.budget_bytes))
            .map(|t| t.makespan_seconds)
    }
}

/// Why a sweep stopped; the messages are the ones people see.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// A budget-independent planner (store-all, sequential, hong) failed.
    #[error("{algorithm}: {error}")]
    Build {
        algorithm: Algorithm,
        error: SolveError,
    },
    /// An algorithm failed at one α (not "infeasible": no answer at all).
    #[error("{algorithm} at α = {alpha}: {error}")]
    Solve {
        algorithm: Algorithm,
        alpha: f64,
        error: SolveError,
    },
    /// A solver's schedule did not run: a solver bug, shown as one.
    #[error("{0}")]
    Judge(SimError),
    /// The progress callback asked to stop.
    #[error("cancelled")]
    Cancelled,
}

/// α evenly spaced over [0, 1]: 0, 1/(points − 1), …, 1 (`points` ≥ 2;
/// one point is α = 0).
pub fn alphas(points: usize) -> Vec<f64> {
    if points < 2 {
        return vec![0.0];
    }
    (0..points)
        .map(|i| i as f64 / (points - 1) as f64)
        .collect()
}

/// M_low of the CLI's sweep and reports, capped at `m_high`: under
/// [`SlotPolicy::Exact`] (rotor's breakpoint table) the exact least memory
/// of a persistent schedule ([`persistent::min_budget`], O(L³)), the same
/// number the explorer shows; under [`SlotPolicy::Fixed`] the least budget
/// the grid's tables meet ([`persistent::min_budget_met`]), so that α = 0 is
/// feasible for rotor. A chain whose breakpoints fall back to the grid may
/// need more for rotor itself: its planner's
/// [`min_budget_bytes`](crate::solvers::Planner::min_budget_bytes) says how
/// much. (It used the grid's number under both policies, so `remat solve`
/// printed M_low 64 KiB above rotor's own least on resnet50-h100.)
pub fn rotor_m_low(chain: &Chain, options: &Options, m_high: u64) -> u64 {
    let low = match options.slot_policy {
        SlotPolicy::Exact => Some(persistent::min_budget(chain, persistent::Variant::Rotor)),
        SlotPolicy::Fixed => persistent::min_budget_met(
            chain,
            persistent::Variant::Rotor,
            options.slot_policy,
            options.slots,
            options.max_table_bytes,
            Some(m_high),
        )
        .map(|m| m.bytes),
    };
    low.map_or(m_high, |m| m.min(m_high))
}

/// Every algorithm of `algorithms` at every run of `runs` (runs outer,
/// algorithms inner, in the given orders), with `options` as knobs (its
/// bandwidth replaced by each run's). `progress` sees the fraction of the
/// points done, including the work inside each solve, and cancels with
/// `false`.
///
/// ```
/// use remat_core::examples::teaching;
/// use remat_core::solvers::{max_useful_budget, no_progress, persistent, Algorithm, Options};
/// use remat_core::sweep::{sweep, SweepRun};
///
/// let chain = teaching();
/// let m_low = persistent::min_budget(&chain, persistent::Variant::Rotor);
/// let m_high = max_useful_budget(&chain);
/// let runs = [0.0, 0.5, 1.0].map(|alpha| SweepRun { alpha, bandwidth: None });
/// let points = sweep(&chain, &[Algorithm::Rotor], &runs, m_low, m_high,
///                    &Options::default(), &mut no_progress()).unwrap();
/// // At α = 1 everything fits: no overhead; at α = 0 rotor still fits.
/// assert_eq!(points[2].trace.as_ref().unwrap().overhead(), 0.0);
/// assert!(points[0].feasible());
/// ```
pub fn sweep(
    chain: &Chain,
    algorithms: &[Algorithm],
    runs: &[SweepRun],
    m_low: u64,
    m_high: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<Vec<SweepPoint>, SweepError> {
    // Budget-independent planners once, for the largest budget.
    let mut fixed = Vec::with_capacity(algorithms.len());
    for &algorithm in algorithms {
        fixed.push(match algorithm {
            Algorithm::StoreAll
            | Algorithm::Sequential
            | Algorithm::Hong
            | Algorithm::HongChen
            | Algorithm::Optimal => Some(
                Planner::build(chain, algorithm, m_high, options, &mut |_| true)
                    .map_err(|error| SweepError::Build { algorithm, error })?,
            ),
            _ => None,
        });
    }
    let total = (runs.len() * algorithms.len()).max(1) as f64;
    let mut points = Vec::with_capacity(runs.len() * algorithms.len());
    for run in runs {
        let budget = budget_at_ratio(m_low, m_high, run.alpha);
        let bandwidth = run.bandwidth.or(chain.bandwidth_bytes_per_s);
        let opts = Options {
            bandwidth_bytes_per_s: bandwidth,
            ..options.clone()
        };
        for (&algorithm, planner) in algorithms.iter().zip(&fixed) {
            let done = points.len() as f64;
            let mut part = |f: f64| progress((done + f) / total);
            let failed = |error| match error {
                SolveError::Cancelled => SweepError::Cancelled,
                error => SweepError::Solve {
                    algorithm,
                    alpha: run.alpha,
                    error,
                },
            };
            let fresh;
            let planner = match planner {
                Some(p) => p,
                None => {
                    fresh = Planner::build(chain, algorithm, budget, &opts, &mut part)
                        .map_err(failed)?;
                    &fresh
                }
            };
            let solution = planner
                .plan_with_progress(chain, budget, &mut part)
                .map_err(failed)?;
            let trace = match &solution.ops {
                Some(ops) => Some(judge(chain, ops, budget, bandwidth).map_err(SweepError::Judge)?),
                None => None,
            };
            points.push(SweepPoint {
                algorithm,
                alpha: run.alpha,
                bandwidth,
                budget_bytes: budget,
                memory: planner.memory(budget),
                solution,
                trace,
            });
            if !progress(points.len() as f64 / total) {
                return Err(SweepError::Cancelled);
            }
        }
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{synthetic, teaching};
    use crate::solvers::{max_useful_budget, no_progress, solve};

    fn bounds(chain: &Chain) -> (u64, u64) {
        let high = max_useful_budget(chain);
        (rotor_m_low(chain, &Options::default(), high), high)
    }

    /// M_low as reports print it beside any algorithm is rotor's own least
    /// budget, and recompute-all (a persistent schedule) never needs less.
    /// Could fail if: `rotor_m_low` answers the grid's least budget under
    /// the exact policy (mutation tried: `min_budget_met` under both
    /// policies; fails on resnet50-h100, 64 KiB above, and gpt2-cpu-torch),
    /// or recompute-all's schedule holds less than the DP thinks possible.
    #[test]
    fn m_low_is_rotors_own_least_budget_on_every_example() {
        use crate::examples::{by_name, names};
        for name in names() {
            let chain = by_name(name).unwrap();
            let (low, high) = bounds(&chain);
            let options = Options::default();
            let rotor =
                Planner::build(&chain, Algorithm::Rotor, high, &options, &mut no_progress())
                    .unwrap();
            assert_eq!(low, rotor.min_budget_bytes().min(high), "{name}");
            let recompute_all = Planner::build(
                &chain,
                Algorithm::RecomputeAll,
                high,
                &options,
                &mut no_progress(),
            )
            .unwrap();
            assert!(recompute_all.min_budget_bytes() >= low, "{name}");
        }
    }

    /// Each point is what `solve` answers at its budget and β, judged there:
    /// same schedule, same fit, same makespan, for all eight algorithms on
    /// two chains, α over [0, 1] and two bandwidths (one of them none).
    /// Fails if the sweep builds a planner for the wrong budget (mutation
    /// tried: building every planner at `m_high` made revolve's α = 0 point
    /// differ from `solve`'s: failed), judges at the wrong β, or misorders
    /// points.
    #[test]
    fn every_point_is_solve_then_judge() {
        for chain in [teaching(), synthetic(8)] {
            let (low, high) = bounds(&chain);
            // None: the chain's own β (the CLI's default); 4 GB/s: slower.
            let runs: Vec<SweepRun> = [None, Some(4e9)]
                .into_iter()
                .flat_map(|bandwidth| {
                    alphas(5)
                        .into_iter()
                        .map(move |alpha| SweepRun { alpha, bandwidth })
                })
                .collect();
            let points = sweep(
                &chain,
                &Algorithm::ALL,
                &runs,
                low,
                high,
                &Options::default(),
                &mut no_progress(),
            )
            .unwrap();
            assert_eq!(points.len(), runs.len() * Algorithm::ALL.len());
            let mut k = 0;
            for run in &runs {
                let budget = budget_at_ratio(low, high, run.alpha);
                for alg in Algorithm::ALL {
                    let p = &points[k];
                    k += 1;
                    let bw = run.bandwidth.or(chain.bandwidth_bytes_per_s);
                    assert_eq!((p.algorithm, p.alpha, p.bandwidth), (alg, run.alpha, bw));
                    assert_eq!(p.budget_bytes, budget);
                    let opts = Options {
                        bandwidth_bytes_per_s: bw,
                        ..Options::default()
                    };
                    let s = solve(&chain, alg, budget, &opts).unwrap();
                    assert_eq!(p.solution.ops, s.ops, "{alg} at α = {}", run.alpha);
                    let t = s.ops.map(|ops| judge(&chain, &ops, budget, bw).unwrap());
                    assert_eq!(p.trace, t);
                    assert_eq!(
                        p.makespan_seconds(),
                        t.filter(|t| t.fits(budget)).map(|t| t.makespan_seconds)
                    );
                }
            }
            // α = 1 is M_high: everything fits, store-all with no overhead.
            let last = &points[Algorithm::ALL.len() * 4];
            assert_eq!(last.algorithm, Algorithm::StoreAll);
            assert_eq!(last.trace.as_ref().unwrap().overhead(), 0.0);
        }
    }

    /// Progress never goes back, ends at 1, and `false` stops the sweep
    /// with `Cancelled` at once (ignoring the callback's answer after a
    /// point would let rotor's table start: a second call, caught by
    /// `calls == 1`).
    #[test]
    fn progress_and_cancel() {
        let chain = teaching();
        let (low, high) = bounds(&chain);
        let runs: Vec<SweepRun> = alphas(3)
            .into_iter()
            .map(|alpha| SweepRun {
                alpha,
                bandwidth: Some(4e9),
            })
            .collect();
        let algs = [Algorithm::Sequential, Algorithm::Rotor, Algorithm::Pofo];
        let options = Options::default();
        let run = |progress: &mut Progress<'_>| {
            sweep(&chain, &algs, &runs, low, high, &options, progress)
        };
        let mut seen = Vec::new();
        run(&mut |f| {
            seen.push(f);
            true
        })
        .unwrap();
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&1.0));
        let mut calls = 0;
        let cancelled = run(&mut |_| {
            calls += 1;
            false
        });
        assert_eq!(cancelled, Err(SweepError::Cancelled));
        assert_eq!(calls, 1);
    }

    /// A failing solve names the algorithm and α, as the CLI printed it;
    /// a failing budget-independent build names the algorithm.
    #[test]
    fn errors_name_the_algorithm_and_alpha() {
        let chain = teaching();
        let (low, high) = bounds(&chain);
        let runs = [SweepRun {
            alpha: 0.5,
            bandwidth: None,
        }];
        let error = |algorithms: &[Algorithm], change: fn(&mut Options)| {
            let mut options = Options::default();
            change(&mut options);
            sweep(
                &chain,
                algorithms,
                &runs,
                low,
                high,
                &options,
                &mut no_progress(),
            )
            .unwrap_err()
            .to_string()
        };
        let err = error(&[Algorithm::StoreAll, Algorithm::Rotor], |o| o.slots = 0);
        assert!(err.starts_with("rotor at α = 0.5: slots:"), "{err}");
        let err = error(&[Algorithm::Sequential], |o| o.segments = Some(99));
        assert!(err.starts_with("sequential: segments: 99"), "{err}");
    }
}
