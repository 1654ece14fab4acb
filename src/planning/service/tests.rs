//! The planning service on the host: what the page and the worker answer,
//! and that a table built in the worker plans in the page exactly as one
//! built there.

use super::*;
use crate::planning::protocol::{Envelope, GridNote, ANY_GENERATION};
use remat_core::examples;
use remat_core::format::write_chain;
use remat_core::solvers::offload::pofo::Mode;

fn loaded(role: Role, chain: &Chain) -> PlannerService {
    let mut service = PlannerService::new(role);
    let answers = ask(
        &mut service,
        Request::Load {
            generation: 1,
            chain: write_chain(chain),
        },
    );
    assert!(answers.is_empty(), "{answers:?}");
    service
}

fn ask(service: &mut PlannerService, request: Request) -> Vec<Response> {
    let mut answers = Vec::new();
    service.handle(request, &|| 0.0, &mut |r| answers.push(r));
    answers
}

fn build(alg: Algorithm, chain: &Chain) -> Request {
    Request::Build {
        generation: 1,
        algorithm: alg,
        max_budget: max_useful_budget(chain),
    }
}

fn plan(alg: Algorithm, budget: u64) -> Request {
    Request::Plan {
        generation: 1,
        ask: Ask {
            id: 7,
            algorithm: alg,
            budget,
            bandwidth: Some(12e9),
            exact: false,
            stage: Stage::Whole,
        },
    }
}

/// The one answer that is not a progress report.
fn only(answers: Vec<Response>) -> Response {
    let mut rest = results(answers);
    assert_eq!(rest.len(), 1, "{rest:?}");
    rest.remove(0)
}

/// The answers that are not progress reports.
fn results(answers: Vec<Response>) -> Vec<Response> {
    answers
        .into_iter()
        .filter(|r| !matches!(r, Response::Progress { .. }))
        .collect()
}

fn planned(answers: Vec<Response>) -> Planned {
    match results(answers).as_slice() {
        [Response::Planned(p)] => (**p).clone(),
        other => panic!("expected one plan, got {other:?}"),
    }
}

fn middle(chain: &Chain) -> u64 {
    let low = min_budget(chain);
    low + (max_useful_budget(chain) - low) / 2
}

// Fails if the page's service handed its table out (no plan after a
// build), or reported progress under another task than the build.
// Mutation tried: tables exported by `Role::Page` instead of `Role::Worker`.
#[test]
fn the_page_keeps_what_it_builds_and_plans_from_it() {
    let chain = examples::teaching();
    let mut page = loaded(Role::Page, &chain);
    let answers = ask(&mut page, build(Algorithm::Rotor, &chain));
    let fractions: Vec<f64> = answers
        .iter()
        .filter_map(|r| match r {
            Response::Progress { task, fraction, .. } => {
                assert_eq!(
                    *task,
                    Task::Build {
                        algorithm: Algorithm::Rotor
                    }
                );
                Some(*fraction)
            }
            _ => None,
        })
        .collect();
    assert!(!fractions.is_empty());
    assert!(fractions.windows(2).all(|w| w[0] < w[1]), "{fractions:?}");
    let Response::Built(built) = only(answers) else {
        panic!("no Built");
    };
    assert_eq!(built.table, None, "the page keeps its table");
    assert!(built.curve.len() >= CURVE_POINTS);
    assert!(page.has(Algorithm::Rotor));

    ask(&mut page, build(Algorithm::StoreAll, &chain));
    let budget = middle(&chain);
    let p = planned(ask(&mut page, plan(Algorithm::Rotor, budget)));
    assert_eq!((p.id, p.algorithm, p.budget), (7, Algorithm::Rotor, budget));
    let ops = p.ops.expect("rotor plans the middle of the range");
    let trace = judge(&chain, &ops, budget, Some(12e9)).unwrap();
    assert!(trace.fits(budget));
    // The other built algorithm comes as a summary; the shown one does not.
    let names: Vec<Algorithm> = p.summaries.iter().map(|s| s.algorithm).collect();
    assert_eq!(names, vec![Algorithm::StoreAll]);
}

// Fails if the worker kept its table (the page would wait forever), if the
// envelope lost the values, or if the installed table planned differently
// from one built in the page (e.g. installed under another generation).
// Mutations tried: `receive` dropping the table instead of installing it;
// `put_values` not putting the values back; the worker keeping its tables.
#[test]
fn a_table_built_in_the_worker_plans_in_the_page_as_one_built_there() {
    let chain = examples::teaching();
    let mut worker = loaded(Role::Worker, &chain);
    let mut page = loaded(Role::Page, &chain);
    let mut reference = loaded(Role::Page, &chain);
    for alg in [Algorithm::Rotor, Algorithm::Revolve] {
        let Response::Built(built) = only(ask(&mut worker, build(alg, &chain))) else {
            panic!("no Built");
        };
        assert!(built.table.is_some(), "{alg}: the table leaves the worker");
        assert!(!worker.has(alg));
        let wire = Envelope::encode(Response::Built(built));
        assert!(wire.values.is_some());
        let arrived = wire.decode::<Response>().unwrap();
        let Some(Response::Built(installed)) = page.receive(arrived) else {
            panic!("not installed");
        };
        assert_eq!((installed.algorithm, installed.table), (alg, None));
        assert!(page.has(alg));

        ask(&mut reference, build(alg, &chain));
        let low = min_budget(&chain);
        let high = max_useful_budget(&chain);
        for budget in [low, middle(&chain), high, (low + high) / 3] {
            let mine = planned(ask(&mut page, plan(alg, budget)));
            let theirs = planned(ask(&mut reference, plan(alg, budget)));
            let answer = |p: &Planned| {
                let rows: Vec<_> = (p.summaries.iter())
                    .map(|s| (s.algorithm, s.feasible, s.makespan_seconds, s.peak_bytes))
                    .collect();
                let plan = (p.ops.clone(), p.predicted_seconds, p.predicted_peak_bytes);
                (plan, rows)
            };
            assert_eq!(answer(&mine), answer(&theirs), "{alg} at {budget}");
        }
    }
}

// Fails if an answer about an old chain were shown over the new one.
// Mutation tried: `receive` installing a table whatever its generation.
#[test]
fn requests_and_tables_of_an_old_chain_get_no_answer() {
    let chain = examples::teaching();
    let mut worker = loaded(Role::Worker, &chain);
    let table = results(ask(&mut worker, build(Algorithm::Rotor, &chain))).remove(0);
    let mut page = loaded(Role::Page, &chain);
    ask(
        &mut page,
        Request::Load {
            generation: 2,
            chain: write_chain(&chain),
        },
    );
    assert_eq!(page.receive(table), None);
    assert!(!page.has(Algorithm::Rotor));
    assert!(ask(&mut page, build(Algorithm::Rotor, &chain)).is_empty());
    assert!(ask(&mut page, plan(Algorithm::Pofo, middle(&chain))).is_empty());
}

// Fails if a chain that cannot be read were kept, or its error were filed
// under some task (the page shows task-less failures as a notice).
#[test]
fn a_chain_that_cannot_be_read_fails_without_a_task() {
    let mut page = PlannerService::new(Role::Page);
    let answers = ask(
        &mut page,
        Request::Load {
            generation: 4,
            chain: "{\"format\": \"remat-chain/1\"}".into(),
        },
    );
    match answers.as_slice() {
        [Response::Failed {
            generation: 4,
            task: None,
            error,
        }] => assert!(!error.is_empty()),
        other => panic!("{other:?}"),
    }
    assert_ne!(4, ANY_GENERATION);
    assert!(ask(&mut page, build(Algorithm::Rotor, &examples::teaching())).is_empty());
}

// Fails if a compare row answered for another algorithm, round or budget,
// or the rows listed left one out. Mutation tried: compare progress
// reported as the sweep's.
#[test]
fn compare_solves_each_row_at_the_budget() {
    let chain = examples::teaching();
    let mut worker = loaded(Role::Worker, &chain);
    let budget = middle(&chain);
    let rows = compared_in_worker(&chain, true);
    assert!(
        rows.contains(&Algorithm::Optimal),
        "teaching is short enough to search"
    );
    assert!(rows
        .iter()
        .all(|a| a.offloads() || *a == Algorithm::Optimal));
    // Not asked: the optimum is left out (it held every other row).
    assert!(!compared_in_worker(&chain, false).contains(&Algorithm::Optimal));
    let mut progressed = false;
    for (id, &algorithm) in rows.iter().enumerate() {
        let mut answers = ask(
            &mut worker,
            Request::Compare {
                generation: 1,
                id: id as u64,
                budget,
                bandwidth: Some(12e9),
                algorithm,
            },
        );
        answers.retain(|r| match r {
            Response::Progress { task, .. } => {
                assert_eq!(*task, Task::Compare);
                progressed = true;
                false
            }
            _ => true,
        });
        let Response::Compared {
            id: answered,
            budget: at,
            summary,
            ..
        } = only(answers)
        else {
            panic!("no Compared");
        };
        assert_eq!(
            (answered, at, summary.algorithm),
            (id as u64, budget, algorithm)
        );
        if algorithm == Algorithm::Pofo {
            assert!(summary.feasible, "pofo plans the middle of the range");
        }
        if summary.feasible {
            assert!(summary.peak_bytes.unwrap() <= budget, "{summary:?}");
        }
    }
    assert!(progressed, "the rows report their progress");
}

// Fails if the sweep's points were split at the wrong place between the two
// figures, or a point's makespan were taken from a schedule that does not
// fit its budget. Mutation tried: the split one point early.
#[test]
fn the_sweep_draws_every_algorithm_at_every_alpha_and_bandwidth() {
    let chain = examples::teaching();
    let mut worker = loaded(Role::Worker, &chain);
    let answers = ask(
        &mut worker,
        Request::Sweep {
            generation: 1,
            bandwidth: 12e9,
        },
    );
    let Response::Swept { sweep, .. } = only(answers) else {
        panic!("no Swept");
    };
    assert_eq!(
        sweep.by_alpha.len(),
        SWEEP_ALPHAS.len() * SWEEP_ALGORITHMS.len()
    );
    assert!(sweep.by_alpha.iter().all(|p| p.bandwidth == 12e9));
    assert_eq!(
        sweep.by_bandwidth.len(),
        SWEEP_BANDWIDTHS.len() * SWEEP_ALGORITHMS.len()
    );
    assert!(sweep
        .by_bandwidth
        .iter()
        .all(|p| p.alpha == SWEEP_FIXED_ALPHA));
    // At α = 1 (M_high) every algorithm keeps everything: no overhead.
    for p in sweep.by_alpha.iter().filter(|p| p.alpha == 1.0) {
        let m = p.makespan_seconds.expect("M_high is feasible");
        assert!((m - chain.sequential_seconds()).abs() < 1e-9, "{p:?}");
    }
}

// Fails if a rule of where a request runs changed: a DP build of a short
// chain sent to the worker, an offloading solve kept in the page.
// Mutation tried: DP builds sent to the worker whatever the chain's length.
#[test]
fn where_each_request_runs() {
    let plan = |algorithm, exact| Request::Plan {
        generation: 1,
        ask: Ask {
            id: 1,
            algorithm,
            budget: 1,
            bandwidth: None,
            exact,
            stage: Stage::Whole,
        },
    };
    let build = |algorithm| Request::Build {
        generation: 1,
        algorithm,
        max_budget: 1,
    };
    for long in [false, true] {
        assert_eq!(runs_in_worker(&build(Algorithm::Rotor), long), long);
        assert_eq!(runs_in_worker(&plan(Algorithm::Rotor, true), long), long);
        assert!(!runs_in_worker(&build(Algorithm::Pofo), long));
        assert!(!runs_in_worker(&build(Algorithm::StoreAll), long));
        assert!(!runs_in_worker(&plan(Algorithm::Rotor, false), long));
        assert!(!runs_in_worker(&plan(Algorithm::Sequential, true), long));
        assert!(runs_in_worker(&plan(Algorithm::Pofo, false), long));
        let sweep = Request::Sweep {
            generation: 1,
            bandwidth: 1.0,
        };
        assert!(runs_in_worker(&sweep, long));
    }
    assert!(!wants_worker(&examples::teaching()));
}

/// The native side of the speed comparison (not a check; run by
/// tests/measure-speed.mjs, which measures the same requests in the page):
///   REMAT_SPEED_CHAINS=a.json,b.json cargo test --release -p remat-explorer \
///     --lib native_speed -- --ignored --nocapture
/// Per chain: the worker's rotor `Build` (table + trade-off curve, what the
/// page's "table built in … ms" reports) and a pofo `Plan` half-way between
/// M_low and M_high at 12 GB/s, each the median of 3 runs, in ms.
#[test]
#[ignore]
fn native_speed() {
    let Ok(paths) = std::env::var("REMAT_SPEED_CHAINS") else {
        return;
    };
    let started = std::time::Instant::now();
    let now = move || started.elapsed().as_secs_f64() * 1e3;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for path in paths.split(',') {
        let text = std::fs::read_to_string(path).unwrap();
        let chain = remat_core::format::read_any_chain(&text).unwrap();
        let mut builds = Vec::new();
        for _ in 0..3 {
            let mut service = loaded(Role::Worker, &chain);
            let mut answers = Vec::new();
            service.handle(build(Algorithm::Rotor, &chain), &now, &mut |r| {
                answers.push(r)
            });
            match only(answers) {
                Response::Built(b) => builds.push(b.build_ms),
                other => panic!("{other:?}"),
            }
        }
        let (low, high) = budget_range(&chain);
        let mut pofo = Vec::new();
        if chain.len() <= 100 {
            for _ in 0..3 {
                let mut service = loaded(Role::Worker, &chain);
                let t0 = now();
                let answers = ask(&mut service, plan(Algorithm::Pofo, low + (high - low) / 2));
                pofo.push(now() - t0);
                assert!(matches!(only(answers), Response::Planned(_)));
            }
        }
        println!(
            "SPEED native L={} rotor_build_ms={:.1} pofo_plan_ms={}",
            chain.len(),
            median(builds),
            if pofo.is_empty() {
                "-".to_string()
            } else {
                format!("{:.1}", median(pofo))
            }
        );
    }
}

// The exact search's curve runs in the worker with progress, and the page
// then answers its compare row itself. Fails if the curve stops reporting
// (mutation tried: dropping `progress(...)` in `curve` left no Progress),
// if the page forgets the worker's optimal (mutation tried: removing the
// `Optimal` arm of `receive` left no optimal summary), or if optimal's
// point at 33 B is not the search's 79 s.
#[test]
fn the_optimal_curve_is_searched_in_the_worker_and_reported() {
    let chain = examples::by_name("optimal-wins").unwrap();
    assert!(runs_in_worker(&build(Algorithm::Optimal, &chain), false));
    let mut worker = loaded(Role::Worker, &chain);
    let answers = ask(&mut worker, build(Algorithm::Optimal, &chain));
    let progress = (answers.iter())
        .filter(|r| {
            matches!(
                r,
                Response::Progress {
                    task: Task::Build {
                        algorithm: Algorithm::Optimal
                    },
                    ..
                }
            )
        })
        .count();
    assert!(progress >= 10, "{progress} progress reports");
    let Response::Built(built) = only(answers) else {
        panic!("no curve")
    };
    // Every point is the exact search's makespan at that budget.
    for p in &built.curve {
        let solved =
            remat_core::solvers::solve(&chain, Algorithm::Optimal, p.budget, &Options::default())
                .ok()
                .and_then(|s| s.ops)
                .map(|ops| {
                    judge(&chain, &ops, p.budget, chain.bandwidth_bytes_per_s)
                        .unwrap()
                        .makespan_seconds
                });
        assert_eq!(p.makespan_seconds, solved, "at {} B", p.budget);
    }
    // The page never searches (a search can take seconds on its thread):
    // the compare row at 33 B comes from the worker's Compare.
    let mut page = loaded(Role::Page, &chain);
    page.receive(Response::Built(built)).unwrap();
    let in_page = page.summaries(Algorithm::Rotor, 33, None);
    assert!(in_page.iter().all(|s| s.algorithm != Algorithm::Optimal));
    let compare = Request::Compare {
        generation: 1,
        id: 4,
        budget: 33,
        bandwidth: None,
        algorithm: Algorithm::Optimal,
    };
    let Response::Compared { summary, .. } = only(ask(&mut worker, compare)) else {
        panic!("no Compared");
    };
    assert_eq!(summary.makespan_seconds, Some(79.0));
}

// Fails if a chain over the limit is searched (mutation tried: removing the
// length check made the build answer a curve of refusals).
#[test]
fn a_chain_too_long_for_the_search_fails_at_once_with_the_reason() {
    let chain = examples::nonpersistent_chain(20);
    let mut worker = loaded(Role::Worker, &chain);
    let answers = ask(&mut worker, build(Algorithm::Optimal, &chain));
    assert_eq!(answers.len(), 1, "{answers:?}");
    let Response::Failed { error, task, .. } = &answers[0] else {
        panic!("{answers:?}")
    };
    assert_eq!(
        *task,
        Some(Task::Build {
            algorithm: Algorithm::Optimal
        })
    );
    assert!(
        error.contains("at most 18 stages") && error.contains("rotor"),
        "{error}"
    );
}

/// A profile of `chain` at twice its batch that is not the chain scaled:
/// outputs and gradients × 2, saved tensors × 2 less half of what they keep
/// beyond the output (a part that does not grow with the batch, as ∂W),
/// times × 1.5 (a small batch that does not fill the device). Every field
/// of the fit stays ≥ 0 and ā ≥ a at every batch ≥ 1.
fn at_twice_the_batch(chain: &Chain) -> Chain {
    use remat_core::model::{scaled, Scale};
    let mut second = scaled(
        chain,
        Scale {
            bytes: 2.0,
            seconds: 1.5,
        },
    )
    .unwrap();
    for (s, first) in second.stages.iter_mut().zip(&chain.stages) {
        s.saved_bytes -= (first.saved_bytes - first.output_bytes) / 2;
    }
    second
}

/// The max-batch request for the teaching chain on a 4 GiB device with no
/// margin, profiled at batch 8, with `second` as the second profile.
fn max_batch_request(second: Option<SecondProfile>) -> Request {
    Request::MaxBatch {
        generation: 1,
        device: BatchDevice {
            memory_bytes: 4 << 30,
            fixed_bytes: 0,
            margin_bytes: 0,
            batch: 8,
        },
        second,
    }
}

fn max_batched(answers: Vec<Response>) -> MaxBatch {
    match only(answers) {
        Response::MaxBatched { found, .. } => found,
        other => panic!("expected a max-batch answer, got {other:?}"),
    }
}

// With a second profile the worker's answer is the core's search on the
// affine fit through both profiles, built here by hand: every row's batch,
// limit flag and samples/s. Fails if the second profile were ignored (the
// linear answer differs, checked below), its batch taken as the first's,
// or the fit built from other batches. Mutation tried: `batch_model`
// returning the linear model whatever the second profile: every row
// differed (store-all 23 against the fit's 28, pofo 102 against 112), and
// the refusals below were not made.
#[test]
fn a_second_profile_gives_the_cores_affine_answer() {
    use remat_core::maxbatch::{max_batches, Device, Margin, DEFAULT_MAX_BATCH};
    let first = examples::teaching();
    let second = at_twice_the_batch(&first);
    let mut worker = loaded(Role::Worker, &first);
    let profile = SecondProfile {
        chain: write_chain(&second),
        batch: 16,
    };
    let found = max_batched(ask(&mut worker, max_batch_request(Some(profile))));
    assert_eq!(found.second_batch, Some(16));

    let fit = AffineFit::new(first.clone(), 8, second, 16).unwrap();
    let algorithms: Vec<Algorithm> = std::iter::once(Algorithm::StoreAll)
        .chain(MAX_BATCH_ALGORITHMS)
        .collect();
    let device = Device {
        memory_bytes: 4 << 30,
        fixed_bytes: 0,
        margin: Margin::Bytes(0),
    };
    let core = max_batches(
        &BatchModel::Affine(fit),
        &algorithms,
        &device,
        DEFAULT_MAX_BATCH,
        &Options::default(),
        &mut |_| true,
    )
    .unwrap();
    let want: Vec<(Algorithm, Option<u64>, bool, Option<f64>)> = core
        .methods
        .iter()
        .map(|l| (l.algorithm, l.batch, l.at_limit, l.samples_per_second()))
        .collect();
    let got: Vec<(Algorithm, Option<u64>, bool, Option<f64>)> = found
        .rows
        .iter()
        .map(|r| (r.algorithm, r.batch, r.at_limit, r.samples_per_second))
        .collect();
    assert_eq!(got, want);

    let linear = max_batched(ask(&mut worker, max_batch_request(None)));
    assert_eq!(linear.second_batch, None);
    assert_ne!(
        linear.rows[0].batch, found.rows[0].batch,
        "the fit must change store-all's batch, or this test could not tell"
    );
}

// A second profile the fit refuses fails with the core's message, which
// names the field: other stages (their number), the first profile's batch,
// a file that is not a chain. Fails if the worker fitted such a profile, or
// answered with a message of its own that names no field.
#[test]
fn a_second_profile_the_fit_refuses_names_the_field() {
    let first = examples::teaching();
    let mut worker = loaded(Role::Worker, &first);
    let mut fewer = first.clone();
    fewer.stages.pop();
    let cases = [
        (
            write_chain(&fewer),
            16,
            "second.stages: 9 stages, the first profile has 10",
        ),
        (
            write_chain(&first),
            8,
            "second.batch: equals the first profile's batch (8)",
        ),
        (
            "{\"format\": \"remat-chain/1\"}".to_string(),
            16,
            "could not read it: input_bytes: missing",
        ),
    ];
    for (chain, batch, message) in cases {
        let answer = only(ask(
            &mut worker,
            max_batch_request(Some(SecondProfile { chain, batch })),
        ));
        let Response::Failed {
            task: Some(Task::MaxBatch),
            error,
            ..
        } = answer
        else {
            panic!("expected a refusal, got {answer:?}");
        };
        assert!(error.starts_with("second profile: "), "{error}");
        assert!(error.contains(message), "{error}");
    }
}

/// The worker's `Built` of `alg` on `chain`, carried through the envelope
/// and installed in `page`; with the `Built` the page shows.
fn carried(
    worker: &mut PlannerService,
    page: &mut PlannerService,
    alg: Algorithm,
    chain: &Chain,
) -> Built {
    let Response::Built(built) = only(ask(worker, build(alg, chain))) else {
        panic!("no Built");
    };
    assert!(built.table.is_some(), "{alg}: the table leaves the worker");
    let wire = Envelope::encode(Response::Built(built));
    // What crosses: `cargo test -- --nocapture` prints it.
    println!(
        "crosses: {} {alg}: JSON {} B + values {} B",
        chain.name,
        wire.text.len(),
        8 * wire.values.as_ref().map_or(0, |v| v.len())
    );
    let arrived = wire.decode::<Response>().unwrap();
    let Some(Response::Built(installed)) = page.receive(arrived) else {
        panic!("not installed");
    };
    assert!(page.has(alg));
    installed
}

/// Every budget where the shown table's answer may change, and one byte
/// on each side: C(1, L)'s breakpoints, or on a grid the slot boundaries
/// (a sample of them) and the least budget met.
fn edges(chain: &Chain, alg: Algorithm, note: Option<GridNote>) -> Vec<u64> {
    let planner = Planner::build(
        chain,
        alg,
        max_useful_budget(chain),
        &Options::default(),
        &mut |_| true,
    )
    .unwrap();
    let mut at: Vec<u64> = match planner.persistent_table().unwrap() {
        persistent::Table::Steps(t) => t.curve().into_iter().map(|(m, _)| m).collect(),
        persistent::Table::Grid { table, .. } => {
            let a0 = chain.output_bytes(0);
            let step = table.slots() / 40 + 1;
            (0..=table.slots())
                .step_by(step)
                .map(|k| a0 + k as u64 * table.slot_bytes())
                .chain(note.map(|n| n.least_met))
                .collect()
        }
    };
    let (low, high) = budget_range(chain);
    at.extend([low, high, low + (high - low) / 3]);
    let mut all: Vec<u64> = at
        .iter()
        .flat_map(|&b| [b.saturating_sub(1), b, b.saturating_add(1)])
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// A heterogeneous chain of `n` stages (a fixed pseudo-random sequence),
/// long enough from about 75 stages for rotor's breakpoints to pass the
/// grid's memory (docs/algorithms.md, "Fallback").
fn heterogeneous(n: usize) -> Chain {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let stages: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let out = ((1.0 + 63.0 * next()) * 1048576.0) as u64;
            serde_json::json!({
                "name": format!("s{i}"),
                "forward_seconds": 0.001 * (0.2 + next()),
                "backward_seconds": 0.002 * (0.2 + next()),
                "output_bytes": out,
                "saved_bytes": out + ((next() * 2.0) * out as f64) as u64,
            })
        })
        .collect();
    let doc = serde_json::json!({
        "format": "remat-chain/1", "name": format!("heterogeneous {n}"),
        "input_bytes": 8 << 20, "stages": stages,
    });
    read_any_chain(&doc.to_string()).unwrap()
}

// Both kinds of table cross the worker boundary: a planner rebuilt in the
// page from what crossed answers, plan for plan, as one built in place, at
// every breakpoint of C(1, L) and one byte either side (on a grid: the slot
// boundaries and the least budget met). Fails if a cell's breakpoints were
// read from another cell's start (cells unpacked in another order than
// packed), if a budget lost its high bits (u64 through an f64's value
// instead of its bits), or if the installed planner took another least
// budget than the worker's. Mutation run: `StepTable::from_parts` walking
// t from L down to s: the teaching chain's rotor at M_low − 1 B planned
// F_all¹ B¹ where the table built in place has no plan.
#[test]
fn a_table_that_crossed_plans_as_one_that_did_not_at_every_breakpoint() {
    let mut chains: Vec<(String, Chain)> = examples::names()
        .map(|n| (n.to_string(), examples::by_name(n).unwrap()))
        .collect();
    chains.push(("heterogeneous 90".into(), heterogeneous(90)));
    let mut fell_back = Vec::new();
    for (name, chain) in &chains {
        let mut worker = loaded(Role::Worker, chain);
        let mut page = loaded(Role::Page, chain);
        let mut reference = loaded(Role::Page, chain);
        for alg in [Algorithm::Rotor, Algorithm::Revolve] {
            if name.starts_with("heterogeneous") && alg == Algorithm::Revolve {
                continue;
            }
            let installed = carried(&mut worker, &mut page, alg, chain);
            let Response::Built(built_here) = only(ask(&mut reference, build(alg, chain))) else {
                panic!("no Built");
            };
            assert_eq!(installed.min_budget, built_here.min_budget, "{name} {alg}");
            assert_eq!(installed.grid, built_here.grid, "{name} {alg}");
            if installed.grid.is_some() {
                fell_back.push(format!("{name} {alg}"));
            }
            for budget in edges(chain, alg, installed.grid) {
                let mine = planned(ask(&mut page, plan(alg, budget)));
                let theirs = planned(ask(&mut reference, plan(alg, budget)));
                assert_eq!(mine, theirs, "{name} {alg} at {budget}");
            }
        }
    }
    // The examples are exact; the long heterogeneous chain falls back.
    assert_eq!(fell_back, vec!["heterogeneous 90 rotor".to_string()]);
}

// The page's M_low is the CLI's: on every built-in example the page's rotor
// and revolve tables are exact (no grid), their least budget is what
// `remat solve` reports (`Planner::min_budget_bytes` of the same build,
// `m_low_bytes` for rotor, which is also the slider's left end), rotor
// meets it and not a byte less. Fails if the page built on the grid again
// (`SlotPolicy::Fixed`: `grid` set, and M_low infeasible on 6 examples) or
// took its least budget from elsewhere. Mutation run: `build` with
// `SlotPolicy::Fixed` in the service's `Build`: the teaching chain's rotor
// came on 477 slots of 2.82 MiB.
#[test]
fn the_pages_m_low_is_the_clis_on_every_example() {
    for name in examples::names() {
        let chain = examples::by_name(name).unwrap();
        let (low, high) = budget_range(&chain);
        let mut page = loaded(Role::Page, &chain);
        for alg in [Algorithm::Rotor, Algorithm::Revolve] {
            let Response::Built(built) = only(ask(&mut page, build(alg, &chain))) else {
                panic!("no Built");
            };
            assert_eq!(built.grid, None, "{name} {alg}: exact in bytes");
            let cli = Planner::build(&chain, alg, high, &Options::default(), &mut |_| true)
                .unwrap()
                .min_budget_bytes();
            assert_eq!(built.min_budget, cli, "{name} {alg}");
            if alg == Algorithm::Rotor {
                assert_eq!(
                    built.min_budget.min(high),
                    low,
                    "{name}: the slider's M_low"
                );
                let at = planned(ask(&mut page, plan(alg, low)));
                assert!(at.ops.is_some(), "{name}: rotor meets M_low");
                assert_eq!(at.grid_loss, None, "{name}: no grid");
                assert!(!at.detail.contains("rounding"), "{name}: {}", at.detail);
                let solved =
                    remat_core::solvers::solve(&chain, alg, low, &Options::default()).unwrap();
                assert!(solved.ops.is_some(), "{name}: `remat solve` meets M_low");
                if low > 0 {
                    let below = planned(ask(&mut page, plan(alg, low - 1)));
                    assert!(below.ops.is_none(), "{name}: a byte below M_low");
                }
            }
        }
    }
}

// Where rotor falls back to the grid the page says so in words, with the
// bound, names no command-line flag, and the least budget it reports is
// the least its grid plans fit (the slider's left end): met there, not a
// byte below. Fails if the fallback's reason reached the page with the
// CLI's wording (`--max-table`, `--slots`), or if `least_met` were M_low
// (infeasible on the grid). Mutation run: `least_met` returning M_low:
// the assertion that the left end is above M_low failed.
#[test]
fn a_chain_on_the_grid_says_so_and_its_left_end_is_met() {
    let chain = heterogeneous(90);
    let mut page = loaded(Role::Page, &chain);
    let Response::Built(built) = only(ask(&mut page, build(Algorithm::Rotor, &chain))) else {
        panic!("no Built");
    };
    let note = built.grid.expect("90 heterogeneous stages fall back");
    assert!(note.fallback);
    let (low, high) = budget_range(&chain);
    assert!(
        note.least_met > low && note.least_met < high,
        "{note:?} in {low}..{high}"
    );
    let at = planned(ask(&mut page, plan(Algorithm::Rotor, note.least_met)));
    assert!(at.ops.is_some());
    let below = planned(ask(&mut page, plan(Algorithm::Rotor, note.least_met - 1)));
    assert!(below.ops.is_none());
    for p in [&at, &below] {
        assert!(p.grid_loss.is_some());
        assert!(!p.detail.contains("--"), "{}", p.detail);
        assert!(p.detail.contains("planned on a grid"), "{}", p.detail);
    }
    // The certificate (issue 44), in the detail and as a number: the
    // plan's time over the grid rounded down.
    assert!(at.detail.contains("of the optimum"), "{}", at.detail);
    assert!(!at.detail.contains("rounding may hide"), "{}", at.detail);
    assert!(at.gap.is_some_and(|g| g >= 0.0), "{:?}", at.gap);
    let mid = planned(ask(
        &mut page,
        plan(Algorithm::Rotor, low + (high - low) / 2),
    ));
    assert!(mid.grid_loss.unwrap() > 0, "{}", mid.detail);
    let gap = mid.gap.expect("certified");
    assert!(
        mid.detail.contains(&format!(
            "within {} of the optimum",
            remat_core::solvers::persistent::format_gap(1.0 + gap, 1.0)
        )),
        "{gap} {}",
        mid.detail
    );
}

// *Re-plan exactly at this budget* on a grid answer refines it (issue 44,
// item 2): finer grids until the gap is within 0.5 % or the time is
// spent, said in the detail with the gap reached, the plan no slower than
// the table's and within the budget, the progress only forward. Could
// fail if the re-plan stopped at the first grid (its detail would not say
// "refined to" and the gap would stay the table's), if the refined plan
// were dropped, or if the progress ran back (build, bound and refinement
// each from 0 to 1, as before). Mutation run: `replan_exactly` without
// the refinement: the detail said "499 slots of 7.20 MiB; within 2.12 % …" and
// this failed.
#[test]
fn an_exact_replan_refines_a_grid_answer_with_progress_that_only_moves_forward() {
    let chain = heterogeneous(90);
    let mut page = loaded(Role::Page, &chain);
    let Response::Built(_) = only(ask(&mut page, build(Algorithm::Rotor, &chain))) else {
        panic!("no Built");
    };
    let (low, high) = budget_range(&chain);
    let budget = low + (high - low) * 6 / 10;
    let table = planned(ask(&mut page, plan(Algorithm::Rotor, budget)));
    let table_gap = table.gap.expect("certified");
    assert!(
        table_gap > 0.005,
        "a loose table answer to refine: {table_gap}"
    );
    let mut worker = loaded(Role::Worker, &chain);
    let started = std::time::Instant::now();
    let now = move || started.elapsed().as_secs_f64() * 1e3;
    let mut answers = Vec::new();
    let mut replan = plan(Algorithm::Rotor, budget);
    if let Request::Plan { ask, .. } = &mut replan {
        ask.exact = true;
    }
    worker.handle(replan, &now, &mut |r| answers.push(r));
    let fractions: Vec<f64> = answers
        .iter()
        .filter_map(|r| match r {
            Response::Progress { fraction, .. } => Some(*fraction),
            _ => None,
        })
        .collect();
    assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
    let exact = planned(answers);
    assert!(exact.detail.starts_with("refined to "), "{}", exact.detail);
    assert!(
        exact.detail.ends_with("so it is planned on a grid"),
        "{}",
        exact.detail
    );
    let gap = exact.gap.expect("certified");
    assert!(gap < table_gap, "{gap} vs {table_gap}");
    assert!(
        gap <= 0.005 || !exact.detail.contains("reached the target"),
        "{}",
        exact.detail
    );
    assert!(exact.predicted_seconds <= table.predicted_seconds);
    assert!(exact.predicted_peak_bytes.unwrap() <= budget);
}

/// pofo in two stages (issue 25, item 3): a quick plan is the table for
/// every budget read at this budget, said as such; the refinement is the
/// per-budget solve, the same as a whole plan; the table is built once for
/// a chain and link, and again for another link. Could fail if the quick
/// answer were the per-budget solve under another name (its detail would
/// not say "refining", and no table would be kept), if the table were
/// rebuilt at every budget (progress reports at the second quick plan),
/// or kept across links (the DP's times depend on the bandwidth: the
/// quick answer at 6 GB/s would be the 12 GB/s table's), or if the
/// table's and the refinement's progress shared a task (issue 44: one bar
/// ran 84 → 67 → 86 → 71 %). Mutations tried: pofo left out of
/// `has_quick_table`: its quick ask is answered whole and the stage
/// assertion fails; the table's build reporting as `Task::Plan`: "every
/// report of this stage names it" fails.
#[test]
fn pofo_answers_at_once_from_its_table_then_refines() {
    let chain = examples::by_name("vgg19-h100").unwrap();
    let mut service = loaded(Role::Worker, &chain);
    let top = max_useful_budget(&chain);
    let plan_at = |budget: u64, bandwidth: f64, stage: Stage| Request::Plan {
        generation: 1,
        ask: Ask {
            id: 9,
            algorithm: Algorithm::Pofo,
            budget,
            bandwidth: Some(bandwidth),
            exact: false,
            stage,
        },
    };
    let planned = |r: Response| match r {
        Response::Planned(p) => p,
        other => panic!("{other:?}"),
    };
    let options = |bandwidth: f64| Options {
        bandwidth_bytes_per_s: Some(bandwidth),
        ..Options::default()
    };
    let table = Tables::build(&chain, Mode::Full, top, &options(12e9), &mut |_| true).unwrap();
    // Each stage's progress under its own task, only forward: the table's
    // and the refinement's are made at once in two workers.
    let progress_of = |answers: &[Response], task: Task| {
        let fractions: Vec<f64> = (answers.iter())
            .filter_map(|r| match r {
                Response::Progress {
                    task: t, fraction, ..
                } => {
                    assert_eq!(*t, task, "every report of this stage names it");
                    Some(*fraction)
                }
                _ => None,
            })
            .collect();
        assert!(
            fractions.windows(2).all(|w| w[0] <= w[1]),
            "{task:?} went back: {fractions:?}"
        );
        fractions
    };
    let pofo = Algorithm::Pofo;
    for (i, budget) in [top * 75 / 100, top * 80 / 100].into_iter().enumerate() {
        let answers = ask(&mut service, plan_at(budget, 12e9, Stage::Quick));
        let built = !progress_of(&answers, Task::Table { algorithm: pofo }).is_empty();
        assert_eq!(built, i == 0, "the table is built once for this link");
        let quick = planned(only(answers));
        assert_eq!(quick.stage, Stage::Quick);
        assert_eq!(quick.ops, table.plan(&chain, budget).solution.ops);
        assert!(quick.detail.contains("refining"), "{}", quick.detail);
        let answers = ask(&mut service, plan_at(budget, 12e9, Stage::Refine));
        assert!(!progress_of(&answers, Task::Refine { algorithm: pofo }).is_empty());
        let refined = planned(only(answers));
        let whole = planned(only(ask(&mut service, plan_at(budget, 12e9, Stage::Whole))));
        assert_eq!(refined.stage, Stage::Refine);
        assert_eq!(
            (refined.ops, refined.predicted_seconds),
            (whole.ops, whole.predicted_seconds)
        );
    }
    let budget = top * 75 / 100;
    let slow = Tables::build(&chain, Mode::Full, top, &options(6e9), &mut |_| true).unwrap();
    let quick = planned(only(ask(&mut service, plan_at(budget, 6e9, Stage::Quick))));
    assert_eq!(quick.ops, slow.plan(&chain, budget).solution.ops);
    // rotor has no such table: a quick ask is answered whole (in the page).
    let rotor = Request::Plan {
        generation: 1,
        ask: Ask {
            id: 10,
            algorithm: Algorithm::Rotor,
            budget,
            bandwidth: Some(12e9),
            exact: false,
            stage: Stage::Quick,
        },
    };
    let mut page = loaded(Role::Page, &chain);
    ask(&mut page, build(Algorithm::Rotor, &chain));
    let answer = planned(only(ask(&mut page, rotor)));
    assert_eq!(answer.stage, Stage::Whole);
}

// A long chain's table for every budget stays within the page's memory
// (issue 44: at 300 stages the paper's 50 slots would take 1.48 GB and no
// quick answer came): on fewer slots, which the quick answer says, with
// the limit. Could fail if the page built the paper's grid whatever its
// size (50 slots), or if a coarser grid went unsaid. Mutation tried:
// `max_table_bytes: QUICK_TABLE_BYTES` left out of the quick table's
// options: 50 slots at 300 stages, the first assertion fails.
#[test]
fn a_long_chains_table_for_every_budget_is_built_on_fewer_slots_and_says_so() {
    let resolution = |stages: usize, limit: u64| {
        remat_core::solvers::offload::pofo::resolution(stages, 50, true, Mode::Full, limit, false)
            .unwrap()
    };
    assert_eq!(resolution(100, QUICK_TABLE_BYTES).slots, 50);
    assert_eq!(resolution(300, QUICK_TABLE_BYTES).slots, 21);
    // The page's table is built on that grid (no table is built here).
    let long = heterogeneous(300);
    let grid = |chain: &Chain| {
        let options = quick_table_options(Some(12e9));
        remat_core::solvers::offload::grid_for(chain, Mode::Full, &options, Some(12e9)).unwrap()
    };
    assert_eq!(grid(&long).slots, 21);
    assert_eq!(grid(&heterogeneous(100)).slots, 50);
    // The words, on a chain small enough to build here: a limit that
    // leaves it fewer slots than the paper's.
    let chain = heterogeneous(12);
    let limit = resolution(12, u64::MAX).table_bytes as u64 / 4;
    let options = Options {
        bandwidth_bytes_per_s: Some(12e9),
        max_table_bytes: limit,
        ..Options::default()
    };
    let top = max_useful_budget(&chain);
    let table = Tables::build(&chain, Mode::Full, top, &options, &mut |_| true).unwrap();
    let slots = table.resolution().slots;
    assert!(slots < 50, "{slots}");
    let budget = top * 3 / 4;
    let words = quick_words(&table, budget, table.plan(&chain, budget)).detail;
    let said = format!(
        "({slots} slots, not the 50 asked: their tables would need {}, over the limit of {})",
        format_bytes(resolution(12, u64::MAX).table_bytes as u64),
        format_bytes(limit)
    );
    assert!(words.contains(&said), "{words}");
}

// Per-stage menus (issue 41) survive the page's protocol: the chain goes
// to the planners as `remat-chain/1` text, which keeps every menu, and a
// plan's F_all options survive its JSON both ways. Fails if the chain
// crossed without its menus (rotor would then plan the classic F_all
// everywhere, unlike the core on the chain itself) or if the envelope
// dropped `option` (the decoded plan would differ). Mutation tried: the
// service's `load` clearing the menus of the chain it read: the page's
// plan at 3 GiB was no longer the core's.
#[test]
fn menus_and_their_options_cross_between_the_page_and_the_worker() {
    let chain = examples::by_name("gpt2-sac").unwrap();
    let read = read_any_chain(&write_chain(&chain)).unwrap();
    let menus = |c: &Chain| -> Vec<_> { c.stages.iter().map(|s| s.menu.clone()).collect() };
    assert_eq!(menus(&read), menus(&chain));
    assert!(chain.has_menus());

    let mut worker = loaded(Role::Worker, &chain);
    let mut page = loaded(Role::Page, &chain);
    carried(&mut worker, &mut page, Algorithm::Rotor, &chain);
    let budget = 3 << 30;
    let p = planned(ask(&mut page, plan(Algorithm::Rotor, budget)));
    let direct = remat_core::solvers::solve(&chain, Algorithm::Rotor, budget, &Options::default())
        .unwrap()
        .ops
        .unwrap();
    let ops = p.ops.clone().expect("rotor plans 3 GiB");
    assert_eq!(
        ops, direct,
        "the page plans as the core does on the chain itself"
    );
    assert!(!remat_core::schedule::menu_choices(&ops).is_empty());

    let wire = Envelope::encode(Response::Planned(Box::new(p.clone())));
    assert!(wire.text.contains(r#""option":"#), "{}", wire.text);
    let Response::Planned(back) = wire.decode::<Response>().unwrap() else {
        panic!("not a plan");
    };
    assert_eq!(*back, p);
}

// Issue 44, item 1: an offloading answer in the page carries its
// certificate in words, as the CLI prints it — against every schedule at
// the link, by the time floor, from the simulated makespan. Could fail if
// the page dropped it, took pofo's DP value for the plan's time, or named
// the transfer-free class for an algorithm that moves tensors. Mutation
// run: `with_floor_certificate` not called → no "certified" words (fails).
#[test]
fn an_offloading_answer_says_how_far_it_may_be_from_the_optimum() {
    let chain = examples::by_name("vgg19").unwrap();
    let mut service = loaded(Role::Worker, &chain);
    let budget = (max_useful_budget(&chain) as f64 * 0.8) as u64;
    for (alg, words) in [
        (Algorithm::Pofo, "no schedule is faster than"),
        (
            Algorithm::Sequential,
            "no transfer-free schedule is faster than",
        ),
    ] {
        if alg == Algorithm::Sequential {
            assert!(results(ask(&mut service, build(alg, &chain))).len() == 1);
        }
        let p = planned(ask(&mut service, plan(alg, budget)));
        let ops = p.ops.as_deref().expect("a plan at 80 % of M_high");
        let trace = judge(&chain, ops, budget, Some(12e9)).unwrap();
        let floor = remat_core::solvers::floor_certificate(
            &chain,
            alg,
            budget,
            Some(12e9),
            trace.makespan_seconds,
        )
        .unwrap();
        assert!(p.detail.contains(&floor.line()), "{alg}: {}", p.detail);
        assert!(p.detail.contains(words), "{alg}: {}", p.detail);
    }
}
