//! The step as a graph, as Salimans & Bulatov's gradient-checkpointing
//! figures draw it: the forward nodes a^0 … a^L in a row, the backward
//! nodes δ^L … δ^0 under them, the data dependencies as edges
//! (a^{ℓ−1} → a^ℓ, a^L → δ^L, δ^ℓ → δ^{ℓ−1}, a^{ℓ−1} → δ^{ℓ−1}). At the
//! current operation the resident tensors are filled: a^ℓ alone in a^ℓ's
//! colour, a^ℓ with ā^ℓ kept for B^ℓ in ā's, full height and outlined, δ^ℓ
//! in δ's; a node a recomputation wrote is striped, so the forward row
//! visibly re-fills.
//!
//! [`frame_svg`] draws the same graph as a standalone SVG, with a title,
//! the op's caption and the legend inside: one frame of the GIF that
//! `io::gif` saves.

use super::notation::{math_text, svg_math};
use super::palette;
use super::scale::{CHART_W, MARGIN_L, PLOT_W};
use super::svg::recompute_stripes;
use super::widgets::Swatch;
use crate::teaching::animated_gif::wrap_caption;
use crate::teaching::step_graph::{Held, Marks, Node, StepGraph};
use leptos::prelude::*;
use remat_core::{Chain, Op};
use std::fmt::Write;
use std::sync::Arc;

/// The forward row's nodes stand on this line, the backward row's hang
/// from the second; a node is at most `ROW_H` tall.
const TOP_BASE: f64 = 104.0;
const BOTTOM_TOP: f64 = 150.0;
const ROW_H: f64 = 64.0;
/// The share of a column its node takes; the rest is the edge between.
const NODE_SHARE: f64 = 0.7;
const EDGE: &str = "#8a94a3";
const OUTLINE: &str = "#c9d0da";
/// ā's darker shade, for the outline that tells ā^ℓ from a^ℓ alone
/// without its colour.
const SAVED_OUTLINE: &str = palette::SAVED[1];

/// Where each column's node sits: its left edge, its width on either row,
/// and the bytes scale of the heights.
struct Layout {
    /// Column ℓ's centre, ℓ in 0..=L.
    cx: Vec<f64>,
    /// a^ℓ's width (∝ u_f^ℓ) and δ^ℓ's (∝ u_b^{ℓ+1}, the backward that
    /// writes it).
    forward_w: Vec<f64>,
    backward_w: Vec<f64>,
    /// Chart units per byte; None: equal nodes.
    per_byte: Option<f64>,
    /// The columns whose nodes are named: each one label's width from the
    /// one before (proportional columns differ in width: a fixed step let
    /// vgg19's narrow last columns overlap).
    labelled: Vec<bool>,
    /// The tallest node of each row, for the labels over and under them.
    top_h: f64,
    bottom_h: f64,
}

impl Layout {
    fn new(chain: &Chain, proportional: bool) -> Layout {
        let n = chain.len();
        // Time of the op writing each node; a^0 (the input) and δ^L (the
        // loss's seed) are written by none, and get a quarter of a mean op.
        let forward_t: Vec<Option<f64>> = (0..=n)
            .map(|l| (l > 0).then(|| chain.stage(l).forward_seconds))
            .collect();
        let backward_t: Vec<Option<f64>> = (0..=n)
            .map(|l| (l < n).then(|| chain.stage(l + 1).backward_seconds))
            .collect();
        let mean = (1..=n)
            .map(|l| {
                let s = chain.stage(l);
                s.forward_seconds.max(s.backward_seconds).max(0.0)
            })
            .sum::<f64>()
            / n.max(1) as f64;
        let least = (mean / 4.0).max(1e-12);
        let time = |t: Option<f64>| match (proportional, t) {
            (false, _) => 1.0,
            (true, None) => least,
            (true, Some(t)) => t.max(least / 4.0),
        };
        let weights: Vec<f64> = (0..=n)
            .map(|l| time(forward_t[l]).max(time(backward_t[l])))
            .collect();
        let total: f64 = weights.iter().sum();
        let mut cx = Vec::with_capacity(n + 1);
        let mut forward_w = Vec::with_capacity(n + 1);
        let mut backward_w = Vec::with_capacity(n + 1);
        let mut x = MARGIN_L;
        for l in 0..=n {
            let col = weights[l] / total * PLOT_W;
            cx.push(x + col / 2.0);
            let node = |t: Option<f64>| (time(t) / weights[l] * col * NODE_SHARE).max(3.0);
            forward_w.push(node(forward_t[l]));
            backward_w.push(node(backward_t[l]));
            x += col;
        }
        let most = (0..=n)
            .map(|l| {
                let saved = if l > 0 { chain.saved_bytes(l) } else { 0 };
                saved
                    .max(chain.output_bytes(l))
                    .max(chain.gradient_bytes(l))
            })
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        // A name is the letter and up to four digits raised.
        let room = 12.0 + 8.0 * (n.max(1).ilog10() + 1) as f64;
        let per_column = PLOT_W / (n + 1) as f64;
        let step = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000]
            .into_iter()
            .find(|&k| k as f64 * per_column >= room)
            .unwrap_or(n.max(1));
        let mut last = f64::NEG_INFINITY;
        let labelled = cx
            .iter()
            .enumerate()
            .map(|(l, &x)| {
                let named = l.is_multiple_of(step) && x - last >= room;
                if named {
                    last = x;
                }
                named
            })
            .collect();
        let mut layout = Layout {
            cx,
            forward_w,
            backward_w,
            per_byte: proportional.then_some(ROW_H / most),
            labelled,
            top_h: 0.0,
            bottom_h: 0.0,
        };
        for l in 0..=n {
            layout.top_h = layout.top_h.max(layout.node(chain, Node::Forward(l)).3);
            layout.bottom_h = layout.bottom_h.max(layout.node(chain, Node::Backward(l)).3);
        }
        layout
    }

    /// A node's height for `bytes`, or the equal nodes' `share` of a row.
    fn height(&self, bytes: u64, share: f64) -> f64 {
        match self.per_byte {
            Some(k) => (bytes as f64 * k).max(4.0),
            None => ROW_H * share,
        }
    }

    /// The node's box: x, y, width, height.
    fn node(&self, chain: &Chain, node: Node) -> (f64, f64, f64, f64) {
        match node {
            Node::Forward(l) => {
                let saved = if l > 0 { chain.saved_bytes(l) } else { 0 };
                let h = self.height(saved.max(chain.output_bytes(l)), 0.9);
                let w = self.forward_w[l];
                (self.cx[l] - w / 2.0, TOP_BASE - h, w, h)
            }
            Node::Backward(l) => {
                let h = self.height(chain.gradient_bytes(l), 0.6);
                let w = self.backward_w[l];
                (self.cx[l] - w / 2.0, BOTTOM_TOP, w, h)
            }
        }
    }

    /// a^ℓ alone: the part of the forward node a^ℓ fills (ā^ℓ fills all).
    fn output_height(&self, chain: &Chain, l: usize) -> f64 {
        self.height(chain.output_bytes(l), 0.45)
    }

    /// The chart's height: down to the labels under the backward row.
    fn chart_height(&self) -> f64 {
        BOTTOM_TOP + self.bottom_h + 34.0
    }
}

/// A tensor's name in the SVG: the letter and its stage raised.
fn label(x: f64, y: f64, base: &str, l: usize) -> String {
    format!(
        r##"<text class="graph-label" x="{x:.1}" y="{y:.1}" font-size="17" text-anchor="middle" fill="{}">{base}<tspan dy="-7" font-size="12">{l}</tspan></text>"##,
        palette::CURSOR
    )
}

/// An edge from (x1, y1) to (x2, y2); `now`: the current op reads it.
fn edge(s: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), now: bool) {
    let (stroke, width, marker) = if now {
        (palette::CURSOR, 2.5, "graph-arrow-now")
    } else {
        (EDGE, 1.2, "graph-arrow")
    };
    let _ = write!(
        s,
        r##"<line class="graph-edge{}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width}" marker-end="url(#{marker})"/>"##,
        if now { " now" } else { "" }
    );
}

/// The edges, those the current op computes along dark: F^ℓ a^{ℓ−1} →
/// a^ℓ; B^ℓ δ^ℓ → δ^{ℓ−1} and a^{ℓ−1} → δ^{ℓ−1} (a copy or a release
/// computes nothing).
fn edges(s: &mut String, chain: &Chain, layout: &Layout, op: Option<Op>) {
    let n = chain.len();
    let computes = match op {
        Some(Op::Backward { stage }) => Some(Node::Backward(stage.saturating_sub(1))),
        Some(op) if op.is_forward() => Some(Node::Forward(op.stage())),
        _ => None,
    };
    let arrow_gap = 2.0;
    for l in 1..=n {
        let (x0, _, w0, _) = layout.node(chain, Node::Forward(l - 1));
        let (x1, ..) = layout.node(chain, Node::Forward(l));
        let y = TOP_BASE - 3.0;
        edge(
            s,
            (x0 + w0, y),
            (x1 - arrow_gap, y),
            computes == Some(Node::Forward(l)),
        );
        let (xb0, _, wb0, _) = layout.node(chain, Node::Backward(l - 1));
        let (xb1, ..) = layout.node(chain, Node::Backward(l));
        let y = BOTTOM_TOP + 3.0;
        edge(
            s,
            (xb1, y),
            (xb0 + wb0 + arrow_gap, y),
            computes == Some(Node::Backward(l - 1)),
        );
    }
    for l in 0..=n {
        // a^ℓ → δ^ℓ: B^{ℓ+1} reads its input a^ℓ; a^L → δ^L, the loss.
        let now = computes == Some(Node::Backward(l)) && l < n;
        edge(
            s,
            (layout.cx[l], TOP_BASE + 1.0),
            (layout.cx[l], BOTTOM_TOP - arrow_gap),
            now,
        );
    }
}

fn defs() -> String {
    let arrow = |id: &str, fill: &str| {
        format!(
            r##"<marker id="{id}" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="{fill}"/></marker>"##
        )
    };
    format!(
        "<defs>{}{}{}</defs>",
        recompute_stripes("graph-stripes"),
        arrow("graph-arrow", EDGE),
        arrow("graph-arrow-now", palette::CURSOR)
    )
}

/// A resident tensor's fill in its node: kind (`data-kind`), box, and the
/// outline that tells ā^ℓ from a^ℓ alone without its colour.
struct Fill {
    kind: &'static str,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    outline: Option<&'static str>,
}

/// One node: its outline, its fill where resident, its stripes where a
/// recomputation wrote it, a dashed outline where a copy is on the host.
/// The group names its tensor (`data-tensor`) and what is resident
/// (`data-resident`, as `remat simulate --states` lists it).
fn node(s: &mut String, chain: &Chain, layout: &Layout, marks: &Marks, node: Node) {
    let (x, y, w, h) = layout.node(chain, node);
    let (name, resident, fill, refilled) = match node {
        Node::Forward(l) => {
            let name = format!("a^{l}");
            match marks.forward[l] {
                Held::Nothing => (name, None, None, false),
                Held::Output => {
                    let fh = layout.output_height(chain, l).min(h);
                    let fill = Fill {
                        kind: "a",
                        x,
                        y: TOP_BASE - fh,
                        w,
                        h: fh,
                        outline: None,
                    };
                    (name.clone(), Some(name), Some(fill), marks.refilled[l])
                }
                Held::Saved => {
                    let fill = Fill {
                        kind: "ā",
                        x,
                        y,
                        w,
                        h,
                        outline: Some(SAVED_OUTLINE),
                    };
                    (name, Some(format!("ā^{l}")), Some(fill), marks.refilled[l])
                }
            }
        }
        Node::Backward(l) => {
            let name = format!("δ^{l}");
            let fill = Fill {
                kind: "δ",
                x,
                y,
                w,
                h,
                outline: None,
            };
            match marks.backward[l] {
                true => (name.clone(), Some(name), Some(fill), false),
                false => (name, None, None, false),
            }
        }
    };
    let _ = write!(s, r#"<g class="graph-node" data-tensor="{name}""#);
    if let Some(r) = &resident {
        let _ = write!(s, r#" data-resident="{r}""#);
    }
    if refilled {
        s.push_str(r#" data-recomputed="true""#);
    }
    let mut title = match &resident {
        None => format!("{name}: not on the device"),
        Some(r) if r.starts_with('ā') => {
            format!("{r}: {name} with what its backward needs, kept")
        }
        Some(r) => format!("{r}: on the device"),
    };
    if refilled {
        title.push_str(", recomputed");
    }
    let _ = write!(
        s,
        r##"><title>{title}</title><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="#ffffff" stroke="{OUTLINE}" stroke-width="1"/>"##
    );
    if let Some(Fill {
        kind,
        x: fx,
        y: fy,
        w: fw,
        h: fh,
        outline,
    }) = fill
    {
        let _ = write!(
            s,
            r##"<rect data-kind="{kind}" x="{fx:.1}" y="{fy:.1}" width="{fw:.1}" height="{fh:.1}" fill="{}""##,
            palette::of_kind(kind)
        );
        if let Some(o) = outline {
            let _ = write!(s, r##" stroke="{o}" stroke-width="3""##);
        }
        s.push_str("/>");
        if refilled {
            let _ = write!(
                s,
                r##"<rect data-kind="recompute" x="{fx:.1}" y="{fy:.1}" width="{fw:.1}" height="{fh:.1}" fill="url(#graph-stripes)"/>"##
            );
        }
    }
    if marks.host.contains(&node) {
        let _ = write!(
            s,
            r##"<rect class="graph-host" data-kind="offload" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="4 3"/>"##,
            x - 3.0,
            y - 3.0,
            w + 6.0,
            h + 6.0,
            palette::OFFLOAD
        );
    }
    s.push_str("</g>");
}

/// The graph at operation `step` (None: the nodes and edges alone).
fn draw(g: &StepGraph, step: Option<usize>, proportional: bool) -> String {
    let chain = &g.chain;
    let n = chain.len();
    let layout = Layout::new(chain, proportional);
    let marks = step.map(|i| g.marks(i));
    let empty = Marks {
        forward: vec![Held::Nothing; n + 1],
        refilled: vec![false; n + 1],
        backward: vec![false; n + 1],
        host: Vec::new(),
        computes: None,
    };
    let marks = marks.as_ref().unwrap_or(&empty);
    let mut s = defs();
    let _ = write!(
        s,
        r##"<text x="{x:.1}" y="{:.1}" font-size="13" text-anchor="end" fill="#5a6474">forward</text><text x="{x:.1}" y="{:.1}" font-size="13" text-anchor="end" fill="#5a6474">backward</text>"##,
        TOP_BASE - 6.0,
        BOTTOM_TOP + 16.0,
        x = MARGIN_L - 6.0,
    );
    edges(
        &mut s,
        chain,
        &layout,
        step.and_then(|i| g.ops.get(i).copied()),
    );
    for l in 0..=n {
        node(&mut s, chain, &layout, marks, Node::Forward(l));
        node(&mut s, chain, &layout, marks, Node::Backward(l));
        if layout.labelled[l] {
            s.push_str(&label(layout.cx[l], TOP_BASE - layout.top_h - 12.0, "a", l));
            s.push_str(&label(
                layout.cx[l],
                BOTTOM_TOP + layout.bottom_h + 24.0,
                "δ",
                l,
            ));
        }
    }
    if let Some(now) = marks.computes {
        let (x, y, w, h) = layout.node(chain, now);
        let name = match now {
            Node::Forward(l) => format!("a^{l}"),
            Node::Backward(l) => format!("δ^{l}"),
        };
        let _ = write!(
            s,
            r##"<rect id="graph-current" data-node="{name}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="3" fill="none" stroke="{}" stroke-width="2.5"/>"##,
            x - 4.0,
            y - 4.0,
            w + 8.0,
            h + 8.0,
            palette::CURSOR
        );
    }
    s
}

/// The legend of a saved frame, one row from `x`, `y` (the page's legend
/// is HTML under the chart; a frame carries its own).
fn frame_legend(mut x: f64, y: f64) -> String {
    let saved = format!(r#"stroke="{SAVED_OUTLINE}" stroke-width="2""#);
    let now = format!(r#"stroke="{}" stroke-width="2.5""#, palette::CURSOR);
    let host = format!(
        r#"stroke="{}" stroke-width="2" stroke-dasharray="4 3""#,
        palette::OFFLOAD
    );
    // (fill, outline, striped, label)
    let keys: [(&str, &str, bool, &str); 6] = [
        (palette::of_kind("a"), "", false, "a^ℓ on the device"),
        (
            palette::of_kind("ā"),
            &saved,
            false,
            "a^ℓ with ā^ℓ, kept for B^ℓ",
        ),
        (palette::of_kind("δ"), "", false, "δ^ℓ on the device"),
        (EDGE, "", true, "striped: recomputed"),
        ("#ffffff", &now, false, "this op's node"),
        ("#ffffff", &host, false, "dashed: a copy on the host"),
    ];
    let mut s = String::new();
    for (fill, outline, striped, label) in keys {
        let sy = y - 7.0;
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{sy:.1}" width="14" height="14" rx="2" fill="{fill}" {outline}/>"##
        );
        if striped {
            let _ = write!(
                s,
                r##"<rect x="{x:.1}" y="{sy:.1}" width="14" height="14" fill="url(#graph-stripes)"/>"##
            );
        }
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="14" fill="#2b3442">{}</text>"##,
            x + 20.0,
            y + 5.0,
            svg_math(label)
        );
        x += 20.0 + label.chars().filter(|&c| c != '^').count() as f64 * 6.8 + 24.0;
    }
    s
}

/// The most characters of a caption line in a frame (18-pixel text over
/// 1150 pixels, the bold "op 121 / 192 · " before the first line); and the
/// most lines a caption gets there.
const CAPTION_CHARS: usize = 100;
const CAPTION_MAX_ROWS: usize = 3;

/// A frame's caption as lines (`animated_gif::wrap_caption`).
fn caption_lines(text: &str) -> Vec<String> {
    wrap_caption(text, CAPTION_CHARS, CAPTION_MAX_ROWS)
}

/// The caption rows a GIF of `g` at the ops `steps` needs: its longest
/// caption's (every frame has the same height).
pub fn caption_rows(g: &StepGraph, steps: &[usize]) -> usize {
    steps
        .iter()
        .filter_map(|&i| g.captions.get(i))
        .map(|c| caption_lines(c).len())
        .max()
        .unwrap_or(1)
        .max(1)
}

/// One frame of the graph's animation as a standalone SVG, with its width
/// and height: `title` and the context `lines` (chain, algorithm, budget;
/// the result) over the graph at op `step`, the op's caption under it
/// ("op 5 / 32 · …", as the page words it, on `rows` lines: see
/// [`caption_rows`]), then the legend. Every frame of a schedule has the
/// same size (the rows' height depends on the chain alone), so they stack
/// into one GIF.
pub fn frame_svg(
    g: &StepGraph,
    step: usize,
    proportional: bool,
    title: &str,
    lines: &[String],
    rows: usize,
) -> (String, f64, f64) {
    let pad = 24.0;
    let mut head = format!(
        r##"<text x="{pad}" y="30" font-size="22" font-weight="700" fill="#1d2430">{}</text>"##,
        svg_math(title)
    );
    let mut y = 30.0;
    for line in lines.iter().filter(|l| !l.is_empty()) {
        y += 21.0;
        let _ = write!(
            head,
            r##"<text x="{pad}" y="{y:.1}" font-size="15" fill="#2b3442">{}</text>"##,
            svg_math(line)
        );
    }
    let top = y + 6.0;
    let chart_h = Layout::new(&g.chain, proportional).chart_height();
    let caption_y = top + chart_h + 12.0;
    let mut caption_rows = caption_lines(g.captions.get(step).map_or("", String::as_str));
    caption_rows.truncate(rows.max(1));
    let mut caption = String::new();
    for (i, row) in caption_rows.iter().enumerate() {
        // The first row follows the bold "op k / n · "; the others start
        // at the left edge.
        if i > 0 {
            let _ = write!(
                caption,
                r##"<tspan x="{pad}" y="{:.1}">"##,
                caption_y + 23.0 * i as f64
            );
        } else {
            caption.push_str("<tspan>");
        }
        let _ = write!(caption, "{}</tspan>", svg_math(row));
    }
    let legend_y = caption_y + 23.0 * (rows.max(1) - 1) as f64 + 34.0;
    let h = (legend_y + 20.0).ceil();
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_W}" height="{h}" viewBox="0 0 {CHART_W} {h}" font-family="Inter, system-ui, sans-serif"><rect x="0" y="0" width="{CHART_W}" height="{h}" fill="#ffffff"/>{head}<g transform="translate(0 {top:.1})">{graph}</g><text x="{pad}" y="{caption_y:.1}" font-size="18" fill="#1d2430"><tspan font-weight="700">op {op} / {n} · </tspan>{caption}</text>{legend}</svg>"##,
        graph = draw(g, Some(step), proportional),
        op = step + 1,
        n = g.ops.len(),
        legend = frame_legend(pad, legend_y),
    );
    (svg, CHART_W, h)
}

/// What the graph shows at `step`, in one sentence, for screen readers.
fn summary(g: &StepGraph, step: Option<usize>) -> String {
    let n = g.chain.len();
    let head =
        format!("Graph of the step: forward nodes a^0 to a^{n}, backward nodes δ^{n} to δ^0");
    match step.and_then(|i| g.states.get(i).map(|s| (i, s))) {
        Some((i, s)) => format!(
            "{head}; after op {} of {}, {} tensors on the device.",
            i + 1,
            g.ops.len(),
            s.device.len()
        ),
        None => format!("{head}."),
    }
}

/// The graph of `graph`'s schedule at the op `step` (the shared cursor of
/// the step-through), with its caption and legend. `proportional`: node
/// widths follow the time of the op writing them and heights their bytes;
/// else all nodes are equal.
#[component]
pub fn GraphChart(
    graph: Signal<Option<Arc<StepGraph>>>,
    step: Signal<Option<usize>>,
    proportional: Signal<bool>,
) -> impl IntoView {
    let layer = move || {
        graph.with(|g| {
            g.as_deref()
                .map(|g| draw(g, step.get(), proportional.get()))
                .unwrap_or_default()
        })
    };
    let label = move || {
        graph.with(|g| {
            g.as_deref()
                .map(|g| summary(g, step.get()))
                .unwrap_or_else(|| "Graph of the step: no schedule.".into())
        })
    };
    // The op's caption, as the core words it (`remat simulate --states`
    // gives the same), and where it stands in the schedule.
    let caption = move || {
        let i = step.get()?;
        graph.with(|g| {
            let g = g.as_deref()?;
            Some((i, g.ops.len(), g.captions.get(i)?.clone()))
        })
    };
    // As tall as the rows' tallest nodes need, so no band of white under
    // them pushes the caption away.
    let height = Memo::new(move |_| {
        graph.with(|g| {
            g.as_deref().map_or(0.0, |g| {
                Layout::new(&g.chain, proportional.get()).chart_height()
            })
        })
    });
    view! {
        <div class="chart-wrap graph-chart">
            <svg id="graph-svg" xmlns="http://www.w3.org/2000/svg" viewBox=move || format!("0 0 {CHART_W} {}", height.get())
                font-family="Inter, system-ui, sans-serif" role="img" aria-label=label>
                <rect x="0" y="0" width=CHART_W height=height fill="#ffffff" />
                <g inner_html=layer></g>
            </svg>
            <p id="graph-caption" class="graph-caption" aria-live="polite"
                data-op=move || caption().map(|(i, ..)| i.to_string())
                data-count=move || caption().map(|(_, n, _)| n.to_string())
                data-caption=move || caption().map(|(.., text)| text)>
                {move || match caption() {
                    Some((i, n, text)) => view! {
                        <b>{format!("op {} / {n} · ", i + 1)}</b>
                        {math_text(&text)}
                    }
                    .into_any(),
                    None => view! {
                        <span class="muted">"Press ▶ Run or → to walk through the step one operation at a time."</span>
                    }
                    .into_any(),
                }}
            </p>
            <div class="legend graph-legend">
                <Swatch color=palette::CHECKPOINT label="a^ℓ on the device" />
                <span class="swatch"><i class="kept-outline" style=format!("background:{};border-color:{SAVED_OUTLINE}", palette::FORWARD)></i>
                    <span>{math_text("a^ℓ with ā^ℓ, kept for B^ℓ")}</span></span>
                <Swatch color=palette::BACKWARD label="δ^ℓ on the device" />
                <span class="swatch"><i class="stripes"></i>"striped: recomputed"</span>
                <span class="swatch"><i class="now-outline"></i>"this op's node"</span>
                <span class="swatch"><i class="host-outline"></i>"dashed: a copy on the host"</span>
            </div>
        </div>
    }
}
