//! Figures for slides, saved from the page: the kit composes the charts on
//! screen (`kit::figure`); here is what each figure's context lines say
//! about the page's state, and the save buttons that download them.

use crate::io::{export_png, export_svg_text};
use crate::kit::figure::{compose, Figure, MemoryKeys, SaveMenu};
use crate::kit::format::{bytes, ms, pct};
use crate::state::{use_app, AppState};
use crate::text::file_name::file_name;
use leptos::prelude::*;

/// What the figure shows: chain, algorithm and budget; then, on a line of
/// its own (one line would not fit a slide's width), the result.
pub(super) fn context_lines(state: AppState, figure: Figure) -> (String, String) {
    let chain = state.loaded.chain.get_untracked();
    let (lo, hi) = (
        state.loaded.m_low.get_untracked(),
        state.loaded.m_high.get_untracked(),
    );
    let budget = state.controls.budget.get_untracked();
    let alpha = (budget as f64 - lo as f64) / (hi as f64 - lo as f64).max(1.0);
    let algorithm = state.controls.algorithm.get_untracked();
    let s = format!(
        "{} · {} · budget {} (α = {:.2}, M_low {} … M_high {})",
        chain.name,
        algorithm.name(),
        bytes(budget),
        alpha,
        bytes(lo),
        bytes(hi)
    );
    let mut result = String::new();
    let shown = state.shown.current.get_untracked();
    if let (Figure::Chain | Figure::Memory | Figure::Timelines, Some(c)) = (figure, &shown) {
        match c.ok_trace() {
            Some(t) => result.push_str(&format!(
                "makespan {} ({} over no limit) · peak {} · {} recomputations",
                ms(t.makespan_seconds),
                pct(t.makespan_seconds / chain.sequential_seconds().max(1e-12) - 1.0),
                bytes(t.peak_bytes),
                t.recomputations
            )),
            None => result.push_str("no schedule at this budget"),
        }
    }
    if figure == Figure::MaxBatch {
        if let Some(caption) = state
            .offloading
            .max_batch
            .with_untracked(|f| f.as_ref().map(|m| m.budget_line()))
        {
            result.push_str(&caption);
        }
    }
    if figure == Figure::Sweep {
        result.push_str(&format!(
            "current β = {:.0} GB/s; each point a solve, measured by the simulator",
            state.controls.bandwidth.get_untracked() / 1e9
        ));
    }
    (s, result)
}

/// The file name of a figure: chain, algorithm, figure.
fn figure_file(state: AppState, what: &str, ext: &str) -> String {
    file_name(
        &state.loaded.chain.get_untracked().name,
        &format!(
            "{}.{what}.{ext}",
            state.controls.algorithm.get_untracked().name()
        ),
    )
}

/// Saves `figures` (one, or the dashboard) as SVG, or as PNG at 2×.
fn save(state: AppState, figures: &[Figure], what: &str, png: bool) {
    let memory = MemoryKeys {
        measured: (state.measured.against.get_untracked()).is_some_and(|m| m.is_ok()),
        parameter_gradients: (state.loaded.chain)
            .with_untracked(|c| c.counts_parameter_gradients()),
    };
    let Some((svg, w, h)) = compose(figures, |f| context_lines(state, f), memory) else {
        state
            .view
            .error(format!("Nothing to export: the {what} is not drawn yet."));
        return;
    };
    if png {
        export_png(state, &svg, w, h, 2.0, &figure_file(state, what, "png"));
    } else {
        export_svg_text(&svg, &figure_file(state, what, "svg"));
    }
}

/// A figure's save menu, saving what the page shows now.
#[component]
pub fn FigureButtons(figure: Figure) -> impl IntoView {
    let state = use_app();
    let computed = Signal::derive(move || match figure {
        Figure::Sweep => state.offloading.sweep.with(Option::is_some),
        Figure::MaxBatch => state.offloading.max_batch.with(Option::is_some),
        _ => true,
    });
    let on_save = Callback::new(move |png| save(state, &[figure], figure.name(), png));
    view! { <SaveMenu figure computed on_save /> }
}

/// The dashboard's save buttons: every figure on the page in one image.
#[component]
pub fn DashboardButtons() -> impl IntoView {
    let state = use_app();
    view! {
        <button id="export-dashboard-svg" title="Every figure on the page in one SVG, for a slide"
            on:click=move |_| save(state, &Figure::ALL, "dashboard", false)>"Dashboard (SVG)"</button>
        <button id="export-dashboard-png" title="Every figure on the page in one PNG (2×), for a slide"
            on:click=move |_| save(state, &Figure::ALL, "dashboard", true)>"Dashboard (PNG)"</button>
    }
}
