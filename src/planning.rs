//! The planning service and its message protocol.
//!
//! The same `PlannerSet` answers requests in the page and inside the Web
//! Worker. The worker only *builds* the rotor/revolve tables of long chains
//! (seconds at L = 300): once built, a table is taken apart
//! ([`PlannerSet::take_table`]), its values move to the page as a transferred
//! `Float64Array` next to the JSON `Built` message, and the page rebuilds the
//! planner ([`PlannerSet::insert_table`]). Every slider move then reads its
//! schedule out synchronously in the page (O(L)), with no round trip.

use remat_core::format::read_any_chain;
use remat_core::schedule::Op;
use remat_core::simulator::simulate_with_bandwidth;
use remat_core::solvers::persistent::TableGrid;
use remat_core::solvers::{max_useful_budget, persistent, Algorithm, Options, Planner};
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
}

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
                if generation != self.generation {
                    return;
                }
                let Some(chain) = self.chain.as_ref() else {
                    return;
                };
                let started = now();
                let result = Algorithm::from_name(&algorithm).and_then(|alg| {
                    build_with_progress(chain, alg, max_budget, generation, &algorithm, emit)
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
                if generation != self.generation {
                    return;
                }
                let Some(chain) = self.chain.as_ref() else {
                    return;
                };
                let Ok(alg) = Algorithm::from_name(&algorithm) else {
                    return;
                };
                let solution = if exact {
                    match build_with_progress(chain, alg, budget, generation, &algorithm, emit) {
                        Ok(p) => p.plan(chain, budget),
                        Err(e) => {
                            emit(Response::Failed {
                                generation,
                                algorithm: Some(algorithm),
                                error: e.to_string(),
                            });
                            return;
                        }
                    }
                } else {
                    match self.planners.iter().find(|p| p.algorithm() == alg) {
                        Some(p) => p.plan(chain, budget),
                        None => return,
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
                    summaries,
                })));
            }
        }
    }
}

impl PlannerSet {
    pub fn generation(&self) -> u64 {
        self.generation
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
        self.planners
            .iter()
            .filter(|p| p.algorithm() != except)
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

fn build_with_progress(
    chain: &Chain,
    alg: Algorithm,
    max_budget: u64,
    generation: u64,
    name: &str,
    emit: &mut dyn FnMut(Response),
) -> Result<Planner, remat_core::solvers::SolveError> {
    // Report every 2 %: more messages only cost the page time.
    let mut last = -1.0f64;
    let mut progress = |fraction: f64| {
        if fraction - last >= 0.02 {
            last = fraction;
            emit(Response::Progress {
                generation,
                algorithm: name.to_string(),
                fraction,
            });
        }
        true
    };
    Planner::build(chain, alg, max_budget, &Options::default(), &mut progress)
}

fn summarize(chain: &Chain, planner: &Planner, budget: u64, bandwidth: Option<f64>) -> Summary {
    let solution = planner.plan(chain, budget);
    let measured = solution
        .ops
        .as_ref()
        .and_then(|ops| simulate_with_bandwidth(chain, ops, bandwidth).ok());
    Summary {
        algorithm: planner.algorithm().name().to_string(),
        feasible: measured.is_some(),
        makespan_seconds: measured.as_ref().map(|t| t.makespan_seconds),
        peak_bytes: measured.as_ref().map(|t| t.peak_bytes),
        detail: solution.detail,
    }
}

/// Makespan over the slider's range, simulated (the simulator is the judge).
fn curve(chain: &Chain, planner: &Planner) -> Vec<CurvePoint> {
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
            let makespan_seconds = planner.plan(chain, budget).ops.and_then(|ops| {
                simulate_with_bandwidth(chain, &ops, chain.bandwidth_bytes_per_s)
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
