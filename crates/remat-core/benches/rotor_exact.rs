//! Issue 25, item 1, before and after in one run: rotor's table on the
//! 500-slot grid (the table the planner built before, and the explorer
//! builds) against the breakpoint table, exact in bytes at every budget.
//!
//! * `rotor_whole_table`: `remat bench`'s heterogeneous chain at L = 200
//!   and 339. Its breakpoints pass the grid's memory, so the planner
//!   (`Table::build`) decides so early and builds the grid: "planner" is
//!   that decision plus the grid.
//! * `rotor_breakpoints_fit`: chains whose breakpoints fit (the same chain
//!   at L = 50, VGG-19 measured on an H100, a GPT-2-shaped stack of 48
//!   layers in 2 stages each): grid against breakpoints.
//! * `rotor_readout`: a schedule for a new budget from each table.

mod common;

use common::rotor_planner;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use remat_core::examples::{by_name, gpt2, synthetic};
use remat_core::solvers::persistent::{min_budget, PersistentTable, StepTable, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Options};
use remat_core::{Chain, Stage};
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

/// gpt2()'s embedding and head around `layers` blocks, each split in an
/// attention and an MLP stage.
fn transformer(layers: usize) -> Chain {
    let base = gpt2();
    let block = &base.stages[1];
    let sbh = 1024 * 4 * 768 * 4u64;
    let (f, b) = (block.forward_seconds, block.backward_seconds);
    let mut stages = vec![base.stages[0].clone()];
    for i in 0..layers {
        let lse = 4 * 12 * 1024 * 4;
        stages.push(Stage::new(
            format!("attn {i}"),
            f / 3.0,
            b / 3.0,
            sbh,
            6 * sbh + lse,
        ));
        stages.push(Stage::new(
            format!("mlp {i}"),
            2.0 * f / 3.0,
            2.0 * b / 3.0,
            sbh,
            10 * sbh,
        ));
    }
    stages.push(base.stages[base.stages.len() - 1].clone());
    Chain { stages, ..base }
}

fn whole_table(c: &mut Criterion) {
    let mut g = c.benchmark_group("rotor_whole_table");
    g.sample_size(10);
    for n in [200, 339] {
        let chain = synthetic(n);
        g.bench_with_input(BenchmarkId::new("grid_500_slots", n), &chain, |b, chain| {
            b.iter(|| grid(black_box(chain)))
        });
        g.bench_with_input(BenchmarkId::new("planner", n), &chain, |b, chain| {
            b.iter(|| rotor_planner(black_box(chain)))
        });
    }
    g.finish();
}

fn breakpoints_fit(c: &mut Criterion) {
    let mut g = c.benchmark_group("rotor_breakpoints_fit");
    g.sample_size(10);
    let chains = [
        ("synthetic_50", synthetic(50)),
        ("vgg19_h100", by_name("vgg19-h100").unwrap()),
        ("transformer_48x2", transformer(48)),
    ];
    for (name, chain) in chains {
        g.bench_with_input(
            BenchmarkId::new("grid_500_slots", name),
            &chain,
            |b, chain| b.iter(|| grid(black_box(chain))),
        );
        g.bench_with_input(BenchmarkId::new("breakpoints", name), &chain, |b, chain| {
            b.iter(|| steps(black_box(chain)))
        });
    }
    g.finish();
}

fn readout(c: &mut Criterion) {
    let chain = synthetic(50);
    let (on_grid, exact) = (grid(&chain), steps(&chain));
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let budgets: Vec<u64> = (1..=64).map(|i| low + (high - low) / 64 * i).collect();
    let mut g = c.benchmark_group("rotor_readout_50");
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

criterion_group!(benches, whole_table, breakpoints_fit, readout);
criterion_main!(benches);
