//! The page's one legend: what each colour means, for ops (chain,
//! timelines) and tensors (memory) alike — the same hue for a stage kept
//! by F_all and its ā^ℓ, a checkpoint F_ck and its a^ℓ, a backward and its
//! δ^ℓ. It sits in the sticky stepper, so it is on screen beside every chart.

use super::chart::{palette, swatches};
use leptos::prelude::*;

/// (colour, label in caret notation), in the order of a training step.
pub const ENTRIES: [(&str, &str); 8] = [
    (palette::FORWARD, "forward, kept F_all · ā^ℓ saved"),
    (palette::CHECKPOINT, "checkpoint F_ck · a^ℓ activation"),
    (palette::NOTHING_KEPT, "F_∅ nothing kept"),
    (palette::BACKWARD, "backward · δ^ℓ gradient"),
    (palette::OFFLOAD, "offload"),
    (palette::PREFETCH, "prefetch"),
    (palette::RELEASE, "release R (evicted)"),
    (palette::WORKSPACE, "workspace"),
];

#[component]
pub fn PageLegend() -> impl IntoView {
    view! {
        <div id="page-legend" class="legend page-legend" role="group" aria-label="Colours in every chart">
            {swatches(&ENTRIES)}
            <span class="swatch"><i class="stripes"></i>"striped: recomputed"</span>
            <span class="swatch"><i class="dash"></i>"budget"</span>
            <span class="swatch"><i class="hatch"></i>"GPU idle"</span>
        </div>
    }
}
