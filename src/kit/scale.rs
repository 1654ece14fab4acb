//! The charts' coordinates: the 1200-unit-wide system every chart scales
//! with, axis ticks, the plot box of the small curve charts, and the time
//! axis of the charts over the step.

use super::format::ms;

/// The chart coordinate system: every chart is 1200 units wide and scales
/// with the page, so text stays proportional at 1024 px and at 1400 px.
pub const CHART_W: f64 = 1200.0;
pub const MARGIN_L: f64 = 78.0;
pub const MARGIN_R: f64 = 16.0;
pub const PLOT_W: f64 = CHART_W - MARGIN_L - MARGIN_R;

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
        self.y_in(o, (0.0, max_over))
    }

    /// The y of an overhead `o` on an axis from `min` (0 or below: a
    /// measured peer faster than the chain's sequential time) to `max`.
    pub fn y_in(&self, o: f64, (min, max): (f64, f64)) -> f64 {
        let span = self.h - self.top - self.bottom;
        self.top + span - (o - min) / (max - min) * span
    }

    /// Grid lines with percent labels up to `max_over`, x ticks (at their
    /// x, with a label) and both axis titles.
    pub fn overhead_axes(&self, max_over: f64, x_ticks: &[(f64, String)], x_label: &str) -> String {
        self.overhead_axes_in((0.0, max_over), x_ticks, x_label)
    }

    /// [`overhead_axes`](Self::overhead_axes) on an axis from `min` (≤ 0)
    /// to `max`: below 0 the ticks go on at the same step, and the 0 %
    /// line is drawn darker.
    pub fn overhead_axes_in(
        &self,
        (min, max_over): (f64, f64),
        x_ticks: &[(f64, String)],
        x_label: &str,
    ) -> String {
        let up = ticks(max_over, 5);
        let step = up.get(1).copied().unwrap_or(max_over.max(1e-9));
        let down = (1..)
            .map(|i| -(i as f64) * step)
            .take_while(|v| *v >= min * 1.0001);
        let all: Vec<f64> = up.iter().copied().chain(down).collect();
        let y = |o: f64| self.y_in(o, (min, max_over));
        let Frame {
            w,
            h,
            left,
            right,
            top,
            bottom,
        } = *self;
        let mut s = String::new();
        for o in all {
            let stroke = if o == 0.0 && min < 0.0 {
                "#8a94a3"
            } else {
                "#e3e7ee"
            };
            s.push_str(&format!(
                r##"<line x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" fill="#5a6474">{:.0} %</text>"##,
                w - right, left - 6.0, y(o) + 4.0, o * 100.0, yy = y(o)
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

/// The fraction of the way across the plot of `frame` at `px`.
impl Frame {
    pub fn fraction_at(&self, px: f64) -> f64 {
        ((px - self.left) / (self.w - self.left - self.right)).clamp(0.0, 1.0)
    }
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

    /// The time axis over the window: round ticks, grid lines to `y`, its
    /// words `text` times their size on the page (fewer ticks as they
    /// grow, so that they never run into each other).
    pub fn axis_svg(&self, y: f64, tick_h: f64, text: f64) -> String {
        let span = self.t1 - self.t0;
        let wanted = ((10.0 / text.max(1.0)).round() as usize).max(2);
        let step = match ticks(span, wanted).get(1) {
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
            let half = label.chars().count() as f64 * 3.4 * text;
            let anchor = if x + half > CHART_W {
                "end"
            } else if x - half < 0.0 {
                "start"
            } else {
                "middle"
            };
            s.push_str(&format!(
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="0" y2="{y:.1}" stroke="#e3e7ee" stroke-width="1"/><line x1="{x:.1}" x2="{x:.1}" y1="{y:.1}" y2="{:.1}" stroke="#8a94a3"/><text x="{x:.1}" y="{:.1}" font-size="{:.1}" text-anchor="{anchor}" fill="#5a6474">{label}</text>"##,
                y + tick_h,
                y + tick_h + 13.0 * text,
                12.0 * text,
            ));
        }
        s
    }
}
