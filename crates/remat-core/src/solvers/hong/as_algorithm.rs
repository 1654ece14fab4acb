//! Hong et al.'s least-peak set as one of Remat's algorithms: `remat solve
//! -a hong` (Algorithm 6, the PyTorch model) and `-a hong-chen`
//! (Algorithm 3, the Chen model).
//!
//! The set does not depend on the budget: it is the one of least peak in
//! the paper's model ([`optimal`]), and its schedule is [`schedule`]'s. So
//! the planner builds one [`Plan`] (the set, its schedule, the simulator's
//! time and peak of it) and answers every budget from it
//! ([`Plan::answer`]); Algorithm 3's O(n³) runs once per chain.
//!
//! What decides feasibility is the simulator's peak of that schedule, not
//! the paper's: the two accountings differ (see `solvers::hong`), so a
//! budget between the paper-model peak and the simulated one is refused.
//! A budget at M_high (store-all's peak) can be refused too: the schedule
//! recomputes, and a recomputed forward's workspace on top of the gradients
//! of the backward pass can exceed anything store-all holds (a stage with
//! no output but a forward workspace, checkpointed for free in the paper's
//! model). The set never changes with the budget; an infeasible answer says
//! what its schedule needs. Time plays no part: at a roomy budget the
//! schedule still recomputes.
//!
//! Complexity: O(n) (hong) or O(n³) time and O(n²) memory (hong-chen, at
//! most [`MAX_CHEN_STAGES`](super::MAX_CHEN_STAGES) stages) for the set, O(n) to build and simulate
//! its schedule, O(1) per budget.

use super::{optimal, schedule, CheckpointError, Model, Selection};
use crate::model::units::format_bytes;
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::{simulate_with, SimOptions, Trace};
use crate::solvers::api::{Algorithm, Progress, Solution, SolveError};

/// The memory model an algorithm of this family optimises; None for the
/// other algorithms.
pub fn model_of(algorithm: Algorithm) -> Option<Model> {
    match algorithm {
        Algorithm::Hong => Some(Model::PyTorch),
        Algorithm::HongChen => Some(Model::Chen),
        _ => None,
    }
}

/// The paper's name for a model, as the detail line writes it.
fn model_title(model: Model) -> &'static str {
    match model {
        Model::PyTorch => "PyTorch-model",
        Model::Chen => "Chen-model",
    }
}

/// "checkpoints 3, 6, 24; PyTorch-model peak 5.05 GiB".
pub fn describe(model: Model, selection: &Selection) -> String {
    let set: Vec<String> = selection
        .checkpoints
        .iter()
        .map(|c| c.to_string())
        .collect();
    format!(
        "checkpoints {}; {} peak {}",
        set.join(", "),
        model_title(model),
        format_bytes(selection.peak_bytes)
    )
}

/// The least-peak set of one model, its schedule, and what the simulator
/// measured of it: everything a budget's answer needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub algorithm: Algorithm,
    pub model: Model,
    /// The set and its peak in the paper's model.
    pub selection: Selection,
    pub ops: Vec<Op>,
    /// What the simulator measured of `ops` (Remat's accounting).
    pub trace: Trace,
}

/// Builds the [`Plan`] of `algorithm` (hong or hong-chen) for `chain`;
/// `progress` is told when it is done and may cancel.
pub fn plan(
    chain: &Chain,
    algorithm: Algorithm,
    progress: &mut Progress<'_>,
) -> Result<Plan, SolveError> {
    let model = model_of(algorithm).ok_or_else(|| {
        SolveError::BadOption(format!(
            "algorithm: {algorithm} is not one of Hong et al.'s (hong, hong-chen)"
        ))
    })?;
    let selection = optimal(chain, model).map_err(|e| match e {
        CheckpointError::TooLarge | CheckpointError::TooLong { .. } => {
            SolveError::TooLarge(e.to_string())
        }
        e => SolveError::BadOption(e.to_string()),
    })?;
    let ops =
        schedule(chain, &selection.checkpoints).expect("the optimal set is in 1..=n, ascending");
    let trace = simulate_with(chain, &ops, SimOptions::default())
        .expect("a checkpoint set's schedule is valid on every chain (tests/hong.rs)");
    if !progress(1.0) {
        return Err(SolveError::Cancelled);
    }
    Ok(Plan {
        algorithm,
        model,
        selection,
        ops,
        trace,
    })
}

impl Plan {
    /// The schedule when the simulator's peak of it fits `budget_bytes`,
    /// with the simulated time and peak as the predictions (the paper's
    /// peak is in `detail`); `ops: None` saying what it needs otherwise.
    pub fn answer(&self, budget_bytes: u64) -> Solution {
        let detail = describe(self.model, &self.selection);
        let fits = self.trace.fits(budget_bytes);
        Solution {
            algorithm: self.algorithm,
            budget_bytes,
            ops: fits.then(|| self.ops.clone()),
            predicted_seconds: fits.then_some(self.trace.makespan_seconds),
            predicted_peak_bytes: fits.then_some(self.trace.peak_bytes),
            detail: if fits {
                detail
            } else {
                format!(
                    "{detail}, but its schedule needs {} in Remat's accounting",
                    format_bytes(self.trace.peak_bytes)
                )
            },
        }
    }
}
