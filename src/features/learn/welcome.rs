//! A first visit's welcome: what the page is for, and the way in — the
//! guide on the teaching chain. Shown once (remembered in localStorage),
//! never over a link that names a view.

use crate::state::use_app;
use leptos::prelude::*;

/// The localStorage key that remembers the welcome was seen.
pub const WELCOME_SEEN: &str = "remat-welcome-seen";

/// Set for this tab while the welcome waits for an answer: the page writes
/// its view into the URL at once, so a reload would otherwise read a link
/// and lose the welcome (issue 26).
const WELCOME_PENDING: &str = "remat-welcome-pending";

fn session() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.session_storage().ok().flatten())
}

/// Whether to greet: a first visit, without a link naming a view (or a
/// reload of the page that greeted and was not answered yet).
pub fn wants_welcome() -> bool {
    let seen = crate::io::storage().and_then(|s| s.get_item(WELCOME_SEEN).ok().flatten());
    let pending = session()
        .and_then(|s| s.get_item(WELCOME_PENDING).ok().flatten())
        .is_some();
    let greet = seen.is_none() && (pending || !crate::io::read_url().names_a_view());
    if greet {
        if let Some(s) = session() {
            let _ = s.set_item(WELCOME_PENDING, "1");
        }
    }
    greet
}

fn remember() {
    if let Some(s) = crate::io::storage() {
        let _ = s.set_item(WELCOME_SEEN, "1");
    }
    if let Some(s) = session() {
        let _ = s.remove_item(WELCOME_PENDING);
    }
}

#[component]
pub fn Welcome() -> impl IntoView {
    let state = use_app();
    let shown = RwSignal::new(wants_welcome());
    let dismiss = move || {
        remember();
        shown.set(false);
    };
    let start = move |_| {
        dismiss();
        super::guide::load_teaching_chain(state);
        let doc = leptos::prelude::document();
        if let Some(details) = doc.query_selector("#guide details").ok().flatten() {
            let _ = details.set_attribute("open", "");
            // Its heading and first paragraph below the sticky bar, not
            // under it (issue 45).
            crate::kit::scroll::below_bar("guide");
        }
    };
    move || {
        shown.get().then(|| {
            view! {
                <section id="welcome" class="card welcome" role="dialog" aria-labelledby="welcome-title">
                    <h2 id="welcome-title">"Welcome to the Remat explorer"</h2>
                    <p>
                        "A training step keeps every layer's activations for the backward pass. "
                        "When they do not fit in GPU memory, some are dropped and recomputed, or sent to host memory and brought back. "
                        "Drag the memory budget and watch what each algorithm keeps, recomputes and moves, and what it costs in time."
                    </p>
                    <div class="welcome-actions">
                        <button id="welcome-guide" class="primary" on:click=start>
                            "Start with the guide on the 10-stage teaching chain"
                        </button>
                        <button id="welcome-dismiss" on:click=move |_| dismiss()>
                            "Skip: show the measured VGG-19"
                        </button>
                    </div>
                </section>
            }
        })
    }
}
