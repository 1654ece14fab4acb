#![cfg(not(target_arch = "wasm32"))]
//! pofo's table for every budget (`pofo::Table`) against the per-budget DP
//! on the same absolute grid: at every budget, the same value and the same
//! plan, bit for bit, on thousands of small random chains, both modes, both
//! loss steps, with and without a link.
//!
//! How this can fail: a term of OC that depends on the slots N of the
//! budget and not only on the free memory N − A (so the table's state
//! A + N_top − N is not the budget's state A: a float sum rounded
//! differently, a bound on Δ taken from N), a cut carried over from one
//! budget to another (a state another budget needs left inexact; the
//! table's own cut, per A, must bound every budget whose path reaches A), a
//! budget mapped to the wrong number of slots or read at the wrong A, or a
//! size capped at the top's slots where the per-budget grid caps it at its
//! own. Mutations tried: Case 2's excess summed as the DP did before,
//! (reach − N) + (A + Δ_F + I) (`case2_excess`, the same function in the
//! table and the per-budget DP): fails at once, "predicted
//! 5.342420001583267e-1 (table) vs 5.342420001583268e-1 (per budget)"
//! (a real chain at 12 GB/s, 20 slots, `Overlap`), the last bit. Building
//! the table with the per-budget cut (`build_with(.., true, ..)`): fails
//! in under a second, "feasibility differs: table false per budget true"
//! (top 6, 5 slots, budget 4, no link): the top's cut drops states that
//! only a smaller budget's optimal path goes through.

mod common;

use common::{integer_chain, pofo_dp, real_chain};
use proptest::prelude::*;
use remat_core::simulator::{simulate_with, SimOptions};

use remat_core::solvers::offload::pofo::{LossStep, Mode, PofoPlan, Table};
use remat_core::solvers::offload::Tables;
use remat_core::solvers::persistent::{min_budget, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Algorithm, Options, Planner};
use remat_core::Chain;

const BIG: u64 = 1 << 40;

/// The per-budget DP on the table's grid at `budget`: ⌊budget / u⌋ slots of
/// u bytes (None where that is no slot at all).
fn per_budget(
    table: &Table,
    chain: &Chain,
    mode: Mode,
    loss: LossStep,
    budget: u64,
    bw: Option<f64>,
) -> Option<PofoPlan> {
    let slots = table.slots_for(budget);
    if slots == 0 {
        return None;
    }
    pofo_dp(chain, mode, table.grid_budget(budget), slots, bw, loss)
        .plan(&mut no_progress())
        .unwrap()
}

fn same(table: &Option<PofoPlan>, solve: &Option<PofoPlan>) -> Result<(), String> {
    match (table, solve) {
        (None, None) => Ok(()),
        (Some(t), Some(s)) => {
            if t.predicted_seconds.to_bits() != s.predicted_seconds.to_bits() {
                return Err(format!(
                    "predicted {:e} (table) vs {:e} (per budget)",
                    t.predicted_seconds, s.predicted_seconds
                ));
            }
            if t != s {
                return Err(format!("plans differ:\n{t:?}\n{s:?}"));
            }
            Ok(())
        }
        _ => Err(format!(
            "feasibility differs: table {} per budget {}",
            table.is_some(),
            solve.is_some()
        )),
    }
}

/// Every slot count 1..=N of the table (a budget a few bytes above each
/// multiple of u, to check the floor) and one budget past the top.
fn check(chain: &Chain, top: u64, slots: usize, bw: Option<f64>) -> Result<(), TestCaseError> {
    for mode in [Mode::Full, Mode::OffloadOnly] {
        for loss in [LossStep::Paper, LossStep::Overlap] {
            let table =
                Table::build(chain, mode, loss, top, slots, bw, BIG, &mut no_progress()).unwrap();
            let u = table.slot_bytes();
            let extra = (u - 1).min(3);
            let budgets = (0..=table.top_slots() as u64)
                .map(|k| k * u + extra)
                .chain([top * 2]);
            for budget in budgets {
                let fast = table.plan(budget);
                prop_assert_eq!(
                    fast.as_ref().map(|p| p.predicted_seconds.to_bits()),
                    table.seconds(budget).map(f64::to_bits)
                );
                let slow = per_budget(&table, chain, mode, loss, budget, bw);
                if let Err(e) = same(&fast, &slow) {
                    return Err(TestCaseError::fail(format!(
                        "{mode:?} {loss:?} top {top} slots {slots} budget {budget} bw {bw:?}: {e}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A top budget between rotor's M_low and a little past M_high.
fn top_at(chain: &Chain, frac: f64) -> u64 {
    let low = min_budget(chain, Variant::Rotor);
    let high = max_useful_budget(chain).max(low + 1);
    (low + ((high - low) as f64 * frac) as u64).max(1)
}

/// The planner's answers at budgets from below M_low to past M_high: each
/// one's time and peak are the simulator's on its schedule (the budget as
/// the memory limit, the link's bandwidth), bit for bit, and fit the
/// budget. How this can fail: an answer judged without the link or with
/// another limit than the budget, or the DP's continuous-transfer time
/// reported as the simulated one; or the planner built for every budget
/// (`Planner::from_offload_tables`) answering otherwise than the tables it
/// holds (tried: its `plan` solving the budget anew with `offload::solve`
/// → "left: Solution { … predicted_peak_bytes: None … }", fails).
fn check_planner(chain: &Chain, slots: usize, bw: Option<f64>) -> Result<(), TestCaseError> {
    let low = min_budget(chain, Variant::Rotor) * 9 / 10;
    let high = max_useful_budget(chain).max(low + 1);
    let options = Options {
        offload_slots: slots,
        bandwidth_bytes_per_s: bw,
        ..Options::default()
    };
    for algorithm in [Algorithm::Pofo, Algorithm::OffloadOnly] {
        let mode = Mode::of(algorithm).expect("pofo and offload-only run the DP");
        let built = Tables::build(chain, mode, high, &options, &mut no_progress()).unwrap();
        let planner = Planner::from_offload_tables(chain, built);
        let tables = planner
            .offload_tables()
            .expect("pofo's planner holds its tables");
        for k in 0..=8u64 {
            let budget = low + (high - low) * k / 7;
            let answer = tables.plan(chain, budget);
            // The planner's answer is the tables' (one dispatcher).
            prop_assert_eq!(&planner.plan(chain, budget).unwrap(), &answer.solution);
            let Some(ops) = &answer.solution.ops else {
                prop_assert!(answer.seconds.is_none() && answer.peak_bytes.is_none());
                continue;
            };
            let trace = simulate_with(
                chain,
                ops,
                SimOptions {
                    bandwidth: bw,
                    memory_limit: Some(budget),
                },
            )
            .expect("the answer runs");
            prop_assert!(
                trace.peak_bytes <= budget,
                "{algorithm:?} at {budget}: peak {}",
                trace.peak_bytes
            );
            prop_assert_eq!(
                answer.seconds.map(f64::to_bits),
                Some(trace.makespan_seconds.to_bits())
            );
            prop_assert_eq!(answer.peak_bytes, Some(trace.peak_bytes));
            prop_assert_eq!(answer.solution.predicted_peak_bytes, Some(trace.peak_bytes));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Integer chains (sizes of a few bytes: one byte a slot is common).
    #[test]
    fn pofo_table_equals_the_per_budget_dp_on_integer_chains(
        chain in integer_chain(7, true),
        frac in 0.3f64..1.2,
        slots in prop_oneof![1usize..=12, Just(0usize)],
        bw in prop_oneof![Just(None), Just(Some(0.25)), Just(Some(1.0)), Just(Some(3.0))],
    ) {
        let top = top_at(&chain, frac);
        // 0 stands for one slot a byte (every size exact).
        let slots = if slots == 0 { (top as usize).min(40) } else { slots };
        check(&chain, top, slots, bw)?;
    }

    /// Real-valued chains like profiled networks, at PCIe speeds.
    #[test]
    fn pofo_table_equals_the_per_budget_dp_on_real_chains(
        chain in real_chain(9),
        frac in 0.3f64..1.2,
        slots in 1usize..=30,
        bw in prop_oneof![Just(None), Just(Some(12e9)), Just(Some(3e9)), Just(Some(450e9))],
    ) {
        let top = top_at(&chain, frac);
        check(&chain, top, slots, bw)?;
    }

    /// The planner's answers are the simulator's, and fit.
    #[test]
    fn pofo_table_planner_answers_are_judged_by_the_simulator(
        chain in real_chain(9),
        slots in 1usize..=30,
        bw in prop_oneof![Just(None), Just(Some(12e9)), Just(Some(3e9))],
    ) {
        check_planner(&chain, slots, bw)?;
    }
}
