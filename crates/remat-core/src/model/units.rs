//! Sizes, rates and durations as people write and read them.

/// Why a size or a rate people typed cannot be read; the text says what to
/// write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("`{text}` is not a number with an optional unit")]
    NotANumber { text: String },
    #[error("`{text}` must be a finite number ≥ 0")]
    Negative { text: String },
    #[error("`{text}` is in bits; sizes are in bytes: write B, MB, GB, MiB or GiB")]
    Bits { text: String },
    #[error("unknown size unit `{unit}` in `{text}` (use B, kB, MB, GB, KiB, MiB, GiB)")]
    UnknownUnit { unit: String, text: String },
    #[error("size `{text}` is too large")]
    TooLarge { text: String },
    /// A rate's number or unit: the size's reason, said of a bandwidth.
    #[error("bandwidth: {0}")]
    Rate(Box<UnitError>),
}

/// Parses a size: plain bytes (`1048576`) or with a unit (`8GiB`, `512MiB`,
/// `3.5GB`, `64 kB`). Binary units are powers of 1024, decimal of 1000.
/// A lowercase `b` after a prefix (`Gb`, `Mbit`) names bits and is refused:
/// a memory size is in bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (value, unit) = split_number(text)?;
    if bits_unit(unit).is_some() {
        return Err(UnitError::Bits { text: text.into() });
    }
    scaled(text, value, unit)
}

fn scaled(text: &str, value: f64, unit: &str) -> Result<u64, UnitError> {
    let factor: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "tb" | "t" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(UnitError::UnknownUnit {
                unit: unit.into(),
                text: text.into(),
            })
        }
    };
    let bytes = value * factor;
    if bytes > u64::MAX as f64 / 2.0 {
        return Err(UnitError::TooLarge { text: text.into() });
    }
    Ok(bytes.round() as u64)
}

/// The byte unit of a unit written in bits (`Gb` → `GB`, `Mbit` → `MB`),
/// or None when it is not in bits.
fn bits_unit(unit: &str) -> Option<String> {
    let prefix = unit
        .strip_suffix("bits")
        .or_else(|| unit.strip_suffix("bit"))
        .or_else(|| unit.strip_suffix('b'))?;
    (!prefix.is_empty() && prefix.chars().all(|c| c.is_ascii_alphabetic()))
        .then(|| format!("{prefix}B"))
}

/// Parses a bandwidth in bytes per second: plain (`12e9`) or with a unit
/// (`12GB/s`, `16GiB/s`, `12GBps`). Bits are divided by 8: `12Gbps`,
/// `12Gb/s` and `100Mbit/s` are gigabits and megabits per second, as links
/// are sold.
pub fn parse_rate(text: &str) -> Result<f64, UnitError> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_suffix("/s")
        .or_else(|| trimmed.strip_suffix("ps"))
        .unwrap_or(trimmed);
    let (value, unit) = split_number(body).map_err(|e| UnitError::Rate(Box::new(e)))?;
    let bytes = match bits_unit(unit) {
        Some(byte_unit) => scaled(text, value, &byte_unit).map(|b| b as f64 / 8.0),
        None => scaled(text, value, unit).map(|b| b as f64),
    };
    bytes.map_err(|e| UnitError::Rate(Box::new(e)))
}

fn split_number(text: &str) -> Result<(f64, &str), UnitError> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && t[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+'))
                || ((c == '-' || c == '+') && (i == 0 || t[..i].ends_with(['e', 'E']))))
        })
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let value: f64 = num
        .parse()
        .map_err(|_| UnitError::NotANumber { text: text.into() })?;
    if !value.is_finite() || value < 0.0 {
        return Err(UnitError::Negative { text: text.into() });
    }
    Ok((value, unit.trim()))
}

/// `1.50 GiB`, `512 MiB`, `12 B`: binary units, three significant digits.
pub fn format_bytes(bytes: u64) -> String {
    let (v, unit) = in_binary_units(bytes);
    if unit == 0 {
        format!("{bytes} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else if v >= 10.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// `bytes` in the largest binary unit it reaches: (value, index in UNITS).
fn in_binary_units(bytes: u64) -> (f64, usize) {
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    (v, unit)
}

/// A least size as [`format_bytes`] writes it, rounded up at the shown
/// precision, so that the size read back from the text is never below
/// `bytes`: "the least memory is 641 MiB" where 640.3 MiB are needed (the
/// page said "least 640 MiB" and was infeasible at 640 MiB).
///
/// ```
/// use remat_core::model::units::{format_bytes_up, parse_size};
/// assert_eq!(format_bytes_up(640 * (1 << 20) + 300_000), "641 MiB");
/// assert_eq!(format_bytes_up(640 * (1 << 20)), "640 MiB");
/// assert_eq!(format_bytes_up(1536 + 1), "1.51 KiB");
/// let b = 12_345_678_901;
/// assert!(parse_size(&format_bytes_up(b)).unwrap() >= b);
/// ```
pub fn format_bytes_up(bytes: u64) -> String {
    let (v, unit) = in_binary_units(bytes);
    if unit == 0 {
        return format!("{bytes} B");
    }
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let scale = 10f64.powi(decimals);
    // A hair of slack: `bytes` exactly on a step must not go up a step.
    let up = ((v * scale) - 1e-9).ceil() / scale;
    format!("{up:.prec$} {}", UNITS[unit], prec = decimals as usize)
}

/// Two sizes a message compares (`budget` below `floor`), each as
/// [`format_bytes`] writes it — with the exact bytes added when the two
/// would read the same (`1.91 GiB (2055356671 B)`).
///
/// ```
/// use remat_core::model::units::format_bytes_apart;
/// assert_eq!(format_bytes_apart(1 << 20, 2 << 20), ("1.00 MiB".into(), "2.00 MiB".into()));
/// assert_eq!(
///     format_bytes_apart((2 << 30) - 1, 2 << 30),
///     ("2.00 GiB (2147483647 B)".into(), "2.00 GiB (2147483648 B)".into())
/// );
/// ```
pub fn format_bytes_apart(a: u64, b: u64) -> (String, String) {
    let (x, y) = (format_bytes(a), format_bytes(b));
    if x == y && a != b {
        (format!("{x} ({a} B)"), format!("{y} ({b} B)"))
    } else {
        (x, y)
    }
}

/// `12.3 ms`, `1.25 s`, `850 µs`.
pub fn format_seconds(seconds: f64) -> String {
    let a = seconds.abs();
    if a >= 1.0 {
        format!("{seconds:.3} s")
    } else if a >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else if a > 0.0 {
        format!("{:.1} µs", seconds * 1e6)
    } else {
        "0 s".to_string()
    }
}

/// `12.0 GB/s`.
pub fn format_rate(bytes_per_s: f64) -> String {
    format!("{:.1} GB/s", bytes_per_s / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_units() {
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("3.5GB").unwrap(), 3_500_000_000);
        assert_eq!(parse_size("1e9").unwrap(), 1_000_000_000);
        assert!(parse_size("-1GB").is_err());
        assert!(parse_size("NaN").is_err());
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .to_string()
            .contains("unknown size unit"));
        assert!(parse_size("").is_err());
    }

    #[test]
    fn rates_with_units() {
        assert_eq!(parse_rate("12GB/s").unwrap(), 12e9);
        assert_eq!(parse_rate("12e9").unwrap(), 12e9);
        assert_eq!(parse_rate("12GBps").unwrap(), 12e9);
        assert_eq!(parse_rate("16GiB/s").unwrap(), 16.0 * (1u64 << 30) as f64);
        // Bits per second, as links are sold: eight times fewer bytes.
        assert_eq!(parse_rate("12Gbps").unwrap(), 1.5e9);
        assert_eq!(parse_rate("12Gb/s").unwrap(), 1.5e9);
        assert_eq!(parse_rate("100 Mbit/s").unwrap(), 12.5e6);
        assert!(parse_rate("fast").is_err());
        // A memory size in bits is a mistake, not a unit.
        assert!(parse_size("8Gb").unwrap_err().to_string().contains("bits"));
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(12), "12 B");
        assert_eq!(format_bytes(3 << 29), "1.50 GiB");
        assert_eq!(format_bytes(512 << 20), "512 MiB");
        assert_eq!(format_seconds(0.0123), "12.30 ms");
        assert_eq!(format_seconds(1.25), "1.250 s");
    }
}
