//! The pointer over a chart: where it is in chart units, the shared cursor
//! it moves on the charts over the step's time, and where a tooltip goes.

use super::scale::{Frame, TimeScale, CHART_W, MARGIN_L, PLOT_W};
use super::zoom::TimeZoom;
use crate::planning::current::Current;
use leptos::prelude::*;
use std::sync::Arc;

/// Where the mouse is over a chart, in chart units (x, y) and as a
/// fraction of the element's width (to place the tooltip).
pub fn chart_point(ev: &leptos::ev::MouseEvent, height: f64) -> Option<(f64, f64, f64)> {
    use wasm_bindgen::JsCast;
    let el: web_sys::Element = ev.current_target()?.dyn_into().ok()?;
    let rect = el.get_bounding_client_rect();
    if rect.width() <= 0.0 {
        return None;
    }
    let fx = (ev.client_x() as f64 - rect.left()) / rect.width();
    let fy = (ev.client_y() as f64 - rect.top()) / rect.height();
    Some((fx * CHART_W, fy * height, fx))
}

/// Where a tooltip goes: beside the pointer, on the side with room.
pub fn tooltip_style(fx: f64) -> String {
    if fx > 0.6 {
        format!("right:{:.1}%", (1.0 - fx) * 100.0 + 1.0)
    } else {
        format!("left:{:.1}%", fx * 100.0 + 1.0)
    }
}

/// The cursor every chart over the step's time shares: a time (the
/// pointer's over one of them, or the step-through's op), and the op the
/// step-through is on. While stepping, the cursor stays when the pointer
/// leaves.
#[derive(Clone, Copy)]
pub struct Cursor {
    pub time: RwSignal<Option<f64>>,
    pub step: RwSignal<Option<usize>>,
}

impl Cursor {
    /// Moves the cursor to `time` from a chart's hover.
    pub fn hover(self, time: f64) {
        self.time.set(Some(time));
    }

    /// The mouse left a chart: the cursor stays only in step mode.
    pub fn leave(self) {
        if self.step.get_untracked().is_none() {
            self.time.set(None);
        }
    }
}

/// What the charts over the step's time share: the schedule they draw, the
/// window of its time they show, and the cursor.
#[derive(Clone, Copy)]
pub struct TimeAxis {
    pub schedule: Signal<Option<Arc<Current>>>,
    pub zoom: TimeZoom,
    pub cursor: Cursor,
    /// Where the axis ends, in seconds, when longer than the schedule's
    /// makespan: charts of several schedules side by side share one time
    /// scale, so the faster ones end early. None: at the makespan.
    pub end: Option<Signal<f64>>,
}

impl TimeAxis {
    /// The seconds the axis spans for a schedule of `makespan` (tracked).
    pub fn span(self, makespan: f64) -> f64 {
        self.end.map_or(makespan, |e| e.get().max(makespan))
    }

    fn span_untracked(self, makespan: f64) -> f64 {
        self.end
            .map_or(makespan, |e| e.get_untracked().max(makespan))
    }

    /// The schedule's time scale in the shared window, while it has a
    /// trace (tracked).
    pub fn window(self) -> Option<TimeScale> {
        let makespan = self.schedule.with(|c| {
            c.as_ref()
                .and_then(|c| c.ok_trace().map(|t| t.makespan_seconds))
        })?;
        Some(TimeScale::new(self.span(makespan), self.zoom.get()))
    }
}

/// The pointer over a chart drawn against the schedule's time (the memory
/// chart, the timelines): it moves the cursor every such chart shares, and
/// keeps where this chart's tooltip goes.
#[derive(Clone, Copy)]
pub struct TimeHover {
    axis: TimeAxis,
    height: f64,
    /// Where the pointer is, as a fraction of the chart's width.
    fx: RwSignal<Option<f64>>,
}

impl TimeHover {
    pub fn new(axis: TimeAxis, height: f64) -> TimeHover {
        TimeHover {
            axis,
            height,
            fx: RwSignal::new(None),
        }
    }

    pub fn moved(self, ev: &leptos::ev::MouseEvent) {
        let Some((x, _, fx)) = chart_point(ev, self.height) else {
            return;
        };
        self.axis.schedule.with_untracked(|c| {
            if let Some(t) = c.as_ref().and_then(|c| c.ok_trace()) {
                let span = self.axis.span_untracked(t.makespan_seconds);
                let scale = TimeScale::new(span, self.axis.zoom.get_untracked());
                self.axis.cursor.hover(scale.t_at(x));
                self.fx.set(Some(fx));
            }
        });
    }

    pub fn left(self) {
        self.fx.set(None);
        self.axis.cursor.leave();
    }

    /// The cursor's x on the chart, while there is a cursor.
    pub fn cursor_x(self) -> Option<f64> {
        let t = self.axis.cursor.time.get()?;
        let c = self.axis.schedule.get()?;
        let x = self.scale(c.ok_trace()?.makespan_seconds).x(t);
        (MARGIN_L..=MARGIN_L + PLOT_W).contains(&x).then_some(x)
    }

    /// The time scale of a schedule of `makespan` in the shared window
    /// (tracked).
    pub fn scale(self, makespan: f64) -> TimeScale {
        TimeScale::new(self.axis.span(makespan), self.axis.zoom.get())
    }

    /// While the pointer is over this chart: where (fraction of the width),
    /// the time under it, and the schedule shown.
    pub fn at(self) -> Option<(f64, f64, Arc<Current>)> {
        let fx = self.fx.get()?;
        let t = self.axis.cursor.time.get()?;
        let c = self.axis.schedule.get()?;
        c.ok_trace()?;
        Some((fx, t, c))
    }

    pub fn axis(self) -> TimeAxis {
        self.axis
    }
}

/// The pointer over a small chart of `frame`, in its units (x only).
pub fn frame_x(ev: &leptos::ev::MouseEvent, frame: &Frame) -> Option<f64> {
    chart_point(ev, frame.h).map(|(_, _, fx)| fx * frame.w)
}
