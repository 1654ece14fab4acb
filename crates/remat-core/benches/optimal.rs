//! `optimal`'s exact search: stages vs seconds. Each chain is drawn once
//! from a fixed seed (times 1–5 s forward, 1–10 s backward, ω_a 1–4,
//! ω_ā = ω_a + 0–4, small integers: heterogeneous like a real network, and
//! every budget is exact), and searched at two budgets between the least
//! any schedule meets (α = 0) and M_high (α = 1): α = 0.25 and 0.5, the
//! hard part of the range (near M_high store-all is found at once).
//!
//! `REMAT_OPTIMAL_STAGES=6,8,10,12,14` picks the lengths (the default);
//! docs/algorithms.md gives the medians and where the search stops.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use remat_core::solvers::{max_useful_budget, no_progress, optimal};
use remat_core::{Chain, Stage};
use std::hint::black_box;

/// A heterogeneous chain of `stages` stages from a fixed seed.
pub fn random_chain(stages: usize) -> Chain {
    let mut state = 0x5eed_u64 + stages as u64;
    let mut draw = |lo: u64, hi: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (state >> 33) % (hi - lo + 1)
    };
    let stages = (1..=stages)
        .map(|l| {
            let f = draw(1, 5) as f64;
            let b = draw(1, 10) as f64;
            let a = draw(1, 4);
            let saved = a + draw(0, 4);
            Stage::new(format!("s{l}"), f, b, a, saved)
        })
        .collect();
    Chain {
        name: "random".into(),
        source: "hand-made: benchmark".into(),
        input_bytes: draw(1, 4),
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: None,
        stages,
        ..Chain::default()
    }
}

fn lengths() -> Vec<usize> {
    std::env::var("REMAT_OPTIMAL_STAGES")
        .unwrap_or_else(|_| "6,8,10,12,14".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn optimal_search(c: &mut Criterion) {
    let mut g = c.benchmark_group("optimal");
    g.sample_size(10);
    for stages in lengths() {
        let chain = random_chain(stages);
        let low = optimal::least_budget(&chain, &mut no_progress()).unwrap();
        let high = max_useful_budget(&chain);
        for (label, alpha) in [("alpha0.25", 0.25), ("alpha0.5", 0.5)] {
            let budget = low + ((high - low) as f64 * alpha).round() as u64;
            let id = BenchmarkId::new(label, stages);
            g.bench_with_input(id, &budget, |b, &budget| {
                b.iter(|| {
                    optimal::search(
                        black_box(&chain),
                        budget,
                        optimal::Class::All,
                        optimal::Limits::default(),
                        &mut no_progress(),
                    )
                    .unwrap()
                })
            });
        }
        g.bench_with_input(BenchmarkId::new("least_budget", stages), &chain, |b, c| {
            b.iter(|| optimal::least_budget(black_box(c), &mut no_progress()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, optimal_search);
criterion_main!(benches);
