//! Figures for slides: each chart, or the whole dashboard, as one SVG (or a
//! PNG drawn from it) that stands on its own — a title, the chain, the
//! algorithm and the budget, and the legend drawn inside the image. The
//! charts are read from the page by their ids; each figure's context lines
//! come from the caller (`io::saved_figures` writes them from the page's state).

use super::algorithm_style::{alg_color, alg_dash, alg_marker};
use super::legend;
use super::notation::svg_math;
use super::palette;
use super::svg::line_key_svg;
use crate::planning::service::SWEEP_ALGORITHMS;
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

    pub fn title(self) -> &'static str {
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

    fn legend(self, memory: MemoryKeys) -> Vec<Key> {
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
                if memory.parameter_gradients {
                    let (c, t) = legend::PARAMETER_GRADIENTS;
                    k.push(Key::Fill(c, t));
                }
                k.push(Key::Dashed(palette::BUDGET, "budget"));
                if memory.measured {
                    k.push(Key::Solid(palette::PREDICTED, "predicted"));
                    k.push(Key::Solid(palette::MEASURED, "measured"));
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

/// What the memory curve draws beyond its usual bands, so that its
/// exported legend names it.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryKeys {
    /// A measured run drawn over the curve.
    pub measured: bool,
    /// The chain counts parameter gradients (g^ℓ bands).
    pub parameter_gradients: bool,
}

/// One figure's block at `top`: title, context, legend, charts; with its
/// height. None when none of its charts is on the page.
fn block(
    figure: Figure,
    (context, result): (String, String),
    memory: MemoryKeys,
    top: f64,
) -> Option<(String, f64)> {
    let charts = figure.charts();
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
    let (legend, legend_h) = legend_svg(&figure.legend(memory), y);
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
/// `context` gives each figure's context lines (what it shows; its result);
/// `memory`: what the memory curve shows beyond its usual bands.
pub fn compose(
    figures: &[Figure],
    context: impl Fn(Figure) -> (String, String),
    memory: MemoryKeys,
) -> Option<(String, f64, f64)> {
    let mut body = String::new();
    let mut y = 0.0;
    for &f in figures {
        if let Some((s, h)) = block(f, context(f), memory, y) {
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

/// A figure's save menu: one "Save" control on the card (the first screen
/// counts its controls), SVG and PNG inside; `on_save` gets `true` for PNG.
/// A figure computed on demand (the sweep, max batch) says it is not
/// computed yet (`computed`) instead of saving nothing, silently.
#[component]
pub fn SaveMenu(figure: Figure, computed: Signal<bool>, on_save: Callback<bool>) -> impl IntoView {
    let name = figure.name();
    view! {
        <details class="figure-export" id=format!("save-{name}")>
            <summary title="Save this figure for a slide: its title, legend, chain, algorithm and budget inside">"Save"</summary>
            <span class="figure-export-menu">
                {move || (!computed.get()).then(|| view! {
                    <span class="muted not-computed">"not computed yet: run it first"</span>
                })}
                <button class="small" id=format!("export-{name}-svg") disabled=move || !computed.get()
                    title="This figure with its title, legend, chain, algorithm and budget, as SVG"
                    on:click=move |_| on_save.run(false)>"SVG"</button>
                <button class="small" id=format!("export-{name}-png") disabled=move || !computed.get()
                    title="This figure with its title, legend, chain, algorithm and budget, as PNG (2×)"
                    on:click=move |_| on_save.run(true)>"PNG"</button>
            </span>
        </details>
    }
}
