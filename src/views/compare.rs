//! Every algorithm at the current budget, and overhead-vs-budget curves.

use super::chart::{byte_ticks, bytes, ms, pct, Frame, Swatch};
use crate::protocol::Summary;
use crate::state::{use_app, AppState, Build};
use leptos::prelude::*;
use remat_core::solvers::Algorithm;

const FRAME: Frame = Frame {
    w: 640.0,
    h: 300.0,
    left: 64.0,
    right: 16.0,
    top: 14.0,
    bottom: 40.0,
};

pub fn alg_color(a: Algorithm) -> &'static str {
    match a {
        Algorithm::StoreAll => "#7b8594",
        Algorithm::Sequential => "#0f9fb0",
        Algorithm::Revolve => "#b0469c",
        Algorithm::Rotor => "#1f5fbf",
        Algorithm::Pofo => "#e8590c",
        Algorithm::OffloadOnly => "#7048e8",
        Algorithm::Opportunist => "#2f9e44",
        Algorithm::Autocapper => "#c2255c",
        Algorithm::Hong => "#a0522d",
        Algorithm::HongChen => "#d4a017",
    }
}

fn curves_svg(state: AppState) -> String {
    let (lo, hi) = (
        state.loaded.m_low.get() as f64,
        state.loaded.m_high.get() as f64,
    );
    let seq = state
        .loaded
        .chain
        .with(|c| c.sequential_seconds())
        .max(1e-12);
    let span = (hi - lo).max(1.0);
    let builds = state.tables.builds.get();
    let mut max_over: f64 = 0.05;
    for b in &builds {
        if let Build::Ready { curve, .. } = b {
            for p in curve {
                if let Some(m) = p.makespan_seconds {
                    max_over = max_over.max(m / seq - 1.0);
                }
            }
        }
    }
    let max_over = max_over * 1.1;
    let x = |b: f64| FRAME.x((b - lo) / span);
    let y = |o: f64| FRAME.y(o, max_over);
    let x_ticks: Vec<(f64, String)> = byte_ticks(hi, 6)
        .into_iter()
        .filter(|b| *b >= lo)
        .map(|b| (x(b), bytes(b as u64)))
        .collect();
    let mut s = FRAME.overhead_axes(max_over, &x_ticks, "memory budget");
    for (alg, b) in Algorithm::ALL.iter().zip(&builds) {
        let Build::Ready { curve, .. } = b else {
            continue;
        };
        // Break the line where the algorithm has no schedule; a run of one
        // point (store-all: only at M_high) is drawn as a dot.
        let mut d = String::new();
        let mut dots = Vec::new();
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut flush = |run: &mut Vec<(f64, f64)>, d: &mut String| {
            if run.len() == 1 {
                dots.push(run[0]);
            }
            for (i, (px, py)) in run.iter().enumerate() {
                d.push_str(&format!(
                    "{}{px:.1} {py:.1}",
                    if i == 0 { "M" } else { "L" }
                ));
            }
            run.clear();
        };
        for p in curve {
            match p.makespan_seconds {
                Some(m) => run.push((x(p.budget as f64), y(m / seq - 1.0))),
                None => flush(&mut run, &mut d),
            }
        }
        flush(&mut run, &mut d);
        for (px, py) in dots {
            s.push_str(&format!(
                r##"<circle cx="{px:.1}" cy="{py:.1}" r="4.5" fill="{}" stroke="#fff" stroke-width="1.5"/>"##,
                alg_color(*alg)
            ));
        }
        let current = *alg == state.controls.algorithm.get();
        s.push_str(&format!(
            r##"<path d="{d}" fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round"/>"##,
            alg_color(*alg),
            if current { 3.0 } else { 1.8 }
        ));
    }
    s
}

/// The budget line on the curves: redrawn on every slider move, apart from
/// the curves, which change only when a table is built.
fn budget_marker_svg(state: AppState) -> String {
    let (lo, hi) = (
        state.loaded.m_low.get() as f64,
        state.loaded.m_high.get() as f64,
    );
    let span = (hi - lo).max(1.0);
    let bx = FRAME.x(((state.controls.budget.get() as f64).clamp(lo, hi) - lo) / span);
    format!(
        r##"<line x1="{bx:.1}" x2="{bx:.1}" y1="{}" y2="{:.1}" stroke="#d64545" stroke-width="2" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="12" fill="#d64545" text-anchor="{}" font-weight="600">budget</text>"##,
        FRAME.top,
        FRAME.h - FRAME.bottom,
        bx + if bx > FRAME.w * 0.8 { -5.0 } else { 5.0 },
        FRAME.top + 12.0,
        if bx > FRAME.w * 0.8 { "end" } else { "start" }
    )
}

#[component]
pub fn Compare() -> impl IntoView {
    let state = use_app();
    let rows = move || {
        let summaries = state.shown.summaries.get();
        let offloading = state.offloading.summaries.get();
        let comparing = state.offloading.comparing.get();
        let seq = state.loaded.chain.with(|c| c.sequential_seconds());
        let current = state.controls.algorithm.get();
        Algorithm::ALL
            .iter()
            .map(|alg| {
                let alg = *alg;
                // Offloading rows come from the worker's solves at this budget.
                let from = if alg.offloads() { &offloading } else { &summaries };
                let summary = from.iter().find(|s| s.algorithm == alg).cloned();
                let build = match (alg.offloads(), comparing) {
                    (true, Some(f)) => Build::Building(f),
                    _ => state.tables.build_of(alg),
                };
                let cells = match (build, summary) {
                    (Build::Ready { .. }, Some(Summary { error: Some(e), .. })) => view! {
                        <td colspan="5" class="err">{format!("error: {e}")}</td>
                    }
                    .into_any(),
                    (Build::Ready { .. }, Some(s)) if s.feasible => {
                        let m = s.makespan_seconds.unwrap_or(0.0);
                        view! {
                            <td class="yes">"✓"</td>
                            <td>{ms(m)}</td>
                            <td>{pct(m / seq.max(1e-12) - 1.0)}</td>
                            <td>{s.peak_bytes.map(bytes).unwrap_or_default()}</td>
                            <td class="muted">{s.detail}</td>
                        }
                        .into_any()
                    }
                    (Build::Ready { .. }, Some(s)) => view! {
                        <td class="no">"✗"</td><td>"—"</td><td>"—"</td><td>"—"</td>
                        <td class="muted">{s.detail}</td>
                    }
                    .into_any(),
                    (Build::Building(f), _) => view! {
                        <td colspan="5" class="muted">{format!("{}… {:.0} %",
                            if alg.offloads() { "solving in the worker" } else { "building" }, f * 100.0)}</td>
                    }
                    .into_any(),
                    (Build::Failed(e), _) => view! { <td colspan="5" class="err">{e}</td> }.into_any(),
                    (Build::Ready { .. }, None) if alg.offloads() => view! {
                        <td colspan="5" class="muted">
                            "not solved at this budget "
                            <button class="small solve-offloading" on:click=move |ev| { ev.stop_propagation(); state.send_compare() }>"solve"</button>
                        </td>
                    }
                    .into_any(),
                    _ => view! {
                        <td colspan="5" class="muted">
                            "not built "
                            <button class="small" on:click=move |ev| { ev.stop_propagation(); state.rebuild(alg) }>"build"</button>
                        </td>
                    }
                    .into_any(),
                };
                view! {
                    <tr class=if alg == current { "current" } else { "" }
                        on:click=move |_| state.controls.algorithm.set(alg)
                        title="Click to show this algorithm's schedule">
                        <td><i class="dot" style=format!("background:{}", alg_color(alg))></i>{alg.name()}</td>
                        {cells}
                    </tr>
                }
            })
            .collect_view()
    };
    let missing = move || {
        state.tables.builds.with(|b| {
            b.iter()
                .any(|x| matches!(x, Build::Idle | Build::Cancelled))
        })
    };
    view! {
        <section class="card compare">
            <div class="card-head">
                <h2>"Compare algorithms"</h2>
                <span class="muted">{move || format!("at {} — each schedule measured by the simulator", bytes(state.controls.budget.get()))}</span>
                {move || missing().then(|| view! {
                    <button id="build-all" on:click=move |_| state.build_all()
                        title="Long chains build one table at a time in the worker">"Build all tables"</button>
                })}
            </div>
            <div class="compare-grid">
                <table id="compare-table" class="grid">
                    <thead><tr><th>"algorithm"</th><th>"feasible"</th><th>"makespan"</th><th>"overhead"</th><th>"peak"</th><th>"detail"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
                <div class="curves">
                    <div class="legend">
                        // The curves: every algorithm but the offloading ones.
                        {Algorithm::ALL.into_iter().filter(|a| !a.offloads())
                            .map(|a| view! { <Swatch color=alg_color(a) label=a.name() /> }).collect_view()}
                        <span class="muted">"offloading: see the sweep"</span>
                    </div>
                    <svg id="curves-svg" xmlns="http://www.w3.org/2000/svg" viewBox=FRAME.view_box()
                        font-family="Inter, system-ui, sans-serif">
                        <rect x="0" y="0" width=FRAME.w height=FRAME.h fill="#ffffff" />
                        <g inner_html=move || curves_svg(state)></g>
                        <g inner_html=move || budget_marker_svg(state)></g>
                    </svg>
                </div>
            </div>
        </section>
    }
}
