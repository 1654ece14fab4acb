//! What the page asks the planner, and how often: offloading solves take a
//! while, so at most one of a kind is in flight and the latest one waits.

use super::{AppState, Build, ChainSource};
use crate::planning::backend::Backend;
use crate::planning::optimality::optimum_searched;
use crate::planning::protocol::{Ask, Request, Stage};
use crate::planning::service::{budget_range, compared_in_worker, has_quick_table, wants_worker};
use crate::sizing::scaling::{kept_scale, scaled_example, scaled_imported, ExampleScale};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::format::write_chain;
use remat_core::model::units::format_bytes_apart;
use remat_core::solvers::{memory_floor, Algorithm};
use remat_core::Chain;
use std::sync::Arc;

#[derive(Clone, Copy)]
pub(super) struct Requests {
    /// Where requests run; owned here, shared with the worker's callbacks.
    backend: StoredValue<Backend, LocalStorage>,
    /// The chain's number: answers about an older chain are dropped.
    pub(super) generation: StoredValue<u64>,
    /// The latest plan's id: older plans are not shown.
    pub(super) next_id: StoredValue<u64>,
    pub(super) plan_flight: StoredValue<Flight>,
    /// The compare rows' round: a new budget, bandwidth or chain starts
    /// one, and a row answered for an older round is dropped.
    pub(super) compare_round: StoredValue<u64>,
}

impl Requests {
    pub(super) fn new(backend: Backend) -> Requests {
        Requests {
            backend: StoredValue::new_local(backend),
            generation: StoredValue::new(0),
            next_id: StoredValue::new(0),
            plan_flight: StoredValue::new(Flight::default()),
            compare_round: StoredValue::new(0),
        }
    }

    /// The backend, as a handle (answers may send again while one is used).
    pub(super) fn backend(self) -> Backend {
        self.backend.get_value()
    }

    fn send(self, request: Request) {
        self.backend().send(request);
    }

    pub(super) fn land_all(self) {
        self.plan_flight.set_value(Flight::default());
    }
}

/// A request kind that keeps at most one in the worker and one waiting, so
/// a slider drag does not queue a solve per pixel.
#[derive(Clone, Copy, Default)]
pub(super) struct Flight {
    busy: bool,
    waiting: bool,
}

/// Marks a request as sent if none is in flight; otherwise notes that a newer
/// one waits and returns false.
fn take_off(flight: StoredValue<Flight>) -> bool {
    let mut f = flight.get_value();
    let go = !f.busy;
    if go {
        f.busy = true;
    } else {
        f.waiting = true;
    }
    flight.set_value(f);
    go
}

/// Marks the answer as arrived; true if a newer request waits to be sent.
pub(super) fn land(flight: StoredValue<Flight>) -> bool {
    let f = flight.get_value();
    flight.set_value(Flight::default());
    f.waiting
}

impl AppState {
    /// Replaces the chain; `budget` keeps a budget (from the URL) if given.
    pub fn load_chain(self, chain: Chain, source: ChainSource, budget: Option<u64>) {
        self.load_scaled(chain, source, ExampleScale::default(), budget);
    }

    /// Loads the example called `name` at `scale` (linear, from its
    /// profile); the error names the control that cannot apply.
    pub fn load_example(
        self,
        name: &str,
        scale: ExampleScale,
        budget: Option<u64>,
    ) -> Result<(), String> {
        let example =
            examples::find(name).ok_or_else(|| format!("the explorer has no chain \"{name}\""))?;
        let chain = scaled_example(example, &scale).map_err(|e| e.to_string())?;
        // An example's profile is its own: what a link says about an
        // imported chain's profile does not apply.
        let scale = if example.profile.is_some() {
            kept_scale(name, scale)
        } else {
            ExampleScale::default()
        };
        self.load_scaled(chain, ChainSource::Example(name.to_string()), scale, budget);
        Ok(())
    }

    /// Loads an imported chain, `original` as imported, at `scale` (linear,
    /// from the batch and precision the user says it was profiled at). The
    /// original is kept: every later rescale starts from it. The error
    /// names the control that cannot apply; the page then keeps its chain.
    pub fn load_imported(
        self,
        original: Arc<Chain>,
        scale: ExampleScale,
        budget: Option<u64>,
    ) -> Result<(), String> {
        let (chain, scale) = scaled_imported(&original, &scale).map_err(|e| e.to_string())?;
        self.loaded.imported.set_value(Some(original));
        self.load_scaled(chain, ChainSource::Imported, scale, budget);
        Ok(())
    }

    /// The imported chain on the page at another `scale`, from its original.
    pub fn rescale_imported(self, scale: ExampleScale) -> Result<(), String> {
        let original = self
            .imported_original()
            .ok_or("the page holds no imported chain to scale")?;
        self.load_imported(original, scale, None)
    }

    /// The imported chain as imported, while the page has one.
    pub fn imported_original(self) -> Option<Arc<Chain>> {
        self.loaded.imported.get_value()
    }

    /// A budget asked for `chain` (by a link, the device-memory card, the
    /// guide), unless it is below the floor: no schedule runs there (the CLI
    /// refuses it, exit 2), so the page says so and keeps the budget it has
    /// (or, for a chain being loaded, starts half-way).
    pub fn checked_budget(self, chain: &Chain, budget: u64) -> Option<u64> {
        let below = match memory_floor(chain).admit(budget) {
            Ok(budget) => return Some(budget),
            Err(below) => below,
        };
        let (budget, at_least) = format_bytes_apart(below.budget, below.floor.bytes);
        self.view.error(format!(
            "The budget asked for, {budget}, is below {at_least}, the least memory any schedule of this chain needs; it was not applied."
        ));
        None
    }

    fn load_scaled(
        self,
        chain: Chain,
        source: ChainSource,
        scale: ExampleScale,
        budget: Option<u64>,
    ) {
        let r = self.requests;
        let generation = r.generation.get_value() + 1;
        r.generation.set_value(generation);
        let remote = wants_worker(&chain);
        self.view.reset();
        self.shown.reset();
        // A search or sweep of the previous chain would hold the side
        // worker: end it (its answer would be dropped anyway).
        let side_busy = self.offloading.sweeping.get_untracked().is_some()
            || self.offloading.max_batching.get_untracked().is_some();
        if side_busy {
            r.backend().cancel_side();
        }
        // So does a compare row (one at a time: none is left to answer).
        if self.offloading.solving.get_untracked().is_some() {
            r.backend().cancel_compare();
        }
        self.offloading.reset();
        r.land_all();
        let budget = budget.and_then(|b| self.checked_budget(&chain, b));
        let (low, high) = budget_range(&chain);
        // A chain picked anew takes its own host link, or the default where
        // it states none: never the previous chain's (issue 45: GPT-2
        // H200 showed VGG-19's 54 GB/s as "custom"). A link's own
        // bandwidth is applied after this by the URL.
        if budget.is_none() {
            self.controls.bandwidth.set(
                chain
                    .bandwidth_bytes_per_s
                    .unwrap_or(super::controls::DEFAULT_BANDWIDTH),
            );
        }
        // Half-way down is where checkpointing is most interesting to see.
        self.controls
            .budget
            .set(budget.unwrap_or(low + (high - low) / 2));
        self.tables.reset(remote);
        r.backend().use_worker(remote);
        let text = write_chain(&chain);
        self.loaded.set(chain, source, scale, (low, high));
        r.send(Request::Load {
            generation,
            chain: text,
        });
        self.request_build(self.controls.algorithm.get_untracked());
        if !remote {
            // Cheap in the page: build every table now so Compare is complete.
            self.build_all();
        } else {
            // Offloading planners hold no table: ready at once.
            for alg in Algorithm::OFFLOADING {
                self.request_build(alg);
            }
        }
    }

    /// Builds the tables not built yet (Compare needs all of them), but
    /// the exact optimum's curve only where it answers at once
    /// ([`optimum_searched`]); its row then offers the search.
    pub fn build_all(self) {
        let stages = self.loaded.chain.with_untracked(|c| c.len());
        for alg in Algorithm::ALL {
            let asked_only = alg == Algorithm::Optimal && !optimum_searched(stages, false);
            if self.tables.build_of_untracked(alg) == Build::Idle && !asked_only {
                self.request_build(alg);
            }
        }
    }

    /// A long chain whose worker was cancelled gets a fresh one before it
    /// builds again (building its table in the page would freeze it).
    fn ensure_worker(self) {
        let backend = self.requests.backend();
        if !backend.is_remote() {
            let text = write_chain(&self.loaded.chain.get_untracked());
            backend.respawn(self.requests.generation.get_value(), text);
        }
    }

    pub fn request_build(self, alg: Algorithm) {
        self.ensure_worker();
        self.tables.set(alg, Build::Building(0.0));
        self.requests.send(Request::Build {
            generation: self.requests.generation.get_value(),
            algorithm: alg,
            max_budget: self.loaded.m_high.get_untracked(),
        });
    }

    /// Builds a table again after a cancel (a fresh worker gets the chain;
    /// tables already moved to the page stay there).
    pub fn rebuild(self, alg: Algorithm) {
        self.request_build(alg);
    }

    /// Asks for the schedule at the current budget; `exact` re-plans with a
    /// table made for exactly this budget (no rounding to the M_high grid).
    pub fn send_plan(self, exact: bool) {
        crate::kit::timing::mark("sent");
        let r = self.requests;
        let algorithm = self.controls.algorithm.get_untracked();
        // A refinement under way is for a budget no longer asked.
        r.backend().cancel_refine();
        if algorithm.offloads() {
            if !take_off(r.plan_flight) {
                return;
            }
            self.ensure_worker();
            self.shown.replanning.set(Some(0.0));
        } else if exact {
            self.ensure_worker();
            if r.backend().tables_remote() && algorithm.uses_slots() {
                self.shown.replanning.set(Some(0.0));
            }
        }
        let id = r.next_id.get_value() + 1;
        r.next_id.set_value(id);
        // pofo and offload-only in two stages at once: the main worker
        // reads the budget from its table for every budget (building it
        // first, once per chain and link), the refine worker solves it on
        // the paper's grid; whichever comes first is shown, the refinement
        // stays (`on_planned`).
        let quick = has_quick_table(algorithm) && !exact;
        let ask = |stage| Request::Plan {
            generation: r.generation.get_value(),
            ask: Ask {
                id,
                algorithm,
                budget: self.controls.budget.get_untracked(),
                bandwidth: self.controls.link(),
                exact,
                stage,
            },
        };
        if quick {
            self.shown.refining.set(Some(0.0));
            r.send(ask(Stage::Refine));
        }
        r.send(ask(if quick { Stage::Quick } else { Stage::Whole }));
    }

    /// Starts a round of the compare rows solved in a worker at the
    /// current budget: the offloading algorithms, and the exact optimum
    /// where it is searched ([`optimum_searched`]: where it answers at
    /// once, or its curve was asked for). They are solved one at a time,
    /// each answer shown as it comes; a row cancelled stays so until asked.
    pub fn send_compare(self) {
        let stages = self.loaded.chain.with_untracked(|c| c.len());
        let asked = !matches!(
            self.tables.build_of_untracked(Algorithm::Optimal),
            Build::Idle | Build::Cancelled
        );
        let cancelled = self.offloading.cancelled.get_untracked();
        let rows: Vec<Algorithm> = (self.loaded.chain)
            .with_untracked(|c| compared_in_worker(c, optimum_searched(stages, asked)))
            .into_iter()
            .filter(|a| !cancelled.contains(a))
            .collect();
        self.forget_rows();
        self.offloading.waiting.set(rows);
        self.send_next_row();
    }

    /// Ends the round of compare rows: the rows answered are forgotten, the
    /// rows waiting are not sent (a new budget on a long chain, whose rows
    /// are solved only when asked).
    pub(super) fn forget_rows(self) {
        self.requests.compare_round.update_value(|n| *n += 1);
        self.offloading.summaries.set(Vec::new());
        self.offloading.waiting.set(Vec::new());
    }

    /// Sends the next compare row waiting, unless one is being solved.
    pub(super) fn send_next_row(self) {
        let r = self.requests;
        if self.offloading.solving.get_untracked().is_some() {
            return;
        }
        let Some(algorithm) = self
            .offloading
            .waiting
            .with_untracked(|w| w.first().copied())
        else {
            return;
        };
        self.offloading.waiting.update(|w| {
            w.remove(0);
        });
        self.offloading.solving.set(Some((algorithm, 0.0)));
        r.send(Request::Compare {
            generation: r.generation.get_value(),
            id: r.compare_round.get_value(),
            budget: self.controls.budget.get_untracked(),
            bandwidth: self.controls.link(),
            algorithm,
        });
    }

    /// Cancels `alg`'s compare row: waiting, it is not sent; being solved,
    /// its worker is ended (the next row starts a fresh one). The other
    /// rows go on; this one says it was cancelled until solved again.
    pub fn cancel_row(self, alg: Algorithm) {
        if self
            .offloading
            .solving
            .get_untracked()
            .is_some_and(|(a, _)| a == alg)
        {
            self.requests.backend().cancel_compare();
            self.offloading.solving.set(None);
        }
        self.offloading.waiting.update(|w| w.retain(|&a| a != alg));
        self.offloading
            .summaries
            .update(|rows| rows.retain(|s| s.algorithm != alg));
        self.offloading.cancelled.update(|c| {
            if !c.contains(&alg) {
                c.push(alg);
            }
        });
        self.send_next_row();
    }

    /// Solves a cancelled compare row again, after the rows waiting.
    pub fn solve_row(self, alg: Algorithm) {
        self.offloading
            .cancelled
            .update(|c| c.retain(|&a| a != alg));
        self.offloading.waiting.update(|w| w.push(alg));
        self.send_next_row();
    }

    /// Computes POFO's two figures for this chain in the worker.
    pub fn send_sweep(self) {
        self.ensure_worker();
        self.offloading.sweeping.set(Some(0.0));
        self.requests.send(Request::Sweep {
            generation: self.requests.generation.get_value(),
            bandwidth: self.controls.bandwidth.get_untracked(),
        });
    }

    /// Searches the largest batch of each method in the worker, the chain
    /// fitted through `second` too when there is one.
    pub fn send_max_batch(
        self,
        device: crate::planning::protocol::BatchDevice,
        second: Option<crate::planning::protocol::SecondProfile>,
    ) {
        self.ensure_worker();
        self.offloading.max_batching.set(Some(0.0));
        self.requests.send(Request::MaxBatch {
            generation: self.requests.generation.get_value(),
            device,
            second,
        });
    }

    /// Ends a long build or solve at once: a busy worker cannot be
    /// interrupted, so it is terminated, and a fresh one gets the chain
    /// (tables already in the page stay; `rebuild` builds the others).
    /// The page keeps the plan it shows and says what was cancelled.
    pub fn cancel_build(self) {
        let what = self.cancelled_work();
        let backend = self.requests.backend();
        backend.cancel();
        // The compare rows and a refinement stop too, as the worker's work
        // they are.
        backend.cancel_compare();
        backend.cancel_refine();
        crate::kit::timing::mark("cancelled");
        self.requests.land_all();
        self.offloading.stop();
        self.shown.replanning.set(None);
        self.shown.table_build.set(None);
        self.shown.refining.set(None);
        self.tables.cancel();
        self.shown.cancelled.set(Some(what));
        let chain = write_chain(&self.loaded.chain.get_untracked());
        backend.respawn(self.requests.generation.get_value(), chain);
    }

    /// Stops the refinement of the quick answer on screen; the quick
    /// answer stays, the plans' worker and its table go on.
    pub fn stop_refining(self) {
        self.requests.backend().cancel_refine();
        crate::kit::timing::mark("cancelled");
        self.shown.refining.set(None);
    }

    /// Ends the side worker's search or sweep at once; the plans, tables
    /// and compare rows in the main worker go on.
    pub fn cancel_side_task(self) {
        let what = if self.offloading.sweeping.get_untracked().is_some() {
            "the sweep"
        } else {
            "the max-batch search"
        };
        self.requests.backend().cancel_side();
        self.offloading.stop_side();
        self.shown.cancelled.set(Some(what.to_string()));
    }

    /// What a Cancel now stops, in words.
    fn cancelled_work(self) -> String {
        let alg = self.controls.algorithm.get_untracked();
        if self.shown.replanning.get_untracked().is_some() {
            let budget =
                remat_core::model::units::format_bytes(self.controls.budget.get_untracked());
            format!("the {} solve at {budget}", alg.name())
        } else if matches!(self.tables.build_of_untracked(alg), Build::Building(_)) {
            format!("the {} table build", alg.name())
        } else {
            "the work in the worker".to_string()
        }
    }
}
