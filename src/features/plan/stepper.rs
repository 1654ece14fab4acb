//! Step through the schedule op by op; the op is highlighted in every view.

use crate::kit::format::ms;
use crate::kit::legend::PageLegend;
use crate::kit::notation::math_text;
use crate::kit::widgets::SpeedSelect;
use crate::planning::menus;
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::schedule::captions;
use wasm_bindgen::JsCast;

/// Whether some of the stepper is on screen (it is sticky, so it is while
/// the page around it is).
fn stepper_in_view() -> bool {
    // The stepper sits under the figures it steps through: any of them on
    // screen will do (at 1366×768 the chain and the memory curve are, the
    // stepper is a scroll below), as will Learn's graph, which steps the
    // same cursor.
    let Some(w) = web_sys::window() else {
        return false;
    };
    let h = w
        .inner_height()
        .ok()
        .and_then(|h| h.as_f64())
        .unwrap_or(0.0);
    let doc = leptos::prelude::document();
    [
        "stepper",
        "chain-svg",
        "memory-svg",
        "timeline-svg",
        "graph-svg",
    ]
    .iter()
    .filter_map(|id| doc.get_element_by_id(id))
    .any(|el| {
        let r = el.get_bounding_client_rect();
        r.bottom() > 0.0 && r.top() < h
    })
}

#[component]
pub fn Stepper() -> impl IntoView {
    let state = use_app();
    let n_ops = move || {
        state
            .shown
            .current
            .with(|c| c.as_ref().map_or(0, |c| c.ops().len()))
    };
    let go = move |i: Option<usize>| state.go_to_step(i);
    // ←/→ step and space plays or pauses, from anywhere on the page while
    // the stepper or a figure is in view — but never while focus is in a field that
    // takes those keys itself (text, select, the slider), and space is left
    // to a focused button or link (it would click it twice).
    let _ = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.alt_key() || ev.ctrl_key() || ev.meta_key() || ev.default_prevented() {
            return;
        }
        let key = ev.key();
        let target = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok());
        let tag = target
            .as_ref()
            .map(|t| t.tag_name().to_ascii_lowercase())
            .unwrap_or_default();
        let editable = matches!(tag.as_str(), "input" | "select" | "textarea")
            || target
                .as_ref()
                .is_some_and(|t| t.has_attribute("contenteditable"));
        let clickable = matches!(tag.as_str(), "button" | "a" | "summary");
        if editable || !stepper_in_view() {
            return;
        }
        match key.as_str() {
            "ArrowLeft" => state.step_by(-1),
            "ArrowRight" => state.step_by(1),
            " " if !clickable => state.play_pause(),
            _ => return,
        }
        ev.prevent_default();
    });
    // Each op said in its context (a recomputation with its count and the
    // backward it is for): computed once per schedule, and only once read.
    let captions = Memo::new(move |_| {
        state.shown.current.with(|c| {
            c.as_ref()
                .map(|c| captions(c.ops(), c.chain.len()))
                .unwrap_or_default()
        })
    });
    let current = move || {
        let i = state.view.step.get()?;
        let c = state.shown.current.get()?;
        let op = *c.ops().get(i)?;
        let span = c.ok_trace().and_then(|t| t.spans.get(i).copied());
        let caption = captions.with(|all| all.get(i).cloned())?;
        // An F_all running a menu option says its policy (issue 41).
        let policy = menus::op_policy(&c.chain, &op);
        Some((i, op, span, caption, policy))
    };
    view! {
        <section id="stepper" aria-label="Step through the schedule"
            // While stepping, the controls stay at the foot of the window
            // as the figures above them scroll.
            class=move || if state.view.step.get().is_some() { "card stepper stepping" } else { "card stepper" }>
            <div class="step-controls">
                <h2>"Step through"</h2>
                <button id="step-first" title="First op" aria-label="First op" on:click=move |_| go(Some(0))>"|◀"</button>
                <button id="step-prev" title="Previous op (←)" aria-label="Step back" on:click=move |_| state.step_by(-1)>"◀"</button>
                <button id="step-play" class="primary" title="Play or pause (space)"
                    aria-label=move || if state.view.playing.get() { "Pause" } else { "Play" }
                    on:click=move |_| state.play_pause()>{move || if state.view.playing.get() { "❚❚ Pause" } else { "▶ Play" }}</button>
                <button id="step-next" title="Next op (→)" aria-label="Step forward" on:click=move |_| state.step_by(1)>"▶"</button>
                <button id="step-last" title="Last op" aria-label="Last op" on:click=move |_| go(n_ops().checked_sub(1))>"▶|"</button>
                <button id="step-clear" title="Leave step mode" aria-label="Leave step mode" on:click=move |_| { state.view.playing.set(false); go(None) }>"✕"</button>
                <SpeedSelect id="step-speed" label="Playback speed" speed=state.view.speed />
            </div>
            <PageLegend parameter_gradients=Signal::derive(move || {
                state.loaded.chain.with(|c| c.counts_parameter_gradients())
            }) />
            <div id="step-explain" class="step-explain" aria-live="polite">
                {move || match current() {
                    Some((i, op, span, caption, policy)) => view! {
                        <span class="opname" data-op=op.to_string()>
                            {format!("op {} / {} · ", i + 1, n_ops())}{math_text(&op.to_string())}
                            {policy.map(|p| view! { <span class="op-policy" title="the menu option's policy">{format!(" {p}")}</span> })}
                        </span>
                        <span class="step-caption" data-caption=caption.clone()>{math_text(&caption)}</span>
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
