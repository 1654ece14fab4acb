//! What the worker solves on the side: the offloading algorithms' compare
//! rows at the current budget, and POFO's sweep.

use crate::protocol::{MaxBatch, Summary, Sweep};
use leptos::prelude::*;

#[derive(Clone, Copy, Default)]
pub struct Offloading {
    /// The offloading algorithms at the current budget (solved in the worker).
    pub summaries: RwSignal<Vec<Summary>>,
    /// How far the worker is with those rows, while it works on them.
    pub comparing: RwSignal<Option<f64>>,
    /// POFO's two figures for this chain, once computed.
    pub sweep: RwSignal<Option<Sweep>>,
    pub sweeping: RwSignal<Option<f64>>,
    /// The max-batch panel's answer for this chain, and its progress.
    pub max_batch: RwSignal<Option<MaxBatch>>,
    pub max_batching: RwSignal<Option<f64>>,
}

impl Offloading {
    /// Forgets the rows and the figures (a new chain).
    pub(super) fn reset(self) {
        self.summaries.set(Vec::new());
        self.sweep.set(None);
        self.sweeping.set(None);
        self.max_batch.set(None);
        self.max_batching.set(None);
    }

    /// Stops showing the compare rows' progress (the main worker's work
    /// cancelled; the sweep and max batch run in the side worker).
    pub(super) fn stop(self) {
        self.comparing.set(None);
    }

    /// Stops showing the side worker's progress (its work cancelled).
    pub(super) fn stop_side(self) {
        self.sweeping.set(None);
        self.max_batching.set(None);
    }
}
