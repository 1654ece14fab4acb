//! Where planning runs. The page always keeps a [`PlannerService`] and
//! answers every slider move from it, synchronously. For long chains the
//! expensive part — building a rotor/revolve table (seconds at L = 300) —
//! runs in a Web Worker, so the page never freezes and the build can be
//! cancelled; the finished table then moves to the page (a transferred
//! `Float64Array`, not a copy) and the worker forgets it.
//!
//! Offloading algorithms have no table: each of their plans, the compare
//! rows and the sweeps are solves of their own, so they always go to the
//! worker, whatever the chain's length; a worker is kept for every chain.
//!
//! The max-batch search and the offloading sweep run in a second worker,
//! the *side* worker, started on their first request: in one queue they
//! waited behind the compare rows and the exact optimum (Max batch took
//! 75–83 s instead of 2.4 s, issue 26). The compare rows solved in a
//! worker run in a third, the *compare* worker, one row at a time, so that
//! Cancel on one row ends that worker only: the plans, the tables and the
//! other lanes go on, and the next row starts a fresh one. Cancelling one
//! worker's work leaves the others' running.
//!
//! pofo's and offload-only's plans come in two stages: read at once from a
//! table for every budget in the main worker, then refined by the
//! per-budget solve in a fourth, the *refine* worker, which a newer budget
//! ends (the main worker and its table stay).
//!
//! Both sides answer with the same `Response`s, so the app state does not
//! care where a request ran. The [`Backend`] is owned by the app state (a
//! cheap handle; the worker's callbacks hold a weak one).

use crate::planning::protocol::{Envelope, Request, Response, Stage, ANY_GENERATION};
use crate::planning::service::{runs_in_worker, PlannerService, Role};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker, WorkerOptions};

type Handler = Rc<dyn Fn(Response)>;

/// The page's planners, the worker while there is one, and who receives
/// the answers.
#[derive(Clone)]
pub struct Backend(Rc<Inner>);

struct Inner {
    /// The page's planners: every table ends up here.
    local: RefCell<PlannerService>,
    /// The builder of long tables and solver of offloading plans.
    remote: RefCell<Option<Remote>>,
    /// The max-batch search and the sweep, apart from the plans' queue.
    side: RefCell<Option<Remote>>,
    /// The compare rows, one at a time.
    compare: RefCell<Option<Remote>>,
    /// The per-budget solve refining a quick offloading plan (`Stage`):
    /// a newer budget ends it, the main worker keeps its table.
    refine: RefCell<Option<Remote>>,
    /// The last chain loaded, for a side worker started later.
    last_load: RefCell<Option<Request>>,
    /// Whether tables are built in the worker (long chains).
    tables_remote: Cell<bool>,
    handler: RefCell<Option<Handler>>,
}

struct Remote {
    worker: Worker,
    ready: bool,
    queue: Vec<Envelope>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

impl Default for Backend {
    fn default() -> Backend {
        Backend(Rc::new(Inner {
            local: RefCell::new(PlannerService::new(Role::Page)),
            remote: RefCell::new(None),
            side: RefCell::new(None),
            compare: RefCell::new(None),
            refine: RefCell::new(None),
            last_load: RefCell::new(None),
            tables_remote: Cell::new(false),
            handler: RefCell::new(None),
        }))
    }
}

impl Backend {
    /// Sets who receives responses (the app state).
    pub fn set_handler(&self, handler: impl Fn(Response) + 'static) {
        *self.0.handler.borrow_mut() = Some(Rc::new(handler));
    }

    fn dispatch(&self, response: Response) {
        let handler = self.0.handler.borrow().clone();
        if let Some(h) = handler {
            h(response);
        }
    }

    /// Whether long builds go to the worker; starts one if there is none.
    pub fn use_worker(&self, tables_remote: bool) {
        self.0.tables_remote.set(tables_remote);
        if self.0.remote.borrow().is_some() {
            return;
        }
        match self.spawn(Lane::Main) {
            Ok(r) => *self.0.remote.borrow_mut() = Some(r),
            Err(e) => web_sys::console::warn_1(&e),
        }
    }

    /// Whether this chain's tables are built in the worker.
    /// The compare row of a table the page holds, at `budget` (None: not
    /// here; see `Service::summary`).
    pub fn summary(
        &self,
        algorithm: remat_core::solvers::Algorithm,
        budget: u64,
        bandwidth: Option<f64>,
    ) -> Option<crate::planning::protocol::Summary> {
        self.0.local.borrow().summary(algorithm, budget, bandwidth)
    }

    pub fn tables_remote(&self) -> bool {
        self.0.tables_remote.get()
    }

    pub fn is_remote(&self) -> bool {
        self.0.remote.borrow().is_some()
    }

    /// Stops a long build: the only way to interrupt a busy worker is to
    /// end it. Tables already moved to the page stay, so planning goes on.
    pub fn cancel(&self) {
        let remote = self.0.remote.borrow_mut().take();
        end(remote);
    }

    /// Stops the side worker's search or sweep; the next one starts a
    /// fresh side worker.
    pub fn cancel_side(&self) {
        let side = self.0.side.borrow_mut().take();
        end(side);
    }

    /// Stops the compare row being solved; the next row starts a fresh
    /// compare worker.
    pub fn cancel_compare(&self) {
        let compare = self.0.compare.borrow_mut().take();
        end(compare);
    }

    /// Stops the refinement being solved (its budget is no longer shown);
    /// the next one starts a fresh refine worker.
    pub fn cancel_refine(&self) {
        let refine = self.0.refine.borrow_mut().take();
        end(refine);
    }

    /// Starts a fresh worker after a cancel and gives it the chain, without
    /// touching the page's tables.
    pub fn respawn(&self, generation: u64, chain: String) {
        self.use_worker(self.tables_remote());
        self.post_remote(Request::Load { generation, chain });
    }

    /// Sends a request; answers from the page are dispatched before this
    /// returns.
    pub fn send(&self, request: Request) {
        if let Request::Load { .. } = &request {
            // Every side needs the chain.
            self.post_remote(request.clone());
            self.post(Lane::Side, request.clone());
            self.post(Lane::Compare, request.clone());
            self.post(Lane::Refine, request.clone());
            *self.0.last_load.borrow_mut() = Some(request.clone());
        } else if matches!(request, Request::MaxBatch { .. } | Request::Sweep { .. }) {
            return self.post_started(Lane::Side, request);
        } else if matches!(request, Request::Compare { .. }) {
            return self.post_started(Lane::Compare, request);
        } else if matches!(&request, Request::Plan { ask, .. } if ask.stage == Stage::Refine) {
            return self.post_started(Lane::Refine, request);
        } else if self.is_remote() && runs_in_worker(&request, self.tables_remote()) {
            self.post_remote(request);
            return;
        }
        let mut answers = Vec::new();
        self.0
            .local
            .borrow_mut()
            .handle(request, &now_ms, &mut |r| answers.push(r));
        // Dispatch after the borrow ends: handlers may send again.
        for a in answers {
            self.dispatch(a);
        }
    }

    /// Posts to the worker of `lane` (side or compare), started (and given
    /// the chain) first if there is none.
    fn post_started(&self, lane: Lane, request: Request) {
        if self.worker_of(lane).borrow().is_none() {
            match self.spawn(lane) {
                Ok(r) => *self.worker_of(lane).borrow_mut() = Some(r),
                Err(e) => return web_sys::console::warn_1(&e),
            }
            let load = self.0.last_load.borrow().clone();
            if let Some(load) = load {
                self.post(lane, load);
            }
        }
        self.post(lane, request);
    }

    fn spawn(&self, lane: Lane) -> Result<Remote, JsValue> {
        let options = WorkerOptions::new();
        let worker = Worker::new_with_options("./worker_loader.js", &options)?;
        let me = Rc::downgrade(&self.0);
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(b) = upgrade(&me) {
                b.on_worker_message(lane, &event.data());
            }
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        let me = Rc::downgrade(&self.0);
        let onerror =
            Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |e: web_sys::ErrorEvent| {
                if let Some(b) = upgrade(&me) {
                    b.dispatch(Response::Failed {
                        generation: ANY_GENERATION,
                        task: None,
                        error: format!("planner worker failed: {}", e.message()),
                    });
                }
            });
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        Ok(Remote {
            worker,
            ready: false,
            queue: Vec::new(),
            _onmessage: onmessage,
            _onerror: onerror,
        })
    }

    fn on_worker_message(&self, lane: Lane, data: &JsValue) {
        let response = match Envelope::from_js(data).and_then(Envelope::decode::<Response>) {
            Ok(r) => r,
            Err(e) => {
                web_sys::console::error_1(&format!("worker reply: {e}").into());
                return;
            }
        };
        if let Response::Ready = response {
            return self.flush_queue(lane);
        }
        // A table is installed here (copied into the page's memory once);
        // from then on its algorithm plans in the page.
        let received = self.0.local.borrow_mut().receive(response);
        if let Some(response) = received {
            self.dispatch(response);
        }
    }

    fn worker_of(&self, lane: Lane) -> &RefCell<Option<Remote>> {
        match lane {
            Lane::Main => &self.0.remote,
            Lane::Side => &self.0.side,
            Lane::Compare => &self.0.compare,
            Lane::Refine => &self.0.refine,
        }
    }

    fn flush_queue(&self, lane: Lane) {
        if let Some(remote) = self.worker_of(lane).borrow_mut().as_mut() {
            remote.ready = true;
            for envelope in remote.queue.drain(..) {
                post(&remote.worker, envelope);
            }
        }
    }

    /// Posts to the main worker (queued until it is ready); nothing if
    /// there is none.
    fn post_remote(&self, request: Request) {
        self.post(Lane::Main, request)
    }

    fn post(&self, lane: Lane, request: Request) {
        if let Some(remote) = self.worker_of(lane).borrow_mut().as_mut() {
            let envelope = Envelope::encode(request);
            if remote.ready {
                post(&remote.worker, envelope);
            } else {
                remote.queue.push(envelope);
            }
        }
    }
}

/// Which worker: the one for tables and plans, the side one for the
/// max-batch search and the sweep, or the one for the compare rows.
#[derive(Clone, Copy)]
enum Lane {
    Main,
    Side,
    Compare,
    Refine,
}

/// Ends a worker. Messages it posted before it ended may still be
/// delivered: they must find no handler rather than the closures dropped
/// with it (a page error).
fn end(remote: Option<Remote>) {
    if let Some(r) = remote {
        r.worker.set_onmessage(None);
        r.worker.set_onerror(None);
        r.worker.terminate();
    }
}

fn upgrade(inner: &Weak<Inner>) -> Option<Backend> {
    inner.upgrade().map(Backend)
}

fn post(worker: &Worker, envelope: Envelope) {
    // Requests carry no table: nothing to transfer.
    let _ = worker.post_message(&envelope.into_js().0);
}

pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}
