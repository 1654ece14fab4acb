//! Memory over time, stacked by tensor (`Trace.residency`): which a^ℓ, ā^ℓ,
//! δ^ℓ is on the device at each instant, with the budget and the peak; and,
//! over it, a measured run of the plan: two step lines, predicted and
//! measured (each op's peak across its predicted span, then the memory it
//! leaves).

use super::format::{bytes, ms, num};
use super::frames::{layer_of, TimeChartSvg};
use super::hover::{tooltip_style, TimeAxis, TimeHover};
use super::notation::math_text;
use super::palette;
use super::scale::{byte_ticks, TimeScale, MARGIN_L, PLOT_W};
use super::slides::text_factor;
use super::svg::{clip_to_plot, PathBatch};
use crate::measurement::{highest, step_line, Side};
use crate::planning::current::Current;
use leptos::prelude::*;
use remat_core::measured::Comparison;
use remat_core::simulator::{Residency, TensorId, Trace};
use std::sync::Arc;

const H: f64 = 300.0;

const TOP: f64 = 16.0;
const PLOT_H: f64 = 250.0;

/// The plot's height when the words are `text` times their size: the time
/// axis's labels below it need that much more room.
fn plot_height(text: f64) -> f64 {
    PLOT_H - 13.0 * (text - 1.0).max(0.0)
}

fn tensor_color(t: &TensorId) -> &'static str {
    match *t {
        TensorId::Saved(l) => palette::SAVED[l % 2],
        TensorId::Activation(l) => palette::ACTIVATION[l % 2],
        TensorId::Gradient(l) => palette::GRADIENT[l % 2],
        TensorId::Workspace(_) => palette::WORKSPACE,
        TensorId::ParameterGradient(_) => palette::PARAMETER_GRADIENT,
    }
}

/// A tensor's kind (`data-kind`): its colour is that of the op that
/// leaves it (ā^ℓ as F_all, a^ℓ as F_ck, δ^ℓ as B).
fn tensor_kind(t: &TensorId) -> &'static str {
    match *t {
        TensorId::Saved(_) => "ā",
        TensorId::Activation(_) => "a",
        TensorId::Gradient(_) => "δ",
        TensorId::Workspace(_) => "workspace",
        TensorId::ParameterGradient(_) => "g",
    }
}

/// Each tensor is a band whose base drops when a tensor below it is freed
/// (a stack in allocation order). Checkpointing frees mostly at the top, so
/// the bands have few corners even at L = 300.
fn stacked_paths(trace: &Trace, y_max: f64, plot_h: f64, scale: &TimeScale) -> String {
    let res = &trace.residency;
    let mut events: Vec<(f64, bool, usize)> = Vec::with_capacity(res.len() * 2);
    for (i, r) in res.iter().enumerate() {
        if r.end > r.start && r.bytes > 0 {
            events.push((r.start, true, i));
            events.push((r.end, false, i));
        }
    }
    // Frees before allocations at one instant, as the simulator orders them.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut points: Vec<Vec<(f64, u64)>> = vec![Vec::new(); res.len()];
    let mut live: Vec<(usize, u64)> = Vec::new();
    let mut total = 0u64;
    for (t, alloc, i) in events {
        if alloc {
            points[i].push((t, total));
            live.push((i, total));
            total += res[i].bytes;
        } else if let Some(k) = live.iter().position(|(j, _)| *j == i) {
            let size = res[i].bytes;
            live.remove(k);
            for (j, off) in live[k..].iter_mut() {
                *off -= size;
                points[*j].push((t, *off));
            }
            total -= size;
        }
    }
    let y = |b: u64| TOP + plot_h - b as f64 / y_max * plot_h;
    let mut batch = PathBatch::default();
    for (i, r) in res.iter().enumerate() {
        let p = &points[i];
        if p.is_empty() {
            continue;
        }
        let x = |t: f64| scale.x(t);
        let d = batch.d(tensor_color(&r.tensor), tensor_kind(&r.tensor));
        d.push('M');
        num(d, x(p[0].0));
        d.push(' ');
        num(d, y(p[0].1 + r.bytes));
        for k in 0..p.len() {
            let next = if k + 1 < p.len() { p[k + 1].0 } else { r.end };
            d.push('H');
            num(d, x(next));
            if k + 1 < p.len() {
                d.push('V');
                num(d, y(p[k + 1].1 + r.bytes));
            }
        }
        d.push('V');
        num(d, y(p[p.len() - 1].1));
        for k in (0..p.len()).rev() {
            d.push('H');
            num(d, x(p[k].0));
            if k > 0 {
                d.push('V');
                num(d, y(p[k - 1].1));
            }
        }
        d.push('Z');
    }
    batch.finish(r##"stroke="#ffffff" stroke-width="0.4""##)
}

fn layer(
    trace: &Trace,
    budget: u64,
    scale: TimeScale,
    measured: Option<&Comparison>,
    shared_top: u64,
    text: f64,
) -> String {
    let high = (trace.peak_bytes.max(budget))
        .max(top(measured))
        .max(shared_top);
    let y_max = (high as f64 * 1.08).max(1.0);
    let plot_h = plot_height(text);
    let y = |b: f64| TOP + plot_h - b / y_max * plot_h;
    let mut s = String::new();
    // Larger words (slides): fewer byte ticks, written inside the plot
    // above their lines, since the margin holds only the page's size (and
    // so over the memory: drawn after it, on a white halo).
    let large = text > 1.0;
    let halo = if large { 3.0 * text } else { 0.0 };
    let mut byte_labels = String::new();
    for b in byte_ticks(y_max, if large { 3 } else { 5 }) {
        let (x, dy, anchor) = if large {
            (MARGIN_L + 6.0, -5.0, "start")
        } else {
            (MARGIN_L - 8.0, 4.0, "end")
        };
        s.push_str(&format!(
            r##"<line x1="{MARGIN_L}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e3e7ee"/>"##,
            MARGIN_L + PLOT_W,
            yy = y(b)
        ));
        byte_labels.push_str(&format!(
            r##"<text x="{x:.1}" y="{:.1}" font-size="{:.1}" text-anchor="{anchor}" fill="#5a6474" stroke="#fff" stroke-width="{:.1}" paint-order="stroke">{}</text>"##,
            y(b) + dy,
            12.0 * text,
            halo,
            bytes(b as u64),
        ));
    }
    s.push_str(&scale.axis_svg(TOP + plot_h, 5.0, text));
    s.push_str(&clip_to_plot(
        H,
        &stacked_paths(trace, y_max, plot_h, &scale),
    ));
    s.push_str(&byte_labels);
    let yb = y(budget as f64);
    s.push_str(&format!(
        r##"<line x1="{MARGIN_L}" x2="{:.1}" y1="{yb:.1}" y2="{yb:.1}" stroke="{}" stroke-width="2" stroke-dasharray="7 4"/><text x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="{}" font-weight="600" stroke="#fff" stroke-width="{:.1}" paint-order="stroke">budget {}</text>"##,
        MARGIN_L + PLOT_W,
        palette::BUDGET,
        MARGIN_L + PLOT_W - 4.0,
        yb - 5.0,
        12.0 * text,
        palette::BUDGET,
        halo,
        bytes(budget)
    ));
    if let Some(c) = measured {
        let lines = overlay_svg(c, |t| scale.x(t), |b| y(b as f64));
        s.push_str(&clip_to_plot(H, &lines));
    }
    let px = scale.x(trace.peak_time);
    let py = y(trace.peak_bytes as f64);
    let anchor = if px > MARGIN_L + PLOT_W * 0.8 {
        "end"
    } else {
        "start"
    };
    let dx = if anchor == "end" { -9.0 } else { 9.0 };
    // At the right end the budget's label sits just above its line: a peak
    // near that line puts its own label under the point instead.
    // (On slides the larger label reaches the budget's from either side.)
    let label_y = if (anchor == "end" || large) && (py - yb).abs() < 20.0 * text {
        py + 20.0 * text
    } else {
        // Never above the chart's top, where large words would be cut.
        (py - 8.0).max(12.5 * text)
    };
    s.push_str(&format!(
        r##"<circle cx="{px:.1}" cy="{py:.1}" r="5" fill="#fff" stroke="{c}" stroke-width="2.5"/><text x="{:.1}" y="{:.1}" font-size="{:.1}" font-weight="700" text-anchor="{anchor}" fill="{c}" stroke="#fff" stroke-width="{:.1}" paint-order="stroke">peak {} at {}</text>"##,
        px + dx,
        label_y,
        12.5 * text,
        3.0 * text,
        bytes(trace.peak_bytes),
        ms(trace.peak_time),
        c = palette::CURSOR
    ));
    s
}

fn describe(r: &Residency) -> String {
    match r.tensor {
        TensorId::Activation(0) => "a^0 (input batch)".into(),
        TensorId::Activation(l) => format!("a^{l} (output of stage {l})"),
        TensorId::Saved(l) => format!("ā^{l} (saved for B^{l})"),
        TensorId::Gradient(l) => format!("δ^{l} (gradient)"),
        TensorId::Workspace(_) => "workspace of the running op".into(),
        TensorId::ParameterGradient(l) => {
            format!("g^{l} (parameter gradients of B^{l}, kept to the step's end)")
        }
    }
}

/// The chart in one sentence: "Memory over time: peaks at 1.2 GiB during
/// B^3, at 210 ms; budget 1.3 GiB."
fn summary_of(c: &Current) -> String {
    let budget = bytes(c.planned.budget);
    let Some(t) = c.ok_trace() else {
        return format!("Memory over time: no schedule at the budget {budget}.");
    };
    let during = t
        .spans
        .iter()
        .filter(|s| s.lane == remat_core::simulator::Lane::Compute)
        .find(|s| s.start <= t.peak_time && t.peak_time <= s.end)
        .map(|s| format!(" during {}", c.ops()[s.op]))
        .unwrap_or_default();
    format!(
        "Memory over time: peaks at {}{during}, at {}; budget {budget}.",
        bytes(t.peak_bytes),
        ms(t.peak_time)
    )
}

/// The measured run at `t`: the compute operation whose predicted span
/// holds it, its memory after and peak during, predicted and measured.
fn measured_at(c: &Comparison, t: f64) -> Option<String> {
    let r = c.rows.iter().find(|r| {
        !r.op.is_transfer() && r.predicted_start_seconds <= t && t < r.predicted_end_seconds
    })?;
    Some(format!(
        "{}: peak {} measured, {} predicted; after {} measured, {} predicted",
        r.op,
        bytes(r.measured_peak_bytes),
        bytes(r.predicted_peak_bytes),
        bytes(r.measured_memory_bytes),
        bytes(r.predicted_memory_bytes)
    ))
}

/// The memory curve of the schedule on `axis` (the chart, its tooltip, or
/// why there is nothing to draw), with `measured`, a measured run of it,
/// drawn over it.
///
/// `id` names the SVG (`memory-svg` unless given: several charts side by
/// side need their own); `shared_top` raises the memory axis to at least
/// this many bytes, so that charts side by side share one scale.
#[component]
pub fn MemoryChart(
    axis: TimeAxis,
    measured: Signal<Option<Arc<Comparison>>>,
    #[prop(optional)] id: Option<&'static str>,
    #[prop(optional, into)] shared_top: Option<Signal<u64>>,
    // How much larger its words are while presenting (1: as on the page):
    // the caller knows how small the chart is drawn on a slide.
    #[prop(optional)] slide_text: Option<f64>,
) -> impl IntoView {
    let schedule = axis.schedule;
    let hover = TimeHover::new(axis, H);
    let text = text_factor(slide_text.unwrap_or(1.0));
    let heavy = layer_of("memory", schedule, move |c| {
        let measured = measured.get();
        let shared_top = shared_top.map_or(0, |s| s.get());
        let text = text.get();
        (c.ok_trace())
            .map(|t| {
                layer(
                    t,
                    c.planned.budget.max(1),
                    TimeScale::new(axis.span(t.makespan_seconds), axis.zoom.get()),
                    measured.as_deref(),
                    shared_top,
                    text,
                )
            })
            .unwrap_or_default()
    });
    let cursor = move || {
        let x = hover.cursor_x()?;
        Some(view! {
            <line x1=x x2=x y1=TOP y2=TOP + PLOT_H stroke=palette::CURSOR stroke-width="1.5" />
        })
    };
    let tooltip = move || {
        let (fx, t, c) = hover.at()?;
        let trace = c.ok_trace()?;
        let mut res = trace.resident_at(t);
        res.sort_by_key(|r| std::cmp::Reverse(r.bytes));
        let total: u64 = res.iter().map(|r| r.bytes).sum();
        let running = trace
            .spans
            .iter()
            .find(|s| s.start <= t && t < s.end && s.lane == remat_core::simulator::Lane::Compute)
            .map(|s| c.ops()[s.op].to_string())
            .unwrap_or_else(|| "idle".into());
        let more = res.len().saturating_sub(8);
        let measured = measured.get().and_then(|m| measured_at(&m, t));
        Some(view! {
            <div class="tooltip" style=tooltip_style(fx)>
                <b>{format!("at {} — {} resident", ms(t), bytes(total))}</b>
                <div class="muted">{math_text(&format!("running: {running}"))}</div>
                {measured.map(|line| view! { <div class="measured-at">{math_text(&line)}</div> })}
                <ul>
                    {res.into_iter().take(8).map(|r| view! {
                        <li><i style=format!("background:{}", tensor_color(&r.tensor))></i>
                            // One flex item: sub/superscripts must not get the gap.
                            <span>{math_text(&format!("{} — {}", describe(&r), bytes(r.bytes)))}</span></li>
                    }).collect_view()}
                </ul>
                {(more > 0).then(|| view! { <div class="muted">{format!("… and {more} smaller")}</div> })}
            </div>
        })
    };
    let summary = move || {
        schedule.with(|c| match c.as_deref() {
            Some(c) => summary_of(c),
            None => "Memory over time: no schedule yet.".into(),
        })
    };
    view! {
        <div class="chart-wrap">
            <TimeChartSvg id=id.unwrap_or("memory-svg") height=H layer=heavy hover=hover summary=Signal::derive(summary)>
                {cursor}
            </TimeChartSvg>
            {tooltip}
            {move || schedule.get().and_then(|c| if c.ok_trace().is_none() {
                Some(view! { <div class="empty">"No schedule at this budget: nothing to draw. Raise the budget or re-plan exactly."</div> })
            } else { None })}
        </div>
    }
}

/// The highest level the lines reach, for the chart's scale (0 without).
fn top(c: Option<&Comparison>) -> u64 {
    c.map_or(0, highest)
}

/// Both lines as SVG over the memory chart: `x` and `y` map seconds and
/// bytes to chart units. Measured first, on a white halo, predicted on top
/// with none: a thin dark line inside a wide pink band, so where they agree
/// (a plan that holds to the byte) both still show. (A halo under the
/// predicted line covered the measured one wherever they coincided.)
fn overlay_svg(c: &Comparison, x: impl Fn(f64) -> f64, y: impl Fn(u64) -> f64) -> String {
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
        r##"<g id="measured-overlay" fill="none" stroke-linejoin="round"><path d="{measured}" stroke="#ffffff" stroke-width="5"/><path class="measured-line" d="{measured}" stroke="{}" stroke-width="4.5"/><path class="predicted-line" d="{predicted}" stroke="{}" stroke-width="1.6"/></g>"##,
        palette::MEASURED,
        palette::PREDICTED
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

/// "predicted" / "measured", while a run is drawn (`shown`).
#[component]
pub fn MeasuredLegend(shown: Signal<bool>) -> impl IntoView {
    move || {
        shown.get().then(|| {
            view! {
                <span id="measured-legend" class="measured-legend">
                    {key(palette::PREDICTED, 1.6, "predicted")}
                    {key(palette::MEASURED, 2.6, "measured")}
                </span>
            }
        })
    }
}
