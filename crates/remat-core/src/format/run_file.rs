//! `remat-run/1`: one training step as a runtime measured it, operation by
//! operation (`docs/formats.md`), to hold against the simulator's
//! prediction ([`crate::measured`]).
//!
//! The operations are a schedule's (`op`, `stage`, `tensor` read by
//! [`Op`]'s own reader, so the two formats cannot drift apart), each with
//! its measured time, the chain's memory once it ended and the highest
//! during it.

use super::json::{check_syntax, expect_format, in_words, objects, present, read, FormatError};
use super::numbers::{Bytes, Seconds};
use crate::schedule::{Op, TensorKind};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const RUN_FORMAT: &str = "remat-run/1";

/// The most operations a run may list: more than any schedule of a
/// 5000-stage chain a solver writes, and a clear error before a typo'd
/// generator's file is compared op by op.
pub const MAX_RUN_OPS: usize = 5_000_000;

/// A measured training step.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFile {
    /// The chain's `name`, for people.
    pub chain_name: String,
    /// The digest of the chain the schedule was made for (as in schedules);
    /// absent: not checked.
    pub chain_digest: Option<String>,
    /// The schedule's algorithm, for people.
    pub algorithm: String,
    /// The schedule's budget.
    pub budget_bytes: u64,
    /// How, where and when it was measured, for people.
    pub source: String,
    /// The schedule's operations in the order they ran, with what was measured.
    pub ops: Vec<MeasuredOp>,
}

/// One operation as it ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredOp {
    pub op: Op,
    /// Its wall time (≥ 0, finite).
    pub seconds: f64,
    /// The chain's memory once it ended, in the simulator's terms: a^0 and
    /// every a^ℓ, ā^ℓ, δ^ℓ held; parameters and their gradients left out.
    pub memory_bytes: u64,
    /// The highest chain memory while it ran (≥ `memory_bytes`).
    pub peak_bytes: u64,
}

impl RunFile {
    /// The measured peak: the highest `peak_bytes` (0 for no operation).
    pub fn peak_bytes(&self) -> u64 {
        self.ops.iter().map(|o| o.peak_bytes).max().unwrap_or(0)
    }

    /// Σ seconds: the step's measured time, op after op.
    pub fn seconds(&self) -> f64 {
        self.ops.iter().map(|o| o.seconds).sum()
    }

    /// The operations alone, as a schedule lists them.
    pub fn schedule_ops(&self) -> Vec<Op> {
        self.ops.iter().map(|o| o.op).collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFileIn {
    #[allow(dead_code)] // checked by `expect_format` first
    format: String,
    #[serde(default)]
    chain_name: String,
    #[serde(default)]
    chain_digest: Option<String>,
    #[serde(default)]
    algorithm: String,
    budget_bytes: Bytes,
    #[serde(default)]
    source: String,
    #[serde(deserialize_with = "objects")]
    ops: Vec<MeasuredOpIn>,
}

/// An operation's fields as written; `op`, `stage` and `tensor` become an
/// [`Op`] through its own reader.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MeasuredOpIn {
    op: String,
    stage: usize,
    #[serde(default, deserialize_with = "present")]
    tensor: Option<TensorKind>,
    /// A forward_all's menu option (absent: 0, the classic).
    #[serde(default, deserialize_with = "present")]
    option: Option<u8>,
    seconds: Seconds,
    memory_bytes: Bytes,
    peak_bytes: Bytes,
}

impl MeasuredOpIn {
    /// The operation, read as a schedule's; `at` is its path (`ops[3]`).
    fn op(&self, at: &str) -> Result<Op, FormatError> {
        let mut fields = json!({"op": self.op, "stage": self.stage});
        if let Some(t) = self.tensor {
            fields["tensor"] = json!(t);
        }
        if let Some(k) = self.option {
            fields["option"] = json!(k);
        }
        Op::deserialize(fields).map_err(|e| {
            let message = e.to_string();
            if message.starts_with("unknown field `tensor`") {
                FormatError::new(
                    format!("{at}.tensor"),
                    format!(
                        "{} names no tensor; only offload, prefetch and release do",
                        self.op
                    ),
                )
            } else {
                in_words(at, &message)
            }
        })
    }

    fn measured(&self, i: usize) -> Result<MeasuredOp, FormatError> {
        let at = format!("ops[{i}]");
        let op = self.op(&at)?;
        let seconds = self.seconds.0;
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(FormatError::new(
                format!("{at}.seconds"),
                format!("must be ≥ 0, got {seconds}"),
            ));
        }
        let (memory, peak) = (self.memory_bytes.0, self.peak_bytes.0);
        if peak < memory {
            return Err(FormatError::new(
                format!("{at}.peak_bytes"),
                format!(
                    "smaller than memory_bytes ({peak} < {memory}): the peak during an operation is at least what it leaves"
                ),
            ));
        }
        Ok(MeasuredOp {
            op,
            seconds,
            memory_bytes: memory,
            peak_bytes: peak,
        })
    }
}

/// Reads a `remat-run/1` document; an error names the field
/// (`ops[3].peak_bytes: …`).
///
/// ```
/// use remat_core::format::read_run;
///
/// let text = r#"{"format": "remat-run/1", "budget_bytes": 100, "ops": [
///     {"op": "forward_all", "stage": 1, "seconds": 0.5, "memory_bytes": 30, "peak_bytes": 40}]}"#;
/// let run = read_run(text).unwrap();
/// assert_eq!((run.ops.len(), run.peak_bytes()), (1, 40));
///
/// let low = text.replace("\"peak_bytes\": 40", "\"peak_bytes\": 20");
/// assert_eq!(
///     read_run(&low).unwrap_err().to_string(),
///     "ops[0].peak_bytes: smaller than memory_bytes (20 < 30): the peak during an operation is at least what it leaves"
/// );
/// ```
pub fn read_run(text: &str) -> Result<RunFile, FormatError> {
    read_at_most(text, MAX_RUN_OPS)
}

/// [`read_run`] with `max_ops` as the limit (tests try it small).
fn read_at_most(text: &str, max_ops: usize) -> Result<RunFile, FormatError> {
    check_syntax(text)?;
    expect_format(text, RUN_FORMAT)?;
    let file: RunFileIn = read(text)?;
    if file.ops.is_empty() {
        return Err(FormatError::new("ops", "the run has no operation"));
    }
    if file.ops.len() > max_ops {
        return Err(FormatError::new(
            "ops",
            format!(
                "{} operations is more than the {max_ops} this tool accepts",
                file.ops.len()
            ),
        ));
    }
    let ops = file
        .ops
        .iter()
        .enumerate()
        .map(|(i, o)| o.measured(i))
        .collect::<Result<Vec<_>, _>>()?;
    let run = RunFile {
        chain_name: file.chain_name,
        chain_digest: file.chain_digest,
        algorithm: file.algorithm,
        budget_bytes: file.budget_bytes.0,
        source: file.source,
        ops,
    };
    if !run.seconds().is_finite() {
        return Err(FormatError::new(
            "ops",
            "the seconds add up to more than a double holds; check the units (seconds)",
        ));
    }
    Ok(run)
}

/// Writes a run as pretty `remat-run/1` JSON, fields in the documented
/// order; `chain_digest` only when known.
pub fn write_run(run: &RunFile) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        format: &'static str,
        chain_name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        chain_digest: Option<&'a str>,
        algorithm: &'a str,
        budget_bytes: u64,
        source: &'a str,
        ops: Vec<OpOut>,
    }
    #[derive(Serialize)]
    struct OpOut {
        #[serde(flatten)]
        op: Op,
        seconds: f64,
        memory_bytes: u64,
        peak_bytes: u64,
    }
    let out = Out {
        format: RUN_FORMAT,
        chain_name: &run.chain_name,
        chain_digest: run.chain_digest.as_deref(),
        algorithm: &run.algorithm,
        budget_bytes: run.budget_bytes,
        source: &run.source,
        ops: run
            .ops
            .iter()
            .map(|m| OpOut {
                op: m.op,
                seconds: m.seconds,
                memory_bytes: m.memory_bytes,
                peak_bytes: m.peak_bytes,
            })
            .collect(),
    };
    serde_json::to_string_pretty(&out).expect("a run always serializes")
}

#[cfg(test)]
mod tests;
