//! The bounds of the budget axis and the one rule for moving along it.
//!
//! * M_high ([`max_useful_budget`]): store-all's peak, the most memory worth
//!   giving;
//! * M_low of a persistent schedule: [`persistent::min_budget`] (exact
//!   bytes) and [`persistent::min_budget_met`] (what a table's lattice
//!   meets) — the DP's own recursion, so it lives with the DP;
//! * the floor with offloading ([`offload_min_budget`]);
//! * α → budget ([`budget_at_ratio`]), shared by the CLI's sweep, the
//!   explorer and [`crate::sweep`].
//!
//! Below every algorithm but store-all: nothing here calls a solver.
//!
//! [`persistent::min_budget`]: super::persistent::min_budget
//! [`persistent::min_budget_met`]: super::persistent::min_budget_met

use super::store_all;
use crate::model::Chain;
use crate::simulator::{simulate_with, SimOptions};

/// A budget below which no schedule can run, however much it offloads:
/// some operation needs its input, its output and its gradients at once
/// (F^ℓ with a^{ℓ-1}, a^ℓ and δ^L; B^ℓ with a^{ℓ-1}, ā^ℓ, δ^ℓ, δ^{ℓ-1}).
pub fn offload_min_budget(chain: &Chain) -> u64 {
    let seed = chain.gradient_bytes(chain.len());
    (1..=chain.len())
        .map(|l| {
            let s = chain.stage(l);
            let input = chain.output_bytes(l - 1);
            let forward = input + s.output_bytes + s.forward_overhead() + seed;
            let backward = input + chain.backward_bytes(l);
            forward.max(backward)
        })
        .max()
        .unwrap_or(0)
}

/// The budget at memory ratio α ∈ [0, 1] between `m_low` (α = 0) and
/// `m_high` (α = 1): (1 − α)·M_low + α·M_high, rounded to a byte (POFO
/// Section 5.2). The one definition the CLI's sweep and the explorer share.
///
/// ```
/// assert_eq!(remat_core::solvers::budget_at_ratio(100, 200, 0.25), 125);
/// ```
pub fn budget_at_ratio(m_low: u64, m_high: u64, alpha: f64) -> u64 {
    m_low + (m_high.saturating_sub(m_low) as f64 * alpha).round() as u64
}

/// M_high: the peak of `store-all`, the most memory worth giving.
pub fn max_useful_budget(chain: &Chain) -> u64 {
    simulate_with(chain, &store_all::schedule(chain), SimOptions::default())
        .expect("store-all is valid on every chain")
        .peak_bytes
}
