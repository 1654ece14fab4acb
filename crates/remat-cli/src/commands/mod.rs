//! One module per subcommand, each a function from its typed arguments
//! (`crate::args`) to a report on stdout, or a [`CliError`](crate::error::CliError).

pub mod algorithms;
pub mod bench;
pub mod checkpoints;
pub mod convert;
pub mod examples;
pub mod export;
pub mod maxbatch;
pub mod pipeline;
mod progress;
pub mod simulate;
pub mod solve;
pub mod sweep;

use crate::args::PlanFlags;
use progress::TerminalProgress;
use remat_core::solvers::{DeltaSettings, Options};
use remat_core::Chain;

/// A text report's first lines, labels `width` wide: the chain's name and
/// length, and the batch it was measured on when its file says.
fn say_chain(chain: &Chain, width: usize) {
    say!("{:<width$}{} ({} stages)", "chain", chain.name, chain.len());
    if let Some(batch) = chain.inputs_summary() {
        say!("{:<width$}{batch}", "batch");
    }
    if let Some(words) = parameter_gradient_words(chain) {
        // "gradients" fits the narrowest label column ("algorithm"'s).
        say!("{:<width$}{words}", "gradients");
    }
}

/// Where the parameter gradients are, when the chain counts them: a budget
/// and a peak then include them (docs/model.md, "Parameter gradients").
fn parameter_gradient_words(chain: &Chain) -> Option<String> {
    let total = chain.parameter_gradient_total();
    (total > 0).then(|| {
        format!(
            "{} of parameter gradients in the chain, from the backward that creates each (zero_grad(set_to_none=True)); weights and optimizer state are not",
            remat_core::model::units::format_bytes(total)
        )
    })
}

/// The solver options a planning command's shared flags ask for, with the
/// link `bandwidth`.
fn plan_options(flags: &PlanFlags, bandwidth: Option<f64>) -> Options {
    let mut o = Options {
        bandwidth_bytes_per_s: bandwidth,
        max_table_bytes: flags.max_table.0,
        loss_step: flags.loss_step.into(),
        delta: DeltaSettings {
            link_share: flags.link_share,
            trigger: flags.trigger,
            reload_limit: flags.reload_limit,
        },
        ..Options::default()
    };
    if let Some(slots) = flags.slots {
        o.slots = slots;
        o.offload_slots = slots;
        o.offload_slots_explicit = true;
    }
    o
}
