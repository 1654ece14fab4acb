//! `remat export SCHEDULE --to pytorch|transformers|pytorch-segments`: a
//! schedule written in a form a training script runs without Remat's
//! runtime (see `remat_core::lowering::pytorch` for what can be expressed,
//! and why), with the simulator's verdict on each form next to the plan's.

use crate::args::{ExportArgs, ExportTarget};
use crate::error::{CliError, FileProblem, InFile, Result};
use crate::input;
use crate::report::{self, ExportReport};
use remat_core::format::ScheduleFile;
use remat_core::lowering::code;
use remat_core::lowering::lowered::{self, Fidelity, LowerFailure, Target};
use remat_core::lowering::pytorch;
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::Chain;

pub fn run(a: &ExportArgs) -> Result<()> {
    let schedule = input::schedule(&a.schedule)?;
    let chain = match &a.chain {
        Some(arg) => {
            let chain = input::chain(arg)?;
            if let Some(g) = a.shared_gradient.iter().find(|g| g.last > chain.len()) {
                return Err(CliError::BadValue {
                    flag: "--shared-gradient",
                    message: format!(
                        "stage {} is past the chain's {} stages",
                        g.last,
                        chain.len()
                    ),
                });
            }
            if let Some(warning) = schedule.check_chain(&chain).in_file(&a.schedule)? {
                eprintln!("warning: {}: {warning}", a.schedule.display());
            }
            Some(chain)
        }
        None => None,
    };
    match (a.to, chain) {
        (ExportTarget::PytorchSegments, chain) => segments(a, &schedule, chain.as_ref()),
        (target, Some(chain)) => lowered(a, target, &schedule, &chain),
        // clap requires --chain for these.
        (_, None) => unreachable!("--chain is required with --to pytorch and transformers"),
    }
}

fn segments(a: &ExportArgs, schedule: &ScheduleFile, chain: Option<&Chain>) -> Result<()> {
    let segs = pytorch::segments(&schedule.ops).in_file(&a.schedule)?;
    let n = segs.last().map_or(0, |s| s.last);
    if let Some(said) = schedule.stages.filter(|&said| said != n) {
        return Err(FileProblem::StagesDiffer { said, covered: n }).in_file(&a.schedule);
    }
    let title = format!(
        "Remat schedule: {} at budget {} for chain \"{}\" ({n} stages)",
        lowered::algorithm_of(schedule),
        format_bytes(schedule.budget_bytes),
        schedule.chain_name
    );
    let snippet = pytorch::snippet(&segs, &title);
    let judged = match chain {
        Some(chain) => Some(
            lowered::segments_fidelity(chain, schedule, &a.shared_gradient)
                .map_err(|e| failure(a, e))?,
        ),
        None => None,
    };
    if a.code {
        print!("{snippet}");
        return Ok(());
    }
    if a.json {
        report::print(&ExportReport {
            format: "pytorch-segments",
            stages: n,
            segments: &segs,
            checkpoint_sequential_k: pytorch::sequential_k(&segs),
            snippet: &snippet,
            judged,
        });
    } else {
        let listed: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
        say!("segments   {}", listed.join(", "));
        if let Some(judged) = &judged {
            print_fidelity(judged);
        }
        say!("");
        say!("{}", snippet.trim_end());
    }
    Ok(())
}

/// A lowering failure as the CLI says it: the schedule file's problem, or
/// the flag that asked for what cannot be.
fn failure(a: &ExportArgs, e: LowerFailure) -> CliError {
    let in_schedule = |problem: FileProblem| CliError::File {
        path: a.schedule.display().to_string(),
        problem,
    };
    match e {
        LowerFailure::Regions(e) => in_schedule(e.into()),
        LowerFailure::Invalid(e) => in_schedule(FileProblem::Invalid(e)),
        e @ LowerFailure::MenuOption { .. } => CliError::BadValue {
            flag: "--to",
            message: e.to_string(),
        },
        e @ LowerFailure::NoLayers { .. } => CliError::BadValue {
            flag: "--chain",
            message: e.to_string(),
        },
    }
}

fn lowered(
    a: &ExportArgs,
    target: ExportTarget,
    schedule: &ScheduleFile,
    chain: &Chain,
) -> Result<()> {
    let target = match target {
        ExportTarget::Transformers => Target::Transformers,
        _ => Target::Pytorch,
    };
    let report =
        lowered::lower(chain, schedule, target, &a.shared_gradient).map_err(|e| failure(a, e))?;
    if a.json {
        report::print(&report);
        return Ok(());
    }
    if a.code {
        print!("{}", code::apply_plan_snippet(&report).code);
        return Ok(());
    }
    super::say_chain(chain, 11);
    say!(
        "{:<11}{} at budget {}",
        "plan",
        report.algorithm,
        format_bytes(report.budget_bytes)
    );
    say!(
        "{:<11}{}   (nesting depth {})",
        "regions",
        pytorch::describe_regions(&report.regions),
        pytorch::nesting_depth(&report.regions)
    );
    if let Some(layers) = &report.layers {
        let on: Vec<&str> = (layers.iter())
            .filter(|l| l.gradient_checkpointing)
            .map(|l| l.module.as_str())
            .collect();
        say!(
            "{:<11}gradient_checkpointing on {} of {} layers: {}",
            "switches",
            on.len(),
            layers.len(),
            if on.is_empty() {
                "none".to_string()
            } else {
                on.join(", ")
            }
        );
    }
    for p in &report.policies {
        say!(
            "{:<11}stage {} ({}) under selective checkpointing: {}",
            "policy",
            p.stage,
            report.modules[p.stage - 1].as_deref().unwrap_or("unnamed"),
            p.policy
        );
    }
    print_fidelity(&report.judged);
    say!("");
    if target == Target::Transformers {
        say!(
            "apply:     remat_torch.apply_plan(model, plan)   # plan: this command's --json output"
        );
        say!("           (activation_checkpointing_enable with use_reentrant=False, the switch of each");
        say!("           layer the plan stores turned off, early stop off in the others)");
    } else {
        say!("apply:     remat_torch.apply_plan(model, plan, batch)   # plan: this command's --json output");
        say!("           (nested torch.utils.checkpoint(..., use_reentrant=False, early_stop=False) over");
        say!("           stage ranges; one-stage regions where the model only takes per-module wrappers)");
    }
    Ok(())
}

fn print_fidelity(judged: &Fidelity) {
    say!("{:<11}{}", "fidelity", judged.fidelity);
    for d in &judged.differences {
        say!("{:<11}- {d}", "");
    }
    say!("");
    let width = judged
        .forms
        .iter()
        .map(|f| f.label.chars().count())
        .max()
        .unwrap_or(0);
    say!(
        "{:<width$}  {:>12}  {:>12}  {:>9}  fits",
        "form",
        "peak",
        "time",
        "overhead"
    );
    for f in &judged.forms {
        say!(
            "{:<width$}  {:>12}  {:>12}  {:>+8.1}%  {}",
            f.label,
            format_bytes(f.peak_bytes),
            format_seconds(f.makespan_seconds),
            100.0 * f.overhead,
            if f.fits { "yes" } else { "no" }
        );
    }
}
