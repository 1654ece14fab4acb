//! How each algorithm is drawn in the figures of lines (the compare curves,
//! the sweep, max batch, their legends and exports): its colour, dash and
//! marker. A kit piece: it reads no app state and imports no view.

use super::svg::Marker;
use super::widgets::LineSwatch;
use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// Each algorithm's colour in the figures of lines.
pub fn alg_color(a: Algorithm) -> &'static str {
    match a {
        Algorithm::StoreAll => "#7b8594",
        Algorithm::RecomputeAll => "#74b816",
        Algorithm::Sequential => "#0f9fb0",
        Algorithm::Revolve => "#b0469c",
        Algorithm::Rotor => "#1f5fbf",
        Algorithm::Pofo => "#e8590c",
        Algorithm::OffloadOnly => "#7048e8",
        Algorithm::Opportunist => "#2f9e44",
        Algorithm::Autocapper => "#c2255c",
        Algorithm::Hong => "#a0522d",
        Algorithm::HongChen => "#d4a017",
        Algorithm::Dtr => "#862e9c",
        Algorithm::Delta => "#087f5b",
        Algorithm::DeltaLru => "#5f3dc4",
        Algorithm::DeltaGreedy => "#495057",
        Algorithm::Optimal => "#000000",
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
