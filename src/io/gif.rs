//! Learn's graph saved as a looping animated GIF (issue 27, point 6): for
//! each operation the plan keeps (`animated_gif::FramePlan`), the kit draws
//! the frame's SVG (`kit::graph_chart::frame_svg`: title, the graph at that
//! op, its caption, the legend), the browser rasterises it on a canvas that
//! is never put on the page (`raster`, as for `export_png`), and its pixels go to
//! the encoder (`animated_gif::GifWriter`). Loading an image is async, so
//! the frames are drawn one at a time and the page stays responsive
//! between them; `progress` says which frame is being drawn, `cancel`
//! stops at the next one.

use super::export::download_blob;
use super::raster::{describe, draw_svg, offscreen_canvas};
use super::saved_figures::context_lines;
use crate::kit::figure::Figure;
use crate::kit::graph_chart::{caption_rows, frame_svg};
use crate::state::AppState;
use crate::teaching::animated_gif::{
    frame_delay_cs, last_delay_cs, FramePlan, GifWriter, MAX_FRAMES,
};
use crate::teaching::step_graph::StepGraph;
use crate::text::file_name::file_name;
use leptos::prelude::*;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// Pixels per SVG unit: the graph is 1200 units wide, a GIF of 1200
/// pixels is legible on a slide and about 1 MB for 32 frames.
const SCALE: f64 = 1.0;

/// The frames of the schedule the page shows, for the button's note:
/// None when there is no schedule.
pub fn gif_plan(state: AppState) -> Option<FramePlan> {
    state.shown.current.with(|c| {
        let ops = c.as_deref()?.planned.ops.as_deref()?;
        Some(FramePlan::new(ops.len(), MAX_FRAMES))
    })
}

/// Saves the graph of the shown schedule as a GIF (`proportional`: node
/// sizes follow time and bytes, as on the page). `progress`: Some((frame,
/// frames)) while it draws, None when done; `cancel`: set to stop.
pub fn export_gif(
    state: AppState,
    proportional: bool,
    progress: RwSignal<Option<(usize, usize)>>,
    cancel: RwSignal<bool>,
) {
    if progress.get_untracked().is_some() {
        return;
    }
    let Some(current) = state.shown.current.get_untracked() else {
        return;
    };
    let Some(ops) = current.planned.ops.as_deref() else {
        state
            .view
            .error("No schedule at this budget: there is no step to animate.".into());
        return;
    };
    let graph = match StepGraph::new(current.chain.clone(), ops, state.controls.link()) {
        Ok(g) => g,
        Err(e) => {
            state
                .view
                .error(format!("Could not replay the schedule for the GIF: {e}"));
            return;
        }
    };
    let plan = FramePlan::new(graph.ops.len(), MAX_FRAMES);
    let (context, result) = context_lines(state, Figure::Chain);
    let title = format!("The step as a graph, op by op: {}", plan.describe());
    let lines = [context, result];
    let delay = frame_delay_cs(state.view.speed.get_untracked());
    let name = file_name(
        &current.chain.name,
        &format!("{}.graph.gif", current.algorithm),
    );
    cancel.set(false);
    progress.set(Some((0, plan.ops.len())));
    wasm_bindgen_futures::spawn_local(async move {
        let done = render(
            &graph,
            &plan,
            proportional,
            &title,
            &lines,
            delay,
            progress,
            cancel,
        )
        .await;
        progress.set(None);
        match done {
            Ok(Some(bytes)) => download_gif(&name, &bytes),
            Ok(None) => state.view.info("GIF cancelled.".into()),
            Err(e) => state.view.error(format!("Could not save the GIF: {e}")),
        }
    });
}

/// Draws and encodes every frame of `plan`; None when cancelled.
#[allow(clippy::too_many_arguments)]
async fn render(
    graph: &StepGraph,
    plan: &FramePlan,
    proportional: bool,
    title: &str,
    lines: &[String],
    delay: u16,
    progress: RwSignal<Option<(usize, usize)>>,
    cancel: RwSignal<bool>,
) -> Result<Option<Vec<u8>>, String> {
    let canvas = offscreen_canvas()?;
    let mut writer: Option<GifWriter> = None;
    let n = plan.ops.len();
    let rows = caption_rows(graph, &plan.ops);
    for (k, &op) in plan.ops.iter().enumerate() {
        if cancel.get_untracked() {
            return Ok(None);
        }
        progress.set(Some((k + 1, n)));
        next_task().await;
        let (svg, w, h) = frame_svg(graph, op, proportional, title, lines, rows);
        let (pw, ph) = ((w * SCALE).round() as u32, (h * SCALE).round() as u32);
        let pixels = rasterise(&canvas, &svg, pw, ph).await?;
        let writer = match &mut writer {
            Some(w) => w,
            None => writer.insert(GifWriter::new(pw, ph)?),
        };
        let d = if k + 1 == n {
            last_delay_cs(delay)
        } else {
            delay
        };
        writer.add_frame(&pixels, d)?;
    }
    match writer {
        Some(w) => w.finish().map(Some),
        None => Err("the schedule has no operation to draw".into()),
    }
}

/// Waits for the browser's next task, so that it paints the progress and
/// handles clicks (Cancel) between frames: an image's decoding resolves as
/// a microtask, and without this the page froze for the whole GIF.
async fn next_task() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let queued = web_sys::window().and_then(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0)
                .ok()
        });
        if queued.is_none() {
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// `svg` drawn on `canvas` at `pw` × `ph` pixels: its RGBA bytes.
async fn rasterise(
    canvas: &web_sys::HtmlCanvasElement,
    svg: &str,
    pw: u32,
    ph: u32,
) -> Result<Vec<u8>, String> {
    let ctx = draw_svg(canvas, svg, pw, ph).await?;
    let data = ctx
        .get_image_data(0.0, 0.0, pw as f64, ph as f64)
        .map_err(|e| format!("could not read a frame's pixels ({})", describe(&e)))?;
    Ok(data.data().0)
}

/// Starts a download of the GIF's bytes.
fn download_gif(file_name: &str, bytes: &[u8]) {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("image/gif");
    if let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options) {
        download_blob(file_name, &blob);
    }
}
