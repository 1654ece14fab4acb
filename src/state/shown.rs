//! The schedule on screen, what the simulator measured for it, and every
//! table-built algorithm at the same budget.

use crate::planning::current::Current;
use crate::planning::protocol::Summary;
use leptos::prelude::*;
use std::sync::Arc;

#[derive(Clone, Copy, Default)]
pub struct Shown {
    pub current: RwSignal<Option<Arc<Current>>>,
    /// The table-built algorithms at the current budget (the compare rows).
    pub summaries: RwSignal<Vec<Summary>>,
    /// The last plan's id (the DOM carries it so tests can wait on it).
    pub id: RwSignal<u64>,
    /// An exact re-plan building its own table in the worker, or an
    /// offloading algorithm solving this budget there, and how far.
    pub replanning: RwSignal<Option<f64>>,
    /// pofo's or offload-only's table for every budget being built before
    /// its first quick answer, and how far (`Task::Table`).
    pub table_build: RwSignal<Option<f64>>,
    /// The per-budget solve refining the quick answer on screen, and how
    /// far (`Task::Refine`); None when none is under way (done, stopped).
    pub refining: RwSignal<Option<f64>>,
    /// What Cancel stopped last (until the next plan is shown).
    pub cancelled: RwSignal<Option<String>>,
}

/// The plan on screen when it is not the plan of the controls: a solve or
/// a build is under way, or one was cancelled. The page says so, with the
/// shown plan's budget (never two budgets on one screen unexplained).
#[derive(Clone, Debug, PartialEq)]
pub struct StalePlan {
    /// The shown plan's algorithm and budget.
    pub algorithm: String,
    pub budget: u64,
    /// What is asked for now.
    pub wanted_algorithm: String,
    pub wanted_budget: u64,
    /// A solve or build under way (else: cancelled).
    pub working: bool,
    pub cancelled: Option<String>,
}

impl Shown {
    /// Shows nothing (a new chain).
    pub(super) fn reset(self) {
        self.current.set(None);
        self.summaries.set(Vec::new());
        self.cancelled.set(None);
        self.table_build.set(None);
        self.refining.set(None);
    }
}

impl super::AppState {
    /// Whether the plan on screen is an earlier one, and which (tracked).
    pub fn stale_plan(self) -> Option<StalePlan> {
        let current = self.shown.current.get()?;
        let algorithm = self.controls.algorithm.get();
        let budget = self.controls.budget.get();
        let working = self.shown.replanning.get().is_some()
            || matches!(self.tables.build_of(algorithm), super::Build::Building(_));
        let cancelled = self.shown.cancelled.get();
        let other = current.planned.budget != budget || current.planned.algorithm != algorithm;
        (working || (cancelled.is_some() && other)).then(|| StalePlan {
            algorithm: current.algorithm.clone(),
            budget: current.planned.budget,
            wanted_algorithm: algorithm.name().to_string(),
            wanted_budget: budget,
            working,
            cancelled,
        })
    }
}
