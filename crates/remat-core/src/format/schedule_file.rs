//! `remat-schedule/1`: a schedule for one chain, ready for a training run.

use super::chain_file::inputs_field;
use super::json::{check_syntax, expect_format, read, FormatError};
use crate::model::{validate_inputs, Chain, InputTensor};
use crate::schedule::Op;
use crate::simulator::{OffloadFree, Trace};
use serde::{Deserialize, Serialize};

pub const SCHEDULE_FORMAT: &str = "remat-schedule/1";

/// What the solver predicted, to compare with what the simulator measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub struct Predicted {
    pub makespan_seconds: f64,
    pub peak_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub struct ScheduleFile {
    pub format: String,
    #[serde(default)]
    pub chain_name: String,
    /// [`Chain::digest`] of the chain this schedule was made for; a
    /// hand-written schedule may leave it out (then it is only checked
    /// against the chain it is run on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_digest: Option<String>,
    /// L, the number of stages of that chain, so that a runtime (the
    /// PyTorch wrapper, `remat-profile run`) can refuse a schedule for a
    /// network of another length before running anything. Absent in a
    /// hand-written schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<usize>,
    #[serde(default)]
    pub algorithm: String,
    pub budget_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bytes_per_s: Option<f64>,
    /// What the solver predicted; absent in a hand-written schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Predicted>,
    /// The batch the chain was measured on (its `inputs`, same shape and
    /// rules), copied by solvers so that a runtime can check its batch's
    /// shapes and dtypes against the plan without the chain. Not part of
    /// the digest; absent when the chain describes none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "inputs_field"
    )]
    pub inputs: Option<Vec<InputTensor>>,
    /// The chain's `model_fingerprint`, copied by solvers so that a runtime
    /// refuses the plan on a model of other shapes (a wider layer, another
    /// depth) that the batch's shapes cannot tell apart. Not part of the
    /// digest; absent when the chain has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_fingerprint: Option<String>,
    pub ops: Vec<Op>,
    /// Where the simulator frees each offload's device copy
    /// ([`OffloadFree`]: after which operation), so that a runtime frees
    /// it there rather than when it issues the copy, and holds the
    /// predicted levels. Written by solvers ([`ScheduleFile::judged`]);
    /// absent without offloads and in a hand-written schedule, where a
    /// runtime frees at the offload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offload_frees: Vec<OffloadFree>,
}

impl ScheduleFile {
    pub fn new(
        chain: &Chain,
        algorithm: &str,
        budget_bytes: u64,
        bandwidth_bytes_per_s: Option<f64>,
        predicted: Predicted,
        ops: Vec<Op>,
    ) -> ScheduleFile {
        ScheduleFile {
            format: SCHEDULE_FORMAT.to_string(),
            chain_name: chain.name.clone(),
            chain_digest: Some(chain.digest()),
            stages: Some(chain.len()),
            algorithm: algorithm.to_string(),
            budget_bytes,
            bandwidth_bytes_per_s,
            predicted: Some(predicted),
            inputs: chain.inputs.clone(),
            model_fingerprint: chain.model_fingerprint.clone(),
            ops,
            offload_frees: Vec::new(),
        }
    }

    /// The file a solver writes for `ops`: [`ScheduleFile::new`] with what
    /// `trace`, the simulator's run of `ops` (the judge's, at `budget_bytes`
    /// and `bandwidth_bytes_per_s`), measured — its makespan and peak as the
    /// prediction, and where it frees each offload's device copy.
    pub fn judged(
        chain: &Chain,
        algorithm: &str,
        budget_bytes: u64,
        bandwidth_bytes_per_s: Option<f64>,
        ops: Vec<Op>,
        trace: &Trace,
    ) -> ScheduleFile {
        let predicted = Predicted {
            makespan_seconds: trace.makespan_seconds,
            peak_bytes: trace.peak_bytes,
        };
        let offload_frees = trace.offload_frees(&ops);
        ScheduleFile {
            offload_frees,
            ..ScheduleFile::new(
                chain,
                algorithm,
                budget_bytes,
                bandwidth_bytes_per_s,
                predicted,
                ops,
            )
        }
    }

    /// Refuses a schedule made for another chain. A schedule without a
    /// digest passes with a warning for people: only the simulator, on
    /// this chain, can tell whether it fits.
    pub fn check_chain(&self, chain: &Chain) -> Result<Option<String>, ScheduleError> {
        let digest = chain.digest();
        if let Some(stages) = self.stages {
            if stages != chain.len() {
                return Err(ScheduleError::WrongLength {
                    stages,
                    chain: chain.name.clone(),
                    chain_stages: chain.len(),
                });
            }
        }
        match &self.chain_digest {
            None => Ok(Some(format!(
                "chain_digest: absent; the schedule is checked against chain \"{}\" ({digest}) as given",
                chain.name
            ))),
            Some(d) if *d == digest => Ok(None),
            Some(d) => Err(ScheduleError::WrongChain {
                schedule_chain: self.chain_name.clone(),
                schedule_digest: d.clone(),
                chain: chain.name.clone(),
                digest,
            }),
        }
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("chain_digest: this schedule was made for chain \"{schedule_chain}\" ({schedule_digest}), not for \"{chain}\" ({digest}); solve again for this chain")]
    WrongChain {
        schedule_chain: String,
        schedule_digest: String,
        chain: String,
        digest: String,
    },
    #[error("stages: this schedule is for a chain of {stages} stages, but \"{chain}\" has {chain_stages}; solve again for this chain")]
    WrongLength {
        stages: usize,
        chain: String,
        chain_stages: usize,
    },
}

/// Reads a `remat-schedule/1` document.
pub fn read_schedule(text: &str) -> Result<ScheduleFile, FormatError> {
    check_syntax(text)?;
    expect_format(text, SCHEDULE_FORMAT)?;
    let schedule: ScheduleFile = read(text)?;
    if let Some(inputs) = &schedule.inputs {
        validate_inputs(inputs)?;
    }
    check_offload_frees(&schedule)?;
    Ok(schedule)
}

/// Each `offload_frees` entry names an offload of `ops` and the offload
/// itself or an operation after it, each offload at most once.
fn check_offload_frees(schedule: &ScheduleFile) -> Result<(), FormatError> {
    let n = schedule.ops.len();
    let mut seen = std::collections::BTreeSet::new();
    for (k, f) in schedule.offload_frees.iter().enumerate() {
        let at = |field: &str| format!("offload_frees[{k}].{field}");
        if !matches!(schedule.ops.get(f.offload), Some(Op::Offload { .. })) {
            return Err(FormatError::new(
                at("offload"),
                format!("ops[{}] is not an offload", f.offload),
            ));
        }
        if !seen.insert(f.offload) {
            return Err(FormatError::new(
                at("offload"),
                format!("ops[{}] is freed twice", f.offload),
            ));
        }
        if f.after < f.offload || f.after >= n {
            return Err(FormatError::new(
                at("after"),
                format!(
                    "expected the offload (ops[{}]) or an operation after it, below {n}; found {}",
                    f.offload, f.after
                ),
            ));
        }
    }
    Ok(())
}

pub fn write_schedule(schedule: &ScheduleFile) -> String {
    serde_json::to_string_pretty(schedule).expect("a schedule always serializes")
}
