//! The judge: a schedule run with the budget as its memory limit.
//!
//! Every solver, the CLI, the explorer and the profiler's runner decide
//! "valid, and within the budget?" here and nowhere else: [`judge`] runs the
//! schedule, [`Trace::fits`] compares its peak with the budget.

use super::{simulate_with, SimError, SimOptions, Trace};
use crate::model::Chain;
use crate::schedule::Op;

/// Runs `ops` on `chain` with `budget` as device memory limit (allocations
/// wait for transfers to free memory, POFO Section 5) and offloads and
/// prefetches at `bandwidth` (None: no link). Whether the result fits is
/// [`Trace::fits`]: an allocation that can never fit runs anyway, over the
/// limit, so the peak shows it.
///
/// ```
/// use remat_core::examples::by_name;
/// use remat_core::simulator::judge;
/// use remat_core::solvers::{max_useful_budget, solve, Algorithm, Options};
///
/// let chain = by_name("teaching").unwrap();
/// let budget = max_useful_budget(&chain) * 9 / 10; // 90 % of store-all's peak
/// let plan = solve(&chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
/// let trace = judge(&chain, plan.ops.as_deref().unwrap(), budget, None).unwrap();
/// assert!(trace.fits(budget));
/// ```
pub fn judge(
    chain: &Chain,
    ops: &[Op],
    budget: u64,
    bandwidth: Option<f64>,
) -> Result<Trace, SimError> {
    simulate_with(
        chain,
        ops,
        SimOptions {
            bandwidth,
            memory_limit: Some(budget),
        },
    )
}
