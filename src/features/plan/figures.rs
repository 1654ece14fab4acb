//! The three figures of the schedule on screen — the layer chain, memory
//! over time, the timelines — as cards: each a kit chart fed from the
//! page's state, under a heading with its key, options and save menu. The
//! key is beside each chart (at 1366×768 the page's legend in the stepper
//! is below the fold); the stepper's names every colour at once.

use crate::io::FigureButtons;
use crate::kit::chain_chart::ChainChart;
use crate::kit::figure::Figure;
use crate::kit::format::ms;
use crate::kit::legend::{self, card_key};
use crate::kit::memory_chart::{MeasuredLegend, MemoryChart};
use crate::kit::notation::{math_text, math_text_with_names};
use crate::kit::timeline_chart::TimelineChart;
use crate::kit::widgets::{swatches, CardHead};
use crate::kit::zoom::ZoomReset;
use crate::planning::menus;
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::model::units::format_bytes;

/// The layer chain; `marks` are the stages a mode marks on it (the minimum
/// memory mode's optimal set, which the shell passes).
#[component]
pub fn ChainCard(marks: Signal<Vec<usize>>) -> impl IntoView {
    let state = use_app();
    let uniform = state.view.uniform;
    // A chain with per-stage menus (issue 41): which options the plan
    // runs, or why none; and whether any box is drawn hollow.
    let menu_line = Memo::new(move |_| {
        state.shown.current.with(|c| {
            let c = c.as_ref()?;
            let ops = c.planned.ops.as_deref();
            let line = menus::plan_sentence(&c.chain, &c.algorithm, ops)?;
            let picked = ops.is_some_and(|o| !menus::picks(&c.chain, o).is_empty());
            Some((line, picked, menus::policy_names(&c.chain)))
        })
    });
    view! {
        <CardHead title="Layer chain">
            {swatches(legend::CHAIN)}
            <span class="muted">"↻n = recomputations"</span>
            <FigureButtons figure=Figure::Chain />
            <label class="toggle">
                <input id="uniform-toggle" type="checkbox" prop:checked=move || uniform.get()
                    on:change=move |ev| uniform.set(event_target_checked(&ev)) />
                "equal boxes"
            </label>
        </CardHead>
        <p class="hint">{move || math_text(if uniform.get() { "One box per stage." } else { "Width ∝ time (u_f + u_b), height ∝ saved bytes ω_ā." })}</p>
        <ChainChart schedule=state.shown.current.into() chain=state.loaded.chain.into()
            step=state.view.step.into() uniform=uniform.into() marks />
        {move || menu_line.get().map(|(line, picked, names)| view! {
            <p id="chain-menus" class="hint menu-hint" data-line=line.clone()>
                {math_text_with_names(&line, &names)}
                {picked.then_some(" Dashed hollow top: the part of ā an option does not keep (its backward recomputes it); the bracket over the boxes names the policy.")}
            </p>
        })}
    }
}

/// Memory over time, with a measured run of the plan over it; `children`
/// go under the chart (the measured run's status, which the shell passes).
#[component]
pub fn MemoryCard(children: Children) -> impl IntoView {
    let state = use_app();
    let axis = state.time_axis();
    let measured = Signal::derive(move || state.measured.shown());
    // Where the peak comes from: the tensors on the device at that moment,
    // named, largest first (the CLI's `at peak` line, from the one trace).
    let peak_why = Memo::new(move |_| {
        state.shown.current.with(|c| {
            let c = c.as_ref()?;
            let t = c.ok_trace()?;
            Some(format!(
                "Peak {} {}",
                format_bytes(t.peak_bytes),
                t.peak_line(c.ops())
            ))
        })
    });
    view! {
        <CardHead title="Memory over time">
            {card_key(legend::MEMORY_SHADES)}
            {legend::parameter_gradients_key(Signal::derive(move || {
                state.loaded.chain.with(|c| c.counts_parameter_gradients())
            }))}
            {legend::budget_key()}
            <MeasuredLegend shown=Signal::derive(move || measured.with(Option::is_some)) />
            <ZoomReset id="zoom-reset-memory" zoom=axis.zoom />
            <FigureButtons figure=Figure::Memory />
        </CardHead>
        // Full width on a slide: words 1.35× larger there (≥ 18 px at 1920 × 1080).
        <MemoryChart axis measured slide_text=1.35 />
        <p id="peak-why" class="hint" data-line=peak_why>{move || peak_why.get().map(|s| math_text(&s))}</p>
        {children()}
    }
}

/// The GPU and PCIe lanes, with the GPU's idle time in the heading.
#[component]
pub fn TimelinesCard() -> impl IntoView {
    let state = use_app();
    let axis = state.time_axis();
    let idle = move || {
        state.shown.current.get().and_then(|c| {
            c.ok_trace().map(|t| {
                format!(
                    "GPU idle {} of {}",
                    ms(t.idle_seconds),
                    ms(t.makespan_seconds)
                )
            })
        })
    };
    view! {
        <CardHead title="Timelines">
            {swatches(legend::TIMELINES)}
            <span class="muted">"striped: recomputed"</span>
            <span class="muted">{idle}</span>
            <ZoomReset id="zoom-reset-timelines" zoom=axis.zoom />
            <FigureButtons figure=Figure::Timelines />
        </CardHead>
        <TimelineChart axis />
    }
}
