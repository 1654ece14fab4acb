//! How each algorithm is drawn in the figures of lines (the compare curves,
//! the sweep, max batch, their legends and exports): its colour, dash and
//! marker. A kit piece: it reads no app state and imports no view.

use super::svg::Marker;
use super::widgets::LineSwatch;
use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// Each algorithm's colour in the figures of lines: a palette of its own
/// (issue 45), apart from the operations' and tensors' colours
/// (`palette.rs`: F_all blue, F_ck orange, F_∅ vermilion, B green,
/// offload pink, prefetch sky, release black, the budget's red) by at
/// least 0.12 in OKLab (ΔE_ok, where 0.02 is about the least a reader
/// sees), and from each other by at least 0.11. Chosen by a maximin search
/// over OKLCH (L 0.35–0.75, chroma ≤ 0.18, so no neon), then given out by
/// family: rotor, the reference, the deepest indigo; pofo and the
/// offloading heuristics violets to lilac; hong's two browns; the dynamic
/// runtimes dark olive, maroon, salmon and plum; optimal, the truth, a
/// dark wine (black is release's). figures.test.mjs checks the distances
/// on the page.
pub fn alg_color(a: Algorithm) -> &'static str {
    match a {
        Algorithm::StoreAll => "#8279a1",
        Algorithm::RecomputeAll => "#87c334",
        Algorithm::Sequential => "#767700",
        Algorithm::Revolve => "#b53989",
        Algorithm::Rotor => "#1d2496",
        Algorithm::Pofo => "#5e4bc3",
        Algorithm::OffloadOnly => "#a15acf",
        Algorithm::Opportunist => "#d887fb",
        Algorithm::Autocapper => "#488bfb",
        Algorithm::Hong => "#7f5944",
        Algorithm::HongChen => "#a78967",
        Algorithm::Dtr => "#443a10",
        Algorithm::Delta => "#861118",
        Algorithm::DeltaLru => "#fe8674",
        Algorithm::DeltaGreedy => "#6b4474",
        Algorithm::Optimal => "#680252",
    }
}

/// Each algorithm's dash: lines that lie on each other (rotor under pofo
/// where no transfer helps) stay visible as two patterns.
pub fn alg_dash(a: Algorithm) -> &'static str {
    match a {
        Algorithm::StoreAll => "1 3",
        Algorithm::RecomputeAll => "1 2 6 2",
        Algorithm::Sequential => "12 3 3 3",
        Algorithm::Revolve => "3 3",
        Algorithm::Rotor => "none",
        Algorithm::Pofo => "9 4",
        Algorithm::OffloadOnly => "2 2",
        Algorithm::Opportunist => "10 3 2 3",
        Algorithm::Autocapper => "5 2 1 2",
        Algorithm::Hong => "8 2 2 2 2 2",
        Algorithm::HongChen => "4 4 1 4",
        Algorithm::Dtr => "6 2",
        Algorithm::Delta => "2 4",
        Algorithm::DeltaLru => "6 2 2 2",
        Algorithm::DeltaGreedy => "14 4",
        // Long dashes, nearly solid: the reference the others are read
        // against, apart from rotor's solid line where the two coincide.
        Algorithm::Optimal => "16 3",
    }
}

/// Each algorithm's marker, drawn on its points.
pub fn alg_marker(a: Algorithm) -> Marker {
    match a {
        Algorithm::StoreAll => Marker::Circle,
        Algorithm::RecomputeAll => Marker::Square,
        Algorithm::Sequential => Marker::Square,
        Algorithm::Revolve => Marker::Diamond,
        Algorithm::Rotor => Marker::Ring,
        Algorithm::Pofo => Marker::Square,
        Algorithm::OffloadOnly => Marker::Triangle,
        Algorithm::Opportunist => Marker::Diamond,
        Algorithm::Autocapper => Marker::Cross,
        Algorithm::Hong => Marker::Triangle,
        Algorithm::HongChen => Marker::Circle,
        Algorithm::Dtr => Marker::Cross,
        Algorithm::Delta => Marker::Ring,
        Algorithm::DeltaLru => Marker::Triangle,
        Algorithm::DeltaGreedy => Marker::Diamond,
        Algorithm::Optimal => Marker::Square,
    }
}

/// A line of `alg` through `d`: drawn wider when it is the one shown, and
/// rotor (the reference the others are read against) wider still, so that
/// it shows around a line drawn on top of it.
pub fn alg_path(alg: Algorithm, d: &str, current: bool) -> String {
    let width = match (alg == Algorithm::Rotor, current) {
        (true, _) => 4.0,
        (false, true) => 3.0,
        (false, false) => 1.8,
    };
    format!(
        r##"<path class="alg-line" data-algorithm="{}" d="{d}" fill="none" stroke="{}" stroke-width="{width}" stroke-dasharray="{}" stroke-linejoin="round" stroke-opacity="{}"/>"##,
        alg.name(),
        alg_color(alg),
        alg_dash(alg),
        if alg == Algorithm::Rotor { 0.55 } else { 1.0 }
    )
}

/// The legend of a figure of lines: one key per algorithm, dashed and
/// marked as its line.
pub fn alg_keys(algorithms: impl IntoIterator<Item = Algorithm>) -> impl IntoView {
    (algorithms.into_iter())
        .map(|a| view! { <LineSwatch color=alg_color(a) dash=alg_dash(a) marker=alg_marker(a) label=a.name() /> })
        .collect_view()
}
