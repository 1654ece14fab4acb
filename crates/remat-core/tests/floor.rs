#![cfg(not(target_arch = "wasm32"))]
//! The memory floor (`solvers::memory_floor`): the least memory any
//! complete schedule needs, below which `remat solve` refuses a budget as
//! bad input. It must be a true lower bound — for the exact search over
//! every compute schedule and for every algorithm's schedules, offloading
//! and dynamic ones included — or a budget some schedule meets would be
//! refused. Run in release mode (thousands of exact searches).

mod common;

use common::integer_chain;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use remat_core::examples::teaching;
use remat_core::simulator::judge;
use remat_core::solvers::optimal;
use remat_core::solvers::{
    max_useful_budget, memory_floor, no_progress, solve, Algorithm, Options,
};

/// A proptest runner for `cases` cases that records no regression file.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    )
}

/// On thousands of random integer chains of up to 6 stages (signed
/// backward overheads, forward overheads), the floor is at most the least
/// budget of the exact search over every compute schedule, persistent or
/// not. The test prints how often it is exactly that least.
///
/// Could fail if the floor counted a tensor some schedule need not hold
/// while an operation runs. Mutation tried: the F_all^ℓ term with δ^ℓ
/// instead of the least δ^j, j ≥ ℓ (a schedule may compute ā^ℓ early, next
/// to a small δ^L, and keep it): the floor then exceeded the exact least
/// (8 > 5 bytes on a 2-stage chain), and this test failed. The chains draw
/// o_f∅ apart from o_f; mutations tried, each failed here (and in the next
/// test): the first forward charged a^ℓ + o_f∅^ℓ whatever the kind (an
/// F_all^ℓ with a smaller o_f^ℓ may be the first), and charged o_f^ℓ as
/// the no-grad transient (the pre-o_f∅ term).
#[test]
fn no_compute_schedule_needs_less_than_the_floor() {
    let met = std::cell::Cell::new(0u32);
    let cases = 10000;
    runner(cases)
        .run(&integer_chain(6, true), |chain| {
            let floor = memory_floor(&chain).bytes;
            let least = optimal::least_budget(&chain, &mut no_progress()).unwrap();
            prop_assert!(
                floor <= least,
                "floor {floor} above the exact least {least} ({})",
                memory_floor(&chain)
            );
            if floor == least {
                met.set(met.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    println!(
        "the floor equals the least budget of compute-only schedules on {} of {cases} random chains",
        met.get()
    );
}

/// Every algorithm, at a random budget from the floor to M_high and a
/// random link: whatever schedule it answers with peaks, as the simulator
/// judges it, at or above the floor — the offloading algorithms and the
/// dynamic runtimes included, which can go below rotor's M_low.
///
/// Could fail if the floor held a tensor that can be offloaded or released
/// (a^0 for the whole step, say). Mutation tried: adding ω_a^0 to every
/// backward's term (as if a^0 stayed resident): a delta schedule, which
/// offloads a^0, peaked below it (9 < 10 bytes on 2 stages) and this test
/// failed.
#[test]
fn no_algorithm_peaks_below_the_floor() {
    let strategy = (
        integer_chain(5, true),
        0.0f64..=1.0,
        prop_oneof![Just(0.5), Just(1.0), Just(4.0)],
    );
    runner(2000)
        .run(&strategy, |(chain, alpha, bandwidth)| {
            let floor = memory_floor(&chain).bytes;
            let high = max_useful_budget(&chain).max(floor);
            let budget = floor + ((high - floor) as f64 * alpha) as u64;
            let options = Options {
                bandwidth_bytes_per_s: Some(bandwidth),
                ..Options::default()
            };
            for algorithm in Algorithm::ALL {
                let solution = solve(&chain, algorithm, budget, &options).unwrap();
                if let Some(ops) = solution.ops {
                    let trace = judge(&chain, &ops, budget, Some(bandwidth)).unwrap();
                    prop_assert!(
                        trace.peak_bytes >= floor,
                        "{algorithm} peaks at {} below the floor {floor} ({})",
                        trace.peak_bytes,
                        memory_floor(&chain)
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}

/// The floor is met: on the teaching chain pofo's schedule at the floor
/// (on a grid of 32 MiB slots, exact for its 64 MiB tensors) peaks exactly
/// there (it offloads a^0 … a^7 and brings them back), so a budget one byte
/// below is one no algorithm can meet, and refusing it is right. Could fail
/// if the floor were a loose bound here.
#[test]
fn pofo_meets_the_floor_of_the_teaching_chain() {
    let chain = teaching();
    let floor = memory_floor(&chain).bytes;
    let options = Options {
        bandwidth_bytes_per_s: Some(12e9),
        offload_slots: 10,
        ..Options::default()
    };
    let solution = solve(&chain, Algorithm::Pofo, floor, &options).unwrap();
    let ops = solution.ops.expect("pofo meets the floor");
    let trace = judge(&chain, &ops, floor, Some(12e9)).unwrap();
    assert_eq!(trace.peak_bytes, floor);
}

/// The floor's explanation names the workspace when it has one: a stage
/// whose forward needs a large o_f^ℓ next to 1-byte tensors must not read
/// as if three bytes needed 977 KiB. Could fail if the workspace were left
/// out of the words (as it first was).
#[test]
fn the_floor_says_which_workspace_it_counts() {
    let mut chain = teaching();
    chain.stages.truncate(2);
    (chain.input_bytes, chain.input_gradient_bytes) = (1, 1);
    for s in &mut chain.stages {
        (s.output_bytes, s.saved_bytes, s.gradient_bytes) = (1, 1, 1);
    }
    chain.stages[0].forward_overhead_bytes = 1_000_000;
    let floor = memory_floor(&chain);
    assert_eq!(floor.bytes, 1_000_000 + 3);
    assert_eq!(
        floor.to_string(),
        "the first forward of stage 1 holds its input a^0, a^1 and the loss gradient at once, with its workspace o_f^1 = 977 KiB"
    );
    // A no-grad transient below o_f, but the first forward's need still
    // above F_all^1's (which runs next to δ^1, 1 byte, not δ^2): the floor
    // is the no-grad first forward, and its workspace is named o_f∅.
    chain.stages[0].forward_nograd_overhead_bytes = Some(999_000);
    chain.stages[1].gradient_bytes = 10_000;
    let floor = memory_floor(&chain);
    assert_eq!(floor.bytes, 1 + 1 + 999_000 + 10_000);
    assert_eq!(
        floor.to_string(),
        "the first forward of stage 1 holds its input a^0, a^1 and the loss gradient at once, with its workspace o_f∅^1 = 976 KiB"
    );
    // A no-grad transient above o_f: F_all^1 is the cheaper first forward.
    chain.stages[0].forward_nograd_overhead_bytes = Some(3_000_000);
    let floor = memory_floor(&chain);
    assert_eq!(floor.bytes, 1 + 1 + 1_000_000 + 10_000);
    assert_eq!(floor.op, remat_core::Op::forward_all(1));
    chain.stages[0].forward_nograd_overhead_bytes = None;
    chain.stages[1].gradient_bytes = 1;
    chain.stages[0].forward_overhead_bytes = 0;
    chain.stages[1].backward_overhead_bytes = 5000;
    assert!(memory_floor(&chain)
        .to_string()
        .ends_with("δ^2 and δ^1 at once, with its workspace o_b^2 = 4.88 KiB"));
}
