//! File formats: `remat-chain/1`, rotor's chain layout, `remat-schedule/1`,
//! `remat-run/1` (a measured step). A plan lowered to what stock PyTorch
//! runs is `crate::lowering`'s: it judges each form with the simulator, so
//! it sits above it, not here.
//!
//! Each format is a serde file struct (`deny_unknown_fields`: a misspelt
//! field is an error, not a default); `serde_path_to_error` names the field
//! of the first problem (`stages[3].saved_bytes: expected a number of bytes,
//! found the string "big"`) and `Chain::validate`, the only judge of values,
//! names the first bad one (`stages[3].saved_bytes: smaller than
//! output_bytes`). Readers never panic.

mod chain_file;
pub mod cuda_snapshot;
mod json;
mod numbers;
mod rotor;
mod run_file;
mod schedule_file;

pub use chain_file::{read_chain, write_chain, CHAIN_FORMAT};
pub use json::FormatError;
pub use rotor::{read_rotor, TimeUnit};
pub use run_file::{read_run, write_run, MeasuredOp, RunFile, MAX_RUN_OPS, RUN_FORMAT};
pub use schedule_file::{
    read_schedule, write_schedule, Predicted, ScheduleError, ScheduleFile, SCHEDULE_FORMAT,
};

use crate::model::Chain;

/// Reads a chain in any supported format: `remat-chain/1`, or rotor's
/// `fw, bw, cw, cbw, ftmp, btmp` layout (times in milliseconds, as rotor
/// measures them).
pub fn read_any_chain(text: &str) -> Result<Chain, FormatError> {
    /// Only what tells the layouts apart (given, even as `null`, or not);
    /// every other field is skipped.
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default, deserialize_with = "json::present")]
        format: Option<serde::de::IgnoredAny>,
        #[serde(default, deserialize_with = "json::present")]
        fw: Option<serde::de::IgnoredAny>,
    }
    json::check_syntax(text)?;
    match json::read::<Probe>(text)? {
        Probe {
            format: None,
            fw: Some(_),
        } => read_rotor(text, TimeUnit::Milliseconds, "rotor import"),
        _ => read_chain(text),
    }
}
