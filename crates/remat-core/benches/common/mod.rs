//! What more than one benchmark builds.

use remat_core::solvers::persistent::{Table, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Options};
use remat_core::Chain;

/// Rotor's planner up to M_high, as `remat solve` and the page build it
/// (`Table::build`: breakpoints where they fit, the 500-slot grid
/// otherwise).
pub fn rotor_planner(chain: &Chain) -> Table {
    let (top, options) = (max_useful_budget(chain), Options::default());
    Table::build(chain, Variant::Rotor, top, &options, &mut no_progress()).unwrap()
}
