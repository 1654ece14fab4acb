//! Strategies side by side, in the *Learn* place: the classic four
//! (`crate::teaching::classics`) on the chain on the page, each with its peak and
//! time and its memory over time, all on one memory axis and against the
//! page's budget, one cursor shared by the four charts; and *Your guess*:
//! pick the stages to keep, then reveal its peak and time against rotor's
//! with the same memory, and where its peak comes from.

use crate::kit::format::{bytes, ms};
use crate::kit::hover::{Cursor, TimeAxis};
use crate::kit::legend::{self, card_key};
use crate::kit::memory_chart::MemoryChart;
use crate::kit::notation::math_text;
use crate::kit::widgets::CardHead;
use crate::kit::zoom::TimeZoom;
use crate::state::use_app;
use crate::teaching::classics::{
    guess, now_line, race_step, shared_end, shared_top, Classic, Doubling, RotorTable,
    MAX_OPTIMAL_STAGES, MAX_ROTOR_STAGES,
};
use leptos::prelude::*;
use remat_core::solvers::Algorithm;
use std::sync::Arc;
use std::time::Duration;

/// Each chart's SVG id (ids are static strings in the kit).
fn chart_id(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::StoreAll => "side-memory-store-all",
        Algorithm::RecomputeAll => "side-memory-recompute-all",
        Algorithm::Sequential => "side-memory-sequential",
        Algorithm::Optimal => "side-memory-optimal",
        _ => "side-memory-rotor",
    }
}

/// The slowest strategy's step plays in this many seconds; the others, on
/// the same clock, finish earlier: the race is the lesson.
const RACE_SECONDS: f64 = 8.0;
/// The race's clock ticks this often.
const TICK: Duration = Duration::from_millis(40);

/// `shown`: whether another part of the page (the lesson's step) has the
/// strategies shown, as the button would.
#[component]
pub fn SideBySide(#[prop(optional, into)] shown: Option<Signal<bool>>) -> impl IntoView {
    let state = use_app();
    // Asked once, then kept: what does not depend on the budget (the fixed
    // three, rotor's table) is built once per chain; a budget move reads
    // rotor's table and, on short chains, searches the optimum.
    let asked = RwSignal::new(false);
    if let Some(shown) = shown {
        Effect::new(move |_| {
            if shown.get() {
                asked.set(true);
            }
        });
    }
    let classic = Memo::new(move |_| {
        asked
            .get()
            .then(|| ArcHandle(Arc::new(Classic::new(&state.loaded.chain.get()))))
    });
    let strategies = Memo::new(move |_| {
        let budget = state.controls.budget.get();
        classic.with(|c| c.as_ref().map(|c| ArcHandle(Arc::new(c.0.at(budget)))))
    });
    let top = Signal::derive(move || {
        let budget = state.controls.budget.get();
        strategies.with(|f| f.as_ref().map_or(budget, |f| shared_top(&f.0, budget)))
    });
    // One time axis for all: it ends at the slowest one's makespan.
    let end =
        Signal::derive(move || strategies.with(|f| f.as_ref().map_or(0.0, |f| shared_end(&f.0))));
    let cursor = Cursor {
        time: RwSignal::new(None),
        step: RwSignal::new(None),
    };
    let racing = RwSignal::new(false);
    run_race(racing, cursor.time, end);
    // Issue 45: recompute-all's long step squeezes the others into the left
    // of a shared time axis; each chart may take its own instead.
    let own_time = RwSignal::new(false);
    let rows = move || {
        let budget = state.controls.budget.get_untracked();
        let shared_end = (!own_time.get()).then_some(end);
        strategies.get().map(|four| {
            let four = four.0;
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
                        end: shared_end,
                    };
                    let current = s.current.clone();
                    let now = move || cursor.time.get().map(|t| now_line(&current, t));
                    view! {
                        <div class="side-row" id=format!("side-{}", s.algorithm.name())
                            data-peak=peak.map(|p| p.to_string()).unwrap_or_default()
                            data-seconds=seconds.map(|(t, _)| t.to_string()).unwrap_or_default()
                            data-segments=s.segments.map(|k| k.to_string()).unwrap_or_default()>
                            <h3>{math_text(&s.label)}<span class=if fits { "muted" } else { "over" }>{format!(" — {numbers}")}</span></h3>
                            <p class="side-now muted">{move || now().map(|l| math_text(&l))}</p>
                            // Two to a row on a slide: words 2.5× larger there (≥ 18 px at 1920 × 1080).
                            <MemoryChart axis measured=Signal::derive(|| None)
                                id=chart_id(s.algorithm) shared_top=top slide_text=2.5 />
                        </div>
                    }
                })
                .collect_view()
        })
    };
    let optimum_note = move || {
        let n = state.loaded.chain.with(|c| c.len());
        (n > MAX_OPTIMAL_STAGES).then(|| {
            format!(
                " The exact optimum over every schedule joins on chains up to {MAX_OPTIMAL_STAGES} stages (this one has {n}); rotor is the optimum among persistent schedules — those that compute each ā^ℓ once per backward — and Compare searches the exact one on request up to 18 stages."
            )
        })
    };
    view! {
        <section class="card" id="side-by-side">
            <CardHead title="Strategies side by side">
                // The key of its memory curves, on its slide too (issue 45).
                {card_key(legend::MEMORY_SHADES)}
                {legend::budget_key()}
                <button id="classic-four" on:click=move |_| asked.set(true)
                    disabled=move || asked.get()>"Show the classic four"</button>
                <button id="side-race" class="primary" disabled=move || !asked.get()
                    aria-pressed=move || racing.get().to_string()
                    title="Play the steps on one clock: each chart's cursor at the same time"
                    on:click=move |_| racing.update(|r| *r = !*r)>
                    {move || if racing.get() { "❚❚ Pause" } else { "▶ Race them" }}
                </button>
                <button id="side-own-time" disabled=move || !asked.get()
                    aria-pressed=move || own_time.get().to_string()
                    title="One time axis for all (a faster step ends earlier), or each chart on its own step's length (every step fills its chart; compare the times in the headings)"
                    on:click=move |_| own_time.update(|o| *o = !*o)>
                    {move || if own_time.get() { "One time axis" } else { "Each its own time axis" }}
                </button>
            </CardHead>
            <p class="hint">{move || math_text(&format!(
                "Keep everything, keep only a^0, √n (⌈√L⌉ equal segments: Chen et al.'s answer, which assumes equal layers) and rotor at the budget (chains up to {MAX_ROTOR_STAGES} stages). One memory axis for all, the dashed line the page's budget; {}{}",
                if own_time.get() {
                    "each chart on its own time axis: every step fills its chart, so compare the step times in the headings."
                } else {
                    "one time axis for all: a faster step ends earlier."
                },
                optimum_note().unwrap_or_default()
            ))}</p>
            <div class="side-rows">{rows}</div>
        </section>
    }
}

/// A cheaply cloned, never-equal handle, so that a `Memo` of it notifies on
/// every recomputation (the strategies hold no `PartialEq`).
#[derive(Clone)]
struct ArcHandle<T>(Arc<T>);

impl<T> PartialEq for ArcHandle<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The race's clock: while `racing`, moves `time` across `0..=end` in
/// [`RACE_SECONDS`], wrapping to the start.
fn run_race(racing: RwSignal<bool>, time: RwSignal<Option<f64>>, end: Signal<f64>) {
    let handle = StoredValue::new_local(None::<IntervalHandle>);
    Effect::new(move |_| {
        let on = racing.get();
        if let Some(h) = handle.get_value() {
            h.clear();
        }
        handle.set_value(None);
        if on {
            let tick = move || {
                let end = end.get_untracked();
                let step = end * TICK.as_secs_f64() / RACE_SECONDS;
                time.update(|t| *t = Some(race_step(*t, step, end)));
            };
            handle.set_value(set_interval_with_handle(tick, TICK).ok());
        }
    });
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
                    || {
                        format!(
                            "Rotor is not solved here for chains over {MAX_ROTOR_STAGES} stages"
                        )
                    },
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

/// Predict, then reveal, with the budget: the student drags to where they
/// think rotor's step takes twice the no-limit time, then sees where it
/// does (or that it never does on this chain) and rotor's time at theirs.
#[component]
pub fn TimeDoubles() -> impl IntoView {
    let state = use_app();
    let (low, high) = (state.loaded.m_low, state.loaded.m_high);
    // The guess, as a share of M_low … M_high (the slider's own scale).
    let share = RwSignal::new(0.5);
    let revealed = RwSignal::new(false);
    Effect::new(move |_| {
        state.loaded.chain.track();
        revealed.set(false);
    });
    let guessed = move || {
        let (lo, hi) = (low.get() as f64, high.get() as f64);
        (lo + share.get() * (hi - lo)).round() as u64
    };
    let result = move || {
        if !revealed.get() {
            return None;
        }
        let chain = state.loaded.chain.get();
        // Rotor's table only: the fixed strategies play no part here.
        let rotor = RotorTable::new(&chain);
        let mine = guessed();
        let base = chain.sequential_seconds();
        let at_mine = rotor.as_ref().and_then(|r| r.seconds(mine)).map_or_else(
            || "no schedule".to_string(),
            |t| format!("{} (+{:.1} %)", ms(t), 100.0 * (t / base - 1.0)),
        );
        let doubling = rotor
            .as_ref()
            .map_or(Doubling::NotSolved, RotorTable::doubling);
        let (line, at) = match doubling {
            Doubling::At(b) => {
                let off = 100.0 * (mine as f64 - b as f64) / (high.get() - low.get()).max(1) as f64;
                (
                    format!(
                        "Rotor's step takes twice the no-limit time ({}) below {}: you were {:+.1} % of the slider's range off. At your {} rotor takes {at_mine}.",
                        ms(2.0 * base),
                        bytes(b),
                        off,
                        bytes(mine)
                    ),
                    b.to_string(),
                )
            }
            Doubling::Never { overhead_at_low } => (
                format!(
                    "On this chain rotor's step never doubles: even at the least memory it is only +{:.1} %. At your {} it takes {at_mine}.",
                    100.0 * overhead_at_low,
                    bytes(mine)
                ),
                String::new(),
            ),
            Doubling::NotSolved => (
                format!("Rotor is not solved here for chains over {MAX_ROTOR_STAGES} stages."),
                String::new(),
            ),
        };
        Some(view! { <p id="double-result" data-budget=at><b>{line}</b></p> })
    };
    view! {
        <section class="card" id="time-doubles">
            <CardHead title="Your guess: where does the time double?">
                <button id="double-reveal" class="primary" on:click=move |_| revealed.set(true)>"Reveal"</button>
            </CardHead>
            <p class="hint">"Drag to the budget where you think rotor's step takes twice as long as keeping everything, then reveal where it does."</p>
            <p class="double-guess">
                <input type="range" id="double-slider" min="0" max="1000" aria-label="Your guess: the budget where the time doubles"
                    prop:value=move || (share.get() * 1000.0).round().to_string()
                    on:input=move |ev| {
                        share.set(event_target_value(&ev).parse::<f64>().unwrap_or(500.0) / 1000.0);
                        revealed.set(false);
                    } />
                <span id="double-guess" data-budget=move || guessed().to_string()>{move || bytes(guessed())}</span>
            </p>
            {result}
        </section>
    }
}
