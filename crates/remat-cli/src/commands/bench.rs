//! `remat bench`: the numbers the issues ask for, on this machine, as
//! medians over repetitions. Criterion benches (crates/remat-core/benches)
//! measure the same things with statistics.

use crate::args::BenchArgs;
use crate::error::Result;
use crate::report::{self, BenchReport, PofoDpTime, PofoTableTime};
use remat_core::solvers::offload;
use remat_core::solvers::offload::pofo::{Filling, Mode, Pofo};
use remat_core::solvers::parallel::Workers;
use remat_core::solvers::persistent::{min_budget, PersistentTable, Variant};
use remat_core::solvers::{max_useful_budget, no_progress, Algorithm, Options, Problem};
use remat_core::{examples, simulate, Chain};
use std::time::Instant;

/// The bandwidth of the pofo measurements: PCIe 3 ×16.
const POFO_BANDWIDTH: f64 = 12e9;

/// The synthetic chain of `stages` and its budget at α = 0.3, where the
/// pofo measurements are taken.
fn pofo_case(stages: usize) -> (Chain, u64) {
    let chain = examples::synthetic(stages);
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let budget = low + (high - low) * 3 / 10;
    (chain, budget)
}

/// The median seconds of `reps` runs of `f`, and what its last run returned.
fn timed<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t0 = Instant::now();
        let out = f()?;
        times.push(t0.elapsed().as_secs_f64());
        last = Some(out);
    }
    Ok((median(times), last.expect("reps ≥ 1")))
}

/// Median seconds of pofo's DP (C_Δ table, OC and the read-out) on the
/// synthetic chain of `stages` at α = 0.3 with `slots` memory steps.
fn pofo_dp(stages: usize, slots: usize, reps: usize) -> Result<f64> {
    let (chain, budget) = pofo_case(stages);
    let limit = Options::default().max_table_bytes;
    let (seconds, ()) = timed(reps, || {
        let progress = &mut no_progress();
        let bw = Some(POFO_BANDWIDTH);
        let mut dp = Pofo::build(
            &chain,
            Mode::Full,
            budget,
            slots,
            bw,
            limit,
            Filling::default(),
            progress,
        )?;
        std::hint::black_box(dp.plan(&mut no_progress()).unwrap());
        Ok(())
    })?;
    Ok(seconds)
}

/// Median seconds of the whole `pofo` solve (DP, prefetch placement, the
/// simulator's verdicts, rotor's schedule for comparison).
fn pofo_solve(stages: usize, reps: usize) -> Result<f64> {
    let (chain, budget) = pofo_case(stages);
    let options = Options {
        bandwidth_bytes_per_s: Some(POFO_BANDWIDTH),
        ..Options::default()
    };
    let (seconds, ()) = timed(reps, || {
        let problem = Problem {
            chain: &chain,
            algorithm: Algorithm::Pofo,
            budget,
            options: &options,
        };
        let s = offload::solve(&problem, &mut no_progress())?;
        std::hint::black_box(s);
        Ok(())
    })?;
    Ok(seconds)
}

/// pofo's tables for every budget of the synthetic chain of `stages`
/// (`offload::Tables`, the default 50 slots at M_high, 12 GB/s):
/// the median seconds to build them, and to answer (judged) each of 20
/// budgets from M_low to M_high from them.
fn pofo_table(stages: usize, reps: usize) -> Result<PofoTableTime> {
    let chain = examples::synthetic(stages);
    let low = min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let options = Options {
        bandwidth_bytes_per_s: Some(POFO_BANDWIDTH),
        ..Options::default()
    };
    let (build_seconds, planner) = timed(reps, || {
        let mode = offload::pofo::Mode::Full;
        Ok(offload::Tables::build(
            &chain,
            mode,
            high,
            &options,
            &mut no_progress(),
        )?)
    })?;
    let budgets: Vec<u64> = (0..20).map(|k| low + (high - low) * k / 19).collect();
    let answers = budgets
        .iter()
        .map(|&b| {
            let t0 = Instant::now();
            std::hint::black_box(planner.plan(&chain, b));
            t0.elapsed().as_secs_f64()
        })
        .collect();
    Ok(PofoTableTime {
        build_seconds,
        answer_seconds: median(answers),
        budgets: budgets.len(),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(a: &BenchArgs) -> Result<()> {
    let (stages, slots, reps) = (a.stages, a.slots, a.reps);
    let chain = examples::synthetic(stages);
    let high = max_useful_budget(&chain);
    let limit = Options::default().max_table_bytes;
    let (build_s, table) = timed(reps, || {
        let progress = &mut no_progress();
        Ok(PersistentTable::build(
            &chain,
            Variant::Rotor,
            high,
            slots,
            limit,
            progress,
        )?)
    })?;
    // Read out schedules for budgets across the range, as the slider does.
    let low = min_budget(&chain, Variant::Rotor);
    let budgets: Vec<u64> = (0..200)
        .map(|i| low + (high - low) / 200 * (i + 1))
        .collect();
    let mut readout = Vec::new();
    let mut ops = Vec::new();
    for &b in &budgets {
        let t0 = Instant::now();
        let plan = table.plan(&chain, b);
        readout.push(t0.elapsed().as_secs_f64());
        if let Some(p) = plan {
            if p.ops.len() > ops.len() {
                ops = p.ops;
            }
        }
    }
    // The simulator on the longest of those schedules, repeated.
    let (sim_s, trace) = timed(20, || Ok(simulate(&chain, &ops)?))?;
    std::hint::black_box(trace);
    // pofo: how the DP grows with L (N = 50) and with N (L = 50).
    let mut pofo = Vec::new();
    if !a.no_pofo {
        for (l, n) in [(25, 50), (50, 50), (100, 50), (50, 25), (50, 100)] {
            pofo.push((l, n, pofo_dp(l, n, reps.min(3))?));
        }
    }
    let solve_50 = if a.no_pofo {
        None
    } else {
        Some(pofo_solve(50, reps.min(3))?)
    };
    let table_100 = if a.no_pofo {
        None
    } else {
        Some(pofo_table(100, reps.min(3))?)
    };
    let threads = Workers::available().count();
    let readout_s = median(readout);
    let ops_per_s = ops.len() as f64 / sim_s;
    if a.json {
        report::print(&BenchReport {
            stages,
            slots,
            table_build_seconds: build_s,
            table_bytes: table.memory_bytes(),
            readout_seconds: readout_s,
            simulated_ops: ops.len(),
            simulator_ops_per_second: ops_per_s,
            pofo_dp_seconds: pofo
                .iter()
                .map(|&(stages, slots, seconds)| PofoDpTime {
                    stages,
                    slots,
                    seconds,
                })
                .collect(),
            pofo_solve_50_stages_seconds: solve_50,
            pofo_table_100_stages: table_100,
            pofo_threads: threads,
        });
        return Ok(());
    }
    say!("synthetic heterogeneous chain: {stages} stages, {slots} slots");
    say!("rotor table build   median {build_s:.3} s over {reps} runs");
    say!(
        "rotor table memory  {:.1} MiB",
        table.memory_bytes() as f64 / 1048576.0
    );
    say!(
        "read out a budget   median {:.1} µs over {} budgets",
        readout_s * 1e6,
        budgets.len()
    );
    say!(
        "simulator           {:.2} M ops/s ({} ops, median of 20)",
        ops_per_s / 1e6,
        ops.len()
    );
    for (l, n, t) in &pofo {
        say!("pofo DP             L = {l:>3}, N = {n:>3}: median {t:.3} s (12 GB/s, α = 0.3, {threads} threads)");
    }
    if let Some(t) = solve_50 {
        say!("pofo solve, L = 50  median {t:.3} s (DP + at-once transfers + simulator verdicts)");
    }
    if let Some(t) = &table_100 {
        say!(
            "pofo table, L = 100 build median {:.3} s (every budget, 50 slots at M_high); a new budget answered in median {:.1} ms over {} budgets (judged)",
            t.build_seconds,
            t.answer_seconds * 1e3,
            t.budgets
        );
    }
    Ok(())
}
