//! Figures for slides: each chart, or the whole dashboard, as one SVG (or a
//! PNG drawn from it) that stands on its own — a title, the chain, the
//! algorithm and the budget, and the legend drawn inside the image.

use super::algorithm_style::{alg_color, alg_dash, alg_marker};
use super::chart::{bytes, line_key_svg, ms, palette, pct};
use super::legend;
use super::notation::svg_math;
use crate::file_name::file_name;
use crate::io::{export_png, export_svg_text};
use crate::service::SWEEP_ALGORITHMS;
use crate::state::{use_app, AppState};
use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// Width of a composed figure, in SVG units (the charts' own width).
const WIDTH: f64 = 1200.0;
const PAD: f64 = 24.0;

/// The figures the page can save.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    Chain,
    Memory,
    Timelines,
    Sweep,
    Compare,
    MaxBatch,
}

/// One legend key of an exported figure.
enum Key {
    Fill(&'static str, &'static str),
    Line(Algorithm),
    Dashed(&'static str, &'static str),
    Hatch(&'static str),
    /// A plain line (the measured run's lines over the memory curve).
    Solid(&'static str, &'static str),
    Note(&'static str),
}

impl Figure {
    pub const ALL: [Figure; 6] = [
        Figure::Chain,
        Figure::Memory,
        Figure::Timelines,
        Figure::Compare,
        Figure::Sweep,
        Figure::MaxBatch,
    ];

    /// The name in element ids and file names.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Chain => "chain",
            Figure::Memory => "memory",
            Figure::Timelines => "timelines",
            Figure::Sweep => "sweep",
            Figure::Compare => "compare",
            Figure::MaxBatch => "maxbatch",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Figure::Chain => "Layer chain: what the schedule keeps",
            Figure::Memory => "Memory over time",
            Figure::Timelines => "Timelines: GPU compute and PCIe copies",
            Figure::Sweep => "Offloading sweep: overhead against α and β",
            Figure::Compare => "Overhead against the memory budget",
            Figure::MaxBatch => "Max batch: the largest batch and its throughput per method",
        }
    }

    /// The page's charts this figure is made of, side by side.
    fn charts(self) -> &'static [&'static str] {
        match self {
            Figure::Chain => &["chain-svg"],
            Figure::Memory => &["memory-svg"],
            Figure::Timelines => &["timeline-svg"],
            Figure::Sweep => &["sweep-alpha", "sweep-beta"],
            Figure::Compare => &["curves-svg"],
            Figure::MaxBatch => &["maxbatch-svg"],
        }
    }

    /// `measured`: a measured run is drawn over the memory curve.
    fn legend(self, measured: bool) -> Vec<Key> {
        let fills = |l: &[(&'static str, &'static str)]| -> Vec<Key> {
            l.iter().map(|&(c, t)| Key::Fill(c, t)).collect()
        };
        match self {
            Figure::Chain => {
                let mut k = fills(legend::CHAIN);
                k.push(Key::Note("↻n = recomputations"));
                k
            }
            Figure::Memory => {
                let mut k = fills(legend::MEMORY);
                k.push(Key::Dashed(palette::BUDGET, "budget"));
                if measured {
                    k.push(Key::Solid(super::measured::PREDICTED, "predicted"));
                    k.push(Key::Solid(super::measured::MEASURED, "measured"));
                }
                k
            }
            Figure::Timelines => {
                let mut k = fills(legend::TIMELINES);
                k.push(Key::Note("striped: a recomputation"));
                k.push(Key::Hatch("GPU idle"));
                k
            }
            Figure::Sweep => {
                let mut k: Vec<Key> = SWEEP_ALGORITHMS.into_iter().map(Key::Line).collect();
                k.push(Key::Dashed(palette::BUDGET, "current budget / bandwidth"));
                k
            }
            Figure::Compare => {
                let mut k: Vec<Key> = (Algorithm::ALL.into_iter())
                    .filter(|a| !a.offloads())
                    .map(Key::Line)
                    .collect();
                k.push(Key::Dashed(palette::BUDGET, "budget"));
                k
            }
            Figure::MaxBatch => vec![Key::Note(legend::MAX_BATCH)],
        }
    }
}

/// What the figure shows: chain, algorithm and budget; then, on a line of
/// its own (one line would not fit a slide's width), the result.
fn context_lines(state: AppState, figure: Figure) -> (String, String) {
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
            .with_untracked(|f| f.as_ref().map(crate::words::budget_line))
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The legend in rows across the figure; returns the SVG and its height.
fn legend_svg(keys: &[Key], top: f64) -> (String, f64) {
    let (mut x, mut y) = (PAD, top + 10.0);
    let mut s = String::new();
    for key in keys {
        let (label, key_w) = match key {
            Key::Fill(_, l) | Key::Dashed(_, l) | Key::Hatch(l) => (*l, 16.0),
            Key::Solid(_, l) => (*l, 24.0),
            Key::Line(a) => (a.name(), 34.0),
            Key::Note(l) => (*l, 0.0),
        };
        let w = key_w + 6.0 + label.chars().count() as f64 * 7.4 + 22.0;
        if x + w > WIDTH - PAD && x > PAD {
            x = PAD;
            y += 22.0;
        }
        s.push_str(&match key {
            Key::Fill(c, _) => format!(
                r#"<rect x="{x:.1}" y="{:.1}" width="14" height="14" rx="2" fill="{c}"/>"#,
                y - 7.0
            ),
            Key::Line(a) => line_key_svg(x, y, 30.0, alg_color(*a), alg_dash(*a), alg_marker(*a)),
            Key::Dashed(c, _) => format!(
                r#"<line x1="{x:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2" stroke-dasharray="5 3"/>"#,
                x + 16.0
            ),
            Key::Hatch(_) => format!(
                r##"<rect x="{x:.1}" y="{:.1}" width="14" height="14" fill="#fbeaea" stroke="#e7b7b7" stroke-width="2" stroke-dasharray="2 2"/>"##,
                y - 7.0
            ),
            Key::Solid(c, _) => format!(
                r#"<line x1="{x:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2.6"/>"#,
                x + 24.0
            ),
            Key::Note(_) => String::new(),
        });
        s.push_str(&format!(
            r##"<text class="legend-label" x="{:.1}" y="{:.1}" font-size="13" fill="#2b3442">{}</text>"##,
            x + key_w + 6.0,
            y + 4.5,
            svg_math(label)
        ));
        x += w;
    }
    (s, y + 14.0 - top)
}

/// A chart of the page as a nested `<svg>` at (x, y), `max_w` wide; its
/// height. A narrower chart is scaled up to the width (the compare curves,
/// 640 units, filled half a slide's figure before issue 26; their text
/// grows with them, which a slide wants).
fn nested_chart(id: &str, x: f64, y: f64, max_w: f64) -> Option<(String, f64)> {
    let el = leptos::prelude::document().get_element_by_id(id)?;
    let view_box = el.get_attribute("viewBox")?;
    let dims: Vec<f64> = view_box
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    let (vw, vh) = (*dims.get(2)?, *dims.get(3)?);
    let w = max_w;
    let h = vh * w / vw.max(1.0);
    let text = web_sys::XmlSerializer::new()
        .ok()?
        .serialize_to_string(&el)
        .ok()?;
    let rest = text.strip_prefix("<svg")?;
    Some((
        format!(r#"<svg x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"{rest}"#),
        h,
    ))
}

/// One figure's block at `top`: title, context, legend, charts; with its
/// height. None when none of its charts is on the page.
fn block(state: AppState, figure: Figure, top: f64) -> Option<(String, f64)> {
    let charts = figure.charts();
    let (context, result) = context_lines(state, figure);
    let mut s = format!(
        r##"<text class="figure-title" x="{PAD}" y="{:.1}" font-size="22" font-weight="700" fill="#1d2430">{}</text><text class="figure-context" x="{PAD}" y="{:.1}" font-size="14" fill="#2b3442">{}</text>"##,
        top + 28.0,
        esc(figure.title()),
        top + 50.0,
        svg_math(&context)
    );
    let mut y = top + 62.0;
    if !result.is_empty() {
        s.push_str(&format!(
            r##"<text class="figure-result" x="{PAD}" y="{:.1}" font-size="14" fill="#2b3442">{}</text>"##,
            top + 69.0,
            esc(&result)
        ));
        y += 19.0;
    }
    let measured = state
        .measured
        .against
        .get_untracked()
        .is_some_and(|m| m.is_ok());
    let (legend, legend_h) = legend_svg(&figure.legend(measured), y);
    s.push_str(&legend);
    let charts_top = y + legend_h + 8.0;
    let w = (WIDTH - 2.0 * PAD * 0.5) / charts.len() as f64;
    let mut h = 0.0f64;
    let mut any = false;
    for (i, id) in charts.iter().enumerate() {
        if let Some((svg, ch)) = nested_chart(id, PAD * 0.5 + i as f64 * w, charts_top, w) {
            s.push_str(&svg);
            h = h.max(ch);
            any = true;
        }
    }
    any.then_some((s, charts_top + h + 12.0 - top))
}

/// `figures` stacked into one standalone SVG; with its size.
fn compose(state: AppState, figures: &[Figure]) -> Option<(String, f64, f64)> {
    let mut body = String::new();
    let mut y = 0.0;
    for &f in figures {
        if let Some((s, h)) = block(state, f, y) {
            body.push_str(&s);
            y += h;
        }
    }
    if body.is_empty() {
        return None;
    }
    let h = y + 8.0;
    Some((
        format!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h:.0}" viewBox="0 0 {WIDTH} {h:.0}" font-family="Inter, system-ui, sans-serif"><rect x="0" y="0" width="{WIDTH}" height="{h:.0}" fill="#ffffff"/>{body}</svg>"##
        ),
        WIDTH,
        h,
    ))
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
    let Some((svg, w, h)) = compose(state, figures) else {
        state
            .view
            .error(format!("Nothing to export: the {what} is not drawn yet."));
        return;
    };
    if png {
        export_png(&svg, w, h, 2.0, &figure_file(state, what, "png"));
    } else {
        export_svg_text(&svg, &figure_file(state, what, "svg"));
    }
}

/// A figure's save menu: one "Save" control on the card (the first screen
/// counts its controls), SVG and PNG inside. A figure computed on demand
/// (the sweep, max batch) says it is not computed yet instead of saving
/// nothing, silently.
#[component]
pub fn FigureButtons(figure: Figure) -> impl IntoView {
    let state = use_app();
    let name = figure.name();
    let computed = move || match figure {
        Figure::Sweep => state.offloading.sweep.with(Option::is_some),
        Figure::MaxBatch => state.offloading.max_batch.with(Option::is_some),
        _ => true,
    };
    view! {
        <details class="figure-export" id=format!("save-{name}")>
            <summary title="Save this figure for a slide: its title, legend, chain, algorithm and budget inside">"Save"</summary>
            <span class="figure-export-menu">
                {move || (!computed()).then(|| view! {
                    <span class="muted not-computed">"not computed yet: run it first"</span>
                })}
                <button class="small" id=format!("export-{name}-svg") disabled=move || !computed()
                    title="This figure with its title, legend, chain, algorithm and budget, as SVG"
                    on:click=move |_| save(state, &[figure], name, false)>"SVG"</button>
                <button class="small" id=format!("export-{name}-png") disabled=move || !computed()
                    title="This figure with its title, legend, chain, algorithm and budget, as PNG (2×)"
                    on:click=move |_| save(state, &[figure], name, true)>"PNG"</button>
            </span>
        </details>
    }
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
