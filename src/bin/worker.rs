//! The Web Worker: owns the planner tables of long chains so that building
//! them (seconds at L = 300) never blocks the page. Trunk builds this bin
//! with `data-type="worker"`; the page starts it from `worker_loader.js`.

use remat_explorer::planning::{PlannerSet, Request, Response};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

fn main() {
    console_error_panic_hook::set_once();
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let set = RefCell::new(PlannerSet::default());
    let reply = scope.clone();
    let post = move |response: &Response| {
        if let Ok(text) = serde_json::to_string(response) {
            let _ = reply.post_message(&JsValue::from_str(&text));
        }
    };
    let post_ready = post.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let Some(text) = event.data().as_string() else {
            return;
        };
        let request: Request = match serde_json::from_str(&text) {
            Ok(r) => r,
            Err(e) => {
                post(&Response::Failed {
                    generation: 0,
                    algorithm: None,
                    error: format!("worker: bad request: {e}"),
                });
                return;
            }
        };
        let now = || js_sys::Date::now();
        set.borrow_mut()
            .handle(request, &now, &mut |response| post(&response));
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The worker lives as long as the page keeps it; so does its handler.
    onmessage.forget();
    post_ready(&Response::Ready);
}
