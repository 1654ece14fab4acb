//! The page: the root `App` (app.rs), one component per view, and what the
//! views share — chart helpers (chart.rs) and the caret notation
//! (notation.rs).

mod app;
pub mod chain;
pub mod chart;
pub mod compare;
pub mod controls;
pub mod guide;
pub mod memory;
pub mod notation;
pub mod stale;
pub mod stepper;
pub mod sweep;
pub mod timeline;
pub mod welcome;

pub use app::App;

use remat_core::Op;

/// For each op, whether it recomputes a stage already computed once.
pub fn recompute_flags(ops: &[Op], stages: usize) -> Vec<bool> {
    let mut seen = vec![false; stages + 2];
    ops.iter()
        .map(|op| {
            if op.is_forward() {
                let l = op.stage().min(stages + 1);
                let again = seen[l];
                seen[l] = true;
                again
            } else {
                false
            }
        })
        .collect()
}
