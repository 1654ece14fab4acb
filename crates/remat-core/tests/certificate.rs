#![cfg(not(target_arch = "wasm32"))]
//! Issue 44's certificate: where rotor and revolve answer on a grid that
//! rounds, the same grid with held sizes rounded *down* admits every
//! schedule that fits in bytes, so its value never exceeds the optimum;
//! the plan's time over it bounds how far the plan is from the optimum.

mod common;

use common::{brute_best, integer_chain, integer_chain_with_menus, measured, real_chain};
use proptest::prelude::*;
use remat_core::solvers::persistent::{min_budget, StepTable, Table, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Options, SlotPolicy};
use remat_core::Chain;

const VARIANTS: [Variant; 2] = [Variant::Rotor, Variant::Revolve];

/// The planner's grid at `slots` slots of ⌊budget / slots⌋ bytes.
fn coarse(chain: &Chain, variant: Variant, budget: u64, slots: usize) -> Table {
    let options = Options {
        slots,
        slot_policy: SlotPolicy::Fixed,
        ..Options::default()
    };
    let mut table = Table::build(chain, variant, budget, &options, &mut no_progress()).unwrap();
    table.certify(chain, &mut no_progress()).unwrap();
    table
}

/// At every budget: bound ≤ the best schedule in bytes ≤ the plan.
fn check(
    chain: &Chain,
    variant: Variant,
    optimum: &dyn Fn(u64) -> Option<f64>,
    budgets: &[u64],
    slots: usize,
) -> Result<(), TestCaseError> {
    let top = *budgets.iter().max().unwrap();
    let table = coarse(chain, variant, top, slots);
    for &budget in budgets {
        let best = optimum(budget);
        let bound = table.lower_bound_seconds(budget);
        let plan = table.best_seconds(budget);
        if let Some(best) = best {
            // Every schedule that fits in bytes fits the rounded-down grid.
            let bound = bound.expect("a schedule fits, so the bound table has one");
            prop_assert!(
                bound <= best,
                "{:?} at {}: bound {} > optimum {}",
                variant,
                budget,
                bound,
                best
            );
        }
        if let Some(plan) = plan {
            prop_assert!(best.is_some_and(|b| b <= plan), "the plan fits in bytes");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Small integer chains (menus half the time) on grids of 2–9 slots,
    /// which round most sizes: the bound never exceeds the exhaustive
    /// optimum of the class at any budget byte, and the plan never beats
    /// it. Could fail if the bound table rounded any held size up, read the
    /// budget at a lattice point below it, or dropped a candidate. Mutation
    /// tried: `held_down` rounding up like `held` (fails: bound above the
    /// optimum).
    #[test]
    fn the_bound_never_exceeds_the_exhaustive_optimum(
        plain in integer_chain(6, true),
        menus in integer_chain_with_menus(4),
        pick in any::<bool>(),
        slots in 2usize..10,
    ) {
        let chain = if pick { plain } else { menus };
        for variant in VARIANTS {
            let all = if chain.has_menus() {
                common::measured_with_options(&chain, variant)
            } else {
                measured(&chain, variant)
            };
            let low = all.iter().map(|x| x.1).min().unwrap();
            let high = all.iter().map(|x| x.1).max().unwrap();
            let budgets: Vec<u64> = (low.saturating_sub(2)..=high + 2).collect();
            check(&chain, variant, &|b| brute_best(&all, b), &budgets, slots)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 30, ..ProptestConfig::default() })]

    /// Real-valued chains of up to 60 stages, where the breakpoints give
    /// the exact optimum at every budget: the 500-slot grid's bound stays
    /// below it. Could fail as above, on long chains.
    #[test]
    fn the_bound_never_exceeds_the_exact_optimum_on_long_chains(
        chain in real_chain(60),
        fracs in proptest::collection::vec(0.0f64..1.05, 1..6),
    ) {
        for variant in VARIANTS {
            let exact = StepTable::build(&chain, variant, u64::MAX, &mut no_progress()).unwrap().unwrap();
            let low = min_budget(&chain, variant);
            let high = max_useful_budget(&chain);
            let budgets: Vec<u64> = fracs.iter().map(|f| low + ((high - low) as f64 * f) as u64).collect();
            check(&chain, variant, &|b| exact.best_seconds(b), &budgets, 500)?;
        }
    }
}

#[test]
fn on_300_stages_the_plan_states_its_gap() {
    // Could fail if the grid fallback lost its bound (no certificate) or
    // the bound were looser than the plan allows.
    let chain = remat_core::examples::synthetic(300);
    let high = max_useful_budget(&chain);
    let budget = high / 2;
    let table = coarse(&chain, Variant::Rotor, budget, 500);
    let plan = table.best_seconds(budget).unwrap();
    let bound = table.lower_bound_seconds(budget).unwrap();
    assert!(
        bound <= plan && bound >= chain.sequential_seconds(),
        "{bound} vs {plan}"
    );
    let said = table.describe(budget);
    assert!(said.contains("of the optimum"), "{said}");
    assert!(!said.contains("rounding may hide"), "{said}");
}
