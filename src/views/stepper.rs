//! Step through the schedule op by op; the op is highlighted in every view.

use super::chart::ms;
use super::notation::math_text;
use crate::state::use_app;
use leptos::prelude::*;
use std::time::Duration;

#[component]
pub fn Stepper() -> impl IntoView {
    let state = use_app();
    let n_ops = move || {
        state
            .shown
            .current
            .with(|c| c.as_ref().map_or(0, |c| c.ops().len()))
    };
    // Moving the step moves the shared cursor to the op's start.
    let go = move |i: Option<usize>| {
        state.view.step.set(i);
        let t = i.and_then(|i| {
            state.shown.current.with_untracked(|c| {
                c.as_ref()
                    .and_then(|c| c.ok_trace())
                    .and_then(|t| t.spans.get(i))
                    .map(|s| (s.start + s.end) / 2.0)
            })
        });
        state.view.cursor.set(t);
    };
    let step_by = move |d: isize| {
        let n = n_ops();
        if n == 0 {
            return;
        }
        let next = match state.view.step.get_untracked() {
            None if d > 0 => 0,
            None => n - 1,
            Some(i) => (i as isize + d).clamp(0, n as isize - 1) as usize,
        };
        go(Some(next));
    };
    let speed = RwSignal::new(4.0f64);
    let handle = StoredValue::new_local(None::<IntervalHandle>);
    Effect::new(move |_| {
        let playing = state.view.playing.get();
        let ops_per_s = speed.get();
        if let Some(h) = handle.get_value() {
            h.clear();
        }
        handle.set_value(None);
        if playing {
            let h = set_interval_with_handle(
                move || {
                    let n = n_ops();
                    match state.view.step.get_untracked() {
                        Some(i) if i + 1 >= n => state.view.playing.set(false),
                        _ => step_by(1),
                    }
                },
                Duration::from_millis((1000.0 / ops_per_s) as u64),
            )
            .ok();
            handle.set_value(h);
        }
    });
    let current = move || {
        let i = state.view.step.get()?;
        let c = state.shown.current.get()?;
        let op = *c.ops().get(i)?;
        let span = c.ok_trace().and_then(|t| t.spans.get(i).copied());
        Some((i, op, span))
    };
    view! {
        <section class="card stepper">
            <div class="step-controls">
                <h2>"Step through"</h2>
                <button id="step-first" title="First op" on:click=move |_| go(Some(0))>"|◀"</button>
                <button id="step-prev" title="Previous op" on:click=move |_| step_by(-1)>"◀"</button>
                <button id="step-play" class="primary" on:click=move |_| {
                    if !state.view.playing.get_untracked() && state.view.step.get_untracked().is_some_and(|i| i + 1 >= n_ops()) {
                        go(Some(0));
                    }
                    state.view.playing.update(|p| *p = !*p)
                }>{move || if state.view.playing.get() { "❚❚ Pause" } else { "▶ Play" }}</button>
                <button id="step-next" title="Next op" on:click=move |_| step_by(1)>"▶"</button>
                <button id="step-last" title="Last op" on:click=move |_| go(n_ops().checked_sub(1))>"▶|"</button>
                <button id="step-clear" title="Leave step mode" on:click=move |_| { state.view.playing.set(false); go(None) }>"✕"</button>
                <select title="Playback speed" on:change=move |ev| speed.set(event_target_value(&ev).parse().unwrap_or(4.0))>
                    <option value="2">"2 ops/s"</option>
                    <option value="4" selected=true>"4 ops/s"</option>
                    <option value="10">"10 ops/s"</option>
                    <option value="40">"40 ops/s"</option>
                </select>
            </div>
            <div id="step-explain" class="step-explain">
                {move || match current() {
                    Some((i, op, span)) => view! {
                        <span class="opname" data-op=op.to_string()>
                            {format!("op {} / {} · ", i + 1, n_ops())}{math_text(&op.to_string())}
                        </span>
                        <span>{math_text(&op.explain())}</span>
                        <span class="muted">{span.map(|s| format!("{} → {}", ms(s.start), ms(s.end))).unwrap_or_default()}</span>
                    }.into_any(),
                    None => view! {
                        <span class="muted">"Press ▶ to walk through the schedule one operation at a time; each view highlights the current op."</span>
                    }.into_any(),
                }}
            </div>
        </section>
    }
}
