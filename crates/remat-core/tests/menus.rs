#![cfg(not(target_arch = "wasm32"))]
//! Per-stage menus (issue 41): rotor and revolve choose, for each F_all,
//! the option that makes the step fastest under the budget. Checked against
//! exhaustive search over the persistent class with every option, the
//! breakpoint table against the exact-lattice grid bit for bit, and a menu
//! that cannot help against the same chain without it (same plan, same
//! time to the bit).

mod common;

use common::{
    brute_best, integer_chain, integer_chain_with_menus, measured_with_options,
    persistent_schedules, with_every_option,
};
use proptest::prelude::*;
use remat_core::format::{read_chain, read_schedule, write_chain};
use remat_core::simulator::simulate;
use remat_core::solvers::persistent::{min_budget, PersistentTable, StepTable, Variant};
use remat_core::solvers::{memory_floor, no_progress, solve, Algorithm, Options, SlotPolicy};
use remat_core::{Chain, MenuOption, Op};

const VARIANTS: [Variant; 2] = [Variant::Rotor, Variant::Revolve];

fn steps(chain: &Chain, variant: Variant) -> StepTable {
    StepTable::build(chain, variant, u64::MAX, &mut no_progress())
        .unwrap()
        .expect("no limit")
}

fn grid(chain: &Chain, variant: Variant, budget: u64) -> PersistentTable {
    let t = PersistentTable::build_with(
        chain,
        variant,
        budget,
        SlotPolicy::Exact,
        500,
        Options::default().max_table_bytes,
        &mut no_progress(),
    )
    .unwrap();
    assert!(t.lattice().exact(), "small integer sizes: an exact lattice");
    t
}

fn bits(x: Option<f64>) -> Option<u64> {
    x.map(f64::to_bits)
}

/// At every budget byte from M_low − 2 to the largest peak + 2: both tables
/// give the exhaustive optimum over every option, the same schedule, and a
/// schedule the simulator times and sizes as predicted; M_low is the least
/// peak of the class; the floor never exceeds it.
fn check_every_budget(chain: &Chain) -> Result<(), TestCaseError> {
    for variant in VARIANTS {
        let all = measured_with_options(chain, variant);
        let low = all.iter().map(|x| x.1).min().unwrap();
        let high = all.iter().map(|x| x.1).max().unwrap();
        prop_assert_eq!(min_budget(chain, variant), low, "{:?}: M_low", variant);
        prop_assert!(
            memory_floor(chain).bytes <= low,
            "the floor is a lower bound"
        );
        let table = steps(chain, variant);
        prop_assert_eq!(table.min_budget(), Some(low));
        for budget in low.saturating_sub(2)..=high + 2 {
            let want = bits(brute_best(&all, budget));
            let on_grid = grid(chain, variant, budget);
            prop_assert_eq!(
                bits(table.best_seconds(budget)),
                want,
                "{:?} at {}: breakpoints vs exhaustive",
                variant,
                budget
            );
            prop_assert_eq!(
                bits(on_grid.best_seconds(budget)),
                want,
                "{:?} at {}: grid vs exhaustive",
                variant,
                budget
            );
            let plan = table.plan(chain, budget);
            prop_assert_eq!(
                &plan,
                &on_grid.plan(chain, budget),
                "{:?} at {}: schedules",
                variant,
                budget
            );
            if let Some(p) = plan {
                let trace = simulate(chain, &p.ops).unwrap();
                prop_assert!(trace.peak_bytes <= budget);
                prop_assert_eq!(trace.peak_bytes, p.predicted_peak_bytes);
                prop_assert_eq!(
                    trace.makespan_seconds.to_bits(),
                    p.predicted_seconds.to_bits()
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// 300 integer chains of up to 4 stages, each stage with 0–2 options.
    /// Could fail if either table missed an option, shifted the sub-problem
    /// by the classic ā^s, checked the classic m_all, or timed B^s without
    /// the option's recomputation; if the read-out named another option than
    /// the one whose value the fill kept; or if the simulator sized ā^ℓ by
    /// the classic option. Mutations tried, each failed here: the grid's
    /// options holding no slots (`w = 0` for `o.held` in `start_row`), the
    /// simulator timing and sizing B^ℓ by the classic option whatever ran
    /// (`stage.choice(0)`), and the breakpoints' `decide` never naming the
    /// classic option at a leaf (schedules differ from the grid's).
    #[test]
    fn with_menus_both_tables_find_the_exhaustive_optimum(chain in integer_chain_with_menus(4)) {
        check_every_budget(&chain)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// The same on 5 stages (up to 3⁵ option choices for each of the 90
    /// schedule shapes). Could fail as above, on longer sub-chains.
    #[test]
    fn with_menus_on_five_stages(chain in integer_chain_with_menus(5)) {
        check_every_budget(&chain)?;
    }
}

/// `chain` with a menu on every stage that cannot help: each option keeps
/// at least ā^ℓ, costs at least B^ℓ's time and transients.
fn with_useless_menus(chain: &Chain, extra: &[u8]) -> Chain {
    let mut c = chain.clone();
    for (l, s) in c.stages.iter_mut().enumerate() {
        let e = extra[l % extra.len()] as u64;
        s.menu = (0..(e % 3))
            .map(|k| MenuOption {
                policy: format!("worse{k}"),
                saved_bytes: s.saved_bytes + e * k,
                backward_extra_seconds: (e * k) as f64,
                backward_overhead_bytes: s.backward_overhead_bytes + k as i64,
                forward_overhead_bytes: Some(s.forward_overhead_bytes + e as i64),
            })
            .collect();
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A menu whose options never beat the classic F_all changes nothing:
    /// at every budget the same value (bits) and the same schedule (every
    /// F_all option 0) as the chain without menus, on both tables and
    /// through the planner. Could fail if the options' candidates were
    /// merged before the classic one (ties would pick a menu option), or if
    /// the menus changed the classic arithmetic. Mutation tried: the
    /// breakpoints' `decide` never naming the classic option at a leaf
    /// (fails: a menu option chosen at equal time).
    #[test]
    fn a_menu_that_cannot_help_changes_nothing(
        chain in integer_chain(7, true),
        extra in proptest::collection::vec(0u8..=5, 1..8),
    ) {
        let menus = with_useless_menus(&chain, &extra);
        for variant in VARIANTS {
            let (plain, with) = (steps(&chain, variant), steps(&menus, variant));
            let low = min_budget(&chain, variant);
            prop_assert_eq!(min_budget(&menus, variant), low);
            let high = remat_core::solvers::max_useful_budget(&chain);
            for budget in low.saturating_sub(1)..=high + 1 {
                prop_assert_eq!(bits(with.best_seconds(budget)), bits(plain.best_seconds(budget)));
                prop_assert_eq!(with.plan(&menus, budget), plain.plan(&chain, budget));
                let g = (grid(&chain, variant, budget), grid(&menus, variant, budget));
                prop_assert_eq!(bits(g.1.best_seconds(budget)), bits(g.0.best_seconds(budget)));
                prop_assert_eq!(g.1.plan(&menus, budget), g.0.plan(&chain, budget));
            }
        }
    }
}

/// A three-stage chain whose middle stage keeps 60 bytes, or 20 with a
/// policy that recomputes 1 s of it in the backward.
fn three_stages() -> Chain {
    let text = r#"{"format": "remat-chain/1", "input_bytes": 10, "stages": [
        {"forward_seconds": 1, "backward_seconds": 2, "output_bytes": 10, "saved_bytes": 20},
        {"forward_seconds": 4, "backward_seconds": 8, "output_bytes": 10, "saved_bytes": 60,
         "menu": [{"policy": "save_mm", "saved_bytes": 20, "backward_extra_seconds": 1}]},
        {"forward_seconds": 1, "backward_seconds": 2, "output_bytes": 10, "saved_bytes": 20}]}"#;
    read_chain(text).unwrap()
}

#[test]
fn the_option_is_chosen_where_it_pays_and_runs_in_the_schedule() {
    // Could fail if the planner ignored the menu (rotor would recompute
    // stage 2's 4 s forward instead of paying the option's 1 s), or if the
    // schedule file lost the option.
    let chain = three_stages();
    let high = remat_core::solvers::max_useful_budget(&chain);
    let rotor = |budget| solve(&chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
    let full = rotor(high);
    assert_eq!(full.predicted_seconds, Some(chain.sequential_seconds()));
    // 40 bytes below store-all: ā^2 with the option fits, at +1 s.
    let tight = rotor(high - 40);
    let ops = tight.ops.clone().expect("feasible");
    assert!(
        ops.contains(&Op::ForwardAll {
            stage: 2,
            option: 1
        }),
        "{ops:?}"
    );
    assert_eq!(
        tight.predicted_seconds,
        Some(chain.sequential_seconds() + 1.0)
    );
    let trace = simulate(&chain, &ops).unwrap();
    assert_eq!(Some(trace.peak_bytes), tight.predicted_peak_bytes);
    assert!(trace.peak_bytes <= high - 40);
    // The same schedule, written and read back, runs option 1 again.
    let text = serde_json::to_string(&ops).unwrap();
    assert!(
        text.contains(r#"{"op":"forward_all","stage":2,"option":1}"#),
        "{text}"
    );
    assert!(text.contains(r#"{"op":"forward_all","stage":1}"#), "{text}");
    let back: Vec<Op> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, ops);
}

#[test]
fn menus_survive_the_chain_file_and_enter_the_digest() {
    // Could fail if the writer dropped the menu or the digest ignored it
    // (a plan solved with options would then be taken for a chain without).
    let chain = three_stages();
    let back = read_chain(&write_chain(&chain)).unwrap();
    assert_eq!(back, chain);
    let mut plain = chain.clone();
    plain.stages[1].menu.clear();
    assert_ne!(plain.digest(), chain.digest());
    let mut renamed = chain.clone();
    renamed.stages[1].menu[0].policy = "save_attention".into();
    assert_ne!(renamed.digest(), chain.digest());
}

#[test]
fn a_bad_menu_is_refused_naming_the_field() {
    // Could fail if a menu entry were validated loosely (a panic later in a
    // DP, or a plan over an impossible option).
    let base = write_chain(&three_stages());
    let cases = [
        (
            "\"saved_bytes\": 20\n        }",
            "\"saved_bytes\": 5\n        }",
            "stages[1].menu[0].saved_bytes",
        ),
        (
            "\"backward_extra_seconds\": 1.0",
            "\"backward_extra_seconds\": -1.0",
            "stages[1].menu[0].backward_extra_seconds",
        ),
        (
            "\"policy\": \"save_mm\"",
            "\"policy\": \"\"",
            "stages[1].menu[0].policy",
        ),
        (
            "\"policy\": \"save_mm\"",
            "\"policy\": \"all\"",
            "stages[1].menu[0].policy",
        ),
        (
            "\"policy\": \"save_mm\"",
            "\"policy\": \"save_mm\", \"colour\": 3",
            "stages[1].menu[0]",
        ),
    ];
    for (from, to, field) in cases {
        assert!(base.contains(from), "{from} not in {base}");
        let err = read_chain(&base.replacen(from, to, 1))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(field), "{to}: {err}");
    }
}

#[test]
fn a_schedule_naming_a_missing_option_is_refused() {
    // Could fail if the simulator read past a stage's menu (a panic) or
    // silently ran the classic F_all.
    let chain = three_stages();
    let ops = [
        Op::ForwardAll {
            stage: 1,
            option: 1,
        },
        Op::forward_all(2),
        Op::forward_all(3),
        Op::Backward { stage: 3 },
        Op::Backward { stage: 2 },
        Op::Backward { stage: 1 },
    ];
    let err = simulate(&chain, &ops).unwrap_err().to_string();
    assert!(
        err.contains("option 1 does not exist: stage 1 has no menu"),
        "{err}"
    );
    let text = r#"{"format": "remat-schedule/1", "ops": [{"op": "forward_all", "stage": 1, "option": "x"}]}"#;
    assert!(read_schedule(text).is_err());
}

#[test]
fn the_enumeration_with_options_counts_every_choice() {
    // 22 persistent shapes of 4 stages, each running one F_all per stage:
    // with 2 options on every stage, 22 · 2⁴ schedules.
    let mut chain = remat_core::examples::teaching();
    chain.stages.truncate(4);
    for s in &mut chain.stages {
        s.menu = vec![MenuOption {
            policy: "p".into(),
            saved_bytes: s.output_bytes,
            backward_extra_seconds: 1.0,
            backward_overhead_bytes: 0,
            forward_overhead_bytes: None,
        }];
    }
    let shapes = persistent_schedules(1, 4, Variant::Rotor);
    assert_eq!(with_every_option(&chain, &shapes).len(), 22 * 16);
}
