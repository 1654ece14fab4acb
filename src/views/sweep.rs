//! POFO's two figures for the loaded chain (Section 5): overhead against the
//! memory ratio α at the current bandwidth, and against the bandwidth at
//! α = 0.2. Every point is a solve, so the sweep runs in the worker, on
//! demand, with progress and a cancel button.

use super::chart::{bytes, pct, Frame, ProgressBar, Swatch};
use super::compare::alg_color;
use crate::protocol::{Sweep, SweepPoint};
use crate::service::{SWEEP_ALGORITHMS, SWEEP_FIXED_ALPHA};
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

/// One line per algorithm over `x`; a gap where it has no schedule.
fn chart(
    points: &[SweepPoint],
    x_of: fn(&SweepPoint) -> f64,
    x_ticks: &[(f64, String)],
    x_label: &str,
    sequential: f64,
) -> String {
    let seq = sequential.max(1e-12);
    let (x0, x1) = x_ticks
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _)| {
            (a.min(*x), b.max(*x))
        });
    let span = (x1 - x0).max(1e-12);
    let max_over = points
        .iter()
        .filter_map(|p| p.makespan_seconds)
        .map(|m| m / seq - 1.0)
        .fold(0.05f64, f64::max)
        * 1.1;
    let x = |v: f64| FRAME.x((v - x0) / span);
    let y = |o: f64| FRAME.y(o, max_over);
    let ticks: Vec<(f64, String)> = x_ticks.iter().map(|(v, l)| (x(*v), l.clone())).collect();
    let mut s = FRAME.overhead_axes(max_over, &ticks, x_label);
    for alg in SWEEP_ALGORITHMS {
        let mut d = String::new();
        let mut pen_up = true;
        for p in points.iter().filter(|p| p.algorithm == alg) {
            match p.makespan_seconds {
                Some(m) => {
                    let (px, py) = (x(x_of(p)), y(m / seq - 1.0));
                    d.push_str(&format!(
                        "{}{px:.1} {py:.1}",
                        if pen_up { "M" } else { "L" }
                    ));
                    s.push_str(&format!(
                        r##"<circle cx="{px:.1}" cy="{py:.1}" r="2.6" fill="{}"><title>{}: {}</title></circle>"##,
                        alg_color(alg),
                        alg.name(),
                        pct(m / seq - 1.0)
                    ));
                    pen_up = false;
                }
                None => pen_up = true,
            }
        }
        s.push_str(&format!(
            r##"<path d="{d}" fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round"/>"##,
            alg_color(alg),
            if alg == Algorithm::Pofo { 2.6 } else { 1.6 }
        ));
    }
    s
}

/// Overhead against the memory ratio α.
fn alpha_figure(sw: &Sweep) -> String {
    let ticks: Vec<(f64, String)> = (0..=5)
        .map(|i| (i as f64 / 5.0, format!("{:.1}", i as f64 / 5.0)))
        .collect();
    chart(
        &sw.by_alpha,
        |p| p.alpha,
        &ticks,
        "memory ratio α (0 = M_low, 1 = M_high)",
        sw.sequential_seconds,
    )
}

/// Overhead against the bandwidth at α = [`SWEEP_FIXED_ALPHA`].
fn beta_figure(sw: &Sweep) -> String {
    let mut bws: Vec<f64> = sw.by_bandwidth.iter().map(|p| p.bandwidth).collect();
    bws.dedup();
    let ticks: Vec<(f64, String)> = bws
        .iter()
        .map(|b| (b / 1e9, format!("{:.0}", b / 1e9)))
        .collect();
    chart(
        &sw.by_bandwidth,
        |p| p.bandwidth / 1e9,
        &ticks,
        "bandwidth β (GB/s)",
        sw.sequential_seconds,
    )
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
    view! {
        <section class="card sweep">
            <div class="card-head">
                <h2>"Offloading sweep"</h2>
                <span class="muted">"POFO's figures for this chain: each point is a solve of every offloading algorithm, measured by the simulator"</span>
                {move || match running.get() {
                    true => view! {
                        <span class="status building">
                            <ProgressBar id="sweep-progress" fraction=Signal::derive(fraction) />
                            <button id="sweep-cancel" on:click=move |_| state.cancel_build()>"Cancel"</button>
                        </span>
                    }.into_any(),
                    false => view! {
                        <button id="sweep-run" on:click=move |_| state.send_sweep()
                            title="Runs in a Web Worker">
                            {move || if state.offloading.sweep.with(|s| s.is_some()) { "Run again" } else { "Compute the figures" }}
                        </button>
                    }.into_any(),
                }}
            </div>
            <div class="legend">
                {SWEEP_ALGORITHMS.iter().map(|a| view! { <Swatch color=alg_color(*a) label=a.name() /> }).collect_view()}
            </div>
            {move || state.offloading.sweep.with(|s| s.is_some()).then(|| view! {
                <div class="sweep-grid">
                    <svg id="sweep-alpha" xmlns="http://www.w3.org/2000/svg" viewBox=FRAME.view_box()
                        font-family="Inter, system-ui, sans-serif" role="img"
                        aria-label="Overhead against the budget for each offloading algorithm at this bandwidth">
                        <rect x="0" y="0" width=FRAME.w height=FRAME.h fill="#ffffff" />
                        <g inner_html=alpha_svg></g>
                    </svg>
                    <svg id="sweep-beta" xmlns="http://www.w3.org/2000/svg" viewBox=FRAME.view_box()
                        font-family="Inter, system-ui, sans-serif" role="img"
                        aria-label="Overhead against the host-link bandwidth for each offloading algorithm at this budget">
                        <rect x="0" y="0" width=FRAME.w height=FRAME.h fill="#ffffff" />
                        <g inner_html=beta_svg></g>
                    </svg>
                </div>
                <p class="hint">{caption}</p>
            })}
        </section>
    }
}
