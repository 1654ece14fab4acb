//! Imported files: a chain (kept in localStorage across reloads), a
//! schedule for the loaded chain, or a measured run of the plan on screen
//! (a `remat-run/1` file, or a PyTorch CUDA memory snapshot laid over it).

use crate::measurement::summary;
use crate::planning::current::Current;
use crate::planning::protocol::Planned;
use crate::sizing::scaling::ExampleScale;
use crate::state::{AppState, LoadedRun};
use leptos::prelude::*;
use remat_core::format::{
    cuda_snapshot, read_any_chain, read_run, read_schedule, write_chain, RUN_FORMAT,
    SCHEDULE_FORMAT,
};
use remat_core::measured::{snapshot_run, SnapshotSource};
use remat_core::model::units::format_bytes;
use remat_core::simulator::judge;
use std::sync::Arc;

const STORAGE_KEY: &str = "remat.imported-chain";

/// The browser's localStorage, where there is one (the page's one way to
/// it: the imported chain here, the welcome and large type in the views).
pub fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

pub fn load_stored() -> Option<String> {
    storage().and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
}

/// Reads an imported file — a chain, a schedule for the loaded chain, or a
/// measured run; a bad file leaves the loaded chain and plan in place.
pub fn import_text(state: AppState, file_name: &str, text: &str) {
    if text.contains(RUN_FORMAT) {
        return import_run(state, file_name, text);
    }
    if text.contains(SCHEDULE_FORMAT) {
        return import_schedule(state, file_name, text);
    }
    match read_any_chain(text) {
        Ok(chain) => {
            if let Some(s) = storage() {
                // Survives a reload; quota errors only cost that convenience.
                let _ = s.set_item(STORAGE_KEY, &write_chain(&chain));
            }
            state
                .view
                .info(format!("Imported {file_name}: {} stages.", chain.len()));
            // As imported: the scale card starts from the defaults.
            if let Err(e) = state.load_imported(Arc::new(chain), ExampleScale::default(), None) {
                state.view.error(e);
            }
        }
        Err(e) => state.view.error(format!(
            "Could not import {file_name}: {} The previous chain stays loaded.",
            crate::text::words::sentence_end(&e.to_string())
        )),
    }
}

/// Shows a `remat-schedule/1` file for the loaded chain once the simulator
/// (the same judge as `remat simulate`) accepts it: complete, valid, with the
/// file's budget as memory limit. It stays shown until the next plan.
fn import_schedule(state: AppState, file_name: &str, text: &str) {
    let refuse = |why: String| {
        state.view.error(format!(
            "Refused {file_name}: {why}. The current plan stays shown."
        ))
    };
    let schedule = match read_schedule(text) {
        Ok(s) => s,
        Err(e) => return refuse(e.to_string()),
    };
    let chain = state.loaded.chain.get_untracked();
    let warning = match schedule.check_chain(&chain) {
        Ok(w) => w,
        Err(e) => return refuse(e.to_string()),
    };
    let bandwidth = schedule.bandwidth_bytes_per_s.or(state.controls.link());
    let trace = match judge(&chain, &schedule.ops, schedule.budget_bytes, bandwidth) {
        Ok(t) => t,
        Err(e) => return refuse(format!("invalid schedule: {e}")),
    };
    let previous = state.shown.current.get_untracked();
    let shown_algorithm = state.controls.algorithm.get_untracked();
    let algorithm = if schedule.algorithm.is_empty() {
        shown_algorithm.name().to_string()
    } else {
        schedule.algorithm.clone()
    };
    state.view.info(format!(
        "Showing {file_name}: {} ops, peak {} within {}.{}",
        schedule.ops.len(),
        format_bytes(trace.peak_bytes),
        format_bytes(schedule.budget_bytes),
        warning
            .map(|w| format!(" Warning: {w}"))
            .unwrap_or_default()
    ));
    state.shown.current.set(Some(Arc::new(Current {
        chain,
        algorithm,
        planned: Planned {
            generation: previous.as_ref().map_or(0, |c| c.planned.generation),
            id: previous.as_ref().map_or(0, |c| c.planned.id),
            // Not a planner's answer: the file's name travels in `Current`.
            algorithm: shown_algorithm,
            budget: schedule.budget_bytes,
            bandwidth,
            exact: false,
            predicted_seconds: schedule.predicted.as_ref().map(|p| p.makespan_seconds),
            predicted_peak_bytes: schedule.predicted.as_ref().map(|p| p.peak_bytes),
            detail: format!("schedule from {file_name}"),
            error: None,
            summaries: Vec::new(),
            grid_loss: None,
            gap: None,
            stage: Default::default(),
            ops: Some(schedule.ops),
        },
        trace: Some(Ok(trace)),
        file: Some(file_name.to_string()),
    })));
}

/// Reads a `remat-run/1` file and holds it against the plan on screen: drawn
/// over the memory curve when the plan has its operations, else kept, with
/// a notice naming the plan it was measured for. A bad file changes nothing
/// (a run already shown stays).
pub fn import_run(state: AppState, file_name: &str, text: &str) {
    let run = match read_run(text) {
        Ok(run) => run,
        Err(e) => {
            return state.view.error(format!(
                "Could not import {file_name}: {} Nothing loaded changes.",
                crate::text::words::sentence_end(&e.to_string())
            ))
        }
    };
    let ops = run.ops.len();
    state.measured.run.set(Some(Arc::new(LoadedRun {
        file_name: file_name.to_string(),
        run,
    })));
    match state.measured.against.get_untracked() {
        Some(Ok(c)) => state.view.info(format!(
            "Imported {file_name}: {ops} measured ops, drawn over the memory curve: {}.",
            summary(&c)
        )),
        Some(Err(why)) => state
            .view
            .error(format!("Imported {file_name}, not drawn: {why}.")),
        None => {}
    }
}

pub fn import_file(state: AppState, file: web_sys::File) {
    read_file(state, file, import_text);
}

/// The run button's file: always read as a run (a chain given there is
/// named as such by its `format`).
pub fn import_run_file(state: AppState, file: web_sys::File) {
    read_file(state, file, import_run);
}

/// Reads `file` whole: a pickle (a CUDA memory snapshot) goes to
/// [`import_snapshot`], any other file to `then` as text.
fn read_file(state: AppState, file: web_sys::File, then: fn(AppState, &str, &str)) {
    let name = file.name();
    let promise = file.array_buffer();
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(buffer) => {
                let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
                if cuda_snapshot::is_pickle(&bytes) {
                    import_snapshot(state, &name, &bytes);
                } else {
                    then(state, &name, &String::from_utf8_lossy(&bytes));
                }
            }
            Err(_) => state.view.error(format!("Could not read {name}.")),
        }
    });
}

/// Reads a PyTorch CUDA memory snapshot of one step and lays it over the
/// plan on screen as a measured run ([`snapshot_run`]: its recording
/// scaled onto the predicted step), drawn as a `remat-run/1` file is. A
/// bad file, or no plan on screen, changes nothing.
pub fn import_snapshot(state: AppState, file_name: &str, bytes: &[u8]) {
    let refuse = |why: String| {
        state.view.error(format!(
            "Could not import {file_name}: {} Nothing loaded changes.",
            crate::text::words::sentence_end(&why)
        ))
    };
    let snapshot = match cuda_snapshot::read_cuda_snapshot(bytes) {
        Ok(s) => s,
        Err(e) => return refuse(e.to_string()),
    };
    let Some(current) = state.shown.current.get_untracked() else {
        return refuse("a snapshot is laid over the plan on screen, and there is none yet".into());
    };
    let Some(trace) = current.ok_trace() else {
        return refuse("the plan on screen has no schedule to lay the snapshot over".into());
    };
    let source = SnapshotSource {
        file_name,
        algorithm: &current.algorithm,
        budget_bytes: current.planned.budget,
    };
    let run = match snapshot_run(&snapshot, &current.chain, current.ops(), trace, source) {
        Ok(run) => run,
        Err(e) => return refuse(e.to_string()),
    };
    state.measured.run.set(Some(Arc::new(LoadedRun {
        file_name: file_name.to_string(),
        run,
    })));
    if let Some(Ok(c)) = state.measured.against.get_untracked() {
        state.view.info(format!(
            "Imported {file_name}: a CUDA memory snapshot laid over the plan on screen (its recording scaled onto the predicted step), drawn over the memory curve: {}.",
            summary(&c)
        ));
    }
}
