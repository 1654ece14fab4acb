//! All of the page's state, in one place, and the transitions between states.
//!
//! Views read signals and call methods here; nothing else talks to the
//! planner. The flow is one-way: chain → build tables → plan(budget) →
//! simulate → `Current`, which every chart draws.

use crate::planning::{min_budget, CurvePoint, Planned, Request, Response, Summary, Sweep};
use crate::worker;
use leptos::prelude::*;
use remat_core::format::write_chain;
use remat_core::simulator::judge;
use remat_core::simulator::Trace;
use remat_core::solvers::{max_useful_budget, Algorithm};
use remat_core::Chain;
use std::sync::Arc;

/// PCIe 3.0 ×16 in practice, used when a chain states no bandwidth.
pub const DEFAULT_BANDWIDTH: f64 = 12e9;

#[derive(Clone, Debug, PartialEq)]
pub enum ChainSource {
    Example(String),
    Imported,
}

/// Where the table of one algorithm stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Build {
    Idle,
    Building(f64),
    Ready {
        min_budget: u64,
        build_ms: f64,
        curve: Vec<CurvePoint>,
    },
    Failed(String),
    Cancelled,
}

/// The schedule on screen and what the simulator measured for it.
pub struct Current {
    pub chain: Arc<Chain>,
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

#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    Error(String),
    Info(String),
}

#[derive(Clone, Copy)]
pub struct AppState {
    pub chain: RwSignal<Arc<Chain>>,
    pub source: RwSignal<ChainSource>,
    pub algorithm: RwSignal<Algorithm>,
    pub budget: RwSignal<u64>,
    pub bandwidth: RwSignal<f64>,
    pub m_low: RwSignal<u64>,
    pub m_high: RwSignal<u64>,
    /// One entry per `Algorithm::ALL`, same order.
    pub builds: RwSignal<Vec<Build>>,
    pub current: RwSignal<Option<Arc<Current>>>,
    pub summaries: RwSignal<Vec<Summary>>,
    /// A time shared by the memory chart and the timelines (hover or step).
    pub cursor: RwSignal<Option<f64>>,
    /// The op highlighted by the step-through.
    pub step: RwSignal<Option<usize>>,
    pub playing: RwSignal<bool>,
    pub notice: RwSignal<Option<Notice>>,
    /// Chain view: equal boxes instead of proportional ones.
    pub uniform: RwSignal<bool>,
    /// Whether the tables live in the worker.
    pub remote: RwSignal<bool>,
    /// The last plan's id (the DOM carries it so tests can wait on it).
    pub shown_id: RwSignal<u64>,
    /// An exact re-plan building its own table in the worker, or an
    /// offloading algorithm solving this budget there, and how far.
    pub replanning: RwSignal<Option<f64>>,
    /// The offloading algorithms at the current budget (solved in the worker).
    pub offload_summaries: RwSignal<Vec<Summary>>,
    /// How far the worker is with those rows, while it works on them.
    pub comparing: RwSignal<Option<f64>>,
    /// POFO's two figures for this chain, once computed.
    pub sweep: RwSignal<Option<Sweep>>,
    pub sweeping: RwSignal<Option<f64>>,
    generation: StoredValue<u64>,
    next_id: StoredValue<u64>,
    /// Offloading solves take a while: one in flight, the latest one waiting.
    plan_flight: StoredValue<Flight>,
    compare_flight: StoredValue<Flight>,
}

/// A request kind that keeps at most one in the worker and one waiting, so
/// a slider drag does not queue a solve per pixel.
#[derive(Clone, Copy, Default)]
struct Flight {
    busy: bool,
    waiting: bool,
}

fn index_of(alg: Algorithm) -> usize {
    Algorithm::ALL
        .iter()
        .position(|a| *a == alg)
        .unwrap_or_default()
}

impl AppState {
    pub fn new(chain: Chain, source: ChainSource) -> AppState {
        let state = AppState {
            chain: RwSignal::new(Arc::new(chain.clone())),
            source: RwSignal::new(source.clone()),
            algorithm: RwSignal::new(Algorithm::Rotor),
            budget: RwSignal::new(0),
            bandwidth: RwSignal::new(DEFAULT_BANDWIDTH),
            m_low: RwSignal::new(0),
            m_high: RwSignal::new(0),
            builds: RwSignal::new(vec![Build::Idle; Algorithm::ALL.len()]),
            current: RwSignal::new(None),
            summaries: RwSignal::new(Vec::new()),
            cursor: RwSignal::new(None),
            step: RwSignal::new(None),
            playing: RwSignal::new(false),
            notice: RwSignal::new(None),
            uniform: RwSignal::new(false),
            remote: RwSignal::new(false),
            shown_id: RwSignal::new(0),
            replanning: RwSignal::new(None),
            offload_summaries: RwSignal::new(Vec::new()),
            comparing: RwSignal::new(None),
            sweep: RwSignal::new(None),
            sweeping: RwSignal::new(None),
            generation: StoredValue::new(0),
            next_id: StoredValue::new(0),
            plan_flight: StoredValue::new(Flight::default()),
            compare_flight: StoredValue::new(Flight::default()),
        };
        worker::set_handler(move |r| state.on_response(r));
        state
    }

    /// Starts the effects that keep the schedule in step with the controls.
    pub fn start(self) {
        // A new budget, bandwidth or algorithm, or a table that became
        // ready, asks for a new plan (O(L) on a built table).
        Effect::new(move |_| {
            let alg = self.algorithm.get();
            let ready = self
                .builds
                .with(|b| matches!(b[index_of(alg)], Build::Ready { .. }));
            let _ = (self.budget.get(), self.bandwidth.get());
            if ready {
                self.send_plan(false);
            }
        });
        // The compare rows of the offloading algorithms follow the budget,
        // the bandwidth and the chain; for long chains (their solves take
        // long and the worker also builds tables) only when asked.
        Effect::new(move |_| {
            let _ = (self.budget.get(), self.bandwidth.get(), self.chain.get());
            if self.remote.get() {
                self.offload_summaries.set(Vec::new());
            } else {
                self.send_compare();
            }
        });
        // Choosing an algorithm whose table is not built yet builds it.
        Effect::new(move |_| {
            let alg = self.algorithm.get();
            if self
                .builds
                .with_untracked(|b| b[index_of(alg)] == Build::Idle)
            {
                self.request_build(alg);
            }
        });
    }

    /// Replaces the chain; `budget` keeps a budget (from the URL) if given.
    pub fn load_chain(self, chain: Chain, source: ChainSource, budget: Option<u64>) {
        let generation = self.generation.get_value() + 1;
        self.generation.set_value(generation);
        let low = min_budget(&chain);
        let high = max_useful_budget(&chain).max(low);
        let remote = worker::wants_worker(&chain);
        self.playing.set(false);
        self.step.set(None);
        self.cursor.set(None);
        self.current.set(None);
        self.summaries.set(Vec::new());
        self.offload_summaries.set(Vec::new());
        self.sweep.set(None);
        self.sweeping.set(None);
        self.plan_flight.set_value(Flight::default());
        self.compare_flight.set_value(Flight::default());
        self.m_low.set(low);
        self.m_high.set(high);
        if chain.bandwidth_bytes_per_s.is_some() && budget.is_none() {
            self.bandwidth
                .set(chain.bandwidth_bytes_per_s.unwrap_or(DEFAULT_BANDWIDTH));
        }
        // Half-way down is where checkpointing is most interesting to see.
        self.budget.set(budget.unwrap_or(low + (high - low) / 2));
        self.builds.set(vec![Build::Idle; Algorithm::ALL.len()]);
        self.remote.set(remote);
        worker::use_worker(remote);
        let text = write_chain(&chain);
        self.chain.set(Arc::new(chain));
        self.source.set(source);
        worker::send(Request::Load {
            generation,
            chain: text,
        });
        self.request_build(self.algorithm.get_untracked());
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

    /// Builds the tables not built yet (Compare needs all of them).
    pub fn build_all(self) {
        for alg in Algorithm::ALL {
            if self
                .builds
                .with_untracked(|b| b[index_of(alg)] == Build::Idle)
            {
                self.request_build(alg);
            }
        }
    }

    pub fn build_of(self, alg: Algorithm) -> Build {
        self.builds.with(|b| b[index_of(alg)].clone())
    }

    fn set_build(self, alg: Algorithm, build: Build) {
        self.builds.update(|b| b[index_of(alg)] = build);
    }

    /// A long chain whose worker was cancelled gets a fresh one before it
    /// builds again (building its table in the page would freeze it).
    fn ensure_worker(self) {
        if !worker::is_remote() {
            let text = write_chain(&self.chain.get_untracked());
            worker::respawn(self.generation.get_value(), text);
        }
    }

    pub fn request_build(self, alg: Algorithm) {
        self.ensure_worker();
        self.set_build(alg, Build::Building(0.0));
        worker::send(Request::Build {
            generation: self.generation.get_value(),
            algorithm: alg.name().to_string(),
            max_budget: self.m_high.get_untracked(),
        });
    }

    /// Asks for the schedule at the current budget; `exact` re-plans with a
    /// table made for exactly this budget (no rounding to the M_high grid).
    pub fn send_plan(self, exact: bool) {
        mark("sent");
        let offloads = self.algorithm.get_untracked().offloads();
        if offloads {
            if !take_off(self.plan_flight) {
                return;
            }
            self.ensure_worker();
            self.replanning.set(Some(0.0));
        } else if exact {
            self.ensure_worker();
            if worker::tables_remote() && self.algorithm.get_untracked().uses_slots() {
                self.replanning.set(Some(0.0));
            }
        }
        let id = self.next_id.get_value() + 1;
        self.next_id.set_value(id);
        worker::send(Request::Plan {
            generation: self.generation.get_value(),
            id,
            algorithm: self.algorithm.get_untracked().name().to_string(),
            budget: self.budget.get_untracked(),
            bandwidth: Some(self.bandwidth.get_untracked()),
            exact,
        });
    }

    /// The offloading algorithms' compare rows at the current budget.
    pub fn send_compare(self) {
        if !take_off(self.compare_flight) {
            return;
        }
        self.ensure_worker();
        self.comparing.set(Some(0.0));
        // Plans own `next_id` (the shown plan must be the latest one).
        worker::send(Request::Compare {
            generation: self.generation.get_value(),
            id: self.next_id.get_value(),
            budget: self.budget.get_untracked(),
            bandwidth: Some(self.bandwidth.get_untracked()),
        });
    }

    /// Computes POFO's two figures for this chain in the worker.
    pub fn send_sweep(self) {
        self.ensure_worker();
        self.sweeping.set(Some(0.0));
        worker::send(Request::Sweep {
            generation: self.generation.get_value(),
            bandwidth: self.bandwidth.get_untracked(),
        });
    }

    /// Ends a long build or solve (terminates the worker); `rebuild` starts over.
    pub fn cancel_build(self) {
        worker::cancel();
        self.plan_flight.set_value(Flight::default());
        self.compare_flight.set_value(Flight::default());
        self.comparing.set(None);
        self.sweeping.set(None);
        self.replanning.set(None);
        self.builds.update(|b| {
            for build in b.iter_mut() {
                if matches!(build, Build::Building(_)) {
                    *build = Build::Cancelled;
                }
            }
        });
    }

    /// Builds a table again after a cancel (a fresh worker gets the chain;
    /// tables already moved to the page stay there).
    pub fn rebuild(self, alg: Algorithm) {
        self.request_build(alg);
    }

    fn on_response(self, response: Response) {
        let generation = self.generation.get_value();
        match response {
            Response::Ready => {}
            Response::Progress {
                generation: g,
                algorithm,
                fraction,
            } => {
                if g != generation {
                    return;
                }
                match algorithm.as_str() {
                    "compare" => return self.comparing.set(Some(fraction)),
                    "sweep" => return self.sweeping.set(Some(fraction)),
                    _ => {}
                }
                if let (true, Ok(alg)) = (g == generation, Algorithm::from_name(&algorithm)) {
                    if matches!(self.build_of_untracked(alg), Build::Building(_)) {
                        self.set_build(alg, Build::Building(fraction));
                    } else if self.replanning.get_untracked().is_some() {
                        self.replanning.set(Some(fraction));
                    }
                }
            }
            Response::Built {
                generation: g,
                algorithm,
                min_budget,
                build_ms,
                curve,
                ..
            } => {
                if let (true, Ok(alg)) = (g == generation, Algorithm::from_name(&algorithm)) {
                    self.set_build(
                        alg,
                        Build::Ready {
                            min_budget,
                            build_ms,
                            curve,
                        },
                    );
                }
            }
            Response::Failed {
                generation: g,
                algorithm,
                error,
            } => {
                if g != generation && g != u64::MAX {
                    return;
                }
                if algorithm.as_deref() == Some("sweep") {
                    self.sweeping.set(None);
                }
                match algorithm.and_then(|a| Algorithm::from_name(&a).ok()) {
                    // An offloading solve failed (too large a chain for its
                    // tables): this budget has no answer, shown as an error;
                    // the next budget may have one.
                    Some(alg) if alg.offloads() => {
                        self.on_response(Response::Planned(Box::new(Planned {
                            generation,
                            id: self.next_id.get_value(),
                            algorithm: alg.name().to_string(),
                            budget: self.budget.get_untracked(),
                            bandwidth: Some(self.bandwidth.get_untracked()),
                            exact: false,
                            ops: None,
                            predicted_seconds: None,
                            predicted_peak_bytes: None,
                            detail: String::new(),
                            error: Some(error),
                            summaries: self
                                .summaries
                                .get_untracked()
                                .into_iter()
                                .filter(|s| s.algorithm != alg.name())
                                .collect(),
                        })))
                    }
                    Some(alg) => self.set_build(alg, Build::Failed(error)),
                    None => self.notice.set(Some(Notice::Error(error))),
                }
            }
            Response::Compared {
                generation: g,
                summaries,
                ..
            } => {
                if g == generation {
                    self.offload_summaries.set(summaries);
                }
                self.comparing.set(None);
                if land(self.compare_flight) {
                    self.send_compare();
                }
            }
            Response::Swept {
                generation: g,
                sweep,
            } => {
                if g == generation {
                    self.sweep.set(Some(sweep));
                }
                self.sweeping.set(None);
            }
            Response::Planned(planned) => {
                let offloads = Algorithm::from_name(&planned.algorithm).is_ok_and(|a| a.offloads());
                if planned.exact || offloads {
                    self.replanning.set(None);
                }
                if offloads && land(self.plan_flight) {
                    self.send_plan(false);
                    return; // a newer budget is being solved
                }
                if planned.generation != generation || planned.id != self.next_id.get_value() {
                    return; // an answer to a budget the slider has already left
                }
                mark("received");
                let chain = self.chain.get_untracked();
                let bandwidth = self.bandwidth.get_untracked();
                // The budget is the device memory: transfers wait for room.
                let trace = planned.ops.as_ref().map(|ops| {
                    judge(&chain, ops, planned.budget, Some(bandwidth)).map_err(|e| e.to_string())
                });
                mark("simulated");
                let n_ops = planned.ops.as_ref().map_or(0, |o| o.len());
                if self.step.get_untracked().is_some_and(|s| s >= n_ops) {
                    self.step.set(None);
                }
                let mut summaries = planned.summaries.clone();
                let measured = trace.as_ref().and_then(|t| t.as_ref().ok());
                summaries.push(Summary {
                    algorithm: planned.algorithm.clone(),
                    feasible: measured.is_some(),
                    makespan_seconds: measured.map(|t| t.makespan_seconds),
                    peak_bytes: measured.map(|t| t.peak_bytes),
                    detail: planned.detail.clone(),
                    error: planned.error.clone(),
                });
                self.summaries.set(summaries);
                self.shown_id.set(planned.id);
                self.current.set(Some(Arc::new(Current {
                    chain,
                    planned: *planned,
                    trace,
                })));
            }
        }
    }

    fn build_of_untracked(self, alg: Algorithm) -> Build {
        self.builds.with_untracked(|b| b[index_of(alg)].clone())
    }
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
fn land(flight: StoredValue<Flight>) -> bool {
    let f = flight.get_value();
    flight.set_value(Flight::default());
    f.waiting
}

thread_local! {
    /// `?timing` in the URL turns the marks on.
    static TIMING: bool = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|q| q.contains("timing"));
}

/// Timestamps for measuring a slider move, read by tests/measure-slider.mjs
/// from `window.__rematMarks`; only with `?timing` in the URL.
pub fn mark(name: &str) {
    if !TIMING.with(|t| *t) {
        return;
    }
    use wasm_bindgen::JsValue;
    let Some(w) = web_sys::window() else { return };
    let key = JsValue::from_str("__rematMarks");
    let marks = js_sys::Reflect::get(&w, &key)
        .ok()
        .filter(|v| v.is_object())
        .unwrap_or_else(|| {
            let o = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&w, &key, &o);
            o.into()
        });
    let _ = js_sys::Reflect::set(
        &marks,
        &JsValue::from_str(name),
        &JsValue::from_f64(crate::worker::now_ms()),
    );
}
