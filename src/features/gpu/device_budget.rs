//! The device-memory view: from a GPU's memory to the activation budget
//! (GPU memory − weights − gradients − optimizer state − margin), with
//! "Use this budget" for the slider. The arithmetic is
//! `crate::sizing::device_memory`, tested on the host.

use crate::kit::format::bytes;
use crate::kit::widgets::{preset_value, CardHead, ChoiceSelect, Switch};
use crate::sizing::device_memory::{
    against_range, bytes_per_parameter, format_count, parse_count, parse_margin, Breakdown,
    DeviceInputs, ModelState, Optimizer, Weights, GPU_PRESETS,
};
use crate::state::{use_app, use_device_memory};
use leptos::prelude::*;
use remat_core::examples;
use remat_core::model::units::parse_size;
use remat_core::solvers::memory_floor;

/// The weights' and the optimizer's names of a counted state ("" if entered).
fn counted_choice(model: ModelState) -> (String, String) {
    match model {
        ModelState::Counted {
            weights, optimizer, ..
        } => (weights.name().into(), optimizer.name().into()),
        ModelState::Entered(_) => Default::default(),
    }
}

/// A text box that shows `shown` and commits what `parse` accepts, or
/// says why not (the error names the field).
#[component]
fn TypedField(
    id: &'static str,
    label: &'static str,
    title: &'static str,
    #[prop(into)] shown: Signal<String>,
    commit: Callback<String, Result<(), String>>,
) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        text.set(shown.get());
        error.set(None);
    });
    let apply = move || error.set(commit.run(text.get_untracked()).err());
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <input id=id class="typed" type="text" title=title prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
                on:change=move |_| apply()
                on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Enter" { apply() } />
            {move || error.get().map(|e| view! { <small class="err" role="alert">{e}</small> })}
        </div>
    }
}

/// One segment of the GPU bar.
fn segment(class: &'static str, part: u64, gpu: u64, label: String) -> impl IntoView {
    let width = if gpu == 0 {
        0.0
    } else {
        (part as f64 / gpu as f64 * 100.0).min(100.0)
    };
    view! {
        <span class=format!("seg {class}") style=format!("width:{width:.2}%") title=label.clone()></span>
    }
}

/// The equation, the bar and where the budget stands.
fn result(
    inputs: DeviceInputs,
    gradients_in_chain: bool,
    floor: u64,
    range: (u64, u64),
) -> AnyView {
    let b = Breakdown::of(&inputs, gradients_in_chain);
    let parts = match inputs.model {
        ModelState::Entered(total) => format!("{} model state (entered)", bytes(total)),
        // The chain counts them from the backward that creates them.
        ModelState::Counted { .. } if gradients_in_chain => format!(
            "{} weights − {} optimizer state (gradients: in the chain)",
            bytes(b.weights),
            bytes(b.optimizer)
        ),
        ModelState::Counted { .. } => format!(
            "{} weights − {} gradients − {} optimizer state",
            bytes(b.weights),
            bytes(b.gradients),
            bytes(b.optimizer)
        ),
    };
    let head = format!(
        "{} GPU − {parts} − {} margin",
        bytes(b.gpu),
        bytes(b.margin)
    );
    let bar = view! {
        <div class="gpu-bar" aria-hidden="true">
            {segment("seg-model", b.model_total, b.gpu, format!("model state {}", bytes(b.model_total)))}
            {segment("seg-margin", b.margin, b.gpu, format!("margin {}", bytes(b.margin)))}
            {segment("seg-act", b.activations().unwrap_or(0), b.gpu, "activations".into())}
        </div>
        <div class="legend gpu-legend" aria-hidden="true">
            <span class="swatch"><i class="seg-model"></i>"weights + gradients + optimizer state"</span>
            <span class="swatch"><i class="seg-margin"></i>"margin"</span>
            <span class="swatch"><i class="seg-act"></i>"activations (the budget)"</span>
        </div>
    };
    match b.activations() {
        Ok(act) => view! {
            <p class="device-eq">{head}" = "
                <b id="device-budget" data-bytes=act.to_string()>{format!("{} for activations", bytes(act))}</b>
            </p>
            {bar}
            <p class="hint" id="device-verdict">{format!("This budget is {}.", against_range(act, floor, range))}</p>
        }
        .into_any(),
        Err(e) => view! {
            <p class="device-eq">{head}</p>
            {bar}
            <p class="err" id="device-budget-error" role="alert">{format!("No activation budget: {}", crate::text::words::sentence_end(&e.to_string()))}</p>
        }
        .into_any(),
    }
}

#[component]
pub fn DeviceMemoryCard() -> impl IntoView {
    let state = use_app();
    let device = use_device_memory();
    let inputs = device.inputs;
    let set = move |f: &dyn Fn(&mut DeviceInputs)| inputs.update(|i| f(i));
    let counted = move || matches!(inputs.get().model, ModelState::Counted { .. });
    let commit_gpu = Callback::new(move |t: String| match parse_size(&t) {
        Ok(b) if b > 0 => {
            set(&|i| i.gpu_bytes = b);
            Ok(())
        }
        Ok(_) => Err("GPU memory: must be above 0".into()),
        Err(e) => Err(format!("GPU memory: {e}")),
    });
    let commit_params = Callback::new(move |t: String| {
        let n = parse_count(&t)?;
        set(&|i| {
            if let ModelState::Counted { parameters, .. } = &mut i.model {
                *parameters = n;
            }
        });
        Ok(())
    });
    let commit_state = Callback::new(move |t: String| {
        let b = parse_size(&t).map_err(|e| format!("model state: {e}"))?;
        set(&|i| i.model = ModelState::Entered(b));
        Ok(())
    });
    let commit_margin = Callback::new(move |t: String| {
        let m = parse_margin(&t)?;
        set(&|i| i.margin = m);
        Ok(())
    });
    let on_mode = move |ev: leptos::ev::Event| {
        let in_chain = state
            .loaded
            .chain
            .with_untracked(|c| c.counts_parameter_gradients());
        let total = Breakdown::of(&inputs.get_untracked(), in_chain).model_total;
        let value = event_target_value(&ev);
        set(&|i| {
            i.model = if value == "entered" {
                ModelState::Entered(total)
            } else {
                let parameters = examples::find(&state.loaded.source.get_untracked().name())
                    .and_then(|e| e.profile)
                    .map(|p| p.parameters)
                    .unwrap_or(0);
                DeviceInputs::new(parameters).model
            }
        });
    };
    // A weights or optimizer name (the two sets of names are apart).
    let pick = move |name: &str| {
        set(&|i| {
            if let ModelState::Counted {
                weights, optimizer, ..
            } = &mut i.model
            {
                *weights = Weights::from_name(name).unwrap_or(*weights);
                *optimizer = Optimizer::from_name(name).unwrap_or(*optimizer);
            }
        })
    };
    let example_count = move || {
        examples::find(&state.loaded.source.get().name())
            .and_then(|e| e.profile)
            .map(|p| format!("this example: {}", format_count(p.parameters)))
            .unwrap_or_else(|| "the chain states no parameter count".into())
    };
    let per_parameter = move || match inputs.get().model {
        ModelState::Counted {
            weights, optimizer, ..
        } => format!(
            "{} B per parameter: weights + gradients + optimizer state",
            bytes_per_parameter(weights, optimizer)
        ),
        ModelState::Entered(_) => String::new(),
    };
    let in_chain = move || state.loaded.chain.with(|c| c.counts_parameter_gradients());
    let activations = move || Breakdown::of(&inputs.get(), in_chain()).activations().ok();
    // Below the chain's floor the budget is refused, as a typed one is.
    let use_budget = move |_| {
        let checked = activations().and_then(|b| {
            state
                .loaded
                .chain
                .with_untracked(|c| state.checked_budget(c, b))
        });
        if let Some(b) = checked {
            state.controls.budget.set(b);
        }
    };
    view! {
        <section class="card" id="device-memory-card">
            <CardHead title="Device memory → activation budget">
                <Switch id="device-memory-toggle" on=device.on label="from a GPU's memory" />
            </CardHead>
            <p class="hint">
                "The memory budget counts what the chain describes: saved tensors ā, stage outputs a, gradients δ, workspaces, and the parameter gradients when the chain says its backwards create them (zero_grad(set_to_none=True)). "
                "The model's weights, the optimizer's state and any gradients kept across steps come on top, as does the allocator's margin."
            </p>
            <Show when=move || device.on.get()>
                <div class="device-grid">
                    <div class="field">
                        <label for="gpu-preset">"GPU memory preset"</label>
                        <select id="gpu-preset" prop:value=move || preset_value(&GPU_PRESETS, &inputs.get().gpu_bytes)
                            on:change=move |ev| {
                                if let Ok(b) = event_target_value(&ev).parse::<u64>() {
                                    set(&|i| i.gpu_bytes = b);
                                }
                            }>
                            {GPU_PRESETS.iter().map(|(b, name)| view! { <option value=b.to_string()>{*name}</option> }).collect_view()}
                            <option value="">"custom (typed)"</option>
                        </select>
                    </div>
                    <TypedField id="gpu-input" label="GPU memory, typed" title="e.g. 80 GiB, 79.6 GiB, 48e9"
                        shown=Signal::derive(move || bytes(inputs.get().gpu_bytes)) commit=commit_gpu />
                    <div class="field">
                        <label for="model-state-mode">"Model state"</label>
                        <select id="model-state-mode" prop:value=move || if counted() { "counted" } else { "entered" }
                            on:change=on_mode>
                            <option value="counted">"parameters × bytes"</option>
                            <option value="entered">"one size, entered"</option>
                        </select>
                    </div>
                    <Show when=counted fallback=move || view! {
                        <TypedField id="state-input" label="Weights + gradients + optimizer state" title="as measured, e.g. 2.1 GiB"
                            shown=Signal::derive(move || bytes(Breakdown::of(&inputs.get(), in_chain()).model_total)) commit=commit_state />
                    }>
                        <TypedField id="params-input" label="Parameters" title="e.g. 124M, 1.5B, 25557032"
                            shown=Signal::derive(move || match inputs.get().model {
                                ModelState::Counted { parameters, .. } => parameters.to_string(),
                                ModelState::Entered(_) => String::new(),
                            }) commit=commit_params />
                        <ChoiceSelect id="weights-select" label="Weights and gradients"
                            choices=Weights::ALL.iter().map(|w| (w.name(), w.label())).collect()
                            value=Signal::derive(move || counted_choice(inputs.get().model).0)
                            on_pick=Callback::new(move |v: String| pick(&v)) />
                        <ChoiceSelect id="optimizer-select" label="Optimizer state (× weights)"
                            choices=Optimizer::ALL.iter().map(|o| (o.name(), o.label())).collect()
                            value=Signal::derive(move || counted_choice(inputs.get().model).1)
                            on_pick=Callback::new(move |v: String| pick(&v)) />
                    </Show>
                    <TypedField id="margin-input" label="Allocator margin" title="a share of the GPU (1% by default, as remat maxbatch; about 10% without expandable segments) or a size (2 GiB)"
                        shown=Signal::derive(move || inputs.get().margin.to_string()) commit=commit_margin />
                </div>
                <p class="hint">{example_count}{move || if counted() { format!(" · {}", per_parameter()) } else { String::new() }}
                    " · weights and gradients: 4 B each in fp32, 2 B in bf16; the optimizer keeps × 0 (SGD), × 1 (momentum) or × 2 (Adam's two moments) of the weights' size; mixed precision keeps an fp32 master copy (ZeRO's 16 B per parameter with Adam). The margin covers the CUDA context (about 0.5 GiB, outside the allocator) and the caching allocator's fragmentation: 1 % by default, as remat maxbatch (what the reference H100 left unexplained with expandable segments on), about 10 % without them; compare torch.cuda.max_memory_reserved with max_memory_allocated on your run."</p>
                {move || result(inputs.get(), state.loaded.chain.with(|c| c.counts_parameter_gradients()), state.loaded.chain.with(|c| memory_floor(c).bytes), (state.loaded.m_low.get(), state.loaded.m_high.get()))}
                <div class="device-actions">
                    <button id="use-device-budget" class="primary" disabled=move || activations().is_none()
                        on:click=use_budget>"Use this budget"</button>
                    <span class="muted">"sets the memory budget above (activations only) to what the GPU leaves"</span>
                </div>
            </Show>
        </section>
    }
}
