//! The scale controls: batch size, sequence length (token models) and
//! precision of a built-in example, or batch and precision of an imported
//! chain (with the batch and precision it was profiled at, which a
//! remat-chain/1 file does not record), rescaled by the core's linear rule
//! (`crate::sizing::scaling`); the page says what that rule leaves out.

use crate::sizing::scaling::{imported_profile, ExampleScale, MAX_BATCH, MAX_SEQUENCE};
use crate::state::{use_app, ChainSource};
use leptos::prelude::*;
use remat_core::examples::{self, Precision, Profile};

/// A count typed into a control, within `1..=max`; the error names it.
fn parse_control(name: &str, text: &str, max: u64) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{name}: \"{}\" is not a whole number from 1 to {max}",
            text.trim()
        )),
    }
}

/// The profile the card scales from: an example's own, or what the user
/// says of an imported chain (batch 1, fp32 unsaid); None: nothing to
/// scale (a hand-made example).
fn profile_of(source: &ChainSource, scale: &ExampleScale) -> Option<Profile> {
    match source {
        ChainSource::Example(name) => examples::find(name).and_then(|e| e.profile),
        ChainSource::Imported => Some(imported_profile(scale)),
    }
}

/// A labelled whole-number box, `1..=max`.
fn count_input(
    id: &'static str,
    label: &'static str,
    value: u64,
    max: u64,
    on_change: impl Fn(leptos::ev::Event) + 'static,
) -> impl IntoView {
    view! {
        <label class="toggle">{label}
            <input id=id type="number" min="1" max=max.to_string() step="1"
                prop:value=value.to_string() on:change=on_change />
        </label>
    }
}

/// A labelled fp32/bf16 picker.
fn precision_select(
    id: &'static str,
    label: &'static str,
    value: Precision,
    on_change: impl Fn(leptos::ev::Event) + 'static,
) -> impl IntoView {
    view! {
        <label class="toggle">{label}
            <select id=id prop:value=value.name() on:change=on_change>
                {Precision::ALL.iter().map(|q| view! { <option value=q.name()>{q.name()}</option> }).collect_view()}
            </select>
        </label>
    }
}

#[component]
pub fn ScaleControls() -> impl IntoView {
    let state = use_app();
    let error = RwSignal::new(None::<String>);
    // Applies a change to the scale: the chain is loaded again from its
    // profile (an imported chain from the original as imported, never from
    // the scaled one); the budget goes half-way into the new range.
    let reload = move |change: &dyn Fn(&mut ExampleScale)| {
        let mut scale = state.loaded.scale.get_untracked();
        change(&mut scale);
        let done = match state.loaded.source.get_untracked() {
            ChainSource::Example(name) => state.load_example(&name, scale, None),
            ChainSource::Imported => state.rescale_imported(scale),
        };
        error.set(done.err());
    };
    move || {
        let source = state.loaded.source.get();
        let s = state.loaded.scale.get();
        let p = profile_of(&source, &s)?;
        let imported = source == ChainSource::Imported;
        let (batch, sequence, precision) = (
            s.batch.unwrap_or(p.batch),
            s.sequence.or(p.sequence),
            s.precision.unwrap_or(p.precision),
        );
        // A typed count (batch or sequence) into the scale, or its error.
        let on_count = move |name: &'static str, max: u64, put: fn(&mut ExampleScale, u64)| {
            move |ev: leptos::ev::Event| match parse_control(name, &event_target_value(&ev), max) {
                Ok(n) => reload(&|s| put(s, n)),
                Err(e) => error.set(Some(e)),
            }
        };
        let on_precision = move |put: fn(&mut ExampleScale, Precision)| {
            move |ev: leptos::ev::Event| {
                if let Some(v) = Precision::from_name(&event_target_value(&ev)) {
                    reload(&|s| put(s, v));
                }
            }
        };
        let on_batch = on_count("batch", MAX_BATCH, |s, n| s.batch = Some(n));
        let on_sequence = on_count("sequence length", MAX_SEQUENCE, |s, n| s.sequence = Some(n));
        let reset = move |_| reload(&|s| *s = s.as_profiled());
        // An imported chain: first what it was profiled at, as the user says.
        let stated = imported.then(|| {
            let on_profiled = on_count("profiled at batch", MAX_BATCH, |s, n| {
                s.profiled.batch = Some(n)
            });
            view! {
                {count_input("profiled-batch-input", "profiled at batch ", p.batch, MAX_BATCH, on_profiled)}
                {precision_select("profiled-precision-select", "in ", p.precision,
                    on_precision(|s, v| s.profiled.precision = Some(v)))}
                <span class="scale-arrow" aria-hidden="true">"→"</span>
            }
        });
        let title = if imported {
            "Scale the imported chain"
        } else {
            "Scale the example"
        };
        let profiled_line = if imported {
            "A remat-chain/1 file records neither its batch nor its precision: say what it was profiled at (batch 1, fp32 until you do).".to_string()
        } else {
            format!(
                "profiled at batch {}{}, {}",
                p.batch,
                p.sequence
                    .map(|s| format!(", sequence {s}"))
                    .unwrap_or_default(),
                p.precision.name()
            )
        };
        Some(view! {
            <section class="card scale" id="scale-controls" aria-label=title>
                <div class="scale-row">
                    <strong>{title}</strong>
                    {stated}
                    {count_input("batch-input", "batch ", batch, MAX_BATCH, on_batch)}
                    {sequence.map(|s| count_input("seq-input", "sequence length ", s, MAX_SEQUENCE, on_sequence))}
                    {precision_select("precision-select", "precision ", precision,
                        on_precision(|s, v| s.precision = Some(v)))}
                    {(!imported).then(|| view! { <span class="muted" id="scale-profiled">{profiled_line.clone()}</span> })}
                    {(!s.is_profiled()).then(|| view! { <button id="scale-reset" on:click=reset>"As profiled"</button> })}
                </div>
                {imported.then(|| view! { <p class="hint" id="scale-profiled">{profiled_line}</p> })}
                {move || error.get().map(|e| view! { <p class="err" role="alert">{e}</p> })}
                <p class="hint" id="scale-rule">
                    "Linear in the batch: every activation size and time × new ÷ profiled batch"
                    {sequence.map(|_| "; the sequence length likewise, though attention scores grow with its square (math attention: a longer sequence is understated)")}
                    ". bf16 halves every size and keeps the times"
                    {imported.then_some(" (fp32 → bf16: sizes × ½; bf16 → fp32: × 2)")}
                    "."
                </p>
                <details class="scale-more">
                    <summary>"What the linear rule leaves out"</summary>
                    <p class="hint">"Parameter gradients (inside o_b) do not grow with the batch, so a scaled-up chain overstates o_b a little; a small batch does not fill the GPU, so times grow less than linearly from it and kernels change with the shape; a real device's bf16 speed-up depends on its tensor cores. Two profiles at two batches give a better, affine model."</p>
                </details>
            </section>
        })
    }
}
