//! Issue 25, item 1: rotor's whole table on the grid (500 slots at M_high,
//! the table the explorer and `remat bench` build) against the breakpoint
//! table, exact in bytes at every budget, in one run on `remat bench`'s
//! heterogeneous chain at L = 200 and 339; and reading a schedule out of
//! each.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use remat_core::examples::synthetic;
use remat_core::solvers::persistent::{min_budget, PersistentTable, StepTable, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Options};
use remat_core::Chain;
use std::hint::black_box;

fn grid(chain: &Chain) -> PersistentTable {
    PersistentTable::build(
        chain,
        Variant::Rotor,
        max_useful_budget(chain),
        500,
        Options::default().max_table_bytes,
        &mut no_progress(),
    )
    .unwrap()
}

fn steps(chain: &Chain) -> StepTable {
    StepTable::build(chain, Variant::Rotor, u64::MAX, &mut no_progress())
        .unwrap()
        .unwrap()
}

fn tables(c: &mut Criterion) {
    let mut g = c.benchmark_group("rotor_whole_table");
    g.sample_size(10);
    for n in [200, 339] {
        let chain = synthetic(n);
        g.bench_with_input(BenchmarkId::new("grid_500_slots", n), &chain, |b, chain| {
            b.iter(|| grid(black_box(chain)))
        });
        g.bench_with_input(BenchmarkId::new("breakpoints", n), &chain, |b, chain| {
            b.iter(|| steps(black_box(chain)))
        });
    }
    g.finish();
}

fn readout(c: &mut Criterion) {
    let chain = synthetic(200);
    let (on_grid, exact) = (grid(&chain), steps(&chain));
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let budgets: Vec<u64> = (1..=64).map(|i| low + (high - low) / 64 * i).collect();
    let mut g = c.benchmark_group("rotor_readout_200");
    let mut i = 0;
    g.bench_function("grid_500_slots", |b| {
        b.iter(|| {
            i = (i + 1) % budgets.len();
            on_grid.plan(&chain, black_box(budgets[i]))
        })
    });
    g.bench_function("breakpoints", |b| {
        b.iter(|| {
            i = (i + 1) % budgets.len();
            exact.plan(&chain, black_box(budgets[i]))
        })
    });
    g.finish();
}

criterion_group!(benches, tables, readout);
criterion_main!(benches);
