//! `remat bench`: the numbers the issues ask for, on this machine, as
//! medians over repetitions. Criterion benches (crates/remat-core/benches)
//! measure the same things with statistics.

use clap::Args;
use remat_core::solvers::offload;
use remat_core::solvers::persistent::{PersistentTable, Variant};
use remat_core::solvers::pofo::{Mode, Pofo};
use remat_core::solvers::{max_useful_budget, no_progress, Algorithm, Options};
use remat_core::{examples, simulate};
use serde_json::json;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Stages of the synthetic heterogeneous chain (1 to 2000).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=MAX_STAGES))]
    stages: u64,
    /// Memory slots of the rotor table (1 to 100000; the table must stay
    /// under the default size limit).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=crate::input::MAX_SLOTS))]
    slots: u64,
    /// Repetitions of each measurement, the median is reported (1 to 1000).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=MAX_REPS))]
    reps: u64,
    #[arg(long)]
    json: bool,
    /// Skip the pofo measurements (seconds at L = 100).
    #[arg(long)]
    no_pofo: bool,
}

/// The longest synthetic chain: a rotor table for it at 500 slots is already
/// near the default size limit.
const MAX_STAGES: u64 = 2000;
const MAX_REPS: u64 = 1000;

/// The bandwidth of the pofo measurements: PCIe 3 ×16.
const POFO_BANDWIDTH: f64 = 12e9;

/// Median seconds of pofo's DP (C_Δ table, OC and the read-out) on the
/// synthetic chain of `stages` at α = 0.3 with `slots` memory steps.
fn pofo_dp(stages: usize, slots: usize, reps: usize) -> Result<f64, String> {
    let chain = examples::synthetic(stages);
    let low = remat_core::solvers::persistent::min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let budget = low + (high - low) * 3 / 10;
    let mut times = Vec::new();
    for _ in 0..reps {
        let t0 = Instant::now();
        let mut dp = Pofo::build(
            &chain,
            Mode::Full,
            budget,
            slots,
            Some(POFO_BANDWIDTH),
            Options::default().max_table_bytes,
            &mut no_progress(),
        )
        .map_err(|e| e.to_string())?;
        std::hint::black_box(dp.plan(&mut no_progress()).unwrap());
        times.push(t0.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

/// Median seconds of the whole `pofo` solve (DP, prefetch placement, the
/// simulator's verdicts, rotor's schedule for comparison).
fn pofo_solve(stages: usize, reps: usize) -> Result<f64, String> {
    let chain = examples::synthetic(stages);
    let low = remat_core::solvers::persistent::min_budget(&chain, Variant::Rotor);
    let high = max_useful_budget(&chain);
    let budget = low + (high - low) * 3 / 10;
    let options = Options {
        bandwidth_bytes_per_s: Some(POFO_BANDWIDTH),
        ..Options::default()
    };
    let mut times = Vec::new();
    for _ in 0..reps {
        let t0 = Instant::now();
        let s = offload::solve(
            &chain,
            Algorithm::Pofo,
            budget,
            &options,
            &mut no_progress(),
        )
        .map_err(|e| e.to_string())?;
        std::hint::black_box(s);
        times.push(t0.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(a: BenchArgs) -> Result<(), String> {
    let (stages, slots, reps) = (a.stages as usize, a.slots as usize, a.reps as usize);
    let chain = examples::synthetic(stages);
    let high = max_useful_budget(&chain);
    let limit = Options::default().max_table_bytes;
    let mut build = Vec::new();
    let mut table = None;
    for _ in 0..reps {
        let t0 = Instant::now();
        let t = PersistentTable::build(
            &chain,
            Variant::Rotor,
            high,
            slots,
            limit,
            &mut no_progress(),
        )
        .map_err(|e| e.to_string())?;
        build.push(t0.elapsed().as_secs_f64());
        table = Some(t);
    }
    let table = table.expect("reps ≥ 1");
    // Read out schedules for budgets across the range, as the slider does.
    let low = remat_core::solvers::persistent::min_budget(&chain, Variant::Rotor);
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
    let mut sim = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        let trace = simulate(&chain, &ops).map_err(|e| e.to_string())?;
        sim.push(t0.elapsed().as_secs_f64());
        std::hint::black_box(trace);
    }
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
    let build_s = median(build);
    let readout_s = median(readout);
    let sim_s = median(sim);
    let ops_per_s = ops.len() as f64 / sim_s;
    if a.json {
        let v = json!({
            "stages": stages, "slots": slots,
            "table_build_seconds": build_s, "table_bytes": table.memory_bytes(),
            "readout_seconds": readout_s, "simulated_ops": ops.len(),
            "simulator_ops_per_second": ops_per_s,
            "pofo_dp_seconds": pofo.iter().map(|(l, n, t)| json!({"stages": l, "slots": n, "seconds": t})).collect::<Vec<_>>(),
            "pofo_solve_50_stages_seconds": solve_50,
        });
        say!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
    } else {
        say!(
            "synthetic heterogeneous chain: {} stages, {} slots",
            stages,
            slots
        );
        say!(
            "rotor table build   median {:.3} s over {} runs",
            build_s,
            reps
        );
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
            say!("pofo DP             L = {l:>3}, N = {n:>3}: median {t:.3} s (12 GB/s, α = 0.3)");
        }
        if let Some(t) = solve_50 {
            say!(
                "pofo solve, L = 50  median {t:.3} s (DP + at-once transfers + simulator verdicts)"
            );
        }
    }
    Ok(())
}
