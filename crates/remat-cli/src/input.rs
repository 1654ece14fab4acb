//! Reading what the user names on the command line.

use remat_core::format::{read_any_chain, read_schedule, ScheduleFile};
use remat_core::model::units::{parse_rate, parse_size};
use remat_core::{examples, Chain};
use std::path::Path;

/// A chain file, or `example:NAME`.
pub fn chain(arg: &str) -> Result<Chain, String> {
    if let Some(name) = arg.strip_prefix("example:") {
        return examples::by_name(name).ok_or_else(|| {
            let names: Vec<&str> = examples::NAMES.iter().map(|(n, _)| *n).collect();
            format!(
                "no example named `{name}`; choose one of {}",
                names.join(", ")
            )
        });
    }
    let text = read_text(arg)?;
    read_any_chain(&text).map_err(|e| format!("{arg}: {e}"))
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

pub fn size(flag: &str, text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| format!("{flag}: {e}"))
}

pub fn rate(flag: &str, text: &str) -> Result<f64, String> {
    parse_rate(text).map_err(|e| format!("{flag}: {e}"))
}

pub fn write_text(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}
