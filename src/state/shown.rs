//! The schedule on screen, what the simulator measured for it, and every
//! table-built algorithm at the same budget.

use crate::protocol::{Planned, Summary};
use leptos::prelude::*;
use remat_core::simulator::Trace;
use remat_core::Chain;
use std::sync::Arc;

/// The schedule on screen and what the simulator measured for it.
pub struct Current {
    pub chain: Arc<Chain>,
    /// The algorithm's name in an exported schedule: the planner's, or an
    /// imported schedule's own.
    pub algorithm: String,
    pub planned: Planned,
    /// None when the algorithm has no schedule for the budget.
    pub trace: Option<Result<Trace, String>>,
}

impl Current {
    pub fn ok_trace(&self) -> Option<&Trace> {
        self.trace.as_ref().and_then(|t| t.as_ref().ok())
    }
    pub fn ops(&self) -> &[remat_core::Op] {
        self.planned.ops.as_deref().unwrap_or(&[])
    }
}

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
}

impl Shown {
    /// Shows nothing (a new chain).
    pub(super) fn reset(self) {
        self.current.set(None);
        self.summaries.set(Vec::new());
    }
}
