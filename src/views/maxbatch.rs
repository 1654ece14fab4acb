//! The max-batch panel: for the loaded chain, the largest batch each
//! method runs within the device-memory card's GPU (its memory, the
//! model's state as fixed bytes, its margin), with the throughput there,
//! as a bar chart. Searched in the worker by `remat_core::maxbatch` (the
//! CLI's `remat maxbatch`); sizes and times scale linearly from the
//! profiled batch.

use super::chart::{TaskControl, CHART_W};
use super::compare::alg_color;
use super::figure::{Figure, FigureButtons};
use crate::device_memory::Breakdown;
use crate::protocol::{BatchDevice, MaxBatch};
use crate::scaling::ExampleScale;
use crate::state::{use_app, use_device_memory, ChainSource};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::model::units::format_bytes;

const ROW_H: f64 = 30.0;
const LABEL_W: f64 = 110.0;
const TEXT_W: f64 = 330.0;

/// The batch the loaded chain stands for: an example's (its profile's, or
/// the batch it was scaled to); an imported chain's where the scale card
/// was told one, else None (typed here).
fn example_batch(source: &ChainSource, scale: &ExampleScale) -> Option<u64> {
    match source {
        ChainSource::Example(name) => examples::find(name)
            .and_then(|e| e.profile)
            .map(|p| scale.batch.unwrap_or(p.batch)),
        ChainSource::Imported => scale.imported_batch(),
    }
}

/// `1 072` for 1072: thin spaces every three digits.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

/// One bar per method, its length the batch, labelled with the batch,
/// the throughput and the growth over store-all.
fn bars(found: &MaxBatch) -> String {
    let top = found
        .rows
        .iter()
        .filter_map(|r| r.batch)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let base = found.rows.first().and_then(|r| r.batch);
    let plot = CHART_W - LABEL_W - TEXT_W;
    let mut s = String::new();
    for (i, r) in found.rows.iter().enumerate() {
        let y = 8.0 + i as f64 * ROW_H;
        let w = r.batch.map_or(0.0, |b| b as f64 / top * plot);
        let text = match (r.batch, r.samples_per_second) {
            (Some(b), Some(t)) => {
                let growth = base
                    .filter(|&s| s > 0)
                    .map(|s| format!(" · ×{:.2}", b as f64 / s as f64))
                    .unwrap_or_default();
                let limit = if r.at_limit { " (limit)" } else { "" };
                format!("batch {}{limit} · {:.0} samples/s{growth}", grouped(b), t)
            }
            _ => "batch 1 does not fit".to_string(),
        };
        s.push_str(&format!(
            r##"<g class="maxbatch-row" data-algorithm="{a}" data-batch="{b}" data-throughput="{t}"><text x="{lx:.1}" y="{ty:.1}" font-size="13" text-anchor="end" fill="#2b3442" font-weight="600">{a}</text><rect x="{LABEL_W}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"/><text x="{tx:.1}" y="{ty:.1}" font-size="12.5" fill="#2b3442">{text}</text></g>"##,
            a = r.algorithm.name(),
            b = r.batch.map(|b| b.to_string()).unwrap_or_default(),
            t = r.samples_per_second.map(|t| t.to_string()).unwrap_or_default(),
            lx = LABEL_W - 8.0,
            ty = y + ROW_H / 2.0 + 2.0,
            h = ROW_H - 8.0,
            c = alg_color(r.algorithm),
            tx = LABEL_W + w + 8.0,
        ));
    }
    s
}

/// The note every max-batch figure carries.
pub const SCALED: &str = "Sizes and times are scaled linearly from the profiled batch; offloading uses the chain's own bandwidth.";

/// The device and the batches searched, in one line.
pub fn budget_line(found: &MaxBatch) -> String {
    format!(
        "{} GPU − {} fixed − {} margin = {} for activations · profiled at batch {} · tried up to {}",
        format_bytes(found.device.memory_bytes),
        format_bytes(found.device.fixed_bytes),
        format_bytes(found.device.margin_bytes),
        format_bytes(found.budget_bytes),
        found.device.batch,
        grouped(found.max_batch),
    )
}

fn caption(found: &MaxBatch) -> String {
    format!(
        "{} (fixed: weights, gradients, optimizer state). {SCALED}",
        budget_line(found)
    )
}

#[component]
pub fn MaxBatchPanel() -> impl IntoView {
    let state = use_app();
    let device = use_device_memory();
    let running = Memo::new(move |_| state.offloading.max_batching.get().is_some());
    let fraction = move || state.offloading.max_batching.get().unwrap_or(0.0);
    // An imported chain's batch, typed in (an example's comes from its profile).
    let typed = RwSignal::new(String::new());
    let profiled = move || example_batch(&state.loaded.source.get(), &state.loaded.scale.get());
    let batch =
        move || profiled().or_else(|| typed.get().trim().parse::<u64>().ok().filter(|&b| b >= 1));
    let ask = move || -> Result<BatchDevice, String> {
        let b = Breakdown::of(&device.inputs.get());
        let batch = batch()
            .ok_or("batch: type the batch the chain was profiled at (a whole number ≥ 1)")?;
        Ok(BatchDevice {
            memory_bytes: b.gpu,
            fixed_bytes: b.model_total,
            margin_bytes: b.margin,
            batch,
        })
    };
    let run = move |()| match ask() {
        Ok(d) => state.send_max_batch(d),
        Err(e) => state.view.error(e),
    };
    let found = state.offloading.max_batch;
    let height = move || {
        found.with(|f| {
            f.as_ref()
                .map_or(0.0, |f| f.rows.len() as f64 * ROW_H + 16.0)
        })
    };
    view! {
        <section class="card maxbatch" id="maxbatch">
            <div class="card-head">
                <h2>"Max batch"</h2>
                <span class="muted">"The largest batch each method runs within the device memory (the device-memory card's GPU, model state and margin), and its throughput"</span>
                <FigureButtons figure=Figure::MaxBatch />
                <TaskControl id="maxbatch" running=running fraction=Signal::derive(fraction)
                    label=Signal::derive(move || if found.with(|f| f.is_some()) { "Search again" } else { "Find the largest batches" })
                    on_run=Callback::new(run) />
            </div>
            {move || profiled().is_none().then(|| view! {
                <label class="inline">"Profiled batch "
                    <input id="maxbatch-batch" type="text" inputmode="numeric" size="8"
                        prop:value=move || typed.get()
                        on:change=move |ev| typed.set(event_target_value(&ev)) />
                </label>
            })}
            {move || found.with(|f| f.as_ref().map(|f| {
                let svg = bars(f);
                let text = caption(f);
                let d = f.device;
                view! {
                    <svg id="maxbatch-svg" xmlns="http://www.w3.org/2000/svg" role="img"
                        data-memory=d.memory_bytes data-fixed=d.fixed_bytes data-margin=d.margin_bytes
                        data-batch=d.batch data-max-batch=f.max_batch
                        aria-label="Largest batch per method, with its throughput"
                        viewBox=format!("0 0 {CHART_W} {}", height()) font-family="Inter, system-ui, sans-serif"
                        inner_html=svg></svg>
                    <p class="hint" id="maxbatch-caption">{text}</p>
                }
            }))}
        </section>
    }
}
