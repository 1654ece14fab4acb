//! The page's reading of per-stage menus, against the core's own.

use super::*;
use remat_core::examples;
use remat_core::schedule::menu_choices;
use remat_core::solvers::{solve, Options};
use remat_core::{MenuOption, Stage};

const GIB: u64 = 1 << 30;

fn solved(chain: &Chain, alg: Algorithm, budget: u64) -> Vec<Op> {
    solve(chain, alg, budget, &Options::default())
        .unwrap()
        .ops
        .expect("feasible")
}

// On gpt2-sac at 3 GiB rotor runs options (as `remat solve` prints them):
// the page's picks are exactly the core's `menu_choices`, with the numbers
// of the stage's `choice`. Fails if the page read the option of another
// F_all, another menu entry (k instead of k − 1: the policies shift by
// one), or the classic ā as the option's.
#[test]
fn the_picks_are_the_options_rotor_runs_with_the_cores_numbers() {
    let chain = examples::by_name("gpt2-sac").unwrap();
    let ops = solved(&chain, Algorithm::Rotor, 3 * GIB);
    let got = picks(&chain, &ops);
    assert!(!got.is_empty(), "rotor runs options at 3 GiB");
    let want: Vec<(usize, usize)> = menu_choices(&ops)
        .into_iter()
        .map(|(l, k)| (l, k as usize))
        .collect();
    assert_eq!(
        got.iter().map(|p| (p.stage, p.option)).collect::<Vec<_>>(),
        want
    );
    for p in &got {
        let st = chain.stage(p.stage);
        let c = st.choice(p.option);
        assert_eq!(p.policy, st.policy(p.option));
        assert_eq!(p.saved_bytes, c.saved_bytes);
        assert_eq!(p.classic_bytes, st.saved_bytes);
        assert!(p.saved_bytes < p.classic_bytes, "an option keeps less");
        let extra = c.backward_seconds - st.backward_seconds;
        assert!((p.backward_extra_seconds - extra).abs() < 1e-12);
    }
    // The other algorithms run the classic F_all only.
    let pofo = solve(&chain, Algorithm::Sequential, 4 * GIB, &Options::default()).unwrap();
    if let Some(ops) = pofo.ops {
        assert!(picks(&chain, &ops).is_empty());
    }
}

fn two_stages_with_menus() -> Chain {
    let menu = |saved| {
        vec![
            MenuOption {
                policy: "save_attention".into(),
                saved_bytes: saved,
                backward_extra_seconds: 0.5,
                backward_overhead_bytes: 0,
                forward_overhead_bytes: None,
            },
            MenuOption {
                policy: "save_nothing".into(),
                saved_bytes: 10,
                backward_extra_seconds: 1.0,
                backward_overhead_bytes: 0,
                forward_overhead_bytes: None,
            },
        ]
    };
    let mut a = Stage::new("a", 1.0, 2.0, 10, 40);
    a.menu = menu(20);
    let mut b = Stage::new("b", 1.0, 2.0, 10, 40);
    b.menu = menu(30);
    Chain {
        name: "two".into(),
        source: "hand-made: tests".into(),
        input_bytes: 10,
        input_gradient_bytes: 10,
        bandwidth_bytes_per_s: None,
        stages: vec![a, b, Stage::new("loss", 1.0, 1.0, 1, 2)],
        ..Chain::default()
    }
}

// B^ℓ reads the last F_all^ℓ before it: a re-run with another option
// counts, one after B^ℓ does not; an option past the menu is no pick.
// Fails if the page took the first F_all (the forward phase's) or the last
// of the whole list.
#[test]
fn the_backward_reads_the_last_f_all_before_it() {
    let chain = two_stages_with_menus();
    let f = |stage, option| Op::ForwardAll { stage, option };
    let ops = [
        f(1, 1),
        f(2, 0),
        f(3, 0),
        Op::Backward { stage: 3 },
        Op::Backward { stage: 2 },
        f(2, 2), // after B^2: not what B^2 read
        Op::ForwardNone { stage: 1 },
        f(1, 2), // the one B^1 reads
        Op::Backward { stage: 1 },
    ];
    let by = picks_by_stage(&chain, &ops);
    assert_eq!(by.len(), 4);
    assert_eq!(by[2], None);
    let one = by[1].as_ref().unwrap();
    assert_eq!(
        (one.option, one.policy.as_str(), one.saved_bytes),
        (2, "save_nothing", 10)
    );
    assert_eq!(one.short_name(), "nothing");
    // Past the menu: drawn as no option.
    assert!(picks(&chain, &[f(1, 3)]).is_empty());
    // No backward: the last F_all.
    assert_eq!(picks(&chain, &[f(2, 1)])[0].saved_bytes, 30);
}

// What the page says of the plan and of one stage: the options by policy
// with their stages, or that the algorithm does not use the menus, or the
// classic everywhere; nothing at all on a chain without menus. Fails if
// the words lost a policy, a stage or the reason.
#[test]
fn the_plan_and_the_stage_say_which_options_run() {
    let chain = two_stages_with_menus();
    let f = |stage, option| Op::ForwardAll { stage, option };
    let ops = [
        f(1, 1),
        f(2, 1),
        f(3, 0),
        Op::Backward { stage: 3 },
        Op::Backward { stage: 2 },
        Op::Backward { stage: 1 },
    ];
    assert_eq!(
        plan_sentence(&chain, "rotor", Some(&ops)).unwrap(),
        "2 of 2 stages keep less with a menu option: save_attention on stages 1, 2; their backwards take 1.000 s more (each recomputes what its F_all did not keep)."
    );
    assert_eq!(plan_stat(&chain, "rotor", Some(&ops)).unwrap(), "2 of 2");
    let classic = [f(1, 0), f(2, 0), f(3, 0)];
    assert_eq!(
        plan_sentence(&chain, "pofo", Some(&classic)).unwrap(),
        "Menus not used by pofo: it runs the classic F_all everywhere (2 stages have a menu; rotor and revolve choose options)."
    );
    assert_eq!(
        plan_stat(&chain, "pofo", Some(&classic)).unwrap(),
        "not used"
    );
    assert!(plan_sentence(&chain, "rotor", Some(&classic))
        .unwrap()
        .contains("the classic F_all (keep ā^ℓ) everywhere"));
    assert_eq!(plan_stat(&chain, "revolve", None).unwrap(), "classic");

    let by = picks_by_stage(&chain, &ops);
    let said = stage_sentence(&chain, 1, by[1].as_ref(), "rotor").unwrap();
    assert_eq!(
        said,
        "F_all^1 runs save_attention (menu option 1 of 2): keeps 20 B of 40 B (the classic ā^1); B^1 recomputes the rest, +500.00 ms"
    );
    assert_eq!(
        stage_sentence(&chain, 2, None, "rotor").unwrap(),
        "menu: 2 options, classic chosen"
    );
    assert_eq!(
        stage_sentence(&chain, 2, None, "dtr").unwrap(),
        "menu: 2 options, not used by dtr"
    );
    assert_eq!(stage_sentence(&chain, 3, None, "rotor"), None);

    let plain = examples::by_name("gpt2").unwrap();
    let ops = solved(&plain, Algorithm::Rotor, 3 * GIB);
    assert_eq!(plan_sentence(&plain, "rotor", Some(&ops)), None);
    assert_eq!(plan_stat(&plain, "rotor", Some(&ops)), None);
    assert_eq!(stage_list(&[6, 7, 8, 9, 10, 12]), "stages 6–10, 12");
    assert_eq!(stage_list(&[4]), "stage 4");
}

// The badge: the short name where it fits, else the op's `[k]`, else none;
// the stepper's policy only for an F_all with an option.
#[test]
fn the_badge_fits_its_box() {
    let chain = two_stages_with_menus();
    let p = &picks(
        &chain,
        &[Op::ForwardAll {
            stage: 1,
            option: 1,
        }],
    )[0];
    assert_eq!(badge(p, 80.0, 10.0).as_deref(), Some("attention"));
    assert_eq!(badge(p, 30.0, 10.0).as_deref(), Some("[1]"));
    assert_eq!(badge(p, 10.0, 10.0), None);
    assert_eq!(
        op_policy(
            &chain,
            &Op::ForwardAll {
                stage: 2,
                option: 2
            }
        )
        .as_deref(),
        Some("save_nothing")
    );
    assert_eq!(op_policy(&chain, &Op::forward_all(2)), None);
    assert_eq!(op_policy(&chain, &Op::Backward { stage: 2 }), None);
    assert_eq!(short_policy("save_"), "save_");
    assert_eq!(short_policy("compile@0.4"), "compile@0.4");
}
