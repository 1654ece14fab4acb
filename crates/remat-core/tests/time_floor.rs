#![cfg(not(target_arch = "wasm32"))]
//! The time floor (`solvers::time_floor`, issue 44): a step time no schedule
//! beats at a budget. Checked against the exact optimum of every schedule
//! without transfers (`optimal`'s search, small chains) and against every
//! algorithm's judged schedule, transfers included, on random chains.

mod common;

use common::{integer_chain, real_chain};
use proptest::prelude::*;
use remat_core::simulator::judge;
use remat_core::solvers::optimal::{self, Class, Limits};
use remat_core::solvers::{
    max_useful_budget, memory_floor, no_progress, solve, time_floor, Algorithm, Options,
};
use remat_core::Chain;

/// Every algorithm that answers a budget, offloading ones included.
const ALGORITHMS: [Algorithm; 12] = [
    Algorithm::StoreAll,
    Algorithm::RecomputeAll,
    Algorithm::Sequential,
    Algorithm::Revolve,
    Algorithm::Rotor,
    Algorithm::Pofo,
    Algorithm::OffloadOnly,
    Algorithm::Opportunist,
    Algorithm::Autocapper,
    Algorithm::Dtr,
    Algorithm::Delta,
    Algorithm::HongChen,
];

/// A few budgets from the floor to M_high.
fn budgets(chain: &Chain, fractions: &[f64]) -> Vec<u64> {
    let low = memory_floor(chain).bytes;
    let high = max_useful_budget(chain).max(low);
    fractions
        .iter()
        .map(|f| low + ((high - low) as f64 * f) as u64)
        .collect()
}

/// Every algorithm's schedule at `budget`, judged by the simulator within
/// it: the floor must not exceed any makespan.
fn check_every_algorithm(chain: &Chain, budget: u64) -> Result<(), TestCaseError> {
    let bandwidth = chain.bandwidth_bytes_per_s;
    let floor = time_floor(chain, budget, bandwidth);
    for algorithm in ALGORITHMS {
        let options = Options {
            bandwidth_bytes_per_s: bandwidth,
            ..Options::default()
        };
        let Ok(solution) = solve(chain, algorithm, budget, &options) else {
            continue;
        };
        let Some(ops) = solution.ops else { continue };
        let Ok(trace) = judge(chain, &ops, budget, bandwidth) else {
            continue;
        };
        let floor = floor.expect("a schedule fits, so the floor is finite");
        prop_assert!(
            floor <= trace.makespan_seconds,
            "{algorithm} at {budget} B: floor {floor} > its makespan {} ({ops:?})",
            trace.makespan_seconds
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// No schedule without transfers beats the floor: the exact optimum
    /// over every sequence of compute operations (`optimal`, Class::All) at
    /// each budget is at or above it. Could fail if the floor charged a
    /// forward every schedule need not run after B^L starts, counted a
    /// tensor no schedule need hold there, or took a recording forward's
    /// time where a no-grad one may run. Mutation run: u_f for every stage
    /// of T_F instead of min(u_f, u_f∅) → fails (the floor above an optimum
    /// whose first forwards run without grad, faster).
    #[test]
    fn no_schedule_without_transfers_beats_the_floor(chain in integer_chain(5, true)) {
        for budget in budgets(&chain, &[0.0, 0.1, 0.3, 0.6, 1.0]) {
            let Some(best) = optimal::search(&chain, budget, Class::All, Limits::default(), &mut no_progress()).unwrap() else {
                continue;
            };
            let floor = time_floor(&chain, budget, None).expect("a schedule fits");
            prop_assert!(floor <= best.seconds, "at {budget} B: floor {floor} > optimum {}", best.seconds);
        }
    }

    /// With a host link, no algorithm's judged schedule beats the floor —
    /// pofo's, the heuristics' and the dynamic runtimes' transfers included.
    /// Could fail if the floor let the bytes moved cross the link only once
    /// (before or after B^L starts), or charged the transfers on top of the
    /// compute instead of beside it. Mutation run: T_F + V/β instead of
    /// max(T_F, V/β) → fails (pofo's plans hide their offloads behind the
    /// forwards).
    #[test]
    fn no_schedule_with_transfers_beats_the_floor(
        chain in integer_chain(6, true),
        bandwidth in 1u32..=8,
    ) {
        let mut chain = chain;
        chain.bandwidth_bytes_per_s = Some(bandwidth as f64);
        for budget in budgets(&chain, &[0.0, 0.05, 0.2, 0.5, 1.0]) {
            check_every_algorithm(&chain, budget)?;
        }
    }

    /// The same on chains with real-valued times and large sizes.
    #[test]
    fn real_chains_never_beat_the_floor(chain in real_chain(10), gbps in 1.0f64..64.0) {
        let mut chain = chain;
        chain.bandwidth_bytes_per_s = Some(gbps * 1e9);
        for budget in budgets(&chain, &[0.0, 0.25, 0.6]) {
            check_every_algorithm(&chain, budget)?;
        }
    }
}

/// Where everything fits, the floor is the step with no limit; below, with
/// no link, it rises (something must be recomputed); a link lowers it back.
#[test]
fn the_floor_rises_as_the_budget_falls() {
    let chain = remat_core::examples::by_name("vgg19").unwrap();
    let high = max_useful_budget(&chain);
    let low = memory_floor(&chain).bytes;
    let sequential = chain.sequential_seconds();
    let at_high = time_floor(&chain, high, None).unwrap();
    assert!((at_high - sequential).abs() <= 1e-9 * sequential);
    let at_low = time_floor(&chain, low, None).unwrap();
    assert!(at_low > sequential * 1.001, "{at_low} vs {sequential}");
    let linked = time_floor(&chain, low, Some(12e9)).unwrap();
    assert!(linked < at_low && linked >= sequential * (1.0 - 1e-9));
    assert_eq!(time_floor(&chain, 0, None), None);
}
