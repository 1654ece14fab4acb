//! Reading and writing what the user names on the command line: chains
//! (files or built-in examples) and schedule files. Every problem names the
//! file it is in.

use crate::args::ChainArg;
use crate::error::{CliError, FileProblem, InFile, Result};
use remat_core::format::cuda_snapshot;
use remat_core::format::{
    read_any_chain, read_run, read_schedule, FormatError, RunFile, ScheduleFile,
};
use remat_core::measured::{snapshot_run, SnapshotSource};
use remat_core::{examples, Chain};
use std::path::Path;

/// The largest chain or schedule file read: chain files are small, and
/// refusing huge ones keeps a typo from eating memory.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// The chain CHAIN names.
pub fn chain(arg: &ChainArg) -> Result<Chain> {
    match arg {
        ChainArg::Example(name) => example(name),
        ChainArg::File(path) => read_any_chain(&read_text(path)?).in_file(path),
    }
}

/// A built-in chain by name.
pub fn example(name: &str) -> Result<Chain> {
    examples::by_name(name).ok_or_else(|| CliError::NoExample {
        name: name.to_string(),
        choices: examples::names().collect::<Vec<_>>().join(", "),
    })
}

/// A `remat-schedule/1` file.
pub fn schedule(path: &Path) -> Result<ScheduleFile> {
    read_schedule(&read_text(path)?).in_file(path)
}

/// The measured run of `--measured`: a `remat-run/1` file, or a PyTorch
/// CUDA memory snapshot (a pickle) laid over `trace`, the simulation of
/// `schedule` on `chain` ([`remat_core::measured::snapshot_run`]).
pub fn measured_run(
    path: &Path,
    chain: &Chain,
    schedule: &ScheduleFile,
    trace: &remat_core::simulator::Trace,
) -> Result<RunFile> {
    refuse_if_huge(path)?;
    let bytes = std::fs::read(path).in_file(path)?;
    if !cuda_snapshot::is_pickle(&bytes) {
        let text = String::from_utf8(bytes)
            .map_err(|_| FormatError::new("(file)", "neither a remat-run/1 file (JSON, UTF-8) nor a CUDA memory snapshot (a pickle)"))
            .in_file(path)?;
        return read_run(&text).in_file(path);
    }
    let snapshot = cuda_snapshot::read_cuda_snapshot(&bytes).in_file(path)?;
    let source = SnapshotSource {
        file_name: &path.display().to_string(),
        algorithm: &schedule.algorithm,
        budget_bytes: schedule.budget_bytes,
    };
    snapshot_run(&snapshot, chain, &schedule.ops, trace, source)
        .map_err(|e| FormatError::new("device_traces", e.to_string()))
        .in_file(path)
}

pub fn read_text(path: &Path) -> Result<String> {
    refuse_if_huge(path)?;
    std::fs::read_to_string(path).in_file(path)
}

/// Refuses a file over [`MAX_FILE_BYTES`] before it is read.
fn refuse_if_huge(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).in_file(path)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(FileProblem::TooLarge(meta.len())).in_file(path);
    }
    Ok(())
}

pub fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).in_file(path)
}

/// Writes `text` to `path`, or prints it when there is none.
pub fn write_or_print(path: Option<&Path>, text: &str) -> Result<()> {
    match path {
        Some(path) => write_text(path, text),
        None => {
            say!("{text}");
            Ok(())
        }
    }
}
