//! Criterion benchmarks for the numbers the issues set targets for:
//! the rotor table at L = 200 and 500 slots, reading out a schedule for a new
//! budget, the simulator's throughput, pofo's DP at L = 50, N = 50, and
//! one run of the dynamic runtimes (dtr, delta) at L = 60 and 200.
//! `remat bench` prints the same measurements as medians without criterion.

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use remat_core::examples::synthetic;
use remat_core::simulator::simulate;
use remat_core::solvers::persistent::{min_budget, PersistentTable, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Options};
use remat_core::Chain;
use std::hint::black_box;

fn build(chain: &Chain, variant: Variant, slots: usize) -> PersistentTable {
    PersistentTable::build(
        chain,
        variant,
        max_useful_budget(chain),
        slots,
        Options::default().max_table_bytes,
        &mut no_progress(),
    )
    .unwrap()
}

/// A benchmark group of `samples` samples, and the synthetic chain of each
/// length in `stages` to run it on.
fn group_over<'a>(
    c: &'a mut Criterion,
    name: &str,
    samples: usize,
    stages: &[usize],
) -> (BenchmarkGroup<'a, WallTime>, Vec<(usize, Chain)>) {
    let mut g = c.benchmark_group(name);
    g.sample_size(samples);
    (g, stages.iter().map(|&n| (n, synthetic(n))).collect())
}

fn rotor_table(c: &mut Criterion) {
    let (mut g, chains) = group_over(c, "rotor_table", 10, &[50, 100, 200]);
    for (n, chain) in chains {
        g.bench_with_input(BenchmarkId::new("stages", n), &chain, |b, chain| {
            b.iter(|| build(black_box(chain), Variant::Rotor, 500))
        });
    }
    g.finish();
}

fn readout(c: &mut Criterion) {
    let chain = synthetic(200);
    let table = build(&chain, Variant::Rotor, 500);
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let budgets: Vec<u64> = (1..=64).map(|i| low + (high - low) / 64 * i).collect();
    let mut i = 0;
    c.bench_function("rotor_readout_200", |b| {
        b.iter(|| {
            i = (i + 1) % budgets.len();
            table.plan(&chain, black_box(budgets[i]))
        })
    });
}

fn simulator(c: &mut Criterion) {
    let chain = synthetic(200);
    let table = build(&chain, Variant::Rotor, 500);
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let ops = table.plan(&chain, low + (high - low) / 10).unwrap().ops;
    let mut g = c.benchmark_group("simulator");
    g.throughput(Throughput::Elements(ops.len() as u64));
    g.bench_function("rotor_schedule_200", |b| {
        b.iter(|| simulate(&chain, black_box(&ops)).unwrap())
    });
    g.finish();
}

/// The budget at α = tenths / 10 between rotor's M_low and M_high.
fn budget_at_tenths(chain: &Chain, tenths: u64) -> u64 {
    let low = min_budget(chain, Variant::Rotor);
    low + (max_useful_budget(chain) - low) * tenths / 10
}

/// pofo's DP (C_Δ table, OC, read-out) at L = 25 and the target L = 50,
/// N = 50, at PCIe 3 speed and α = 0.3.
fn pofo(c: &mut Criterion) {
    use remat_core::solvers::offload::pofo::{Filling, Mode, Pofo};
    let (mut g, chains) = group_over(c, "pofo_dp", 10, &[25, 50]);
    for (n, chain) in chains {
        let budget = budget_at_tenths(&chain, 3);
        g.bench_with_input(
            BenchmarkId::new("50_slots_stages", n),
            &chain,
            |b, chain| {
                b.iter(|| {
                    let mut dp = Pofo::build(
                        black_box(chain),
                        Mode::Full,
                        budget,
                        50,
                        Some(12e9),
                        Options::default().max_table_bytes,
                        Filling::default(),
                        &mut no_progress(),
                    )
                    .unwrap();
                    dp.plan(&mut no_progress()).unwrap()
                })
            },
        );
    }
    g.finish();
}

/// One run of each dynamic runtime (dtr, delta) at L = 60 and 200, at
/// α = 0.3 between rotor's M_low and M_high and at α = 0, as the explorer's
/// compare and sweep call them at every budget. At α = 0 only dtr at
/// L = 200 finishes (2545 operations, 1170 recomputations: the tight,
/// quadratic case); the others stop out of memory part way.
fn dynamic(c: &mut Criterion) {
    use remat_core::solvers::dynamic::{policy, run};
    use remat_core::solvers::Algorithm;
    let (mut g, chains) = group_over(c, "dynamic", 20, &[60, 200]);
    for (n, chain) in chains {
        let tight = budget_at_tenths(&chain, 0);
        for (alpha, budget) in [("a0.3", budget_at_tenths(&chain, 3)), ("a0", tight)] {
            for algorithm in [Algorithm::Dtr, Algorithm::Delta] {
                let p =
                    policy(algorithm, chain.bandwidth_bytes_per_s, &Default::default()).unwrap();
                let id = BenchmarkId::new(format!("{algorithm}_{alpha}_stages"), n);
                g.bench_with_input(id, &chain, |b, chain| {
                    b.iter(|| {
                        run(
                            black_box(chain),
                            &p,
                            budget,
                            chain.bandwidth_bytes_per_s,
                            &mut no_progress(),
                        )
                    })
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, rotor_table, readout, simulator, pofo, dynamic);
criterion_main!(benches);
