//! SVG pieces drawn as strings: batched paths, markers and line keys, the
//! pointer's read-out, the recomputation stripes, the plot clip.

use super::format::num;
use super::palette;
use super::scale::{Frame, MARGIN_L, PLOT_W};

/// The stripes drawn over a recomputed op: a pattern under `id`, which
/// each chart that stripes defines once (ids are the document's, one
/// chart's pattern must not depend on another being on the page).
pub fn recompute_stripes(id: &str) -> String {
    format!(
        r##"<pattern id="{id}" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="7" height="7" fill="none"/><line x1="0" y1="0" x2="0" y2="7" stroke="#ffffff" stroke-width="3" stroke-opacity="0.75"/></pattern>"##
    )
}

/// `inner` clipped to the plot's columns (x from MARGIN_L over PLOT_W), so
/// that a zoomed chart draws nothing over its axis labels.
pub fn clip_to_plot(height: f64, inner: &str) -> String {
    format!(
        r#"<svg x="{MARGIN_L}" y="0" width="{PLOT_W}" height="{height}" viewBox="{MARGIN_L} 0 {PLOT_W} {height}" overflow="hidden">{inner}</svg>"#
    )
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
