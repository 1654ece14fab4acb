//! Reading what the user names on the command line: files, and the typed
//! values that clap's value parsers build before any command runs.

use remat_core::format::{read_any_chain, read_schedule, ScheduleFile};
use remat_core::model::units::{parse_rate, parse_size};
use remat_core::{examples, Chain};
use std::path::Path;

/// The most memory slots any DP is asked for: past it a table is either over
/// the size limit or slower than a user waits for.
pub const MAX_SLOTS: u64 = 100_000;
/// The most budgets one sweep visits.
pub const MAX_POINTS: u64 = 1000;

/// A chain file, or `example:NAME`.
pub fn chain(arg: &str) -> Result<Chain, String> {
    if let Some(name) = arg.strip_prefix("example:") {
        return example(name);
    }
    let text = read_text(arg)?;
    read_any_chain(&text).map_err(|e| format!("{arg}: {e}"))
}

/// A built-in chain by name.
pub fn example(name: &str) -> Result<Chain, String> {
    examples::by_name(name).ok_or_else(|| {
        let names: Vec<&str> = examples::names().collect();
        format!(
            "no example named `{name}`; choose one of {}",
            names.join(", ")
        )
    })
}

pub fn schedule(arg: &str) -> Result<ScheduleFile, String> {
    let text = read_text(arg)?;
    read_schedule(&text).map_err(|e| format!("{arg}: {e}"))
}

pub fn read_text(path: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    // Chain files are small; refusing huge ones keeps a typo from eating memory.
    if meta.len() > 256 << 20 {
        return Err(format!(
            "{path}: {} bytes is too large for a chain or schedule file",
            meta.len()
        ));
    }
    std::fs::read_to_string(Path::new(path)).map_err(|e| format!("{path}: {e}"))
}

pub fn write_text(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

/// A memory budget: bytes, or a share of the chain's M_high (`60%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    Bytes(u64),
    /// Fraction of M_high, the peak of store-all.
    OfHigh(f64),
}

impl Budget {
    /// In bytes, for a chain whose store-all peak is `m_high`.
    pub fn bytes(self, m_high: u64) -> u64 {
        match self {
            Budget::Bytes(b) => b,
            Budget::OfHigh(f) => (m_high as f64 * f).round() as u64,
        }
    }
}

/// clap value parser of `--budget`: `8GiB`, `3e9` or `60%` (of M_high).
pub fn budget(text: &str) -> Result<Budget, String> {
    match text.trim().strip_suffix('%') {
        Some(number) => {
            let pct: f64 = number
                .trim()
                .parse()
                .map_err(|_| format!("`{text}` is not a percentage of M_high (write 60%)"))?;
            if !(pct > 0.0 && pct <= 1000.0) {
                return Err(format!(
                    "`{text}`: a share of M_high must be above 0 % and at most 1000 %"
                ));
            }
            Ok(Budget::OfHigh(pct / 100.0))
        }
        None => parse_size(text).map(Budget::Bytes),
    }
}

/// clap value parser of sizes (`--max-table`).
pub fn size(text: &str) -> Result<u64, String> {
    parse_size(text)
}

/// clap value parser of `--bandwidth`: bytes/s, `12GB/s`, or bits (`12Gbps`).
pub fn rate(text: &str) -> Result<f64, String> {
    let rate = parse_rate(text)?;
    if rate > 0.0 && rate < 1.0 {
        return Err(format!("`{text}` is below 1 byte/s"));
    }
    Ok(rate)
}
