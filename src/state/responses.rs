//! What the planner's answers do to the page: one small function a kind.

use super::requests::land;
use super::{AppState, Build};
use crate::planning::current::Current;
use crate::planning::protocol::{
    Built, MaxBatch, Planned, Response, Stage, Summary, Sweep, Task, ANY_GENERATION,
};
use leptos::prelude::*;
use remat_core::simulator::judge;
use remat_core::solvers::Algorithm;
use std::sync::Arc;

impl AppState {
    pub(super) fn on_response(self, response: Response) {
        match response {
            Response::Ready => {}
            Response::Progress {
                generation,
                task,
                fraction,
            } => {
                if self.is_current(generation) {
                    self.on_progress(task, fraction)
                }
            }
            Response::Built(built) => self.on_built(built),
            Response::Failed {
                generation,
                task,
                error,
            } => {
                if self.is_current(generation) || generation == ANY_GENERATION {
                    self.on_failed(task, error)
                }
            }
            Response::Compared {
                generation,
                id,
                summary,
                ..
            } => self.on_compared(generation, id, summary),
            Response::Swept { generation, sweep } => self.on_swept(generation, sweep),
            Response::Planned(planned) => self.on_planned(*planned),
            Response::MaxBatched { generation, found } => self.on_max_batched(generation, found),
        }
    }

    /// Whether an answer is about the chain on the page.
    fn is_current(self, generation: u64) -> bool {
        generation == self.requests.generation.get_value()
    }

    fn on_progress(self, task: Task, fraction: f64) {
        match task {
            Task::Compare => self.offloading.solving.update(|s| {
                if let Some((_, f)) = s {
                    *f = fraction;
                }
            }),
            Task::Sweep => self.offloading.sweeping.set(Some(fraction)),
            Task::MaxBatch => self.offloading.max_batching.set(Some(fraction)),
            Task::Build { algorithm } => {
                if matches!(
                    self.tables.build_of_untracked(algorithm),
                    Build::Building(_)
                ) {
                    self.tables.set(algorithm, Build::Building(fraction));
                }
            }
            Task::Plan { .. } => {
                if self.shown.replanning.get_untracked().is_some() {
                    self.shown.replanning.set(Some(fraction));
                }
            }
            // Each on its own bar: made at once in two workers, one bar
            // would run back and forth between them.
            Task::Table { .. } => {
                if self.shown.replanning.get_untracked().is_some() {
                    self.shown.table_build.set(Some(fraction));
                }
            }
            Task::Refine { .. } => {
                if self.shown.refining.get_untracked().is_some() {
                    self.shown.refining.set(Some(fraction));
                }
            }
        }
    }

    fn on_built(self, built: Built) {
        if self.is_current(built.generation) {
            let ready = Build::Ready {
                min_budget: built.min_budget,
                build_ms: built.build_ms,
                curve: built.curve,
                grid: built.grid,
            };
            // The exact search's compare row comes from the worker's
            // Compare, not from this build: nothing to plan again.
            self.tables.set(built.algorithm, ready);
            self.add_compare_row(built.algorithm);
        }
    }

    /// A table built while a plan is on screen gets its compare row at that
    /// plan's budget at once, read from the table now in the page (issue
    /// 45: after "Build all tables" every row read "not built" until the
    /// slider moved). The shown algorithm's row is the plan itself.
    fn add_compare_row(self, algorithm: Algorithm) {
        let Some((shown, budget, bandwidth)) = self.shown.current.with_untracked(|c| {
            c.as_ref()
                .map(|c| (c.planned.algorithm, c.planned.budget, c.planned.bandwidth))
        }) else {
            return;
        };
        if shown == algorithm {
            return;
        }
        if let Some(row) = self
            .requests
            .backend()
            .summary(algorithm, budget, bandwidth)
        {
            self.shown.summaries.update(|rows| {
                rows.retain(|r| r.algorithm != algorithm);
                rows.push(row);
            });
        }
    }

    fn on_failed(self, task: Option<Task>, error: String) {
        match task {
            // An offloading solve failed (too large a chain for its
            // tables): this budget has no answer, shown as an error; the
            // next budget may have one.
            Some(
                Task::Build { algorithm } | Task::Plan { algorithm } | Task::Table { algorithm },
            ) if algorithm.offloads() => self.show_unanswered(algorithm, error),
            Some(
                Task::Build { algorithm } | Task::Plan { algorithm } | Task::Table { algorithm },
            ) => self.tables.set(algorithm, Build::Failed(error)),
            // The refinement failed (its per-budget table too large, say):
            // the quick answer stays, the error is said.
            Some(Task::Refine { .. }) => {
                self.shown.refining.set(None);
                self.view.error(error);
            }
            Some(Task::Sweep) => {
                self.offloading.sweeping.set(None);
                self.view.error(error);
            }
            Some(Task::MaxBatch) => {
                self.offloading.max_batching.set(None);
                self.view.error(error);
            }
            Some(Task::Compare) => {
                self.offloading.solving.set(None);
                self.view.error(error);
                self.send_next_row();
            }
            None => self.view.error(error),
        }
    }

    /// Shows a budget the algorithm could not answer: an error in place of
    /// the schedule, the other algorithms' rows kept.
    fn show_unanswered(self, algorithm: Algorithm, error: String) {
        let summaries = (self.shown.summaries.get_untracked().into_iter())
            .filter(|s| s.algorithm != algorithm)
            .collect();
        self.on_planned(Planned {
            generation: self.requests.generation.get_value(),
            id: self.requests.next_id.get_value(),
            algorithm,
            budget: self.controls.budget.get_untracked(),
            bandwidth: self.controls.link(),
            exact: false,
            ops: None,
            predicted_seconds: None,
            predicted_peak_bytes: None,
            detail: String::new(),
            error: Some(error),
            summaries,
            grid_loss: None,
            gap: None,
            stage: Default::default(),
        })
    }

    /// A compare row: shown if it is of this chain and round; the next
    /// row waiting goes to the worker.
    fn on_compared(self, generation: u64, round: u64, summary: Summary) {
        if self.is_current(generation) && round == self.requests.compare_round.get_value() {
            self.offloading.answered(summary);
        }
        self.offloading.solving.set(None);
        self.send_next_row();
    }

    fn on_swept(self, generation: u64, sweep: Sweep) {
        if self.is_current(generation) {
            self.offloading.sweep.set(Some(sweep));
        }
        self.offloading.sweeping.set(None);
    }

    fn on_max_batched(self, generation: u64, found: MaxBatch) {
        if self.is_current(generation) {
            self.offloading.max_batch.set(Some(found));
        }
        self.offloading.max_batching.set(None);
    }

    fn on_planned(self, planned: Planned) {
        // A refinement replaces the quick plan of its budget, if that
        // budget is still the one on screen (a newer one cancelled it, but
        // an answer posted before may still arrive).
        if planned.stage == Stage::Refine {
            if self.is_current(planned.generation)
                && planned.id == self.requests.next_id.get_value()
            {
                // The answer is here: no "Solving" while the plans' worker
                // still builds the table for every budget (its progress is
                // then not shown; its quick answer lands the flight).
                self.shown.replanning.set(None);
                self.shown.table_build.set(None);
                self.shown.refining.set(None);
                self.show(planned);
            }
            return;
        }
        let offloads = planned.algorithm.offloads();
        if planned.exact || offloads {
            self.shown.replanning.set(None);
            self.shown.table_build.set(None);
        }
        if planned.stage != Stage::Quick {
            self.shown.refining.set(None);
        }
        if offloads && land(self.requests.plan_flight) {
            self.send_plan(false);
            return; // a newer budget is being solved
        }
        if !self.is_current(planned.generation) || planned.id != self.requests.next_id.get_value() {
            return; // an answer to a budget the slider has already left
        }
        crate::kit::timing::mark("received");
        // A quick answer after its budget's refinement (the table's build
        // took longer than the solve) is not shown over it.
        let refined = self.shown.current.with_untracked(|c| {
            c.as_ref()
                .is_some_and(|c| c.planned.id == planned.id && c.planned.stage == Stage::Refine)
        });
        if planned.stage == Stage::Quick && refined {
            return;
        }
        self.show(planned);
    }

    /// Simulates the plan (the budget is the device memory: transfers wait
    /// for room) and puts it on screen with its compare row.
    fn show(self, planned: Planned) {
        let chain = self.loaded.chain.get_untracked();
        let bandwidth = self.controls.link();
        let trace = planned
            .ops
            .as_ref()
            .map(|ops| judge(&chain, ops, planned.budget, bandwidth).map_err(|e| e.to_string()));
        crate::kit::timing::mark("simulated");
        let n_ops = planned.ops.as_ref().map_or(0, |o| o.len());
        if self.view.step.get_untracked().is_some_and(|s| s >= n_ops) {
            self.view.step.set(None);
        }
        let measured = trace.as_ref().and_then(|t| t.as_ref().ok());
        let mut summaries = planned.summaries.clone();
        summaries.push(Summary {
            algorithm: planned.algorithm,
            feasible: measured.is_some(),
            makespan_seconds: measured.map(|t| t.makespan_seconds),
            peak_bytes: measured.map(|t| t.peak_bytes),
            detail: planned.detail.clone(),
            error: planned.error.clone(),
        });
        self.shown.summaries.set(summaries);
        self.shown.cancelled.set(None);
        self.shown.id.set(planned.id);
        self.shown.current.set(Some(Arc::new(Current {
            chain,
            algorithm: planned.algorithm.name().to_string(),
            planned,
            trace,
            file: None,
        })));
    }
}
