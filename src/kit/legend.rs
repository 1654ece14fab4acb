//! The page's one legend: what each colour means, for ops (chain,
//! timelines) and tensors (memory) alike — the same hue for a stage kept
//! by F_all and its ā^ℓ, a checkpoint F_ck and its a^ℓ, a backward and its
//! δ^ℓ. It sits in the sticky stepper, so it is on screen beside every chart.
//!
//! Each chart's own legend, drawn into its exported figure, is here too
//! ([`CHAIN`], [`MEMORY`], [`TIMELINES`]): the figure frame (`figure.rs`)
//! reads them from here, so it imports none of the charts that use it.

use super::notation::math_text;
use super::palette;
use super::widgets::swatches;
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

/// The chain's legend: (colour, label in caret notation), for its
/// exported figure.
pub const CHAIN: &[(&str, &str)] = &[
    (palette::KEPT, "kept (F_all)"),
    (palette::CHECKPOINT, "checkpointed input (F_ck)"),
    (palette::NOTHING_KEPT, "dropped (F_∅)"),
    (palette::OFFLOAD, "offloaded"),
];

/// The memory chart's legend (the budget line apart), for its exported
/// figure.
pub const MEMORY: &[(&str, &str)] = &[
    (palette::SAVED[0], "ā^ℓ saved for backward"),
    (palette::ACTIVATION[0], "a^ℓ activation / checkpoint"),
    (palette::GRADIENT[0], "δ^ℓ gradient"),
    (palette::WORKSPACE, "workspace"),
];

/// The memory legend's entry for g^ℓ, shown only for a chain that counts
/// parameter gradients (most chains do not).
pub const PARAMETER_GRADIENTS: (&str, &str) = (
    palette::PARAMETER_GRADIENT,
    "g^ℓ parameter gradients, kept to the end",
);

/// The memory card's key beside its chart: each tensor kind in both of its
/// shades (neighbouring bands alternate them), so that every band drawn
/// is in it.
pub const MEMORY_SHADES: &[(&[&str], &str)] = &[
    (&palette::SAVED, "ā^ℓ saved"),
    (&palette::ACTIVATION, "a^ℓ activation"),
    (&palette::GRADIENT, "δ^ℓ gradient"),
    (&[palette::WORKSPACE], "workspace"),
];

/// The timelines' legend (idle apart), for their exported figure: colours
/// by op kind, as in the chain and the memory curve; a recomputation is
/// striped (a key of its own).
pub const TIMELINES: &[(&str, &str)] = &[
    (palette::FORWARD, "F_all forward, ā kept"),
    (palette::CHECKPOINT, "F_ck checkpoint"),
    (palette::NOTHING_KEPT, "F_∅ nothing kept"),
    (palette::BACKWARD, "backward"),
    (palette::OFFLOAD, "offload"),
    (palette::PREFETCH, "prefetch"),
    (palette::RELEASE, "release R (evicted)"),
];

/// The max-batch figure's note (its bars carry their own labels), for
/// the panel and its exported figure.
pub const MAX_BATCH: &str = "Sizes and times at each batch come from the profiles (linear from one, affine through two); offloading uses the chain's own bandwidth.";

/// `parameter_gradients`: the loaded chain counts them (a band of its own
/// in the memory curve).
/// A figure's key in its card's heading, beside the chart (issue 45: at
/// 1366×768 the page's legend was below the fold): one swatch per entry,
/// a two-shade entry split in half.
pub fn card_key(entries: &[(&'static [&'static str], &'static str)]) -> impl IntoView {
    (entries.iter())
        .map(|&(colors, label)| {
            let background = match colors {
                [one] => one.to_string(),
                [a, b, ..] => format!("linear-gradient(90deg, {a} 50%, {b} 50%)"),
                [] => String::new(),
            };
            let title = (colors.len() > 1).then_some("two shades tell neighbouring tensors apart");
            view! {
                <span class="swatch" title=title>
                    <i style=format!("background:{background}")></i>
                    <span>{math_text(label)}</span>
                </span>
            }
        })
        .collect_view()
}

/// The key of g^ℓ's band, while `shown` (the chain counts them).
pub fn parameter_gradients_key(shown: Signal<bool>) -> impl IntoView {
    move || shown.get().then(|| swatches(&[PARAMETER_GRADIENTS]))
}

/// The budget's dashed line.
pub fn budget_key() -> impl IntoView {
    view! { <span class="swatch"><i class="dash"></i>"budget"</span> }
}

#[component]
pub fn PageLegend(#[prop(into)] parameter_gradients: Signal<bool>) -> impl IntoView {
    view! {
        <div id="page-legend" class="legend page-legend" role="group" aria-label="Colours in every chart">
            {swatches(&ENTRIES)}
            {parameter_gradients_key(parameter_gradients)}
            <span class="swatch"><i class="stripes"></i>"striped: recomputed"</span>
            {budget_key()}
            <span class="swatch"><i class="hatch"></i>"GPU idle"</span>
        </div>
    }
}
