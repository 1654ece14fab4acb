//! The max-batch panel: for the loaded chain, the largest batch each
//! method runs within the device-memory card's GPU (its memory, the
//! model's state as fixed bytes, its margin), with the throughput there,
//! as a bar chart. Searched in the worker by `remat_core::maxbatch` (the
//! CLI's `remat maxbatch`): sizes and times scale linearly from the
//! profiled batch, or, given a second profile of the same stages at another
//! batch, follow the core's affine fit through both (`--second-profile`).

use crate::io::FigureButtons;
use crate::kit::algorithm_style::alg_color;
use crate::kit::figure::Figure;
use crate::kit::scale::CHART_W;
use crate::kit::widgets::TaskControl;
use crate::planning::protocol::{BatchDevice, MaxBatch, SecondProfile};
use crate::sizing::device_memory::Breakdown;
use crate::sizing::scaling::ExampleScale;
use crate::state::{use_app, use_device_memory, AppState, ChainSource};
use crate::text::words::{grouped, model_words};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::format::read_any_chain;

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

fn caption(found: &MaxBatch) -> String {
    format!(
        "{} (fixed: weights, gradients, optimizer state). {}",
        found.budget_line(),
        crate::kit::legend::MAX_BATCH
    )
}

/// A second profile read from a file: what the panel shows of it, and its
/// text, which the worker reads again (as the CLI reads `--second-profile`).
#[derive(Clone, Debug, PartialEq)]
struct Second {
    file: String,
    name: String,
    stages: usize,
    text: String,
}

/// `text` read as a chain (`remat-chain/1` or rotor) by the core's reader;
/// the error names the field and says that nothing changed.
fn read_second(file: &str, text: String) -> Result<Second, String> {
    match read_any_chain(&text) {
        Ok(chain) => Ok(Second {
            file: file.to_string(),
            stages: chain.len(),
            name: chain.name,
            text,
        }),
        Err(e) => Err(format!(
            "Could not import {file} as the second profile: {} The max-batch panel stays as it was.", crate::text::words::sentence_end(&e.to_string())
        )),
    }
}

/// The second profile's file, read and kept (or refused) once it is read.
fn import_second(state: AppState, second: RwSignal<Option<Second>>, file: web_sys::File) {
    let file_name = file.name();
    let promise = file.text();
    leptos::task::spawn_local(async move {
        let text = wasm_bindgen_futures::JsFuture::from(promise).await;
        let read = text
            .map_err(|_| format!("Could not read {file_name}."))
            .and_then(|t| read_second(&file_name, t.as_string().unwrap_or_default()));
        match read {
            Ok(s) => {
                state
                    .view
                    .info(format!("Second profile: {file_name}, {} stages.", s.stages));
                second.set(Some(s));
            }
            Err(e) => state.view.error(e),
        }
    });
}

/// A whole number ≥ 1 typed in a batch field.
fn typed_batch(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&b| b >= 1)
}

/// "Second profile (optional): [Import chain…] at batch [N2]", the profile
/// read (its name, stages, a way to remove it). A real button (reachable
/// with Tab) opens the hidden file input, as the header's Import does.
#[component]
fn SecondProfileInput(second: RwSignal<Option<Second>>, batch: RwSignal<String>) -> impl IntoView {
    let state = use_app();
    let picker = NodeRef::<leptos::html::Input>::new();
    let on_file = move |_| {
        let Some(input) = picker.get() else { return };
        let chosen = input.files().and_then(|f| f.get(0));
        // Choosing the same file again must fire `change` again.
        input.set_value("");
        if let Some(file) = chosen {
            import_second(state, second, file);
        }
    };
    let open_dialog = move |_| {
        if let Some(input) = picker.get() {
            input.click();
        }
    };
    view! {
        <div class="maxbatch-second" role="group" aria-labelledby="maxbatch-second-label">
            <span id="maxbatch-second-label">"Second profile (optional): "</span>
            <button id="maxbatch-second-button" on:click=open_dialog
                aria-label="Second profile: Import chain…"
                title="A remat-chain/1 or rotor chain of the same stages, profiled at another batch">
                "Import chain…"
            </button>
            <input id="maxbatch-second-input" type="file" accept=".json,application/json"
                tabindex="-1" aria-hidden="true" node_ref=picker on:change=on_file />
            <label>" at batch "
                <input id="maxbatch-second-batch" type="text" inputmode="numeric" size="8"
                    aria-label="Second profile's batch"
                    prop:value=move || batch.get()
                    on:change=move |ev| batch.set(event_target_value(&ev)) />
            </label>
            {move || second.get().map(|s| view! {
                <span id="maxbatch-second-name">
                    <strong>{s.name}</strong>{format!(" · {} stages · {}", s.stages, s.file)}
                </span>
                <button id="maxbatch-second-remove" on:click=move |_| second.set(None)
                    aria-label="Remove the second profile">"Remove"</button>
            })}
        </div>
    }
}

#[component]
pub fn MaxBatchPanel() -> impl IntoView {
    let state = use_app();
    let device = use_device_memory();
    let running = Memo::new(move |_| state.offloading.max_batching.get().is_some());
    let fraction = move || state.offloading.max_batching.get().unwrap_or(0.0);
    // An imported chain's batch, typed in (an example's comes from its profile).
    let typed = RwSignal::new(String::new());
    let second = RwSignal::new(None::<Second>);
    let second_typed = RwSignal::new(String::new());
    // A second profile is of the chain loaded when it was imported: another
    // chain (or scale) drops it.
    Effect::new(move |_| {
        state.loaded.chain.track();
        second.set(None);
    });
    let profiled = move || example_batch(&state.loaded.source.get(), &state.loaded.scale.get());
    let batch = move || profiled().or_else(|| typed_batch(&typed.get()));
    let ask = move || -> Result<(BatchDevice, Option<SecondProfile>), String> {
        let in_chain = state.loaded.chain.with(|c| c.counts_parameter_gradients());
        let b = Breakdown::of(&device.inputs.get(), in_chain);
        let batch = batch()
            .ok_or("batch: type the batch the chain was profiled at (a whole number ≥ 1)")?;
        let second = match second.get() {
            None => None,
            Some(s) => Some(SecondProfile {
                chain: s.text,
                batch: typed_batch(&second_typed.get()).ok_or(
                    "second profile's batch: type the batch it was profiled at (a whole number ≥ 1)",
                )?,
            }),
        };
        let device = BatchDevice {
            memory_bytes: b.gpu,
            fixed_bytes: b.model_total,
            margin_bytes: b.margin,
            batch,
        };
        Ok((device, second))
    };
    let run = move |()| match ask() {
        Ok((d, second)) => state.send_max_batch(d, second),
        Err(e) => state.view.error(e),
    };
    // The model the next search uses, in words; without a profiled batch
    // (a hand-made chain) it asks for one rather than saying "batch ?".
    let model = move || {
        let Some(first) = batch().map(|b| b.to_string()) else {
            return "Model: linear in the batch from one profile, once you type the batch this chain was profiled at.".to_string();
        };
        let n2 = second
            .with(|s| s.is_some())
            .then(|| typed_batch(&second_typed.get()).map_or("?".to_string(), |b| b.to_string()));
        // A rescaled chain is not a measurement: the fit goes through it as
        // scaled, so say so rather than "reproduces both profiles".
        let rescaled = !state.loaded.scale.get().is_profiled() && n2.is_some();
        format!(
            "Model: {}.{}",
            model_words(&first, n2.as_deref()),
            if rescaled {
                " The loaded chain is itself rescaled linearly from its profile: for a fit through two measurements, load it as profiled."
            } else {
                ""
            }
        )
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
                    on_run=Callback::new(run)
                    on_cancel=Callback::new(move |()| state.cancel_side_task()) />
            </div>
            {move || profiled().is_none().then(|| view! {
                <label class="inline">"Profiled batch "
                    <input id="maxbatch-batch" type="text" inputmode="numeric" size="8"
                        prop:value=move || typed.get()
                        on:change=move |ev| typed.set(event_target_value(&ev)) />
                </label>
            })}
            <SecondProfileInput second=second batch=second_typed />
            <p class="hint" id="maxbatch-model">{model}</p>
            {move || found.with(|f| f.as_ref().map(|f| {
                let svg = bars(f);
                let text = caption(f);
                let d = f.device;
                view! {
                    <svg id="maxbatch-svg" xmlns="http://www.w3.org/2000/svg" role="img"
                        data-memory=d.memory_bytes data-fixed=d.fixed_bytes data-margin=d.margin_bytes
                        data-batch=d.batch data-max-batch=f.max_batch
                        data-second-batch=f.second_batch.map(|b| b.to_string()).unwrap_or_default()
                        aria-label="Largest batch per method, with its throughput"
                        viewBox=format!("0 0 {CHART_W} {}", height()) font-family="Inter, system-ui, sans-serif"
                        inner_html=svg></svg>
                    <p class="hint" id="maxbatch-caption">{text}</p>
                }
            }))}
        </section>
    }
}
