//! Predicted against measured. Each test says which mutation of the code it
//! catches.

use super::*;
use crate::examples;
use crate::format::{read_run, write_run, Predicted};
use crate::simulator::{self, SimOptions, TensorId};
use crate::solvers::{solve, Algorithm, Options};

/// `algorithm`'s schedule of `chain` at `budget`, as a solver writes it.
fn schedule_of(chain: &Chain, algorithm: Algorithm, budget: u64) -> ScheduleFile {
    let sol = solve(chain, algorithm, budget, &Options::default()).unwrap();
    ScheduleFile::new(
        chain,
        algorithm.name(),
        budget,
        chain.bandwidth_bytes_per_s,
        Predicted {
            makespan_seconds: 0.0,
            peak_bytes: 0,
        },
        sol.ops.expect("feasible"),
    )
}

/// A real chain (measured by remat_torch on a CPU) and rotor between
/// M_low and M_high, so that it recomputes.
fn gpt2_rotor() -> (Chain, ScheduleFile, Trace) {
    let chain = examples::by_name("gpt2-cpu-torch").unwrap();
    let high = crate::simulator::simulate(&chain, &crate::solvers::store_all::schedule(&chain))
        .unwrap()
        .peak_bytes;
    let schedule = schedule_of(&chain, Algorithm::Rotor, high * 3 / 4);
    let trace = judge(&chain, &schedule.ops, schedule.budget_bytes, None).unwrap();
    assert!(trace.recomputations > 0);
    (chain, schedule, trace)
}

fn bytes_of(chain: &Chain, t: &TensorId) -> u64 {
    match *t {
        TensorId::Activation(l) => chain.output_bytes(l),
        TensorId::Saved(l) => chain.saved_bytes(l),
        // The states list δ^ℓ with the parameter gradients folded in.
        TensorId::Gradient(l) => chain.gradient_bytes(l),
        TensorId::Workspace(_) | TensorId::ParameterGradient(_) => {
            unreachable!("states list no workspace, and g^ℓ inside δ")
        }
    }
}

/// Catches `op_memory` counting an operation's workspace after it ended,
/// leaving out its own frees at its end, or taking the next operation's
/// allocations at the same instant: with one lane, the memory after each
/// operation is what the tensors held then weigh (`remat simulate
/// --states`, the other way the simulator says it).
#[test]
fn memory_after_each_op_is_what_its_state_holds() {
    let (chain, schedule, trace) = gpt2_rotor();
    let options = SimOptions {
        bandwidth: None,
        memory_limit: Some(schedule.budget_bytes),
    };
    let states = simulator::states(&chain, &schedule.ops, options).unwrap();
    let memory = trace.op_memory();
    assert_eq!(memory.len(), schedule.ops.len());
    for (state, m) in states.iter().zip(&memory) {
        let held: u64 = state.device.iter().map(|t| bytes_of(&chain, t)).sum();
        assert_eq!(m.after_bytes, held, "op {}", state.op);
        assert!(m.peak_bytes >= m.after_bytes);
    }
    // Every allocation happens inside some operation: the highest of the
    // per-op peaks is the step's.
    let top = memory.iter().map(|m| m.peak_bytes).max().unwrap();
    assert_eq!(top, trace.peak_bytes);
    // An operation with a workspace peaks above what it leaves.
    let with_workspace = chain.stages.iter().any(|s| s.forward_overhead_bytes > 0);
    assert!(!with_workspace || memory.iter().any(|m| m.peak_bytes > m.after_bytes));
}

/// Catches a row taking another operation's span or memory, a summary
/// summing or maxing the wrong column, and a change computed the other
/// way round: the simulator's own prediction, as a run, is 0 % off
/// everywhere (a schedule on one lane, without idle time).
#[test]
fn the_predicted_run_compares_with_zero_everywhere() {
    let (chain, schedule, trace) = gpt2_rotor();
    let run = predicted_run(&chain, &schedule, &trace, "the simulator");
    // Through the file, as the CLI and the explorer read it.
    let run = read_run(&write_run(&run)).unwrap();
    let c = compare(&chain, &schedule, None, &run).unwrap();
    assert_eq!(c.rows.len(), schedule.ops.len());
    for (i, r) in c.rows.iter().enumerate() {
        assert_eq!((r.index, r.op), (i, schedule.ops[i]));
        assert_eq!(r.predicted_memory_bytes, r.measured_memory_bytes);
        assert_eq!(r.predicted_peak_bytes, r.measured_peak_bytes);
        assert_eq!(r.predicted_seconds, r.measured_seconds);
        assert_eq!(r.predicted_start_seconds, trace.spans[i].start);
        assert_eq!(r.predicted_end_seconds, trace.spans[i].end);
    }
    assert_eq!(c.predicted_peak_bytes, trace.peak_bytes);
    assert_eq!(c.measured_peak_bytes, trace.peak_bytes);
    assert_eq!(c.peak_change(), Some(0.0));
    assert_eq!(c.predicted_makespan_seconds, trace.makespan_seconds);
    assert!(
        c.time_change().unwrap().abs() < 1e-12,
        "{:?}",
        c.time_change()
    );
}

/// Catches the signs and the denominators: a run 10 % slower in one op
/// and 25 % higher at the peak shows as such.
#[test]
fn a_perturbed_run_shows_its_differences_signed() {
    let (chain, schedule, trace) = gpt2_rotor();
    let mut run = predicted_run(&chain, &schedule, &trace, "perturbed");
    let at_peak = run
        .ops
        .iter()
        .position(|m| m.peak_bytes == trace.peak_bytes)
        .unwrap();
    run.ops[at_peak].peak_bytes = trace.peak_bytes / 4 * 5;
    let slow = run.ops.len() / 2;
    let extra = run.ops[slow].seconds * 0.1 + 1e-3;
    run.ops[slow].seconds += extra;
    run.ops[0].memory_bytes -= 1;
    let c = compare(&chain, &schedule, None, &run).unwrap();
    assert_eq!(c.measured_peak_bytes, trace.peak_bytes / 4 * 5);
    let peak = c.peak_change().unwrap();
    assert!((peak - 0.25).abs() < 1e-6, "{peak}");
    let time = c.time_change().unwrap();
    let expected = extra / trace.makespan_seconds;
    assert!((time - expected).abs() < 1e-9, "{time} vs {expected}");
    assert_eq!(
        c.rows[0].measured_memory_bytes + 1,
        c.rows[0].predicted_memory_bytes
    );
    assert!(c.rows[slow].measured_seconds > c.rows[slow].predicted_seconds);
}

/// Catches an offloading schedule's transfers read off the wrong lane:
/// its rows still match the prediction op for op, while the step's time
/// differs (transfers overlap the compute in the simulator, a run adds
/// them up).
#[test]
fn an_offloading_schedule_compares_op_by_op() {
    let chain = examples::teaching();
    let schedule = schedule_of(&chain, Algorithm::Pofo, 600 << 20);
    assert!(schedule.ops.iter().any(|o| o.is_transfer()));
    let bw = chain.bandwidth_bytes_per_s;
    let trace = judge(&chain, &schedule.ops, schedule.budget_bytes, bw).unwrap();
    let run = predicted_run(&chain, &schedule, &trace, "");
    let c = compare(&chain, &schedule, bw, &run).unwrap();
    for r in &c.rows {
        assert_eq!(r.predicted_memory_bytes, r.measured_memory_bytes);
        assert_eq!(r.predicted_peak_bytes, r.measured_peak_bytes);
    }
    assert_eq!(c.peak_change(), Some(0.0));
    assert!(c.measured_seconds >= c.predicted_makespan_seconds - 1e-12);
}

/// Catches the ops check left out, comparing only the common prefix, or
/// naming another index.
#[test]
fn a_run_of_other_operations_is_refused_at_the_first_difference() {
    let (chain, schedule, trace) = gpt2_rotor();
    let run = predicted_run(&chain, &schedule, &trace, "");
    let mut other = run.clone();
    let i = other
        .ops
        .iter()
        .position(|m| matches!(m.op, Op::ForwardCheckpoint { .. }))
        .unwrap();
    let stage = other.ops[i].op.stage();
    other.ops[i].op = Op::forward_all(stage);
    assert_eq!(
        compare(&chain, &schedule, None, &other)
            .unwrap_err()
            .to_string(),
        format!(
            "ops[{i}]: the run has forward_all {stage}, the schedule forward_checkpoint {stage}"
        )
    );
    let n = run.ops.len();
    let mut short = run.clone();
    short.ops.pop();
    assert_eq!(
        compare(&chain, &schedule, None, &short)
            .unwrap_err()
            .to_string(),
        format!(
            "ops[{}]: the run ends after {} operations, the schedule backward 1",
            n - 1,
            n - 1
        )
    );
    let mut long = run.clone();
    long.ops.push(MeasuredOp {
        op: Op::Offload {
            stage: 0,
            tensor: TensorKind::Output,
        },
        ..long.ops[0]
    });
    assert_eq!(
        compare(&chain, &schedule, None, &long)
            .unwrap_err()
            .to_string(),
        format!("ops[{n}]: the run has offload 0 output, the schedule ends after {n} operations")
    );
    // The check alone, on a trace the caller has (the explorer's).
    assert!(compare_trace(&schedule.ops, &trace, &short).is_err());
    assert!(compare_trace(&schedule.ops, &trace, &run).is_ok());
}

/// Catches the digest check left out, or refusing a run without one.
#[test]
fn a_run_for_another_chain_is_refused_by_its_digest() {
    let (chain, schedule, trace) = gpt2_rotor();
    let mut run = predicted_run(&chain, &schedule, &trace, "");
    let mut other = chain.clone();
    other.name = "other".into();
    other.stages[0].forward_seconds *= 2.0;
    let msg = compare(&other, &schedule, None, &run)
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        format!(
            "chain_digest: this run was measured for chain \"{}\" ({}), not for \"other\" ({})",
            chain.name,
            chain.digest(),
            other.digest()
        )
    );
    run.chain_digest = None;
    assert!(check_chain(&run, &other).is_ok());
    run.chain_digest = Some(chain.digest());
    assert!(check_chain(&run, &chain).is_ok());
}

/// Catches a change that divides by zero or loses its sign.
#[test]
fn changes_are_signed_and_none_without_a_prediction() {
    assert_eq!(change(100.0, 110.0), Some(0.10000000000000009));
    assert_eq!(
        change(100.0, 90.0).map(|c| (c * 100.0).round()),
        Some(-10.0)
    );
    assert_eq!(change(0.0, 0.0), Some(0.0));
    assert_eq!(change(0.0, 1.0), None);
}
