//! `remat convert`: rotor's chain parameters (fw, bw, cw, cbw, ftmp, btmp)
//! as a `remat-chain/1` file.

use crate::args::{ConvertArgs, Unit};
use crate::error::{InFile, Result};
use crate::input;
use remat_core::format::{read_rotor, write_chain, TimeUnit};

pub fn run(a: &ConvertArgs) -> Result<()> {
    let text = input::read_text(&a.input)?;
    let unit = match a.time_unit {
        Unit::Ms => TimeUnit::Milliseconds,
        Unit::S => TimeUnit::Seconds,
    };
    let default_name = a
        .input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rotor chain".into());
    let mut chain =
        read_rotor(&text, unit, a.name.as_deref().unwrap_or(&default_name)).in_file(&a.input)?;
    if let Some(name) = &a.name {
        chain.name = name.clone();
    }
    if let Some(bw) = a.bandwidth {
        chain.bandwidth_bytes_per_s = Some(bw.0);
    }
    input::write_or_print(a.output.as_deref(), &write_chain(&chain))
}
