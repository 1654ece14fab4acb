//! `remat export SCHEDULE --to pytorch-segments`: a schedule written in a
//! form a training script runs without Remat (see
//! `remat_core::format::pytorch` for what can be expressed, and why).

use crate::input;
use clap::{Args, ValueEnum};
use remat_core::format::pytorch;
use remat_core::model::units::format_bytes;
use serde_json::json;

#[derive(Clone, Copy, ValueEnum)]
pub enum Target {
    /// `torch.utils.checkpoint` segments and a snippet to paste.
    PytorchSegments,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Schedule file (remat-schedule/1), as `remat solve -o` writes it.
    schedule: String,
    /// The form to write.
    #[arg(long, value_enum)]
    to: Target,
    /// One JSON object: `segments` (1-based stages) and `snippet`.
    #[arg(long)]
    json: bool,
}

pub fn run(a: ExportArgs) -> Result<(), String> {
    let schedule = input::schedule(&a.schedule)?;
    let Target::PytorchSegments = a.to;
    let segs = pytorch::segments(&schedule.ops).map_err(|e| format!("{}: {e}", a.schedule))?;
    let n = segs.last().map_or(0, |s| s.last);
    if let Some(stages) = schedule.stages {
        if stages != n {
            return Err(format!(
                "{}: stages: the file says {stages} stages, its operations cover {n}",
                a.schedule
            ));
        }
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
        let v = json!({
            "format": "pytorch-segments",
            "stages": n,
            "segments": segs,
            "checkpoint_sequential_k": pytorch::sequential_k(&segs),
            "snippet": snippet,
        });
        say!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
    } else {
        let listed: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
        say!("segments   {}", listed.join(", "));
        say!("");
        say!("{}", snippet.trim_end());
    }
    Ok(())
}
