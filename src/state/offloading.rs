//! What the workers solve on the side: the compare rows solved in a worker
//! (the offloading algorithms, and the exact optimum) at the current
//! budget, one at a time and each cancellable; POFO's sweep; max batch.

use crate::planning::protocol::{MaxBatch, Summary, Sweep};
use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// Where a compare row solved in a worker stands in this round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowStatus {
    /// Waiting for the rows before it.
    Waiting,
    /// Being solved, and how far.
    Solving(f64),
    /// Cancelled by its own Cancel: solved again only when asked.
    Cancelled,
    /// Answered (its summary), or not asked this round.
    Done,
}

#[derive(Clone, Copy, Default)]
pub struct Offloading {
    /// The compare rows solved in the worker, as they come.
    pub summaries: RwSignal<Vec<Summary>>,
    /// The rows waiting for the worker, in order.
    pub waiting: RwSignal<Vec<Algorithm>>,
    /// The row the worker is solving, and how far.
    pub solving: RwSignal<Option<(Algorithm, f64)>>,
    /// The rows cancelled this round.
    pub cancelled: RwSignal<Vec<Algorithm>>,
    /// POFO's two figures for this chain, once computed.
    pub sweep: RwSignal<Option<Sweep>>,
    pub sweeping: RwSignal<Option<f64>>,
    /// The max-batch panel's answer for this chain, and its progress.
    pub max_batch: RwSignal<Option<MaxBatch>>,
    pub max_batching: RwSignal<Option<f64>>,
}

impl Offloading {
    /// Where `alg`'s compare row stands (tracked).
    pub fn row_status(self, alg: Algorithm) -> RowStatus {
        match self.solving.get() {
            Some((a, f)) if a == alg => RowStatus::Solving(f),
            _ if self.waiting.with(|w| w.contains(&alg)) => RowStatus::Waiting,
            _ if self.cancelled.with(|c| c.contains(&alg)) => RowStatus::Cancelled,
            _ => RowStatus::Done,
        }
    }

    /// Keeps `summary` as its algorithm's row.
    pub(super) fn answered(self, summary: Summary) {
        self.summaries.update(|rows| {
            rows.retain(|s| s.algorithm != summary.algorithm);
            rows.push(summary);
        });
    }

    /// Forgets the rows and the figures (a new chain).
    pub(super) fn reset(self) {
        self.stop();
        self.cancelled.set(Vec::new());
        self.summaries.set(Vec::new());
        self.sweep.set(None);
        self.sweeping.set(None);
        self.max_batch.set(None);
        self.max_batching.set(None);
    }

    /// Forgets the rows waiting and the row being solved (their worker
    /// ended); the rows answered stay.
    pub(super) fn stop(self) {
        self.waiting.set(Vec::new());
        self.solving.set(None);
    }

    /// Stops showing the side worker's progress (its work cancelled).
    pub(super) fn stop_side(self) {
        self.sweeping.set(None);
        self.max_batching.set(None);
    }
}
