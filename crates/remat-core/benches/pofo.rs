//! Criterion benchmark of pofo's DP (C_Δ table, OC and the read-out of the
//! plan) at L = 100, N = 50 and L = 50, N = 100 on `examples::synthetic`
//! at PCIe 3 speed (12 GB/s) and α = 0.3 between rotor's M_low and M_high —
//! the cases `remat bench` times — for the DP as it is (`after`) and as it
//! was (`before`: `pofo::reference`, kept callable for this), in one run.
//!
//! `cargo bench -p remat-core --bench pofo`; each DP is checked to give the
//! same plan as the reference before it is timed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use remat_core::examples::synthetic;
use remat_core::solvers::persistent::{min_budget, Variant};
use remat_core::solvers::pofo::{reference, Mode, Pofo, PofoPlan};
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

fn after(chain: &Chain, budget: u64, slots: usize) -> Option<PofoPlan> {
    let limit = Options::default().max_table_bytes;
    let bw = Some(BANDWIDTH);
    let mut dp = Pofo::build(
        chain,
        Mode::Full,
        budget,
        slots,
        bw,
        limit,
        &mut no_progress(),
    )
    .unwrap();
    dp.plan(&mut no_progress()).unwrap()
}

fn before(chain: &Chain, budget: u64, slots: usize) -> Option<PofoPlan> {
    let limit = Options::default().max_table_bytes;
    let bw = Some(BANDWIDTH);
    let mut dp = reference::Pofo::build(
        chain,
        Mode::Full,
        budget,
        slots,
        bw,
        limit,
        &mut no_progress(),
    )
    .unwrap();
    dp.plan(&mut no_progress()).unwrap()
}

fn pofo(c: &mut Criterion) {
    let mut g = c.benchmark_group("pofo_dp");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(5));
    for (stages, slots) in [(100, 50), (50, 100)] {
        let (chain, budget) = case(stages);
        let fast = after(&chain, budget, slots);
        assert!(fast.is_some(), "L = {stages}, N = {slots}: feasible");
        assert_eq!(
            fast,
            before(&chain, budget, slots),
            "L = {stages}, N = {slots}: the same plan as the reference"
        );
        let id = format!("L{stages}_N{slots}");
        g.bench_with_input(BenchmarkId::new("after", &id), &chain, |b, chain| {
            b.iter(|| after(black_box(chain), budget, slots))
        });
        g.bench_with_input(BenchmarkId::new("before", &id), &chain, |b, chain| {
            b.iter(|| before(black_box(chain), budget, slots))
        });
    }
    g.finish();
}

criterion_group!(benches, pofo);
criterion_main!(benches);
