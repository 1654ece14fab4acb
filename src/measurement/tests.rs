//! The run fixture over the explorer's own plan, the messages when it is
//! not that plan's, and the step lines. Each test says which mutation of
//! the code it catches.

use super::*;
use crate::planning::protocol::{Ask, Request, Response};
use crate::planning::service::{PlannerService, Role};
use remat_core::examples;
use remat_core::format::{read_run, write_chain};
use remat_core::simulator::judge;
use remat_core::solvers::{max_useful_budget, Algorithm};

/// The file the browser tests import (`tests/fixtures/`): rotor at 30 MB
/// on `example:gpt2-cpu-torch`, the simulator's prediction perturbed.
const FIXTURE: &str = include_str!("../../tests/fixtures/run-gpt2-cpu-torch-rotor-30MB.json");

/// The page's rotor plan of `chain` at `budget`, as its service answers
/// the slider: the table built for the whole range, read out at `budget`.
fn page_plan(chain: &Chain, budget: u64) -> Vec<Op> {
    let mut service = PlannerService::new(Role::Page);
    let mut answers = Vec::new();
    for request in [
        Request::Load {
            generation: 1,
            chain: write_chain(chain),
        },
        Request::Build {
            generation: 1,
            algorithm: Algorithm::Rotor,
            max_budget: max_useful_budget(chain),
        },
        Request::Plan {
            generation: 1,
            ask: Ask {
                id: 1,
                algorithm: Algorithm::Rotor,
                budget,
                bandwidth: Some(12e9),
                exact: false,
                stage: crate::planning::protocol::Stage::Whole,
            },
        },
    ] {
        service.handle(request, &|| 0.0, &mut |r| answers.push(r));
    }
    answers
        .into_iter()
        .find_map(|r| match r {
            Response::Planned(p) => p.ops,
            _ => None,
        })
        .expect("a rotor plan")
}

fn gpt2() -> Chain {
    examples::by_name("gpt2-cpu-torch").unwrap()
}

/// Catches a fixture that is no longer the page's plan (the browser test
/// would then only ever see the "pick that plan" message) and a summary
/// that reads the wrong fields.
#[test]
fn the_fixture_is_the_pages_rotor_plan_at_30_mb() {
    let chain = gpt2();
    let run = read_run(FIXTURE).unwrap();
    let ops = page_plan(&chain, run.budget_bytes);
    let trace = judge(&chain, &ops, run.budget_bytes, Some(12e9)).unwrap();
    let c = against_plan(&run, &chain, &ops, Some(&trace)).unwrap();
    assert_eq!(c.rows.len(), ops.len());
    assert_eq!(
        summary(&c),
        "peak predicted 23.8 MiB, measured 25.0 MiB (+5.0 %) · step predicted 135.24 ms, measured 134.50 ms (−0.5 %)"
    );
    assert!(highest(&c) >= c.measured_peak_bytes);
}

/// Catches a run drawn over another plan, or a message that does not say
/// which plan the run belongs to.
#[test]
fn another_plan_or_chain_says_which_the_run_belongs_to() {
    let chain = gpt2();
    let run = read_run(FIXTURE).unwrap();
    let ops = page_plan(&chain, 20_000_000);
    let trace = judge(&chain, &ops, 20_000_000, Some(12e9)).unwrap();
    let e = against_plan(&run, &chain, &ops, Some(&trace)).unwrap_err();
    assert_eq!(
        e,
        "this run was measured for rotor at 28.6 MiB; pick that plan (the plan on screen differs: ops[2]: the run has forward_all 3, the schedule forward_checkpoint 3)"
    );
    let none = against_plan(&run, &chain, &ops, None).unwrap_err();
    assert_eq!(
        none,
        "this run was measured for rotor at 28.6 MiB; there is no schedule on screen to hold it against"
    );
    let other = examples::teaching();
    let e = against_plan(&run, &other, &ops, Some(&trace)).unwrap_err();
    assert!(
        e.starts_with("chain_digest: this run was measured for chain \"GPT-2")
            && e.ends_with("; load that chain"),
        "{e}"
    );
}

fn row(
    index: usize,
    (start, end): (f64, f64),
    predicted: (u64, u64),
    measured: (u64, u64),
) -> OpRow {
    OpRow {
        index,
        op: Op::Backward { stage: 1 },
        predicted_start_seconds: start,
        predicted_end_seconds: end,
        predicted_seconds: end - start,
        measured_seconds: end - start,
        predicted_peak_bytes: predicted.0,
        predicted_memory_bytes: predicted.1,
        measured_peak_bytes: measured.0,
        measured_memory_bytes: measured.1,
    }
}

/// Catches a line that takes the other side's numbers, draws an op's
/// level outside its span, or joins a transfer that overlaps the compute
/// back onto the line (a zigzag back in time).
#[test]
fn step_lines_follow_each_ops_span() {
    let rows = [
        row(0, (0.0, 1.0), (10, 5), (12, 6)),
        row(1, (2.0, 3.0), (8, 7), (9, 8)),
        row(2, (3.0, 3.0), (7, 3), (8, 4)),
        // A transfer that ran beside op 1 and op 2.
        OpRow {
            op: Op::Offload {
                stage: 1,
                tensor: remat_core::TensorKind::Saved,
            },
            ..row(3, (2.5, 4.0), (20, 20), (21, 21))
        },
        // A release after the transfer that read its tensor, then a compute
        // op that did not wait for it.
        OpRow {
            op: Op::Release {
                stage: 1,
                tensor: remat_core::TensorKind::Saved,
            },
            ..row(4, (4.0, 4.0), (3, 2), (3, 2))
        },
        row(5, (3.0, 3.5), (6, 6), (6, 6)),
    ];
    assert_eq!(
        step_line(&rows, Side::Predicted),
        vec![
            vec![
                (0.0, 10),
                (1.0, 10),
                (1.0, 5),
                (2.0, 5),
                (2.0, 8),
                (3.0, 8),
                (3.0, 7),
                (3.0, 7),
                (3.0, 7),
                (3.0, 3),
                (3.0, 6),
                (3.5, 6),
                (3.5, 6),
                (4.0, 6),
                (4.0, 3),
                (4.0, 3),
                (4.0, 2)
            ],
            vec![(2.5, 20), (4.0, 20), (4.0, 20)],
        ]
    );
    let measured = step_line(&rows[..1], Side::Measured);
    assert_eq!(measured, vec![vec![(0.0, 12), (1.0, 12), (1.0, 6)]]);
    assert_eq!(signed_percent(Some(-0.005)), "−0.5 %");
    assert_eq!(signed_percent(Some(0.05)), "+5.0 %");
    assert_eq!(signed_percent(Some(-0.00001)), "+0.0 %");
    assert_eq!(signed_percent(None), "n/a");
}
