//! A short built-in guide to the operations, told with the teaching chain
//! (10 equal stages: F 10 ms, B 20 ms, a^ℓ 64 MiB, ā^ℓ 128 MiB).

use crate::state::{use_app, ChainSource};
use leptos::prelude::*;
use remat_core::examples;

/// 572 MiB: tight enough that rotor recomputes, as the guide's example says.
pub(crate) const TIGHT_BUDGET: u64 = 600_000_000;

/// An op name with a subscript and the stage as superscript: F_all^ℓ.
#[component]
fn OpName(base: &'static str, sub: &'static str, sup: &'static str) -> impl IntoView {
    view! { <span class="opn">{base}<sub>{sub}</sub><sup>{sup}</sup></span> }
}

/// Loads the teaching chain at the guide's tight budget, with its own host
/// link: the guide's text reasons at 12 GB/s, and a budget given to
/// `load_chain` keeps the previous chain's link (issue 26 found the guide
/// at another chain's bandwidth).
pub fn load_teaching_chain(state: crate::state::AppState) {
    let chain = examples::teaching();
    let link = chain.bandwidth_bytes_per_s.unwrap_or(0.0);
    state.load_chain(
        chain,
        ChainSource::Example("teaching".into()),
        Some(TIGHT_BUDGET),
    );
    state.controls.bandwidth.set(link);
}

#[component]
pub fn Guide() -> impl IntoView {
    let state = use_app();
    let load_teaching = move |play: bool| {
        load_teaching_chain(state);
        if play {
            state.view.playing.set(true);
            // Show the charts the step-through highlights (below the sticky stepper).
            if let (Some(w), Some(el)) = (
                web_sys::window(),
                leptos::prelude::document().get_element_by_id("chain-svg"),
            ) {
                let top = el.get_bounding_client_rect().top() + w.scroll_y().unwrap_or(0.0);
                w.scroll_to_with_x_and_y(0.0, (top - 190.0).max(0.0));
            }
        }
    };
    view! {
        <section class="card guide" id="guide">
            <details open=false>
                <summary><h2>"Guide: how checkpointing trades time for memory"</h2></summary>
                <p>
                    "Training runs every stage forward (F), then backward (B) in reverse order. "
                    "B" <sup>"ℓ"</sup> " needs what F" <sup>"ℓ"</sup> " saved (ā" <sup>"ℓ"</sup> "). "
                    "Keeping everything is fastest but needs the most memory (M_high); a checkpointing "
                    "schedule keeps less and recomputes the rest."
                </p>
                <p>
                    "The " <b>"teaching chain"</b> " has 10 equal stages: each forward takes 10 ms, each backward 20 ms, "
                    "each output a" <sup>"ℓ"</sup> " is 64 MiB and what a backward needs, ā" <sup>"ℓ"</sup> ", is 128 MiB. "
                    "Keeping everything costs 300 ms and 1.38 GiB; the least any schedule can do with is 384 MiB. "
                    <button class="small" id="guide-load" on:click=move |_| load_teaching(false)>"Load it at 572 MiB"</button>
                    " "
                    <button class="small" id="guide-play" on:click=move |_| load_teaching(true)>"… and step through it"</button>
                </p>
                <dl>
                    <dt class="c-fwd"><OpName base="F" sub="all" sup="ℓ" /></dt>
                    <dd>"Forward through stage ℓ and keep ā" <sup>"ℓ"</sup> " for the backward: 10 ms, +128 MiB until B"
                        <sup>"ℓ"</sup> " frees it. The chain draws such a stage as " <em>"kept"</em> " (blue)."</dd>
                    <dt class="c-ck"><OpName base="F" sub="ck" sup="ℓ" /></dt>
                    <dd>"Forward without saving ā" <sup>"ℓ"</sup> ", but keep the input a" <sup>"ℓ−1"</sup>
                        " (64 MiB) as a " <em>"checkpoint"</em> " (orange): the stages after it can be recomputed from there."</dd>
                    <dt class="c-rec"><OpName base="F" sub="∅" sup="ℓ" /></dt>
                    <dd>"Forward keeping nothing but the running output: the input is freed. The stage is "
                        <em>"recomputed"</em> " (vermilion) when the backward pass comes back to it — another 10 ms each time."</dd>
                    <dt class="c-bwd"><OpName base="B" sub="" sup="ℓ" /></dt>
                    <dd>"Back-propagate through stage ℓ (20 ms): uses δ" <sup>"ℓ"</sup> ", ā" <sup>"ℓ"</sup>
                        " and the input, frees them, produces δ" <sup>"ℓ−1"</sup> "."</dd>
                    <dt class="c-off">"Offload"</dt>
                    <dd>"Copy a tensor to host memory on the PCIe lane, next to the compute: a 64 MiB a"
                        <sup>"ℓ"</sup> " takes 5.6 ms at 12 GB/s. Its GPU memory is freed when the copy ends."</dd>
                    <dt class="c-pre">"Prefetch"</dt>
                    <dd>"Copy it back before it is needed; if it arrives late, the GPU waits (hatched idle time in the timeline)."</dd>
                </dl>
                <p>
                    "At 572 MiB rotor takes 420 ms (+40 %): it keeps a few checkpoints, recomputes the stages "
                    "between them (12 recomputations, vermilion in the timeline), and its peak, 512 MiB, stays under the "
                    "dashed budget line. Slide towards 384 MiB and it recomputes more; towards 1.38 GiB and it keeps everything. "
                    "Now choose pofo: at 12 GB/s it offloads checkpoints while the forward pass runs and prefetches them "
                    "during the backward pass (the PCIe lane), so the same 572 MiB costs 300 ms — no recomputation, no overhead. "
                    "Lower the bandwidth and it mixes in recomputation again; the sweep below draws that trade-off for every budget and link."
                </p>
            </details>
        </section>
    }
}
