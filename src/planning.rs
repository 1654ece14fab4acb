//! The planning service and its message protocol.
//!
//! The same `PlannerSet` answers requests in the page and inside the Web
//! Worker. The worker only *builds* the rotor/revolve tables of long chains
//! (seconds at L = 300): once built, a table is taken apart
//! ([`PlannerSet::take_table`]), its values move to the page as a transferred
//! `Float64Array` next to the JSON `Built` message, and the page rebuilds the
//! planner ([`PlannerSet::insert_table`]). Every slider move then reads its
//! schedule out synchronously in the page (O(L)), with no round trip.
//!
//! Offloading algorithms (pofo, offload-only, opportunist, autocapper) have
//! no table: every budget and bandwidth is a new solve (up to seconds), so
//! their plans, the compare rows and the sweeps always run in the worker.

use remat_core::format::read_any_chain;
use remat_core::schedule::Op;
use remat_core::simulator::{judge, Trace};
use remat_core::solvers::offload;
use remat_core::solvers::persistent::TableGrid;
use remat_core::solvers::{
    budget_at_ratio, max_useful_budget, persistent, Algorithm, Options, Planner, SlotPolicy,
    Solution, SolveError,
};
use remat_core::Chain;
use serde::{Deserialize, Serialize};

/// Page → planner.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Request {
    /// A new chain (`remat-chain/1` text); drops every table.
    Load { generation: u64, chain: String },
    /// Build the table of one algorithm for budgets up to `max_budget`.
    Build {
        generation: u64,
        algorithm: String,
        max_budget: u64,
    },
    /// The schedule for one budget, plus a summary of every built algorithm.
    /// `exact` builds a fresh table at exactly this budget (no grid rounding).
    Plan {
        generation: u64,
        id: u64,
        algorithm: String,
        budget: u64,
        bandwidth: Option<f64>,
        exact: bool,
    },
    /// Every offloading algorithm at one budget (the compare rows).
    Compare {
        generation: u64,
        id: u64,
        budget: u64,
        bandwidth: Option<f64>,
    },
    /// POFO's two figures: overhead vs memory ratio α at `bandwidth`, and
    /// overhead vs bandwidth at α = [`SWEEP_FIXED_ALPHA`].
    Sweep { generation: u64, bandwidth: f64 },
}

/// Planner → page.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    /// The worker's wasm is running; requests sent before this are lost.
    Ready,
    Progress {
        generation: u64,
        algorithm: String,
        fraction: f64,
    },
    Built {
        generation: u64,
        algorithm: String,
        min_budget: u64,
        build_ms: f64,
        curve: Vec<CurvePoint>,
        /// Set when the table's values travel with this message (from the
        /// worker, as a transferred `Float64Array`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        table: Option<TableGrid>,
    },
    Failed {
        generation: u64,
        algorithm: Option<String>,
        error: String,
    },
    Planned(Box<Planned>),
    Compared {
        generation: u64,
        id: u64,
        budget: u64,
        summaries: Vec<Summary>,
    },
    Swept {
        generation: u64,
        sweep: Sweep,
    },
}

/// The figures of POFO Section 5: makespans over α at one bandwidth and over
/// bandwidths at one α, for the offloading algorithms and rotor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub bandwidth: f64,
    pub m_low: u64,
    pub m_high: u64,
    pub sequential_seconds: f64,
    pub by_alpha: Vec<SweepPoint>,
    pub by_bandwidth: Vec<SweepPoint>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub algorithm: String,
    pub alpha: f64,
    pub bandwidth: f64,
    pub makespan_seconds: Option<f64>,
}

/// Memory ratios of the α figure (the paper's range, 0 = M_low, 1 = M_high).
pub const SWEEP_ALPHAS: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
/// α of the bandwidth figure, as in the paper.
pub const SWEEP_FIXED_ALPHA: f64 = 0.2;
/// Bandwidths of the β figure: PCIe 3 (12 GB/s) to the paper's 36 GB/s and beyond.
pub const SWEEP_BANDWIDTHS: [f64; 6] = [6e9, 12e9, 18e9, 24e9, 36e9, 48e9];
/// The algorithms drawn in the sweep: the offloading ones and rotor.
pub const SWEEP_ALGORITHMS: [Algorithm; 5] = [
    Algorithm::Rotor,
    Algorithm::Pofo,
    Algorithm::OffloadOnly,
    Algorithm::Opportunist,
    Algorithm::Autocapper,
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    pub generation: u64,
    pub id: u64,
    pub algorithm: String,
    pub budget: u64,
    #[serde(default)]
    pub bandwidth: Option<f64>,
    pub exact: bool,
    pub ops: Option<Vec<Op>>,
    pub predicted_seconds: Option<f64>,
    pub predicted_peak_bytes: Option<u64>,
    pub detail: String,
    /// Set when the budget could not be answered (a table over the size
    /// limit): an error, shown as one, never as "infeasible".
    #[serde(default)]
    pub error: Option<String>,
    pub summaries: Vec<Summary>,
}

/// One algorithm at one budget, measured by the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub algorithm: String,
    pub feasible: bool,
    pub makespan_seconds: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub detail: String,
    /// The solve failed (not "infeasible": no answer at all).
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub budget: u64,
    /// None where the algorithm has no schedule for this budget.
    pub makespan_seconds: Option<f64>,
}

/// Points per trade-off curve: enough to show the steps, cheap at L = 300.
const CURVE_POINTS: usize = 48;

/// M_low for the slider: the least memory any persistent schedule needs.
pub fn min_budget(chain: &Chain) -> u64 {
    persistent::min_budget(chain, persistent::Variant::Rotor)
}

/// Rough cost of building the rotor table (inner-loop steps), to decide
/// whether it may run on the page's thread.
pub fn build_cost(chain: &Chain) -> f64 {
    let n = chain.len() as f64;
    n * n * n / 6.0 * remat_core::solvers::DEFAULT_SLOTS as f64
}

#[derive(Default)]
pub struct PlannerSet {
    generation: u64,
    chain: Option<Chain>,
    planners: Vec<Planner>,
}

impl PlannerSet {
    /// Answers one request; `emit` receives progress and results in order.
    pub fn handle(
        &mut self,
        request: Request,
        now: &dyn Fn() -> f64,
        emit: &mut dyn FnMut(Response),
    ) {
        match request {
            Request::Load { generation, chain } => {
                self.generation = generation;
                self.planners.clear();
                match read_any_chain(&chain) {
                    Ok(c) => self.chain = Some(c),
                    Err(e) => {
                        self.chain = None;
                        emit(Response::Failed {
                            generation,
                            algorithm: None,
                            error: e.to_string(),
                        })
                    }
                }
            }
            Request::Build {
                generation,
                algorithm,
                max_budget,
            } => {
                let Some(chain) = self.chain_of(generation) else {
                    return;
                };
                let started = now();
                let result = Algorithm::from_name(&algorithm).and_then(|alg| {
                    build_with_progress(
                        chain,
                        alg,
                        max_budget,
                        SlotPolicy::Fixed,
                        generation,
                        &algorithm,
                        emit,
                    )
                });
                match result {
                    Ok(planner) => {
                        let build_ms = now() - started;
                        let curve = curve(chain, &planner);
                        let min_budget = planner.min_budget_bytes();
                        self.planners
                            .retain(|p| p.algorithm() != planner.algorithm());
                        self.planners.push(planner);
                        emit(Response::Built {
                            generation,
                            algorithm,
                            min_budget,
                            build_ms,
                            curve,
                            table: None,
                        });
                    }
                    Err(e) => emit(Response::Failed {
                        generation,
                        algorithm: Some(algorithm),
                        error: e.to_string(),
                    }),
                }
            }
            Request::Plan {
                generation,
                id,
                algorithm,
                budget,
                bandwidth,
                exact,
            } => {
                let Some(chain) = self.chain_of(generation) else {
                    return;
                };
                let Ok(alg) = Algorithm::from_name(&algorithm) else {
                    return;
                };
                // Offloading algorithms and exact re-plans solve anew (and
                // may fail); otherwise the built table answers.
                let result = if alg.offloads() {
                    let mut progress = reporter(generation, alg.name(), emit);
                    solve_offloading(chain, alg, budget, bandwidth, &mut progress)
                } else if exact {
                    build_with_progress(
                        chain,
                        alg,
                        budget,
                        SlotPolicy::Exact,
                        generation,
                        &algorithm,
                        emit,
                    )
                    .and_then(|p| p.plan(chain, budget))
                } else {
                    match self.planners.iter().find(|p| p.algorithm() == alg) {
                        Some(p) => p.plan(chain, budget),
                        None => return,
                    }
                };
                let solution = match result {
                    Ok(s) => s,
                    Err(e) => {
                        emit(Response::Failed {
                            generation,
                            algorithm: Some(algorithm),
                            error: e.to_string(),
                        });
                        return;
                    }
                };
                let summaries = self.summaries(alg, budget, bandwidth);
                emit(Response::Planned(Box::new(Planned {
                    generation,
                    id,
                    algorithm,
                    budget,
                    bandwidth,
                    exact,
                    ops: solution.ops,
                    predicted_seconds: solution.predicted_seconds,
                    predicted_peak_bytes: solution.predicted_peak_bytes,
                    detail: solution.detail,
                    error: None,
                    summaries,
                })));
            }
            Request::Compare {
                generation,
                id,
                budget,
                bandwidth,
            } => {
                let Some(chain) = self.chain_of(generation) else {
                    return;
                };
                let mut summaries = Vec::new();
                let n = Algorithm::OFFLOADING.len() as f64;
                for (k, alg) in Algorithm::OFFLOADING.into_iter().enumerate() {
                    let mut progress = reporter(generation, "compare", emit);
                    let mut part = |f: f64| progress((k as f64 + f) / n);
                    let solution = solve_offloading(chain, alg, budget, bandwidth, &mut part);
                    summaries.push(match solution {
                        Ok(s) => summary_of(chain, &s, budget, bandwidth),
                        Err(e) => Summary::failed(alg, e.to_string()),
                    });
                }
                emit(Response::Compared {
                    generation,
                    id,
                    budget,
                    summaries,
                });
            }
            Request::Sweep {
                generation,
                bandwidth,
            } => {
                let Some(chain) = self.chain_of(generation) else {
                    return;
                };
                let swept = sweep(chain, bandwidth, &mut reporter(generation, "sweep", emit));
                match swept {
                    Ok(sweep) => emit(Response::Swept { generation, sweep }),
                    Err(e) => emit(Response::Failed {
                        generation,
                        algorithm: Some("sweep".into()),
                        error: e.to_string(),
                    }),
                }
            }
        }
    }
}

/// Progress every 2 % of the way (more messages only cost the page time).
fn reporter<'a>(
    generation: u64,
    name: &'a str,
    emit: &'a mut dyn FnMut(Response),
) -> impl FnMut(f64) -> bool + 'a {
    let mut last = -1.0f64;
    move |fraction: f64| {
        if fraction - last >= 0.02 {
            last = fraction;
            emit(Response::Progress {
                generation,
                algorithm: name.to_string(),
                fraction,
            });
        }
        true
    }
}

fn solve_offloading(
    chain: &Chain,
    alg: Algorithm,
    budget: u64,
    bandwidth: Option<f64>,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Solution, SolveError> {
    let options = Options {
        bandwidth_bytes_per_s: bandwidth,
        ..Options::default()
    };
    offload::solve(chain, alg, budget, &options, progress)
}

/// The two figures of POFO Section 5 for `chain`.
fn sweep(
    chain: &Chain,
    bandwidth: f64,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Sweep, SolveError> {
    let m_low = min_budget(chain);
    let m_high = max_useful_budget(chain).max(m_low);
    let at = |alpha: f64| budget_at_ratio(m_low, m_high, alpha);
    let mut runs: Vec<(f64, f64)> = SWEEP_ALPHAS.iter().map(|&a| (a, bandwidth)).collect();
    runs.extend(SWEEP_BANDWIDTHS.iter().map(|&b| (SWEEP_FIXED_ALPHA, b)));
    let total = (runs.len() * SWEEP_ALGORITHMS.len()) as f64;
    let mut points = Vec::new();
    let mut done = 0.0;
    for &(alpha, bw) in &runs {
        let budget = at(alpha);
        for alg in SWEEP_ALGORITHMS {
            let mut part = |f: f64| progress((done + f) / total);
            // A failed solve stops the sweep with its error: a point left
            // out would read as "infeasible".
            let solution = solve_offloading(chain, alg, budget, Some(bw), &mut part)
                .map_err(|e| SolveError::BadOption(format!("{alg} at α = {alpha}: {e}")))?;
            let makespan_seconds = solution.ops.and_then(|ops| {
                let t = judge(chain, &ops, budget, Some(bw)).ok()?;
                t.fits(budget).then_some(t.makespan_seconds)
            });
            points.push(SweepPoint {
                algorithm: alg.name().to_string(),
                alpha,
                bandwidth: bw,
                makespan_seconds,
            });
            done += 1.0;
        }
    }
    let split = SWEEP_ALPHAS.len() * SWEEP_ALGORITHMS.len();
    let by_bandwidth = points.split_off(split);
    Ok(Sweep {
        bandwidth,
        m_low,
        m_high,
        sequential_seconds: chain.sequential_seconds(),
        by_alpha: points,
        by_bandwidth,
    })
}

impl PlannerSet {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The chain a request of `generation` is about; None for a request
    /// about a chain no longer loaded (or none loaded at all).
    fn chain_of(&self, generation: u64) -> Option<&Chain> {
        (generation == self.generation)
            .then_some(self.chain.as_ref())
            .flatten()
    }

    pub fn has(&self, alg: Algorithm) -> bool {
        self.planners.iter().any(|p| p.algorithm() == alg)
    }

    /// A summary of every built algorithm but `except` at `budget` (the page
    /// simulates the shown one itself).
    pub fn summaries(
        &self,
        except: Algorithm,
        budget: u64,
        bandwidth: Option<f64>,
    ) -> Vec<Summary> {
        let Some(chain) = self.chain.as_ref() else {
            return Vec::new();
        };
        // Offloading algorithms are solved per budget in the worker (Compare).
        self.planners
            .iter()
            .filter(|p| p.algorithm() != except && !p.algorithm().offloads())
            .map(|p| summarize(chain, p, budget, bandwidth))
            .collect()
    }

    /// Removes a DP planner and takes its table apart, to move it to the
    /// page; None (and nothing removed) for algorithms without a table.
    pub fn take_table(&mut self, alg: Algorithm) -> Option<(TableGrid, Vec<f64>)> {
        if !alg.uses_slots() {
            return None;
        }
        let i = self.planners.iter().position(|p| p.algorithm() == alg)?;
        self.planners.swap_remove(i).into_table()
    }

    /// Rebuilds a planner from a table built elsewhere for this set's chain.
    pub fn insert_table(&mut self, grid: TableGrid, values: Vec<f64>) -> Result<(), String> {
        let chain = self.chain.as_ref().ok_or("no chain loaded")?;
        let planner = Planner::from_table(chain, grid, values).map_err(|e| e.to_string())?;
        self.planners
            .retain(|p| p.algorithm() != planner.algorithm());
        self.planners.push(planner);
        Ok(())
    }
}

/// Builds a planner for budgets up to `max_budget`. The slider's tables use
/// the papers' fixed grid (one table answers every budget below it); an
/// exact re-plan uses the exact lattice of its one budget where the sizes
/// allow (`SlotPolicy::Exact`).
fn build_with_progress(
    chain: &Chain,
    alg: Algorithm,
    max_budget: u64,
    slot_policy: SlotPolicy,
    generation: u64,
    name: &str,
    emit: &mut dyn FnMut(Response),
) -> Result<Planner, remat_core::solvers::SolveError> {
    let mut progress = reporter(generation, name, emit);
    let options = Options {
        slot_policy,
        ..Options::default()
    };
    Planner::build(chain, alg, max_budget, &options, &mut progress)
}

fn summarize(chain: &Chain, planner: &Planner, budget: u64, bandwidth: Option<f64>) -> Summary {
    match planner.plan(chain, budget) {
        Ok(solution) => summary_of(chain, &solution, budget, bandwidth),
        Err(e) => Summary::failed(planner.algorithm(), e.to_string()),
    }
}

impl Summary {
    /// A row for a solve that failed: an error, not an infeasible budget.
    pub fn failed(algorithm: Algorithm, error: String) -> Summary {
        Summary {
            algorithm: algorithm.name().to_string(),
            feasible: false,
            makespan_seconds: None,
            peak_bytes: None,
            detail: String::new(),
            error: Some(error),
        }
    }
}

/// One solution measured by the simulator, with the budget as memory limit.
fn summary_of(chain: &Chain, solution: &Solution, budget: u64, bandwidth: Option<f64>) -> Summary {
    let measured: Option<Trace> = solution
        .ops
        .as_ref()
        .and_then(|ops| judge(chain, ops, budget, bandwidth).ok())
        .filter(|t| t.fits(budget));
    Summary {
        algorithm: solution.algorithm.name().to_string(),
        feasible: measured.is_some(),
        makespan_seconds: measured.as_ref().map(|t| t.makespan_seconds),
        peak_bytes: measured.as_ref().map(|t| t.peak_bytes),
        detail: solution.detail.clone(),
        error: None,
    }
}

/// Makespan over the slider's range, simulated (the simulator is the judge).
/// Empty for offloading algorithms: their curves are the sweep's.
fn curve(chain: &Chain, planner: &Planner) -> Vec<CurvePoint> {
    if planner.algorithm().offloads() {
        return Vec::new();
    }
    let low = min_budget(chain);
    let high = max_useful_budget(chain).max(low);
    let mut budgets: Vec<u64> = (0..CURVE_POINTS)
        .map(|i| low + ((high - low) as f64 * i as f64 / (CURVE_POINTS - 1) as f64) as u64)
        .collect();
    let own_min = planner.min_budget_bytes();
    if own_min > low && own_min < high {
        budgets.push(own_min);
        budgets.sort_unstable();
    }
    budgets
        .into_iter()
        .map(|budget| {
            // Table planners (the only ones here) read out and cannot fail.
            let solution = planner.plan(chain, budget).ok();
            let makespan_seconds = solution.and_then(|s| s.ops).and_then(|ops| {
                judge(chain, &ops, budget, chain.bandwidth_bytes_per_s)
                    .ok()
                    .map(|t| t.makespan_seconds)
            });
            CurvePoint {
                budget,
                makespan_seconds,
            }
        })
        .collect()
}
