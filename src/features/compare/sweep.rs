//! POFO's two figures for the loaded chain (Section 5): overhead against the
//! memory ratio α at the current bandwidth, and against the bandwidth at
//! α = 0.2. Every point is a solve, so the sweep runs in the worker, on
//! demand, with progress and a cancel button.

use crate::io::FigureButtons;
use crate::kit::algorithm_style::{alg_color, alg_keys, alg_marker, alg_path};
use crate::kit::figure::Figure;
use crate::kit::format::{bytes, pct};
use crate::kit::frames::CurveSvg;
use crate::kit::palette;
use crate::kit::scale::Frame;
use crate::kit::svg::{marker_svg, readout_svg};
use crate::kit::widgets::TaskControl;
use crate::planning::protocol::{Sweep, SweepPoint};
use crate::planning::service::{SWEEP_ALGORITHMS, SWEEP_FIXED_ALPHA};
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::model::units::format_rate;
use remat_core::solvers::budget_at_ratio;
use remat_core::solvers::Algorithm;

const FRAME: Frame = Frame {
    w: 520.0,
    h: 280.0,
    left: 60.0,
    right: 14.0,
    top: 14.0,
    bottom: 40.0,
};

/// The scales of one sweep figure: x from the ticks' range, y from the
/// largest overhead.
struct Scale {
    x0: f64,
    span: f64,
    max_over: f64,
    seq: f64,
}

impl Scale {
    fn new(points: &[SweepPoint], x_ticks: &[(f64, String)], sequential: f64) -> Scale {
        let seq = sequential.max(1e-12);
        let (x0, x1) = x_ticks
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _)| {
                (a.min(*x), b.max(*x))
            });
        let max_over = points
            .iter()
            .filter_map(|p| p.makespan_seconds)
            .map(|m| m / seq - 1.0)
            .fold(0.05f64, f64::max)
            * 1.1;
        Scale {
            x0,
            span: (x1 - x0).max(1e-12),
            max_over,
            seq,
        }
    }

    fn x(&self, v: f64) -> f64 {
        FRAME.x(((v - self.x0) / self.span).clamp(0.0, 1.0))
    }

    fn y(&self, m: f64) -> f64 {
        FRAME.y(m / self.seq - 1.0, self.max_over)
    }
}

/// One line per algorithm over `x`, dashed and marked as its legend key
/// (rotor wide and light underneath, so a line on top leaves it visible);
/// a gap where it has no schedule.
fn chart(
    points: &[SweepPoint],
    x_of: fn(&SweepPoint) -> f64,
    x_ticks: &[(f64, String)],
    x_label: &str,
    sequential: f64,
) -> String {
    let sc = Scale::new(points, x_ticks, sequential);
    let ticks: Vec<(f64, String)> = x_ticks.iter().map(|(v, l)| (sc.x(*v), l.clone())).collect();
    let mut s = FRAME.overhead_axes(sc.max_over, &ticks, x_label);
    for alg in SWEEP_ALGORITHMS {
        let mut d = String::new();
        let mut marks = String::new();
        let mut pen_up = true;
        for p in points.iter().filter(|p| p.algorithm == alg) {
            match p.makespan_seconds {
                Some(m) => {
                    let (px, py) = (sc.x(x_of(p)), sc.y(m));
                    d.push_str(&format!(
                        "{}{px:.1} {py:.1}",
                        if pen_up { "M" } else { "L" }
                    ));
                    // A round target wider than the marker carries the
                    // point's hover title.
                    marks.push_str(&format!(
                        r#"<g><circle class="hit" cx="{px:.1}" cy="{py:.1}" r="7" fill="transparent"/>{}<title>{}: {}</title></g>"#,
                        marker_svg(alg_marker(alg), px, py, 3.2, alg_color(alg)),
                        alg.name(),
                        pct(m / sc.seq - 1.0)
                    ));
                    pen_up = false;
                }
                None => pen_up = true,
            }
        }
        s.push_str(&alg_path(alg, &d, alg == Algorithm::Pofo));
        s.push_str(&marks);
    }
    s
}

/// The read-out at `px` over a figure: every algorithm's overhead at the
/// swept x nearest the pointer.
fn readout(
    id: &str,
    points: &[SweepPoint],
    x_of: fn(&SweepPoint) -> f64,
    x_ticks: &[(f64, String)],
    sequential: f64,
    px: f64,
    name_x: fn(f64) -> String,
) -> String {
    let sc = Scale::new(points, x_ticks, sequential);
    let at = sc.x0 + FRAME.fraction_at(px) * sc.span;
    let Some(v) = points
        .iter()
        .map(x_of)
        .min_by(|a, b| (a - at).abs().total_cmp(&(b - at).abs()))
    else {
        return String::new();
    };
    let rows: Vec<(&'static str, String)> = SWEEP_ALGORITHMS
        .iter()
        .filter_map(|&alg| {
            let p = points.iter().find(|p| p.algorithm == alg && x_of(p) == v)?;
            Some((
                alg_color(alg),
                format!(
                    "{}: {}",
                    alg.name(),
                    p.makespan_seconds
                        .map(|m| pct(m / sc.seq - 1.0))
                        .unwrap_or_else(|| "no schedule".into())
                ),
            ))
        })
        .collect();
    readout_svg(id, &FRAME, sc.x(v), &name_x(v), &rows)
}

/// The current budget (as α) or bandwidth on a figure: a dashed line.
fn marker_line(id: &str, px: f64, label: &str) -> String {
    format!(
        r##"<line id="{id}" class="budget-marker" x1="{px:.1}" x2="{px:.1}" y1="{}" y2="{:.1}" stroke="{}" stroke-width="2" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="11" fill="{}" text-anchor="{}" font-weight="600">{label}</text>"##,
        FRAME.top,
        FRAME.h - FRAME.bottom,
        palette::BUDGET,
        px + if px > FRAME.w * 0.75 { -4.0 } else { 4.0 },
        FRAME.h - FRAME.bottom - 6.0,
        palette::BUDGET,
        if px > FRAME.w * 0.75 { "end" } else { "start" }
    )
}

fn alpha_ticks() -> Vec<(f64, String)> {
    (0..=5)
        .map(|i| (i as f64 / 5.0, format!("{:.1}", i as f64 / 5.0)))
        .collect()
}

fn beta_ticks(sw: &Sweep) -> Vec<(f64, String)> {
    let mut bws: Vec<f64> = sw.by_bandwidth.iter().map(|p| p.bandwidth).collect();
    bws.dedup();
    bws.iter()
        .map(|b| (b / 1e9, format!("{:.0}", b / 1e9)))
        .collect()
}

fn alpha_of(p: &SweepPoint) -> f64 {
    p.alpha
}

fn gbps_of(p: &SweepPoint) -> f64 {
    p.bandwidth / 1e9
}

/// Overhead against the memory ratio α.
fn alpha_figure(sw: &Sweep) -> String {
    chart(
        &sw.by_alpha,
        alpha_of,
        &alpha_ticks(),
        "memory ratio α (0 = M_low, 1 = M_high)",
        sw.sequential_seconds,
    )
}

/// Overhead against the bandwidth at α = [`SWEEP_FIXED_ALPHA`].
fn beta_figure(sw: &Sweep) -> String {
    chart(
        &sw.by_bandwidth,
        gbps_of,
        &beta_ticks(sw),
        "bandwidth β (GB/s)",
        sw.sequential_seconds,
    )
}

/// The α of `budget` in the sweep's range (clamped to [0, 1]).
fn alpha_at(sw: &Sweep, budget: u64) -> f64 {
    let (lo, hi) = sw.range;
    ((budget as f64 - lo as f64) / (hi as f64 - lo as f64).max(1.0)).clamp(0.0, 1.0)
}

fn caption(sw: &Sweep) -> String {
    let (m_low, m_high) = sw.range;
    format!(
        "M_low {} … M_high {}; left at {}, right at α = {SWEEP_FIXED_ALPHA} (budget {}).",
        bytes(m_low),
        bytes(m_high),
        format_rate(sw.bandwidth),
        bytes(budget_at_ratio(m_low, m_high, SWEEP_FIXED_ALPHA))
    )
}

/// One of the sweep's two figures: its curves, the current value's marker
/// and the read-out under the pointer, drawn in that order.
#[component]
fn SweepCurve(
    id: &'static str,
    label: &'static str,
    pointer: RwSignal<Option<f64>>,
    layers: [Signal<String>; 3],
) -> impl IntoView {
    view! {
        <CurveSvg id=id frame=FRAME pointer=pointer label=label>
            {layers.map(|layer| view! { <g inner_html=layer></g> })}
        </CurveSvg>
    }
}

#[component]
pub fn SweepView() -> impl IntoView {
    let state = use_app();
    // The bar moves without rebuilding the Cancel button under the pointer.
    let sweeping = state.offloading.sweeping;
    let running = Memo::new(move |_| sweeping.get().is_some());
    let fraction = move || sweeping.get().unwrap_or(0.0);
    // Each drawn from the sweep, once there is one.
    let sweep = state.offloading.sweep;
    let figure = move |draw: fn(&Sweep) -> String| move || sweep.with(|sw| sw.as_ref().map(draw));
    let (alpha_svg, beta_svg, caption) =
        (figure(alpha_figure), figure(beta_figure), figure(caption));
    // The current budget (as α) and bandwidth, redrawn with the slider
    // apart from the lines.
    let alpha_marker = move || {
        let budget = state.controls.budget.get();
        sweep.with(|sw| {
            sw.as_ref().map(|sw| {
                let a = alpha_at(sw, budget);
                marker_line("sweep-alpha-marker", FRAME.x(a), &format!("α = {a:.2}"))
            })
        })
    };
    let beta_marker = move || {
        let b = state.controls.bandwidth.get() / 1e9;
        sweep.with(|sw| {
            sw.as_ref().map(|sw| {
                let sc = Scale::new(&sw.by_bandwidth, &beta_ticks(sw), sw.sequential_seconds);
                marker_line("sweep-beta-marker", sc.x(b), &format!("β = {b:.0} GB/s"))
            })
        })
    };
    let (alpha_px, beta_px) = (RwSignal::new(None::<f64>), RwSignal::new(None::<f64>));
    // The read-out under the pointer of a panel: `draw` picks its points.
    let readout_at = move |px: RwSignal<Option<f64>>, draw: fn(&Sweep, f64) -> String| {
        move || {
            let px = px.get()?;
            sweep.with(|sw| sw.as_ref().map(|sw| draw(sw, px)))
        }
    };
    let alpha_readout = readout_at(alpha_px, |sw, px| {
        readout(
            "sweep-alpha-readout",
            &sw.by_alpha,
            alpha_of,
            &alpha_ticks(),
            sw.sequential_seconds,
            px,
            |a| format!("α = {a:.1} "),
        )
    });
    let beta_readout = readout_at(beta_px, |sw, px| {
        readout(
            "sweep-beta-readout",
            &sw.by_bandwidth,
            gbps_of,
            &beta_ticks(sw),
            sw.sequential_seconds,
            px,
            |b| format!("β = {b:.0} GB/s"),
        )
    });
    view! {
        <section class="card sweep">
            <div class="card-head">
                <h2>"Offloading sweep"</h2>
                <span class="muted">"POFO's figures for this chain: each point is a solve of every offloading algorithm, measured by the simulator"</span>
                <FigureButtons figure=Figure::Sweep />
                <TaskControl id="sweep" running=running fraction=Signal::derive(fraction)
                    label=Signal::derive(move || if state.offloading.sweep.with(|s| s.is_some()) { "Run again" } else { "Compute the figures" })
                    on_run=Callback::new(move |()| state.send_sweep())
                    on_cancel=Callback::new(move |()| state.cancel_side_task()) />
            </div>
            <div class="legend">
                {alg_keys(SWEEP_ALGORITHMS)}
            </div>
            {move || state.offloading.sweep.with(|s| s.is_some()).then(|| view! {
                <div class="sweep-grid">
                    <SweepCurve id="sweep-alpha" pointer=alpha_px
                        label="Overhead against the budget for each offloading algorithm at this bandwidth"
                        layers=[Signal::derive(move || alpha_svg().unwrap_or_default()),
                            Signal::derive(move || alpha_marker().unwrap_or_default()),
                            Signal::derive(move || alpha_readout().unwrap_or_default())] />
                    <SweepCurve id="sweep-beta" pointer=beta_px
                        label="Overhead against the host-link bandwidth for each offloading algorithm at this budget"
                        layers=[Signal::derive(move || beta_svg().unwrap_or_default()),
                            Signal::derive(move || beta_marker().unwrap_or_default()),
                            Signal::derive(move || beta_readout().unwrap_or_default())] />
                </div>
                <p class="hint">{caption}</p>
            })}
        </section>
    }
}
