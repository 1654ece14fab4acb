//! `optimal`: the true optimum — the fastest complete training step within
//! the budget over **every** sequence of Remat's compute operations
//! (F_all, F_ck, F_∅, B of docs/model.md), found by an exact search.
//!
//! Paper: O. Beaumont, L. Eyraud-Dubois, J. Herrmann, A. Joly, A. Shilova,
//! *Optimal checkpointing for heterogeneous chains: how to train deep neural
//! networks with limited memory*, Inria research report RR-9302 (2019),
//! §4.1 and Figure 2: with heterogeneous sizes no memory-persistent schedule
//! need be optimal, and the report leaves the general problem open, solving
//! only the persistent class (rotor). This module searches the general
//! problem for short chains; the report's counter-example is the built-in
//! `example:nonpersistent`.
//!
//! **The search.** A state ([`state::State`]) is what is resident — which
//! a^ℓ (and which of them F_ck marked a checkpoint, since F_∅ does not drop
//! those), which ā^ℓ — and which backward B^next is next (so δ^next is the
//! one gradient resident). Each valid operation whose memory (the level
//! plus what it allocates, as the simulator counts it) stays within the
//! budget is an edge weighted by its time. A* ([`search::fastest`]) with
//! the admissible, consistent bound of [`bound`] (every remaining backward,
//! and one F_all^j for each missing ā^j) takes states in order of
//! time + bound and closes each once (memoisation: a state reached a
//! second time, at no lower time, is dropped). The first complete state
//! taken is optimal. No persistence is assumed; [`Class::Persistent`]
//! restricts the same search to persistent schedules, for comparison with
//! rotor. The least budget any schedule meets is a bottleneck Dijkstra on
//! the same states ([`search::least_peak`], [`least_budget`]). Both searches
//! drop a state when a lower bound on the peak still to come (what stays
//! resident until each remaining backward, [`bound::remaining_peak`])
//! exceeds the budget.
//!
//! **Complexity.** A stage's output a^ℓ is absent, resident or a resident
//! checkpoint, ā^ℓ absent or resident, and B^next has L + 1 values: at most
//! (L + 1)·3^{L+1}·2^L states, O(L) operations from each, O(L) for the
//! bound: O(S·L·(L + log S)) time and O(S) memory for the S states the
//! budget lets it reach — exponential in L. The bound and the budget keep S
//! far below that (see docs/algorithms.md for the benchmark).
//!
//! **Assumptions and limits.** Device operations only: no offload or
//! prefetch (with transfers, time would depend on the overlap of two lanes
//! and the state would need the host copies); one compute lane, so the
//! makespan is the sum of the operation times, exactly what the simulator
//! measures. Chains longer than [`limits::MAX_STAGES`] are refused before
//! any work and a search that stores more than [`limits::MAX_STATES`] states
//! stops, both with [`SolveError::TooLarge`] naming the limit and suggesting
//! rotor ([`limits`] says why): an error, not "infeasible" — `ops: None`
//! means only that no schedule meets the budget.

pub mod bound;
pub mod limits;
pub mod search;
pub mod state;

pub use limits::{LimitError, Limits};
pub use search::Found;
pub use state::Class;

use super::api::{Problem, Progress, Solution, SolveError};
use crate::model::Chain;

/// The fastest schedule of `class` within `budget` (`Ok(None)`: none fits).
///
/// ```
/// use remat_core::examples::by_name;
/// use remat_core::simulator::judge;
/// use remat_core::solvers::{no_progress, optimal};
///
/// let chain = by_name("nonpersistent").unwrap();
/// let budget = 8 << 20; // the report's M = 8 (units of 1 MiB)
/// let found = optimal::search(&chain, budget, optimal::Class::All,
///                             optimal::Limits::default(), &mut no_progress())
///     .unwrap()
///     .expect("the report's budget is met");
/// let trace = judge(&chain, &found.ops, budget, None).unwrap();
/// assert_eq!(trace.makespan_seconds, found.seconds);
/// assert_eq!(trace.peak_bytes, found.peak_bytes);
/// assert!(trace.fits(budget));
/// ```
pub fn search(
    chain: &Chain,
    budget: u64,
    class: Class,
    limits: Limits,
    progress: &mut Progress<'_>,
) -> Result<Option<Found>, SolveError> {
    search::fastest(&state::Model::new(chain, class), budget, limits, progress)
}

/// The least budget any schedule of compute operations meets (it can be
/// below rotor's M_low, the least of rotor's schedules). Exponential like
/// the search, and slower on real chains (the states below the answer are
/// all visited): the planner reports the cheap floor
/// [`memory_floor`](super::memory_floor) as `optimal`'s least
/// instead, a lower bound.
pub fn least_budget(chain: &Chain, progress: &mut Progress<'_>) -> Result<u64, SolveError> {
    let model = state::Model::new(chain, Class::All);
    Ok(search::least_peak(&model, Limits::default(), progress)?.peak_bytes)
}

/// `optimal` for one budget (the planner's per-budget dispatch): the true
/// optimum for `budget`.
pub fn solve(problem: &Problem<'_>, progress: &mut Progress<'_>) -> Result<Solution, SolveError> {
    let (chain, algorithm, budget) = (problem.chain, problem.algorithm, problem.budget);
    let found = search(chain, budget, Class::All, Limits::default(), progress)?;
    Ok(match found {
        Some(f) => Solution {
            algorithm,
            budget_bytes: budget,
            detail: format!("exact: {} states searched", f.states),
            predicted_seconds: Some(f.seconds),
            predicted_peak_bytes: Some(f.peak_bytes),
            ops: Some(f.ops),
        },
        None => Solution {
            algorithm,
            budget_bytes: budget,
            ops: None,
            predicted_seconds: None,
            predicted_peak_bytes: None,
            detail: "no sequence of operations fits this budget".into(),
        },
    })
}
