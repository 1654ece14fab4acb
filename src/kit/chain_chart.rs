//! The layer chain: one box per stage (width ∝ time, height ∝ ā^ℓ), coloured
//! by what the schedule does with it in the forward phase.

use super::format::{bytes, ms};
use super::frames::{layer_of, ChartSvg};
use super::hover::{chart_point, tooltip_style};
use super::notation::math_text_with_names;
use super::palette;
use super::scale::{MARGIN_L, PLOT_W};
use super::slides::text_factor;
use super::svg::PathBatch;
use crate::planning::current::Current;
use crate::planning::menus;
use leptos::prelude::*;
use remat_core::schedule::{fates, Fate};
use remat_core::Chain;
use std::fmt::Write;
use std::sync::Arc;

const H: f64 = 170.0;
const BASE_Y: f64 = 140.0;
const MAX_BOX_H: f64 = 104.0;
/// The menu option's badge over a box.
const BADGE_FONT: f64 = 10.0;

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
fn edges(chain: &Chain, uniform: bool) -> Vec<f64> {
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

/// `text`: how much larger than the geometry the words are written
/// ([`super::slides::text_factor`]; 1 on the page).
fn layer(c: &Current, uniform: bool, text: f64) -> String {
    let chain = &c.chain;
    let n = chain.len();
    let fates = fates(chain, c.planned.ops.as_deref());
    let picks = menus::picks_by_stage(chain, c.ops());
    let e = edges(chain, uniform);
    let max_saved = (1..=n)
        .map(|l| chain.saved_bytes(l))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let gap = if PLOT_W / n as f64 > 6.0 { 1.5 } else { 0.0 };
    let heights: Vec<f64> = (0..=n)
        .map(|l| match l {
            0 => 0.0,
            _ if uniform => MAX_BOX_H * 0.7,
            _ => (chain.saved_bytes(l) as f64 / max_saved * MAX_BOX_H).max(3.0),
        })
        .collect();
    let mut s = String::with_capacity(n * 160);
    // The menu options' badges, one over each run of stages that run the
    // same option; where a stage's ↻ count then goes.
    let mut recount_y: Vec<f64> = heights.iter().map(|h| BASE_Y - h - 5.0).collect();
    s.push_str(&option_runs(&picks, &heights, &e, gap, &mut recount_y));
    let mut batch = PathBatch::default();
    let mut outside = OutsideLabels::new(text);
    let mut numbers = StageNumbers::new(n, text);
    for l in 1..=n {
        let (fate, recomputed) = fates[l];
        let x = e[l];
        let w = (e[l + 1] - e[l] - gap).max(0.5);
        let h = heights[l];
        // A menu option keeps less than ā^ℓ: the box is filled up to what
        // it keeps, the rest of the classic box hollow with a dashed edge
        // in the same hue (issue 41); its policy is named over the run.
        let pick = picks.get(l).and_then(Option::as_ref);
        let kept_h = pick.map_or(h, |p| {
            let share = p.saved_bytes as f64 / p.classic_bytes.max(1) as f64;
            (h * share).clamp(1.5, h)
        });
        batch.rect(
            fate_color(fate),
            fate_kind(fate),
            x,
            BASE_Y - kept_h,
            w,
            kept_h,
        );
        if let Some(p) = pick {
            let said = menus::stage_sentence(chain, l, Some(p), &c.algorithm).unwrap_or_default();
            let _ = write!(
                s,
                r##"<g class="menu-option" data-stage="{l}" data-option="{}" data-policy="{}"><title>stage {l}: {}</title><rect class="option-rest" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#ffffff" stroke="{}" stroke-width="1.2" stroke-dasharray="3 2"/></g>"##,
                p.option,
                escape(&p.policy),
                escape(&said),
                x + 0.6,
                BASE_Y - h + 0.6,
                (w - 1.2).max(0.1),
                (h - kept_h - 0.6).max(0.0),
                fate_color(fate),
            );
        }
        if recomputed > 0 {
            // A hover on every recomputed box, whatever its width: the
            // count is never only in a label that may not fit.
            s.push_str(&format!(
                r##"<rect class="recomputed" data-stage="{l}" data-count="{recomputed}" x="{x:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" fill="transparent"><title>stage {l}: recomputed {recomputed}× in the backward phase</title></rect>"##,
                BASE_Y - h,
            ));
            if w >= 14.0 * text {
                let label = format!("↻{recomputed}");
                s.push_str(&format!(
                    r##"<text class="recompute-label" data-stage="{l}" x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="middle" fill="#b4532a" font-weight="700">{label}</text>"##,
                    x + w / 2.0,
                    recount_y[l],
                    11.0 * text,
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
            r##"<text id="chain-recompute-total" data-count="{total}" x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="#b4532a" font-weight="700">{}</text>"##,
            MARGIN_L - 8.0,
            25.0 * text.min(1.2),
            11.0 * text,
            // Larger words take two lines: one would pass the margin.
            if text > 1.0 {
                format!(
                    r##"↻ {total}<tspan x="{:.1}" dy="{:.1}"> in all</tspan>"##,
                    MARGIN_L - 8.0,
                    12.0 * text
                )
            } else {
                format!("↻ {total} in all")
            },
        ));
    }
    s.insert_str(0, &batch.finish(""));
    s.push_str(&format!(
        r##"<line x1="{MARGIN_L}" x2="{:.1}" y1="{BASE_Y}" y2="{BASE_Y}" stroke="#8a94a3"/><text x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="#5a6474">stages</text><text x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="#5a6474">1 → {n}</text>"##,
        MARGIN_L + PLOT_W,
        MARGIN_L - 8.0,
        BASE_Y - 6.0,
        12.0 * text,
        MARGIN_L - 8.0,
        BASE_Y + 10.0 * text,
        12.0 * text,
    ));
    s
}

/// The badges of the menu options (issue 41): over each run of neighbouring
/// stages whose F_all runs the same option, a bracket from the first box to
/// the last and the policy's short name over it (`[k]` where the name does
/// not fit the run, nothing where neither does). Moves the ↻ counts of
/// those stages (`recount_y`, their baselines) above the badge.
fn option_runs(
    picks: &[Option<menus::Pick>],
    heights: &[f64],
    e: &[f64],
    gap: f64,
    recount_y: &mut [f64],
) -> String {
    let mut runs: Vec<(usize, usize, &menus::Pick)> = Vec::new();
    for (l, p) in picks.iter().enumerate().skip(1) {
        let Some(p) = p else { continue };
        match runs.last_mut() {
            Some(r) if r.1 + 1 == l && r.2.option == p.option && r.2.policy == p.policy => r.1 = l,
            _ => runs.push((l, l, p)),
        }
    }
    let mut s = String::new();
    for (first, last, p) in runs {
        let top = (first..=last)
            .map(|l| BASE_Y - heights[l])
            .fold(f64::INFINITY, f64::min);
        let y = top - 4.0;
        let (x0, x1) = (
            e[first] + 0.5,
            (e[last + 1] - gap - 0.5).max(e[first] + 1.0),
        );
        let badge = menus::badge(p, x1 - x0 + 2.0, BADGE_FONT);
        let above = match badge {
            Some(_) => y - 4.0 - BADGE_FONT - 3.0,
            None => y - 4.0,
        };
        for r in &mut recount_y[first..=last] {
            *r = above;
        }
        let _ = write!(
            s,
            r##"<g class="menu-run" data-first="{first}" data-last="{last}" data-option="{}" data-policy="{}"><path d="M{x0:.1} {:.1}V{y:.1}H{x1:.1}V{:.1}" fill="none" stroke="{ink}" stroke-width="1"/>"##,
            p.option,
            escape(&p.policy),
            y + 3.0,
            y + 3.0,
            ink = palette::CURSOR,
        );
        if let Some(text) = badge {
            let _ = write!(
                s,
                r##"<text class="option-label" data-first="{first}" data-last="{last}" x="{:.1}" y="{:.1}" font-size="{BADGE_FONT}" text-anchor="middle" fill="{ink}" font-weight="600">{}</text>"##,
                (x0 + x1) / 2.0,
                y - 3.0,
                escape(&text),
                ink = palette::CURSOR,
            );
        }
        s.push_str("</g>");
    }
    s
}

/// Recomputation counts of boxes too thin to hold them, set in rows above
/// the chain with a leader line to their box; a label that would overlap
/// the one before it in every row moves right instead of disappearing.
/// Where the labels would run past the chart's right edge (a long chain:
/// 300 stages spilled off the card in a tangle of leader lines, issue 26),
/// they are aggregated instead: one bar per recomputed stage above the
/// chain, its height the count against the largest, the numbers on hover.
struct OutsideLabels {
    /// How much larger than the geometry the words are.
    text: f64,
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

    fn new(text: f64) -> OutsideLabels {
        OutsideLabels {
            text,
            row_end: [0.0; 2],
            svg: String::new(),
            placed: Vec::new(),
            overflow: false,
        }
    }

    fn place(&mut self, stage: usize, count: usize, cx: f64, box_top: f64) {
        let label = format!("↻{count}");
        self.placed.push((stage, count, cx));
        let width = (label.chars().count() as f64 * 7.0 + 4.0) * self.text;
        let want = (cx - width / 2.0).max(MARGIN_L);
        // The first row with room at the box; else the one that frees first.
        let row = (0..2)
            .find(|&r| self.row_end[r] <= want)
            .unwrap_or_else(|| usize::from(self.row_end[1] < self.row_end[0]));
        let left = want.max(self.row_end[row]);
        self.row_end[row] = left + width;
        self.overflow |= left + width > MARGIN_L + PLOT_W;
        let y = Self::ROW_Y[row] * self.text;
        self.svg.push_str(&format!(
            r##"<line x1="{cx:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#b4532a" stroke-width="0.8"/><text class="recompute-label outside" data-stage="{stage}" x="{:.1}" y="{y:.1}" font-size="{:.1}" fill="#b4532a" font-weight="700">{label}</text>"##,
            left + width / 2.0,
            box_top - 1.0,
            y + 2.0,
            left + 2.0,
            11.0 * self.text,
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
            r##"<text id="chain-recompute-most" data-count="{most}" x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="#b4532a">bars: ↻ per stage, up to {most}</text>"##,
            MARGIN_L + PLOT_W,
            12.0 * self.text,
            11.0 * self.text,
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
    text: f64,
    last_x: Option<f64>,
    svg: String,
}

impl StageNumbers {
    fn new(n: usize, text: f64) -> StageNumbers {
        let room = (7.0 * (n.max(1).ilog10() + 1) as f64 + 8.0) * text;
        let per_stage = PLOT_W / n.max(1) as f64;
        let step = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000]
            .into_iter()
            .find(|&k| k as f64 * per_stage >= room)
            .unwrap_or(n.max(1));
        StageNumbers {
            step,
            room,
            text,
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
            r##"<text class="stage-number" x="{cx:.1}" y="{:.1}" font-size="{:.1}" text-anchor="middle" fill="#5a6474">{l}</text>"##,
            BASE_Y + 14.0 * self.text,
            11.0 * self.text,
        ));
    }
}

/// The layer chain of `schedule` (the chart and its tooltip): `chain` is
/// the chain on the page (hovered and marked before a schedule is drawn),
/// `step` the op the step-through outlines, `uniform` draws equal boxes,
/// `marks` the stages a mode marks (Hong's optimal set).
#[component]
pub fn ChainChart(
    schedule: Signal<Option<Arc<Current>>>,
    chain: Signal<Arc<Chain>>,
    step: Signal<Option<usize>>,
    uniform: Signal<bool>,
    marks: Signal<Vec<usize>>,
) -> impl IntoView {
    let hover = RwSignal::new(None::<(usize, f64)>);
    // No slide draws the chain small.
    let text = text_factor(1.0);
    let heavy = layer_of("chain", schedule, move |c| {
        layer(c, uniform.get(), text.get())
    });
    let on_move = move |ev: leptos::ev::MouseEvent| {
        let Some((x, _, fx)) = chart_point(&ev, H) else {
            return;
        };
        let chain = chain.get_untracked();
        let e = edges(&chain, uniform.get_untracked());
        let l = (1..=chain.len()).find(|&l| x >= e[l] && x < e[l + 1]);
        hover.set(l.map(|l| (l, fx)));
    };
    let highlight = move || {
        let i = step.get()?;
        let c = schedule.get()?;
        let op = c.ops().get(i)?;
        let l = op.stage();
        if l == 0 || l > c.chain.len() {
            return None;
        }
        let e = edges(&c.chain, uniform.get());
        let w = (e[l + 1] - e[l]).max(3.0);
        Some(view! {
            <rect id="chain-current" x=e[l] - 2.0 y="6" width=w + 4.0 height=BASE_Y - 2.0 fill="none"
                stroke=palette::CURSOR stroke-width="2.5" rx="3" />
        })
    };
    let marks = move || {
        let set = marks.get();
        let chain = chain.get();
        let e = edges(&chain, uniform.get());
        stage_marks(&chain, &set, &e)
    };
    let tooltip = move || {
        let (l, fx) = hover.get()?;
        let c = schedule.get()?;
        let chain = &c.chain;
        let s = chain.stage(l);
        let (fate, rec) = fates(chain, c.planned.ops.as_deref())[l];
        // The option its F_all runs, or its menu left unused.
        let pick = menus::picks_by_stage(chain, c.ops()).swap_remove(l);
        let menu = menus::stage_sentence(chain, l, pick.as_ref(), &c.algorithm);
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
                    {(s.input_freed_bytes != 0).then(|| view! {
                        <tr><td>"input freed at B^ℓ ι^ℓ"</td><td>{bytes(s.input_freed_bytes)}</td></tr>
                    })}
                    {s.forward_nograd_seconds.map(|t| view! {
                        <tr><td>"no-grad forward"</td><td>{ms(t)}</td></tr>
                    })}
                    {s.forward_nograd_overhead_bytes.filter(|&o| o != s.forward_overhead_bytes).map(|o| view! {
                        <tr><td>"no-grad overhead o_f∅"</td><td>{signed_bytes(o)}</td></tr>
                    })}
                </table>
                <div><i class="dot" style=format!("background:{}", fate_color(fate))></i>{fate.describe()}</div>
                {menu.map(|m| view! { <div class="menu-line">{math_text_with_names(&m, &menus::policy_names(chain))}</div> })}
                {(rec > 0).then(|| view! { <div>{format!("recomputed {rec}× in the backward phase")}</div> })}
            </div>
        })
    };
    let summary = move || {
        schedule.with(|c| {
            let Some(c) = c.as_deref() else {
                return "Layer chain: no schedule yet.".to_string();
            };
            if c.planned.ops.is_none() {
                return format!("Layer chain: {} stages; no schedule at this budget.", c.chain.len());
            }
            let fates = fates(&c.chain, c.planned.ops.as_deref());
            let count = |f: Fate| fates.iter().skip(1).filter(|(x, _)| *x == f).count();
            let options = menus::picks(&c.chain, c.ops()).len();
            format!(
                "Layer chain: {} stages; {} kept, {} checkpointed, {} dropped and recomputed, {} offloaded{}.",
                c.chain.len(),
                count(Fate::Kept),
                count(Fate::Checkpoint),
                count(Fate::Dropped),
                count(Fate::Offloaded),
                if options > 0 {
                    format!("; {options} run a menu option that keeps less")
                } else {
                    String::new()
                }
            )
        })
    };
    view! {
        <div class="chart-wrap">
            <ChartSvg id="chain-svg" height=H layer=heavy summary=Signal::derive(summary)
                on_move=Callback::new(on_move) on_leave=Callback::new(move |_| hover.set(None))>
                <g id="hong-marks" inner_html=marks></g>
                {highlight}
            </ChartSvg>
            {tooltip}
        </div>
    }
}

/// A mark over each stage of `set` (a triangle above the chain, a bar under
/// its box): the minimum memory mode's optimal set, whose outputs are kept.
fn stage_marks(chain: &Chain, set: &[usize], edges: &[f64]) -> String {
    let mut s = String::new();
    for &c in set.iter().filter(|&&c| c >= 1 && c <= chain.len()) {
        let (x0, x1) = (edges[c], edges[c + 1]);
        let mid = (x0 + x1) / 2.0;
        let half = ((x1 - x0) / 2.0).clamp(2.0, 7.0);
        let _ = write!(
            s,
            r##"<g class="hong-mark" data-stage="{c}"><title>stage {c}: output d_{c} kept (optimal set)</title><polygon points="{:.1},6 {:.1},6 {mid:.1},16" fill="{optimal}"/><rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="4" fill="{optimal}"/></g>"##,
            mid - half,
            mid + half,
            BASE_Y + 1.0,
            (x1 - x0 - 1.5).max(1.0),
            optimal = palette::OPTIMAL,
        );
    }
    s
}

/// `text` for an SVG text node or attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}

/// A signed overhead: negative when autograd frees memory before the op ends.
fn signed_bytes(b: i64) -> String {
    if b < 0 {
        format!("−{}", bytes(b.unsigned_abs()))
    } else {
        bytes(b as u64)
    }
}
