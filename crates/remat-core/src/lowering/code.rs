//! The Python to paste into a training script for a plan: what the
//! explorer's Code card shows and `remat export --code` prints, written
//! from the same lowered plan ([`lowered::lower`](super::lowered::lower))
//! so that the page and the CLI give the same text to the byte.
//!
//! Three forms, each headed by what the simulator predicts for it (peak,
//! step time, and in what it differs from the plan):
//! - **PyTorch**: `remat_torch.apply_plan(model, PLAN, batch)` puts stock
//!   `torch.utils.checkpoint` regions on the model once; the loop is the
//!   user's own, and nothing of Remat runs in it.
//! - **transformers**: the same with the model's per-layer switches.
//! - **remat_torch**: `remat_torch.checkpointed`, which runs the plan
//!   itself, operation by operation (any algorithm's, offloads included).
//!
//! The plan or schedule is inlined as JSON in a raw triple-quoted string:
//! JSON never holds three unescaped quotes in a row, and its escapes reach
//! `json.loads` untouched in a raw string.

use super::lowered::{Fidelity, LoweredPlan, Target};
use crate::format::ScheduleFile;
use crate::model::units::{format_bytes, format_seconds};

/// One snippet and what it is predicted to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Snippet {
    /// `pytorch`, `transformers` or `remat_torch`.
    pub form: &'static str,
    /// Its name for people.
    pub title: &'static str,
    /// The Python, ready to paste.
    pub code: String,
    /// The simulator's peak for this form.
    pub peak_bytes: u64,
    /// The simulator's step time for this form.
    pub makespan_seconds: f64,
    /// makespan / sequential − 1.
    pub overhead: f64,
    /// `exact` or `differs` (from the plan).
    pub fidelity: &'static str,
    /// The peak is within the plan's budget (a lowered form can exceed it).
    pub fits: bool,
}

/// The snippet applying a lowered plan (`--to pytorch` or `transformers`)
/// with `remat_torch.apply_plan`.
pub fn apply_plan_snippet(plan: &LoweredPlan) -> Snippet {
    let judged = &plan.judged;
    let (form, title, lowered) = match plan.format {
        Target::Pytorch => ("pytorch", "PyTorch: checkpoint regions", "regions"),
        Target::Transformers => (
            "transformers",
            "transformers: per-layer switches",
            "switches",
        ),
    };
    let row = judged.form(lowered).or(judged.forms.get(1));
    let (peak, time, overhead, fits) = row.map_or((0, 0.0, 0.0, false), |f| {
        (f.peak_bytes, f.makespan_seconds, f.overhead, f.fits)
    });
    let json = serde_json::to_string(plan).expect("a lowered plan serializes");
    let mut code = header(plan, peak, fits, time, overhead);
    match plan.format {
        Target::Pytorch => {
            code.push_str(
                "# Stock torch.utils.checkpoint over stage ranges (use_reentrant=False, early_stop=False),\n\
                 # put on the model once; nothing of Remat runs in the training loop.\n",
            );
        }
        Target::Transformers => {
            let on: Vec<&str> = (plan.layers.iter().flatten())
                .filter(|l| l.gradient_checkpointing)
                .map(|l| l.module.as_str())
                .collect();
            let total = plan.layers.as_ref().map_or(0, Vec::len);
            code.push_str(&format!(
                "# transformers' gradient_checkpointing on {} of {total} layers ({}), use_reentrant=False;\n\
                 # the other layers keep their activations. Nothing of Remat runs in the training loop.\n",
                on.len(),
                if on.is_empty() { "none".to_string() } else { on.join(", ") }
            ));
        }
    }
    fidelity_lines(&mut code, judged);
    let batch = match plan.format {
        Target::Pytorch => ", batch",
        Target::Transformers => "",
    };
    code.push_str(&format!(
        "# `model` is your model as remat_torch.describe_chain described it{}.\n\
         import json\n\
         import remat_torch\n\
         \n\
         PLAN = json.loads(r\"\"\"{json}\"\"\")\n\
         applied = remat_torch.apply_plan(model, PLAN{batch})\n\
         # The form applied and its predicted peak; a note says why if it is not the one above.\n\
         print(applied.form, applied.predicted, applied.note)\n",
        if batch.is_empty() {
            ""
        } else {
            ", `batch` one training batch (model(batch), or model(**batch) for a dict)"
        }
    ));
    Snippet {
        form,
        title,
        code,
        peak_bytes: peak,
        makespan_seconds: time,
        overhead,
        fidelity: judged.fidelity,
        fits,
    }
}

/// The snippet running `schedule` with `remat_torch.checkpointed`: the
/// plan exactly, with its predicted peak and time (`peak_bytes`,
/// `makespan_seconds`, `overhead`: the simulator's on the chain).
pub fn checkpointed_snippet(
    schedule: &ScheduleFile,
    peak_bytes: u64,
    makespan_seconds: f64,
    overhead: f64,
) -> Snippet {
    let json = serde_json::to_string(schedule).expect("a schedule serializes");
    let menus = crate::schedule::menu_choices(&schedule.ops);
    let chain_arg = if menus.is_empty() {
        ""
    } else {
        ", chain=\"chain.json\""
    };
    let mut code = format!(
        "# Remat plan for \"{}\": {} at budget {} ({} operations).\n\
         # Run by remat_torch.checkpointed, operation by operation: the plan itself.\n\
         # Predicted: peak {}, step {} ({:+.1} %), the wrapper's own cost not included.\n",
        schedule.chain_name,
        super::lowered::algorithm_of(schedule),
        format_bytes(schedule.budget_bytes),
        schedule.ops.len(),
        format_bytes(peak_bytes),
        format_seconds(makespan_seconds),
        100.0 * overhead
    );
    if !menus.is_empty() {
        code.push_str(
            "# It runs selective-checkpointing policies: chain= is the chain file describe_chain wrote\n\
             # (the schedule numbers the policies, the chain names them).\n",
        );
    }
    code.push_str(&format!(
        "# `model` is your model as remat_torch.describe_chain described it, `loss_fn(output, target)`\n\
         # your loss.\n\
         import json\n\
         import remat_torch\n\
         \n\
         SCHEDULE = json.loads(r\"\"\"{json}\"\"\")\n\
         step = remat_torch.checkpointed(model, SCHEDULE, loss=loss_fn{chain_arg})\n\
         # In the loop, instead of loss_fn(model(batch), target).backward():\n\
         #     loss = step(batch, target)\n"
    ));
    Snippet {
        form: "remat_torch",
        title: "remat_torch: the plan itself",
        code,
        peak_bytes,
        makespan_seconds,
        overhead,
        fidelity: "exact",
        fits: peak_bytes <= schedule.budget_bytes,
    }
}

/// The plan's name and the form's prediction, as comment lines.
fn header(plan: &LoweredPlan, peak: u64, fits: bool, time: f64, overhead: f64) -> String {
    format!(
        "# Remat plan for \"{}\": {} at budget {} ({} stages).\n\
         # Predicted: peak {}{}, step {} ({:+.1} %).\n",
        plan.chain,
        plan.algorithm,
        format_bytes(plan.budget_bytes),
        plan.stages,
        format_bytes(peak),
        if fits { "" } else { ", over the budget" },
        format_seconds(time),
        100.0 * overhead
    )
}

/// `# Fidelity: exact …` or the differences, one comment line each.
fn fidelity_lines(code: &mut String, judged: &Fidelity) {
    if judged.fidelity == "exact" {
        code.push_str(
            "# Fidelity: exact (the simulator gives this form the plan's peak and time).\n",
        );
        return;
    }
    code.push_str("# Fidelity: differs from the plan:\n");
    for d in &judged.differences {
        code.push_str(&format!("#   - {d}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Predicted;
    use crate::lowering::lowered::lower;
    use crate::simulator::simulate;

    fn plan(algorithm: &str, ops: Vec<crate::Op>) -> (crate::Chain, ScheduleFile) {
        let chain = crate::examples::by_name("gpt2-cpu-torch").unwrap();
        let t = simulate(&chain, &ops).unwrap();
        let predicted = Predicted {
            makespan_seconds: t.makespan_seconds,
            peak_bytes: t.peak_bytes,
        };
        let schedule = ScheduleFile::new(&chain, algorithm, t.peak_bytes, None, predicted, ops);
        (chain, schedule)
    }

    /// The inlined plan is the plan: reading the JSON back out of the
    /// raw string gives `remat export --json`'s object. Fails if the
    /// string were escaped (a `\"` doubled) or cut.
    #[test]
    fn the_inlined_plan_reads_back() {
        let chain = crate::examples::by_name("gpt2-cpu-torch").unwrap();
        let (chain, schedule) = plan(
            "sequential",
            crate::solvers::sequential::schedule(&chain, 2),
        );
        let lowered = lower(&chain, &schedule, Target::Pytorch, &[]).unwrap();
        let s = apply_plan_snippet(&lowered);
        let inside = s.code.split("r\"\"\"").nth(1).unwrap();
        let json = inside.split("\"\"\"").next().unwrap();
        let back: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(back, serde_json::to_value(&lowered).unwrap());
        assert_eq!(
            s.peak_bytes,
            lowered.judged.form("regions").unwrap().peak_bytes
        );
        assert!(s
            .code
            .contains("remat_torch.apply_plan(model, PLAN, batch)"));
    }
}
