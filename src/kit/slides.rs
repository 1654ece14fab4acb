//! How much larger than its geometry a chart writes its words. Two places
//! draw charts small: a slide (a lesson on a projector), where a chart
//! drawn two to a row must still be read from the back of a room (issue
//! 45: ≥ 18 px), and a phone, where a 1200-unit chart is drawn at least
//! 720 px wide in a card that scrolls sideways (`main.css`, ≤ 600 px), 0.6
//! px a unit: its 11- and 12-unit words would be 7 px. The app shell provides
//! [`Presenting`] and [`Narrow`]; a chart reads them through
//! [`text_factor`] with the factor its caller gives for slides. Kit
//! signals, not app state.

use leptos::prelude::*;

/// True while the page presents a lesson.
#[derive(Clone, Copy)]
pub struct Presenting(pub Signal<bool>);

/// True while the page is as narrow as a phone (the CSS's 600 px).
#[derive(Clone, Copy)]
pub struct Narrow(pub Signal<bool>);

/// Words on a phone: the smallest, 11 units, × 0.6 px × 1.55 = 10.2 px.
pub const PHONE_TEXT: f64 = 1.55;

/// The width at and below which the page is laid out for a phone (the
/// `@media (max-width: 600px)` rules of `main.css`).
pub const NARROW_PX: f64 = 600.0;

/// `on_slides` while presenting, [`PHONE_TEXT`] on a phone, 1 otherwise
/// (and where nothing provides either).
pub fn text_factor(on_slides: f64) -> Signal<f64> {
    let presenting = use_context::<Presenting>();
    let narrow = use_context::<Narrow>();
    Signal::derive(move || match (presenting, narrow) {
        (Some(p), _) if p.0.get() => on_slides,
        (_, Some(n)) if n.0.get() => PHONE_TEXT,
        _ => 1.0,
    })
}

/// Whether the window is [`NARROW_PX`] wide or less now.
pub fn window_is_narrow() -> bool {
    (window().inner_width().ok())
        .and_then(|w| w.as_f64())
        .is_some_and(|w| w <= NARROW_PX)
}

/// [`window_is_narrow`], followed as the window is resized or turned.
pub fn narrow_window() -> Signal<bool> {
    let narrow = RwSignal::new(window_is_narrow());
    let handle = window_event_listener(leptos::ev::resize, move |_| {
        let now = window_is_narrow();
        if narrow.get_untracked() != now {
            narrow.set(now);
        }
    });
    // The page's lifetime: the shell never unmounts.
    std::mem::forget(handle);
    narrow.into()
}
