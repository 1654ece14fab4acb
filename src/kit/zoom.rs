//! The time window the charts over the step share: the wheel zooms it
//! around the pointer, a drag pans it, a button resets it.

use super::scale::{CHART_W, MARGIN_L, PLOT_W};
use leptos::prelude::*;

/// The part of the schedule's time the memory chart and the timelines
/// show, as fractions of the makespan: one window for both, so zooming or
/// panning one moves the other (they share the time axis).
#[derive(Clone, Copy)]
pub struct TimeZoom {
    window: RwSignal<(f64, f64)>,
    /// Where a drag started: the pointer's x (px) and the window then.
    drag: RwSignal<Option<(f64, (f64, f64))>>,
}

/// The narrowest window: 1/2000 of the makespan (a 300-stage step's op).
const MIN_WINDOW: f64 = 5e-4;

impl TimeZoom {
    pub fn new() -> TimeZoom {
        TimeZoom {
            window: RwSignal::new((0.0, 1.0)),
            drag: RwSignal::new(None),
        }
    }

    /// The window (tracked).
    pub fn get(self) -> (f64, f64) {
        self.window.get()
    }

    /// The window, untracked (a pointer event reads it).
    pub fn get_untracked(self) -> (f64, f64) {
        self.window.get_untracked()
    }

    pub fn zoomed(self) -> bool {
        self.window.with(|&(lo, hi)| lo > 0.0 || hi < 1.0)
    }

    pub fn reset(self) {
        self.window.set((0.0, 1.0));
    }

    /// Scales the window by `factor` (< 1 zooms in) around the point
    /// `at` of the way across the plot, kept inside [0, 1].
    pub fn zoom(self, at: f64, factor: f64) {
        self.window.update(|w| {
            let span = w.1 - w.0;
            let new = (span * factor).clamp(MIN_WINDOW, 1.0);
            let pivot = w.0 + at.clamp(0.0, 1.0) * span;
            *w = fit(pivot - at.clamp(0.0, 1.0) * new, new);
        });
    }

    pub(super) fn start_drag(self, px: f64) {
        self.drag.set(Some((px, self.window.get_untracked())));
    }

    /// Moves the window with the pointer: `px` in pixels, `width` the
    /// plot's width in pixels.
    pub(super) fn dragged(self, px: f64, plot_px: f64) {
        if let Some((from, (lo, hi))) = self.drag.get_untracked() {
            let shift = (px - from) / plot_px.max(1.0) * (hi - lo);
            if shift != 0.0 {
                self.window.set(fit(lo - shift, hi - lo));
            }
        }
    }

    pub(super) fn end_drag(self) {
        self.drag.set(None);
    }
}

impl Default for TimeZoom {
    fn default() -> Self {
        TimeZoom::new()
    }
}

/// A window `span` wide starting near `lo`, moved inside [0, 1].
fn fit(lo: f64, span: f64) -> (f64, f64) {
    let lo = lo.clamp(0.0, 1.0 - span);
    (lo, if span >= 1.0 { 1.0 } else { lo + span })
}

/// Wheel over a zoomable chart: in (up) or out (down) by a fixed step
/// around the pointer — with Ctrl or ⌘ held (a trackpad pinch arrives as
/// Ctrl + wheel), or once a click has focused the chart. A plain wheel
/// scrolls the page: a lecture scrolled past a chart must not stick on it.
pub(super) fn listen_wheel(el: &web_sys::SvgElement, zoom: TimeZoom) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    let target: web_sys::Element = el.clone().unchecked_into();
    let handler = Closure::<dyn Fn(web_sys::WheelEvent)>::new(move |ev: web_sys::WheelEvent| {
        let focused = target
            .owner_document()
            .and_then(|d| d.active_element())
            .is_some_and(|a| a == target);
        if !(ev.ctrl_key() || ev.meta_key() || focused) {
            return;
        }
        let rect = target.get_bounding_client_rect();
        if rect.width() <= 0.0 || ev.delta_y() == 0.0 {
            return;
        }
        ev.prevent_default();
        let x = (ev.client_x() as f64 - rect.left()) / rect.width() * CHART_W;
        let factor = if ev.delta_y() < 0.0 { 0.8 } else { 1.25 };
        zoom.zoom((x - MARGIN_L) / PLOT_W, factor);
    });
    let options = web_sys::AddEventListenerOptions::new();
    options.set_passive(false);
    let _ = el.add_event_listener_with_callback_and_add_event_listener_options(
        "wheel",
        handler.as_ref().unchecked_ref(),
        &options,
    );
    // The chart lives as long as the page.
    handler.forget();
}

/// The reset button of the zoomed charts: back to the whole schedule.
#[component]
pub fn ZoomReset(id: &'static str, zoom: TimeZoom) -> impl IntoView {
    view! {
        <button class="small zoom-reset" id=id disabled=move || !zoom.zoomed()
            title="Show the whole step again"
            on:click=move |_| zoom.reset()>"Reset zoom"</button>
        <span class="zoom-hint muted" title="Ctrl + wheel or a pinch zooms (or click the chart, then the wheel); a drag pans">"Ctrl + wheel zooms, drag pans"</span>
    }
}
