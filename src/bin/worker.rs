//! The Web Worker: builds the rotor/revolve tables of long chains so that
//! building them (seconds at L = 300) never blocks the page, and solves the
//! offloading algorithms. Its `PlannerService` hands each finished table
//! out with its answer; the envelope moves the values to the page as a
//! transferred `Float64Array`. Trunk builds this bin with
//! `data-type="worker"`; the page starts it from `worker_loader.js`.

#[cfg(target_arch = "wasm32")]
fn main() {
    use remat_explorer::planning::protocol::{Envelope, Request, Response};
    use remat_explorer::planning::service::{PlannerService, Role};
    use std::cell::RefCell;
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

    console_error_panic_hook::set_once();
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let service = RefCell::new(PlannerService::new(Role::Worker));
    let reply = scope.clone();
    let post = move |response: Response| {
        let (message, transfer) = Envelope::encode(response).into_js();
        let _ = match transfer {
            Some(transfer) => reply.post_message_with_transfer(&message, &transfer),
            None => reply.post_message(&message),
        };
    };
    let ready = post.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let request = Envelope::from_js(&event.data()).and_then(Envelope::decode::<Request>);
        match request {
            Ok(request) => service
                .borrow_mut()
                .handle(request, &js_sys::Date::now, &mut |r| post(r)),
            Err(e) => post(Response::Failed {
                generation: 0,
                task: None,
                error: format!("worker: bad request: {e}"),
            }),
        }
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The worker lives as long as the page keeps it; so does its handler.
    onmessage.forget();
    ready(Response::Ready);
}

/// The explorer runs in a browser only.
#[cfg(not(target_arch = "wasm32"))]
fn main() {}
