#![cfg(not(target_arch = "wasm32"))]
//! Properties of every solver on thousands of random chains: the simulator
//! accepts its schedule, the peak is within budget, and a DP's predicted time
//! and peak equal the simulated ones.

mod common;

use common::{integer_chain, real_chain};
use proptest::prelude::*;
use remat_core::simulator::{simulate, states, SimOptions, TensorId};
use remat_core::solvers::persistent::{min_budget, Variant};
use remat_core::solvers::{
    max_useful_budget, no_progress, solve, Algorithm, Options, Planner, SlotPolicy,
};
use remat_core::Chain;

fn budget_between(chain: &Chain, frac: f64) -> u64 {
    let low = min_budget(chain, Variant::Rotor);
    let high = max_useful_budget(chain);
    low + ((high.saturating_sub(low)) as f64 * frac) as u64
}

/// Checks one solution against the simulator; returns the simulated time.
///
/// For rotor and revolve this tests the DP's own memory and time accounting
/// (nothing filters the table's answer through the simulator). For
/// sequential and store-all the planner already picks by simulated peak, so
/// the peak checks hold by construction there; what can fail for them is the
/// predicted time (`sequential::predicted_seconds` is a formula).
fn judge(
    chain: &Chain,
    algorithm: Algorithm,
    budget: u64,
    options: &Options,
    exact_time: bool,
) -> Option<f64> {
    let sol = solve(chain, algorithm, budget, options).unwrap();
    let ops = sol.ops.as_ref()?;
    let trace =
        simulate(chain, ops).unwrap_or_else(|e| panic!("{algorithm}: invalid schedule: {e}"));
    assert!(
        trace.peak_bytes <= budget,
        "{algorithm}: peak {} > budget {budget}",
        trace.peak_bytes
    );
    assert_eq!(
        sol.predicted_peak_bytes,
        Some(trace.peak_bytes),
        "{algorithm}: predicted vs simulated peak"
    );
    // Where the peak comes from adds up to it. Could fail if the replay
    // stopped an event early or late, or read the residencies spanning the
    // peak's instant instead (mutation tried: `events[..k]` in the engine's
    // `at_peak`: fails here on the first chain).
    let named: u64 = trace.peak_tensors().iter().map(|r| r.bytes).sum();
    assert_eq!(
        named - trace.at_peak.given_back_bytes,
        trace.peak_bytes,
        "{algorithm}: the tensors at the peak"
    );
    let predicted = sol.predicted_seconds.unwrap();
    if exact_time {
        assert_eq!(
            predicted, trace.makespan_seconds,
            "{algorithm}: predicted vs simulated time"
        );
    } else {
        let err = (predicted - trace.makespan_seconds).abs() / trace.makespan_seconds;
        assert!(
            err < 1e-12,
            "{algorithm}: predicted {predicted} vs simulated {}",
            trace.makespan_seconds
        );
    }
    Some(trace.makespan_seconds)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Could fail if: rotor's or revolve's memory terms forget a tensor
    /// (predicted peak ≠ simulated, or peak over the budget), the DP's time
    /// differs from the simulated one, or rotor misses a schedule revolve or
    /// sequential finds. Store-all is left out of the comparison: rotor's
    /// planner falls back to it explicitly. Mutation tried: rotor's
    /// `m_all` without δ^t in the forward term (fails: simulated peak over
    /// the budget).
    #[test]
    fn every_solver_is_judged_valid_on_integer_chains(
        chain in integer_chain(14, true),
        frac in 0.0f64..1.2,
        slots in prop_oneof![Just(0usize), 1usize..40, Just(500)],
    ) {
        let budget = budget_between(&chain, frac);
        // slots = 0 here means "one byte per slot": exact sizes.
        let options = Options { slots: if slots == 0 { budget.max(1) as usize } else { slots }, ..Options::default() };
        let rotor = judge(&chain, Algorithm::Rotor, budget, &options, true);
        let revolve = judge(&chain, Algorithm::Revolve, budget, &options, true);
        let sequential = judge(&chain, Algorithm::Sequential, budget, &options, true);
        let store_all = judge(&chain, Algorithm::StoreAll, budget, &options, true);
        if slots == 0 {
            // On exact sizes rotor's class contains the others' schedules.
            prop_assert!(rotor.is_some() == (budget >= min_budget(&chain, Variant::Rotor)));
            let _ = store_all;
            for other in [revolve, sequential].into_iter().flatten() {
                prop_assert!(rotor.unwrap() <= other);
            }
        }
    }

    /// Could fail if: recompute-all's schedule is invalid or holds less
    /// than rotor's M_low (rotor's class holds it, so M_low can never be
    /// above its peak: one of the two miscounts), its time formula
    /// (`recompute_all::predicted_seconds`) miscounts the re-run forwards
    /// (judged against the simulator), or its planner answers below its
    /// peak. Mutation tried: the formula counting L − ℓ + 1 re-runs (fails:
    /// predicted vs simulated).
    #[test]
    fn recompute_all_is_valid_and_never_below_m_low(chain in integer_chain(14, true)) {
        let high = max_useful_budget(&chain);
        let options = Options::default();
        let planner = Planner::build(&chain, Algorithm::RecomputeAll, high, &options, &mut no_progress()).unwrap();
        let peak = planner.min_budget_bytes();
        let m_low = min_budget(&chain, Variant::Rotor);
        prop_assert!(peak >= m_low, "recompute-all {} < M_low {}", peak, m_low);
        prop_assert!(judge(&chain, Algorithm::RecomputeAll, peak, &options, false).is_some());
        prop_assert!(!planner.plan(&chain, peak - 1).unwrap().feasible());
    }

    /// On a chain of equal stages recompute-all is a least-memory schedule:
    /// its peak is rotor's exact M_low. Could fail if: the schedule keeps
    /// more than a^0, the running activation and one ā (mutation tried:
    /// F_ck for every stage of the first pass, which keeps every input:
    /// fails, peak above M_low), or re-runs a forward while something it
    /// no longer needs is still resident.
    #[test]
    fn recompute_all_needs_m_low_on_equal_stages(
        chain in integer_chain(1, false),
        n in 1usize..12,
    ) {
        let stage = chain.stages[0].clone();
        let chain = Chain { stages: vec![stage; n], ..chain };
        let planner = Planner::build(&chain, Algorithm::RecomputeAll, u64::MAX, &Options::default(), &mut no_progress()).unwrap();
        prop_assert_eq!(planner.min_budget_bytes(), min_budget(&chain, Variant::Rotor));
    }

    /// Could fail if: a predicted time drifts from the simulated one by more
    /// than rounding (1e-12 relative). Mutation tried: `sequential::
    /// predicted_seconds` counting the last segment as recomputed too
    /// (fails: predicted vs simulated time).
    #[test]
    fn every_solver_is_judged_valid_on_real_valued_chains(
        chain in real_chain(40),
        frac in 0.0f64..1.1,
    ) {
        let budget = budget_between(&chain, frac);
        let options = Options::default();
        // optimal's exact search is exponential (refused past 18 stages):
        // tests/optimal.rs judges it on short real-valued chains.
        for algorithm in Algorithm::REMATERIALIZATION.into_iter().filter(|&a| a != Algorithm::Optimal) {
            judge(&chain, algorithm, budget, &options, false);
        }
    }

    /// Could fail if: reading a big table at a smaller budget starts from
    /// the wrong number of slots (the budget's slots not bounding the
    /// read-out). Mutation tried: `top_slots` reading at the table's largest
    /// budget whatever the budget (fails: read-out ≠ fresh solve). A mutation
    /// shared by both paths (`top_slots` not taking off the input's slots)
    /// does not fail here: the exhaustive tests catch that one.
    #[test]
    fn a_table_read_out_at_smaller_budgets_matches_a_fresh_solve(
        chain in integer_chain(12, false),
        fracs in proptest::collection::vec(0.0f64..1.0, 1..6),
    ) {
        // With one-byte slots the grid of the big table is the grid of every
        // smaller budget, so reading out must give the same optimum. (Fixed:
        // the exact policy would pick the gcd of the held sizes, a lattice
        // whose points need not include `budget`.)
        let high = max_useful_budget(&chain);
        let options = Options { slots: high.max(1) as usize, slot_policy: SlotPolicy::Fixed, ..Options::default() };
        let planner = Planner::build(&chain, Algorithm::Rotor, high, &options, &mut no_progress()).unwrap();
        for f in fracs {
            let budget = budget_between(&chain, f);
            let from_table = planner.plan(&chain, budget).unwrap();
            let fresh = solve(&chain, Algorithm::Rotor, budget, &Options { slots: budget.max(1) as usize, ..Options::default() }).unwrap();
            prop_assert_eq!(from_table.predicted_seconds, fresh.predicted_seconds);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// The per-op states (`remat simulate --states`, what a runtime compares
    /// its own bookkeeping with) against the trace's residency intervals,
    /// computed from times: with every op taking a positive time on the one
    /// compute lane, a tensor is on the device after op i exactly when a
    /// residency of it starts before op i ends and ends after it.
    /// Could fail if: `op_state` lists a tensor the timed accounting has
    /// freed, or misses one it holds (ā^ℓ, a kept checkpoint, δ^L).
    /// Mutations tried: leaving `Slot::Saved` out of `op_state` (fails: ā^ℓ
    /// missing), listing absent tensors freed by an op as still on the
    /// device (fails at the first tensor a backward frees).
    #[test]
    fn op_states_agree_with_the_timed_residency(
        chain in integer_chain(10, false),
        frac in 0.0f64..1.1,
        algorithm in prop_oneof![Just(Algorithm::Rotor), Just(Algorithm::Revolve), Just(Algorithm::Sequential)],
    ) {
        let budget = budget_between(&chain, frac);
        let options = Options { slots: budget.max(1) as usize, ..Options::default() };
        let sol = solve(&chain, algorithm, budget, &options).unwrap();
        let Some(ops) = sol.ops else { return Ok(()) };
        let trace = simulate(&chain, &ops).unwrap();
        let got = states(&chain, &ops, SimOptions::default()).unwrap();
        prop_assert_eq!(got.len(), ops.len());
        // The last op ends at the makespan, where the trace closes every
        // interval: nothing to tell from times there.
        for (i, state) in got.iter().enumerate().take(ops.len() - 1) {
            let end = trace.spans[i].end;
            let mut expected: Vec<TensorId> = trace
                .residency
                .iter()
                .filter(|r| !matches!(r.tensor, TensorId::Workspace(_)))
                .filter(|r| r.start < end && r.end > end)
                .map(|r| r.tensor)
                .collect();
            let mut listed = state.device.clone();
            let key = |t: &TensorId| format!("{t:?}");
            expected.sort_by_key(key);
            listed.sort_by_key(key);
            prop_assert_eq!(listed, expected, "after op {} ({})", i, ops[i]);
            prop_assert!(state.host.is_empty());
        }
    }
}

#[test]
fn rotor_at_m_high_is_store_all_on_the_examples() {
    for name in remat_core::examples::names() {
        let chain = remat_core::examples::by_name(name).unwrap();
        let high = max_useful_budget(&chain);
        let sol = solve(&chain, Algorithm::Rotor, high, &Options::default()).unwrap();
        let trace = simulate(&chain, sol.ops.as_ref().unwrap()).unwrap();
        assert!(trace.peak_bytes <= high);
        assert_eq!(trace.recomputations, 0, "{name}");
        assert!((trace.makespan_seconds - chain.sequential_seconds()).abs() < 1e-12);
    }
}

// Both tables travel (the explorer's worker builds them, the page plans
// from them): fails if a table rebuilt from its parts answered any budget
// otherwise (a cell's breakpoints read from another cell's start), or if
// parts of another chain were misread instead of refused.
#[test]
fn a_table_taken_apart_and_rebuilt_plans_the_same() {
    let chain = remat_core::examples::resnet50();
    let other = remat_core::examples::vgg19();
    let high = max_useful_budget(&chain);
    let fixed = Options {
        slot_policy: SlotPolicy::Fixed,
        ..Options::default()
    };
    for (options, steps) in [(Options::default(), true), (fixed, false)] {
        let planner =
            Planner::build(&chain, Algorithm::Rotor, high, &options, &mut no_progress()).unwrap();
        let budgets = [(high / 3) * 2, high / 2, planner.min_budget_bytes(), high];
        let before: Vec<_> = budgets
            .iter()
            .map(|&b| planner.plan(&chain, b).unwrap())
            .collect();
        let low = planner.min_budget_bytes();
        let (parts, min_budget) = planner.into_table().unwrap();
        assert_eq!(min_budget, low);
        assert_eq!(
            matches!(parts, remat_core::solvers::persistent::TableParts::Steps(_)),
            steps
        );
        let again = Planner::from_table(&chain, parts.clone(), min_budget).unwrap();
        let after: Vec<_> = budgets
            .iter()
            .map(|&b| again.plan(&chain, b).unwrap())
            .collect();
        assert_eq!(after, before);
        assert!(Planner::from_table(&other, parts, min_budget).is_err());
    }
}
