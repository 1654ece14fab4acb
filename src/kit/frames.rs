//! The `<svg>` frames charts are drawn in: a full-width chart (zoomable
//! when it is drawn against the step's time), a small curve chart, and the
//! heavy layer a chart redraws when its schedule changes.

use super::hover::{frame_x, TimeAxis, TimeHover};
use super::scale::{Frame, CHART_W, PLOT_W};
use super::timing::mark;
use super::zoom::listen_wheel;
use crate::planning::current::Current;
use leptos::prelude::*;
use std::sync::Arc;

/// A full-width chart against the page's coordinates: a white ground, the
/// heavy `layer` (one string of SVG, redrawn when the schedule changes),
/// then `children` (cursors, highlights) over it. A chart on a time `axis`
/// (one against the schedule's time) zooms with the wheel around the pointer
/// and pans with a drag, in the window it shares with the others, and says
/// which times it shows (`data-t0`, `data-t1`, seconds).
#[component]
pub fn ChartSvg(
    id: &'static str,
    height: f64,
    #[prop(into)] layer: Signal<String>,
    on_move: Callback<leptos::ev::MouseEvent>,
    on_leave: Callback<()>,
    /// What the chart shows, in one sentence, for screen readers.
    #[prop(optional, into)]
    summary: Option<Signal<String>>,
    /// The shared time axis of a chart against the schedule's time: it
    /// zooms and pans.
    #[prop(optional)]
    axis: Option<TimeAxis>,
    children: Children,
) -> impl IntoView {
    let zoomable = axis.is_some();
    let zoom = axis.map(|a| a.zoom);
    let node = NodeRef::<leptos::svg::Svg>::new();
    if let Some(zoom) = zoom {
        // Not through Leptos' delegated `on:wheel`: a listener on the
        // document is passive, and the page would scroll as it zooms.
        Effect::new(move |done: Option<bool>| {
            if done == Some(true) {
                return true;
            }
            let Some(el) = node.get() else {
                return false;
            };
            listen_wheel(&el, zoom);
            true
        });
    }
    let window = move || axis?.window();
    let on_down = move |ev: leptos::ev::MouseEvent| {
        if let Some(zoom) = zoom {
            if ev.button() == 0 {
                ev.prevent_default();
                // prevent_default keeps the text from being selected, and
                // the focus from moving: give it to the chart by hand, as
                // a click is what lets the wheel zoom (listen_wheel).
                if let Some(el) = node.get_untracked() {
                    let _ = el.focus();
                }
                zoom.start_drag(ev.client_x() as f64);
            }
        }
    };
    let on_drag = move |ev: &leptos::ev::MouseEvent| {
        use wasm_bindgen::JsCast;
        let Some(zoom) = zoom else { return };
        let Some(el) = ev
            .current_target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        else {
            return;
        };
        zoom.dragged(
            ev.client_x() as f64,
            el.get_bounding_client_rect().width() * PLOT_W / CHART_W,
        );
    };
    view! {
        <svg id=id xmlns="http://www.w3.org/2000/svg" viewBox=format!("0 0 1200 {height}")
            font-family="Inter, system-ui, sans-serif" role="img" node_ref=node
            aria-label=move || summary.map(|s| s.get()).unwrap_or_default()
            class:zoomable=zoomable
            tabindex=zoomable.then_some("0")
            data-t0=move || window().map(|w| format!("{:.9}", w.t0))
            data-t1=move || window().map(|w| format!("{:.9}", w.t1))
            on:mousedown=on_down
            on:mouseup=move |_| if let Some(z) = zoom { z.end_drag() }
            on:mousemove=move |ev| { on_drag(&ev); on_move.run(ev) }
            on:mouseleave=move |_| { if let Some(z) = zoom { z.end_drag() } on_leave.run(()) }>
            <rect x="0" y="0" width="1200" height=height fill="#ffffff" />
            <g inner_html=layer></g>
            {children()}
        </svg>
    }
}

/// A chart over the step's time (the memory curve, the timelines): zoomable
/// in the shared window, its pointer moving the shared cursor.
#[component]
pub fn TimeChartSvg(
    id: &'static str,
    height: f64,
    #[prop(into)] layer: Signal<String>,
    hover: TimeHover,
    #[prop(into)] summary: Signal<String>,
    children: Children,
) -> impl IntoView {
    view! {
        <ChartSvg id=id height=height layer=layer summary=summary axis=hover.axis()
            on_move=Callback::new(move |ev: leptos::ev::MouseEvent| hover.moved(&ev))
            on_leave=Callback::new(move |_| hover.left())>
            {children()}
        </ChartSvg>
    }
}

/// A small curve chart of `frame` (the compare curves, the two sweep
/// figures): named for screen readers by `label`, with the pointer's x in
/// `pointer` while it is over the chart, on a white ground under `children`.
#[component]
pub fn CurveSvg(
    id: &'static str,
    frame: Frame,
    label: &'static str,
    pointer: RwSignal<Option<f64>>,
    children: Children,
) -> impl IntoView {
    view! {
        <svg id=id xmlns="http://www.w3.org/2000/svg" viewBox=frame.view_box()
            font-family="Inter, system-ui, sans-serif" role="img" aria-label=label
            on:mousemove=move |ev| pointer.set(frame_x(&ev, &frame))
            on:mouseleave=move |_| pointer.set(None)>
            <rect x="0" y="0" width=frame.w height=frame.h fill="#ffffff" />
            {children()}
        </svg>
    }
}

/// A chart's heavy layer: drawn from `schedule` (empty while there is
/// none), with a timing mark named `name` (`?timing`).
pub fn layer_of(
    name: &'static str,
    schedule: Signal<Option<Arc<Current>>>,
    draw: impl Fn(&Current) -> String + Send + Sync + 'static,
) -> impl Fn() -> String + Send + Sync + Copy + 'static {
    let draw = StoredValue::new(draw);
    move || {
        let s = schedule.with(|c| {
            c.as_deref()
                .map(|c| draw.with_value(|d| d(c)))
                .unwrap_or_default()
        });
        mark(name);
        s
    }
}
