//! Closing the certificate's gap at one budget (issue 44, item 2): finer
//! grids until the plan is proven within a target of the optimum, or a
//! stated time or table size is spent.
//!
//! **Why.** Past about 75 stages rotor and revolve answer on a grid: held
//! sizes rounded *up* give a plan that fits in bytes (the upper bound), the
//! same grid rounded *down* gives a time no persistent schedule beats (the
//! lower bound, [`PersistentTable::build_lower_bound`]). Each held size
//! loses less than a slot u either way, so both bounds move by about the
//! number of tensors held at the peak times u: halving u roughly halves
//! the gap (a 300-stage chain at 60 % of M_high: 6.17 % on 500 slots,
//! 3.08 % on 1 000, 1.51 % on 2 000).
//!
//! **How.** Round k doubles the slots (S_k = 2^k · S_0) and
//! 1. builds the rounded-up table anchored a little *above* the budget, at
//!    B + w where w is the bytes the previous round's plan left unused:
//!    rounding up overstates what a plan holds, so a plan read at a lattice
//!    point above B often still peaks within B in exact bytes. The read-out
//!    states each plan's exact peak ([`PersistentTable::plan`]); the
//!    highest lattice point whose plan fits B is found by bisection (times
//!    only fall as memory grows, so it is the fastest plan read);
//! 2. drops that table and builds the rounded-down one on the same grid,
//!    read at the lowest lattice point with at least B's bytes.
//!
//! Every round's plan fits and every round's bound is valid, so the answer
//! keeps the fastest plan and the largest bound seen: the gap never grows
//! from one round to the next. It stops when the gap is at most the
//! target, when the lattice is exact (the plan is the optimum), when the
//! next table would pass `max_table_bytes`, or when the next round (about
//! twice the last) would pass the time given.
//!
//! **Complexity.** Round k costs two table builds, O(L³ · S_k) time and
//! O(L² · S_k) memory, and O(log S_k) read-outs of O(L²); the rounds
//! together cost about twice the last. Natively on two cores a round builds
//! its two tables at once, on two threads (about one build's time, twice
//! one table's memory); in wasm one table is alive at a time.
//!
//! **Assumptions.** The persistent class, as the tables; the time limit is
//! the caller's clock (the core has none: wasm32 has no `Instant`).

use super::{PersistentPlan, PersistentTable, SlotPolicy, TableGrid, Variant};
use crate::model::Chain;
use crate::solvers::api::{Progress, SolveError};

/// The gap a refinement stops at unless told otherwise: 0.5 %.
pub const TARGET_GAP: f64 = 0.005;

/// How far a refinement may go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Stop once the plan is within this fraction of the lower bound.
    pub target_gap: f64,
    /// Start no round that would end after this many seconds of the
    /// caller's clock (from the refinement's start).
    pub max_seconds: f64,
    /// Build no table larger than this.
    pub max_table_bytes: u64,
    /// Build each round's two tables at once, on two threads, where the
    /// machine has the cores (never in wasm): about half the time, twice
    /// one table's memory.
    pub two_threads: bool,
}

/// What a refinement starts from: the answer already given at the budget
/// (its table's plan and bound), so that the result is never worse.
#[derive(Clone, Debug)]
pub struct Start {
    pub plan: PersistentPlan,
    /// Its certificate, when the caller has one.
    pub lower_bound_seconds: Option<f64>,
    /// The slots of the grid it came from (the first round doubles them).
    pub slots: usize,
}

/// Why a refinement stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The gap reached the target.
    Reached,
    /// A round's lattice was exact: its plan is the optimum.
    Exact,
    /// The next round would have passed the time given.
    Time,
    /// The next round's table would have passed the size limit.
    Table,
}

impl Stop {
    /// In a few words, for the CLI and the page.
    pub fn words(self) -> &'static str {
        match self {
            Stop::Reached => "reached the target gap",
            Stop::Exact => "exact lattice",
            Stop::Time => "stopped at the time given",
            Stop::Table => "stopped at the table size limit",
        }
    }
}

/// One round of a refinement, as it ended.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Round {
    pub slots: usize,
    pub slot_bytes: u64,
    /// The top of its lattice: the budget plus the slack it read into.
    pub anchor_bytes: u64,
    /// Its own plan's time and exact peak (the best that fits the budget).
    pub plan_seconds: f64,
    pub plan_peak_bytes: u64,
    /// Its own lower bound.
    pub bound_seconds: f64,
    /// The caller's clock at its end, from the refinement's start.
    pub elapsed_seconds: f64,
}

/// The refined answer: the fastest plan and the largest bound of all
/// rounds (the start's included).
#[derive(Clone, Debug)]
pub struct Refined {
    pub plan: PersistentPlan,
    pub lower_bound_seconds: f64,
    pub rounds: Vec<Round>,
    pub stop: Stop,
    pub elapsed_seconds: f64,
}

impl Refined {
    /// The gap between the plan and the bound ([`super::gap`]).
    pub fn gap(&self) -> f64 {
        super::gap(self.plan.predicted_seconds, self.lower_bound_seconds)
    }

    /// The answer's detail, as the grid's own ([`super::Table::describe`])
    /// says it: "refined to 2000 slots of 17.4 MiB in 2 rounds (4.1 s);
    /// within 0.42 % of the optimum (none is faster than 1.410 s);
    /// reached the target gap".
    pub fn detail(&self) -> String {
        use crate::model::units::{format_bytes, format_seconds};
        let last = self.rounds.last();
        format!(
            "refined to {} slots of {} in {} round{} ({:.1} s); within {} of the optimum (none is faster than {}); {}",
            last.map_or(0, |r| r.slots),
            format_bytes(last.map_or(0, |r| r.slot_bytes)),
            self.rounds.len(),
            if self.rounds.len() == 1 { "" } else { "s" },
            self.elapsed_seconds,
            super::format_gap(self.plan.predicted_seconds, self.lower_bound_seconds),
            format_seconds(self.lower_bound_seconds),
            self.stop.words()
        )
    }
}

/// Refines `start` at `budget_bytes` (see the module's doc). `clock` gives
/// seconds since any fixed origin; `progress` hears a fraction that only
/// grows and may cancel ([`SolveError::Cancelled`]).
///
/// ```
/// use remat_core::examples::teaching;
/// use remat_core::solvers::persistent::{self, refine, PersistentTable, SlotPolicy, Variant};
/// use remat_core::solvers::{max_useful_budget, no_progress};
///
/// let chain = teaching();
/// let budget = max_useful_budget(&chain) * 6 / 10;
/// // A coarse grid of 3 slots: a plan, and a loose bound.
/// let coarse = PersistentTable::build(&chain, Variant::Rotor, budget, 3, 1 << 30, &mut no_progress())
///     .unwrap();
/// let start = refine::Start { plan: coarse.plan(&chain, budget).unwrap(), lower_bound_seconds: None, slots: 3 };
/// let limits = refine::Limits { target_gap: 0.0, max_seconds: 60.0, max_table_bytes: 1 << 30,
///                               two_threads: true };
/// let refined = refine::refine(&chain, Variant::Rotor, budget, SlotPolicy::Fixed, start.clone(),
///                              limits, &mut || 0.0, &mut no_progress()).unwrap();
/// assert!(refined.plan.predicted_seconds <= start.plan.predicted_seconds);
/// assert!(refined.plan.predicted_peak_bytes <= budget);
/// assert!(refined.lower_bound_seconds <= refined.plan.predicted_seconds);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn refine(
    chain: &Chain,
    variant: Variant,
    budget_bytes: u64,
    policy: SlotPolicy,
    start: Start,
    limits: Limits,
    clock: &mut dyn FnMut() -> f64,
    progress: &mut Progress<'_>,
) -> Result<Refined, SolveError> {
    let origin = clock();
    let n = chain.len();
    let mut best = start.plan;
    let mut bound = start.lower_bound_seconds.unwrap_or(0.0);
    let mut rounds: Vec<Round> = Vec::new();
    let mut slots = start.slots.max(1);
    // The slack the first round reads into: what the start's plan left.
    let mut slack = budget_bytes.saturating_sub(best.predicted_peak_bytes);
    // Progress by rounds, each worth the share of the work it does (round
    // k about 2^k): the rounds the table limit allows, at most.
    let most = rounds_allowed(n, slots, limits.max_table_bytes).max(1);
    let total_work = (1u64 << most.min(62)) - 1;
    let mut done_work = 0u64;
    let mut shown = 0.0f64;
    let mut last_round_seconds = 0.0f64;
    let mut last_at_once = false;
    let mut last_lattice_slots = 1usize;
    let stop = loop {
        if super::gap(best.predicted_seconds, bound) <= limits.target_gap {
            break Stop::Reached;
        }
        let next_slots = slots.saturating_mul(2);
        // The lattice the next round would build (a small budget may give
        // it more slots than asked: a slot is at least a byte).
        let next = PersistentTable::lattice_for(
            chain,
            budget_bytes.saturating_add(slack),
            policy,
            next_slots,
            limits.max_table_bytes,
        );
        if PersistentTable::table_bytes(n, next.slots) > limits.max_table_bytes as u128 {
            break Stop::Table;
        }
        // The next round costs the last's times its lattice's growth (about
        // twice the slots: the exact policy may pick fewer than asked), and
        // twice that again where the last built its tables at once and the
        // next cannot.
        let elapsed = clock() - origin;
        let serial = |l: &super::Lattice| !both_at_once(n, l, &limits);
        let growth = next.slots as f64 / last_lattice_slots as f64;
        let factor = growth
            * if last_at_once && serial(&next) {
                2.0
            } else {
                1.0
            };
        if !rounds.is_empty() && elapsed + factor * last_round_seconds > limits.max_seconds {
            break Stop::Time;
        }
        last_at_once = !serial(&next);
        slots = next_slots;
        let weight = 1u64 << rounds.len().min(62);
        let mut inner = |d: f64| {
            let f = ((done_work as f64 + weight as f64 * d.clamp(0.0, 1.0)) / total_work as f64)
                .min(1.0);
            shown = shown.max(f);
            progress(shown)
        };
        let round_start = clock();
        let round = one_round(
            chain,
            variant,
            budget_bytes,
            policy,
            slots,
            slack,
            &limits,
            &mut inner,
        )?;
        done_work = done_work.saturating_add(weight).min(total_work);
        let RoundResult {
            plan,
            bound: round_bound,
            exact: lattice_exact,
            lattice,
            top,
        } = round;
        let round = Round {
            slots,
            slot_bytes: lattice.slot_bytes,
            anchor_bytes: top,
            plan_seconds: plan.as_ref().map_or(f64::INFINITY, |p| p.predicted_seconds),
            plan_peak_bytes: plan.as_ref().map_or(0, |p| p.predicted_peak_bytes),
            bound_seconds: round_bound.unwrap_or(0.0),
            elapsed_seconds: clock() - origin,
        };
        last_round_seconds = clock() - round_start;
        last_lattice_slots = lattice.slots.max(1);
        rounds.push(round);
        if let Some(p) = plan {
            // Halving the slot about halves what rounding wastes: read
            // into twice that next time, generously.
            slack = budget_bytes.saturating_sub(p.predicted_peak_bytes);
            if p.predicted_seconds < best.predicted_seconds {
                best = p;
            }
        }
        if let Some(b) = round_bound {
            bound = bound.max(b);
        }
        if lattice_exact {
            break Stop::Exact;
        }
    };
    // Rounding never hides a faster schedule than the bound; a plan below
    // it would be a defect of the tables, never reported as a negative gap.
    debug_assert!(best.predicted_seconds >= bound * (1.0 - 1e-12));
    Ok(Refined {
        plan: best,
        lower_bound_seconds: bound,
        rounds,
        stop,
        elapsed_seconds: clock() - origin,
    })
}

/// How many doublings of `slots` the table limit allows on `n` stages.
fn rounds_allowed(n: usize, slots: usize, max_table_bytes: u64) -> u32 {
    let mut k = 0;
    let mut s = slots;
    loop {
        s = s.saturating_mul(2);
        if PersistentTable::table_bytes(n, s) > max_table_bytes as u128 || k >= 40 {
            return k;
        }
        k += 1;
    }
}

/// What one round found.
struct RoundResult {
    /// Its fastest plan that fits (None if none does).
    plan: Option<PersistentPlan>,
    bound: Option<f64>,
    /// Exact at the budget: the plan is the optimum.
    exact: bool,
    lattice: super::Lattice,
    /// The top of its lattice, a^0 included.
    top: u64,
}

/// One round: the rounded-up table anchored at `budget + slack` read at the
/// highest lattice point whose plan fits `budget` in exact bytes, then the
/// rounded-down table on the same grid read at the budget.
#[allow(clippy::too_many_arguments)]
fn one_round(
    chain: &Chain,
    variant: Variant,
    budget_bytes: u64,
    policy: SlotPolicy,
    slots: usize,
    slack: u64,
    limits: &Limits,
    progress: &mut Progress<'_>,
) -> Result<RoundResult, SolveError> {
    let anchor = budget_bytes.saturating_add(slack);
    let lattice =
        PersistentTable::lattice_for(chain, anchor, policy, slots, limits.max_table_bytes);
    if both_at_once(chain.len(), &lattice, limits) {
        return both_tables_at_once(
            chain,
            TableGrid { variant, lattice },
            (anchor, policy, slots, limits.max_table_bytes),
            budget_bytes,
            progress,
        );
    }
    let mut half = |d: f64| progress(0.5 * d);
    let up = PersistentTable::build_with(
        chain,
        variant,
        anchor,
        policy,
        slots,
        limits.max_table_bytes,
        &mut half,
    )?;
    let plan = best_fitting(&up, chain, budget_bytes);
    let grid = up.grid();
    let top = up.budget_bytes();
    // Exact at the budget: the lattice loses nothing and the budget is a
    // lattice point; its plan there is the optimum, its own bound.
    let exact = up.lost_bytes(budget_bytes) == 0;
    // An exact lattice rounds down as it rounds up: the same table bounds.
    let own_bound = up.bound_seconds(budget_bytes);
    drop(up); // one table alive at a time
    let bound = if exact {
        plan.as_ref().map(|p| p.predicted_seconds)
    } else if grid.lattice.exact() {
        own_bound
    } else {
        let mut half = |d: f64| progress(0.5 + 0.5 * d);
        PersistentTable::build_lower_bound(chain, grid, &mut half)?.bound_seconds(budget_bytes)
    };
    Ok(RoundResult {
        plan,
        bound,
        exact,
        lattice: grid.lattice,
        top,
    })
}

/// Whether a round builds its two tables on two threads at once: natively,
/// with two cores, where the lattice rounds (so a bound table is needed).
/// Each table stays within the table limit; together they take twice it.
fn both_at_once(n: usize, lattice: &super::Lattice, limits: &Limits) -> bool {
    limits.two_threads
        && !cfg!(target_arch = "wasm32")
        && std::thread::available_parallelism().is_ok_and(|c| c.get() >= 2)
        && !lattice.exact()
        && PersistentTable::table_bytes(n, lattice.slots) <= limits.max_table_bytes as u128
}

/// [`one_round`] with the rounded-down table built on a second thread
/// while this one builds and reads the rounded-up table (the same grid:
/// `up` is the arguments `build_with` picks it from). The round then takes
/// about one build instead of two, at twice the memory. Cancelling
/// through `progress` stops both.
fn both_tables_at_once(
    chain: &Chain,
    grid: TableGrid,
    up: (u64, SlotPolicy, usize, u64),
    budget_bytes: u64,
    progress: &mut Progress<'_>,
) -> Result<RoundResult, SolveError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (anchor, policy, slots, max_table_bytes) = up;
    let cancelled = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let lower = scope.spawn(|| {
            let mut go_on = |_: f64| !cancelled.load(Ordering::Relaxed);
            PersistentTable::build_lower_bound(chain, grid, &mut go_on)
                .map(|t| t.bound_seconds(budget_bytes))
        });
        let mut both = |d: f64| {
            let go_on = progress(d);
            if !go_on {
                cancelled.store(true, Ordering::Relaxed);
            }
            go_on
        };
        let upper = PersistentTable::build_with(
            chain,
            grid.variant,
            anchor,
            policy,
            slots,
            max_table_bytes,
            &mut both,
        );
        if upper.is_err() {
            cancelled.store(true, Ordering::Relaxed);
        }
        let bound = lower.join().expect("the bound's thread does not panic");
        let up = upper?;
        debug_assert_eq!(up.grid(), grid, "the same grid on both threads");
        let plan = best_fitting(&up, chain, budget_bytes);
        let top = up.budget_bytes();
        drop(up);
        Ok(RoundResult {
            plan,
            bound: bound?,
            exact: false,
            lattice: grid.lattice,
            top,
        })
    })
}

/// The fastest plan of `table` that fits `budget_bytes` in exact bytes:
/// bisection over the budgets of its lattice points from the budget up to
/// the table's top, on the read-out's exact peak. Times only fall as the
/// index grows; the peaks need not grow with it, so the bisection finds *a*
/// highest fitting point, not always the highest.
fn best_fitting(
    table: &PersistentTable,
    chain: &Chain,
    budget_bytes: u64,
) -> Option<PersistentPlan> {
    let lattice = table.lattice();
    let a0 = chain.output_bytes(0);
    let at = |m: usize| a0 + lattice.bytes_at(m);
    let fits = |m: usize| {
        table
            .plan(chain, at(m))
            .filter(|p| p.predicted_peak_bytes <= budget_bytes)
    };
    let low = lattice.index_for(budget_bytes.checked_sub(a0)?)?;
    let mut best = fits(low)?;
    let (mut lo, mut hi) = (low, lattice.slots);
    // Invariant: lo fits; every index tried above hi did not.
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match fits(mid) {
            Some(p) => {
                if p.predicted_seconds <= best.predicted_seconds {
                    best = p;
                }
                lo = mid;
            }
            None => hi = mid - 1,
        }
    }
    Some(best)
}
