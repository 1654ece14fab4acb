//! The planning service: one [`PlannerService`] answers [`Request`]s in the
//! page, another inside the Web Worker.
//!
//! The worker only *builds* the rotor/revolve tables of long chains (seconds
//! at L = 300) and hands each finished table out with its [`Built`]
//! ([`Role::Worker`]); the page's service installs it ([`receive`]) and
//! answers every slider move from it synchronously (O(L)), with no round
//! trip. Offloading algorithms (pofo, offload-only, opportunist, autocapper)
//! have no table: every budget and bandwidth is a new solve (up to
//! seconds), so their plans, the compare rows and the sweeps run in the
//! worker ([`runs_in_worker`]).
//!
//! Plain Rust, no browser: the tests below run on the host.
//!
//! [`receive`]: PlannerService::receive

use crate::planning::protocol::{
    Ask, BatchDevice, BatchRow, Built, CurvePoint, GridNote, MaxBatch, Planned, Request, Response,
    SecondProfile, Stage, Summary, Sweep, SweepPoint, Table, Task,
};
use remat_core::format::read_any_chain;
use remat_core::model::units::format_bytes;
use remat_core::model::{AffineFit, BatchModel};
use remat_core::simulator::{judge, Trace};
use remat_core::solvers::offload::{pofo, TableAnswer, Tables};
use remat_core::solvers::optimal;
use remat_core::solvers::{
    floor_certificate, max_useful_budget, persistent, Algorithm, Options, Planner, SlotPolicy,
    Solution, SolveError,
};
use remat_core::sweep::{self as core_sweep, SweepError, SweepRun};
use remat_core::Chain;

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

/// Points per trade-off curve: enough to show the steps, cheap at L = 300.
const CURVE_POINTS: usize = 48;

/// Tables whose build costs more than this (≈ 50 ms of wasm) go to the worker.
pub const WORKER_THRESHOLD: f64 = 2.0e7;

/// M_low for the slider: the least memory any persistent schedule needs.
fn min_budget(chain: &Chain) -> u64 {
    persistent::min_budget(chain, persistent::Variant::Rotor)
}

/// The slider's range, M_low to M_high (the most memory worth giving).
pub fn budget_range(chain: &Chain) -> (u64, u64) {
    let low = min_budget(chain);
    (low, max_useful_budget(chain).max(low))
}

/// Rough cost of building the rotor table (inner-loop steps), to decide
/// whether it may run on the page's thread.
pub fn build_cost(chain: &Chain) -> f64 {
    let n = chain.len() as f64;
    n * n * n / 6.0 * remat_core::solvers::DEFAULT_SLOTS as f64
}

/// Whether this chain's tables are built in the worker.
pub fn wants_worker(chain: &Chain) -> bool {
    build_cost(chain) > WORKER_THRESHOLD
}

/// Whether a request goes to the worker (when there is one): builds of DP
/// tables (and exact re-plans, which build one) of long chains, and every
/// offloading solve. A `Load` goes to both sides (see the backend).
pub fn runs_in_worker(request: &Request, tables_remote: bool) -> bool {
    match request {
        Request::Load { .. } => false,
        // The exact search's curve is one search per budget: always off the
        // page's thread, whatever the chain's length.
        Request::Build { algorithm, .. } => {
            (algorithm.uses_slots() && tables_remote) || *algorithm == Algorithm::Optimal
        }
        Request::Plan { ask, .. } => {
            ask.algorithm.offloads() || (ask.exact && ask.algorithm.uses_slots() && tables_remote)
        }
        Request::Compare { .. } | Request::Sweep { .. } | Request::MaxBatch { .. } => true,
    }
}

/// Where a service runs, which decides where its built tables stay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// In the page: every table stays here.
    #[default]
    Page,
    /// In the worker: a finished table leaves with its `Built`.
    Worker,
}

#[derive(Default)]
pub struct PlannerService {
    role: Role,
    generation: u64,
    chain: Option<Chain>,
    planners: Vec<Planner>,
    /// pofo's or offload-only's table for every budget at one link: built
    /// on the first quick plan, kept while the chain, algorithm and link
    /// stay (a new link is a new table: the DP's times depend on it).
    offload_table: Option<OffloadTable>,
}

/// An offloading algorithm's table for every budget, and what it is for.
struct OffloadTable {
    algorithm: Algorithm,
    bandwidth: Option<f64>,
    tables: Tables,
}

/// Whether `algorithm` answers quick plans from a table for every budget
/// ([`Stage::Quick`]): the ones whose planner holds such tables
/// ([`Algorithm::plans_every_budget`], [`Tables`]).
pub fn has_quick_table(algorithm: Algorithm) -> bool {
    algorithm.plans_every_budget()
}

/// The most memory the table for every budget may take in the page (its
/// DP's tables, [`offload::grid_for`]): past it the table is built on a
/// coarser grid, which its answers say. The paper's 50 slots fit it up to
/// about 100 stages (228 MB at L = 100); at L = 300 they would take
/// 1.48 GB and 21 s to build on one native thread; this allows 21 slots
/// there (20 took 232 MB and 7 s).
///
/// [`offload::grid_for`]: remat_core::solvers::offload::grid_for
pub const QUICK_TABLE_BYTES: u64 = 256 << 20;

/// The options the table for every budget is built with at a link.
fn quick_table_options(bandwidth: Option<f64>) -> Options {
    Options {
        bandwidth_bytes_per_s: bandwidth,
        max_table_bytes: QUICK_TABLE_BYTES,
        ..Options::default()
    }
}

/// Receives the service's progress reports and answers, in order.
pub type Emit<'a> = dyn FnMut(Response) + 'a;

impl PlannerService {
    pub fn new(role: Role) -> PlannerService {
        PlannerService {
            role,
            ..PlannerService::default()
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn has(&self, alg: Algorithm) -> bool {
        self.planners.iter().any(|p| p.algorithm() == alg)
    }

    /// Answers one request; `emit` receives progress and results in order.
    pub fn handle(&mut self, request: Request, now: &dyn Fn() -> f64, emit: &mut Emit<'_>) {
        match request {
            Request::Load { generation, chain } => self.load(generation, &chain, emit),
            Request::Build {
                generation,
                algorithm,
                max_budget,
            } => self.build(generation, algorithm, max_budget, now, emit),
            Request::Plan { generation, ask } => self.plan(generation, ask, now, emit),
            Request::Compare {
                generation,
                id,
                budget,
                bandwidth,
                algorithm,
            } => self.compare(generation, id, budget, bandwidth, algorithm, emit),
            Request::Sweep {
                generation,
                bandwidth,
            } => self.sweep(generation, bandwidth, emit),
            Request::MaxBatch {
                generation,
                device,
                second,
            } => self.max_batch(generation, device, second, emit),
        }
    }

    fn max_batch(
        &self,
        generation: u64,
        device: BatchDevice,
        second: Option<SecondProfile>,
        emit: &mut Emit<'_>,
    ) {
        let work = |chain: &Chain, progress: &mut dyn FnMut(f64) -> bool| {
            max_batch(chain, device, second.as_ref(), progress)
        };
        let answer = |found| Response::MaxBatched { generation, found };
        self.long_task((generation, Task::MaxBatch), emit, work, answer);
    }

    /// Runs a long task on the loaded chain with its progress reported,
    /// then emits its answer or why it failed.
    fn long_task<T, E: ToString>(
        &self,
        (generation, task): (u64, Task),
        emit: &mut Emit<'_>,
        work: impl FnOnce(&Chain, &mut dyn FnMut(f64) -> bool) -> Result<T, E>,
        answer: impl FnOnce(T) -> Response,
    ) {
        let Some(chain) = self.chain_of(generation) else {
            return;
        };
        let done = work(chain, &mut reporter(generation, task, emit));
        emit(match done {
            Ok(t) => answer(t),
            Err(e) => failed(generation, Some(task), e),
        });
    }

    fn load(&mut self, generation: u64, text: &str, emit: &mut Emit<'_>) {
        self.generation = generation;
        self.planners.clear();
        self.offload_table = None;
        self.chain = match read_any_chain(text) {
            Ok(c) => Some(c),
            Err(e) => {
                emit(failed(generation, None, e));
                None
            }
        };
    }

    fn build(
        &mut self,
        generation: u64,
        algorithm: Algorithm,
        max_budget: u64,
        now: &dyn Fn() -> f64,
        emit: &mut Emit<'_>,
    ) {
        let Some(chain) = self.chain_of(generation) else {
            return;
        };
        let task = Task::Build { algorithm };
        // A chain the exact search refuses fails at once, with the reason
        // (too long: use rotor), rather than after a curve of refusals.
        if algorithm == Algorithm::Optimal {
            if let Err(e) = optimal::Limits::default().check_stages(chain.len()) {
                return emit(failed(generation, Some(task), SolveError::from(e)));
            }
        }
        let started = now();
        let mut progress = reporter(generation, task, emit);
        // As the CLI: the breakpoint table, exact in bytes at every budget,
        // or the grid where it would take more memory than the grid's.
        let built = build(
            chain,
            algorithm,
            max_budget,
            SlotPolicy::Exact,
            &mut progress,
        );
        // Where the grid may round, the certificate's lower bound (as long
        // again to build; a no-op on the breakpoints and exact lattices).
        let planner = match built.and_then(|mut p| p.certify(chain, &mut progress).map(|()| p)) {
            Ok(p) => p,
            Err(e) => {
                drop(progress);
                return emit(failed(generation, Some(task), e));
            }
        };
        // The curve reports too: for the exact search it is the whole work.
        let curve = curve(chain, &planner, &mut progress);
        drop(progress);
        let mut built = Built {
            generation,
            algorithm,
            min_budget: planner.min_budget_bytes(),
            build_ms: now() - started,
            curve,
            table: None,
            grid: grid_note(chain, &planner),
        };
        if self.role == Role::Worker && algorithm.uses_slots() {
            built.table = planner.into_table().map(Table::pack);
        } else {
            self.keep(planner);
        }
        emit(Response::Built(built));
    }

    fn plan(&mut self, generation: u64, mut ask: Ask, now: &dyn Fn() -> f64, emit: &mut Emit<'_>) {
        // pofo and offload-only read from their table for every budget;
        // without one (another algorithm, or its build failed) a quick ask
        // is solved whole.
        let quick = match ask.stage {
            Stage::Quick => self.quick(generation, &ask, emit),
            _ => None,
        };
        if ask.stage == Stage::Quick && quick.is_none() {
            ask.stage = Stage::Whole;
        }
        let Some(chain) = self.chain_of(generation) else {
            return;
        };
        let Ask {
            algorithm,
            budget,
            bandwidth,
            exact,
            ..
        } = ask;
        // A refinement reports as its own task: the plans' worker may be
        // building the table for every budget at the same time.
        let task = if ask.stage == Stage::Refine {
            Task::Refine { algorithm }
        } else {
            Task::Plan { algorithm }
        };
        // Offloading algorithms and exact re-plans solve anew (and may
        // fail); otherwise the built table answers.
        let result = if let Some(solution) = quick {
            Ok((solution, Grid::default()))
        } else if algorithm.offloads() {
            let mut progress = reporter(generation, task, emit);
            solve_offloading(chain, algorithm, budget, bandwidth, &mut progress)
                .map(|s| (s, Grid::default()))
        } else if exact {
            replan_exactly(
                chain,
                algorithm,
                budget,
                now,
                &mut reporter(generation, task, emit),
            )
        } else {
            let Some(planner) = self.planners.iter().find(|p| p.algorithm() == algorithm) else {
                return;
            };
            planner
                .plan(chain, budget)
                .map(|s| page_words(planner, budget, s))
        };
        match result {
            Ok((solution, grid)) => {
                let solution =
                    with_floor_certificate(chain, algorithm, budget, bandwidth, solution);
                let summaries = self.summaries(algorithm, budget, bandwidth);
                let mut planned = answer(ask, generation, solution, summaries);
                planned.grid_loss = grid.loss;
                planned.gap = grid.gap;
                emit(Response::Planned(Box::new(planned)))
            }
            Err(e) => emit(failed(generation, Some(task), e)),
        }
    }

    /// A quick plan: `ask`'s budget read from the offloading table for
    /// every budget, built first if this chain, algorithm and link have
    /// none. None where there is no table to read (not a table algorithm,
    /// another chain, or its build failed: the caller solves whole).
    fn quick(&mut self, generation: u64, ask: &Ask, emit: &mut Emit<'_>) -> Option<Solution> {
        if !has_quick_table(ask.algorithm) || generation != self.generation {
            return None;
        }
        let chain = self.chain.as_ref()?;
        let fits = |t: &OffloadTable| t.algorithm == ask.algorithm && t.bandwidth == ask.bandwidth;
        if !self.offload_table.as_ref().is_some_and(fits) {
            let options = quick_table_options(ask.bandwidth);
            let task = Task::Table {
                algorithm: ask.algorithm,
            };
            let mut progress = reporter(generation, task, emit);
            let mode = pofo::Mode::of(ask.algorithm)?;
            let top = max_useful_budget(chain);
            let built = Tables::build(chain, mode, top, &options, &mut progress);
            self.offload_table = Some(OffloadTable {
                algorithm: ask.algorithm,
                bandwidth: ask.bandwidth,
                tables: built.ok()?,
            });
        }
        let tables = &self.offload_table.as_ref()?.tables;
        let answer = tables.plan(chain, ask.budget);
        Some(quick_words(tables, ask.budget, answer))
    }

    /// One compare row: `algorithm` solved at `budget`.
    fn compare(
        &self,
        generation: u64,
        id: u64,
        budget: u64,
        bandwidth: Option<f64>,
        algorithm: Algorithm,
        emit: &mut Emit<'_>,
    ) {
        let Some(chain) = self.chain_of(generation) else {
            return;
        };
        let mut progress = reporter(generation, Task::Compare, emit);
        let summary = match solve_offloading(chain, algorithm, budget, bandwidth, &mut progress) {
            Ok(s) => summary_of(chain, &s, budget, bandwidth),
            Err(e) => Summary::failed(algorithm, e.to_string()),
        };
        drop(progress);
        emit(Response::Compared {
            generation,
            id,
            budget,
            summary,
        });
    }

    fn sweep(&self, generation: u64, bandwidth: f64, emit: &mut Emit<'_>) {
        let work = |chain: &Chain, progress: &mut dyn FnMut(f64) -> bool| {
            sweep(chain, bandwidth, progress)
        };
        let answer = |sweep| Response::Swept { generation, sweep };
        self.long_task((generation, Task::Sweep), emit, work, answer);
    }

    /// Takes in an answer from the worker before the page sees it: a built
    /// table is installed here (so this algorithm now plans in the page),
    /// and an exact re-plan gets the summaries of the tables that live here.
    /// None for a table of a chain no longer shown.
    pub fn receive(&mut self, response: Response) -> Option<Response> {
        match response {
            // The exact search's curve came from the worker; the page keeps
            // a planner of its own (nothing to build) for the compare row.
            Response::Built(built)
                if built.algorithm == Algorithm::Optimal && built.generation == self.generation =>
            {
                if let Some(chain) = self.chain.as_ref() {
                    if let Ok(p) = build(
                        chain,
                        built.algorithm,
                        built.min_budget,
                        SlotPolicy::Fixed,
                        &mut |_| true,
                    ) {
                        self.keep(p);
                    }
                }
                Some(Response::Built(built))
            }
            Response::Built(Built {
                table: Some(table),
                generation,
                algorithm,
                min_budget,
                build_ms,
                curve,
                grid,
            }) => {
                if generation != self.generation {
                    return None;
                }
                Some(match self.install(table) {
                    Ok(()) => Response::Built(Built {
                        generation,
                        algorithm,
                        min_budget,
                        build_ms,
                        curve,
                        table: None,
                        grid,
                    }),
                    Err(error) => Response::Failed {
                        generation,
                        task: Some(Task::Build { algorithm }),
                        error,
                    },
                })
            }
            Response::Planned(mut planned) => {
                planned.summaries =
                    self.summaries(planned.algorithm, planned.budget, planned.bandwidth);
                Some(Response::Planned(planned))
            }
            other => Some(other),
        }
    }

    /// Rebuilds a planner from a table built elsewhere for this chain.
    fn install(&mut self, table: Table) -> Result<(), String> {
        let chain = self.chain.as_ref().ok_or("no chain loaded")?;
        let (parts, min_budget) = table.unpack()?;
        let planner = Planner::from_table(chain, parts, min_budget).map_err(|e| e.to_string())?;
        self.keep(planner);
        Ok(())
    }

    fn keep(&mut self, planner: Planner) {
        self.planners
            .retain(|p| p.algorithm() != planner.algorithm());
        self.planners.push(planner);
    }

    /// The chain a request of `generation` is about; None for a request
    /// about a chain no longer loaded (or none loaded at all).
    fn chain_of(&self, generation: u64) -> Option<&Chain> {
        (generation == self.generation)
            .then_some(self.chain.as_ref())
            .flatten()
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
            .map(|p| p.algorithm())
            .filter(|&a| a != except)
            .filter_map(|a| self.summary_with(chain, a, budget, bandwidth))
            .collect()
    }

    /// The compare row of `algorithm` at `budget` from its table here; None
    /// where none is built here or the row is solved in the worker.
    pub fn summary(
        &self,
        algorithm: Algorithm,
        budget: u64,
        bandwidth: Option<f64>,
    ) -> Option<Summary> {
        self.summary_with(self.chain.as_ref()?, algorithm, budget, bandwidth)
    }

    fn summary_with(
        &self,
        chain: &Chain,
        algorithm: Algorithm,
        budget: u64,
        bandwidth: Option<f64>,
    ) -> Option<Summary> {
        // Offloading algorithms and the exact search are solved per budget
        // in the worker (Compare): a search can take seconds.
        if solved_in_worker(algorithm) {
            return None;
        }
        let planner = self.planners.iter().find(|p| p.algorithm() == algorithm)?;
        Some(match planner.plan(chain, budget) {
            Ok(solution) => summary_of(chain, &solution, budget, bandwidth),
            Err(e) => Summary::failed(algorithm, e.to_string()),
        })
    }
}

/// Whether the compare table's row of `algorithm` comes from the worker's
/// per-budget solves (Compare) rather than from the page's planners.
pub fn solved_in_worker(algorithm: Algorithm) -> bool {
    algorithm.offloads() || algorithm == Algorithm::Optimal
}

/// The compare rows solved in the worker for `chain`, in the table's
/// order: the offloading algorithms, and the exact search where asked
/// (`with_optimal`) and its stage limit allows.
pub fn compared_in_worker(chain: &Chain, with_optimal: bool) -> Vec<Algorithm> {
    let searchable = with_optimal && optimal::Limits::default().check_stages(chain.len()).is_ok();
    Algorithm::ALL
        .into_iter()
        .filter(|&a| a.offloads() || (a == Algorithm::Optimal && searchable))
        .collect()
}

/// The answer to `ask`: `solution`, with every built algorithm's summary.
fn answer(ask: Ask, generation: u64, solution: Solution, summaries: Vec<Summary>) -> Planned {
    Planned {
        generation,
        id: ask.id,
        algorithm: ask.algorithm,
        budget: ask.budget,
        bandwidth: ask.bandwidth,
        exact: ask.exact,
        ops: solution.ops,
        predicted_seconds: solution.predicted_seconds,
        predicted_peak_bytes: solution.predicted_peak_bytes,
        detail: solution.detail,
        error: None,
        summaries,
        grid_loss: None,
        gap: None,
        stage: ask.stage,
    }
}

/// An answer of an algorithm without a class bound of its own (all but
/// rotor and revolve, whose grid answers carry theirs in `gap`), with its
/// certificate in words (issue 44): how far its simulated makespan may be
/// from the best schedule at this budget, by the time floor
/// ([`floor_certificate`]).
fn with_floor_certificate(
    chain: &Chain,
    algorithm: Algorithm,
    budget: u64,
    bandwidth: Option<f64>,
    mut solution: Solution,
) -> Solution {
    if algorithm.uses_slots() {
        return solution;
    }
    let Some(ops) = solution.ops.as_deref() else {
        return solution;
    };
    // The link the planner used: the asked one, else the chain's.
    let link = bandwidth.or(chain.bandwidth_bytes_per_s);
    let Ok(trace) = judge(chain, ops, budget, link) else {
        return solution;
    };
    if let Some(c) = floor_certificate(chain, algorithm, budget, link, trace.makespan_seconds) {
        solution.detail = format!("{}; {}", solution.detail, c.line());
    }
    solution
}

/// A quick answer in the page's words: which grid it is on, that the
/// per-budget solve follows.
fn quick_words(table: &Tables, budget: u64, answer: TableAnswer) -> Solution {
    let mut solution = answer.solution;
    let grid = table.resolution();
    let slot = table.table().map(|t| t.slot_bytes());
    let on = match slot {
        Some(u) if answer.slots > 0 && solution.ops.is_some() => format!(
            "; at once from the table for every budget: {} of its {} slots of {} at {}, refining on the paper's grid ({} slots) …",
            answer.slots,
            grid.slots,
            format_bytes(u),
            format_bytes(budget),
            grid.requested
        ),
        _ => "; at once from the table for every budget, refining …".to_string(),
    };
    solution.detail.push_str(&on);
    solution
}

/// What the page says of a rotor/revolve table on a grid (None: exact in
/// bytes, or another planner), with the least budget its plans meet.
pub fn grid_note(chain: &Chain, planner: &Planner) -> Option<GridNote> {
    let table = planner.persistent_table()?;
    let grid = table.grid()?;
    Some(GridNote {
        slots: grid.slots(),
        slot_bytes: grid.slot_bytes(),
        table_bytes: grid.memory_bytes() as u64,
        fallback: table.fallback().is_some(),
        least_met: least_met(chain, planner),
    })
}

/// The least budget at which `planner` has a schedule: on a grid, sizes
/// round up to a slot, so it may be above M_low. Whether a budget is met
/// only grows with it (more slots), so a bisection between M_low (or the
/// planner's own least budget) and M_high finds it.
pub fn least_met(chain: &Chain, planner: &Planner) -> u64 {
    let meets = |b: u64| planner.plan(chain, b).is_ok_and(|s| s.ops.is_some());
    let (low, high) = budget_range(chain);
    let mut lo = low.min(planner.min_budget_bytes());
    let mut hi = high.max(planner.min_budget_bytes());
    if meets(lo) {
        return lo;
    }
    if !meets(hi) {
        return hi;
    }
    // lo fails, hi meets.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// A rotor/revolve answer in the page's words: on a grid, how much the
/// rounding may hide at this budget (the second value) and, where the
/// breakpoints were given up, why, without the CLI's flags.
fn page_words(planner: &Planner, budget: u64, mut solution: Solution) -> (Solution, Grid) {
    let Some(table) = planner.persistent_table() else {
        return (solution, Grid::default());
    };
    let Some(grid) = table.grid() else {
        return (solution, Grid::default());
    };
    let gap = solution
        .predicted_seconds
        .zip(planner.lower_bound_seconds(budget))
        .map(|(seconds, bound)| remat_core::solvers::persistent::gap(seconds, bound));
    let loss = match planner.memory(budget) {
        remat_core::solvers::Memory::Grid { lost_bytes, .. } => lost_bytes.unwrap_or(0),
        remat_core::solvers::Memory::Exact => 0,
    };
    if table.fallback().is_some() {
        let why = planned_on_a_grid(grid);
        solution.detail = if solution.ops.is_some() {
            if solution.detail.starts_with("everything fits") {
                solution.detail
            } else {
                format!("{}; {why}", table.describe_table(budget))
            }
        } else {
            format!(
                "infeasible on the grid of {} slots of {}: sizes round up to a slot; {why}",
                grid.slots(),
                format_bytes(grid.slot_bytes())
            )
        };
    }
    (
        solution,
        Grid {
            loss: Some(loss),
            gap,
        },
    )
}

/// The most seconds an exact re-plan spends refining a grid answer.
pub const REFINE_SECONDS: f64 = 20.0;

/// *Re-plan exactly at this budget*: a table for this budget alone (the
/// exact lattice where the sizes allow), its certificate, and, where it
/// still falls back to a grid with a gap above 0.5 %, finer grids for up
/// to [`REFINE_SECONDS`] ([`Planner::refine`]), as `remat solve` does.
/// `progress` only moves forward: the build to 15 %, the bound to 30 %,
/// the refinement the rest.
fn replan_exactly(
    chain: &Chain,
    algorithm: Algorithm,
    budget: u64,
    now: &dyn Fn() -> f64,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(Solution, Grid), SolveError> {
    let options = Options {
        slot_policy: SlotPolicy::Exact,
        ..Options::default()
    };
    let mut planner = Planner::build(chain, algorithm, budget, &options, &mut |d| {
        progress(0.15 * d)
    })?;
    planner.certify(chain, &mut |d| progress(0.15 + 0.15 * d))?;
    let solution = planner.plan(chain, budget)?;
    let (mut solution, mut grid) = page_words(&planner, budget, solution);
    let limits = persistent::refine::Limits {
        target_gap: persistent::refine::TARGET_GAP,
        max_seconds: REFINE_SECONDS,
        max_table_bytes: options.max_table_bytes,
        // The worker has one thread (and native tests may have more).
        two_threads: false,
    };
    let refined = planner.refine(
        chain,
        budget,
        &options,
        limits,
        &mut || now() / 1000.0,
        &mut |d| progress(0.3 + 0.7 * d),
    )?;
    if let Some(r) = refined {
        solution.ops = Some(r.plan.ops.clone());
        solution.predicted_seconds = Some(r.plan.predicted_seconds);
        solution.predicted_peak_bytes = Some(r.plan.predicted_peak_bytes);
        // Why the chain is on a grid at all, after the refinement's words.
        let fallback = planner
            .persistent_table()
            .filter(|t| t.fallback().is_some());
        solution.detail = match fallback.and_then(|t| t.grid()) {
            Some(grid) => format!("{}; {}", r.detail(), planned_on_a_grid(grid)),
            None => r.detail(),
        };
        grid.gap = Some(r.gap());
    }
    Ok((solution, grid))
}

/// Why a chain's table fell back to the grid, as the page says it.
fn planned_on_a_grid(grid: &persistent::PersistentTable) -> String {
    format!(
        "this chain's exact table would take more than {} (the grid's own size), so it is planned on a grid",
        format_bytes(grid.memory_bytes() as u64)
    )
}

/// What the page says of a grid answer: the bytes its rounding may hide
/// and, where the certificate was built, the gap to the optimum.
#[derive(Clone, Copy, Debug, Default)]
struct Grid {
    loss: Option<u64>,
    gap: Option<f64>,
}

fn failed(generation: u64, task: Option<Task>, error: impl ToString) -> Response {
    Response::Failed {
        generation,
        task,
        error: error.to_string(),
    }
}

/// Progress every 2 % of the way (more messages only cost the page time).
fn reporter<'a, 'e: 'a>(
    generation: u64,
    task: Task,
    emit: &'a mut Emit<'e>,
) -> impl FnMut(f64) -> bool + use<'a, 'e> {
    let mut last = -1.0f64;
    move |fraction: f64| {
        if fraction - last >= 0.02 {
            last = fraction;
            emit(Response::Progress {
                generation,
                task,
                fraction,
            });
        }
        true
    }
}

/// Builds a planner for budgets up to `max_budget`. The slider's tables use
/// the papers' fixed grid (one table answers every budget below it); an
/// exact re-plan uses the exact lattice of its one budget where the sizes
/// allow (`SlotPolicy::Exact`).
fn build(
    chain: &Chain,
    alg: Algorithm,
    max_budget: u64,
    slot_policy: SlotPolicy,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Planner, SolveError> {
    let options = Options {
        slot_policy,
        ..Options::default()
    };
    Planner::build(chain, alg, max_budget, &options, progress)
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
    // Through the planner, the one dispatcher: the offloading family
    // also holds the DELTA runtimes, which `offload::solve` does not serve.
    Planner::build(chain, alg, budget, &options, progress)?
        .plan_with_progress(chain, budget, progress)
}

/// The methods of the max-batch panel (the list), after store-all.
pub const MAX_BATCH_ALGORITHMS: [Algorithm; 5] = [
    Algorithm::Sequential,
    Algorithm::Rotor,
    Algorithm::Dtr,
    Algorithm::Delta,
    Algorithm::Pofo,
];

/// `chain` as a function of the batch, as `remat maxbatch` builds it:
/// profiled at `batch` and scaled linearly, or, with a second profile, the
/// core's affine fit through both. A second profile that cannot be read, or
/// that the fit refuses (other stages, the same batch), fails with the
/// core's message, which names the field (`second.stages`, `second.batch`).
pub fn batch_model(
    chain: &Chain,
    batch: u64,
    second: Option<&SecondProfile>,
) -> Result<BatchModel, String> {
    let Some(second) = second else {
        return BatchModel::linear(chain.clone(), batch).map_err(|e| e.to_string());
    };
    let profile = read_any_chain(&second.chain)
        .map_err(|e| format!("second profile: could not read it: {e}"))?;
    AffineFit::new(chain.clone(), batch, profile, second.batch)
        .map(BatchModel::Affine)
        .map_err(|e| format!("second profile: {e}"))
}

/// The largest batch of store-all and each of [`MAX_BATCH_ALGORITHMS`]
/// for `chain` profiled at `device.batch` (and `second`, see
/// [`batch_model`]), through the core's search (the CLI's `remat maxbatch`
/// runs the same function, with the chain's own bandwidth and the default
/// options). `progress` returning false cancels.
pub fn max_batch(
    chain: &Chain,
    device: BatchDevice,
    second: Option<&SecondProfile>,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<MaxBatch, String> {
    use remat_core::maxbatch::{max_batches, Device, Margin, DEFAULT_MAX_BATCH};
    let model = batch_model(chain, device.batch, second)?;
    let core_device = Device {
        memory_bytes: device.memory_bytes,
        fixed_bytes: device.fixed_bytes,
        margin: Margin::Bytes(device.margin_bytes),
    };
    let found = max_batches(
        &model,
        &MAX_BATCH_ALGORITHMS,
        &core_device,
        DEFAULT_MAX_BATCH,
        &remat_core::solvers::Options::default(),
        progress,
    )
    .map_err(|e| e.to_string())?;
    let rows = std::iter::once(&found.store_all)
        .chain(&found.methods)
        .map(|l| BatchRow {
            algorithm: l.algorithm,
            batch: l.batch,
            at_limit: l.at_limit,
            samples_per_second: l.samples_per_second(),
        })
        .collect();
    Ok(MaxBatch {
        device,
        budget_bytes: found.budget_bytes,
        max_batch: found.max_batch,
        second_batch: second.map(|s| s.batch),
        rows,
    })
}

/// The two figures of POFO Section 5 for `chain`, through the core's sweep
/// (the CLI's `remat sweep` runs the same function): every algorithm of
/// [`SWEEP_ALGORITHMS`] at every α of [`SWEEP_ALPHAS`] at `bandwidth`, then
/// at [`SWEEP_FIXED_ALPHA`] at every β of [`SWEEP_BANDWIDTHS`].
///
/// A schedule the judge refuses (a solver bug) stops the sweep with the
/// judge's message instead of showing a silent gap ("no makespan") that
/// would read as "infeasible": the page shows the error where the figures go.
fn sweep(
    chain: &Chain,
    bandwidth: f64,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Sweep, SweepError> {
    let range @ (m_low, m_high) = budget_range(chain);
    let runs: Vec<SweepRun> = (SWEEP_ALPHAS.iter().map(|&alpha| SweepRun {
        alpha,
        bandwidth: Some(bandwidth),
    }))
    .chain(SWEEP_BANDWIDTHS.iter().map(|&b| SweepRun {
        alpha: SWEEP_FIXED_ALPHA,
        bandwidth: Some(b),
    }))
    .collect();
    let mut points: Vec<SweepPoint> = core_sweep::sweep(
        chain,
        &SWEEP_ALGORITHMS,
        &runs,
        m_low,
        m_high,
        &Options::default(),
        progress,
    )?
    .iter()
    .map(|p| SweepPoint {
        algorithm: p.algorithm,
        alpha: p.alpha,
        // Every run names its β, so the point's is that one.
        bandwidth: p.bandwidth.unwrap_or(bandwidth),
        makespan_seconds: p.makespan_seconds(),
    })
    .collect();
    let split = SWEEP_ALPHAS.len() * SWEEP_ALGORITHMS.len();
    let by_bandwidth = points.split_off(split);
    Ok(Sweep {
        bandwidth,
        range,
        sequential_seconds: chain.sequential_seconds(),
        by_alpha: points,
        by_bandwidth,
    })
}

/// The simulator's measure of `ops` with the budget as device memory; None
/// when the schedule is invalid or does not fit.
fn measure(
    chain: &Chain,
    ops: &[remat_core::Op],
    budget: u64,
    bandwidth: Option<f64>,
) -> Option<Trace> {
    judge(chain, ops, budget, bandwidth)
        .ok()
        .filter(|t| t.fits(budget))
}

/// One solution measured by the simulator, with the budget as memory limit.
fn summary_of(chain: &Chain, solution: &Solution, budget: u64, bandwidth: Option<f64>) -> Summary {
    let measured = solution
        .ops
        .as_ref()
        .and_then(|ops| measure(chain, ops, budget, bandwidth));
    Summary {
        algorithm: solution.algorithm,
        feasible: measured.is_some(),
        makespan_seconds: measured.as_ref().map(|t| t.makespan_seconds),
        peak_bytes: measured.as_ref().map(|t| t.peak_bytes),
        detail: solution.detail.clone(),
        error: None,
    }
}

/// Makespan over the slider's range, simulated (the simulator is the judge).
/// Empty for offloading algorithms: their curves are the sweep's.
/// `progress` hears each budget done: the exact search's curve is one
/// search per budget (a budget it gives up on is a gap in its line).
fn curve(
    chain: &Chain,
    planner: &Planner,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Vec<CurvePoint> {
    if planner.algorithm().offloads() {
        return Vec::new();
    }
    let (low, high) = budget_range(chain);
    let mut budgets: Vec<u64> = (0..CURVE_POINTS)
        .map(|i| low + ((high - low) as f64 * i as f64 / (CURVE_POINTS - 1) as f64) as u64)
        .collect();
    let own_min = planner.min_budget_bytes();
    if own_min > low && own_min < high {
        budgets.push(own_min);
        budgets.sort_unstable();
    }
    let n = budgets.len() as f64;
    budgets
        .into_iter()
        .enumerate()
        .map(|(i, budget)| {
            // Table planners read out and cannot fail; the exact search may
            // refuse a budget (too many states): no point there.
            let solution = planner.plan(chain, budget).ok();
            progress((i + 1) as f64 / n);
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

#[cfg(test)]
mod tests;
