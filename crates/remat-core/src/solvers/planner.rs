//! The only dispatcher: [`Planner`] and [`solve`] pick the algorithm
//! module for an [`Algorithm`]; no algorithm module calls back up here.
//!
//! The explorer's slider asks many budgets of one chain, so solving is split
//! in two: [`Planner::build`] does the expensive part once for the largest
//! budget (a DP table, the k candidates of `sequential`, Hong et al.'s
//! set), and [`Planner::plan`] answers any budget up to it quickly (O(L)
//! nodes).
//! Offloading algorithms depend on the budget throughout: their planner
//! solves each budget anew with the function `per_budget` gives them,
//! e.g. [`offload::solve`]. That dispatch lives here, not in the
//! vocabulary (`api.rs`), which the algorithm modules import. pofo and
//! offload-only can also answer every budget from one build, on the grid
//! of the top budget ([`Planner::from_offload_tables`], the page's quick
//! answers): the same planner, holding [`offload::Tables`].
//!
//! [`offload::solve`]: super::offload::solve
//! [`offload::Tables`]: super::offload::Tables

use super::api::{
    no_progress, Algorithm, Candidate, Options, Problem, Progress, Solution, SolveError, SolveFn,
};
use super::bounds::{max_useful_budget, memory_floor};
use super::offload::pofo;
use super::persistent::{self, Variant};
use super::slots::Memory;
use super::time_floor::time_floor;
use super::{dynamic, hong, offload, optimal, recompute_all, sequential, store_all};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::{simulate_with, SimOptions};

/// Answers budgets for one chain and one algorithm.
pub enum Planner {
    /// One schedule whatever the budget (store-all, recompute-all): it
    /// fits every budget from its peak up.
    Fixed {
        algorithm: Algorithm,
        ops: Vec<Op>,
        seconds: f64,
        peak_bytes: u64,
        /// What the schedule does, in a few words.
        detail: &'static str,
    },
    Sequential {
        candidates: Vec<Candidate>,
    },
    Persistent {
        algorithm: Algorithm,
        /// Breakpoints exact in bytes, or the grid ([`persistent::Table`]).
        table: Box<persistent::Table>,
        /// The least budget `solve` meets with this algorithm and policy.
        min_budget: u64,
        /// Rotor's class contains store-all; checking it exactly spares the
        /// slot grid's rounding at budgets where nothing needs recomputing.
        store_all: Option<(f64, u64)>,
    },
    /// Hong et al.'s least-peak set (hong, hong-chen): one schedule, built
    /// and simulated once, for every budget its simulated peak fits.
    Hong(Box<hong::Plan>),
    /// Algorithms that depend on the budget throughout (the offloading
    /// ones): each budget is solved anew by `solve`, the function
    /// `per_budget` gives them.
    PerBudget {
        algorithm: Algorithm,
        solve: SolveFn,
        options: Options,
        min_budget: u64,
        /// pofo's and offload-only's grid ([`offload::grid_for`]): the slots
        /// asked for, or fewer where their tables would pass the limit.
        offload_grid: Option<pofo::Resolution>,
    },
    /// pofo and offload-only for every budget up to a top from one build
    /// ([`from_offload_tables`](Self::from_offload_tables)): the DP's tables
    /// on the top's grid, each answer judged by the simulator. Coarser than
    /// [`PerBudget`](Self::PerBudget)'s paper grid below the top (each
    /// answer says on how many slots).
    Offload {
        tables: Box<offload::Tables>,
        min_budget: u64,
    },
}

impl Planner {
    /// Does the expensive part once, for budgets up to `max_budget_bytes`:
    /// a persistent table (rotor, revolve), every number of segments
    /// measured (sequential), store-all's and recompute-all's peak, Hong et al.'s set with its
    /// schedule simulated (hong, hong-chen); offloading algorithms keep
    /// their options and solve each budget in [`plan`](Self::plan).
    ///
    /// ```
    /// use remat_core::examples::teaching;
    /// use remat_core::solvers::{no_progress, Algorithm, Options, Planner};
    ///
    /// let chain = teaching();
    /// let mut calls = 0;
    /// let sequential = Planner::build(&chain, Algorithm::Sequential, u64::MAX,
    ///                                 &Options::default(), &mut |_| { calls += 1; true })
    ///     .unwrap();
    /// assert_eq!(calls, chain.len()); // one k = 1..=L at a time
    /// // The least memory of the k measured is exactly where it starts fitting.
    /// let low = sequential.min_budget_bytes();
    /// assert!(sequential.plan(&chain, low).unwrap().feasible());
    /// assert!(!sequential.plan(&chain, low - 1).unwrap().feasible());
    /// ```
    pub fn build(
        chain: &Chain,
        algorithm: Algorithm,
        max_budget_bytes: u64,
        options: &Options,
        progress: &mut Progress<'_>,
    ) -> Result<Planner, SolveError> {
        if let Some(solve) = per_budget(algorithm) {
            let offload_grid = match algorithm {
                Algorithm::Pofo | Algorithm::OffloadOnly => {
                    let mode = if algorithm == Algorithm::Pofo {
                        pofo::Mode::Full
                    } else {
                        pofo::Mode::OffloadOnly
                    };
                    let bandwidth = options
                        .bandwidth_bytes_per_s
                        .or(chain.bandwidth_bytes_per_s);
                    Some(offload::grid_for(chain, mode, options, bandwidth)?)
                }
                _ => None,
            };
            return Ok(Planner::PerBudget {
                algorithm,
                solve,
                options: options.clone(),
                min_budget: memory_floor(chain).bytes,
                offload_grid,
            });
        }
        match algorithm {
            Algorithm::StoreAll => Ok(Planner::Fixed {
                algorithm,
                ops: store_all::schedule(chain),
                seconds: chain.sequential_seconds(),
                peak_bytes: max_useful_budget(chain),
                detail: "every activation kept",
            }),
            Algorithm::RecomputeAll => {
                let ops = recompute_all::schedule(chain);
                let trace = simulate_with(chain, &ops, SimOptions::default())
                    .expect("recompute-all is valid on every chain");
                Ok(Planner::Fixed {
                    algorithm,
                    ops,
                    seconds: recompute_all::predicted_seconds(chain),
                    peak_bytes: trace.peak_bytes,
                    detail: "only a^0 kept; the forward re-run before each backward",
                })
            }
            Algorithm::Sequential => {
                let n = chain.len();
                let ks = match options.segments {
                    Some(k) if k == 0 || k > n => {
                        return Err(SolveError::BadOption(format!(
                            "segments: {k} segments for a chain of {n} stages; choose 1 to {n}"
                        )))
                    }
                    Some(k) => k..=k,
                    None => 1..=n,
                };
                let mut candidates = Vec::with_capacity(n);
                for k in ks.clone() {
                    let ops = sequential::schedule(chain, k);
                    let trace = simulate_with(chain, &ops, SimOptions::default())
                        .expect("checkpoint_sequential is valid on every chain");
                    candidates.push(Candidate {
                        k,
                        seconds: sequential::predicted_seconds(chain, k),
                        peak_bytes: trace.peak_bytes,
                    });
                    if !progress((k + 1 - ks.start()) as f64 / ks.clone().count() as f64) {
                        return Err(SolveError::Cancelled);
                    }
                }
                Ok(Planner::Sequential { candidates })
            }
            Algorithm::Revolve | Algorithm::Rotor => {
                let variant = if algorithm == Algorithm::Rotor {
                    Variant::Rotor
                } else {
                    Variant::Revolve
                };
                let table =
                    persistent::Table::build(chain, variant, max_budget_bytes, options, progress)?;
                let store_all = persistent::store_all_point(chain, variant);
                let min_budget = match &table {
                    // Exact: the first breakpoint of C(1, L), capped at
                    // M_high where rotor answers store-all.
                    persistent::Table::Steps(steps) => {
                        let cap = store_all.map_or(u64::MAX, |(_, peak)| peak);
                        steps.min_budget().unwrap_or(cap).min(cap)
                    }
                    persistent::Table::Grid { .. } => {
                        persistent_min_budget(chain, variant, options, store_all)
                    }
                };
                Ok(Planner::Persistent {
                    algorithm,
                    table: Box::new(table),
                    min_budget,
                    store_all,
                })
            }
            Algorithm::Hong | Algorithm::HongChen => Ok(Planner::Hong(Box::new(hong::plan(
                chain, algorithm, progress,
            )?))),
            // Given no function by `per_budget` and no variant here: say
            // so, never panic.
            other => Err(SolveError::BadOption(format!(
                "algorithm: {other} has no planner"
            ))),
        }
    }

    /// pofo's or offload-only's planner for every budget up to the top
    /// `tables` were built for ([`offload::Tables::build`], on their grid
    /// at that top): every later [`plan`](Self::plan) is a read-out (O(L)
    /// DP states and a few simulations) instead of a new solve.
    ///
    /// ```
    /// use remat_core::examples::teaching;
    /// use remat_core::solvers::offload::{pofo::Mode, Tables};
    /// use remat_core::solvers::{max_useful_budget, no_progress, Options, Planner};
    ///
    /// let mut chain = teaching();
    /// chain.bandwidth_bytes_per_s = Some(12e9); // a link to the host
    /// let high = max_useful_budget(&chain);
    /// let tables = Tables::build(&chain, Mode::Full, high, &Options::default(),
    ///                            &mut no_progress()).unwrap();
    /// let pofo = Planner::from_offload_tables(&chain, tables);
    /// assert!(pofo.offload_tables().is_some());
    /// assert!(pofo.plan(&chain, high * 6 / 10).unwrap().feasible());
    /// ```
    pub fn from_offload_tables(chain: &Chain, tables: offload::Tables) -> Planner {
        Planner::Offload {
            tables: Box::new(tables),
            min_budget: memory_floor(chain).bytes,
        }
    }

    /// pofo's or offload-only's tables for every budget, where the planner
    /// was made of them ([`from_offload_tables`](Self::from_offload_tables)).
    pub fn offload_tables(&self) -> Option<&offload::Tables> {
        match self {
            Planner::Offload { tables, .. } => Some(tables),
            _ => None,
        }
    }

    /// Takes a rotor/revolve planner apart into its table (breakpoints or
    /// grid, [`persistent::TableParts`]) and its least budget, to move it
    /// between threads; None for other planners.
    pub fn into_table(self) -> Option<(persistent::TableParts, u64)> {
        match self {
            Planner::Persistent {
                table, min_budget, ..
            } => Some((table.into_parts(), min_budget)),
            _ => None,
        }
    }

    /// Rebuilds a rotor/revolve planner for `chain` from
    /// [`into_table`](Self::into_table): it answers every budget as the
    /// planner that was taken apart.
    pub fn from_table(
        chain: &Chain,
        parts: persistent::TableParts,
        min_budget: u64,
    ) -> Result<Planner, SolveError> {
        let variant = parts.variant();
        let algorithm = match variant {
            Variant::Rotor => Algorithm::Rotor,
            Variant::Revolve => Algorithm::Revolve,
        };
        Ok(Planner::Persistent {
            algorithm,
            table: Box::new(persistent::Table::from_parts(chain, parts)?),
            min_budget,
            store_all: persistent::store_all_point(chain, variant),
        })
    }

    /// A rotor/revolve planner's table; None for other planners.
    pub fn persistent_table(&self) -> Option<&persistent::Table> {
        match self {
            Planner::Persistent { table, .. } => Some(table),
            _ => None,
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            Planner::Fixed { algorithm, .. } => *algorithm,
            Planner::Sequential { .. } => Algorithm::Sequential,
            Planner::Hong(plan) => plan.algorithm,
            Planner::Persistent { algorithm, .. } | Planner::PerBudget { algorithm, .. } => {
                *algorithm
            }
            Planner::Offload { tables, .. } => tables.algorithm(),
        }
    }

    /// Builds what [`lower_bound_seconds`](Self::lower_bound_seconds) needs
    /// where the table may round ([`persistent::Table::certify`]): as long
    /// as the grid took again. A no-op for the other planners.
    pub fn certify(
        &mut self,
        chain: &Chain,
        progress: &mut Progress<'_>,
    ) -> Result<(), SolveError> {
        match self {
            Planner::Persistent { table, .. } => table.certify(chain, progress),
            _ => Ok(()),
        }
    }

    /// The certificate of the answer at `budget_bytes` (issue 44): a time
    /// no schedule of the algorithm's class beats there — the answer's own
    /// time where it is exact (breakpoints, an exact lattice, store-all
    /// where it wins), the grid rounded down elsewhere. rotor and revolve
    /// only (their classes: persistent schedules, and revolve's); None for
    /// the others and where nothing fits.
    pub fn lower_bound_seconds(&self, budget_bytes: u64) -> Option<f64> {
        match self {
            Planner::Persistent {
                table, store_all, ..
            } => {
                let table_seconds = table.best_seconds(budget_bytes);
                if persistent::store_all_wins(*store_all, table_seconds, budget_bytes) {
                    return store_all.map(|(seconds, _)| seconds);
                }
                table.lower_bound_seconds(budget_bytes)
            }
            _ => None,
        }
    }

    /// Every answer's certificate (issue 44): a time no schedule of a
    /// stated class beats at `budget_bytes`, beside the answer's own
    /// `seconds` (its simulated makespan). rotor and revolve: their class
    /// bound ([`lower_bound_seconds`](Self::lower_bound_seconds)); `optimal`:
    /// its own answer (the exact search over every schedule without
    /// transfers); every other algorithm: the [time floor](super::time_floor)
    /// — of every schedule for the ones that move tensors to the host (at
    /// the planner's bandwidth), of every schedule without transfers for the
    /// others. None where no schedule fits or the bound was not built.
    pub fn certificate(
        &self,
        chain: &Chain,
        budget_bytes: u64,
        seconds: f64,
    ) -> Option<Certificate> {
        let algorithm = self.algorithm();
        match self {
            Planner::Persistent { .. } => Some(Certificate {
                lower_bound_seconds: self.lower_bound_seconds(budget_bytes)?,
                seconds,
                class: BoundClass::of(algorithm),
            }),
            Planner::PerBudget { options, .. } => {
                let bandwidth = options
                    .bandwidth_bytes_per_s
                    .or(chain.bandwidth_bytes_per_s);
                floor_certificate(chain, algorithm, budget_bytes, bandwidth, seconds)
            }
            Planner::Offload { tables, .. } => {
                floor_certificate(chain, algorithm, budget_bytes, tables.bandwidth(), seconds)
            }
            _ => floor_certificate(chain, algorithm, budget_bytes, None, seconds),
        }
    }

    /// Refines the answer at `budget_bytes` on finer grids until its gap to
    /// the optimum is at most `limits.target_gap`, or the time or table
    /// size `limits` gives is spent ([`persistent::refine`]). None where
    /// there is nothing to refine: not rotor or revolve, an answer exact in
    /// bytes (breakpoints, an exact lattice, store-all), no plan at this
    /// budget, or a gap already within the target. `options` are the ones
    /// the planner was built with (the first round doubles their slots).
    pub fn refine(
        &self,
        chain: &Chain,
        budget_bytes: u64,
        options: &Options,
        limits: persistent::refine::Limits,
        clock: &mut dyn FnMut() -> f64,
        progress: &mut Progress<'_>,
    ) -> Result<Option<persistent::refine::Refined>, SolveError> {
        let Planner::Persistent {
            table, store_all, ..
        } = self
        else {
            return Ok(None);
        };
        let Some(grid) = table.grid() else {
            return Ok(None);
        };
        if table.lost_bytes(budget_bytes) == 0 {
            return Ok(None);
        }
        let Some((plan, false)) = table.plan_or_store_all(chain, budget_bytes, *store_all) else {
            return Ok(None);
        };
        let bound = self.lower_bound_seconds(budget_bytes);
        if bound.is_some_and(|b| persistent::gap(plan.predicted_seconds, b) <= limits.target_gap) {
            return Ok(None);
        }
        let variant = grid.grid().variant;
        let start = persistent::refine::Start {
            plan,
            lower_bound_seconds: bound,
            slots: options.slots,
        };
        persistent::refine::refine(
            chain,
            variant,
            budget_bytes,
            options.slot_policy,
            start,
            limits,
            clock,
            progress,
        )
        .map(Some)
    }

    /// The smallest budget this algorithm can meet, in exact bytes. For
    /// `rotor` and `revolve` on breakpoints it is the exact M_low, the first
    /// breakpoint of C(1, L) (capped at M_high for rotor); on a grid it is
    /// the least budget [`solve`] meets with the planner's options
    /// ([`persistent::min_budget_met`]): the exact M_low whenever the
    /// lattice at M_low is exact, else the first budget the rounded lattice
    /// meets. A table built for a
    /// larger budget and read out lower may need a little more. For `hong`
    /// and `hong-chen`, the simulated peak of their one schedule.
    pub fn min_budget_bytes(&self) -> u64 {
        match self {
            Planner::Fixed { peak_bytes, .. } => *peak_bytes,
            Planner::Sequential { candidates } => {
                candidates.iter().map(|c| c.peak_bytes).min().unwrap_or(0)
            }
            Planner::Hong(plan) => plan.trace.peak_bytes,
            Planner::Persistent { min_budget, .. }
            | Planner::PerBudget { min_budget, .. }
            | Planner::Offload { min_budget, .. } => *min_budget,
        }
    }

    /// The schedule for `budget_bytes`: `Ok` with `ops: None` when no
    /// schedule of this algorithm meets the budget, `Err` when the question
    /// cannot be answered (a table over the size limit, a bad option).
    ///
    /// ```
    /// use remat_core::examples::teaching;
    /// use remat_core::solvers::{max_useful_budget, no_progress, Algorithm, Options, Planner};
    ///
    /// let chain = teaching();
    /// let high = max_useful_budget(&chain);
    /// // One table for the largest budget answers every smaller one.
    /// let rotor = Planner::build(&chain, Algorithm::Rotor, high, &Options::default(), &mut no_progress())
    ///     .unwrap();
    /// let roomy = rotor.plan(&chain, high).unwrap();
    /// let tight = rotor.plan(&chain, high * 7 / 10).unwrap();
    /// assert!(tight.feasible());
    /// assert!(roomy.predicted_seconds < tight.predicted_seconds); // it recomputes
    /// assert!(!rotor.plan(&chain, 0).unwrap().feasible());
    /// ```
    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> Result<Solution, SolveError> {
        self.plan_with_progress(chain, budget_bytes, &mut no_progress())
    }

    /// [`plan`](Self::plan), with `progress` seeing (and able to cancel) the
    /// work an offloading algorithm does for this budget; the others answer
    /// from what [`build`](Self::build) prepared and report nothing.
    pub fn plan_with_progress(
        &self,
        chain: &Chain,
        budget_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<Solution, SolveError> {
        match self {
            Planner::PerBudget {
                algorithm,
                solve,
                options,
                ..
            } => {
                let problem = Problem {
                    chain,
                    algorithm: *algorithm,
                    budget: budget_bytes,
                    options,
                };
                solve(&problem, progress)
            }
            Planner::Offload { tables, .. } => Ok(tables.plan(chain, budget_bytes).solution),
            _ => Ok(self.read_out(chain, budget_bytes)),
        }
    }

    /// The answer of a planner that holds everything it needs (a table, the
    /// candidates): reading it out cannot fail.
    fn read_out(&self, chain: &Chain, budget_bytes: u64) -> Solution {
        let algorithm = self.algorithm();
        let infeasible = |detail: String| Solution {
            algorithm,
            budget_bytes,
            ops: None,
            predicted_seconds: None,
            predicted_peak_bytes: None,
            detail,
        };
        match self {
            Planner::PerBudget { .. } | Planner::Offload { .. } => {
                unreachable!("offloading planners answer in plan_with_progress")
            }
            Planner::Hong(plan) => plan.answer(budget_bytes),
            Planner::Fixed {
                ops,
                seconds,
                peak_bytes,
                detail,
                ..
            } => {
                if *peak_bytes <= budget_bytes {
                    Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(ops.clone()),
                        predicted_seconds: Some(*seconds),
                        predicted_peak_bytes: Some(*peak_bytes),
                        detail: (*detail).into(),
                    }
                } else {
                    infeasible(format!(
                        "needs {}",
                        crate::model::units::format_bytes(*peak_bytes)
                    ))
                }
            }
            Planner::Sequential { candidates } => {
                let best = candidates
                    .iter()
                    .filter(|c| c.peak_bytes <= budget_bytes)
                    .min_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.k.cmp(&b.k)));
                match best {
                    Some(c) => Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(sequential::schedule(chain, c.k)),
                        predicted_seconds: Some(c.seconds),
                        predicted_peak_bytes: Some(c.peak_bytes),
                        detail: format!("{} segment{}", c.k, if c.k == 1 { "" } else { "s" }),
                    },
                    None => infeasible(format!(
                        "no number of segments fits; the least memory is {}",
                        crate::model::units::format_bytes_up(self.min_budget_bytes())
                    )),
                }
            }
            Planner::Persistent {
                table, store_all, ..
            } => {
                let grid = table.describe(budget_bytes);
                let from_table = table.plan_or_store_all(chain, budget_bytes, *store_all);
                if let Some((p, true)) = from_table {
                    return Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(p.ops),
                        predicted_seconds: Some(p.predicted_seconds),
                        predicted_peak_bytes: Some(p.predicted_peak_bytes),
                        detail: "everything fits: no recomputation".into(),
                    };
                }
                match from_table {
                    Some((p, _)) => Solution {
                        algorithm,
                        budget_bytes,
                        ops: Some(p.ops),
                        predicted_seconds: Some(p.predicted_seconds),
                        predicted_peak_bytes: Some(p.predicted_peak_bytes),
                        detail: grid,
                    },
                    // On an exact lattice the least budget met is M_low;
                    // on a rounding grid a smaller budget may still be met
                    // by a table built for it, so say so.
                    None => infeasible(if table.lost_bytes(budget_bytes) == 0 {
                        format!(
                            "below M_low = {}",
                            crate::model::units::format_bytes(self.min_budget_bytes())
                        )
                    } else {
                        format!(
                            "infeasible on the grid of {grid}: sizes round up (this grid needs {}); solve for this budget or use more slots",
                            crate::model::units::format_bytes(self.min_budget_bytes())
                        )
                    }),
                }
            }
        }
    }
}

impl Planner {
    /// pofo's or offload-only's grid: the slots asked for, or fewer where
    /// their tables would pass the limit (None for other algorithms).
    pub fn offload_grid(&self) -> Option<pofo::Resolution> {
        match self {
            Planner::PerBudget { offload_grid, .. } => *offload_grid,
            Planner::Offload { tables, .. } => Some(tables.resolution()),
            _ => None,
        }
    }

    /// How the answer for `budget_bytes` treated memory: [`Memory::Exact`]
    /// for store-all and sequential (measured, no grid) and for a persistent
    /// table whose lattice is exact at this budget (or whose answer is
    /// store-all); otherwise the grid's slot and the worst-case bytes its
    /// rounding hid (none stated for the offloading DPs: POFO's grid rounds
    /// every size).
    pub fn memory(&self, budget_bytes: u64) -> Memory {
        match self {
            Planner::Fixed { .. } | Planner::Sequential { .. } | Planner::Hong(_) => Memory::Exact,
            Planner::Persistent {
                table, store_all, ..
            } => {
                let table_seconds = table.best_seconds(budget_bytes);
                if persistent::store_all_wins(*store_all, table_seconds, budget_bytes) {
                    return Memory::Exact;
                }
                match (table.as_ref(), table.lost_bytes(budget_bytes)) {
                    (_, 0) | (persistent::Table::Steps(_), _) => Memory::Exact,
                    (persistent::Table::Grid { table, .. }, lost) => Memory::Grid {
                        slot_bytes: table.slot_bytes(),
                        lost_bytes: Some(lost),
                    },
                }
            }
            // The dynamic runtimes and the exact search count bytes as the
            // simulator does, no grid.
            Planner::PerBudget { algorithm, .. }
                if algorithm.is_dynamic() || *algorithm == Algorithm::Optimal =>
            {
                Memory::Exact
            }
            Planner::PerBudget {
                options,
                offload_grid,
                ..
            } => {
                let slots = offload_grid.map_or(options.offload_slots, |g| g.slots);
                Memory::Grid {
                    slot_bytes: (budget_bytes / slots.max(1) as u64).max(1),
                    lost_bytes: None,
                }
            }
            // The top's grid: one slot size for every budget.
            Planner::Offload { tables, .. } => Memory::Grid {
                slot_bytes: tables.table().map_or(1, |t| t.slot_bytes()),
                lost_bytes: None,
            },
        }
    }
}

/// M_low for a persistent planner: what [`solve`] meets under `options`,
/// capped at M_high for rotor (its planner answers store-all there).
fn persistent_min_budget(
    chain: &Chain,
    variant: Variant,
    options: &Options,
    store_all: Option<(f64, u64)>,
) -> u64 {
    let cap = store_all.map(|(_, peak)| peak);
    persistent::min_budget_met(
        chain,
        variant,
        options.slot_policy,
        options.slots,
        options.max_table_bytes,
        cap,
    )
    .map_or_else(|| cap.unwrap_or(u64::MAX), |m| m.bytes)
}

/// Solves one budget: builds a planner for exactly this budget and asks it.
/// The one entry point for "this algorithm, this budget"; every caller
/// outside the solvers (the CLI, the explorer, the profiler) goes through
/// it or through [`Planner`].
///
/// ```
/// use remat_core::examples::teaching;
/// use remat_core::simulator::judge;
/// use remat_core::solvers::{max_useful_budget, solve, Algorithm, Options};
///
/// let chain = teaching();
/// let budget = max_useful_budget(&chain) * 7 / 10;
/// let plan = solve(&chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
/// let ops = plan.ops.expect("rotor fits 70 % of store-all's peak");
/// // The solver proposes, the simulator judges.
/// let trace = judge(&chain, &ops, budget, None).unwrap();
/// assert!(trace.fits(budget));
/// assert!(trace.recomputations > 0);
/// ```
pub fn solve(
    chain: &Chain,
    algorithm: Algorithm,
    budget_bytes: u64,
    options: &Options,
) -> Result<Solution, SolveError> {
    let mut progress = no_progress();
    let planner = Planner::build(chain, algorithm, budget_bytes, options, &mut progress)?;
    planner.plan(chain, budget_bytes)
}

/// The function that answers each budget for `algorithm`; None for the
/// algorithms with a [`Planner`] variant of their own (built once in
/// [`Planner::build`]). Exhaustive, with no catch-all: a new row of the
/// algorithm list (`api.rs`) does not compile until it is given one here.
/// A family module may serve several algorithms, told apart by the one
/// its [`Problem`] names.
fn per_budget(algorithm: Algorithm) -> Option<SolveFn> {
    match algorithm {
        Algorithm::StoreAll
        | Algorithm::RecomputeAll
        | Algorithm::Sequential
        | Algorithm::Revolve
        | Algorithm::Rotor
        | Algorithm::Hong
        | Algorithm::HongChen => None,
        Algorithm::Dtr | Algorithm::Delta | Algorithm::DeltaLru | Algorithm::DeltaGreedy => {
            Some(dynamic::solve)
        }
        Algorithm::Optimal => Some(optimal::solve),
        Algorithm::Pofo
        | Algorithm::OffloadOnly
        | Algorithm::Opportunist
        | Algorithm::Autocapper => Some(offload::solve),
    }
}

/// The certificate of an answer of `algorithm` that no class bound of its
/// own covers (not rotor or revolve), taking `seconds` (its simulated
/// makespan) at `budget_bytes`: `optimal`'s own answer (the exact search
/// over every schedule without transfers); the [time floor](super::time_floor)
/// at `bandwidth` for the algorithms that move tensors to the host (every
/// schedule), without a link for the others (every schedule without
/// transfers, theirs). None where no schedule fits.
pub fn floor_certificate(
    chain: &Chain,
    algorithm: Algorithm,
    budget_bytes: u64,
    bandwidth: Option<f64>,
    seconds: f64,
) -> Option<Certificate> {
    let class = BoundClass::of(algorithm);
    let bound = if algorithm == Algorithm::Optimal {
        seconds
    } else {
        let link = if class == BoundClass::Any {
            bandwidth
        } else {
            None
        };
        time_floor(chain, budget_bytes, link)?
    };
    Some(Certificate {
        lower_bound_seconds: bound,
        seconds,
        class,
    })
}

/// The schedules a certificate's bound holds for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundClass {
    /// Memory-persistent schedules (rotor's class): rotor's DP, sizes
    /// rounded down where it answers on a grid.
    Persistent,
    /// revolve's class (F_all^ℓ only right before B^ℓ).
    Revolve,
    /// Every schedule that moves nothing to the host.
    WithoutTransfers,
    /// Every schedule, transfers included.
    Any,
}

impl BoundClass {
    /// The class `algorithm`'s answers are certified against: rotor's and
    /// revolve's own; every schedule for the algorithms that move tensors
    /// to the host; every transfer-free schedule for the others (theirs,
    /// and `optimal`'s search).
    pub fn of(algorithm: Algorithm) -> BoundClass {
        match algorithm {
            Algorithm::Rotor => BoundClass::Persistent,
            Algorithm::Revolve => BoundClass::Revolve,
            a if a.offloads() => BoundClass::Any,
            _ => BoundClass::WithoutTransfers,
        }
    }

    /// "no {words} schedule is faster".
    pub fn words(self) -> &'static str {
        match self {
            BoundClass::Persistent => "persistent",
            BoundClass::Revolve => "revolve-class",
            BoundClass::WithoutTransfers => "transfer-free",
            BoundClass::Any => "",
        }
    }

    /// The name in JSON (`lower_bound_class`).
    pub fn name(self) -> &'static str {
        match self {
            BoundClass::Persistent => "persistent",
            BoundClass::Revolve => "revolve",
            BoundClass::WithoutTransfers => "without-transfers",
            BoundClass::Any => "any",
        }
    }
}

/// How far an answer may be from the best of a class at its budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Certificate {
    /// No schedule of `class` is faster.
    pub lower_bound_seconds: f64,
    /// The answer's time.
    pub seconds: f64,
    pub class: BoundClass,
}

impl Certificate {
    /// seconds / bound − 1 ([`persistent::gap`]; 0: proven optimal in its class).
    pub fn gap(&self) -> f64 {
        persistent::gap(self.seconds, self.lower_bound_seconds)
    }

    /// "within 0.3 % of the optimum: no persistent schedule is faster than
    /// 1.20 s at this budget".
    pub fn line(&self) -> String {
        let class = self.class.words();
        let sep = if class.is_empty() { "" } else { " " };
        format!(
            "within {} of the optimum: no{sep}{class} schedule is faster than {} at this budget",
            persistent::format_gap(self.seconds, self.lower_bound_seconds),
            crate::model::units::format_seconds(self.lower_bound_seconds)
        )
    }
}
