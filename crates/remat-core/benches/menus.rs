//! Issue 41: what per-stage menus cost rotor's planner (the table the
//! slider reads). The same chains with and without a menu of four
//! selective-checkpointing policies per block, in one run:
//!
//! * `example:gpt2` against `example:gpt2-sac` (14 stages);
//! * a GPT-2-shaped stack of 48 layers, each one stage with
//!   `gpt2-sac`'s four options, and the same stack without them.
//!
//! "planner" is `Table::build` at M_high (breakpoints where they fit, the
//! 500-slot grid otherwise), what `remat solve` and the page build; "plan"
//! reads one budget's schedule out of it.

mod common;

use common::rotor_planner;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use remat_core::examples::{gpt2, gpt2_sac};
use remat_core::solvers::max_useful_budget;
use remat_core::solvers::persistent::{min_budget, Variant};
use remat_core::Chain;
use std::hint::black_box;

/// `chain`'s first block repeated `layers` times between its embedding and
/// its head.
fn stack(chain: &Chain, layers: usize) -> Chain {
    let n = chain.stages.len();
    let mut stages = vec![chain.stages[0].clone()];
    stages.extend((0..layers).map(|i| {
        let mut s = chain.stages[1].clone();
        s.name = format!("block {i}");
        s
    }));
    stages.push(chain.stages[n - 1].clone());
    Chain {
        stages,
        ..chain.clone()
    }
}

fn chains() -> Vec<(&'static str, Chain)> {
    vec![
        ("gpt2_14", gpt2()),
        ("gpt2_sac_14", gpt2_sac()),
        ("stack_50", stack(&gpt2(), 48)),
        ("stack_sac_50", stack(&gpt2_sac(), 48)),
    ]
}

fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("rotor_menus_planner");
    g.sample_size(10);
    for (name, chain) in chains() {
        g.bench_with_input(BenchmarkId::from_parameter(name), &chain, |b, chain| {
            b.iter(|| rotor_planner(black_box(chain)))
        });
    }
    g.finish();
}

fn plan(c: &mut Criterion) {
    let mut g = c.benchmark_group("rotor_menus_plan");
    for (name, chain) in chains() {
        let table = rotor_planner(&chain);
        let low = min_budget(&chain, Variant::Rotor);
        let high = max_useful_budget(&chain);
        let budgets: Vec<u64> = (1..=64).map(|i| low + (high - low) / 64 * i).collect();
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % budgets.len();
                table.plan(&chain, black_box(budgets[i]))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, build, plan);
criterion_main!(benches);
