#![cfg(not(target_arch = "wasm32"))]
//! The memory lattice of `rotor` and `revolve` (issue 9, point 4): exact
//! wherever the chain's sizes allow it, honest about what rounding may hide
//! where they do not, and the M_low the planner reports is a budget `solve`
//! meets.

mod common;

use common::{brute_best, integer_chain, measured, real_chain};
use proptest::prelude::*;
use remat_core::examples::Provenance;
use remat_core::simulator::simulate;
use remat_core::solvers::persistent::{min_budget, min_budget_met, PersistentTable, Variant};
use remat_core::solvers::{
    max_useful_budget, no_progress, solve, Algorithm, Memory, Options, Planner, SlotPolicy,
};
use remat_core::Chain;

fn variant(algorithm: Algorithm) -> Variant {
    if algorithm == Algorithm::Rotor {
        Variant::Rotor
    } else {
        Variant::Revolve
    }
}

/// A chain whose held sizes (a^1..a^{L-1}, ā^1..ā^{L-1}) are multiples of
/// `unit` while everything else (a^0, a^L, ā^L, every δ and overhead) gets
/// `noise` bytes off the grid: the lattice must compare those exactly.
fn scaled(chain: &Chain, unit: u64, noise: &[u64]) -> Chain {
    let mut c = chain.clone();
    let n = c.len();
    let mut k = 0;
    // Signed, for the overheads (o_b may be negative); sizes stay ≥ 0.
    let mut signed = |x: i64| {
        k += 1;
        x * unit as i64 + noise[k % noise.len()] as i64
    };
    c.input_bytes = signed(c.input_bytes as i64) as u64;
    c.input_gradient_bytes = signed(c.input_gradient_bytes as i64) as u64;
    for (i, s) in c.stages.iter_mut().enumerate() {
        let last = i + 1 == n;
        let extra = s.saved_bytes - s.output_bytes;
        if last {
            s.output_bytes = signed(s.output_bytes as i64) as u64;
            s.saved_bytes = s.output_bytes + signed(extra as i64) as u64;
        } else {
            s.output_bytes *= unit;
            s.saved_bytes = s.output_bytes + extra * unit;
        }
        s.gradient_bytes = signed(s.gradient_bytes as i64) as u64;
        s.forward_overhead_bytes = signed(s.forward_overhead_bytes);
        s.backward_overhead_bytes = signed(s.backward_overhead_bytes);
    }
    c
}

fn memory(chain: &Chain, algorithm: Algorithm, budget: u64, options: &Options) -> Memory {
    Planner::build(chain, algorithm, budget, options, &mut no_progress())
        .unwrap()
        .memory(budget)
}

/// Solve at `budget` must be feasible, within it by the simulator.
fn assert_met(chain: &Chain, algorithm: Algorithm, budget: u64, options: &Options) {
    let sol = solve(chain, algorithm, budget, options).unwrap();
    let ops = sol.ops.unwrap_or_else(|| {
        panic!(
            "{algorithm}: the reported M_low {budget} is infeasible: {}",
            sol.detail
        )
    });
    let trace = simulate(chain, &ops).unwrap();
    assert!(trace.peak_bytes <= budget, "{algorithm}: peak over M_low");
}

/// M_low as the planner reports it (what the CLI and the explorer print).
fn reported_m_low(chain: &Chain, algorithm: Algorithm, options: &Options) -> u64 {
    let high = max_useful_budget(chain);
    Planner::build(chain, algorithm, high, options, &mut no_progress())
        .unwrap()
        .min_budget_bytes()
}

#[test]
fn the_examples_are_exact_and_their_m_low_is_met() {
    // Could fail if the lattice were not anchored at the budget or rounded
    // δ/overheads/a^L (teaching at 384 MiB was infeasible on 500 slots of
    // 786 KiB); mutation tried: `need` rounding bytes up from 0 instead of
    // from the lattice's floor (`(bytes).div_ceil(u)`): teaching's M_low
    // became infeasible and this test failed.
    //
    // Measured chains have sizes in allocator blocks (512 B), too fine for
    // an exact lattice at M_high: there the planner's M_low is on its grid,
    // above the exact minimum by at most the bytes it says rounding may
    // lose, and met. Mutation tried: reporting the exact minimum as the
    // grid's M_low (`min_budget` in `min_budget_bytes`): resnet50-h100's
    // M_low became infeasible on the grid and this test failed.
    let options = Options::default();
    for e in remat_core::examples::EXAMPLES {
        let (name, chain) = (e.name, e.chain());
        for algorithm in [Algorithm::Rotor, Algorithm::Revolve] {
            let low = reported_m_low(&chain, algorithm, &options);
            let exact = min_budget(&chain, variant(algorithm));
            assert_met(&chain, algorithm, low, &options);
            match memory(&chain, algorithm, low, &options) {
                Memory::Exact => {
                    assert_eq!(low, exact, "{name}");
                    let below = solve(&chain, algorithm, low - 1, &options).unwrap();
                    assert!(!below.feasible(), "{name} {algorithm}: M_low − 1 met");
                    assert_eq!(memory(&chain, algorithm, low - 1, &options), Memory::Exact);
                }
                Memory::Grid { lost_bytes, .. } => {
                    assert_eq!(e.provenance, Provenance::Measured, "{name}: not exact");
                    let lost = lost_bytes.expect("rotor states its loss");
                    assert!(
                        low >= exact && low - exact <= lost,
                        "{name} {algorithm}: {low} vs {exact} ± {lost}"
                    );
                }
            }
        }
    }
    // The case, by name.
    let teaching = remat_core::examples::teaching();
    let sol = solve(&teaching, Algorithm::Rotor, 384 << 20, &options).unwrap();
    assert!(sol.feasible(), "{}", sol.detail);
    assert!(sol.detail.starts_with("exact: "), "{}", sol.detail);
}

#[test]
fn the_fixed_grid_of_the_papers_is_still_available_and_labelled() {
    // Could fail if Fixed silently took the exact lattice (then a sweep that
    // asks for POFO's grid would compare rotor exact against POFO on slots).
    let chain = remat_core::examples::teaching();
    let options = Options {
        slot_policy: SlotPolicy::Fixed,
        ..Options::default()
    };
    let budget = 384 << 20;
    match memory(&chain, Algorithm::Rotor, budget, &options) {
        Memory::Grid {
            slot_bytes,
            lost_bytes: Some(lost),
        } => {
            assert_eq!(slot_bytes, budget / 500);
            assert!(lost > 0);
        }
        other => panic!("expected the 500-slot grid, got {other}"),
    }
    let lattice = PersistentTable::lattice_for(&chain, budget, SlotPolicy::Exact, 500, 6 << 30);
    assert_eq!((lattice.slot_bytes, lattice.slots), (64 << 20, 5));
    assert!(lattice.exact());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn on_an_exact_lattice_the_dp_equals_exhaustive_search(
        chain in integer_chain(6, true),
        unit in prop_oneof![Just(1u64 << 20), Just(3u64 << 16), Just(1000u64)],
        noise in proptest::collection::vec(0u64..997, 1..7),
    ) {
        // Could fail if a held size were not rounded to the lattice, if an
        // operation's own need (δ, overheads, a^L with their off-grid
        // noise) were rounded to slots, or if the budget were floored to a
        // slot: then some breakpoint budget (a schedule's exact peak) would
        // come out infeasible or slower. Mutation tried: `Lattice::need`
        // without its floor (`bytes.div_ceil(u)`): failed at once.
        let chain = scaled(&chain, unit, &noise);
        let options = Options::default();
        for algorithm in [Algorithm::Rotor, Algorithm::Revolve] {
            let all = measured(&chain, variant(algorithm));
            let mut budgets: Vec<u64> = all.iter().flat_map(|&(_, p)| [p, p.saturating_sub(1)]).collect();
            budgets.sort_unstable();
            budgets.dedup();
            for &budget in budgets.iter().step_by(budgets.len() / 12 + 1) {
                let sol = solve(&chain, algorithm, budget, &options).unwrap();
                prop_assert_eq!(sol.predicted_seconds, brute_best(&all, budget), "{} at {}: {}", algorithm, budget, sol.detail);
                prop_assert_eq!(memory(&chain, algorithm, budget, &options), Memory::Exact);
            }
        }
    }

    #[test]
    fn off_the_lattice_the_answer_is_within_its_stated_loss(
        chain in real_chain(5),
        frac in 0.0f64..1.05,
    ) {
        // Random sizes up to 2^30 share no useful unit, so the table falls
        // back to at most 500 slots. Its answer is conservative (never
        // faster than the optimum at the budget) and, by the stated loss,
        // at least as good as the optimum at budget − lost_bytes. Could fail
        // if lost_bytes understated the rounding or the lattice claimed
        // exactness it lacks. Mutation tried: `rounding_loss` returning 0
        // (every lattice "exact"): failed, the answer was slower than the
        // optimum at the budget.
        let options = Options::default();
        for algorithm in [Algorithm::Rotor, Algorithm::Revolve] {
            let all = measured(&chain, variant(algorithm));
            let low = min_budget(&chain, variant(algorithm));
            let high = all.iter().map(|x| x.1).max().unwrap();
            let budget = low + ((high - low) as f64 * frac) as u64;
            let sol = solve(&chain, algorithm, budget, &options).unwrap();
            let best = brute_best(&all, budget);
            // Times are sums of reals: the DP and the simulator may add them
            // in different orders.
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
            if let Some(t) = sol.predicted_seconds {
                prop_assert!(t >= best.unwrap() || close(t, best.unwrap()), "faster than the optimum");
            }
            match memory(&chain, algorithm, budget, &options) {
                Memory::Exact => prop_assert!(
                    sol.predicted_seconds.zip(best).is_some_and(|(a, b)| close(a, b))
                        || (sol.predicted_seconds.is_none() && best.is_none())
                ),
                Memory::Grid { lost_bytes, .. } => {
                    let lost = lost_bytes.expect("persistent lattices state their loss");
                    if let Some(reference) = brute_best(&all, budget.saturating_sub(lost)) {
                        let t = sol.predicted_seconds;
                        prop_assert!(t.is_some_and(|t| t <= reference || close(t, reference)), "{:?} > {} (lost {})", t, reference, lost);
                    }
                }
            }
        }
    }

    #[test]
    fn the_reported_m_low_is_met_and_one_byte_less_is_not_where_exact(
        chain in prop_oneof![integer_chain(14, true), real_chain(20)],
    ) {
        // Could fail if the planner reported the exact M_low while `solve`
        // at that budget ran on a rounded lattice (the bug), or if
        // an exact lattice still missed its M_low. Mutation tried:
        // `min_budget_met` returning the exact M_low without its fixed-point
        // loop: real-valued chains failed (infeasible at the reported M_low).
        // The default policy answers from breakpoints (these chains fit the
        // grid's memory): its M_low is the exact one; the paper's grid
        // (`Fixed`) reports the fixed point of its rounding.
        let fixed = Options { slot_policy: SlotPolicy::Fixed, ..Options::default() };
        let high = max_useful_budget(&chain);
        for algorithm in [Algorithm::Rotor, Algorithm::Revolve] {
            let exact = min_budget(&chain, variant(algorithm));
            let cap = if algorithm == Algorithm::Rotor { high } else { u64::MAX };
            let low = reported_m_low(&chain, algorithm, &Options::default());
            assert_met(&chain, algorithm, low, &Options::default());
            prop_assert_eq!(low, exact.min(cap));
            if low == exact && low > 0 {
                let below = solve(&chain, algorithm, low - 1, &Options::default()).unwrap();
                prop_assert!(!below.feasible(), "{} met at M_low − 1", algorithm);
            }
            let options = fixed.clone();
            let low = reported_m_low(&chain, algorithm, &options);
            assert_met(&chain, algorithm, low, &options);
            let met = min_budget_met(
                &chain, variant(algorithm), options.slot_policy, options.slots,
                options.max_table_bytes, None,
            ).unwrap();
            prop_assert!(low == met.bytes || (algorithm == Algorithm::Rotor && low == high && met.bytes >= high));
            if met.exact && low > 0 {
                prop_assert_eq!(low, exact);
                let below = solve(&chain, algorithm, low - 1, &options).unwrap();
                prop_assert!(!below.feasible(), "{} met at M_low − 1", algorithm);
            }
        }
    }
}
