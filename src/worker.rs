//! Where planning runs. The page always keeps a `PlannerSet` and answers
//! every slider move from it, synchronously. For long chains the expensive
//! part — building a rotor/revolve table (seconds at L = 300) — runs in a Web
//! Worker, so the page never freezes and the build can be cancelled; the
//! finished table then moves to the page (a transferred `Float64Array`, not
//! a copy) and the worker forgets it.
//!
//! Offloading algorithms have no table: each of their plans, the compare rows
//! and the sweeps are solves of their own, so they always go to the worker,
//! whatever the chain's length; a worker is kept for every chain.
//!
//! Both sides answer with the same `Response`s, so the app state does not
//! care where a request ran.

use crate::planning::{build_cost, PlannerSet, Request, Response};
use remat_core::solvers::Algorithm;
use remat_core::Chain;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker, WorkerOptions};

/// Tables whose build costs more than this (≈ 50 ms of wasm) go to the worker.
pub const WORKER_THRESHOLD: f64 = 2.0e7;

pub fn wants_worker(chain: &Chain) -> bool {
    build_cost(chain) > WORKER_THRESHOLD
}

type Handler = Rc<dyn Fn(Response)>;

struct Remote {
    worker: Worker,
    ready: bool,
    queue: Vec<String>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

#[derive(Default)]
struct Backend {
    /// Whether tables are built in the worker (long chains).
    tables_remote: bool,
    /// The page's planners: every table ends up here.
    local: PlannerSet,
    /// The builder of long tables, while there is one.
    remote: Option<Remote>,
}

thread_local! {
    static BACKEND: RefCell<Backend> = RefCell::new(Backend::default());
    static HANDLER: RefCell<Option<Handler>> = const { RefCell::new(None) };
}

/// Sets who receives responses (the app state).
pub fn set_handler(handler: impl Fn(Response) + 'static) {
    HANDLER.with(|h| *h.borrow_mut() = Some(Rc::new(handler)));
}

fn dispatch(response: Response) {
    if let Some(h) = HANDLER.with(|h| h.borrow().clone()) {
        h(response);
    }
}

/// Whether long builds go to a worker: keeps a running one, starts one if
/// needed, ends it when the chain is short.
pub fn use_worker(tables_remote: bool) {
    BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        b.tables_remote = tables_remote;
        if b.remote.is_none() {
            match spawn() {
                Ok(r) => b.remote = Some(r),
                Err(e) => web_sys::console::warn_1(&e),
            }
        }
    });
}

/// Whether this chain's tables are built in the worker.
pub fn tables_remote() -> bool {
    BACKEND.with(|b| b.borrow().tables_remote)
}

pub fn is_remote() -> bool {
    BACKEND.with(|b| b.borrow().remote.is_some())
}

/// Stops a long build: the only way to interrupt a busy worker is to end it.
/// Tables already moved to the page stay, so planning goes on.
pub fn cancel() {
    BACKEND.with(|b| {
        if let Some(r) = b.borrow_mut().remote.take() {
            r.worker.terminate();
        }
    });
}

/// Starts a fresh worker after a cancel and gives it the chain, without
/// touching the page's tables.
pub fn respawn(generation: u64, chain: String) {
    use_worker(tables_remote());
    post_remote(&Request::Load { generation, chain });
}

fn spawn() -> Result<Remote, JsValue> {
    let options = WorkerOptions::new();
    let worker = Worker::new_with_options("./worker_loader.js", &options)?;
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        on_worker_message(event.data());
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    let onerror = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |e: web_sys::ErrorEvent| {
        dispatch(Response::Failed {
            generation: u64::MAX,
            algorithm: None,
            error: format!("planner worker failed: {}", e.message()),
        });
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

/// A worker message is JSON text, or `{text, values}` when a built table
/// comes with it.
fn on_worker_message(data: JsValue) {
    let (text, values) = match data.as_string() {
        Some(t) => (t, None),
        None => {
            let text = js_sys::Reflect::get(&data, &"text".into())
                .ok()
                .and_then(|t| t.as_string());
            let values = js_sys::Reflect::get(&data, &"values".into())
                .ok()
                .and_then(|v| v.dyn_into::<js_sys::Float64Array>().ok());
            match text {
                Some(t) => (t, values),
                None => return,
            }
        }
    };
    let response = match serde_json::from_str::<Response>(&text) {
        Ok(r) => r,
        Err(e) => {
            web_sys::console::error_1(&format!("worker reply: {e}").into());
            return;
        }
    };
    let response = match response {
        Response::Ready => {
            flush_queue();
            return;
        }
        Response::Built {
            generation,
            algorithm,
            min_budget,
            build_ms,
            curve,
            table: Some(grid),
        } => {
            // Copy the table into the page's wasm memory once; from now on
            // this algorithm plans in the page.
            let installed = BACKEND.with(|b| {
                let mut b = b.borrow_mut();
                if b.local.generation() != generation {
                    return Ok(false); // a table for a chain no longer shown
                }
                let Some(values) = values else {
                    return Err("the table's values are missing".to_string());
                };
                b.local.insert_table(grid, values.to_vec()).map(|_| true)
            });
            match installed {
                Ok(true) => Response::Built {
                    generation,
                    algorithm,
                    min_budget,
                    build_ms,
                    curve,
                    table: None,
                },
                Ok(false) => return,
                Err(error) => Response::Failed {
                    generation,
                    algorithm: Some(algorithm),
                    error,
                },
            }
        }
        Response::Planned(mut planned) => {
            // An exact re-plan built in the worker: the other algorithms'
            // tables live here, so their summaries are made here.
            if let Ok(alg) = Algorithm::from_name(&planned.algorithm) {
                planned.summaries = BACKEND.with(|b| {
                    b.borrow()
                        .local
                        .summaries(alg, planned.budget, planned.bandwidth)
                });
            }
            Response::Planned(planned)
        }
        other => other,
    };
    dispatch(response);
}

fn flush_queue() {
    BACKEND.with(|b| {
        if let Some(Remote {
            worker,
            ready,
            queue,
            ..
        }) = &mut b.borrow_mut().remote
        {
            *ready = true;
            for text in queue.drain(..) {
                let _ = worker.post_message(&JsValue::from_str(&text));
            }
        }
    });
}

/// Posts to the worker (queued until it is ready); false if there is none.
fn post_remote(request: &Request) -> bool {
    BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        let Some(Remote {
            worker,
            ready,
            queue,
            ..
        }) = &mut b.remote
        else {
            return false;
        };
        let Ok(text) = serde_json::to_string(request) else {
            return false;
        };
        if *ready {
            let _ = worker.post_message(&JsValue::from_str(&text));
        } else {
            queue.push(text);
        }
        true
    })
}

/// Whether a request goes to the worker: builds of DP tables (and exact
/// re-plans, which build one) of long chains, and every offloading solve.
fn goes_remote(request: &Request) -> bool {
    let dp = |name: &str| Algorithm::from_name(name).is_ok_and(|a| a.uses_slots());
    let offloads = |name: &str| Algorithm::from_name(name).is_ok_and(|a| a.offloads());
    is_remote()
        && match request {
            Request::Load { .. } => false,
            Request::Build { algorithm, .. } => dp(algorithm) && tables_remote(),
            Request::Plan {
                algorithm, exact, ..
            } => offloads(algorithm) || (*exact && dp(algorithm) && tables_remote()),
            Request::Compare { .. } | Request::Sweep { .. } => true,
        }
}

/// Sends a request; answers from the page are dispatched before this returns.
pub fn send(request: Request) {
    if let Request::Load { .. } = &request {
        // Both sides need the chain.
        post_remote(&request);
    } else if goes_remote(&request) {
        post_remote(&request);
        return;
    }
    let mut answers = Vec::new();
    BACKEND.with(|b| {
        let now = now_ms;
        b.borrow_mut()
            .local
            .handle(request, &now, &mut |r| answers.push(r));
    });
    // Dispatch after the borrow ends: handlers may send again.
    for a in answers {
        dispatch(a);
    }
}

pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}
