//! File formats: `remat-chain/1`, rotor's chain layout, `remat-schedule/1`,
//! and the export of a schedule as `torch.utils.checkpoint` segments.
//!
//! Readers validate every field and report the first problem with its path
//! (`stages[3].saved_bytes: smaller than output_bytes`); they never panic.

mod chain_file;
mod fields;
pub mod pytorch;
mod rotor;
mod schedule_file;

pub use chain_file::{read_chain, write_chain, CHAIN_FORMAT};
pub use fields::FormatError;
pub use rotor::{read_rotor, TimeUnit};
pub use schedule_file::{
    read_schedule, write_schedule, Predicted, ScheduleError, ScheduleFile, SCHEDULE_FORMAT,
};

use crate::model::Chain;

/// Reads a chain in any supported format: `remat-chain/1`, or rotor's
/// `fw, bw, cw, cbw, ftmp, btmp` layout (times in milliseconds, as rotor
/// measures them).
pub fn read_any_chain(text: &str) -> Result<Chain, FormatError> {
    let value = fields::parse_json(text)?;
    if value.get("fw").is_some() && value.get("format").is_none() {
        rotor::rotor_from_value(&value, TimeUnit::Milliseconds, "rotor import")
    } else {
        chain_file::chain_from_value(&value)
    }
}
