//! One colour per meaning, used by every view and by the page's one legend.
//! Okabe–Ito hues (told apart with every common colour-vision deficiency);
//! `TEXT_*` are darker shades of the same hues for text on white (≥ 4.5:1,
//! WCAG AA), `label_on` the text colour for a label on a fill.

use remat_core::Op;

pub const FORWARD: &str = "#0072b2";
pub const RECOMPUTE: &str = "#d55e00";
pub const BACKWARD: &str = "#009e73";
pub const OFFLOAD: &str = "#cc79a7";
pub const PREFETCH: &str = "#56b4e9";
/// R: a dynamic runtime's release (eviction), a tick on the GPU lane.
pub const RELEASE: &str = "#000000";
/// Chain: F_all in the forward phase (ā kept).
pub const KEPT: &str = FORWARD;
/// F_∅: a forward that keeps nothing (the chain's dropped stages).
pub const NOTHING_KEPT: &str = RECOMPUTE;
/// Chain: F_ck (input kept as a checkpoint).
pub const CHECKPOINT: &str = "#e69f00";
/// Memory: ā^ℓ, a^ℓ, δ^ℓ, workspace (two shades to tell neighbours
/// apart; ā's second is darker, as a lighter blue read as PREFETCH).
pub const SAVED: [&str; 2] = [FORWARD, "#00527f"];
pub const ACTIVATION: [&str; 2] = [CHECKPOINT, "#f0c050"];
pub const GRADIENT: [&str; 2] = [BACKWARD, "#4dbb9d"];
pub const WORKSPACE: &str = "#a4adb8";
/// Memory: g^ℓ, the parameter gradients a backward leaves to the step's
/// end: a darker shade of the backward's green, one band for all of them.
pub const PARAMETER_GRADIENT: &str = "#1f5f4c";
/// The colour of a kind of op or tensor, one meaning per colour in
/// every view: an op and the tensor it leaves share a hue.
pub fn of_kind(kind: &str) -> &'static str {
    match kind {
        "F_all" | "ā" => FORWARD,
        "F_ck" | "a" => CHECKPOINT,
        "F_∅" => RECOMPUTE,
        "B" | "δ" => BACKWARD,
        "g" => PARAMETER_GRADIENT,
        "offload" => OFFLOAD,
        "prefetch" => PREFETCH,
        "release" => RELEASE,
        _ => WORKSPACE,
    }
}

/// The budget line and its label (5.95:1 on white).
pub const BUDGET: &str = "#b8322c";
pub const CURSOR: &str = "#1d2430";

/// Black or white, whichever reads on `fill` (≥ 4.5:1 for every fill
/// above: white on FORWARD 5.19, black on RECOMPUTE 5.43, ink on the
/// light ones 4.56 to 6.92).
pub fn label_on(fill: &str) -> &'static str {
    match fill {
        FORWARD => "#ffffff",
        RECOMPUTE => "#000000",
        _ => CURSOR,
    }
}

/// A measured run over the memory curve: the predicted line in the page's
/// ink; the measured one reddish purple, away from the bands' blue, orange
/// and green.
pub const PREDICTED: &str = CURSOR;
pub const MEASURED: &str = "#cc79a7";

/// Hong's optimal set (the minimum memory mode): its curve and its marks on
/// the layer chain.
pub const OPTIMAL: &str = "#0f766e";

/// An op's colour: its kind's, in every view (F_all blue as the ā^ℓ it
/// keeps, F_ck orange as its a^ℓ, F_∅ vermilion, B green as δ^ℓ). A
/// recomputation keeps its kind's colour and is striped over
/// ([`recompute_stripes`](super::svg::recompute_stripes)): before issue 26 the timeline painted every
/// re-forward vermilion and every F_ck blue, against the chain's colours.
pub fn op_color(op: &Op) -> &'static str {
    of_kind(op_kind(op))
}

/// An op's kind, as the views' `data-kind` and the legends name it.
pub fn op_kind(op: &Op) -> &'static str {
    match op {
        Op::ForwardAll { .. } => "F_all",
        Op::ForwardCheckpoint { .. } => "F_ck",
        Op::ForwardNone { .. } => "F_∅",
        Op::Backward { .. } => "B",
        Op::Offload { .. } => "offload",
        Op::Prefetch { .. } => "prefetch",
        Op::Release { .. } => "release",
    }
}
