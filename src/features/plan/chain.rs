//! The layer chain: one box per stage (width ∝ time, height ∝ ā^ℓ), coloured
//! by what the schedule does with it in the forward phase.

use super::chart::{
    bytes, chart_point, layer_of, ms, palette, tooltip_style, CardHead, ChartSvg, PathBatch,
    MARGIN_L, PLOT_W,
};
use super::figure::{Figure, FigureButtons};
use super::notation::math_text;
use crate::state::{use_app, use_min_memory, Current};
use leptos::prelude::*;
use remat_core::schedule::{fates, Fate};
use remat_core::Chain;

const H: f64 = 170.0;
const BASE_Y: f64 = 140.0;
const MAX_BOX_H: f64 = 104.0;

/// The colour of a stage's fate on the chain (the legend's swatches).
pub fn fate_color(fate: Fate) -> &'static str {
    match fate {
        Fate::Kept => palette::KEPT,
        Fate::Checkpoint => palette::CHECKPOINT,
        Fate::Dropped => palette::NOTHING_KEPT,
        Fate::Offloaded => palette::OFFLOAD,
        Fate::Unknown => "#c9d0da",
    }
}

/// The op kind a fate is drawn as (`data-kind`, one colour per kind).
fn fate_kind(fate: Fate) -> &'static str {
    match fate {
        Fate::Kept => "F_all",
        Fate::Checkpoint => "F_ck",
        Fate::Dropped => "F_∅",
        Fate::Offloaded => "offload",
        Fate::Unknown => "unknown",
    }
}

/// Left edge of each box (index 1..=L) and the end, in chart units.
pub(super) fn edges(chain: &Chain, uniform: bool) -> Vec<f64> {
    let n = chain.len();
    let weights: Vec<f64> = (1..=n)
        .map(|l| {
            let s = chain.stage(l);
            if uniform {
                1.0
            } else {
                (s.forward_seconds + s.backward_seconds).max(0.0)
            }
        })
        .collect();
    let total: f64 = weights.iter().sum::<f64>().max(1e-12);
    let mut x = MARGIN_L;
    let mut e = vec![x; n + 2];
    for l in 1..=n {
        e[l] = x;
        x += weights[l - 1] / total * PLOT_W;
    }
    e[n + 1] = x;
    e
}

fn layer(c: &Current, uniform: bool) -> String {
    let chain = &c.chain;
    let n = chain.len();
    let fates = fates(chain, c.planned.ops.as_deref());
    let e = edges(chain, uniform);
    let max_saved = (1..=n)
        .map(|l| chain.saved_bytes(l))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let gap = if PLOT_W / n as f64 > 6.0 { 1.5 } else { 0.0 };
    let mut s = String::with_capacity(n * 160);
    let mut batch = PathBatch::default();
    let mut outside = OutsideLabels::default();
    let mut numbers = StageNumbers::new(n);
    for l in 1..=n {
        let (fate, recomputed) = fates[l];
        let x = e[l];
        let w = (e[l + 1] - e[l] - gap).max(0.5);
        let h = if uniform {
            MAX_BOX_H * 0.7
        } else {
            (chain.saved_bytes(l) as f64 / max_saved * MAX_BOX_H).max(3.0)
        };
        batch.rect(fate_color(fate), fate_kind(fate), x, BASE_Y - h, w, h);
        if recomputed > 0 {
            // A hover on every recomputed box, whatever its width: the
            // count is never only in a label that may not fit.
            s.push_str(&format!(
                r##"<rect class="recomputed" data-stage="{l}" data-count="{recomputed}" x="{x:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" fill="transparent"><title>stage {l}: recomputed {recomputed}× in the backward phase</title></rect>"##,
                BASE_Y - h,
            ));
            if w >= 14.0 {
                let label = format!("↻{recomputed}");
                s.push_str(&format!(
                    r##"<text class="recompute-label" data-stage="{l}" x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#b4532a" font-weight="700">{label}</text>"##,
                    x + w / 2.0,
                    BASE_Y - h - 5.0,
                ));
            } else {
                outside.place(l, recomputed, x + w / 2.0, BASE_Y - h);
            }
        }
        numbers.place(l, x + w / 2.0);
    }
    s.push_str(&outside.finish(n));
    s.push_str(&numbers.svg);
    // The total, which the stats' recomputation count also is.
    let total: usize = fates.iter().skip(1).map(|f| f.1).sum();
    if total > 0 {
        s.push_str(&format!(
            r##"<text id="chain-recompute-total" data-count="{total}" x="{:.1}" y="25" font-size="11" text-anchor="end" fill="#b4532a" font-weight="700">↻ {total} in all</text>"##,
            MARGIN_L - 8.0
        ));
    }
    s.insert_str(0, &batch.finish(""));
    s.push_str(&format!(
        r##"<line x1="{MARGIN_L}" x2="{:.1}" y1="{BASE_Y}" y2="{BASE_Y}" stroke="#8a94a3"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" fill="#5a6474">stages</text><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" fill="#5a6474">1 → {n}</text>"##,
        MARGIN_L + PLOT_W,
        MARGIN_L - 8.0,
        BASE_Y - 6.0,
        MARGIN_L - 8.0,
        BASE_Y + 10.0
    ));
    s
}

/// Recomputation counts of boxes too thin to hold them, set in rows above
/// the chain with a leader line to their box; a label that would overlap
/// the one before it in every row moves right instead of disappearing.
/// Where the labels would run past the chart's right edge (a long chain:
/// 300 stages spilled off the card in a tangle of leader lines, issue 26),
/// they are aggregated instead: one bar per recomputed stage above the
/// chain, its height the count against the largest, the numbers on hover.
#[derive(Default)]
struct OutsideLabels {
    /// Where each row's last label ends (chart units).
    row_end: [f64; 2],
    svg: String,
    /// (stage, count, box centre) of every label placed, for the bars.
    placed: Vec<(usize, usize, f64)>,
    /// A label ran past the plot's right edge.
    overflow: bool,
}

impl OutsideLabels {
    const ROW_Y: [f64; 2] = [12.0, 25.0];

    fn place(&mut self, stage: usize, count: usize, cx: f64, box_top: f64) {
        let label = format!("↻{count}");
        self.placed.push((stage, count, cx));
        let width = label.chars().count() as f64 * 7.0 + 4.0;
        let want = (cx - width / 2.0).max(MARGIN_L);
        // The first row with room at the box; else the one that frees first.
        let row = (0..2)
            .find(|&r| self.row_end[r] <= want)
            .unwrap_or_else(|| usize::from(self.row_end[1] < self.row_end[0]));
        let left = want.max(self.row_end[row]);
        self.row_end[row] = left + width;
        self.overflow |= left + width > MARGIN_L + PLOT_W;
        let y = Self::ROW_Y[row];
        self.svg.push_str(&format!(
            r##"<line x1="{cx:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#b4532a" stroke-width="0.8"/><text class="recompute-label outside" data-stage="{stage}" x="{:.1}" y="{y:.1}" font-size="11" fill="#b4532a" font-weight="700">{label}</text>"##,
            left + width / 2.0,
            box_top - 1.0,
            y + 2.0,
            left + 2.0,
        ));
    }

    /// The labels, or the bars where the labels overflow (`n` stages: the
    /// bars' width).
    fn finish(self, n: usize) -> String {
        if !self.overflow {
            return self.svg;
        }
        let most = self.placed.iter().map(|p| p.1).max().unwrap_or(1).max(1);
        let w = (PLOT_W / n as f64).clamp(1.0, 6.0);
        let mut s = format!(
            r##"<text id="chain-recompute-most" data-count="{most}" x="{:.1}" y="12" font-size="11" text-anchor="end" fill="#b4532a">bars: ↻ per stage, up to {most}</text>"##,
            MARGIN_L + PLOT_W
        );
        for &(stage, count, cx) in &self.placed {
            let h = 3.0 + 14.0 * count as f64 / most as f64;
            s.push_str(&format!(
                r##"<rect class="recompute-bar" data-stage="{stage}" data-count="{count}" x="{:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" fill="#b4532a"><title>stage {stage}: recomputed {count}× in the backward phase</title></rect>"##,
                cx - w / 2.0,
                34.0 - h,
            ));
        }
        s
    }
}

/// Stage numbers under the chain: every stage where each fits, else every
/// `step`-th (a round step, 2, 5, 10, …) where it is a label's width from
/// the one before (an axis); the hover names every stage.
struct StageNumbers {
    step: usize,
    room: f64,
    last_x: Option<f64>,
    svg: String,
}

impl StageNumbers {
    fn new(n: usize) -> StageNumbers {
        let room = 7.0 * (n.max(1).ilog10() + 1) as f64 + 8.0;
        let per_stage = PLOT_W / n.max(1) as f64;
        let step = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000]
            .into_iter()
            .find(|&k| k as f64 * per_stage >= room)
            .unwrap_or(n.max(1));
        StageNumbers {
            step,
            room,
            last_x: None,
            svg: String::new(),
        }
    }

    fn place(&mut self, l: usize, cx: f64) {
        let wanted = l == 1 || l.is_multiple_of(self.step);
        if !wanted || self.last_x.is_some_and(|prev| cx - prev < self.room) {
            return;
        }
        self.last_x = Some(cx);
        self.svg.push_str(&format!(
            r##"<text class="stage-number" x="{cx:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#5a6474">{l}</text>"##,
            BASE_Y + 14.0
        ));
    }
}

#[component]
pub fn ChainView() -> impl IntoView {
    let state = use_app();
    let hover = RwSignal::new(None::<(usize, f64)>);
    let uniform = state.view.uniform;
    let heavy = layer_of("chain", move |c| layer(c, uniform.get()));
    let on_move = move |ev: leptos::ev::MouseEvent| {
        let Some((x, _, fx)) = chart_point(&ev, H) else {
            return;
        };
        let chain = state.loaded.chain.get_untracked();
        let e = edges(&chain, state.view.uniform.get_untracked());
        let l = (1..=chain.len()).find(|&l| x >= e[l] && x < e[l + 1]);
        hover.set(l.map(|l| (l, fx)));
    };
    let highlight = move || {
        let i = state.view.step.get()?;
        let c = state.shown.current.get()?;
        let op = c.ops().get(i)?;
        let l = op.stage();
        if l == 0 || l > c.chain.len() {
            return None;
        }
        let e = edges(&c.chain, state.view.uniform.get());
        let w = (e[l + 1] - e[l]).max(3.0);
        Some(view! {
            <rect id="chain-current" x=e[l] - 2.0 y="6" width=w + 4.0 height=BASE_Y - 2.0 fill="none"
                stroke=palette::CURSOR stroke-width="2.5" rx="3" />
        })
    };
    // The minimum memory mode's optimal set (views/min_memory.rs).
    let min_memory = use_min_memory();
    let hong_marks = move || {
        let set = min_memory.marked();
        let chain = state.loaded.chain.get();
        let e = edges(&chain, state.view.uniform.get());
        super::min_memory::chain_marks(&chain, &set, &e, BASE_Y)
    };
    let tooltip = move || {
        let (l, fx) = hover.get()?;
        let c = state.shown.current.get()?;
        let chain = &c.chain;
        let s = chain.stage(l);
        let (fate, rec) = fates(chain, c.planned.ops.as_deref())[l];
        Some(view! {
            <div class="tooltip" style=tooltip_style(fx)>
                <b>{format!("stage {l}: {}", s.name)}</b>
                <table class="kv">
                    {s.module.clone().map(|m| view! {
                        <tr><td>"module"</td><td>{m}</td></tr>
                    })}
                    <tr><td>"forward u_f"</td><td>{ms(s.forward_seconds)}</td></tr>
                    <tr><td>"backward u_b"</td><td>{ms(s.backward_seconds)}</td></tr>
                    <tr><td>"output a^ℓ"</td><td>{bytes(s.output_bytes)}</td></tr>
                    <tr><td>"saved ā^ℓ"</td><td>{bytes(s.saved_bytes)}</td></tr>
                    <tr><td>"gradient δ^ℓ"</td><td>{bytes(s.gradient_bytes)}</td></tr>
                    {(s.forward_overhead_bytes != 0 || s.backward_overhead_bytes != 0).then(|| view! {
                        <tr><td>"overheads o_f / o_b"</td><td>{format!("{} / {}", signed_bytes(s.forward_overhead_bytes), signed_bytes(s.backward_overhead_bytes))}</td></tr>
                    })}
                    {s.forward_nograd_seconds.map(|t| view! {
                        <tr><td>"no-grad forward"</td><td>{ms(t)}</td></tr>
                    })}
                    {s.forward_nograd_overhead_bytes.filter(|&o| o != s.forward_overhead_bytes).map(|o| view! {
                        <tr><td>"no-grad overhead o_f∅"</td><td>{signed_bytes(o)}</td></tr>
                    })}
                </table>
                <div><i class="dot" style=format!("background:{}", fate_color(fate))></i>{fate.describe()}</div>
                {(rec > 0).then(|| view! { <div>{format!("recomputed {rec}× in the backward phase")}</div> })}
            </div>
        })
    };
    let summary = move || {
        state.shown.current.with(|c| {
            let Some(c) = c.as_deref() else {
                return "Layer chain: no schedule yet.".to_string();
            };
            if c.planned.ops.is_none() {
                return format!("Layer chain: {} stages; no schedule at this budget.", c.chain.len());
            }
            let fates = fates(&c.chain, c.planned.ops.as_deref());
            let count = |f: Fate| fates.iter().skip(1).filter(|(x, _)| *x == f).count();
            format!(
                "Layer chain: {} stages; {} kept, {} checkpointed, {} dropped and recomputed, {} offloaded.",
                c.chain.len(),
                count(Fate::Kept),
                count(Fate::Checkpoint),
                count(Fate::Dropped),
                count(Fate::Offloaded)
            )
        })
    };
    view! {
        // The colours are in the page's legend (the stepper).
        <CardHead title="Layer chain">
            <span class="muted">"↻n = recomputations"</span>
            <FigureButtons figure=Figure::Chain />
            <label class="toggle">
                <input id="uniform-toggle" type="checkbox" prop:checked=move || state.view.uniform.get()
                    on:change=move |ev| state.view.uniform.set(event_target_checked(&ev)) />
                "equal boxes"
            </label>
        </CardHead>
        <p class="hint">{move || math_text(if state.view.uniform.get() { "One box per stage." } else { "Width ∝ time (u_f + u_b), height ∝ saved bytes ω_ā." })}</p>
        <div class="chart-wrap">
            <ChartSvg id="chain-svg" height=H layer=heavy summary=Signal::derive(summary)
                on_move=Callback::new(on_move) on_leave=Callback::new(move |_| hover.set(None))>
                <g id="hong-marks" inner_html=hong_marks></g>
                {highlight}
            </ChartSvg>
            {tooltip}
        </div>
    }
}

/// A signed overhead: negative when autograd frees memory before the op ends.
fn signed_bytes(b: i64) -> String {
    if b < 0 {
        format!("−{}", bytes(b.unsigned_abs()))
    } else {
        bytes(b as u64)
    }
}
