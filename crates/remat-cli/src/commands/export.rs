//! `remat export SCHEDULE --to pytorch-segments`: a schedule written in a
//! form a training script runs without Remat (see
//! `remat_core::format::pytorch` for what can be expressed, and why).

use crate::args::{ExportArgs, ExportTarget};
use crate::error::{FileProblem, InFile, Result};
use crate::input;
use crate::report::{self, ExportReport};
use remat_core::format::pytorch;
use remat_core::model::units::format_bytes;

pub fn run(a: &ExportArgs) -> Result<()> {
    let schedule = input::schedule(&a.schedule)?;
    let ExportTarget::PytorchSegments = a.to;
    let segs = pytorch::segments(&schedule.ops).in_file(&a.schedule)?;
    let n = segs.last().map_or(0, |s| s.last);
    if let Some(said) = schedule.stages.filter(|&said| said != n) {
        return Err(FileProblem::StagesDiffer { said, covered: n }).in_file(&a.schedule);
    }
    let algorithm = if schedule.algorithm.is_empty() {
        "hand-written"
    } else {
        &schedule.algorithm
    };
    let title = format!(
        "Remat schedule: {algorithm} at budget {} for chain \"{}\" ({n} stages)",
        format_bytes(schedule.budget_bytes),
        schedule.chain_name
    );
    let snippet = pytorch::snippet(&segs, &title);
    if a.json {
        report::print(&ExportReport {
            format: "pytorch-segments",
            stages: n,
            segments: &segs,
            checkpoint_sequential_k: pytorch::sequential_k(&segs),
            snippet: &snippet,
        });
    } else {
        let listed: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
        say!("segments   {}", listed.join(", "));
        say!("");
        say!("{}", snippet.trim_end());
    }
    Ok(())
}
