//! The Web Worker: builds the rotor/revolve tables of long chains so that
//! building them (seconds at L = 300) never blocks the page, then moves each
//! finished table to the page (its values as a transferred `Float64Array`)
//! and forgets it. Trunk builds this bin with `data-type="worker"`; the page
//! starts it from `worker_loader.js`.

use remat_core::solvers::Algorithm;
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
    let reply_table = scope.clone();
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
        // Progress goes out at once; a finished table goes out after
        // `handle`, taken out of the set.
        let mut built = Vec::new();
        set.borrow_mut()
            .handle(request, &now, &mut |response| match response {
                Response::Built { .. } => built.push(response),
                other => post(&other),
            });
        for response in built {
            let Response::Built {
                generation,
                algorithm,
                min_budget,
                build_ms,
                curve,
                ..
            } = response
            else {
                continue;
            };
            let table = Algorithm::from_name(&algorithm)
                .ok()
                .and_then(|alg| set.borrow_mut().take_table(alg));
            let Some((grid, values)) = table else {
                post(&Response::Built {
                    generation,
                    algorithm,
                    min_budget,
                    build_ms,
                    curve,
                    table: None,
                });
                continue;
            };
            let response = Response::Built {
                generation,
                algorithm,
                min_budget,
                build_ms,
                curve,
                table: Some(grid),
            };
            let Ok(text) = serde_json::to_string(&response) else {
                continue;
            };
            // One copy out of wasm memory, then the buffer is moved (not
            // cloned) to the page.
            let array = js_sys::Float64Array::from(&values[..]);
            drop(values);
            let message = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&message, &"text".into(), &text.into());
            let _ = js_sys::Reflect::set(&message, &"values".into(), &array);
            let transfer = js_sys::Array::of1(&array.buffer());
            let _ = reply_table.post_message_with_transfer(&message, &transfer);
        }
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The worker lives as long as the page keeps it; so does its handler.
    onmessage.forget();
    post_ready(&Response::Ready);
}
