//! Shared helpers for the integration tests: random chains and brute force.
#![allow(dead_code)]

use proptest::prelude::*;
use remat_core::solvers::persistent::Variant;
use remat_core::{Chain, Op, Stage};

/// A chain whose times and sizes are small integers, so every sum is exact
/// in f64 and the DP's value must equal the simulated makespan bit for bit.
pub fn integer_chain(max_len: usize, with_overheads: bool) -> impl Strategy<Value = Chain> {
    let stage = (
        1u32..=10,
        1u32..=20,
        0u64..=8,
        0u64..=6,
        0u64..=8,
        0u64..=3,
        0u64..=3,
    )
        .prop_map(move |(f, b, out, extra, grad, of, ob)| Stage {
            name: String::new(),
            forward_seconds: f as f64,
            backward_seconds: b as f64,
            output_bytes: out,
            saved_bytes: out + extra,
            gradient_bytes: grad,
            forward_overhead_bytes: if with_overheads { of } else { 0 },
            backward_overhead_bytes: if with_overheads { ob } else { 0 },
        });
    (
        proptest::collection::vec(stage, 1..=max_len),
        0u64..=8,
        0u64..=8,
    )
        .prop_map(|(stages, input, input_grad)| Chain {
            name: "random".into(),
            source: "proptest".into(),
            input_bytes: input,
            input_gradient_bytes: input_grad,
            bandwidth_bytes_per_s: None,
            stages,
        })
}

/// A chain with real-valued times and large sizes, like a profiled network.
pub fn real_chain(max_len: usize) -> impl Strategy<Value = Chain> {
    let stage = (
        1e-4f64..1e-1,
        1e-4f64..2e-1,
        1u64..1 << 30,
        0u64..1 << 30,
        0u64..1 << 24,
    )
        .prop_map(|(f, b, out, extra, of)| Stage {
            name: String::new(),
            forward_seconds: f,
            backward_seconds: b,
            output_bytes: out,
            saved_bytes: out + extra,
            gradient_bytes: out,
            forward_overhead_bytes: of,
            backward_overhead_bytes: of / 2,
        });
    (proptest::collection::vec(stage, 1..=max_len), 1u64..1 << 28).prop_map(|(stages, input)| {
        Chain {
            name: "random".into(),
            source: "proptest".into(),
            input_bytes: input,
            input_gradient_bytes: input,
            bandwidth_bytes_per_s: None,
            stages,
        }
    })
}

/// Every persistent schedule of stages s..=t, by the structure the rotor
/// report proves persistent schedules have (Section 4.2): start with F_all^s
/// (then s+1..t, then B^s) or with F_ck^s, F_∅ up to the next checkpoint s'−1,
/// then s'..t, then s..s'−1. `Revolve` keeps F_all right before its B.
pub fn persistent_schedules(s: usize, t: usize, variant: Variant) -> Vec<Vec<Op>> {
    if s == t {
        return vec![vec![Op::ForwardAll { stage: s }, Op::Backward { stage: s }]];
    }
    let mut out = Vec::new();
    if variant == Variant::Rotor {
        for sub in persistent_schedules(s + 1, t, variant) {
            let mut ops = vec![Op::ForwardAll { stage: s }];
            ops.extend(sub);
            ops.push(Op::Backward { stage: s });
            out.push(ops);
        }
    }
    for next in s + 1..=t {
        let mut prefix = vec![Op::ForwardCheckpoint { stage: s }];
        prefix.extend((s + 1..next).map(|stage| Op::ForwardNone { stage }));
        let lefts = persistent_schedules(s, next - 1, variant);
        for right in persistent_schedules(next, t, variant) {
            for left in &lefts {
                let mut ops = prefix.clone();
                ops.extend(right.iter().copied());
                ops.extend(left.iter().copied());
                out.push(ops);
            }
        }
    }
    out
}
