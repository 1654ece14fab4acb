//! A PyTorch CUDA memory snapshot of one step, read as a measured run of
//! the plan it ran (issue 45, item 4), so that it is drawn and compared
//! exactly as a `remat-run/1` file is.
//!
//! **Aligned on the step.** A snapshot records allocations, not
//! operations, on the host's clock at launch: its recording's span (first
//! to last event) is laid over the predicted step, times scaled by one
//! factor, and each operation's measured memory is read in its predicted
//! span: the highest in it and the level at its end. Its measured time is
//! its predicted span times that factor, so the step's measured time is
//! the recording's. The bytes are the simulator's initial state (a^0, δ^L)
//! plus what the trace allocated since recording started, floored at 0:
//! blocks allocated before recording (weights, the batch) are in no event.
//! Where the step also allocates parameter gradients or optimizer state,
//! the snapshot counts them and a chain that does not (no
//! `parameter_gradient_bytes`) will read below it.

use crate::format::cuda_snapshot::{AllocatedPoint, CudaSnapshot};
use crate::format::{MeasuredOp, RunFile};
use crate::model::Chain;
use crate::schedule::Op;
use crate::simulator::Trace;

/// Why a snapshot cannot be read as a run of a plan.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    #[error("device_traces: no allocation was recorded on any device; call torch.cuda.memory._record_memory_history() before the step")]
    NoEvents,
    #[error("the plan has no operations to lay the snapshot over")]
    NoPlan,
}

/// What a run made from a snapshot says of itself.
pub struct SnapshotSource<'a> {
    pub file_name: &'a str,
    pub algorithm: &'a str,
    pub budget_bytes: u64,
}

/// The run `snapshot` measured for `ops` (simulated as `trace` on
/// `chain`), on the device with the most events; see the module's doc.
pub fn snapshot_run(
    snapshot: &CudaSnapshot,
    chain: &Chain,
    ops: &[Op],
    trace: &Trace,
    source: SnapshotSource<'_>,
) -> Result<RunFile, SnapshotError> {
    if ops.is_empty() || trace.spans.len() != ops.len() {
        return Err(SnapshotError::NoPlan);
    }
    let device = snapshot.busiest_device().ok_or(SnapshotError::NoEvents)?;
    let curve = snapshot.allocated_curve(device);
    if curve.is_empty() {
        return Err(SnapshotError::NoEvents);
    }
    let recorded = curve.last().map_or(0.0, |p| p.seconds);
    let makespan = trace.makespan_seconds;
    // Recorded seconds per predicted second (1 where either is 0: then the
    // events all sit at the step's start).
    let scale = if makespan > 0.0 && recorded > 0.0 {
        recorded / makespan
    } else {
        1.0
    };
    let initial = trace.memory.first().map_or(0, |m| m.bytes) as i64;
    let level = |bytes: i64| (initial + bytes).max(0) as u64;
    let ops = ops
        .iter()
        .zip(&trace.spans)
        .map(|(op, span)| {
            let (from, to) = (span.start * scale, span.end * scale);
            let after = level(at(&curve, to));
            // The highest level in its span, both ends included: events at
            // an end may be the neighbour's (a snapshot does not say whose),
            // so a peak may read high at a boundary, never low.
            let peak = curve[first_after(&curve, from)..first_after(&curve, to)]
                .iter()
                .map(|p| level(p.bytes))
                .chain([level(at(&curve, from)), after])
                .max()
                .unwrap_or(after);
            MeasuredOp {
                op: *op,
                seconds: (span.end - span.start) * scale,
                memory_bytes: after,
                peak_bytes: peak,
            }
        })
        .collect();
    let events: usize = snapshot.devices.iter().map(Vec::len).sum();
    Ok(RunFile {
        chain_name: chain.name.clone(),
        chain_digest: Some(chain.digest()),
        algorithm: source.algorithm.to_string(),
        budget_bytes: source.budget_bytes,
        source: format!(
            "CUDA memory snapshot {}: device {device}, {events} allocator events over {:.3} s, laid over the predicted step (times scaled by {scale:.3}; bytes from when recording started, plus a^0 and δ^L)",
            source.file_name, recorded
        ),
        ops,
    })
}

/// The index of the first point after `t` (points at `t` included before).
fn first_after(curve: &[AllocatedPoint], t: f64) -> usize {
    curve.partition_point(|p| p.seconds <= t)
}

/// The allocated bytes at `t`: the last point at or before it (0 before
/// the first).
fn at(curve: &[AllocatedPoint], t: f64) -> i64 {
    first_after(curve, t)
        .checked_sub(1)
        .map_or(0, |i| curve[i].bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::teaching;
    use crate::format::cuda_snapshot::{Action, TraceEvent};
    use crate::simulator::simulate;
    use crate::solvers::{max_useful_budget, solve, Algorithm, Options};

    /// A snapshot that replays `trace`'s memory curve as allocator events,
    /// `us_per_second` microseconds of recording per predicted second:
    /// what a runtime that allocates exactly as the simulator would record.
    fn replayed(trace: &Trace, us_per_second: f64) -> CudaSnapshot {
        let initial = trace.memory[0].bytes as i64;
        let mut last = initial;
        let mut events = Vec::new();
        for step in &trace.memory[1..] {
            let change = step.bytes as i64 - last;
            last = step.bytes as i64;
            events.push(TraceEvent {
                action: if change >= 0 {
                    Action::Alloc
                } else {
                    Action::FreeCompleted
                },
                size: change.unsigned_abs(),
                time_us: Some((step.time * us_per_second).round() as i64),
            });
        }
        // The recording starts with the step.
        events.insert(
            0,
            TraceEvent {
                action: Action::Other,
                size: 0,
                time_us: Some(0),
            },
        );
        CudaSnapshot {
            devices: vec![vec![], events],
        }
    }

    // Could fail if the snapshot's time were not laid over the step (its
    // microseconds read as seconds: every op would read the level at the
    // step's end), if the initial state were left out (every level short
    // by a^0 and δ^L), or if an op's peak missed the events inside its
    // span. Mutation run: `scale` fixed at 1 → this failed.
    #[test]
    fn a_snapshot_replaying_the_simulated_step_reads_as_the_prediction() {
        let chain = teaching();
        let budget = max_useful_budget(&chain) * 6 / 10;
        let plan = solve(&chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
        let ops = plan.ops.unwrap();
        let trace = simulate(&chain, &ops).unwrap();
        let snapshot = replayed(&trace, 1e6 * 0.37);
        let source = SnapshotSource {
            file_name: "step.pickle",
            algorithm: "rotor",
            budget_bytes: budget,
        };
        let run = snapshot_run(&snapshot, &chain, &ops, &trace, source).unwrap();
        assert_eq!(run.peak_bytes(), trace.peak_bytes);
        assert!((run.seconds() / trace.makespan_seconds - 0.37).abs() < 1e-6);
        // Each op's window holds every event of its span (at its ends, its
        // neighbours' too: a snapshot cannot tell whose they are).
        let predicted = trace.op_memory();
        for (m, p) in run.ops.iter().zip(&predicted) {
            assert!(
                m.peak_bytes >= p.peak_bytes,
                "{:?}: {} < {}",
                m.op,
                m.peak_bytes,
                p.peak_bytes
            );
            assert!(m.peak_bytes <= trace.peak_bytes);
        }
        assert!(run.source.contains("device 1"), "{}", run.source);
    }

    #[test]
    fn an_empty_recording_says_how_to_record() {
        let chain = teaching();
        let ops = crate::solvers::store_all::schedule(&chain);
        let trace = simulate(&chain, &ops).unwrap();
        let empty = CudaSnapshot {
            devices: vec![vec![]],
        };
        let source = SnapshotSource {
            file_name: "x",
            algorithm: "",
            budget_bytes: 0,
        };
        let err = snapshot_run(&empty, &chain, &ops, &trace, source).unwrap_err();
        assert!(err.to_string().contains("_record_memory_history"), "{err}");
    }
}
