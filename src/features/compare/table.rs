//! Every algorithm at the current budget, and overhead-vs-budget curves.

use super::overhead_axis::{overhead_axis, OverheadAxis};
use super::peers;
use crate::io::FigureButtons;
use crate::kit::algorithm_style::{alg_color, alg_keys, alg_marker, alg_path};
use crate::kit::figure::Figure;
use crate::kit::format::{bytes, ms, pct};
use crate::kit::frames::CurveSvg;
use crate::kit::scale::{byte_ticks, Frame};
use crate::kit::svg::{marker_svg, readout_svg};
use crate::planning::optimality::{gap_cell, optimal_at, optimum_searched, Standing};
use crate::planning::protocol::Summary;
use crate::planning::service::solved_in_worker;
use crate::state::{use_app, AppState, Build, RowStatus};
use leptos::prelude::*;
use remat_core::solvers::optimal::Limits;
use remat_core::solvers::Algorithm;

const FRAME: Frame = Frame {
    w: 640.0,
    h: 300.0,
    left: 64.0,
    right: 16.0,
    top: 14.0,
    bottom: 40.0,
};

/// The x scale of the curves: budget ↔ chart units.
fn curves_x(state: AppState) -> (f64, f64) {
    let lo = state.loaded.m_low.get() as f64;
    let hi = state.loaded.m_high.get() as f64;
    (lo, (hi - lo).max(1.0))
}

/// The read-out at the pointer over the curves: each built algorithm's
/// overhead at the curve budget nearest the pointer.
fn curves_readout(state: AppState, px: f64) -> String {
    let (lo, span) = curves_x(state);
    let at = lo + FRAME.fraction_at(px) * span;
    let seq = state
        .loaded
        .chain
        .with(|c| c.sequential_seconds())
        .max(1e-12);
    let builds = state.tables.builds.get();
    let mut rows = Vec::new();
    let mut budget = None;
    for (alg, b) in Algorithm::ALL.iter().zip(&builds) {
        let Build::Ready { curve, .. } = b else {
            continue;
        };
        let Some(p) = curve.iter().min_by(|a, b| {
            (a.budget as f64 - at)
                .abs()
                .total_cmp(&(b.budget as f64 - at).abs())
        }) else {
            continue;
        };
        budget.get_or_insert(p.budget);
        rows.push((
            alg_color(*alg),
            format!(
                "{}: {}",
                alg.name(),
                p.makespan_seconds
                    .map(|m| pct(m / seq - 1.0))
                    .unwrap_or_else(|| "no schedule".into())
            ),
        ));
    }
    let Some(budget) = budget else {
        return String::new();
    };
    let bx = FRAME.x((budget as f64 - lo) / span);
    readout_svg(
        "curves-readout",
        &FRAME,
        bx,
        &format!("at {}", bytes(budget)),
        &rows,
    )
}

/// The overhead axis of the built curves (`super::overhead_axis`).
fn curve_axis(state: AppState, seq: f64) -> OverheadAxis {
    let highest: Vec<(Algorithm, f64)> = state.tables.builds.with(|builds| {
        Algorithm::ALL
            .iter()
            .zip(builds)
            .filter_map(|(alg, b)| match b {
                Build::Ready { curve, .. } => curve
                    .iter()
                    .filter_map(|p| p.makespan_seconds)
                    .map(|m| m / seq - 1.0)
                    .reduce(f64::max)
                    .map(|o| (*alg, o)),
                _ => None,
            })
            .collect()
    });
    overhead_axis(&highest)
}

/// Under the figure, the curve clipped at its top, if one is.
fn clipped_note(state: AppState) -> Option<String> {
    let seq = state
        .loaded
        .chain
        .with(|c| c.sequential_seconds())
        .max(1e-12);
    let (alg, top) = curve_axis(state, seq).clipped?;
    Some(format!(
        "{} reaches {}: its curve is clipped at the top, so that the others can be read",
        alg.name(),
        pct(top)
    ))
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
    let axis = curve_axis(state, seq);
    let peers = state.loaded.chain.with(|c| c.peers.clone());
    let placed = peers::place(&peers, lo, span, seq);
    // Room for the peers drawn, above the curves and below 0 % (a measured
    // step faster than the chain's sequential time) if need be.
    let (low, high) = peers::extent(&placed).unwrap_or((0.0, 0.0));
    let max_over = axis.top.max(1.1 * high);
    let range = ((1.1 * low).min(0.0), max_over);
    let x = |b: f64| FRAME.x((b - lo) / span);
    // A clipped curve runs along the top of the frame where it is above.
    let y = |o: f64| FRAME.y_in(o.min(max_over), range);
    let x_ticks: Vec<(f64, String)> = byte_ticks(hi, 6)
        .into_iter()
        .filter(|b| *b >= lo)
        .map(|b| (x(b), bytes(b as u64)))
        .collect();
    let mut s = FRAME.overhead_axes_in(range, &x_ticks, "memory budget");
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
        if curve.is_empty() {
            continue; // offloading: their curves are the sweep's
        }
        let current = *alg == state.controls.algorithm.get();
        s.push_str(&alg_path(*alg, &d, current));
        for (px, py) in dots {
            s.push_str(&marker_svg(alg_marker(*alg), px, py, 4.5, alg_color(*alg)));
        }
        // A marker every few points, each algorithm at its own offset so
        // markers of lines on top of each other do not hide one another.
        let k = Algorithm::ALL.iter().position(|a| a == alg).unwrap_or(0);
        for (i, p) in curve.iter().enumerate() {
            if let (true, Some(m)) = ((i + k).is_multiple_of(6), p.makespan_seconds) {
                s.push_str(&marker_svg(
                    alg_marker(*alg),
                    x(p.budget as f64),
                    y(m / seq - 1.0),
                    3.0,
                    alg_color(*alg),
                ));
            }
        }
    }
    s.push_str(&peers::peers_svg(&peers, &placed, x, y));
    s
}

/// The chain's peers in words, numbered as on the figure (none: empty).
fn peers_list(state: AppState) -> Vec<String> {
    let (lo, span) = curves_x(state);
    state.loaded.chain.with(|c| {
        let seq = c.sequential_seconds();
        peers::list(&c.peers, &peers::place(&c.peers, lo, span, seq))
    })
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
        r##"<line id="curves-budget-marker" class="budget-marker" x1="{bx:.1}" x2="{bx:.1}" y1="{}" y2="{:.1}" stroke="#b8322c" stroke-width="2" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="12" fill="#b8322c" text-anchor="{}" font-weight="600">budget</text>"##,
        FRAME.top,
        FRAME.h - FRAME.bottom,
        bx + if bx > FRAME.w * 0.8 { -5.0 } else { 5.0 },
        FRAME.top + 12.0,
        if bx > FRAME.w * 0.8 { "end" } else { "start" }
    )
}

/// Where the optimal row's curve stands, for the gap's reference.
fn standing(build: &Build) -> Standing {
    match build {
        Build::Ready { .. } => Standing::Ready,
        Build::Building(_) => Standing::Building,
        Build::Failed(e) => Standing::Failed(e.clone()),
        Build::Idle | Build::Cancelled => Standing::NotBuilt,
    }
}

#[component]
pub fn Compare() -> impl IntoView {
    let state = use_app();
    let pointer = RwSignal::new(None::<f64>);
    let rows = move || {
        let summaries = state.shown.summaries.get();
        let offloading = state.offloading.summaries.get();
        let seq = state.loaded.chain.with(|c| c.sequential_seconds());
        let current = state.controls.algorithm.get();
        let stages = state.loaded.chain.with(|c| c.len());
        let optimal = optimal_at(
            stages,
            state.loaded.chain.with(|c| c.has_menus()),
            standing(&state.tables.build_of(Algorithm::Optimal)),
            offloading
                .iter()
                .find(|s| s.algorithm == Algorithm::Optimal),
        );
        Algorithm::ALL
            .iter()
            .map(|alg| {
                let alg = *alg;
                // Offloading and optimal rows come from the worker's solves
                // at this budget.
                let remote = solved_in_worker(alg);
                let from = if remote { &offloading } else { &summaries };
                let summary = from.iter().find(|s| s.algorithm == alg).cloned();
                // A compare row solved in the worker: the offloading rows'
                // (and the optimum's only while its own curve is not
                // building).
                let row = if remote && (alg.offloads() || state.tables.is_ready(alg)) {
                    state.offloading.row_status(alg)
                } else {
                    RowStatus::Done
                };
                let build = match row {
                    RowStatus::Solving(f) => Build::Building(f),
                    _ => state.tables.build_of(alg),
                };
                let cancel = move || view! {
                    <button class="small cancel-row" id=format!("cancel-row-{}", alg.name())
                        title="Stop this row; the other rows go on"
                        on:click=move |ev| { ev.stop_propagation(); state.cancel_row(alg) }>"Cancel"</button>
                };
                // Too long for the exact search: its row says why, before any build.
                let refused = (alg == Algorithm::Optimal)
                    .then(|| Limits::default().check_stages(stages).err())
                    .flatten()
                    .map(|e| e.to_string());
                let idle = build == Build::Idle;
                let cells = match (build, summary) {
                    // Too long for the exact search: say why, not an error.
                    _ if refused.is_some() => view! {
                        <td colspan="6" class="muted refused">{refused.clone()}</td>
                    }
                    .into_any(),
                    _ if row == RowStatus::Waiting => view! {
                        <td colspan="6" class="muted">"waiting for the worker " {cancel()}</td>
                    }
                    .into_any(),
                    _ if row == RowStatus::Cancelled => view! {
                        <td colspan="6" class="muted row-cancelled">
                            "cancelled "
                            <button class="small solve-row" id=format!("solve-row-{}", alg.name())
                                on:click=move |ev| { ev.stop_propagation(); state.solve_row(alg) }>"solve again"</button>
                        </td>
                    }
                    .into_any(),
                    (Build::Ready { .. }, Some(Summary { error: Some(e), .. })) => view! {
                        <td colspan="6" class="err">{format!("error: {e}")}</td>
                    }
                    .into_any(),
                    (Build::Ready { .. }, Some(s)) if s.feasible => {
                        let m = s.makespan_seconds.unwrap_or(0.0);
                        let (gap, why) = gap_cell(m, &optimal, alg.offloads());
                        view! {
                            <td class="yes">"✓"</td>
                            <td>{ms(m)}</td>
                            <td>{pct(m / seq.max(1e-12) - 1.0)}</td>
                            <td class="gap" title=why>{gap}</td>
                            <td>{s.peak_bytes.map(bytes).unwrap_or_default()}</td>
                            <td class="muted">{s.detail}</td>
                        }
                        .into_any()
                    }
                    (Build::Ready { .. }, Some(s)) => view! {
                        <td class="no">"✗"</td><td>"—"</td><td>"—"</td><td class="gap">"—"</td><td>"—"</td>
                        <td class="muted">{s.detail}</td>
                    }
                    .into_any(),
                    (Build::Building(f), _) => view! {
                        <td colspan="6" class="muted">{format!("{}… {:.0} %",
                            if alg.offloads() { "solving in the worker" } else { "building" }, f * 100.0)}
                            {matches!(row, RowStatus::Solving(_)).then(|| view! { " " {cancel()} })}</td>
                    }
                    .into_any(),
                    // The exact search's refusals are reasons (use rotor), not faults.
                    (Build::Failed(e), _) => view! {
                        <td colspan="6" class=if alg == Algorithm::Optimal { "muted refused" } else { "err" }>{e}</td>
                    }
                    .into_any(),
                    (Build::Ready { .. }, None) if alg.offloads() => view! {
                        <td colspan="6" class="muted">
                            "not solved at this budget "
                            <button class="small solve-offloading" on:click=move |ev| { ev.stop_propagation(); state.send_compare() }>"solve"</button>
                        </td>
                    }
                    .into_any(),
                    _ => view! {
                        <td colspan="6" class="muted">
                            {if alg == Algorithm::Optimal && idle {
                                "searched when asked (seconds a budget on this chain) "
                            } else {
                                "not built "
                            }}
                            <button class="small" id=format!("build-{}", alg.name()) on:click=move |ev| { ev.stop_propagation(); state.rebuild(alg) }>
                                {if alg == Algorithm::Optimal { "search" } else { "build" }}
                            </button>
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
    // A table "Build all" would build: not the optimum's curve where it
    // is searched only when asked (its row has its own button).
    let missing = move || {
        let asked_only = !optimum_searched(state.loaded.chain.with(|c| c.len()), false);
        state.tables.builds.with(|b| {
            b.iter().zip(Algorithm::ALL).any(|(x, alg)| {
                matches!(x, Build::Idle | Build::Cancelled)
                    && !(asked_only && alg == Algorithm::Optimal && *x == Build::Idle)
            })
        })
    };
    view! {
        <section class="card compare">
            <div class="card-head">
                <h2>"Compare algorithms"</h2>
                <span class="muted">{move || format!("at {} — each schedule measured by the simulator", bytes(state.controls.budget.get()))}</span>
                <FigureButtons figure=Figure::Compare />
                {move || missing().then(|| view! {
                    <button id="build-all" on:click=move |_| state.build_all()
                        title="Long chains build one table at a time in the worker">"Build all tables"</button>
                })}
            </div>
            <div class="compare-grid">
                <table id="compare-table" class="grid">
                    <thead><tr><th>"algorithm"</th><th>"feasible"</th><th>"makespan"</th><th>"overhead"</th><th title="each makespan over the exact optimum's at this budget; the optimum recomputes only, so offloading rows show —">"gap to optimal"</th><th>"peak"</th><th>"detail"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
                <div class="curves">
                    <div class="legend">
                        // The curves: every algorithm but the offloading ones.
                        {alg_keys(Algorithm::ALL.into_iter().filter(|a| !a.offloads()))}
                        <span class="muted">"offloading: see the sweep"</span>
                    </div>
                    <CurveSvg id="curves-svg" frame=FRAME pointer=pointer
                        label="Overhead against the budget, one curve per algorithm; the table beside it has the numbers">
                        <g inner_html=move || curves_svg(state)></g>
                        <g inner_html=move || budget_marker_svg(state)></g>
                        <g inner_html=move || pointer.get().map(|px| curves_readout(state, px)).unwrap_or_default()></g>
                    </CurveSvg>
                    {move || clipped_note(state).map(|note| view! { <p id="curves-clipped" class="muted caption">{note}</p> })}
                    {move || {
                        let list = peers_list(state);
                        (!list.is_empty()).then(|| view! {
                            <div id="curves-peers" class="caption">
                                <p class="muted">"◆ Steps of this model measured another way (the chain's peers): their measured peak and time, against the curves' predicted time at each budget. ◇ crossed: the peer trained on wrong gradients."</p>
                                <ul class="peers">{list.into_iter().map(|line| view! { <li>{line}</li> }).collect_view()}</ul>
                            </div>
                        })
                    }}
                </div>
            </div>
        </section>
    }
}
