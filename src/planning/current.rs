//! The schedule on screen and what the simulator measured for it: what the
//! state holds and every chart of a schedule draws (pure data, so that the
//! kit's charts take it as a prop without reading the state).

use crate::planning::protocol::Planned;
use remat_core::simulator::Trace;
use remat_core::Chain;
use std::sync::Arc;

/// The schedule on screen and what the simulator measured for it.
#[derive(Clone)]
pub struct Current {
    pub chain: Arc<Chain>,
    /// The algorithm's name in an exported schedule: the planner's, or an
    /// imported schedule's own.
    pub algorithm: String,
    pub planned: Planned,
    /// None when the algorithm has no schedule for the budget.
    pub trace: Option<Result<Trace, String>>,
    /// The file an imported schedule came from; None for a planner's
    /// answer. While it is shown, the algorithm and budget controls are
    /// not in force (they name what the planner would show).
    pub file: Option<String>,
}

impl Current {
    pub fn ok_trace(&self) -> Option<&Trace> {
        self.trace.as_ref().and_then(|t| t.as_ref().ok())
    }
    pub fn ops(&self) -> &[remat_core::Op] {
        self.planned.ops.as_deref().unwrap_or(&[])
    }
}
