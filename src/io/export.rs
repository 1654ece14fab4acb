//! Downloads: the schedule, its Chrome trace, the chain, the charts.

use super::raster;
use crate::planning::current::Current;
use crate::state::AppState;
use crate::text::file_name::file_name;
use leptos::prelude::*;
use remat_core::format::{write_chain, write_schedule, ScheduleFile};
use remat_core::simulator::chrome_trace_json;
use wasm_bindgen::JsCast;

/// Starts a download of `text`.
fn download(file_name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    if let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) {
        download_blob(file_name, &blob);
    }
}

/// Starts a download of `blob`.
pub(super) fn download_blob(file_name: &str, blob: &web_sys::Blob) {
    let Ok(url) = web_sys::Url::create_object_url_with_blob(blob) else {
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

/// The schedule on screen as `remat solve -o` writes it (with where each
/// offload's device copy is freed, `offload_frees`, for a runtime to hold
/// it there): the file the Schedule export downloads and the Code card
/// writes its code from. None when the budget has no schedule for the
/// algorithm.
pub fn schedule_file(current: &Current, link: Option<f64>) -> Option<ScheduleFile> {
    let (Some(ops), Some(trace)) = (current.planned.ops.clone(), current.ok_trace()) else {
        return None;
    };
    Some(ScheduleFile::judged(
        &current.chain,
        &current.algorithm,
        current.planned.budget,
        link,
        ops,
        trace,
    ))
}

pub fn export_schedule(state: AppState) {
    let Some(current) = state.shown.current.get_untracked() else {
        return;
    };
    let Some(file) = schedule_file(&current, state.controls.link()) else {
        state
            .view
            .error("No schedule to export: this budget is infeasible for the algorithm.".into());
        return;
    };
    download(
        &file_name(
            &current.chain.name,
            &format!("{}.schedule.json", current.algorithm),
        ),
        "application/json",
        &write_schedule(&file),
    );
}

pub fn export_trace(state: AppState) {
    let Some(current) = state.shown.current.get_untracked() else {
        return;
    };
    if let Some(trace) = current.ok_trace() {
        download(
            &file_name(&current.chain.name, "trace.json"),
            "application/json",
            &chrome_trace_json(&current.chain, current.ops(), trace),
        );
    }
}

pub fn export_chain(state: AppState) {
    let chain = state.loaded.chain.get_untracked();
    download(
        &file_name(&chain.name, "chain.json"),
        "application/json",
        &write_chain(&chain),
    );
}

/// Saves a standalone SVG document.
pub fn export_svg_text(svg: &str, file_name: &str) {
    download(file_name, "image/svg+xml", svg);
}

/// Saves a standalone SVG document (`w` × `h` units) as a PNG at `scale`
/// pixels per unit: drawn on a canvas that is never put on the page
/// (`raster`), which is encoded as PNG. A failure is said on the page.
pub fn export_png(state: AppState, svg: &str, w: f64, h: f64, scale: f64, file_name: &str) {
    use wasm_bindgen::closure::Closure;
    let (pw, ph) = ((w * scale).round() as u32, (h * scale).round() as u32);
    let (svg, name) = (svg.to_string(), file_name.to_string());
    wasm_bindgen_futures::spawn_local(async move {
        let encoding = async {
            let canvas = raster::offscreen_canvas()?;
            raster::draw_svg(&canvas, &svg, pw, ph).await?;
            let done = Closure::once_into_js(move |blob: Option<web_sys::Blob>| match blob {
                Some(blob) => download_blob(&name, &blob),
                None => state
                    .view
                    .error("Could not save the PNG: the browser encoded no image.".into()),
            });
            canvas
                .to_blob_with_type(done.unchecked_ref(), "image/png")
                .map_err(|e| raster::describe(&e))
        };
        if let Err(e) = encoding.await {
            state.view.error(format!("Could not save the PNG: {e}"));
        }
    });
}
