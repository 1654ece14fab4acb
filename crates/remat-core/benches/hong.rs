//! Algorithm 6 of Hong et al. (`solvers::hong::pytorch::algorithm6`) on
//! 10⁴, 10⁵ and 10⁶ stages: the target is ≤ 100 ms at 10⁶ in a
//! native release build, growing linearly.
//!
//! A `Chain` holds at most `MAX_STAGES` (5000) stages, so the benchmark runs
//! the algorithm on the size vector d_0 … d_n directly (what
//! `hong::optimal_for_sizes` takes), drawn once per size from a fixed seed:
//! sizes from 1 to 2^30 bytes, as in a real network's mix of large
//! activations and small ones.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use remat_core::solvers::hong::pytorch::algorithm6;
use std::hint::black_box;

fn sizes(n: usize) -> Vec<u64> {
    let mut state = 0x5eed_u64;
    (0..=n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1 + (state >> 34)
        })
        .collect()
}

fn hong_algorithm6(c: &mut Criterion) {
    let mut g = c.benchmark_group("hong_algorithm6");
    g.sample_size(20);
    for n in [10_000usize, 100_000, 1_000_000] {
        let d = sizes(n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("stages", n), &d, |b, d| {
            b.iter(|| algorithm6(black_box(d)))
        });
    }
    g.finish();
}

criterion_group!(benches, hong_algorithm6);
criterion_main!(benches);
