//! Data in and out of the page: chain import, exports, the URL, localStorage.

use crate::planning::Planned;
use crate::state::{AppState, ChainSource, Current, Notice};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::format::{
    read_any_chain, read_schedule, write_chain, write_schedule, Predicted, ScheduleFile,
    SCHEDULE_FORMAT,
};
use remat_core::simulator::chrome_trace_json;
use remat_core::simulator::judge;
use remat_core::solvers::Algorithm;
use std::time::Duration;
use wasm_bindgen::JsCast;

const STORAGE_KEY: &str = "remat.imported-chain";
pub const DEFAULT_EXAMPLE: &str = "vgg19-h100";

/// What the URL says: `#chain=vgg19&algorithm=rotor&budget=…&bandwidth=…`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UrlState {
    pub chain: Option<String>,
    pub algorithm: Option<Algorithm>,
    pub budget: Option<u64>,
    pub bandwidth: Option<f64>,
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
    Effect::new(move |_| {
        let chain = match state.source.get() {
            ChainSource::Example(name) => name,
            ChainSource::Imported => "imported".to_string(),
        };
        let hash = format!(
            "#chain={}&algorithm={}&budget={}&bandwidth={}",
            chain,
            state.algorithm.get().name(),
            state.budget.get(),
            state.bandwidth.get()
        );
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
        state.algorithm.set(alg);
    }
    if let Some(bw) = url.bandwidth {
        state.bandwidth.set(bw);
    }
    let name = url.chain.clone().unwrap_or_else(|| DEFAULT_EXAMPLE.into());
    if name == "imported" {
        match load_stored().map(|t| read_any_chain(&t)) {
            Some(Ok(chain)) => {
                state.load_chain(chain, ChainSource::Imported, url.budget);
                return;
            }
            _ => state.notice.set(Some(Notice::Info(
                "The link names an imported chain that this browser no longer has; showing an example instead.".into(),
            ))),
        }
    }
    let (name, chain) = match examples::by_name(&name) {
        Some(c) => (name, c),
        None => (DEFAULT_EXAMPLE.to_string(), default_chain()),
    };
    state.load_chain(chain, ChainSource::Example(name), url.budget);
}

/// The chain the page opens with: a measured one.
pub fn default_chain() -> remat_core::Chain {
    examples::by_name(DEFAULT_EXAMPLE).expect("the default example exists")
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

fn load_stored() -> Option<String> {
    storage().and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
}

/// Reads an imported file — a chain, or a schedule for the loaded chain; a
/// bad file leaves the loaded chain and plan in place.
pub fn import_text(state: AppState, file_name: &str, text: &str) {
    if text.contains(SCHEDULE_FORMAT) {
        return import_schedule(state, file_name, text);
    }
    match read_any_chain(text) {
        Ok(chain) => {
            if let Some(s) = storage() {
                // Survives a reload; quota errors only cost that convenience.
                let _ = s.set_item(STORAGE_KEY, &write_chain(&chain));
            }
            state.notice.set(Some(Notice::Info(format!(
                "Imported {file_name}: {} stages.",
                chain.len()
            ))));
            state.load_chain(chain, ChainSource::Imported, None);
        }
        Err(e) => state.notice.set(Some(Notice::Error(format!(
            "Could not import {file_name}: {e}. The previous chain stays loaded."
        )))),
    }
}

/// Shows a `remat-schedule/1` file for the loaded chain once the simulator
/// (the same judge as `remat simulate`) accepts it: complete, valid, with the
/// file's budget as memory limit. It stays shown until the next plan.
fn import_schedule(state: AppState, file_name: &str, text: &str) {
    let refuse = |why: String| {
        state.notice.set(Some(Notice::Error(format!(
            "Refused {file_name}: {why}. The current plan stays shown."
        ))))
    };
    let schedule = match read_schedule(text) {
        Ok(s) => s,
        Err(e) => return refuse(e.to_string()),
    };
    let chain = state.chain.get_untracked();
    let warning = match schedule.check_chain(&chain) {
        Ok(w) => w,
        Err(e) => return refuse(e.to_string()),
    };
    let bandwidth = schedule
        .bandwidth_bytes_per_s
        .or(Some(state.bandwidth.get_untracked()));
    let trace = match judge(&chain, &schedule.ops, schedule.budget_bytes, bandwidth) {
        Ok(t) => t,
        Err(e) => return refuse(format!("invalid schedule: {e}")),
    };
    let previous = state.current.get_untracked();
    let algorithm = if schedule.algorithm.is_empty() {
        state.algorithm.get_untracked().name().to_string()
    } else {
        schedule.algorithm.clone()
    };
    state.notice.set(Some(Notice::Info(format!(
        "Showing {file_name}: {} ops, peak {} within {}.{}",
        schedule.ops.len(),
        remat_core::model::units::format_bytes(trace.peak_bytes),
        remat_core::model::units::format_bytes(schedule.budget_bytes),
        warning
            .map(|w| format!(" Warning: {w}"))
            .unwrap_or_default()
    ))));
    state.current.set(Some(std::sync::Arc::new(Current {
        chain,
        planned: Planned {
            generation: previous.as_ref().map_or(0, |c| c.planned.generation),
            id: previous.as_ref().map_or(0, |c| c.planned.id),
            algorithm,
            budget: schedule.budget_bytes,
            bandwidth,
            exact: false,
            predicted_seconds: schedule.predicted.as_ref().map(|p| p.makespan_seconds),
            predicted_peak_bytes: schedule.predicted.as_ref().map(|p| p.peak_bytes),
            detail: format!("schedule from {file_name}"),
            error: None,
            summaries: Vec::new(),
            ops: Some(schedule.ops),
        },
        trace: Some(Ok(trace)),
    })));
}

pub fn import_file(state: AppState, file: web_sys::File) {
    let name = file.name();
    let promise = file.text();
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(text) => import_text(state, &name, &text.as_string().unwrap_or_default()),
            Err(_) => state
                .notice
                .set(Some(Notice::Error(format!("Could not read {name}.")))),
        }
    });
}

/// Starts a download of `text`.
pub fn download(file_name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let document = leptos::prelude::document();
    if let Ok(a) = document.create_element("a") {
        let a: web_sys::HtmlAnchorElement = a.unchecked_into();
        a.set_href(&url);
        a.set_download(file_name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

pub fn export_schedule(state: AppState) {
    let Some(current) = state.current.get_untracked() else {
        return;
    };
    let (Some(ops), Some(trace)) = (current.planned.ops.clone(), current.ok_trace()) else {
        state.notice.set(Some(Notice::Error(
            "No schedule to export: this budget is infeasible for the algorithm.".into(),
        )));
        return;
    };
    let file = ScheduleFile::new(
        &current.chain,
        &current.planned.algorithm,
        current.planned.budget,
        Some(state.bandwidth.get_untracked()),
        Predicted {
            makespan_seconds: trace.makespan_seconds,
            peak_bytes: trace.peak_bytes,
        },
        ops,
    );
    download(
        &format!(
            "{}.{}.schedule.json",
            slug(&current.chain.name),
            current.planned.algorithm
        ),
        "application/json",
        &write_schedule(&file),
    );
}

pub fn export_trace(state: AppState) {
    let Some(current) = state.current.get_untracked() else {
        return;
    };
    if let Some(trace) = current.ok_trace() {
        download(
            &format!("{}.trace.json", slug(&current.chain.name)),
            "application/json",
            &chrome_trace_json(&current.chain, current.ops(), trace),
        );
    }
}

pub fn export_chain(state: AppState) {
    let chain = state.chain.get_untracked();
    download(
        &format!("{}.chain.json", slug(&chain.name)),
        "application/json",
        &write_chain(&chain),
    );
}

/// Saves one chart (an inline `<svg>` with presentation attributes, so it
/// looks the same outside the page).
pub fn export_svg(element_id: &str, file_name: &str) {
    let Some(el) = leptos::prelude::document().get_element_by_id(element_id) else {
        return;
    };
    let Ok(serializer) = web_sys::XmlSerializer::new() else {
        return;
    };
    if let Ok(text) = serializer.serialize_to_string(&el) {
        download(file_name, "image/svg+xml", &text);
    }
}
