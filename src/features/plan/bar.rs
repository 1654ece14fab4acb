//! The header (chain choice, import, export) and the budget panel (slider,
//! typed budget, algorithm, bandwidth, totals, build progress).

use crate::io;
use crate::kit::file_input::{click_input, on_file_chosen};
use crate::kit::format::{bytes, ms, pct};
use crate::kit::widgets::ProgressBar;
use crate::planning::menus;
use crate::planning::protocol::Stage;
use crate::sizing::scaling::ExampleScale;
use crate::state::{use_app, use_device_memory, AppState, Build, ChainSource, Notice};
use leptos::prelude::*;
use remat_core::examples::{self, Provenance};
use remat_core::model::units::{format_rate, parse_rate, parse_size};
use remat_core::solvers::{memory_floor, Algorithm};
use wasm_bindgen::JsCast;

const SLIDER_STEPS: f64 = 1000.0;

#[component]
pub fn Header() -> impl IntoView {
    let state = use_app();
    let device = use_device_memory();
    let on_chain = move |ev: leptos::ev::Event| {
        let name = event_target_value(&ev);
        state.view.notice.set(None);
        if state
            .load_example(&name, ExampleScale::default(), None)
            .is_ok()
        {
            device.follow_example(&name);
        }
    };
    let on_file = on_file_chosen(move |file| io::import_file(state, file));
    let open_file_dialog = move |_| click_input("import-input");
    let selected = move || state.loaded.source.get().name();
    view! {
        <header class="top">
            <h1 class="brand" title="Remat explorer: activation checkpointing under a GPU memory budget">"Remat"</h1>
            <div class="chain-pick">
                <label for="chain-select">"Chain"</label>
                <select id="chain-select" on:change=on_chain prop:value=selected
                    title=move || state.loaded.chain.with(|c| chain_summary(c, state))>
                    {[
                        (Provenance::Measured, "Measured"),
                        (Provenance::Analytic, "Analytic (rough estimates)"),
                        (Provenance::HandMade, "Hand-made"),
                    ]
                        .into_iter()
                        .map(|(kind, label)| {
                            view! {
                                <optgroup label=label>
                                    {examples::EXAMPLES
                                        .iter()
                                        .filter(|e| e.provenance == kind)
                                        .map(|e| {
                                            view! { <option value=e.name title=e.about>{e.name}</option> }
                                        })
                                        .collect_view()}
                                </optgroup>
                            }
                        })
                        .collect_view()}
                    <option value="imported" disabled=true>
                        {move || {
                            if state.loaded.source.get() == ChainSource::Imported {
                                format!("imported: {}", state.loaded.chain.get().name)
                            } else {
                                "imported (use Import)".to_string()
                            }
                        }}
                    </option>
                </select>
                // A real button (reachable with Tab) that opens the hidden file input.
                <button id="import-button" on:click=open_file_dialog aria-label="Import chain or schedule…"
                    title="A remat-chain/1 or rotor chain file, a remat-schedule/1 schedule for the loaded chain, a remat-run/1 measured run, or a PyTorch CUDA memory snapshot of the plan's step; you can also drop it on the page">
                    "Import…"
                </button>
                <input id="import-input" type="file" accept=".json,application/json,.pickle,.pkl" tabindex="-1"
                    aria-hidden="true" on:change=on_file />
            </div>
        </header>
    }
}

/// One line about the loaded chain: stages, the step's time, M_low, M_high.
fn chain_summary(c: &remat_core::model::Chain, state: AppState) -> String {
    format!(
        "{} — {} stages · no-limit step {} · M_low {} · M_high {}",
        c.name,
        c.len(),
        ms(c.sequential_seconds()),
        bytes(state.loaded.m_low.get()),
        bytes(state.loaded.m_high.get())
    )
}

#[component]
pub fn NoticeBar() -> impl IntoView {
    let state = use_app();
    move || {
        state.view.notice.get().map(|n| {
            let (class, text) = match n {
                Notice::Error(t) => ("notice error", t),
                Notice::Info(t) => ("notice info", t),
            };
            view! {
                <div id="notice" class=class role="alert">
                    <span>{text}</span>
                    <button class="plain" aria-label="Dismiss" on:click=move |_| state.view.notice.set(None)>"×"</button>
                </div>
            }
        })
    }
}

/// The slider's range in words: M_low … M_high, or, where the shown
/// table has no plan at M_low (revolve's own least; a grid's rounding),
/// the least budget it has one for, against M_low.
fn slider_range(state: AppState) -> String {
    let (m_low, high) = (state.loaded.m_low.get(), state.loaded.m_high.get());
    let low = state.slider_low();
    if low > m_low {
        let alg = state.controls.algorithm.get();
        let why = if state.tables.grid_of(alg).is_some() {
            "the least its grid plans fit"
        } else {
            "its least"
        };
        format!(
            "{} ({} {why}; M_low {}) … M_high {}",
            bytes(low),
            alg.name(),
            bytes(m_low),
            bytes(high)
        )
    } else {
        format!("M_low {} … M_high {}", bytes(m_low), bytes(high))
    }
}

/// Slider position (0..=1000) ↔ budget in bytes.
fn to_slider(state: AppState, budget: u64) -> f64 {
    let (lo, hi) = (
        untrack(|| state.slider_low()) as f64,
        state.loaded.m_high.get_untracked() as f64,
    );
    if hi <= lo {
        return SLIDER_STEPS;
    }
    ((budget as f64 - lo) / (hi - lo) * SLIDER_STEPS)
        .clamp(0.0, SLIDER_STEPS)
        .round()
}

fn from_slider(state: AppState, v: f64) -> u64 {
    let (lo, hi) = (
        untrack(|| state.slider_low()) as f64,
        state.loaded.m_high.get_untracked() as f64,
    );
    (lo + (hi - lo) * v / SLIDER_STEPS).round() as u64
}

/// Where a key moves the slider (positions 0..=SLIDER_STEPS): 1 % of the
/// range with the arrows, 10 % with PageUp/PageDown, M_low/M_high with
/// Home/End; None for the keys the slider leaves to the browser.
fn slider_key_target(key: &str, position: f64) -> Option<f64> {
    let step = SLIDER_STEPS / 100.0;
    let target = match key {
        "ArrowRight" | "ArrowUp" => position + step,
        "ArrowLeft" | "ArrowDown" => position - step,
        "PageUp" => position + 10.0 * step,
        "PageDown" => position - 10.0 * step,
        "Home" => 0.0,
        "End" => SLIDER_STEPS,
        _ => return None,
    };
    Some(target.clamp(0.0, SLIDER_STEPS))
}

/// Host links people have, for the bandwidth control (bytes/s, label).
pub const BANDWIDTH_PRESETS: [(f64, &str); 3] = [
    (12e9, "PCIe 3 ×16 ≈ 12 GB/s"),
    (24e9, "PCIe 4 ×16 ≈ 24 GB/s"),
    (450e9, "NVLink-C2C ≈ 450 GB/s"),
];

/// A host link in words: its rate, or "none".
fn link_text(rate: f64) -> String {
    if rate > 0.0 {
        format_rate(rate)
    } else {
        crate::text::link::NO_LINK.to_string()
    }
}

/// A typed host link: a rate, or none ("none", 0 or nothing).
fn parse_link(text: &str) -> Result<f64, String> {
    match text.trim() {
        "" | "none" | "0" => Ok(0.0),
        t => parse_rate(t).map_err(|e| e.to_string()),
    }
}

/// The preset's option value for `rate`, or "" (custom).
fn preset_of(rate: f64) -> String {
    if rate <= 0.0 {
        return "0".into();
    }
    let presets: Vec<(f64, &str)> = BANDWIDTH_PRESETS.to_vec();
    crate::kit::widgets::preset_value(&presets, &rate)
}

#[component]
pub fn BudgetPanel() -> impl IntoView {
    let state = use_app();
    let typed = RwSignal::new(String::new());
    let typed_error = RwSignal::new(None::<String>);
    // The text box follows the slider unless the user is typing in it.
    Effect::new(move |_| {
        typed.set(bytes(state.controls.budget.get()));
        typed_error.set(None);
    });
    let bw_text = RwSignal::new(String::new());
    Effect::new(move |_| bw_text.set(link_text(state.controls.bandwidth.get())));
    let bw_error = RwSignal::new(None::<String>);

    let on_slide = move |ev: leptos::ev::Event| {
        if let Ok(v) = event_target_value(&ev).parse::<f64>() {
            state.controls.budget.set(from_slider(state, v));
        }
    };
    let on_slider_key = move |ev: leptos::ev::KeyboardEvent| {
        let position = to_slider(state, state.controls.budget.get_untracked());
        if let Some(target) = slider_key_target(&ev.key(), position) {
            ev.prevent_default();
            state.controls.budget.set(from_slider(state, target));
        }
    };
    // Below the floor no algorithm can run: bad input, as the CLI's exit 2,
    // not a budget to plan (and the plan on screen stays).
    let commit_typed_text = move || match parse_size(&typed.get_untracked()) {
        Ok(0) => typed_error.set(Some("the budget must be above 0".into())),
        Ok(b) => match state
            .loaded
            .chain
            .with_untracked(|c| memory_floor(c).admit(b))
        {
            Ok(b) => state.controls.budget.set(b),
            Err(below) => typed_error.set(Some(below.to_string())),
        },
        Err(e) => typed_error.set(Some(e.to_string())),
    };
    // Whether the box holds text the user typed since the last commit:
    // Enter commits and the box is rewritten with the rounded budget
    // ("12.1 MiB"); the `change` event Chromium fires next must not commit
    // that rounded text over the exact number typed.
    let edited = RwSignal::new(false);
    let commit_typed = move || {
        if edited.get_untracked() {
            edited.set(false);
            commit_typed_text()
        }
    };
    let commit_bw = move || match parse_link(&bw_text.get_untracked()) {
        Ok(r) => {
            bw_error.set(None);
            state.controls.bandwidth.set(r)
        }
        Err(e) => bw_error.set(Some(e)),
    };
    let on_alg = move |ev: leptos::ev::Event| {
        if let Ok(a) = Algorithm::from_name(&event_target_value(&ev)) {
            state.controls.algorithm.set(a);
        }
    };

    let stat = move |f: fn(&crate::planning::current::Current) -> Option<String>| {
        move || {
            state
                .shown
                .current
                .get()
                .and_then(|c| f(&c))
                .unwrap_or_else(|| "—".into())
        }
    };

    view! {
        <section class="budget" aria-label="Algorithm and memory budget">
            <div class="budget-row">
                <div class="field alg">
                    <label for="algorithm-select">"Algorithm"</label>
                    <select id="algorithm-select" on:change=on_alg
                        title=move || state.controls.algorithm.get().description()
                        prop:value=move || state.controls.algorithm.get().name().to_string()>
                        {Algorithm::ALL
                            .iter()
                            .map(|a| view! { <option value=a.name() title=a.description()>{a.name()}</option> })
                            .collect_view()}
                    </select>
                </div>
                <div class="field slider">
                    <label for="budget-slider" title="Counts activations only. M_low: the least rotor's schedules need; M_high: keeping everything (see Code & files)">
                        "Budget "
                        <span class="range">{move || slider_range(state)}</span>
                    </label>
                    <div class="slider-line">
                        <input id="budget-slider" type="range" min="0" max="1000" step="1" aria-label="Memory budget"
                            prop:value=move || {
                                // Tracked here (to_slider reads untracked, for the key handler).
                                let _ = (state.slider_low(), state.loaded.m_high.get());
                                to_slider(state, state.controls.budget.get()).to_string()
                            }
                            aria-valuetext=move || bytes(state.controls.budget.get())
                            on:input=on_slide on:keydown=on_slider_key />
                        <input id="budget-input" class="typed" type="text" aria-label="Memory budget, typed"
                            prop:value=move || typed.get()
                            on:input=move |ev| {
                                edited.set(true);
                                typed.set(event_target_value(&ev))
                            }
                            on:change=move |_| commit_typed()
                            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Enter" { commit_typed() }
                            title="Type a size: 3.5 GiB, 800MiB, 4e9" />
                    </div>
                    {move || typed_error.get().map(|e| view! { <small class="err" role="alert">{crate::kit::notation::math_text(&e)}</small> })}
                </div>
                <div class="field bw">
                    <label for="bandwidth-input" title="Host↔device rate for offload and prefetch">"Host link"</label>
                    <div class="bw-line">
                        <input id="bandwidth-input" class="typed" type="text" aria-label="Host link bandwidth"
                            prop:value=move || bw_text.get()
                            on:input=move |ev| bw_text.set(event_target_value(&ev))
                            on:change=move |_| commit_bw()
                            title="Host↔device rate for offload and prefetch, e.g. 12 GB/s, or none" />
                        <select id="bandwidth-preset" title="Common host links" aria-label="Host link preset"
                            prop:value=move || preset_of(state.controls.bandwidth.get())
                            on:change=move |ev| {
                                if let Ok(r) = event_target_value(&ev).parse::<f64>() {
                                    bw_error.set(None);
                                    state.controls.bandwidth.set(r);
                                }
                            }>
                            <option value="">"custom"</option>
                            <option value="0">"none (no host link)"</option>
                            {BANDWIDTH_PRESETS.iter().map(|(rate, name)| view! {
                                <option value=rate.to_string()>{*name}</option>
                            }).collect_view()}
                        </select>
                    </div>
                    {move || bw_error.get().map(|e| view! { <small class="err">{e}</small> })}
                </div>
            </div>
            <div class="stats">
                <div class="stat"><span>"Step"</span>
                    <b id="stat-makespan">{stat(|c| c.ok_trace().map(|t| ms(t.makespan_seconds)))}</b></div>
                <div class="stat"><span>"Overhead"</span>
                    <b id="stat-overhead">{stat(|c| c.ok_trace().map(|t| pct(t.overhead())))}</b></div>
                <div class="stat"><span>"Peak"</span>
                    <b id="stat-peak">{stat(|c| c.ok_trace().map(|t| bytes(t.peak_bytes)))}</b></div>
                <div class="stat"><span>"Recomputed"</span>
                    <b id="stat-recomputations">{stat(|c| c.ok_trace().map(|t| t.recomputations.to_string()))}</b></div>
                <div class="stat"><span>"PCIe"</span>
                    <b id="stat-moved">{stat(|c| c.ok_trace().map(|t| bytes(t.offloaded_bytes + t.prefetched_bytes)))}</b></div>
                <div class="stat"><span>"Ops"</span>
                    <b id="stat-ops">{stat(|c| c.planned.ops.as_ref().map(|o| o.len().to_string()))}</b></div>
                // Only for a chain with per-stage menus (issue 41): how many
                // stages run an option that keeps less, "classic" or "not used".
                {move || state.shown.current.with(|c| {
                    let c = c.as_ref()?;
                    let ops = c.planned.ops.as_deref();
                    let value = menus::plan_stat(&c.chain, &c.algorithm, ops)?;
                    let title = menus::plan_sentence(&c.chain, &c.algorithm, ops).unwrap_or_default();
                    Some(view! {
                        <div class="stat" title=title><span>"Menu options"</span>
                            <b id="stat-menu">{value}</b></div>
                    })
                })}
                <PlanStatus />
            </div>
            <LiveStatus />
        </section>
    }
}

/// Which status line shows. Progress is read inside the line, so a report
/// moves the bar without rebuilding the line and its Cancel button (a
/// click must not land on a button that is being replaced).
#[derive(Clone, PartialEq)]
enum Line {
    Building,
    NotBuilt,
    Failed(String),
    Replanning,
    Ready { build_ms: f64 },
}

/// The status line for the chosen algorithm (tracked: call it in a Memo).
fn line_of(state: AppState) -> Line {
    let alg = state.controls.algorithm.get();
    match state.tables.build_of(alg) {
        Build::Building(_) => Line::Building,
        Build::Cancelled | Build::Idle => Line::NotBuilt,
        Build::Failed(e) => Line::Failed(e),
        Build::Ready { .. } if state.shown.replanning.get().is_some() => Line::Replanning,
        Build::Ready { build_ms, .. } => Line::Ready { build_ms },
    }
}

/// Build progress, infeasibility and the exact re-plan action.
#[component]
fn PlanStatus() -> impl IntoView {
    let state = use_app();
    let line = Memo::new(move |_| line_of(state));
    move || {
        let alg = state.controls.algorithm.get();
        match line.get() {
            Line::Building => {
                let what = move || {
                    format!(
                        "Building the {} table for budgets up to {} {}…",
                        alg.name(),
                        bytes(state.loaded.m_high.get()),
                        if state.tables.remote.get() {
                            "in a Web Worker"
                        } else {
                            ""
                        }
                    )
                };
                let fraction = move || match state.tables.build_of(alg) {
                    Build::Building(f) => f,
                    _ => 0.0,
                };
                view! { <Working what=Signal::derive(what) fraction=Signal::derive(fraction) /> }
                    .into_any()
            }
            Line::NotBuilt => view! {
                <div class="status warn">
                    <span>{format!("The {} table was not built.", alg.name())}</span>
                    <button on:click=move |_| state.rebuild(alg)>"Build it"</button>
                </div>
            }
            .into_any(),
            Line::Failed(e) => view! {
                <div class="status warn"><span>{format!("{}: {e}", alg.name())}</span></div>
            }
            .into_any(),
            Line::Replanning => {
                let what = move || {
                    if state.shown.table_build.get().is_some() {
                        format!(
                            "Building the {} table for every budget at {} in a Web Worker (once for this chain and link: each budget is then read from it at once); meanwhile solving {} on the paper's grid…",
                            alg.name(),
                            link_text(state.controls.bandwidth.get()),
                            bytes(state.controls.budget.get()),
                        )
                    } else if alg.offloads() {
                        format!(
                            "Solving {} at {} and {} in a Web Worker…",
                            alg.name(),
                            bytes(state.controls.budget.get()),
                            link_text(state.controls.bandwidth.get())
                        )
                    } else {
                        format!("Re-planning exactly at {}: building a {} table for this budget in a Web Worker…",
                        bytes(state.controls.budget.get()), alg.name())
                    }
                };
                // The table's progress while it is built (the quick answer
                // waits for it), else the solve's: never the two on one bar.
                let fraction = move || {
                    (state.shown.table_build.get())
                        .or(state.shown.replanning.get())
                        .unwrap_or(0.0)
                };
                view! { <Working id="plan-status" what=Signal::derive(what) fraction=Signal::derive(fraction) /> }.into_any()
            }
            Line::Ready { build_ms } => (move || plan_line(state, alg, build_ms)).into_any(),
        }
    }
}

/// What a screen reader announces (politely) when the plan's state
/// changes: solving, done, infeasible, errors — never the progress ticks.
#[component]
fn LiveStatus() -> impl IntoView {
    let state = use_app();
    let message = Memo::new(move |_| {
        let alg = state.controls.algorithm.get();
        match line_of(state) {
            Line::Building => format!("Building the {} table…", alg.name()),
            Line::NotBuilt => format!("The {} table was not built.", alg.name()),
            Line::Failed(e) => format!("{}: {e}", alg.name()),
            Line::Replanning => format!(
                "Solving {} at {}…",
                alg.name(),
                bytes(state.controls.budget.get())
            ),
            Line::Ready { .. } => state
                .shown
                .current
                .with(|c| c.as_deref().map(live_summary).unwrap_or_default()),
        }
    });
    view! {
        <div id="live-status" class="sr-only" role="status" aria-live="polite">{message}</div>
    }
}

/// One sentence about the plan shown, for the live region.
fn live_summary(c: &crate::planning::current::Current) -> String {
    let at = format!("{} at {}", c.algorithm, bytes(c.planned.budget));
    if let Some(e) = &c.planned.error {
        return format!("Error: {e}");
    }
    match (c.planned.ops.is_some(), c.ok_trace()) {
        (false, _) => format!("Infeasible: {at}."),
        (true, Some(t)) => format!(
            "Plan ready: {at}: makespan {}, peak {}, {} recomputations.{}",
            ms(t.makespan_seconds),
            bytes(t.peak_bytes),
            t.recomputations,
            menus::plan_sentence(&c.chain, &c.algorithm, c.planned.ops.as_deref())
                .map(|m| format!(" {m}"))
                .unwrap_or_default()
        ),
        (true, None) => format!("Plan ready: {at}, but the simulator rejected it."),
    }
}

/// Work under way: what, how far, and Cancel.
#[component]
fn Working(
    #[prop(optional)] id: Option<&'static str>,
    what: Signal<String>,
    fraction: Signal<f64>,
) -> impl IntoView {
    let state = use_app();
    view! {
        <div class="status building" id=id>
            <span>{what}</span>
            <ProgressBar id="build-progress" fraction />
            <button id="cancel-build" on:click=move |_| state.cancel_build()>"Cancel"</button>
        </div>
    }
}

/// The plan's line: feasible or not, how, and the exact re-plan action.
fn plan_line(state: AppState, alg: Algorithm, build_ms: f64) -> AnyView {
    let current = state.shown.current.get();
    let (detail, feasible, exact, trace_err, error) = match &current {
        Some(c) => (
            c.planned.detail.clone(),
            c.planned.ops.is_some(),
            c.planned.exact,
            c.trace.as_ref().and_then(|t| t.as_ref().err().cloned()),
            c.planned.error.clone(),
        ),
        None => (String::new(), true, false, None, None),
    };
    // pofo's answer at once from its table for every budget, the
    // per-budget solve on its way (`Stage::Quick`).
    let quick = current
        .as_ref()
        .is_some_and(|c| c.planned.stage == Stage::Quick);
    if let Some(error) = error {
        // No answer at all (a table over the size limit): an
        // error, never "infeasible".
        return view! {
            <div class="status err" id="plan-status" role="alert">
                <span>{format!("✗ error: {error}")}</span>
            </div>
        }
        .into_any();
    }
    // On a grid (rotor/revolve falling back from the breakpoints): a green
    // ✓ only where the certificate proves the plan within 0.5 % of the
    // optimum (issue 44), or, without one, where the rounding may hide
    // under 2 % of the budget.
    let grid_loss = current.as_ref().and_then(|c| c.planned.grid_loss);
    let gap = current.as_ref().and_then(|c| c.planned.gap);
    let budget = current.as_ref().map_or(1, |c| c.planned.budget.max(1));
    let loose = match gap {
        Some(gap) => gap > 0.005,
        None => grid_loss.is_some_and(|l| l as f64 >= 0.02 * budget as f64),
    };
    let grid = grid_loss.is_some() || detail.contains("grid");
    let (class, mark) = match (feasible, loose) {
        (true, _) if quick => ("status warn quick", "≈ "),
        (false, _) if quick => ("status warn quick", "≈ none at once: "),
        (false, _) => ("status warn", "✗ infeasible: "),
        (true, true) if gap.is_some() => ("status warn", "≈ on a grid: "),
        (true, true) => ("status warn", "≈ on a grid, maybe not the best: "),
        (true, false) => ("status ok", "✓ "),
    };
    view! {
        <div class=class id="plan-status">
            <span>
                {mark}
                {detail}
                {if exact { " (re-planned exactly at this budget)" } else { "" }}
            </span>
            {trace_err.map(|e| view! { <span class="err">{format!(" simulator: {e}")}</span> })}
            {quick.then(|| view! { <Refining /> })}
            // Offered where a table for this budget alone may do better,
            // never for its own answer (it cannot improve on itself).
            {(alg.uses_slots() && grid && (loose || !feasible) && !exact).then(|| view! {
                <button id="replan-exact" on:click=move |_| state.send_plan(true)
                    title="Build a table for exactly this budget: no rounding to the M_high grid">
                    "Re-plan exactly at this budget"
                </button>
            })}
            {(!alg.offloads()).then(|| view! {
                <span class="muted">{format!("table built in {build_ms:.0} ms{}", if state.tables.remote.get() { " (worker)" } else { "" })}</span>
            })}
        </div>
    }
    .into_any()
}

/// A quick answer's refinement (the per-budget solve in the refine
/// worker): how far, and a Stop that keeps the quick answer; once stopped,
/// said. Its progress is read inside, so a tick does not rebuild the Stop
/// button under a click.
#[component]
fn Refining() -> impl IntoView {
    let state = use_app();
    let running = Memo::new(move |_| state.shown.refining.get().is_some());
    move || {
        if running.get() {
            let fraction = Signal::derive(move || state.shown.refining.get().unwrap_or(0.0));
            view! {
                <span class="refining">
                    <ProgressBar id="refine-progress" fraction />
                    <button id="stop-refining" on:click=move |_| state.stop_refining()
                        title="Keep the answer from the table for every budget">"Stop refining"</button>
                </span>
            }
            .into_any()
        } else {
            view! {
                <span class="muted" id="refine-stopped">
                    " Refinement stopped: this is the table's answer; move the slider to solve again."
                </span>
            }
            .into_any()
        }
    }
}

/// Lets the whole page take a dropped chain file.
pub fn install_drop(state: AppState) {
    let Some(body) = leptos::prelude::document().body() else {
        return;
    };
    let over = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::DragEvent)>::new(
        |ev: web_sys::DragEvent| ev.prevent_default(),
    );
    let drop = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::DragEvent)>::new(
        move |ev: web_sys::DragEvent| {
            ev.prevent_default();
            if let Some(file) = ev
                .data_transfer()
                .and_then(|d| d.files())
                .and_then(|f| f.get(0))
            {
                io::import_file(state, file);
            }
        },
    );
    let _ = body.add_event_listener_with_callback("dragover", over.as_ref().unchecked_ref());
    let _ = body.add_event_listener_with_callback("drop", drop.as_ref().unchecked_ref());
    // Page-lifetime listeners.
    over.forget();
    drop.forget();
}
