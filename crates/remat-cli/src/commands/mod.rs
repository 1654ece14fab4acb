//! One module per subcommand, each a function from its typed arguments
//! (`crate::args`) to a report on stdout, or a [`CliError`](crate::error::CliError).

pub mod algorithms;
pub mod bench;
pub mod convert;
pub mod examples;
pub mod export;
pub mod simulate;
pub mod solve;
pub mod sweep;

use crate::args::PlanFlags;
use remat_core::solvers::persistent::{min_budget_met, Variant};
use remat_core::solvers::Options;
use remat_core::Chain;

/// The solver options a planning command's shared flags ask for, with the
/// link `bandwidth`.
fn plan_options(flags: &PlanFlags, bandwidth: Option<f64>) -> Options {
    let mut o = Options {
        bandwidth_bytes_per_s: bandwidth,
        max_table_bytes: flags.max_table.0,
        loss_step: flags.loss_step.into(),
        ..Options::default()
    };
    if let Some(slots) = flags.slots {
        o.slots = slots;
        o.offload_slots = slots;
    }
    o
}

/// The least budget rotor meets with these options (its slot policy and
/// grid), at most M_high, where its planner answers store-all. O(L³) per
/// lattice step: callers bound L first.
fn rotor_m_low(chain: &Chain, opts: &Options, m_high: u64) -> u64 {
    min_budget_met(
        chain,
        Variant::Rotor,
        opts.slot_policy,
        opts.slots,
        opts.max_table_bytes,
        Some(m_high),
    )
    .map_or(m_high, |m| m.bytes)
    .min(m_high)
}
