//! Predicted against measured: a schedule's simulated step held op by op
//! against a `remat-run/1` file, the same step as a runtime measured it
//! (`remat simulate --measured`, the explorer's overlay).
//!
//! The prediction is the simulator's, the one judge: each operation's span
//! on its lane and [`Trace::op_memory`] (the memory once it ended, the
//! highest while it ran), read off the same memory curve as the peak. A
//! run is only compared with the schedule it ran: the same operations in
//! the same order, on the chain it was made for.

use crate::format::{MeasuredOp, RunFile, ScheduleFile};
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::simulator::{judge, SimError, Trace};
use serde::Serialize;

/// One operation, predicted and measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OpRow {
    /// Its index in the schedule.
    pub index: usize,
    pub op: Op,
    /// Its span on its lane in the simulated step.
    pub predicted_start_seconds: f64,
    pub predicted_end_seconds: f64,
    pub predicted_seconds: f64,
    pub measured_seconds: f64,
    /// The chain's memory once it ended.
    pub predicted_memory_bytes: u64,
    pub measured_memory_bytes: u64,
    /// The highest chain memory while it ran.
    pub predicted_peak_bytes: u64,
    pub measured_peak_bytes: u64,
}

/// A run held against its schedule's simulation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub rows: Vec<OpRow>,
    /// The simulated step's peak (its initial state included).
    pub predicted_peak_bytes: u64,
    /// The highest `peak_bytes` of the run.
    pub measured_peak_bytes: u64,
    /// The simulated step's makespan.
    pub predicted_makespan_seconds: f64,
    /// Σ of the run's seconds: its operations ran one after the other.
    pub measured_seconds: f64,
}

impl Comparison {
    /// measured ÷ predicted − 1 of the peaks; None when nothing was predicted.
    pub fn peak_change(&self) -> Option<f64> {
        change(
            self.predicted_peak_bytes as f64,
            self.measured_peak_bytes as f64,
        )
    }

    /// measured ÷ predicted − 1 of the step's time.
    pub fn time_change(&self) -> Option<f64> {
        change(self.predicted_makespan_seconds, self.measured_seconds)
    }
}

/// measured ÷ predicted − 1, signed; None when `predicted` is 0 (0 when
/// both are).
pub fn change(predicted: f64, measured: f64) -> Option<f64> {
    if predicted > 0.0 {
        Some(measured / predicted - 1.0)
    } else if measured == 0.0 {
        Some(0.0)
    } else {
        None
    }
}

/// Why a run cannot be held against a schedule.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("chain_digest: this run was measured for chain \"{run_chain}\" ({run_digest}), not for \"{chain}\" ({digest})")]
    WrongChain {
        run_chain: String,
        run_digest: String,
        chain: String,
        digest: String,
    },
    /// The first operation where the run and the schedule part.
    #[error("ops[{index}]: the run {}, the schedule {}", in_file(*.run, *.index, "has "), in_file(*.schedule, *.index, ""))]
    OpsDiffer {
        index: usize,
        run: Option<Op>,
        schedule: Option<Op>,
    },
    /// The schedule itself does not run (the simulator's message).
    #[error("invalid schedule: {0}")]
    Sim(#[from] SimError),
}

/// `has forward_all 3` (`verb` first), `offload 2 saved`, or `ends after 7
/// operations`: an operation as the files write it.
fn in_file(op: Option<Op>, index: usize, verb: &str) -> String {
    let Some(op) = op else {
        return format!(
            "ends after {index} operation{}",
            if index == 1 { "" } else { "s" }
        );
    };
    let tensor = match op {
        Op::Offload { tensor, .. } | Op::Prefetch { tensor, .. } | Op::Release { tensor, .. } => {
            match tensor {
                TensorKind::Output => " output",
                TensorKind::Saved => " saved",
            }
        }
        _ => "",
    };
    format!("{verb}{} {}{tensor}", op.kind_name(), op.stage())
}

/// Refuses a run measured for another chain, when the run names its
/// chain's digest (a run without one is taken as given).
pub fn check_chain(run: &RunFile, chain: &Chain) -> Result<(), CompareError> {
    let digest = chain.digest();
    match &run.chain_digest {
        Some(d) if *d != digest => Err(CompareError::WrongChain {
            run_chain: run.chain_name.clone(),
            run_digest: d.clone(),
            chain: chain.name.clone(),
            digest,
        }),
        _ => Ok(()),
    }
}

/// Refuses a run whose operations are not `ops`, naming the first that
/// differs.
pub fn check_ops(run: &RunFile, ops: &[Op]) -> Result<(), CompareError> {
    let n = run.ops.len().max(ops.len());
    match (0..n).find(|&i| run.ops.get(i).map(|m| m.op) != ops.get(i).copied()) {
        Some(index) => Err(CompareError::OpsDiffer {
            index,
            run: run.ops.get(index).map(|m| m.op),
            schedule: ops.get(index).copied(),
        }),
        None => Ok(()),
    }
}

/// Holds `run` against `trace`, the simulation of `ops` (a schedule the
/// caller has judged already, as the explorer has the plan on screen).
pub fn compare_trace(ops: &[Op], trace: &Trace, run: &RunFile) -> Result<Comparison, CompareError> {
    check_ops(run, ops)?;
    let rows = trace
        .spans
        .iter()
        .zip(trace.op_memory())
        .zip(&run.ops)
        .map(|((span, memory), measured)| OpRow {
            index: span.op,
            op: measured.op,
            predicted_start_seconds: span.start,
            predicted_end_seconds: span.end,
            predicted_seconds: span.end - span.start,
            measured_seconds: measured.seconds,
            predicted_memory_bytes: memory.after_bytes,
            measured_memory_bytes: measured.memory_bytes,
            predicted_peak_bytes: memory.peak_bytes,
            measured_peak_bytes: measured.peak_bytes,
        })
        .collect();
    Ok(Comparison {
        rows,
        predicted_peak_bytes: trace.peak_bytes,
        measured_peak_bytes: run.peak_bytes(),
        predicted_makespan_seconds: trace.makespan_seconds,
        measured_seconds: run.seconds(),
    })
}

/// Judges `schedule` on `chain` (its budget as memory limit, at
/// `bandwidth`, as `remat simulate` does) and holds `run` against it.
/// Refuses a run for another chain or of other operations.
pub fn compare(
    chain: &Chain,
    schedule: &ScheduleFile,
    bandwidth: Option<f64>,
    run: &RunFile,
) -> Result<Comparison, CompareError> {
    check_chain(run, chain)?;
    check_ops(run, &schedule.ops)?;
    let trace = judge(chain, &schedule.ops, schedule.budget_bytes, bandwidth)?;
    compare_trace(&schedule.ops, &trace, run)
}

/// The run the simulator predicts for `schedule` on `chain` (`trace` is its
/// simulation): each operation's span and memory as measured. It compares
/// with 0 % everywhere when its operations run one after the other (no
/// transfer overlapping the compute); a starting point for a fixture.
pub fn predicted_run(
    chain: &Chain,
    schedule: &ScheduleFile,
    trace: &Trace,
    source: &str,
) -> RunFile {
    RunFile {
        chain_name: chain.name.clone(),
        chain_digest: Some(chain.digest()),
        algorithm: schedule.algorithm.clone(),
        budget_bytes: schedule.budget_bytes,
        source: source.to_string(),
        ops: schedule
            .ops
            .iter()
            .zip(&trace.spans)
            .zip(trace.op_memory())
            .map(|((op, span), memory)| MeasuredOp {
                op: *op,
                seconds: span.end - span.start,
                memory_bytes: memory.after_bytes,
                peak_bytes: memory.peak_bytes,
            })
            .collect(),
    }
}

mod snapshot;
pub use snapshot::{snapshot_run, SnapshotError, SnapshotSource};

#[cfg(test)]
mod tests;
