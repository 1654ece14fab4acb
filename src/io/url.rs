//! The URL holds the view: `#chain=vgg19&algorithm=rotor&budget=…&bandwidth=…`,
//! and `&min=pytorch|chen` while the minimum memory mode is on.

use super::import::load_stored;
use crate::state::{AppState, ChainSource, MinMemory};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::format::read_any_chain;
use remat_core::solvers::hong::Model;
use remat_core::solvers::Algorithm;
use std::time::Duration;

pub const DEFAULT_EXAMPLE: &str = "vgg19-h100";

/// What the URL says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UrlState {
    pub chain: Option<String>,
    pub algorithm: Option<Algorithm>,
    pub budget: Option<u64>,
    pub bandwidth: Option<f64>,
    /// The minimum memory mode, on in this model (`min=pytorch|chen`).
    pub min_memory: Option<Model>,
}

pub fn read_url() -> UrlState {
    let hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    let mut url = UrlState::default();
    for pair in hash.trim_start_matches('#').split('&') {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let value = js_sys::decode_uri_component(value)
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        match key {
            "chain" => url.chain = Some(value),
            "algorithm" => url.algorithm = Algorithm::from_name(&value).ok(),
            "budget" => url.budget = value.parse().ok(),
            "bandwidth" => url.bandwidth = value.parse().ok().filter(|b: &f64| *b > 0.0),
            "min" => url.min_memory = value.parse().ok(),
            _ => {}
        }
    }
    url
}

/// Keeps the URL in step with the state, so a copied link reproduces the view.
/// Written once the controls rest for a moment: `history.replaceState` costs
/// Chrome ~6 ms a call, most of a slider move's frame at L = 300.
pub fn sync_url(state: AppState) {
    let pending = StoredValue::new_local(None::<TimeoutHandle>);
    let controls = state.controls;
    let min_memory = use_context::<MinMemory>();
    Effect::new(move |_| {
        let mut hash = format!(
            "#chain={}&algorithm={}&budget={}&bandwidth={}",
            state.loaded.source.get().name(),
            controls.algorithm.get().name(),
            controls.budget.get(),
            controls.bandwidth.get()
        );
        if let Some(m) = min_memory.filter(|m| m.on.get()) {
            hash.push_str(&format!("&min={}", m.model.get().name()));
        }
        if let Some(h) = pending.get_value() {
            h.clear();
        }
        let write = move || {
            pending.set_value(None);
            if let Some(w) = web_sys::window() {
                if w.location().hash().ok().as_deref() != Some(hash.as_str()) {
                    // replaceState: dragging the slider must not flood the history.
                    let _ = w.history().and_then(|h| {
                        h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&hash))
                    });
                }
            }
        };
        pending.set_value(set_timeout_with_handle(write, Duration::from_millis(150)).ok());
    });
}

/// Loads the chain the URL names (or the last imported one, or the default).
pub fn initial_load(state: AppState) {
    let url = read_url();
    if let Some(alg) = url.algorithm {
        state.controls.algorithm.set(alg);
    }
    if let Some(bw) = url.bandwidth {
        state.controls.bandwidth.set(bw);
    }
    if let (Some(model), Some(mode)) = (url.min_memory, use_context::<MinMemory>()) {
        mode.model.set(model);
        mode.on.set(true);
    }
    let name = url.chain.clone().unwrap_or_else(|| DEFAULT_EXAMPLE.into());
    if name == "imported" {
        match load_stored().map(|t| read_any_chain(&t)) {
            Some(Ok(chain)) => {
                state.load_chain(chain, ChainSource::Imported, url.budget);
                return;
            }
            _ => state.view.info(
                "The link names an imported chain that this browser no longer has; showing an example instead.".into(),
            ),
        }
    }
    let (name, chain) = match examples::by_name(&name) {
        Some(c) => (name, c),
        None => (DEFAULT_EXAMPLE.to_string(), super::default_chain()),
    };
    state.load_chain(chain, ChainSource::Example(name), url.budget);
}
