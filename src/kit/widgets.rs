//! Small controls and legend pieces the cards share: switches, selects,
//! card headings, progress, a worker task's Run/Cancel, swatches.

use super::notation::math_text;
use super::svg::{line_key_svg, Marker};
use leptos::prelude::*;

/// A little legend entry.
#[component]
pub fn Swatch(color: &'static str, label: &'static str) -> impl IntoView {
    view! {
        <span class="swatch">
            <i style=format!("background:{color}")></i>
            // One flex item: the sub/superscripts must not get the gap.
            <span>{math_text(label)}</span>
        </span>
    }
}

/// A legend's entries: (colour, label in caret notation).
pub fn swatches(entries: &[(&'static str, &'static str)]) -> impl IntoView {
    (entries.iter())
        .map(|&(color, label)| view! { <Swatch color label /> })
        .collect_view()
}

/// A checkbox that switches a card's mode on and off, with its words.
#[component]
pub fn Switch(id: &'static str, on: RwSignal<bool>, label: &'static str) -> impl IntoView {
    view! {
        <label class="toggle">
            <input id=id type="checkbox" prop:checked=move || on.get()
                on:change=move |ev| on.set(event_target_checked(&ev)) />
            {label}
        </label>
    }
}

/// A labelled select of named choices (value, words) that reports the
/// value picked.
#[component]
pub fn ChoiceSelect(
    id: &'static str,
    label: &'static str,
    choices: Vec<(&'static str, &'static str)>,
    #[prop(into)] value: Signal<String>,
    on_pick: Callback<String>,
) -> impl IntoView {
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <select id=id prop:value=move || value.get() on:change=move |ev| on_pick.run(event_target_value(&ev))>
                {choices.into_iter().map(|(v, words)| view! { <option value=v>{words}</option> }).collect_view()}
            </select>
        </div>
    }
}

/// The speeds playback offers, in operations per second, with their words.
pub const PLAYBACK_SPEEDS: [(f64, &str); 5] = [
    (1.0, "1 op/s"),
    (2.0, "2 ops/s"),
    (4.0, "4 ops/s"),
    (10.0, "10 ops/s"),
    (40.0, "40 ops/s"),
];

/// Playback's speed, in operations per second: every view that plays
/// binds the same `speed`, so each shows the speed the other chose;
/// `label` names it apart from the others' for screen readers.
#[component]
pub fn SpeedSelect(id: &'static str, label: &'static str, speed: RwSignal<f64>) -> impl IntoView {
    view! {
        <select id=id title=label aria-label=label
            prop:value=move || speed.get().to_string()
            on:change=move |ev| {
                if let Ok(v) = event_target_value(&ev).parse() {
                    speed.set(v);
                }
            }>
            {PLAYBACK_SPEEDS
                .into_iter()
                .map(|(v, words)| view! { <option value=v.to_string()>{words}</option> })
                .collect_view()}
        </select>
    }
}

/// The option value of the preset equal to `value`, or "" (custom).
pub fn preset_value<T: PartialEq + ToString>(presets: &[(T, &str)], value: &T) -> String {
    presets
        .iter()
        .find(|(v, _)| v == value)
        .map(|(v, _)| v.to_string())
        .unwrap_or_default()
}

/// A chart card's heading: the title, then the legend.
#[component]
pub fn CardHead(title: &'static str, children: Children) -> impl IntoView {
    view! {
        <div class="card-head">
            <h2>{title}</h2>
            <div class="legend">{children()}</div>
        </div>
    }
}

/// How far some work is: a bar and a percentage.
#[component]
pub fn ProgressBar(#[prop(into)] id: String, fraction: Signal<f64>) -> impl IntoView {
    view! {
        <progress id=id max="1" value=fraction></progress>
        <span>{move || format!("{:.0} %", fraction.get() * 100.0)}</span>
    }
}

/// The control of a long task in the worker (the offloading sweep, the
/// max-batch search): a button that starts it, then its progress and a
/// Cancel, under the ids `{id}-run`, `{id}-progress` and `{id}-cancel`.
#[component]
pub fn TaskControl(
    id: &'static str,
    running: Memo<bool>,
    fraction: Signal<f64>,
    /// The button's words (they change once there is a result).
    label: Signal<&'static str>,
    on_run: Callback<()>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let (progress, cancel, run) = (
        format!("{id}-progress"),
        format!("{id}-cancel"),
        format!("{id}-run"),
    );
    move || match running.get() {
        true => view! {
            <span class="status building">
                <ProgressBar id=progress.clone() fraction=fraction />
                <button id=cancel.clone() on:click=move |_| on_cancel.run(())>"Cancel"</button>
            </span>
        }
        .into_any(),
        false => view! {
            <button id=run.clone() on:click=move |_| on_run.run(()) title="Runs in a Web Worker">
                {move || label.get()}
            </button>
        }
        .into_any(),
    }
}

/// A legend entry for a line: its dash and marker as drawn.
#[component]
pub fn LineSwatch(
    color: &'static str,
    dash: &'static str,
    marker: Marker,
    label: &'static str,
) -> impl IntoView {
    view! {
        <span class="swatch line-swatch">
            <svg width="30" height="12" viewBox="0 0 30 12" aria-hidden="true"
                inner_html=line_key_svg(1.0, 6.0, 28.0, color, dash, marker)></svg>
            <span>{label}</span>
        </span>
    }
}
