//! `remat export SCHEDULE --to pytorch|transformers|pytorch-segments`: a
//! schedule written in a form a training script runs without Remat's
//! runtime (see `remat_core::format::pytorch` for what can be expressed,
//! and why), with the simulator's verdict on each form next to the plan's.

use crate::args::{ExportArgs, ExportTarget};
use crate::error::{CliError, FileProblem, InFile, Result};
use crate::input;
use crate::report::{
    self, CheckpointKwargs, ExportReport, Fidelity, FormReport, LayerSwitch, LoweredReport,
    PolicyReport,
};
use remat_core::format::pytorch::{self, Region};
use remat_core::format::ScheduleFile;
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::simulator::judge;
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

fn algorithm(schedule: &ScheduleFile) -> &str {
    if schedule.algorithm.is_empty() {
        "hand-written"
    } else {
        &schedule.algorithm
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
        algorithm(schedule),
        format_bytes(schedule.budget_bytes),
        schedule.chain_name
    );
    let snippet = pytorch::snippet(&segs, &title);
    let judged = match chain {
        Some(chain) => {
            let tree = pytorch::regions(&schedule.ops, chain.len()).in_file(&a.schedule)?;
            Some(fidelity(
                a,
                chain,
                schedule,
                &tree,
                pytorch_forms(chain, &tree),
            )?)
        }
        None => None,
    };
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

/// A form of the step: its name in the JSON, its label in the table, its
/// checkpoint regions.
type Form = (&'static str, String, Vec<Region>);

/// What the framework gives without a plan: `checkpoint_sequential` with
/// ⌈√L⌉ segments, and a plain step.
fn baselines(n: usize) -> [Form; 2] {
    let k = pytorch::sqrt_segments(n);
    [
        (
            "checkpoint_sequential",
            format!("checkpoint_sequential, {k} segments"),
            pytorch::sequential_regions(n, k),
        ),
        (
            "store-all",
            "store-all (no checkpoint)".to_string(),
            Vec::new(),
        ),
    ]
}

/// The regions of each form of `--to pytorch`, with its name and label; the
/// first is the lowered plan.
fn pytorch_forms(chain: &Chain, tree: &[Region]) -> Vec<Form> {
    let n = chain.len();
    let wrappable = pytorch::per_module_stages(chain);
    let one_stage = one_stage_stages(chain, tree)
        .into_iter()
        .map(Region::single)
        .collect();
    vec![
        (
            "regions",
            "stock PyTorch, nested regions".to_string(),
            tree.to_vec(),
        ),
        (
            "one-stage",
            "stock PyTorch, per-module wrappers".to_string(),
            one_stage,
        ),
        (
            "every-stage",
            "every one-module stage checkpointed".to_string(),
            wrappable
                .into_iter()
                .filter(|&l| l < n)
                .map(Region::single)
                .collect(),
        ),
    ]
    .into_iter()
    .chain(baselines(n))
    .collect()
}

/// The stages the one-stage form checkpoints, each alone: those the plan
/// recomputes that are one module each.
fn one_stage_stages(chain: &Chain, tree: &[Region]) -> Vec<usize> {
    let wrappable = pytorch::per_module_stages(chain);
    pytorch::recomputed_stages(tree)
        .into_iter()
        .filter(|l| wrappable.contains(l))
        .collect()
}

/// The transformers form: the layer stages the plan recomputes switched on.
fn transformers_forms(chain: &Chain, tree: &[Region], layers: &[usize]) -> Vec<Form> {
    let n = chain.len();
    let recomputed = pytorch::recomputed_stages(tree);
    vec![
        (
            "switches",
            "transformers, per-layer switches".to_string(),
            layers
                .iter()
                .filter(|l| recomputed.contains(l))
                .map(|&l| Region::single(l))
                .collect(),
        ),
        (
            "every-layer",
            "gradient_checkpointing_enable() (every layer)".to_string(),
            layers.iter().map(|&l| Region::single(l)).collect(),
        ),
    ]
    .into_iter()
    .chain(baselines(n))
    .collect()
}

/// Judges the plan and every form; `forms[0]` is the lowered plan, whose
/// peak and time decide "exact".
fn fidelity(
    a: &ExportArgs,
    chain: &Chain,
    schedule: &ScheduleFile,
    tree: &[Region],
    forms: Vec<Form>,
) -> Result<Fidelity> {
    let budget = schedule.budget_bytes;
    let bandwidth = schedule
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let plan = judge(chain, &schedule.ops, budget, bandwidth)
        .map_err(FileProblem::Invalid)
        .in_file(&a.schedule)?;
    let row = |form, label, regions, trace: &remat_core::simulator::Trace| FormReport {
        form,
        label,
        regions,
        peak_bytes: trace.peak_bytes,
        makespan_seconds: trace.makespan_seconds,
        overhead: trace.overhead(),
        fits: trace.fits(budget),
    };
    let mut rows = vec![row(
        "plan",
        "plan (remat_torch.checkpointed)".to_string(),
        tree.to_vec(),
        &plan,
    )];
    let mut lowered_ops = None;
    // The plan's menu options sit on stages no region recomputes
    // (`pytorch::regions` checks): the lowered plan and its one-stage form
    // keep them; the baselines are the framework's own, without.
    let options = remat_core::schedule::menu_choices(&schedule.ops);
    for (form, label, regions) in forms {
        let keeps = matches!(form, "regions" | "one-stage");
        let options = if keeps { &options[..] } else { &[] };
        let judged = pytorch::judge_regions(chain, &a.shared_gradient, regions, options, budget)
            .map_err(FileProblem::Invalid)
            .in_file(&a.schedule)?;
        lowered_ops.get_or_insert(judged.ops);
        rows.push(row(form, label, judged.regions, &judged.trace));
    }
    let lowered = &rows[1];
    let exact =
        lowered.peak_bytes == plan.peak_bytes && lowered.makespan_seconds == plan.makespan_seconds;
    let mut differences = Vec::new();
    let lowered_ops = lowered_ops.unwrap_or_default();
    if lowered_ops != schedule.ops {
        differences.push(format!(
            "the plan's regions {} become {}",
            pytorch::describe_regions(tree),
            pytorch::describe_regions(&lowered.regions)
        ));
    }
    differences.extend(pytorch::differences(
        chain,
        &lowered_ops,
        &a.shared_gradient,
    ));
    if !exact {
        differences.push(format!(
            "predicted: peak {} → {}, time {} → {}",
            format_bytes(plan.peak_bytes),
            format_bytes(lowered.peak_bytes),
            format_seconds(plan.makespan_seconds),
            format_seconds(lowered.makespan_seconds)
        ));
    }
    Ok(Fidelity {
        fidelity: if exact { "exact" } else { "differs" },
        differences,
        forms: rows,
    })
}

fn lowered(
    a: &ExportArgs,
    target: ExportTarget,
    schedule: &ScheduleFile,
    chain: &Chain,
) -> Result<()> {
    let n = chain.len();
    let tree = pytorch::regions(&schedule.ops, n).in_file(&a.schedule)?;
    let modules: Vec<Option<&str>> = chain.stages.iter().map(|s| s.module.as_deref()).collect();
    let options = remat_core::schedule::menu_choices(&schedule.ops);
    if let (ExportTarget::Transformers, Some(&(stage, option))) = (target, options.first()) {
        return Err(CliError::BadValue {
            flag: "--to",
            message: format!(
                "the plan runs option {option} of stage {stage}'s menu ({}); transformers' per-layer switches run one checkpoint function for every layer, so they cannot give layers policies of their own: export --to pytorch (each stage's policy as a selective checkpoint), or run the plan with remat_torch.checkpointed",
                chain
                    .stages
                    .get(stage - 1)
                    .map_or("?", |s| s.policy(option as usize))
            ),
        });
    }
    let policies: Vec<PolicyReport> = options
        .iter()
        .filter(|&&(l, k)| l >= 1 && l <= n && (k as usize) < chain.stage(l).option_count())
        .map(|&(l, k)| PolicyReport {
            stage: l,
            option: k,
            policy: chain.stage(l).policy(k as usize).to_string(),
        })
        .collect();
    let (format, forms, one_stage, layers) = if target == ExportTarget::Transformers {
        let layers = pytorch::layer_stages(chain);
        if layers.is_empty() {
            return Err(CliError::BadValue {
                flag: "--chain",
                message: format!(
                    "chain \"{}\" names no repeated layers (a stage `module` like `model.layers.3`); describe the model with remat_torch.describe_chain, or export --to pytorch",
                    chain.name
                ),
            });
        }
        let forms = transformers_forms(chain, &tree, &layers);
        let on = &forms[0].2;
        let switches = layers
            .iter()
            .map(|&l| LayerSwitch {
                stage: l,
                module: modules[l - 1].unwrap_or_default(),
                gradient_checkpointing: on.iter().any(|r| r.first == l),
            })
            .collect();
        ("transformers", forms, None, Some(switches))
    } else {
        let forms = pytorch_forms(chain, &tree);
        let one_stage = one_stage_stages(chain, &tree);
        ("pytorch", forms, Some(one_stage), None)
    };
    let mut judged = fidelity(a, chain, schedule, &tree, forms)?;
    if target == ExportTarget::Transformers {
        let recomputed = pytorch::recomputed_stages(&tree);
        let layers = pytorch::layer_stages(chain);
        let stored: Vec<String> = recomputed
            .iter()
            .filter(|l| !layers.contains(l))
            .map(|&l| format!("{l} ({})", modules[l - 1].unwrap_or("unnamed")))
            .collect();
        if !stored.is_empty() {
            judged.differences.insert(
                1.min(judged.differences.len()),
                format!(
                    "the plan recomputes stage{} {}, which no per-layer switch reaches: stored",
                    if stored.len() == 1 { "" } else { "s" },
                    stored.join(", ")
                ),
            );
        }
    }
    let report = LoweredReport {
        format,
        chain: &chain.name,
        stages: n,
        algorithm: algorithm(schedule),
        budget_bytes: schedule.budget_bytes,
        modules,
        regions: &tree,
        one_stage,
        layers,
        checkpoint_kwargs: CheckpointKwargs {
            use_reentrant: false,
            early_stop: false,
        },
        shared_gradients: &a.shared_gradient,
        policies,
        judged,
    };
    if a.json {
        report::print(&report);
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
        pytorch::describe_regions(&tree),
        pytorch::nesting_depth(&tree)
    );
    if let Some(layers) = &report.layers {
        let on: Vec<String> = layers
            .iter()
            .filter(|l| l.gradient_checkpointing)
            .map(|l| l.module.to_string())
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
            report.modules[p.stage - 1].unwrap_or("unnamed"),
            p.policy
        );
    }
    print_fidelity(&report.judged);
    say!("");
    if format == "transformers" {
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
