//! Where planning runs: in the page for short chains, in a Web Worker for
//! long ones. Both answer with the same `Response`s, so the rest of the app
//! does not care which one it talks to.

use crate::planning::{build_cost, PlannerSet, Request, Response};
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

enum Backend {
    Local(PlannerSet),
    Remote {
        worker: Worker,
        ready: bool,
        queue: Vec<String>,
        _onmessage: Closure<dyn FnMut(MessageEvent)>,
        _onerror: Closure<dyn FnMut(web_sys::ErrorEvent)>,
    },
}

thread_local! {
    static BACKEND: RefCell<Option<Backend>> = const { RefCell::new(None) };
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

/// Picks the backend for a chain: keeps a running worker, starts one if needed.
pub fn use_worker(remote: bool) {
    BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        let is_remote = matches!(&*b, Some(Backend::Remote { .. }));
        let is_local = matches!(&*b, Some(Backend::Local(_)));
        if remote && !is_remote {
            match spawn() {
                Ok(backend) => *b = Some(backend),
                Err(e) => {
                    // No worker (old browser, file://): plan in the page.
                    web_sys::console::warn_1(&e);
                    *b = Some(Backend::Local(PlannerSet::default()));
                }
            }
        } else if !remote && !is_local {
            if let Some(Backend::Remote { worker, .. }) = b.take() {
                worker.terminate();
            }
            *b = Some(Backend::Local(PlannerSet::default()));
        }
    });
}

pub fn is_remote() -> bool {
    BACKEND.with(|b| matches!(&*b.borrow(), Some(Backend::Remote { .. })))
}

/// Stops a long build: the only way to interrupt a busy worker is to end it.
pub fn cancel() {
    BACKEND.with(|b| {
        if let Some(Backend::Remote { worker, .. }) = b.borrow_mut().take() {
            worker.terminate();
        }
    });
}

fn spawn() -> Result<Backend, JsValue> {
    let options = WorkerOptions::new();
    let worker = Worker::new_with_options("./worker_loader.js", &options)?;
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let Some(text) = event.data().as_string() else {
            return;
        };
        match serde_json::from_str::<Response>(&text) {
            Ok(Response::Ready) => flush_queue(),
            Ok(response) => dispatch(response),
            Err(e) => web_sys::console::error_1(&format!("worker reply: {e}").into()),
        }
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
    Ok(Backend::Remote {
        worker,
        ready: false,
        queue: Vec::new(),
        _onmessage: onmessage,
        _onerror: onerror,
    })
}

fn flush_queue() {
    BACKEND.with(|b| {
        if let Some(Backend::Remote {
            worker,
            ready,
            queue,
            ..
        }) = &mut *b.borrow_mut()
        {
            *ready = true;
            for text in queue.drain(..) {
                let _ = worker.post_message(&JsValue::from_str(&text));
            }
        }
    });
}

/// Sends a request; local answers are dispatched before this returns.
pub fn send(request: Request) {
    let mut answers = Vec::new();
    BACKEND.with(|b| {
        let mut b = b.borrow_mut();
        if b.is_none() {
            *b = Some(Backend::Local(PlannerSet::default()));
        }
        match b.as_mut().expect("just set") {
            Backend::Local(set) => {
                let now = now_ms;
                set.handle(request, &now, &mut |r| answers.push(r));
            }
            Backend::Remote {
                worker,
                ready,
                queue,
                ..
            } => {
                let Ok(text) = serde_json::to_string(&request) else {
                    return;
                };
                if *ready {
                    let _ = worker.post_message(&JsValue::from_str(&text));
                } else {
                    queue.push(text);
                }
            }
        }
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
