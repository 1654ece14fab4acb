//! Numbers as the charts write them: durations, sizes, percentages, and
//! SVG coordinates written fast.

use remat_core::model::units::{format_bytes, format_seconds};

pub use crate::text::words::pct;

pub fn ms(seconds: f64) -> String {
    format_seconds(seconds)
}

pub fn bytes(b: u64) -> String {
    format_bytes(b)
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
