//! The lesson, in the *Learn* place (issue 27, point 3; the steps are
//! `crate::teaching::lesson_steps`), and the presentation that shows it to a room: figures
//! only, large type, the keys of a clicker or a keyboard to advance.
//!
//! A step is a link: going to it writes its view into the URL's hash
//! (`lesson=N` with the chain, algorithm, budget and link), and the page
//! applies it as it applies any link it arrives at (`app::url`), so Back
//! returns to the previous step and a copied link opens the same one.

use crate::kit::notation::math_text;
use crate::kit::widgets::CardHead;
use crate::planning::protocol::Stage;
use crate::state::use_app;
use crate::teaching::lesson_steps::{answer, view_of, Figures, ShownPlan, STEPS};
use crate::text::link::{format_hash, with_lesson};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Where the lesson is: its step (0-based; None while closed) and whether
/// the page presents it. The shell provides it; the URL holds it.
#[derive(Clone, Copy)]
pub struct Lesson {
    pub step: RwSignal<Option<usize>>,
    pub presenting: RwSignal<bool>,
}

impl Lesson {
    pub fn new() -> Lesson {
        Lesson {
            step: RwSignal::new(None),
            presenting: RwSignal::new(false),
        }
    }

    /// Whether the step's view shows the strategies side by side (tracked).
    pub fn shows_side_by_side(self) -> bool {
        self.step
            .get()
            .and_then(|i| STEPS.get(i))
            .is_some_and(|s| s.figures == Figures::SideBySide)
    }

    /// Goes to step `i` (0-based), presenting or not, through its link.
    pub fn go(self, i: usize, presenting: bool) {
        if let (Some(hash), Some(w)) = (step_link(i, presenting), web_sys::window()) {
            let _ = w.location().set_hash(&hash);
        }
    }

    /// The next (+1) or previous (−1) step, if there is one. Counted from
    /// the step the URL names: it changes at once, while the page applies
    /// it a moment later (two quick presses advance twice).
    fn advance(self, by: isize) {
        let asked = crate::io::read_url().lesson.map(|n| n - 1);
        let at = asked
            .or(self.step.get_untracked())
            .map_or(-1, |i| i as isize);
        let next = at + by;
        if (0..STEPS.len() as isize).contains(&next) {
            self.go(next as usize, self.presenting.get_untracked());
        }
    }

    /// Leaves the presentation, staying at the step.
    fn stop_presenting(self) {
        match self.step.get_untracked() {
            Some(i) => self.go(i, false),
            None => self.presenting.set(false),
        }
    }

    /// The rules that keep the step's figures on the slide (the others
    /// are in `main.css`: a presenting page hides everything else).
    fn slide_css(self) -> &'static str {
        match self.step.get().and_then(|i| STEPS.get(i)).map(|s| s.figures) {
            Some(Figures::SideBySide) => {
                "main.presenting #place-learn > #side-by-side { display: block !important; }"
            }
            Some(Figures::MemoryAndTimelines) => {
                "main.presenting > #figure-memory, main.presenting > #figure-timelines { display: block !important; }"
            }
            None => "",
        }
    }
}

impl Default for Lesson {
    fn default() -> Self {
        Lesson::new()
    }
}

/// Step `i`'s link (the hash, with its `#`).
pub fn step_link(i: usize, presenting: bool) -> Option<String> {
    let step = STEPS.get(i)?;
    let view = view_of(i)?;
    Some(with_lesson(
        format_hash(step.chain, step.algorithm, view.budget, view.bandwidth),
        Some(i + 1),
        presenting,
    ))
}

/// Next / previous from the keys while presenting: → PageDown space, ←
/// PageUp (a presentation clicker sends PageDown and PageUp), Esc leaves.
/// Listened to in the capture phase, ahead of the step-through's ←/→.
fn listen_keys(lesson: Lesson) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let handler =
        Closure::<dyn Fn(web_sys::KeyboardEvent)>::new(move |ev: web_sys::KeyboardEvent| {
            if !lesson.presenting.get_untracked() || ev.alt_key() || ev.ctrl_key() || ev.meta_key()
            {
                return;
            }
            let tag = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .map(|t| t.tag_name().to_ascii_lowercase())
                .unwrap_or_default();
            if matches!(tag.as_str(), "input" | "select" | "textarea") {
                return;
            }
            match ev.key().as_str() {
                "ArrowRight" | "PageDown" | " " => lesson.advance(1),
                "ArrowLeft" | "PageUp" => lesson.advance(-1),
                "Escape" => lesson.stop_presenting(),
                _ => return,
            }
            ev.prevent_default();
            ev.stop_propagation();
        });
    let _ = window.add_event_listener_with_callback_and_bool(
        "keydown",
        handler.as_ref().unchecked_ref(),
        true,
    );
    // The page's lifetime.
    handler.forget();
}

#[component]
pub fn LessonCard() -> impl IntoView {
    let state = use_app();
    let lesson = expect_context::<Lesson>();
    listen_keys(lesson);
    let revealed = RwSignal::new(false);
    Effect::new(move |_| {
        lesson.step.track();
        revealed.set(false);
    });
    let shown_answer = move || {
        let i = lesson.step.get()?;
        if !revealed.get() {
            return None;
        }
        let chain = state.loaded.chain.get();
        let budget = state.controls.budget.get();
        // The page's own plan, once it is the step's algorithm's and its
        // final answer (not pofo's quick one, refined a moment later).
        let algorithm = STEPS.get(i).map(|s| s.algorithm);
        let shown = state.shown.current.with(|c| {
            let c = c.as_ref()?;
            let settled = c.planned.stage != Stage::Quick && Some(c.planned.algorithm) == algorithm;
            settled.then(|| {
                c.ok_trace().map(|t| ShownPlan {
                    seconds: t.makespan_seconds,
                    link: c.planned.bandwidth,
                })
            })?
        });
        Some(answer(i, &chain, budget, shown))
    };
    let contents = move || {
        match lesson.step.get() {
        None => view! {
            <p class="hint">"Five steps for a 15-minute lecture, each a view of this page and one question. Present shows the figures alone in large type; → or a clicker advances, Esc leaves."</p>
            <ol class="lesson-steps">
                {(0..STEPS.len()).map(|i| view! {
                    <li><a class="lesson-link" href=step_link(i, false).unwrap_or_default()>{STEPS[i].title}</a></li>
                }).collect_view()}
            </ol>
        }
        .into_any(),
        Some(i) => {
            let step = &STEPS[i.min(STEPS.len() - 1)];
            view! {
                <p class="lesson-count muted">{format!("Step {} of {}", i + 1, STEPS.len())}</p>
                <h3 class="lesson-title">{format!("{}. {}", i + 1, step.title)}</h3>
                <p class="lesson-text">{math_text(step.text)}</p>
                <p class="lesson-question"><b>"Question: "</b>{math_text(step.question)}</p>
                <p>
                    <button id="lesson-reveal" class="small" on:click=move |_| revealed.set(true)
                        disabled=move || revealed.get()>"Show the answer"</button>
                </p>
                {move || shown_answer().map(|a| view! { <p id="lesson-answer" class="lesson-answer">{math_text(&a)}</p> })}
            }
            .into_any()
        }
    }
    };
    view! {
        <style>{move || lesson.slide_css()}</style>
        <section class="card lesson" id="lesson" data-step=move || lesson.step.get().map(|i| (i + 1).to_string()).unwrap_or_default()>
            <CardHead title="A lesson: checkpointing in five steps">
                <button id="lesson-prev" class="small" disabled=move || lesson.step.get().is_none_or(|i| i == 0)
                    on:click=move |_| lesson.advance(-1)>"◀ Previous"</button>
                <button id="lesson-next" class="small primary" disabled=move || lesson.step.get().is_some_and(|i| i + 1 >= STEPS.len())
                    on:click=move |_| lesson.advance(1)>
                    {move || if lesson.step.get().is_none() { "Start ▶" } else { "Next ▶" }}
                </button>
                <button id="lesson-present" class="small" aria-pressed=move || lesson.presenting.get().to_string()
                    title="Figures only, large type; → or a clicker advances, Esc leaves"
                    on:click=move |_| if lesson.presenting.get_untracked() {
                        lesson.stop_presenting()
                    } else {
                        lesson.go(lesson.step.get_untracked().unwrap_or(0), true)
                    }>
                    {move || if lesson.presenting.get() { "Leave the presentation" } else { "Present" }}
                </button>
            </CardHead>
            {contents}
        </section>
    }
}
