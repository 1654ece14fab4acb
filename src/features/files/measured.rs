//! A measured run on the page: the **Import measured run…** button, the two
//! step lines over the memory curve (predicted and measured, each op's
//! peak across its predicted span, then the memory it leaves), their
//! legend, and the one-line summary — or why the run is not drawn.

use super::chart::{num, palette};
use crate::io;
use crate::measured::{highest, step_line, summary, Side};
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::measured::Comparison;

/// The predicted line: the page's ink.
pub const PREDICTED: &str = palette::CURSOR;
/// The measured line: reddish purple, away from the bands' blue, orange
/// and green.
pub const MEASURED: &str = "#cc79a7";

/// The highest level the lines reach, for the chart's scale (0 without).
pub fn top(c: Option<&Comparison>) -> u64 {
    c.map_or(0, highest)
}

/// Both lines as SVG over the memory chart: `x` and `y` map seconds and
/// bytes to chart units. Measured first, on a white halo, predicted on top
/// with none: a thin dark line inside a wide pink band, so where they agree
/// (a plan that holds to the byte) both still show. (A halo under the
/// predicted line covered the measured one wherever they coincided.)
pub fn overlay_svg(c: &Comparison, x: impl Fn(f64) -> f64, y: impl Fn(u64) -> f64) -> String {
    let d = |side| {
        let mut d = String::new();
        for piece in step_line(&c.rows, side) {
            for (k, &(t, b)) in piece.iter().enumerate() {
                d.push(if k == 0 { 'M' } else { 'L' });
                num(&mut d, x(t));
                d.push(' ');
                num(&mut d, y(b));
            }
        }
        d
    };
    let (measured, predicted) = (d(Side::Measured), d(Side::Predicted));
    format!(
        r##"<g id="measured-overlay" fill="none" stroke-linejoin="round"><path d="{measured}" stroke="#ffffff" stroke-width="5"/><path class="measured-line" d="{measured}" stroke="{MEASURED}" stroke-width="4.5"/><path class="predicted-line" d="{predicted}" stroke="{PREDICTED}" stroke-width="1.6"/></g>"##
    )
}

fn key(color: &'static str, width: f64, label: &'static str) -> impl IntoView {
    let svg = format!(
        r##"<line x1="1" x2="27" y1="6" y2="6" stroke="#ffffff" stroke-width="{}"/><line x1="1" x2="27" y1="6" y2="6" stroke="{color}" stroke-width="{width}"/>"##,
        width + 2.5
    );
    view! {
        <span class="swatch line-swatch">
            <svg width="30" height="12" viewBox="0 0 30 12" aria-hidden="true" inner_html=svg></svg>
            <span>{label}</span>
        </span>
    }
}

/// "predicted" / "measured", while a run is drawn.
#[component]
pub fn MeasuredLegend() -> impl IntoView {
    let state = use_app();
    move || {
        state.measured.shown().map(|_| {
            view! {
                <span id="measured-legend" class="measured-legend">
                    {key(PREDICTED, 1.6, "predicted")}
                    {key(MEASURED, 2.6, "measured")}
                </span>
            }
        })
    }
}

/// Under the memory chart: the summary of the run drawn, or why the run
/// loaded is not drawn; and a button that removes it.
#[component]
pub fn MeasuredStatus() -> impl IntoView {
    let state = use_app();
    let remove = move |_| {
        state.measured.run.set(None);
        state.view.notice.set(None);
    };
    move || {
        let file = state.measured.run.get()?.file_name.clone();
        let (id, class, text) = match state.measured.against.get()? {
            Ok(c) => (
                "measured-summary",
                "measured-status",
                format!("Measured run {file}: {}", summary(&c)),
            ),
            Err(why) => (
                "measured-mismatch",
                "measured-status off",
                format!("Measured run {file} is not drawn: {why}."),
            ),
        };
        Some(view! {
            <div id=id class=class role="status">
                <span>{text}</span>
                <button id="measured-remove" class="small" on:click=remove
                    title="Forget the measured run">"Remove"</button>
            </div>
        })
    }
}

/// The header's button: a `remat-run/1` file, read as a run whatever it is
/// (a chain or schedule given here is named by its `format`).
#[component]
pub fn ImportRunButton() -> impl IntoView {
    let state = use_app();
    let on_file = super::file_input::on_file_chosen(state, io::import_run_file);
    let open_dialog = move |_| super::file_input::click_input("import-run-input");
    view! {
        <button id="import-run-button" on:click=open_dialog
            title="A remat-run/1 file: one training step of the plan on screen as remat_torch measured it, drawn over the memory curve">
            "Import measured run…"
        </button>
        <input id="import-run-input" type="file" accept=".json,application/json" tabindex="-1"
            aria-hidden="true" on:change=on_file />
    }
}
