//! A short built-in guide to the operations, using the teaching chain.

use crate::state::{AppState, ChainSource};
use leptos::prelude::*;
use remat_core::examples;

#[component]
pub fn Guide(state: AppState) -> impl IntoView {
    let load_teaching = move |_| {
        let chain = examples::teaching();
        state.load_chain(chain, ChainSource::Example("teaching".into()), None);
    };
    view! {
        <section class="card guide" id="guide">
            <details open=false>
                <summary><h2>"Guide: how checkpointing trades time for memory"</h2></summary>
                <p>
                    "Training runs every stage forward (F), then backward (B) in reverse order. "
                    "B^ℓ needs what F^ℓ saved (ā^ℓ). Keeping everything is fastest but needs the most memory (M_high); "
                    "a checkpointing schedule keeps less and recomputes the rest. "
                    <button class="small" on:click=load_teaching>"Load the teaching chain"</button>
                    " (10 equal stages: F 10 ms, B 20 ms, a^ℓ 64 MiB, ā^ℓ 128 MiB) and slide the budget down."
                </p>
                <dl>
                    <dt><b class="c-fwd">"F_all^ℓ"</b></dt>
                    <dd>"Forward through stage ℓ and keep everything its backward needs (ā^ℓ). The chain draws such a stage as "<em>"kept"</em>"."</dd>
                    <dt><b class="c-ck">"F_ck^ℓ"</b></dt>
                    <dd>"Forward without saving ā^ℓ, but keep the input a^{ℓ-1} as a "<em>"checkpoint"</em>": the segment after it can be recomputed from there."</dd>
                    <dt><b class="c-rec">"F_∅^ℓ"</b></dt>
                    <dd>"Forward keeping nothing: the input is dropped. The stage is "<em>"recomputed"</em>" later, when the backward pass reaches it."</dd>
                    <dt><b class="c-bwd">"B^ℓ"</b></dt>
                    <dd>"Back-propagate through stage ℓ: uses δ^ℓ, ā^ℓ and the input, frees them, produces δ^{ℓ-1}."</dd>
                    <dt><b class="c-off">"Offload O"</b></dt>
                    <dd>"Copy a tensor to host memory over PCIe (the second lane); its GPU memory is freed when the copy ends."</dd>
                    <dt><b class="c-pre">"Prefetch P"</b></dt>
                    <dd>"Copy it back before it is needed; if it arrives late, the GPU waits (hatched idle time)."</dd>
                </dl>
                <p class="muted">
                    "With the teaching chain at a tight budget, rotor keeps a few checkpoints (amber), "
                    "recomputes the segments between them (orange in the timeline) and its peak stays under the dashed budget line. "
                    "Offloading algorithms use the bandwidth control; the current ones do not move bytes."
                </p>
            </details>
        </section>
    }
}
