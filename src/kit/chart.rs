//! What the charts share: colours, the coordinate system, axes and ticks,
//! number formatting, batched SVG paths, and the pointer.

use super::notation::math_text;
use crate::state::{mark, use_app, AppState, Current};
use leptos::prelude::*;
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::Op;
use std::sync::Arc;

/// One colour per meaning, used by every view and by the page's one legend.
/// Okabe–Ito hues (told apart with every common colour-vision deficiency);
/// `TEXT_*` are darker shades of the same hues for text on white (≥ 4.5:1,
/// WCAG AA), `label_on` the text colour for a label on a fill.
pub mod palette {
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
    /// The colour of a kind of op or tensor, one meaning per colour in
    /// every view: an op and the tensor it leaves share a hue.
    pub fn of_kind(kind: &str) -> &'static str {
        match kind {
            "F_all" | "ā" => FORWARD,
            "F_ck" | "a" => CHECKPOINT,
            "F_∅" => RECOMPUTE,
            "B" | "δ" => BACKWARD,
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
}

/// The chart coordinate system: every chart is 1200 units wide and scales
/// with the page, so text stays proportional at 1024 px and at 1400 px.
pub const CHART_W: f64 = 1200.0;
pub const MARGIN_L: f64 = 78.0;
pub const MARGIN_R: f64 = 16.0;
pub const PLOT_W: f64 = CHART_W - MARGIN_L - MARGIN_R;

pub fn pct(x: f64) -> String {
    if x.abs() < 0.0005 {
        "0 %".into()
    } else {
        format!("{:+.1} %", x * 100.0)
    }
}

/// An op's colour: its kind's, in every view (F_all blue as the ā^ℓ it
/// keeps, F_ck orange as its a^ℓ, F_∅ vermilion, B green as δ^ℓ). A
/// recomputation keeps its kind's colour and is striped over
/// ([`RECOMPUTE_STRIPES`]): before issue 26 the timeline painted every
/// re-forward vermilion and every F_ck blue, against the chain's colours.
pub fn op_color(op: &Op) -> &'static str {
    palette::of_kind(op_kind(op))
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

/// The stripes drawn over a recomputed op (a pattern whose id the
/// timeline defines once).
pub const RECOMPUTE_STRIPES: &str = r##"<pattern id="recompute-stripes" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="7" height="7" fill="none"/><line x1="0" y1="0" x2="0" y2="7" stroke="#ffffff" stroke-width="3" stroke-opacity="0.75"/></pattern>"##;

/// Axis ticks: about `n` round values in [0, max].
pub fn ticks(max: f64, n: usize) -> Vec<f64> {
    if max <= 0.0 || !max.is_finite() {
        return vec![0.0];
    }
    let raw = max / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= max * 1.0001)
        .collect()
}

/// Byte ticks on binary boundaries (so labels read 512 MiB, 1.00 GiB).
pub fn byte_ticks(max: f64, n: usize) -> Vec<f64> {
    if max <= 0.0 {
        return vec![0.0];
    }
    let raw = max / n as f64;
    let mut step = 1.0f64;
    while step * 2.0 <= raw {
        step *= 2.0;
    }
    if step < raw {
        step *= 2.0;
    }
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= max * 1.0001)
        .collect()
}

/// The plot box of an overhead-vs-something chart, in SVG units.
#[derive(Clone, Copy)]
pub struct Frame {
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    /// The x of `fraction` (0 to 1) of the way across the plot.
    pub fn x(&self, fraction: f64) -> f64 {
        self.left + fraction * (self.w - self.left - self.right)
    }

    pub fn view_box(&self) -> String {
        format!("0 0 {} {}", self.w, self.h)
    }

    /// The y of an overhead `o` on an axis from 0 to `max_over`.
    pub fn y(&self, o: f64, max_over: f64) -> f64 {
        let span = self.h - self.top - self.bottom;
        self.top + span - o / max_over * span
    }

    /// Grid lines with percent labels up to `max_over`, x ticks (at their
    /// x, with a label) and both axis titles.
    pub fn overhead_axes(&self, max_over: f64, x_ticks: &[(f64, String)], x_label: &str) -> String {
        let Frame {
            w,
            h,
            left,
            right,
            top,
            bottom,
        } = *self;
        let mut s = String::new();
        for o in ticks(max_over, 5) {
            s.push_str(&format!(
                r##"<line x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e3e7ee"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" fill="#5a6474">{:.0} %</text>"##,
                w - right, left - 6.0, self.y(o, max_over) + 4.0, o * 100.0, yy = self.y(o, max_over)
            ));
        }
        for (xx, label) in x_ticks {
            s.push_str(&format!(
                r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{:.1}" y2="{:.1}" stroke="#8a94a3"/><text x="{xx:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#5a6474">{label}</text>"##,
                h - bottom, h - bottom + 5.0, h - bottom + 18.0
            ));
        }
        s.push_str(&format!(
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#2b3442">{x_label}</text><text x="14" y="{:.1}" font-size="12" fill="#2b3442" transform="rotate(-90 14 {:.1})" text-anchor="middle">overhead vs no limit</text>"##,
            (left + w - right) / 2.0, h - 6.0, (top + h - bottom) / 2.0, (top + h - bottom) / 2.0
        ));
        s
    }
}

pub fn ms(seconds: f64) -> String {
    format_seconds(seconds)
}

pub fn bytes(b: u64) -> String {
    format_bytes(b)
}

/// A little legend entry.
#[component]
pub fn Swatch(color: &'static str, label: &'static str) -> impl IntoView {
    view! {
        <span class="swatch">
            <i style=format!("background:{color}")></i>
            // One flex item: the sub/superscripts must not get the gap.
            <span>{math_text(label)}</span>
        </span>
    }
}

/// A legend's entries: (colour, label in caret notation).
pub fn swatches(entries: &[(&'static str, &'static str)]) -> impl IntoView {
    (entries.iter())
        .map(|&(color, label)| view! { <Swatch color label /> })
        .collect_view()
}

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

    fn start_drag(self, px: f64) {
        self.drag.set(Some((px, self.window.get_untracked())));
    }

    /// Moves the window with the pointer: `px` in pixels, `width` the
    /// plot's width in pixels.
    fn dragged(self, px: f64, plot_px: f64) {
        if let Some((from, (lo, hi))) = self.drag.get_untracked() {
            let shift = (px - from) / plot_px.max(1.0) * (hi - lo);
            if shift != 0.0 {
                self.window.set(fit(lo - shift, hi - lo));
            }
        }
    }

    fn end_drag(self) {
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

/// The shared time window, provided by the page ([`TimeZoom::new`]).
pub fn use_zoom() -> TimeZoom {
    use_context::<TimeZoom>().expect("the page provides the time zoom")
}

/// Times ↔ chart x over a window of the schedule.
#[derive(Clone, Copy, Debug)]
pub struct TimeScale {
    pub t0: f64,
    pub t1: f64,
}

impl TimeScale {
    pub fn new(makespan: f64, (lo, hi): (f64, f64)) -> TimeScale {
        TimeScale {
            t0: lo * makespan,
            t1: hi * makespan,
        }
    }

    pub fn x(&self, t: f64) -> f64 {
        MARGIN_L + (t - self.t0) / (self.t1 - self.t0).max(1e-15) * PLOT_W
    }

    /// The time at chart x `x` (clamped to the window).
    pub fn t_at(&self, x: f64) -> f64 {
        self.t0 + ((x - MARGIN_L) / PLOT_W).clamp(0.0, 1.0) * (self.t1 - self.t0)
    }

    /// The time axis over the window: round ticks, grid lines to `y`.
    pub fn axis_svg(&self, y: f64, tick_h: f64) -> String {
        let span = self.t1 - self.t0;
        let step = match ticks(span, 10).get(1) {
            Some(&step) if step > 0.0 => step,
            _ => return String::new(),
        };
        let mut s = String::new();
        let first = (self.t0 / step - 1e-9).ceil() as i64;
        for k in first.. {
            let t = k as f64 * step;
            if t > self.t1 + step * 1e-6 {
                break;
            }
            let x = self.x(t);
            if !(MARGIN_L - 0.5..=MARGIN_L + PLOT_W + 0.5).contains(&x) {
                continue;
            }
            // A label centred on a tick near an edge would be cut by the
            // chart's frame (issue 26: the last label was): align it inward.
            let label = ms(t);
            let half = label.chars().count() as f64 * 3.4;
            let anchor = if x + half > CHART_W {
                "end"
            } else if x - half < 0.0 {
                "start"
            } else {
                "middle"
            };
            s.push_str(&format!(
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="0" y2="{y:.1}" stroke="#e3e7ee" stroke-width="1"/><line x1="{x:.1}" x2="{x:.1}" y1="{y:.1}" y2="{:.1}" stroke="#8a94a3"/><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="{anchor}" fill="#5a6474">{label}</text>"##,
                y + tick_h,
                y + tick_h + 13.0,
            ));
        }
        s
    }
}

/// `inner` clipped to the plot's columns (x from MARGIN_L over PLOT_W), so
/// that a zoomed chart draws nothing over its axis labels.
pub fn clip_to_plot(height: f64, inner: &str) -> String {
    format!(
        r#"<svg x="{MARGIN_L}" y="0" width="{PLOT_W}" height="{height}" viewBox="{MARGIN_L} 0 {PLOT_W} {height}" overflow="hidden">{inner}</svg>"#
    )
}

/// Writes `x` with at most one decimal (1/10 of a chart unit, under a tenth
/// of a pixel), through integer formatting: float formatting (`{:.1}`) was a
/// visible share of a slider move at L = 300, with thousands of numbers.
pub fn num(out: &mut String, x: f64) {
    use std::fmt::Write;
    if !x.is_finite() {
        out.push('0');
        return;
    }
    let v = (x * 10.0).round() as i64;
    if v < 0 {
        out.push('-');
    }
    let a = v.unsigned_abs();
    let _ = match a % 10 {
        0 => write!(out, "{}", a / 10),
        f => write!(out, "{}.{f}", a / 10),
    };
}

/// Shapes gathered into one `<path>` per colour: a chart with thousands of
/// boxes becomes a handful of DOM nodes, which keeps a slider move within a
/// frame at L = 300 (parsing thousands of `<rect>`s alone took ~15 ms).
/// Each path says which kind of op or tensor it draws (`data-kind`), so
/// that a test can read the colour each view gives each kind.
#[derive(Default)]
pub struct PathBatch {
    groups: Vec<(&'static str, &'static str, String)>,
}

impl PathBatch {
    /// The path of `color` for shapes of `kind` ("F_ck", "ā", …).
    pub fn d(&mut self, color: &'static str, kind: &'static str) -> &mut String {
        let i = match self
            .groups
            .iter()
            .position(|(c, k, _)| *c == color && *k == kind)
        {
            Some(i) => i,
            None => {
                self.groups.push((color, kind, String::new()));
                self.groups.len() - 1
            }
        };
        &mut self.groups[i].2
    }

    pub fn rect(
        &mut self,
        color: &'static str,
        kind: &'static str,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
    ) {
        let d = self.d(color, kind);
        d.push('M');
        num(d, x);
        d.push(' ');
        num(d, y);
        d.push('h');
        num(d, w);
        d.push('v');
        num(d, h);
        d.push('h');
        num(d, -w);
        d.push('z');
    }

    /// The paths; `extra` goes on every one (e.g. a stroke).
    pub fn finish(self, extra: &str) -> String {
        self.groups
            .into_iter()
            .map(|(color, kind, d)| {
                format!(r#"<path fill="{color}" data-kind="{kind}" {extra} d="{d}"/>"#)
            })
            .collect()
    }
}

/// Where a tooltip goes: beside the pointer, on the side with room.
pub fn tooltip_style(fx: f64) -> String {
    if fx > 0.6 {
        format!("right:{:.1}%", (1.0 - fx) * 100.0 + 1.0)
    } else {
        format!("left:{:.1}%", fx * 100.0 + 1.0)
    }
}

/// The pointer over a chart drawn against the schedule's time (the memory
/// chart, the timelines): it moves the cursor every such chart shares, and
/// keeps where this chart's tooltip goes.
#[derive(Clone, Copy)]
pub struct TimeHover {
    state: AppState,
    height: f64,
    /// Where the pointer is, as a fraction of the chart's width.
    fx: RwSignal<Option<f64>>,
    zoom: TimeZoom,
}

impl TimeHover {
    pub fn new(height: f64) -> TimeHover {
        TimeHover {
            state: use_app(),
            height,
            fx: RwSignal::new(None),
            zoom: use_zoom(),
        }
    }

    pub fn moved(self, ev: &leptos::ev::MouseEvent) {
        let Some((x, _, fx)) = chart_point(ev, self.height) else {
            return;
        };
        self.state.shown.current.with_untracked(|c| {
            if let Some(t) = c.as_ref().and_then(|c| c.ok_trace()) {
                let scale = TimeScale::new(t.makespan_seconds, self.zoom.window.get_untracked());
                self.state.view.hover(scale.t_at(x));
                self.fx.set(Some(fx));
            }
        });
    }

    pub fn left(self) {
        self.fx.set(None);
        self.state.view.leave();
    }

    /// The cursor's x on the chart, while there is a cursor.
    pub fn cursor_x(self) -> Option<f64> {
        let t = self.state.view.cursor.get()?;
        let c = self.state.shown.current.get()?;
        let x = self.scale(c.ok_trace()?.makespan_seconds).x(t);
        (MARGIN_L..=MARGIN_L + PLOT_W).contains(&x).then_some(x)
    }

    /// The time scale of a schedule of `makespan` in the shared window
    /// (tracked).
    pub fn scale(self, makespan: f64) -> TimeScale {
        TimeScale::new(makespan, self.zoom.get())
    }

    /// While the pointer is over this chart: where (fraction of the width),
    /// the time under it, and the schedule shown.
    pub fn at(self) -> Option<(f64, f64, Arc<Current>)> {
        let fx = self.fx.get()?;
        let t = self.state.view.cursor.get()?;
        let c = self.state.shown.current.get()?;
        c.ok_trace()?;
        Some((fx, t, c))
    }
}

/// A checkbox that switches a card's mode on and off, with its words.
#[component]
pub fn Switch(id: &'static str, on: RwSignal<bool>, label: &'static str) -> impl IntoView {
    view! {
        <label class="toggle">
            <input id=id type="checkbox" prop:checked=move || on.get()
                on:change=move |ev| on.set(event_target_checked(&ev)) />
            {label}
        </label>
    }
}

/// A labelled select of named choices (value, words) that reports the
/// value picked.
#[component]
pub fn ChoiceSelect(
    id: &'static str,
    label: &'static str,
    choices: Vec<(&'static str, &'static str)>,
    #[prop(into)] value: Signal<String>,
    on_pick: Callback<String>,
) -> impl IntoView {
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <select id=id prop:value=move || value.get() on:change=move |ev| on_pick.run(event_target_value(&ev))>
                {choices.into_iter().map(|(v, words)| view! { <option value=v>{words}</option> }).collect_view()}
            </select>
        </div>
    }
}

/// The option value of the preset equal to `value`, or "" (custom).
pub fn preset_value<T: PartialEq + ToString>(presets: &[(T, &str)], value: &T) -> String {
    presets
        .iter()
        .find(|(v, _)| v == value)
        .map(|(v, _)| v.to_string())
        .unwrap_or_default()
}

/// A chart card's heading: the title, then the legend.
#[component]
pub fn CardHead(title: &'static str, children: Children) -> impl IntoView {
    view! {
        <div class="card-head">
            <h2>{title}</h2>
            <div class="legend">{children()}</div>
        </div>
    }
}

/// A full-width chart against the page's coordinates: a white ground, the
/// heavy `layer` (one string of SVG, redrawn when the schedule changes),
/// then `children` (cursors, highlights) over it. A `zoomable` chart (one
/// against the schedule's time) zooms with the wheel around the pointer
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
    #[prop(optional)] zoomable: bool,
    children: Children,
) -> impl IntoView {
    let state = use_app();
    let zoom = zoomable.then(use_zoom);
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
    let window = move || {
        let zoom = zoom?;
        let makespan = state.shown.current.with(|c| {
            c.as_ref()
                .and_then(|c| c.ok_trace().map(|t| t.makespan_seconds))
        })?;
        Some(TimeScale::new(makespan, zoom.get()))
    };
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

/// Wheel over a zoomable chart: in (up) or out (down) by a fixed step
/// around the pointer — with Ctrl or ⌘ held (a trackpad pinch arrives as
/// Ctrl + wheel), or once a click has focused the chart. A plain wheel
/// scrolls the page: a lecture scrolled past a chart must not stick on it.
fn listen_wheel(el: &web_sys::SvgElement, zoom: TimeZoom) {
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
pub fn ZoomReset(id: &'static str) -> impl IntoView {
    let zoom = use_zoom();
    view! {
        <button class="small zoom-reset" id=id disabled=move || !zoom.zoomed()
            title="Show the whole step again"
            on:click=move |_| zoom.reset()>"Reset zoom"</button>
        <span class="zoom-hint muted">"Ctrl + wheel or a pinch zooms (or click the chart, then the wheel); drag pans"</span>
    }
}

/// A chart's heavy layer: drawn from the schedule shown (empty while there
/// is none), with a timing mark named `name` (`?timing`).
pub fn layer_of(
    name: &'static str,
    draw: impl Fn(&Current) -> String + Send + Sync + 'static,
) -> impl Fn() -> String + Send + Sync + Copy + 'static {
    let state = use_app();
    let draw = StoredValue::new(draw);
    move || {
        let s = state.shown.current.with(|c| {
            c.as_deref()
                .map(|c| draw.with_value(|d| d(c)))
                .unwrap_or_default()
        });
        mark(name);
        s
    }
}

/// How far some work is: a bar and a percentage.
#[component]
pub fn ProgressBar(#[prop(into)] id: String, fraction: Signal<f64>) -> impl IntoView {
    view! {
        <progress id=id max="1" value=fraction></progress>
        <span>{move || format!("{:.0} %", fraction.get() * 100.0)}</span>
    }
}

/// The control of a long task in the worker (the offloading sweep, the
/// max-batch search): a button that starts it, then its progress and a
/// Cancel, under the ids `{id}-run`, `{id}-progress` and `{id}-cancel`.
#[component]
pub fn TaskControl(
    id: &'static str,
    running: Memo<bool>,
    fraction: Signal<f64>,
    /// The button's words (they change once there is a result).
    label: Signal<&'static str>,
    on_run: Callback<()>,
) -> impl IntoView {
    let state = crate::state::use_app();
    let (progress, cancel, run) = (
        format!("{id}-progress"),
        format!("{id}-cancel"),
        format!("{id}-run"),
    );
    move || {
        match running.get() {
        true => view! {
            <span class="status building">
                <ProgressBar id=progress.clone() fraction=fraction />
                <button id=cancel.clone() on:click=move |_| state.cancel_side_task()>"Cancel"</button>
            </span>
        }
        .into_any(),
        false => view! {
            <button id=run.clone() on:click=move |_| on_run.run(()) title="Runs in a Web Worker">
                {move || label.get()}
            </button>
        }
        .into_any(),
    }
    }
}

/// A marker shape, so lines that overlap stay told apart where they meet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Marker {
    Circle,
    Ring,
    Square,
    Triangle,
    Diamond,
    Cross,
}

/// One marker at (x, y), `r` its half size.
pub fn marker_svg(marker: Marker, x: f64, y: f64, r: f64, color: &str) -> String {
    match marker {
        Marker::Circle => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="{color}"/>"#),
        Marker::Ring => format!(
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="{:.1}" fill="#ffffff" stroke="{color}" stroke-width="1.8"/>"##,
            r * 1.2
        ),
        Marker::Square => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        Marker::Triangle => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{color}"/>"#,
            y - r * 1.2,
            x + r * 1.2,
            y + r,
            x - r * 1.2,
            y + r
        ),
        Marker::Diamond => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z" fill="{color}"/>"#,
            y - r * 1.3,
            x + r * 1.3,
            y + r * 1.3,
            x - r * 1.3
        ),
        Marker::Cross => format!(
            r#"<path d="M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}" stroke="{color}" stroke-width="2"/>"#,
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
    }
}

/// A line's legend key: a short stretch of the line, dashed as drawn, with
/// its marker in the middle (`w` × 12 units, drawn at `x`, `y` its middle).
pub fn line_key_svg(x: f64, y: f64, w: f64, color: &str, dash: &str, marker: Marker) -> String {
    format!(
        r#"<line x1="{x:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2.2" stroke-dasharray="{dash}"/>{}"#,
        x + w,
        marker_svg(marker, x + w / 2.0, y, 3.5, color)
    )
}

/// A read-out at the pointer: a vertical line at `px` over the plot of
/// `frame`, and a box beside it (on the side with room) with a title and
/// one coloured row per line.
pub fn readout_svg(
    id: &str,
    frame: &Frame,
    px: f64,
    title: &str,
    rows: &[(&'static str, String)],
) -> String {
    let width = (rows.iter().map(|(_, r)| r.chars().count()))
        .chain(std::iter::once(title.chars().count()))
        .max()
        .unwrap_or(0) as f64
        * 6.6
        + 14.0;
    let height = 18.0 + rows.len() as f64 * 15.0;
    let left = if px + 8.0 + width > frame.w - frame.right {
        px - 8.0 - width
    } else {
        px + 8.0
    };
    let top = frame.top + 4.0;
    let mut s = format!(
        r##"<g id="{id}" class="readout" pointer-events="none"><line x1="{px:.1}" x2="{px:.1}" y1="{}" y2="{:.1}" stroke="{}" stroke-width="1"/><rect x="{left:.1}" y="{top:.1}" width="{width:.1}" height="{height:.1}" rx="4" fill="#ffffff" fill-opacity="0.94" stroke="#c9d0da"/><text x="{:.1}" y="{:.1}" font-size="11.5" font-weight="700" fill="#2b3442">{title}</text>"##,
        frame.top,
        frame.h - frame.bottom,
        palette::CURSOR,
        left + 7.0,
        top + 14.0,
    );
    for (i, (color, row)) in rows.iter().enumerate() {
        s.push_str(&format!(
            r#"<text class="readout-row" x="{:.1}" y="{:.1}" font-size="11" fill="{color}" font-weight="600">{row}</text>"#,
            left + 7.0,
            top + 29.0 + i as f64 * 15.0
        ));
    }
    s.push_str("</g>");
    s
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
        <ChartSvg id=id height=height layer=layer summary=summary zoomable=true
            on_move=Callback::new(move |ev: leptos::ev::MouseEvent| hover.moved(&ev))
            on_leave=Callback::new(move |_| hover.left())>
            {children()}
        </ChartSvg>
    }
}

/// The pointer over a small chart of `frame`, in its units (x only).
pub fn frame_x(ev: &leptos::ev::MouseEvent, frame: &Frame) -> Option<f64> {
    chart_point(ev, frame.h).map(|(_, _, fx)| fx * frame.w)
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

/// The fraction of the way across the plot of `frame` at `px`.
impl Frame {
    pub fn fraction_at(&self, px: f64) -> f64 {
        ((px - self.left) / (self.w - self.left - self.right)).clamp(0.0, 1.0)
    }
}

/// A legend entry for a line: its dash and marker as drawn.
#[component]
pub fn LineSwatch(
    color: &'static str,
    dash: &'static str,
    marker: Marker,
    label: &'static str,
) -> impl IntoView {
    view! {
        <span class="swatch line-swatch">
            <svg width="30" height="12" viewBox="0 0 30 12" aria-hidden="true"
                inner_html=line_key_svg(1.0, 6.0, 28.0, color, dash, marker)></svg>
            <span>{label}</span>
        </span>
    }
}
