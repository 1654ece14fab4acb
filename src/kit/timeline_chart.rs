//! The two lanes of the simulator: GPU compute (forward, recompute,
//! backward) and PCIe copies (offload, prefetch); gaps are idle time.

use super::format::{bytes, ms};
use super::frames::{layer_of, TimeChartSvg};
use super::hover::{tooltip_style, TimeAxis, TimeHover};
use super::notation::{math_text, svg_math};
use super::palette;
use super::palette::{op_color, op_kind};
use super::scale::{TimeScale, MARGIN_L, PLOT_W};
use super::slides::text_factor;
use super::svg::{clip_to_plot, recompute_stripes, PathBatch};
use crate::planning::current::Current;
use leptos::prelude::*;
use remat_core::schedule::recompute_flags;
use remat_core::simulator::Lane;

const H: f64 = 150.0;

const AXIS_Y: f64 = 114.0;

/// The top and the height of a lane's band.
fn band(lane: Lane) -> (f64, f64) {
    match lane {
        Lane::Compute => (14.0, 46.0),
        Lane::Copy => (74.0, 30.0),
    }
}

/// `text`: how much larger than the geometry the words are written
/// ([`super::slides::text_factor`]).
fn layer(c: &Current, axis: TimeAxis, text: f64) -> String {
    let Some(trace) = c.ok_trace() else {
        return String::new();
    };
    let ops = c.ops();
    let (span, window) = (axis.span(trace.makespan_seconds), axis.zoom.get());
    let scale = TimeScale::new(span, window);
    // The share of the axis this schedule's step covers (less than all of
    // it when drawn beside a slower one).
    let share = trace.makespan_seconds / span.max(1e-15);
    let flags = recompute_flags(ops, c.chain.len());
    let ((compute_y, compute_h), (copy_y, copy_h)) = (band(Lane::Compute), band(Lane::Copy));
    let mut s = String::with_capacity(ops.len() * 90);
    s.push_str(
        r##"<defs><pattern id="idle-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbeaea"/><line x1="0" y1="0" x2="0" y2="6" stroke="#e7b7b7" stroke-width="2"/></pattern>"##,
    );
    s.push_str(&recompute_stripes("recompute-stripes"));
    s.push_str("</defs>");
    // Idle is what is left of the compute lane: draw it underneath.
    s.push_str(&format!(
        r##"<rect x="{MARGIN_L}" y="{compute_y}" width="{PLOT_W}" height="{compute_h}" fill="url(#idle-hatch)"/><rect x="{MARGIN_L}" y="{copy_y}" width="{PLOT_W}" height="{copy_h}" fill="#f3f5f8"/>"##
    ));
    s.push_str(&format!(
        r##"<text x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="#2b3442" font-weight="600">GPU</text><text x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="end" fill="#2b3442" font-weight="600">PCIe</text>"##,
        MARGIN_L - 8.0,
        compute_y + compute_h / 2.0 + 4.0 * text,
        12.5 * text,
        MARGIN_L - 8.0,
        copy_y + copy_h / 2.0 + 4.0 * text,
        12.5 * text,
    ));
    s.push_str(&scale.axis_svg(AXIS_Y, 5.0, text));
    let label_room =
        PLOT_W * share / (ops.len().max(1) as f64 * (window.1 - window.0)) > 26.0 * text;
    let mut batch = PathBatch::default();
    let mut stripes = PathBatch::default();
    let mut labels = String::new();
    let mut releases = String::new();
    for span in &trace.spans {
        let op = &ops[span.op];
        let x0 = scale.x(span.start);
        if let remat_core::Op::Release { .. } = op {
            // A release takes no time: a tick through the GPU lane with a
            // triangle above it, so evictions stay visible at any zoom.
            if (MARGIN_L..=MARGIN_L + PLOT_W).contains(&x0) {
                releases.push_str(&release_mark(x0, compute_y, compute_h, &op.to_string()));
            }
            continue;
        }
        let w = (scale.x(span.end) - x0).max(0.6);
        if x0 + w < MARGIN_L || x0 > MARGIN_L + PLOT_W {
            continue; // outside the window
        }
        let (y, h) = band(span.lane);
        batch.rect(op_color(op), op_kind(op), x0, y, w, h);
        if flags[span.op] {
            stripes.rect("url(#recompute-stripes)", "recompute", x0, y, w, h);
        }
        // Label a box only when its name fits inside it (about 6.5 units per character).
        if !label_room {
            continue;
        }
        let label = op.to_string();
        if w > label.chars().count() as f64 * 6.5 * text + 6.0 {
            labels.push_str(&format!(
                r##"<text x="{:.1}" y="{:.1}" font-size="{:.1}" text-anchor="middle" fill="{}">{}</text>"##,
                x0 + w / 2.0,
                y + h / 2.0 + 4.0 * text,
                11.0 * text,
                palette::label_on(op_color(op)),
                svg_math(&label)
            ));
        }
    }
    let boxes = batch.finish(r##"stroke="#ffffff" stroke-width="0.6""##)
        + &stripes.finish("")
        + &labels
        + &releases;
    s.push_str(&clip_to_plot(H, &boxes));
    s
}

/// A release's mark at `x`: a thin line through the lane and a small
/// downward triangle above it, titled with the op (`R(ā^3)`).
fn release_mark(x: f64, y: f64, h: f64, op: &str) -> String {
    format!(
        r##"<g class="release-mark" fill="{c}" stroke="{c}"><title>{t}</title><line x1="{x:.1}" x2="{x:.1}" y1="{y:.1}" y2="{b:.1}" stroke-width="1"/><path d="M{l:.1} {top:.1}L{r:.1} {top:.1}L{x:.1} {y:.1}Z" stroke="none"/></g>"##,
        c = palette::RELEASE,
        t = op.replace('&', "&amp;").replace('<', "&lt;"),
        b = y + h,
        l = x - 3.5,
        r = x + 3.5,
        top = y - 6.0,
    )
}

/// The two lanes of the schedule on `axis` (the chart and its tooltip),
/// the step-through's op outlined.
#[component]
pub fn TimelineChart(axis: TimeAxis) -> impl IntoView {
    let schedule = axis.schedule;
    let hover = TimeHover::new(axis, H);
    // No slide draws these timelines small (slide 4's are full width).
    let text = text_factor(1.0);
    let heavy = layer_of("timeline", schedule, move |c| layer(c, axis, text.get()));
    // The step-through's op, outlined.
    let highlight = move || {
        let i = axis.cursor.step.get()?;
        let c = schedule.get()?;
        let trace = c.ok_trace()?;
        let span = trace.spans.get(i)?;
        let scale = hover.scale(trace.makespan_seconds);
        let x0 = scale.x(span.start);
        let w = (scale.x(span.end) - x0).max(3.0);
        let (y, h) = band(span.lane);
        Some(view! {
            <rect id="timeline-current" x=x0 - 2.0 y=y - 3.0 width=w + 4.0 height=h + 6.0 fill="none"
                stroke=palette::CURSOR stroke-width="2.5" rx="2" />
        })
    };
    let cursor = move || {
        let x = hover.cursor_x()?;
        Some(
            view! { <line x1=x x2=x y1="6" y2=AXIS_Y stroke=palette::CURSOR stroke-width="1.5" /> },
        )
    };
    let tooltip = move || {
        let (fx, t, c) = hover.at()?;
        let trace = c.ok_trace()?;
        let on = |lane: Lane| {
            trace
                .spans
                .iter()
                .find(|s| s.lane == lane && s.start <= t && t < s.end)
                .map(|s| (c.ops()[s.op], s.start, s.end))
        };
        let line = |label: &str, x: Option<(remat_core::Op, f64, f64)>| match x {
            Some((op, a, b)) => format!("{label}: {op} ({} → {})", ms(a), ms(b)),
            None => format!("{label}: idle"),
        };
        let explain = on(Lane::Compute)
            .map(|(op, _, _)| op.explain())
            .unwrap_or_default();
        Some(view! {
            <div class="tooltip" style=tooltip_style(fx)>
                <b>{format!("at {}", ms(t))}</b>
                <div>{math_text(&line("GPU", on(Lane::Compute)))}</div>
                <div>{math_text(&line("PCIe", on(Lane::Copy)))}</div>
                <div class="muted">{math_text(&explain)}</div>
            </div>
        })
    };
    let summary = move || {
        schedule.with(|c| match c.as_deref().and_then(|c| Some((c, c.ok_trace()?))) {
            Some((c, t)) => format!(
                "Timelines: {} ops in {}; GPU idle {}; {} recomputations; {} offloaded, {} prefetched over PCIe.",
                c.ops().len(),
                ms(t.makespan_seconds),
                ms(t.idle_seconds),
                t.recomputations,
                bytes(t.offloaded_bytes),
                bytes(t.prefetched_bytes)
            ),
            None => "Timelines: no schedule at this budget.".into(),
        })
    };
    view! {
        <div class="chart-wrap">
            <TimeChartSvg id="timeline-svg" height=H layer=heavy hover=hover summary=Signal::derive(summary)>
                {highlight}
                {cursor}
            </TimeChartSvg>
            {tooltip}
        </div>
    }
}
