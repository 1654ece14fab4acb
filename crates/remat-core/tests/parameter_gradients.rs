#![cfg(not(target_arch = "wasm32"))]
//! Parameter gradients that B^ℓ leaves resident (g^ℓ, PyTorch's
//! `zero_grad(set_to_none=True)`): the planners and the simulator count them
//! by folding Σ_{j>ℓ} g^j into δ^ℓ (`Chain::gradient_bytes`). These tests
//! check the fold against a replay that books the gradients apart: the same
//! schedule simulated on the chain with g^ℓ = 0 (o_b^ℓ unchanged: B^ℓ's own
//! gradients while it runs are part of its measured transient), with the
//! gradients of the backwards before it, G_{ℓ+1} = Σ_{j>ℓ} g^j, added while
//! B^ℓ runs, and G_ℓ from its end on. The two must agree on the peak and the
//! final memory of every persistent schedule and every DTR schedule.
//!
//! How it could fail: a fold that forgets the gradients in o_b (B^ℓ's own
//! and earlier ones counted twice while it runs), that folds Σ_{j≥ℓ} into
//! δ^ℓ instead of Σ_{j>ℓ}, or a simulator that loses g^ℓ (it books the
//! gradients as residencies of their own, so the trace can name them).
//! Mutation runs: the simulator's o_b without `- carried` (when it still
//! folded) → both property tests fail (the simulated peak is G_ℓ above the
//! replay's while B^ℓ runs); B^ℓ not allocating its g^ℓ residency
//! (engine.rs, `backward`) → both fail.

mod common;

use common::{integer_chain, persistent_schedules};
use proptest::prelude::*;
use remat_core::simulator::simulate;
use remat_core::solvers::persistent::Variant;
use remat_core::solvers::{solve, Algorithm, Options};
use remat_core::{Chain, Op};

/// The chain with its parameter gradients taken out (g^ℓ = 0).
fn without_parameter_gradients(chain: &Chain) -> Chain {
    let mut bare = chain.clone();
    for s in &mut bare.stages {
        s.parameter_gradient_bytes = 0;
    }
    bare
}

/// (peak, final bytes) of `ops` with the gradients booked apart: the bare
/// chain's memory curve, each step of B^ℓ raised by G_{ℓ+1}, its last step
/// (B^ℓ has ended) and those of later operations by G_ℓ.
fn replay(chain: &Chain, ops: &[Op]) -> Option<(u64, u64)> {
    let trace = simulate(&without_parameter_gradients(chain), ops).ok()?;
    // G before and after op i: Σ g^j over the backwards among ops[..i] / ops[..=i].
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut g = 0;
    for op in ops {
        before.push(g);
        if let Op::Backward { stage } = op {
            g += chain.stage(*stage).parameter_gradient_bytes;
        }
        after.push(g);
    }
    let mut last_step = vec![usize::MAX; ops.len()];
    for (k, m) in trace.memory.iter().enumerate() {
        if let Some(i) = m.op {
            last_step[i] = k;
        }
    }
    let peak = trace
        .memory
        .iter()
        .enumerate()
        .map(|(k, m)| {
            m.bytes
                + m.op.map_or(0, |i| {
                    if last_step[i] == k {
                        after[i]
                    } else {
                        before[i]
                    }
                })
        })
        .max()
        .unwrap_or(0);
    Some((peak, trace.final_bytes + g))
}

fn check(chain: &Chain, ops: &[Op]) -> Result<(), TestCaseError> {
    let Some(expected) = replay(chain, ops) else {
        return Ok(());
    };
    let trace = simulate(chain, ops).expect("a schedule the bare chain runs, the chain runs");
    prop_assert_eq!(
        (trace.peak_bytes, trace.final_bytes),
        expected,
        "folded simulation vs replay with the gradients apart, ops {:?}",
        ops
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every persistent schedule of chains of up to 5 stages.
    #[test]
    fn fold_is_the_replay(chain in integer_chain(5, true)) {
        for ops in persistent_schedules(1, chain.len(), Variant::Rotor) {
            check(&chain, &ops)?;
        }
    }

    /// DTR's schedules, which are not persistent (they evict and recompute
    /// anywhere), at budgets from the floor up.
    #[test]
    fn fold_is_the_replay_for_dtr(chain in integer_chain(8, true), at in 0u64..=40) {
        let budget = remat_core::solvers::memory_floor(&chain).bytes + at;
        let plan = solve(&chain, Algorithm::Dtr, budget, &Options::default()).unwrap();
        if let Some(ops) = plan.ops {
            check(&chain, &ops)?;
        }
    }
}

/// With no parameter gradient the fold is the identity: a chain's numbers
/// and its digest are those of a chain that never had the field.
#[test]
fn no_parameter_gradients_change_nothing() {
    let chain = remat_core::examples::teaching();
    for l in 0..=chain.len() {
        assert_eq!(chain.gradient_bytes(l), chain.activation_gradient_bytes(l));
    }
    let mut with = chain.clone();
    with.stages[2].parameter_gradient_bytes = 1 << 20;
    with.stages[2].backward_overhead_bytes += 1 << 20;
    assert_ne!(chain.digest(), with.digest());
    // B^3 left 1 MiB: δ^2, δ^1, δ^0 carry it, δ^3 and later do not.
    assert_eq!(with.gradient_bytes(2), chain.gradient_bytes(2) + (1 << 20));
    assert_eq!(with.gradient_bytes(0), chain.gradient_bytes(0) + (1 << 20));
    assert_eq!(with.gradient_bytes(3), chain.gradient_bytes(3));
    assert_eq!(
        with.gradient_sizes(),
        (0..=with.len())
            .map(|l| with.gradient_bytes(l))
            .collect::<Vec<_>>()
    );
}

/// A stage cannot free its own parameter gradients: o_b below
/// −(δ^ℓ + ā^ℓ) + g^ℓ is refused, naming the field and the bound.
#[test]
fn an_overhead_that_frees_the_gradients_is_refused() {
    let mut chain = remat_core::examples::teaching();
    let s = &mut chain.stages[1];
    s.parameter_gradient_bytes = 100;
    s.backward_overhead_bytes = -((s.gradient_bytes + s.saved_bytes) as i64);
    let e = chain.validate().unwrap_err().to_string();
    assert!(e.contains("stages[1].backward_overhead_bytes"), "{e}");
    assert!(e.contains("+ parameter_gradient_bytes ="), "{e}");
    chain.stages[1].backward_overhead_bytes += 100;
    chain.validate().unwrap();
}

/// A floor set by a backward says what its δ carries: the parameter
/// gradients the backwards after it left. Fails if the message counts them
/// without a word (a user reads "δ^1 and δ^0" and sees megabytes more).
#[test]
fn the_floor_names_the_gradients_it_holds() {
    let mut chain = remat_core::examples::teaching();
    (chain.input_bytes, chain.input_gradient_bytes) = (1000, 0);
    chain.stages = vec![
        remat_core::Stage::new("a", 1.0, 1.0, 1000, 2000),
        remat_core::Stage::new("b", 1.0, 1.0, 4, 1000),
    ];
    chain.stages[1].parameter_gradient_bytes = 1 << 20;
    chain.stages[1].backward_overhead_bytes = 1 << 20;
    chain.validate().unwrap();
    let floor = remat_core::solvers::memory_floor(&chain);
    assert_eq!(floor.op, Op::Backward { stage: 1 });
    assert_eq!(floor.parameter_gradients, 1 << 20);
    assert!(
        floor
            .to_string()
            .ends_with("and the parameter gradients the backwards after it left (1.00 MiB)"),
        "{floor}"
    );
}

/// A chain scaled to twice the batch keeps its parameter gradients (they
/// are the parameters', not the batch's) and scales only the rest of o_b.
/// Fails if `scaled` doubles g^ℓ or the whole o_b (tried: o_b scaled with
/// g inside → 2·(g + 100) where g + 200 is expected).
#[test]
fn a_scaled_chain_keeps_its_parameter_gradients() {
    let mut chain = remat_core::examples::teaching();
    let s = &mut chain.stages[1];
    s.parameter_gradient_bytes = 1000;
    s.backward_overhead_bytes = 1000 + 100;
    chain.validate().unwrap();
    let twice = remat_core::model::scaled(&chain, remat_core::model::Scale::batch(1, 2)).unwrap();
    assert_eq!(twice.stages[1].parameter_gradient_bytes, 1000);
    assert_eq!(twice.stages[1].backward_overhead_bytes, 1000 + 200);
}

/// The peak's line names the parameter gradients apart from δ: a reader of
/// `during B^1: δ^0 …` must not see δ^0 at 1 MiB more than the stage says.
/// Fails if the simulator folds them into δ again, or if each g^ℓ is an
/// entry of its own (nine entries would push the plan's tensors out of the
/// six the line shows).
#[test]
fn the_peak_names_the_parameter_gradients_apart() {
    let mut chain = remat_core::examples::teaching();
    for s in &mut chain.stages {
        s.parameter_gradient_bytes = 1 << 20;
        s.backward_overhead_bytes = 1 << 20;
    }
    chain.validate().unwrap();
    let ops = remat_core::solvers::store_all::schedule(&chain);
    let trace = simulate(&chain, &ops).unwrap();
    let line = trace.peak_line(&ops);
    let named = trace.peak_named(&ops);
    let grads: Vec<_> = named
        .iter()
        .filter(|(n, _)| n.contains("parameter"))
        .collect();
    assert_eq!(grads.len(), 1, "{line}");
    let (name, bytes) = grads[0];
    // The peak of store-all is in B^10 … B^1; B^ℓ's gradients are in its
    // workspace while it runs, the ones before it in their own entry.
    assert!(name.starts_with("parameter gradients of B^"), "{line}");
    assert!(name.ends_with("B^10"), "{line}");
    assert_eq!(bytes % (1 << 20), 0, "{line}");
    for (n, b) in &named {
        if let Some(l) = n.strip_prefix("δ^") {
            let l: usize = l.parse().unwrap();
            assert_eq!(*b, chain.activation_gradient_bytes(l), "{line}");
        }
    }
    // Every g^ℓ stays to the step's end.
    let kept: u64 = (trace.residency.iter())
        .filter(|r| {
            matches!(
                r.tensor,
                remat_core::simulator::TensorId::ParameterGradient(_)
            )
        })
        .inspect(|r| assert_eq!(r.end, trace.makespan_seconds))
        .map(|r| r.bytes)
        .sum();
    assert_eq!(kept, chain.parameter_gradient_total());
}
