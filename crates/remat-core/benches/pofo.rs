//! Criterion benchmark of pofo's DP (C_Δ table, OC and the read-out of the
//! plan) at L = 100, N = 50 and L = 50, N = 100 on `examples::synthetic`
//! at PCIe 3 speed (12 GB/s) and α = 0.3 between rotor's M_low and M_high —
//! the cases `remat bench` times — for the DP as it is (`after`) and as it
//! was (`before`: `pofo::reference`, kept callable for this), in one run;
//! `after` on every core this process may use, `after_1_thread` on one.
//!
//! `cargo bench -p remat-core --bench pofo`; each DP is checked to give the
//! same plan as the reference before it is timed.
//!
//! `pofo_table`: offloading at slider speed, L = 100 on pofo's grid of 50
//! slots at M_high (one absolute grid): `build` the tables for every budget
//! (`offload::Tables`: pofo's `Table` and rotor's), then a new budget
//! answered from them — `dp_read_out` (the DP's plan, `Table::plan`) and
//! `answer` (the judged schedule: prefetches placed, the DP's and rotor's
//! schedules simulated, as `remat solve` answers), budgets cycling over
//! 20 points from M_low to M_high.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use remat_core::examples::synthetic;
use remat_core::solvers::offload::pofo::{reference, Filling, Mode, Pofo, PofoPlan};
use remat_core::solvers::offload::Tables;
use remat_core::solvers::parallel::Workers;
use remat_core::solvers::persistent::{min_budget, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Options};
use remat_core::Chain;
use std::hint::black_box;
use std::time::Duration;

const BANDWIDTH: f64 = 12e9;

/// The synthetic chain of `stages` and its budget at α = 0.3.
fn case(stages: usize) -> (Chain, u64) {
    let chain = synthetic(stages);
    let low = min_budget(&chain, Variant::Rotor);
    let budget = low + (max_useful_budget(&chain) - low) * 3 / 10;
    (chain, budget)
}

/// The DP as it is, its tables filled on `workers` threads.
fn after(chain: &Chain, budget: u64, slots: usize, workers: Workers) -> Option<PofoPlan> {
    let (limit, bw) = (Options::default().max_table_bytes, Some(BANDWIDTH));
    let filling = Filling::on(workers);
    let mut p = no_progress();
    let dp = Pofo::build(chain, Mode::Full, budget, slots, bw, limit, filling, &mut p);
    dp.unwrap().plan(&mut p).unwrap()
}

/// The DP as it was (the reference oracle).
fn before(chain: &Chain, budget: u64, slots: usize) -> Option<PofoPlan> {
    let (limit, bw) = (Options::default().max_table_bytes, Some(BANDWIDTH));
    let mut p = no_progress();
    let dp = reference::Pofo::build(chain, Mode::Full, budget, slots, bw, limit, &mut p);
    dp.unwrap().plan(&mut p).unwrap()
}

fn pofo(c: &mut Criterion) {
    let mut g = c.benchmark_group("pofo_dp");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(5));
    for (stages, slots) in [(100, 50), (50, 100)] {
        let (chain, budget) = case(stages);
        let fast = after(&chain, budget, slots, Workers::available());
        assert!(fast.is_some(), "L = {stages}, N = {slots}: feasible");
        assert_eq!(
            fast,
            before(&chain, budget, slots),
            "L = {stages}, N = {slots}: the same plan as the reference"
        );
        let id = format!("L{stages}_N{slots}");
        // On every core, then on one: what the DP gained, apart from what
        // the cores add.
        g.bench_with_input(BenchmarkId::new("after", &id), &chain, |b, chain| {
            b.iter(|| after(black_box(chain), budget, slots, Workers::available()))
        });
        g.bench_with_input(
            BenchmarkId::new("after_1_thread", &id),
            &chain,
            |b, chain| b.iter(|| after(black_box(chain), budget, slots, Workers::ONE)),
        );
        g.bench_with_input(BenchmarkId::new("before", &id), &chain, |b, chain| {
            b.iter(|| before(black_box(chain), budget, slots))
        });
    }
    g.finish();
}

fn table(c: &mut Criterion) {
    let mut g = c.benchmark_group("pofo_table");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(5));
    let chain = synthetic(100);
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let options = Options {
        bandwidth_bytes_per_s: Some(BANDWIDTH),
        ..Options::default()
    };
    let build = || Tables::build(&chain, Mode::Full, high, &options, &mut no_progress()).unwrap();
    g.bench_function("build/L100_N50", |b| b.iter(build));
    let planner = build();
    let table = planner.table().expect("a link: the DP's tables");
    let budgets: Vec<u64> = (0..20).map(|k| low + (high - low) * k / 19).collect();
    let mut at = 0;
    g.bench_function("dp_read_out/L100_N50", |b| {
        b.iter(|| {
            at = (at + 1) % budgets.len();
            table.plan(black_box(budgets[at]))
        })
    });
    g.bench_function("answer/L100_N50", |b| {
        b.iter(|| {
            at = (at + 1) % budgets.len();
            planner.plan(&chain, black_box(budgets[at]))
        })
    });
    g.finish();
}

criterion_group!(benches, pofo, table);
criterion_main!(benches);
