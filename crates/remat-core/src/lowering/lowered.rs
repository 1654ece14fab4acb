//! A plan lowered to what a training script runs without Remat's runtime:
//! nested `torch.utils.checkpoint` regions (`--to pytorch`) or transformers'
//! per-layer switches (`--to transformers`), each form judged by the
//! simulator beside the plan. What `remat export --json` writes and
//! `remat_torch.apply_plan` reads; the explorer computes the same for the
//! plan on screen ([`lower`]), so the page and the CLI cannot disagree.
//!
//! What can be lowered, and why the forms differ from the plan, is
//! [`pytorch`](super::pytorch)'s documentation. Cost: one simulation per
//! form (six at most), O(n) each for n operations.

use super::pytorch::{self, LowerError, Region, SharedGradient};
use crate::format::ScheduleFile;
use crate::model::units::{format_bytes, format_seconds};
use crate::model::Chain;
use crate::simulator::{judge, SimError, Trace};
use serde::Serialize;

/// The form to lower a plan to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Nested checkpoint regions over stage ranges.
    Pytorch,
    /// transformers' per-layer `gradient_checkpointing` switches.
    Transformers,
}

/// Why a plan cannot be lowered to a target.
#[derive(Debug, thiserror::Error)]
pub enum LowerFailure {
    /// The schedule is not a set of nested regions.
    #[error(transparent)]
    Regions(#[from] LowerError),
    /// The schedule does not run on the chain.
    #[error("{0}")]
    Invalid(SimError),
    /// transformers' switches cannot give a layer a policy of its own.
    #[error("the plan runs option {option} of stage {stage}'s menu ({policy}); transformers' per-layer switches run one checkpoint function for every layer, so they cannot give layers policies of their own: export --to pytorch (each stage's policy as a selective checkpoint), or run the plan with remat_torch.checkpointed")]
    MenuOption {
        stage: usize,
        option: u8,
        policy: String,
    },
    /// The chain's stages name no decoder layers.
    #[error("chain \"{chain}\" names no repeated layers (a stage `module` like `model.layers.3`); describe the model with remat_torch.describe_chain, or export --to pytorch")]
    NoLayers { chain: String },
}

/// `remat export --to pytorch|transformers --json`: what
/// `remat_torch.apply_plan` reads, and the forms judged by the simulator.
#[derive(Clone, Debug, Serialize)]
pub struct LoweredPlan {
    /// `pytorch` or `transformers`.
    pub format: Target,
    pub chain: String,
    pub stages: usize,
    pub algorithm: String,
    pub budget_bytes: u64,
    /// Each stage's `module` from the chain (null where it names none).
    pub modules: Vec<Option<String>>,
    /// Each stage's `parameters` from the chain (the trainable parameters
    /// it reads, by qualified name): which weights two stages share, where
    /// `modules` may name a whole parent a stage runs a part of. Absent
    /// when the chain lists none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Vec<Vec<String>>>,
    /// The plan's regions, nested (1-based stages).
    pub regions: Vec<Region>,
    /// `pytorch`: the stages the one-stage form checkpoints alone (those in
    /// some region that are one module each), for a model that takes only
    /// per-module wrappers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_stage: Option<Vec<usize>>,
    /// `transformers`: each layer stage and whether its switch is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<LayerSwitch>>,
    /// The keyword arguments every checkpoint call gets.
    pub checkpoint_kwargs: CheckpointKwargs,
    /// The shared gradients (tied weights) the export was told of.
    pub shared_gradients: Vec<SharedGradient>,
    /// The chain counts the parameter gradients (g^ℓ): a tied weight's
    /// gradient is in it already, and the forms need no shared gradient
    /// (`apply_plan` then does not ask for them).
    pub parameter_gradients_in_chain: bool,
    /// The stages the plan runs with a menu option, each outside every
    /// region: `apply_plan` runs each under `checkpoint` with that
    /// policy's selective-checkpointing context (`[]`: none).
    pub policies: Vec<Policy>,
    #[serde(flatten)]
    pub judged: Fidelity,
}

/// One entry of `"policies"`.
#[derive(Clone, Debug, Serialize)]
pub struct Policy {
    pub stage: usize,
    pub option: u8,
    pub policy: String,
}

/// `use_reentrant=False, early_stop=False`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CheckpointKwargs {
    pub use_reentrant: bool,
    pub early_stop: bool,
}

/// One decoder layer of `--to transformers`.
#[derive(Clone, Debug, Serialize)]
pub struct LayerSwitch {
    pub stage: usize,
    pub module: String,
    pub gradient_checkpointing: bool,
}

/// Whether the lowered form is the plan, and every form judged.
#[derive(Clone, Debug, Serialize)]
pub struct Fidelity {
    /// `exact` (the simulator gives the lowered form the plan's peak and
    /// time) or `differs`.
    pub fidelity: &'static str,
    /// What the lowered form does differently, one sentence each.
    pub differences: Vec<String>,
    pub forms: Vec<Form>,
}

impl Fidelity {
    /// The form judged under this name (`plan`, `regions`, `switches`, …).
    pub fn form(&self, name: &str) -> Option<&Form> {
        self.forms.iter().find(|f| f.form == name)
    }
}

/// One form of the step and what the simulator predicts for it.
#[derive(Clone, Debug, Serialize)]
pub struct Form {
    /// `plan`, `regions`, `one-stage`, `switches`, `every-stage`,
    /// `every-layer`, `checkpoint_sequential`, `store-all`.
    pub form: &'static str,
    /// In words, for the text table.
    pub label: String,
    /// Its checkpoint regions (`plan`: the plan's).
    pub regions: Vec<Region>,
    pub peak_bytes: u64,
    pub makespan_seconds: f64,
    /// makespan / sequential − 1.
    pub overhead: f64,
    /// Peak within the schedule's budget.
    pub fits: bool,
}

/// A form before it is judged: its name in the JSON, its label in the
/// table, its checkpoint regions.
type Candidate = (&'static str, String, Vec<Region>);

/// The schedule's algorithm, or `hand-written` where it names none.
pub fn algorithm_of(schedule: &ScheduleFile) -> &str {
    if schedule.algorithm.is_empty() {
        "hand-written"
    } else {
        &schedule.algorithm
    }
}

/// `schedule` (made for `chain`) lowered to `target`, every form judged.
/// `shared`: the parameters two stages share whose gradient stock
/// PyTorch's one backward holds apart (`--shared-gradient`).
///
/// ```
/// use remat_core::lowering::lowered::{lower, Target};
/// use remat_core::format::{Predicted, ScheduleFile};
/// use remat_core::simulator::simulate;
///
/// let chain = remat_core::examples::teaching();
/// let ops = remat_core::solvers::store_all::schedule(&chain);
/// let t = simulate(&chain, &ops).unwrap();
/// let predicted = Predicted { makespan_seconds: t.makespan_seconds, peak_bytes: t.peak_bytes };
/// let schedule = ScheduleFile::new(&chain, "store-all", t.peak_bytes, None, predicted, ops);
/// let plan = lower(&chain, &schedule, Target::Pytorch, &[]).unwrap();
/// assert_eq!(plan.judged.fidelity, "exact");
/// assert!(plan.judged.form("regions").unwrap().fits);
/// ```
pub fn lower(
    chain: &Chain,
    schedule: &ScheduleFile,
    target: Target,
    shared: &[SharedGradient],
) -> Result<LoweredPlan, LowerFailure> {
    let n = chain.len();
    let tree = pytorch::regions(&schedule.ops, n)?;
    let modules: Vec<Option<String>> = (chain.stages.iter()).map(|s| s.module.clone()).collect();
    let parameters = (chain.stages.iter().any(|s| !s.parameters.is_empty()))
        .then(|| chain.stages.iter().map(|s| s.parameters.clone()).collect());
    let options = crate::schedule::menu_choices(&schedule.ops);
    if let (Target::Transformers, Some(&(stage, option))) = (target, options.first()) {
        let policy = (chain.stages.get(stage - 1)).map_or("?", |s| s.policy(option as usize));
        return Err(LowerFailure::MenuOption {
            stage,
            option,
            policy: policy.to_string(),
        });
    }
    let policies = (options.iter())
        .filter(|&&(l, k)| l >= 1 && l <= n && (k as usize) < chain.stage(l).option_count())
        .map(|&(l, k)| Policy {
            stage: l,
            option: k,
            policy: chain.stage(l).policy(k as usize).to_string(),
        })
        .collect();
    let (forms, one_stage, layers) = match target {
        Target::Transformers => {
            let layers = pytorch::layer_stages(chain);
            if layers.is_empty() {
                return Err(LowerFailure::NoLayers {
                    chain: chain.name.clone(),
                });
            }
            let forms = transformers_forms(chain, &tree, &layers);
            let on = &forms[0].2;
            let switches = (layers.iter())
                .map(|&l| LayerSwitch {
                    stage: l,
                    module: modules[l - 1].clone().unwrap_or_default(),
                    gradient_checkpointing: on.iter().any(|r| r.first == l),
                })
                .collect();
            (forms, None, Some(switches))
        }
        Target::Pytorch => (
            pytorch_forms(chain, &tree),
            Some(one_stage_stages(chain, &tree)),
            None,
        ),
    };
    let mut judged = fidelity(chain, schedule, &tree, forms, shared)?;
    if target == Target::Transformers {
        let layers = pytorch::layer_stages(chain);
        let stored: Vec<String> = (pytorch::recomputed_stages(&tree).iter())
            .filter(|l| !layers.contains(l))
            .map(|&l| format!("{l} ({})", modules[l - 1].as_deref().unwrap_or("unnamed")))
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
    Ok(LoweredPlan {
        format: target,
        chain: chain.name.clone(),
        stages: n,
        algorithm: algorithm_of(schedule).to_string(),
        budget_bytes: schedule.budget_bytes,
        modules,
        parameters,
        regions: tree,
        one_stage,
        layers,
        checkpoint_kwargs: CheckpointKwargs {
            use_reentrant: false,
            early_stop: false,
        },
        shared_gradients: shared.to_vec(),
        parameter_gradients_in_chain: chain.counts_parameter_gradients(),
        policies,
        judged,
    })
}

/// The segments form (`--to pytorch-segments` with a chain): the plan and
/// the `--to pytorch` forms judged, without the apply plan.
pub fn segments_fidelity(
    chain: &Chain,
    schedule: &ScheduleFile,
    shared: &[SharedGradient],
) -> Result<Fidelity, LowerFailure> {
    let tree = pytorch::regions(&schedule.ops, chain.len())?;
    fidelity(chain, schedule, &tree, pytorch_forms(chain, &tree), shared)
}

/// What the framework gives without a plan: `checkpoint_sequential` with
/// ⌈√L⌉ segments, and a plain step.
fn baselines(n: usize) -> [Candidate; 2] {
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
fn pytorch_forms(chain: &Chain, tree: &[Region]) -> Vec<Candidate> {
    let n = chain.len();
    let wrappable = pytorch::per_module_stages(chain);
    let one_stage = (one_stage_stages(chain, tree).into_iter())
        .map(Region::single)
        .collect();
    let every_stage = (wrappable.into_iter())
        .filter(|&l| l < n)
        .map(Region::single)
        .collect();
    [
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
            every_stage,
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
    (pytorch::recomputed_stages(tree).into_iter())
        .filter(|l| wrappable.contains(l))
        .collect()
}

/// The transformers form: the layer stages the plan recomputes switched on.
fn transformers_forms(chain: &Chain, tree: &[Region], layers: &[usize]) -> Vec<Candidate> {
    let recomputed = pytorch::recomputed_stages(tree);
    let switched = (layers.iter())
        .filter(|l| recomputed.contains(l))
        .map(|&l| Region::single(l))
        .collect();
    [
        (
            "switches",
            "transformers, per-layer switches".to_string(),
            switched,
        ),
        (
            "every-layer",
            "gradient_checkpointing_enable() (every layer)".to_string(),
            layers.iter().map(|&l| Region::single(l)).collect(),
        ),
    ]
    .into_iter()
    .chain(baselines(chain.len()))
    .collect()
}

fn form(
    name: &'static str,
    label: String,
    regions: Vec<Region>,
    trace: &Trace,
    budget: u64,
) -> Form {
    Form {
        form: name,
        label,
        regions,
        peak_bytes: trace.peak_bytes,
        makespan_seconds: trace.makespan_seconds,
        overhead: trace.overhead(),
        fits: trace.fits(budget),
    }
}

/// Judges the plan and every form; `forms[0]` is the lowered plan, whose
/// peak and time decide "exact".
fn fidelity(
    chain: &Chain,
    schedule: &ScheduleFile,
    tree: &[Region],
    forms: Vec<Candidate>,
    shared: &[SharedGradient],
) -> Result<Fidelity, LowerFailure> {
    let budget = schedule.budget_bytes;
    let bandwidth = (schedule.bandwidth_bytes_per_s).or(chain.bandwidth_bytes_per_s);
    let plan = judge(chain, &schedule.ops, budget, bandwidth).map_err(LowerFailure::Invalid)?;
    let label = "plan (remat_torch.checkpointed)".to_string();
    let mut rows = vec![form("plan", label, tree.to_vec(), &plan, budget)];
    let mut lowered_ops = None;
    // The plan's menu options sit on stages no region recomputes
    // (`pytorch::regions` checks): the lowered plan and its one-stage form
    // keep them; the baselines are the framework's own, without.
    let options = crate::schedule::menu_choices(&schedule.ops);
    for (name, label, regions) in forms {
        let keeps = matches!(name, "regions" | "one-stage");
        let options = if keeps { &options[..] } else { &[] };
        let judged = pytorch::judge_regions(chain, shared, regions, options, budget)
            .map_err(LowerFailure::Invalid)?;
        lowered_ops.get_or_insert(judged.ops);
        rows.push(form(name, label, judged.regions, &judged.trace, budget));
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
    differences.extend(pytorch::differences(chain, &lowered_ops, shared));
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
