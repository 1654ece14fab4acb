//! The scaled-example controls: batch size, sequence length (token models)
//! and precision of a built-in example, rescaled by the core's linear rule
//! (`crate::scaling`); the page says what that rule leaves out.

use crate::scaling::{ExampleScale, MAX_BATCH, MAX_SEQUENCE};
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

#[component]
pub fn ScaleControls() -> impl IntoView {
    let state = use_app();
    let profile = move || match state.loaded.source.get() {
        ChainSource::Example(name) => examples::find(&name).and_then(|e| e.profile),
        ChainSource::Imported => None,
    };
    let error = RwSignal::new(None::<String>);
    // Applies a change to the scale: the example is loaded again from its
    // profile (the budget goes half-way into the new range).
    let reload = move |change: &dyn Fn(&mut ExampleScale, &Profile)| {
        let ChainSource::Example(name) = state.loaded.source.get_untracked() else {
            return;
        };
        let Some(p) = examples::find(&name).and_then(|e| e.profile) else {
            return;
        };
        let mut scale = state.loaded.scale.get_untracked();
        change(&mut scale, &p);
        error.set(state.load_example(&name, scale, None).err());
    };
    let current = move |p: &Profile| {
        let s = state.loaded.scale.get();
        (
            s.batch.unwrap_or(p.batch),
            s.sequence.or(p.sequence),
            s.precision.unwrap_or(p.precision),
        )
    };
    move || {
        let p = profile()?;
        let (batch, sequence, precision) = current(&p);
        // A typed count (batch or sequence) into the scale, or its error.
        let on_count = move |name: &'static str, max: u64, put: fn(&mut ExampleScale, u64)| {
            move |ev: leptos::ev::Event| match parse_control(name, &event_target_value(&ev), max) {
                Ok(n) => reload(&|s, _| put(s, n)),
                Err(e) => error.set(Some(e)),
            }
        };
        let on_batch = on_count("batch", MAX_BATCH, |s, n| s.batch = Some(n));
        let on_sequence = on_count("sequence length", MAX_SEQUENCE, |s, n| s.sequence = Some(n));
        let on_precision = move |ev: leptos::ev::Event| {
            if let Some(v) = Precision::from_name(&event_target_value(&ev)) {
                reload(&|s, _| s.precision = Some(v));
            }
        };
        let reset = move |_| reload(&|s, _| *s = ExampleScale::default());
        let scaled = !state.loaded.scale.get().is_profiled();
        Some(view! {
            <section class="card scale" id="scale-controls" aria-label="Scale the example">
                <div class="scale-row">
                    <strong>"Scale the example"</strong>
                    <label class="toggle">"batch "
                        <input id="batch-input" type="number" min="1" max=MAX_BATCH.to_string() step="1"
                            prop:value=batch.to_string() on:change=on_batch />
                    </label>
                    {sequence.map(|s| view! {
                        <label class="toggle">"sequence length "
                            <input id="seq-input" type="number" min="1" max=MAX_SEQUENCE.to_string() step="1"
                                prop:value=s.to_string() on:change=on_sequence />
                        </label>
                    })}
                    <label class="toggle">"precision "
                        <select id="precision-select" prop:value=precision.name() on:change=on_precision>
                            {Precision::ALL.iter().map(|q| view! { <option value=q.name()>{q.name()}</option> }).collect_view()}
                        </select>
                    </label>
                    <span class="muted" id="scale-profiled">{format!(
                        "profiled at batch {}{}, {}",
                        p.batch,
                        p.sequence.map(|s| format!(", sequence {s}")).unwrap_or_default(),
                        p.precision.name()
                    )}</span>
                    {scaled.then(|| view! { <button id="scale-reset" on:click=reset>"As profiled"</button> })}
                </div>
                {move || error.get().map(|e| view! { <p class="err" role="alert">{e}</p> })}
                <p class="hint" id="scale-rule">
                    "Linear in the batch: every activation size and time × new ÷ profiled batch"
                    {sequence.map(|_| "; the sequence length likewise, though attention scores grow with its square (math attention: a longer sequence is understated)")}
                    ". bf16 halves every size and keeps the times."
                </p>
                <details class="scale-more">
                    <summary>"What the linear rule leaves out"</summary>
                    <p class="hint">"Parameter gradients (inside o_b) do not grow with the batch, so a scaled-up chain overstates o_b a little; a small batch does not fill the GPU, so times grow less than linearly from it and kernels change with the shape; a real device's bf16 speed-up depends on its tensor cores. Two profiles at two batches give a better, affine model."</p>
                </details>
            </section>
        })
    }
}
