//! The core on WebAssembly, as the explorer runs it: the DP's value equals
//! the simulated time bit for bit on integer chains, which holds only if the
//! table (built with the wasm SIMD kernel when `simd128` is on) and the
//! scalar read-out agree exactly. Run by scripts/test.sh under node:
//! `cargo test --target wasm32-unknown-unknown -p remat-core --test wasm`.
#![cfg(target_arch = "wasm32")]

use remat_core::simulator::simulate;
use remat_core::solvers::persistent::{min_budget, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Algorithm, Options, Planner};
use remat_core::{examples, Chain};
use wasm_bindgen_test::wasm_bindgen_test;

/// A chain with small integer times and sizes (every sum exact in f64).
fn integer_chain(n: usize, seed: u64) -> Chain {
    let mut chain = examples::synthetic(n);
    let mut x = seed;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for s in &mut chain.stages {
        s.forward_seconds = (1 + next(9)) as f64;
        s.backward_seconds = (1 + next(19)) as f64;
        s.output_bytes = 1 + next(8);
        s.saved_bytes = s.output_bytes + next(6);
        s.gradient_bytes = s.output_bytes;
    }
    chain.input_bytes = 1 + next(8);
    chain.input_gradient_bytes = chain.input_bytes;
    chain
}

#[wasm_bindgen_test]
fn dp_value_equals_simulated_time_exactly() {
    for seed in 0..40u64 {
        let chain = integer_chain(6 + (seed as usize % 20), seed);
        let high = max_useful_budget(&chain);
        let low = min_budget(&chain, Variant::Rotor);
        for algorithm in [Algorithm::Rotor, Algorithm::Revolve] {
            // One-byte slots: the grid is exact at every budget.
            let options = Options {
                slots: high as usize,
                ..Options::default()
            };
            let planner =
                Planner::build(&chain, algorithm, high, &options, &mut no_progress()).unwrap();
            for i in 0..=8 {
                let budget = low + (high - low) * i / 8;
                let sol = planner.plan(&chain, budget).unwrap();
                let Some(ops) = sol.ops.as_ref() else {
                    continue;
                };
                let trace = simulate(&chain, ops).unwrap();
                assert!(trace.peak_bytes <= budget);
                assert_eq!(
                    sol.predicted_seconds,
                    Some(trace.makespan_seconds),
                    "{algorithm} seed {seed} budget {budget}"
                );
                assert_eq!(sol.predicted_peak_bytes, Some(trace.peak_bytes));
            }
        }
    }
}

#[wasm_bindgen_test]
fn examples_plan_and_simulate() {
    for name in examples::names() {
        let chain = examples::by_name(name).unwrap();
        let high = max_useful_budget(&chain);
        let planner = Planner::build(
            &chain,
            Algorithm::Rotor,
            high,
            &Options::default(),
            &mut no_progress(),
        )
        .unwrap();
        let sol = planner.plan(&chain, high * 3 / 4).unwrap();
        let trace = simulate(&chain, sol.ops.as_ref().unwrap()).unwrap();
        assert!(trace.peak_bytes <= high * 3 / 4);
    }
}

/// pofo on wasm: C_Δ is filled as a wavefront whose readers wait for a
/// pair to be published (`Workers::pull`); with one thread, every wait
/// must find its pair already there (no other thread could publish it).
/// The plan must also fit its budget.
#[wasm_bindgen_test]
fn pofo_fills_and_plans_on_one_thread() {
    for stages in [4, 9, 16] {
        let chain = examples::synthetic(stages);
        let high = max_useful_budget(&chain);
        let low = min_budget(&chain, Variant::Rotor);
        let budget = low + (high - low) / 3;
        let options = Options {
            slots: 20,
            bandwidth_bytes_per_s: Some(12e9),
            ..Options::default()
        };
        let sol = remat_core::solvers::solve(&chain, Algorithm::Pofo, budget, &options).unwrap();
        let ops = sol.ops.as_ref().expect("feasible a third of the way up");
        let trace = simulate(&chain, ops).unwrap();
        assert!(trace.peak_bytes <= budget, "{stages} stages");
        assert!(sol.predicted_seconds.is_some_and(f64::is_finite));
    }
}
