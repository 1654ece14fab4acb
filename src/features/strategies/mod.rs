//! Strategies side by side, in the *Learn* place: the classic four
//! (`crate::strategies`) on the chain on the page, each with its peak and
//! time and its memory over time, all on one memory axis and against the
//! page's budget, one cursor shared by the four charts; and *Your guess*:
//! pick the stages to keep, then reveal its peak and time against rotor's
//! with the same memory, and where its peak comes from.

use crate::kit::format::{bytes, ms};
use crate::kit::hover::{Cursor, TimeAxis};
use crate::kit::memory_chart::MemoryChart;
use crate::kit::notation::math_text;
use crate::kit::widgets::CardHead;
use crate::kit::zoom::TimeZoom;
use crate::state::use_app;
use crate::strategies::{classic_four, guess, shared_top, Strategy, MAX_ROTOR_STAGES};
use leptos::prelude::*;
use remat_core::solvers::Algorithm;
use std::sync::Arc;

/// Each chart's SVG id (ids are static strings in the kit).
fn chart_id(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::StoreAll => "side-memory-store-all",
        Algorithm::RecomputeAll => "side-memory-recompute-all",
        Algorithm::Sequential => "side-memory-sequential",
        _ => "side-memory-rotor",
    }
}

#[component]
pub fn SideBySide() -> impl IntoView {
    let state = use_app();
    // Computed once asked, then again whenever the chain or the budget
    // moves (rotor's table is built here: chains up to 60 stages).
    let asked = RwSignal::new(false);
    let four = RwSignal::new(None::<Arc<Vec<Strategy>>>);
    Effect::new(move |_| {
        if !asked.get() {
            return;
        }
        let chain = state.loaded.chain.get();
        let budget = state.controls.budget.get();
        four.set(Some(Arc::new(classic_four(&chain, budget))));
    });
    let top = Signal::derive(move || {
        let budget = state.controls.budget.get();
        four.with(|f| f.as_ref().map_or(budget, |f| shared_top(f, budget)))
    });
    let cursor = Cursor {
        time: RwSignal::new(None),
        step: RwSignal::new(None),
    };
    let rows = move || {
        let budget = state.controls.budget.get_untracked();
        four.get().map(|four| {
            (0..four.len())
                .map(|i| {
                    let s = &four[i];
                    let trace = s.current.ok_trace();
                    let peak = trace.map(|t| t.peak_bytes);
                    let seconds = trace.map(|t| (t.makespan_seconds, t.overhead()));
                    let fits = peak.is_some_and(|p| p <= budget);
                    let numbers = match (peak, seconds) {
                        (Some(p), Some((t, o))) => format!(
                            "peak {} · step {} (+{:.1} %) · {}",
                            bytes(p),
                            ms(t),
                            100.0 * o,
                            if fits { "fits the budget" } else { "over the budget" }
                        ),
                        _ => format!("no schedule at {}", bytes(budget)),
                    };
                    let schedule = Signal::derive({
                        let four = four.clone();
                        move || Some(four[i].current.clone())
                    });
                    let axis = TimeAxis {
                        schedule,
                        zoom: TimeZoom::new(),
                        cursor,
                    };
                    view! {
                        <div class="side-row" id=format!("side-{}", s.algorithm.name())
                            data-peak=peak.map(|p| p.to_string()).unwrap_or_default()
                            data-seconds=seconds.map(|(t, _)| t.to_string()).unwrap_or_default()
                            data-segments=s.segments.map(|k| k.to_string()).unwrap_or_default()>
                            <h3>{math_text(&s.label)}<span class=if fits { "muted" } else { "over" }>{format!(" — {numbers}")}</span></h3>
                            <MemoryChart axis measured=Signal::derive(|| None)
                                id=chart_id(s.algorithm) shared_top=top />
                        </div>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <section class="card" id="side-by-side">
            <CardHead title="Strategies side by side">
                <button id="classic-four" on:click=move |_| asked.set(true)
                    disabled=move || asked.get()>"Show the classic four"</button>
            </CardHead>
            <p class="hint">{math_text(&format!(
                "Keep everything, keep only a^0, √n (⌈√L⌉ equal segments: Chen et al.'s answer, which assumes equal layers) and rotor, the optimum among persistent schedules at the budget (chains up to {MAX_ROTOR_STAGES} stages). One memory axis for all; the dashed line is the page's budget."
            ))}</p>
            {rows}
        </section>
    }
}

/// Predict, then reveal: the student picks the stages whose outputs are
/// kept (checkpoints; the segments between are recomputed), then sees what
/// that costs against the optimum with the same memory.
#[component]
pub fn YourGuess() -> impl IntoView {
    let state = use_app();
    let kept = RwSignal::new(Vec::<usize>::new());
    let revealed = RwSignal::new(false);
    // A new chain starts a new guess.
    Effect::new(move |_| {
        state.loaded.chain.track();
        kept.set(Vec::new());
        revealed.set(false);
    });
    let stages = move || state.loaded.chain.with(|c| c.len());
    let toggle = move |l: usize| {
        kept.update(|k| {
            match k.binary_search(&l) {
                Ok(i) => {
                    k.remove(i);
                }
                Err(i) => k.insert(i, l),
            };
        });
        revealed.set(false);
    };
    let chips = move || {
        let n = stages();
        (n <= MAX_ROTOR_STAGES).then(|| {
            (1..n)
                .map(|l| {
                    let on = move || kept.with(|k| k.contains(&l));
                    view! {
                        <button class="guess-stage" data-stage=l
                            aria-pressed=move || on().to_string()
                            class:on=on on:click=move |_| toggle(l)>{l}</button>
                    }
                })
                .collect_view()
        })
    };
    let result = move || {
        if !revealed.get() {
            return None;
        }
        let chain = state.loaded.chain.get();
        let answer = guess(&chain, &kept.get());
        Some(match answer {
            Ok(g) => {
                let base = chain.sequential_seconds();
                let over = |t: f64| 100.0 * (t / base - 1.0);
                let set = g
                    .kept
                    .iter()
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                let optimum = g.optimum_seconds.map_or_else(
                    || "Rotor is not solved here for chains over 60 stages".to_string(),
                    |t| {
                        format!(
                            "Rotor with the same memory: step {} (+{:.1} %)",
                            ms(t),
                            over(t)
                        )
                    },
                );
                view! {
                    <div id="guess-result" data-peak=g.peak_bytes.to_string()
                        data-seconds=g.seconds.to_string()
                        data-optimum-seconds=g.optimum_seconds.map(|t| t.to_string()).unwrap_or_default()>
                        <p><b>{format!("Keeping {{{set}}}: peak {}, step {} (+{:.1} %).", bytes(g.peak_bytes), ms(g.seconds), over(g.seconds))}</b>
                            " " {optimum} "."</p>
                        <p class="hint">{math_text(&format!("Your peak, {}", g.peak_line))}</p>
                    </div>
                }
                .into_any()
            }
            Err(e) => view! { <p id="guess-result" class="err">{e}</p> }.into_any(),
        })
    };
    view! {
        <section class="card" id="your-guess">
            <CardHead title="Your guess: which stages to keep?">
                <button id="guess-reveal" class="primary" on:click=move |_| revealed.set(true)>"Reveal"</button>
            </CardHead>
            <p class="hint">{move || if stages() <= MAX_ROTOR_STAGES {
                "Pick the stages whose outputs stay in memory (the stretches between them are recomputed before their backward), guess the peak and the time, then reveal them against the optimum with the same memory.".to_string()
            } else {
                format!("On chains up to {MAX_ROTOR_STAGES} stages: this one has {}.", stages())
            }}</p>
            <div class="guess-stages">{chips}</div>
            {result}
        </section>
    }
}
