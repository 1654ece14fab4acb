//! The simulator's accounting on hand-checked cases, and its error messages.

use super::*;
use crate::model::{Chain, Stage};
use crate::schedule::Op::*;
use crate::schedule::TensorKind;

/// Three stages with distinct sizes so every tensor is recognizable.
fn chain() -> Chain {
    let mut stages = vec![
        Stage::new("1", 1.0, 2.0, 10, 30),
        Stage::new("2", 1.0, 2.0, 20, 50),
        Stage::new("3", 1.0, 2.0, 1, 7),
    ];
    stages[1].forward_overhead_bytes = 5;
    stages[2].backward_overhead_bytes = 3;
    Chain {
        name: "hand".into(),
        source: "test".into(),
        input_bytes: 100,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: Some(10.0),
        stages,
    }
}

#[test]
fn store_all_by_hand() {
    let c = chain();
    let ops = [
        ForwardAll { stage: 1 },
        ForwardAll { stage: 2 },
        ForwardAll { stage: 3 },
        Backward { stage: 3 },
        Backward { stage: 2 },
        Backward { stage: 1 },
    ];
    let t = simulate(&c, &ops).unwrap();
    // Start: a^0 100 + δ^3 1. F_all^1: +30; F_all^2: +50 +5 transient;
    // F_all^3: +7 → 188. B^3: +δ^2 (20) +3 → 211, then frees δ^3, ā^3.
    assert_eq!(t.peak_bytes, 211);
    assert_eq!(t.makespan_seconds, 9.0);
    assert_eq!(t.recomputations, 0);
    assert_eq!(t.idle_seconds, 0.0);
    // After B^1 only δ^0 (0 bytes) is left.
    assert_eq!(t.final_bytes, 0);
    assert_eq!(t.spans.len(), 6);
}

#[test]
fn checkpoints_survive_forward_none_and_plain_inputs_do_not() {
    let c = chain();
    let ops = [
        ForwardCheckpoint { stage: 1 }, // keeps a^0, makes a^1
        ForwardNone { stage: 2 },       // drops a^1 (not a checkpoint)
        ForwardAll { stage: 3 },
        Backward { stage: 3 }, // frees a^2
        ForwardAll { stage: 1 },
        ForwardAll { stage: 2 },
        Backward { stage: 2 },
        Backward { stage: 1 },
    ];
    let t = simulate(&c, &ops).unwrap();
    assert_eq!(t.recomputations, 2);
    assert_eq!(t.makespan_seconds, 11.0);
    // Reading a^1 after F_∅^2 dropped it is an error naming op 1.
    let bad = [
        ForwardCheckpoint { stage: 1 },
        ForwardNone { stage: 2 },
        ForwardAll { stage: 2 },
    ];
    let err = simulate(&c, &bad).unwrap_err();
    assert_eq!(err.index, 2);
    assert_eq!(err.tensor, "a^1");
    assert_eq!(
        err.to_string(),
        "op 2 (F_all^2): a^1 is not resident: it was freed by op 1"
    );
}

#[test]
fn invalid_schedules_say_which_op_which_tensor_and_why() {
    let c = chain();
    let err = simulate(&c, &[Backward { stage: 3 }]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op 0 (B^3): ā^3 is not resident: it was never computed"
    );
    let err = simulate(&c, &[ForwardAll { stage: 4 }]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op 0 (F_all^4): stage 4 does not exist: stages are numbered 1..=3"
    );
    let err = simulate(&c, &[ForwardAll { stage: 1 }, ForwardAll { stage: 1 }]).unwrap_err();
    assert!(err.to_string().contains("ā^1 is already resident"), "{err}");
    let err = simulate(
        &c,
        &[Prefetch {
            stage: 1,
            tensor: TensorKind::Output,
        }],
    )
    .unwrap_err();
    assert!(err.to_string().contains("has no copy on the host"), "{err}");
    let err = simulate_with_bandwidth(
        &c,
        &[
            ForwardAll { stage: 1 },
            Offload {
                stage: 1,
                tensor: TensorKind::Saved,
            },
        ],
        None,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("needs a host↔device bandwidth"),
        "{err}"
    );
}

#[test]
fn offload_and_prefetch_use_the_copy_lane_and_cause_idle_time() {
    let c = chain();
    // Offload ā^1 (30 bytes at 10 B/s = 3 s) while stage 2 computes, then
    // bring it back before B^1 needs it.
    let ops = [
        ForwardAll { stage: 1 },
        Offload {
            stage: 1,
            tensor: TensorKind::Saved,
        },
        ForwardCheckpoint { stage: 2 },
        ForwardAll { stage: 3 },
        Backward { stage: 3 },
        ForwardAll { stage: 2 },
        Backward { stage: 2 },
        Prefetch {
            stage: 1,
            tensor: TensorKind::Saved,
        },
        Backward { stage: 1 },
    ];
    let err = simulate(&c, &ops).unwrap_err();
    // F_ck^2 reads ā^1, which left the device at op 1.
    assert!(
        err.to_string()
            .starts_with("op 2 (F_ck^2): ā^1 is on the host (offloaded by op 1)"),
        "{err}"
    );
    let ops = [
        ForwardAll { stage: 1 },
        ForwardCheckpoint { stage: 2 },
        Offload {
            stage: 1,
            tensor: TensorKind::Saved,
        },
        ForwardAll { stage: 3 },
        Backward { stage: 3 },
        Prefetch {
            stage: 1,
            tensor: TensorKind::Saved,
        },
        ForwardAll { stage: 2 },
        Backward { stage: 2 },
        Backward { stage: 1 },
    ];
    let t = simulate(&c, &ops).unwrap();
    assert_eq!(t.offloaded_bytes, 30);
    assert_eq!(t.prefetched_bytes, 30);
    // F_all^1 0–1 s, F_ck^2 1–2 s (reads ā^1 until 2 s). The offload copies
    // 30 B at 10 B/s from 1 to 4 s; the device copy is freed at 4 s. The
    // prefetch follows on the copy lane, 4–7 s, so F_all^2 (which reads ā^1)
    // waits from 5 s (end of B^3) to 7 s: 2 s idle, makespan 12 s.
    let copy: Vec<_> = t.spans.iter().filter(|s| s.lane == Lane::Copy).collect();
    assert_eq!((copy[0].start, copy[0].end), (1.0, 4.0));
    assert_eq!((copy[1].start, copy[1].end), (4.0, 7.0));
    assert_eq!(t.idle_seconds, 2.0);
    assert_eq!(t.makespan_seconds, 12.0);
    // ā^1 is off the device between 4 s and 4 s + … : peak is lower than
    // keeping it, and a slower link makes the wait longer.
    let slow = simulate_with_bandwidth(&c, &ops, Some(3.0)).unwrap();
    assert_eq!(slow.makespan_seconds, 26.0);
    assert_eq!(slow.idle_seconds, 16.0);
}

#[test]
fn zero_length_operations_still_count_their_memory() {
    let mut c = chain();
    for s in &mut c.stages {
        s.forward_seconds = 0.0;
        s.backward_seconds = 0.0;
    }
    let ops = crate::solvers::store_all::schedule(&c);
    let t = simulate(&c, &ops).unwrap();
    assert_eq!(t.peak_bytes, 211);
    assert_eq!(t.makespan_seconds, 0.0);
}

#[test]
fn chrome_trace_is_valid_json_with_both_lanes() {
    let c = chain();
    let ops = crate::solvers::store_all::schedule(&c);
    let t = simulate(&c, &ops).unwrap();
    let v: serde_json::Value = serde_json::from_str(&chrome_trace_json(&c, &ops, &t)).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), ops.len());
    assert!(events.iter().any(|e| e["ph"] == "C"));
}
