//! The page's shared state, grouped by concern, and the transitions between
//! states: the plan pipeline every feature reads. The shell provides one
//! [`AppState`] as context; features take it with [`use_app`], read signals
//! and call the methods here; nothing else talks to the planner. It imports
//! no feature: a context only one feature uses lives in that feature. The flow is one-way: chain → build
//! tables → plan(budget) → simulate → `Current`, which every chart draws.
//!
//! - `loaded`: the chain, its budget range and an example's scale;
//! - `device`: the device-memory view's inputs (its own context);
//! - `controls`: what the user chose (algorithm, budget, bandwidth);
//! - `tables`: where each algorithm's table stands;
//! - `shown`: the schedule on screen and the compare rows;
//! - `measured`: an imported measured run and how it stands against the
//!   schedule on screen;
//! - `offloading`: the worker's compare rows and POFO's sweep;
//! - `view`: cursor, step-through, time window, notice, chart options;
//! - `playback`: stepping the schedule op by op, and the clock that plays it;
//! - `requests`: what is sent to the planner; `responses`: what comes back.

mod controls;
mod device;
mod loaded;
mod measured;
mod offloading;
mod playback;
mod requests;
mod responses;
mod shown;
mod tables;
mod view;

pub use controls::{Controls, DEFAULT_BANDWIDTH};
pub use device::{use_device_memory, DeviceMemory};
pub use loaded::{ChainSource, Loaded};
pub use measured::{LoadedRun, MeasuredRun};
pub use offloading::{Offloading, RowStatus};
pub use shown::{Shown, StalePlan};
pub use tables::{Build, Tables};
pub use view::{Notice, ViewState, DEFAULT_SPEED};

use crate::kit::hover::{Cursor, TimeAxis};
use crate::planning::backend::Backend;
use leptos::prelude::*;
use remat_core::Chain;
use requests::Requests;

#[derive(Clone, Copy)]
pub struct AppState {
    pub loaded: Loaded,
    pub controls: Controls,
    pub tables: Tables,
    pub shown: Shown,
    pub measured: MeasuredRun,
    pub offloading: Offloading,
    pub view: ViewState,
    requests: Requests,
}

/// The page's state, as the root component provided it.
pub fn use_app() -> AppState {
    expect_context::<AppState>()
}

impl AppState {
    /// The slider's left end: M_low, or above it the least budget the
    /// shown algorithm's table has a plan for (revolve's own M_low; a
    /// grid's rounded sizes), so that the left end never shows ✗.
    /// Tracked.
    pub fn slider_low(self) -> u64 {
        let low = self.loaded.m_low.get();
        let met = self.tables.least_met(self.controls.algorithm.get());
        met.map_or(low, |m| m.max(low).min(self.loaded.m_high.get()))
    }

    /// What the charts over the step's time share: the schedule shown, the
    /// time window and the cursor.
    pub fn time_axis(self) -> TimeAxis {
        TimeAxis {
            schedule: self.shown.current.into(),
            zoom: self.view.zoom,
            cursor: Cursor {
                time: self.view.cursor,
                step: self.view.step,
            },
            end: None,
        }
    }

    /// The state of a page showing `chain`, with its own planner backend;
    /// answers from the planner come back to [`on_response`](Self::on_response).
    pub fn new(chain: Chain, source: ChainSource) -> AppState {
        let backend = Backend::default();
        let shown = Shown::default();
        let state = AppState {
            loaded: Loaded::new(chain, source),
            controls: Controls::new(),
            tables: Tables::new(),
            shown,
            measured: MeasuredRun::new(shown),
            offloading: Offloading::default(),
            view: ViewState::new(),
            requests: Requests::new(backend.clone()),
        };
        backend.set_handler(move |r| state.on_response(r));
        state
    }

    /// Starts the effects that keep the schedule in step with the controls.
    pub fn start(self) {
        let Controls {
            algorithm,
            budget,
            bandwidth,
            ..
        } = self.controls;
        // A new budget, bandwidth or algorithm, or a table that became
        // ready, asks for a new plan (O(L) on a built table). Readiness is
        // a memo: a cancel marks other builds, which must not start the
        // solve it just stopped again (it did: Cancel restarted pofo).
        let ready = Memo::new(move |_| self.tables.is_ready(algorithm.get()));
        Effect::new(move |_| {
            let ready = ready.get();
            let _ = (algorithm.get(), budget.get(), bandwidth.get());
            if ready {
                self.send_plan(false);
            }
        });
        // The compare rows of the offloading algorithms follow the budget,
        // the bandwidth and the chain; for long chains (their solves take
        // long and the worker also builds tables) only when asked.
        Effect::new(move |_| {
            let _ = (budget.get(), bandwidth.get(), self.loaded.chain.get());
            if self.tables.remote.get() {
                self.forget_rows();
            } else {
                self.send_compare();
            }
        });
        // Choosing an algorithm whose table is not built yet builds it.
        Effect::new(move |_| {
            let alg = algorithm.get();
            if self.tables.build_of_untracked(alg) == Build::Idle {
                self.request_build(alg);
            }
        });
        self.start_playback();
    }
}
