//! Whether the page is being presented (a lesson on a projector). A chart
//! drawn small there — the side-by-side strategies, two to a row — must
//! still be read from the back of a room (issue 45: ≥ 18 px), so it writes
//! its words larger than its geometry while presenting. The app shell
//! provides [`Presenting`]; a chart reads it through [`text_factor`] with
//! the factor its caller gives for slides. A kit signal, not app state.

use leptos::prelude::*;

/// True while the page presents a lesson.
#[derive(Clone, Copy)]
pub struct Presenting(pub Signal<bool>);

/// `on_slides` while presenting, 1 otherwise (and where nothing provides
/// [`Presenting`]).
pub fn text_factor(on_slides: f64) -> Signal<f64> {
    let presenting = use_context::<Presenting>();
    Signal::derive(move || match presenting {
        Some(p) if p.0.get() => on_slides,
        _ => 1.0,
    })
}
