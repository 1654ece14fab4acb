//! One function per subcommand; each returns Err(message) for bad input.

use crate::input;
use clap::{Args, ValueEnum};
use remat_core::format::{
    read_rotor, write_chain, write_schedule, Predicted, ScheduleFile, TimeUnit,
};
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::schedule::format_ops;
use remat_core::simulator::Trace;
use remat_core::solvers::offload::judge;
use remat_core::solvers::persistent::{min_budget_met, PersistentTable, Variant};
use remat_core::solvers::{
    max_useful_budget, no_progress, Algorithm, Memory, Options, Planner, SlotPolicy, Solution,
    DEFAULT_OFFLOAD_SLOTS,
};
use remat_core::{examples, Chain};
use serde_json::{json, Value};

#[derive(Args)]
pub struct SolveArgs {
    /// Chain file or example:NAME.
    chain: String,
    /// Algorithm (see `remat algorithms`).
    #[arg(long, short)]
    algorithm: String,
    /// Memory budget for activations (a^0 included), e.g. 8GiB.
    #[arg(long, short)]
    budget: String,
    /// Memory slots of the DPs (default 500 for revolve and rotor, 50 for
    /// pofo and offload-only, as their papers).
    #[arg(long)]
    slots: Option<usize>,
    /// Host↔device bandwidth, overriding the chain's (e.g. 12GB/s).
    #[arg(long)]
    bandwidth: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Write the schedule (remat-schedule/1) to this file.
    #[arg(long, short)]
    output: Option<String>,
}

#[derive(Args)]
pub struct SimulateArgs {
    /// Chain file or example:NAME.
    chain: String,
    /// Schedule file (remat-schedule/1).
    schedule: String,
    /// Host↔device bandwidth, overriding the schedule's and the chain's.
    #[arg(long)]
    bandwidth: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepMemory {
    Auto,
    Exact,
    Grid,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SweepFormat {
    Csv,
    Json,
}

#[derive(Args)]
pub struct SweepArgs {
    /// Chain file or example:NAME.
    chain: String,
    /// Comma-separated algorithms (default: all).
    #[arg(long)]
    algorithms: Option<String>,
    /// Number of budgets from M_low to M_high (memory ratio α from 0 to 1:
    /// budget = (1 − α) M_low + α M_high, POFO Section 5.2).
    #[arg(long, default_value_t = 20)]
    points: usize,
    /// One budget at this α instead (for a sweep over bandwidths).
    #[arg(long)]
    alpha: Option<f64>,
    /// Slots of the DPs' grid: with `--memory grid` every DP's (default 50,
    /// POFO's); with `--memory exact` the fallback of rotor and revolve when
    /// their sizes allow no exact lattice (default 500).
    #[arg(long)]
    slots: Option<usize>,
    /// How every algorithm at a budget treats memory: `exact` (rotor and
    /// revolve on an exact lattice where the sizes allow; store-all and
    /// sequential are always exact), `grid` (every DP, rotor and revolve
    /// included, on POFO's grid of ⌊budget/slots⌋-byte slots), or `auto`:
    /// `grid` when an offloading algorithm is swept, else `exact`. The
    /// `memory` column says what each row used.
    #[arg(long, value_enum, default_value = "auto")]
    memory: SweepMemory,
    /// Bandwidth, or a comma-separated list to sweep (12GB/s,24GB/s,36GB/s).
    #[arg(long)]
    bandwidth: Option<String>,
    #[arg(long, value_enum, default_value = "csv")]
    format: SweepFormat,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Unit {
    Ms,
    S,
}

#[derive(Args)]
pub struct ConvertArgs {
    /// A JSON file with rotor's fw, bw, cw, cbw, ftmp, btmp lists.
    input: String,
    /// Unit of fw and bw (rotor measures milliseconds).
    #[arg(long, value_enum, default_value = "ms")]
    time_unit: Unit,
    /// Name of the chain.
    #[arg(long)]
    name: Option<String>,
    /// Host↔device bandwidth to record in the chain (e.g. 12GB/s).
    #[arg(long)]
    bandwidth: Option<String>,
    /// Output file (default: stdout).
    #[arg(long, short)]
    output: Option<String>,
}

fn bandwidth(chain: &Chain, flag: &Option<String>) -> Result<Option<f64>, String> {
    match flag {
        Some(text) => input::rate("--bandwidth", text).map(Some),
        None => Ok(chain.bandwidth_bytes_per_s),
    }
}

fn options(slots: Option<usize>, bandwidth: Option<f64>) -> Result<Options, String> {
    let mut o = Options {
        bandwidth_bytes_per_s: bandwidth,
        ..Options::default()
    };
    if let Some(slots) = slots {
        if slots == 0 {
            return Err("--slots: must be at least 1".into());
        }
        o.slots = slots;
        o.offload_slots = slots;
    }
    Ok(o)
}

/// The fields every JSON report shares (DESIGN.md contract).
fn report(
    chain: &Chain,
    algorithm: &str,
    budget: u64,
    trace: Option<&Trace>,
    predicted: (Option<f64>, Option<u64>),
) -> Value {
    json!({
        "algorithm": algorithm,
        "chain": chain.name,
        "stages": chain.len(),
        "budget_bytes": budget,
        "feasible": trace.is_some_and(|t| t.peak_bytes <= budget),
        "makespan_seconds": trace.map(|t| t.makespan_seconds),
        "peak_bytes": trace.map(|t| t.peak_bytes),
        "sequential_seconds": chain.sequential_seconds(),
        "overhead": trace.map(|t| t.overhead()),
        "recomputations": trace.map(|t| t.recomputations),
        "idle_seconds": trace.map(|t| t.idle_seconds),
        "offloaded_bytes": trace.map(|t| t.offloaded_bytes),
        "prefetched_bytes": trace.map(|t| t.prefetched_bytes),
        "predicted_seconds": predicted.0,
        "predicted_peak_bytes": predicted.1,
    })
}

pub fn solve(a: SolveArgs) -> Result<(), String> {
    let chain = input::chain(&a.chain)?;
    let algorithm = Algorithm::from_name(&a.algorithm).map_err(|e| e.to_string())?;
    let budget = input::size("--budget", &a.budget)?;
    let bw = bandwidth(&chain, &a.bandwidth)?;
    let opts = options(a.slots, bw)?;
    let planner = Planner::build(&chain, algorithm, budget, &opts, &mut no_progress())
        .map_err(|e| e.to_string())?;
    let solution = planner.plan(&chain, budget);
    let trace = match &solution.ops {
        Some(ops) => Some(judge(&chain, ops, budget, bw).map_err(|e| {
            format!("internal error: {algorithm} produced an invalid schedule: {e}")
        })?),
        None => None,
    };
    let predicted = predicted(&solution);
    if let (Some(path), Some(ops), Some(t)) = (&a.output, &solution.ops, &trace) {
        let file = ScheduleFile::new(
            &chain,
            algorithm.name(),
            budget,
            bw,
            Predicted {
                makespan_seconds: t.makespan_seconds,
                peak_bytes: t.peak_bytes,
            },
            ops.clone(),
        );
        input::write_text(path, &write_schedule(&file))?;
    } else if a.output.is_some() {
        eprintln!("note: no schedule written: the budget is infeasible for {algorithm}");
    }
    let m_low = planner.min_budget_bytes();
    let m_high = max_useful_budget(&chain);
    if a.json {
        let mut v = report(&chain, algorithm.name(), budget, trace.as_ref(), predicted);
        v["detail"] = json!(solution.detail);
        v["m_low_bytes"] = json!(m_low);
        v["m_high_bytes"] = json!(m_high);
        v["ops"] = json!(solution.ops.clone().unwrap_or_default());
        say!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return Ok(());
    }
    say!("chain      {} ({} stages)", chain.name, chain.len());
    say!("algorithm  {algorithm} ({})", solution.detail);
    say!(
        "budget     {}   (M_low {} for {algorithm}, M_high {})",
        format_bytes(budget),
        format_bytes(m_low),
        format_bytes(m_high)
    );
    match (&solution.ops, &trace) {
        (Some(ops), Some(t)) => {
            say!(
                "makespan   {}   (+{:.1}% over {} with no limit)",
                format_seconds(t.makespan_seconds),
                100.0 * t.overhead(),
                format_seconds(t.sequential_seconds)
            );
            say!("peak       {}", format_bytes(t.peak_bytes));
            say!("recomputed {} forward operations", t.recomputations);
            say!("schedule   {}", format_ops(ops));
        }
        _ => say!("infeasible: {}", solution.detail),
    }
    Ok(())
}

fn predicted(s: &Solution) -> (Option<f64>, Option<u64>) {
    (s.predicted_seconds, s.predicted_peak_bytes)
}

pub fn simulate(a: SimulateArgs) -> Result<(), String> {
    let chain = input::chain(&a.chain)?;
    let schedule = input::schedule(&a.schedule)?;
    schedule
        .check_chain(&chain)
        .map_err(|e| format!("{}: {e}", a.schedule))?;
    let bw = match &a.bandwidth {
        Some(text) => Some(input::rate("--bandwidth", text)?),
        None => schedule
            .bandwidth_bytes_per_s
            .or(chain.bandwidth_bytes_per_s),
    };
    let trace = judge(&chain, &schedule.ops, schedule.budget_bytes, bw)
        .map_err(|e| format!("{}: invalid schedule: {e}", a.schedule))?;
    let predicted = (
        Some(schedule.predicted.makespan_seconds),
        Some(schedule.predicted.peak_bytes),
    );
    if a.json {
        let mut v = report(
            &chain,
            &schedule.algorithm,
            schedule.budget_bytes,
            Some(&trace),
            predicted,
        );
        v["ops"] = json!(schedule.ops.len());
        say!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return Ok(());
    }
    say!("chain      {} ({} stages)", chain.name, chain.len());
    say!(
        "schedule   {} ops by {}",
        schedule.ops.len(),
        schedule.algorithm
    );
    say!(
        "makespan   {}   (+{:.1}%; predicted {})",
        format_seconds(trace.makespan_seconds),
        100.0 * trace.overhead(),
        format_seconds(schedule.predicted.makespan_seconds)
    );
    say!(
        "peak       {}   (budget {}{})",
        format_bytes(trace.peak_bytes),
        format_bytes(schedule.budget_bytes),
        if trace.peak_bytes > schedule.budget_bytes {
            ", EXCEEDED"
        } else {
            ""
        }
    );
    say!(
        "idle       {}   recomputations {}",
        format_seconds(trace.idle_seconds),
        trace.recomputations
    );
    Ok(())
}

/// The most steps rotor's minimum-memory recursion (O(L³/6)) may take in
/// a sweep before it is refused: about ten seconds.
const SWEEP_MAX_MIN_BUDGET_STEPS: u128 = 1 << 33;

/// The sweep's knobs: one memory treatment for every algorithm at a budget.
fn sweep_options(
    a: &SweepArgs,
    algorithms: &[Algorithm],
    bw: Option<f64>,
) -> Result<Options, String> {
    let offloading = algorithms.iter().any(|alg| alg.offloads());
    let grid = match a.memory {
        SweepMemory::Grid => true,
        SweepMemory::Exact => false,
        SweepMemory::Auto => offloading,
    };
    let mut o = options(a.slots, bw)?;
    if grid {
        // POFO's grid for everyone: rotor and revolve (also inside pofo and
        // the heuristics) on the same ⌊budget/N⌋-byte slots as pofo's DP.
        let n = a.slots.unwrap_or(DEFAULT_OFFLOAD_SLOTS);
        o.slots = n;
        o.offload_slots = n;
        o.slot_policy = SlotPolicy::Fixed;
    } else {
        o.slot_policy = SlotPolicy::Exact;
    }
    Ok(o)
}

/// Refuses, before any work, a sweep whose tables or M_low cannot finish:
/// a persistent table of `slots` slots over the size limit, or rotor's
/// O(L³) minimum-memory recursion past [`SWEEP_MAX_MIN_BUDGET_STEPS`].
fn sweep_bounds(chain: &Chain, algorithms: &[Algorithm], o: &Options) -> Result<(), String> {
    let n = chain.len() as u128;
    let steps = n * (n + 1) * (n + 2) / 6;
    if steps > SWEEP_MAX_MIN_BUDGET_STEPS {
        return Err(format!(
            "sweep: M_low of a {}-stage chain takes rotor's O(L³) recursion, {steps} steps \
             (limit {SWEEP_MAX_MIN_BUDGET_STEPS}); sweep a shorter chain or use `solve` at chosen budgets",
            chain.len()
        ));
    }
    if algorithms.iter().any(|alg| alg.uses_slots()) {
        // The exact lattice is capped well below the limit; the fallback
        // (or the fixed grid) has at most `slots` slots.
        let need = PersistentTable::table_bytes(chain.len(), o.slots);
        if need > o.max_table_bytes as u128 {
            return Err(format!(
                "slots: the table for {} stages × {} slots needs {} (limit {}); use fewer --slots",
                chain.len(),
                o.slots,
                format_bytes(need.min(u64::MAX as u128) as u64),
                format_bytes(o.max_table_bytes)
            ));
        }
    }
    Ok(())
}

/// `remat sweep`: every algorithm at every budget, each solved for that
/// budget with the same memory treatment (see [`SweepMemory`]).
///
/// Complexity: P budgets × B bandwidths × (rotor/revolve: one table per
/// budget, O(L³·S) with S ≤ the exact cap or `--slots`; pofo/offload-only:
/// their DP per budget; store-all and sequential: built once, O(L²)), plus
/// rotor's M_low, O(L³) per lattice step. Chains past the bounds of
/// [`sweep_bounds`] are refused before any work.
pub fn sweep(a: SweepArgs) -> Result<(), String> {
    let chain = input::chain(&a.chain)?;
    let algorithms: Vec<Algorithm> = match &a.algorithms {
        Some(list) => list
            .split(',')
            .map(|n| Algorithm::from_name(n.trim()).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?,
        None => Algorithm::ALL.to_vec(),
    };
    if a.points < 2 {
        return Err("--points: at least 2".into());
    }
    let alphas: Vec<f64> = match a.alpha {
        Some(x) if !(0.0..=1.0).contains(&x) => {
            return Err(format!("--alpha: a memory ratio from 0 to 1, got {x}"))
        }
        Some(x) => vec![x],
        None => (0..a.points)
            .map(|i| i as f64 / (a.points - 1) as f64)
            .collect(),
    };
    let bandwidths: Vec<Option<f64>> = match &a.bandwidth {
        Some(list) => list
            .split(',')
            .map(|t| input::rate("--bandwidth", t.trim()).map(Some))
            .collect::<Result<_, _>>()?,
        None => vec![chain.bandwidth_bytes_per_s],
    };
    let base = sweep_options(&a, &algorithms, chain.bandwidth_bytes_per_s)?;
    sweep_bounds(&chain, &algorithms, &base)?;
    // The paper's range: M_low recomputes as much as rotor can (the least
    // budget rotor meets under this sweep's memory treatment, so α = 0 is
    // feasible for rotor), M_high keeps all.
    let m_high = max_useful_budget(&chain);
    let m_low = min_budget_met(
        &chain,
        Variant::Rotor,
        base.slot_policy,
        base.slots,
        base.max_table_bytes,
        Some(m_high),
    )
    .map_or(m_high, |m| m.bytes)
    .min(m_high);
    let mut rows = Vec::new();
    for bw in &bandwidths {
        let opts = sweep_options(&a, &algorithms, *bw)?;
        // Budget-independent planners (store-all, sequential) once; the
        // others are built for each budget, so each is solved for it.
        let mut fixed = Vec::new();
        for alg in &algorithms {
            fixed.push(match alg {
                Algorithm::StoreAll | Algorithm::Sequential => Some(
                    Planner::build(&chain, *alg, m_high, &opts, &mut no_progress())
                        .map_err(|e| e.to_string())?,
                ),
                _ => None,
            });
        }
        for &alpha in &alphas {
            let budget = m_low + ((m_high - m_low) as f64 * alpha).round() as u64;
            for (alg, planner) in algorithms.iter().zip(&fixed) {
                let fresh;
                let p = match planner {
                    Some(p) => p,
                    None => {
                        fresh = Planner::build(&chain, *alg, budget, &opts, &mut no_progress())
                            .map_err(|e| e.to_string())?;
                        &fresh
                    }
                };
                let sol = p.plan(&chain, budget);
                let memory = p.memory(budget);
                let trace = match &sol.ops {
                    Some(ops) => Some(judge(&chain, ops, budget, *bw).map_err(|e| e.to_string())?),
                    None => None,
                };
                rows.push((budget, alpha, *bw, *alg, trace, memory));
            }
        }
    }
    match a.format {
        SweepFormat::Csv => {
            say!("budget_bytes,memory_ratio,algorithm,feasible,makespan_seconds,overhead,peak_bytes,recomputations,alpha,bandwidth_bytes_per_s,offloaded_bytes,memory");
            for (budget, alpha, bw, alg, t, memory) in &rows {
                let ratio = *budget as f64 / m_high as f64;
                let bw = bw.map(|b| b.to_string()).unwrap_or_default();
                match t {
                    Some(t) if t.peak_bytes <= *budget => say!(
                        "{budget},{ratio:.4},{alg},true,{},{:.6},{},{},{alpha:.4},{bw},{},{memory}",
                        t.makespan_seconds,
                        t.overhead(),
                        t.peak_bytes,
                        t.recomputations,
                        t.offloaded_bytes
                    ),
                    _ => say!("{budget},{ratio:.4},{alg},false,,,,,{alpha:.4},{bw},,{memory}"),
                }
            }
        }
        SweepFormat::Json => {
            let list: Vec<Value> = rows
                .iter()
                .map(|(budget, alpha, bw, alg, t, memory)| {
                    let mut v = report(&chain, alg.name(), *budget, t.as_ref(), (None, None));
                    v["memory_ratio"] = json!(*budget as f64 / m_high as f64);
                    v["alpha"] = json!(alpha);
                    v["bandwidth_bytes_per_s"] = json!(bw);
                    v["memory"] = json!(memory.to_string());
                    if let Memory::Grid {
                        lost_bytes: Some(lost),
                        ..
                    } = memory
                    {
                        v["memory_lost_bytes"] = json!(lost);
                    }
                    v
                })
                .collect();
            let out = json!({
                "chain": chain.name, "m_low_bytes": m_low, "m_high_bytes": m_high,
                "m_low_algorithm": "rotor",
                "sequential_seconds": chain.sequential_seconds(), "points": list,
            });
            say!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
        }
    }
    Ok(())
}

pub fn convert(a: ConvertArgs) -> Result<(), String> {
    let text = input::read_text(&a.input)?;
    let unit = match a.time_unit {
        Unit::Ms => TimeUnit::Milliseconds,
        Unit::S => TimeUnit::Seconds,
    };
    let default_name = std::path::Path::new(&a.input)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rotor chain".into());
    let mut chain = read_rotor(&text, unit, a.name.as_deref().unwrap_or(&default_name))
        .map_err(|e| format!("{}: {e}", a.input))?;
    if let Some(name) = a.name {
        chain.name = name;
    }
    if let Some(bw) = &a.bandwidth {
        chain.bandwidth_bytes_per_s = Some(input::rate("--bandwidth", bw)?);
    }
    let out = write_chain(&chain);
    match &a.output {
        Some(path) => input::write_text(path, &out),
        None => {
            say!("{out}");
            Ok(())
        }
    }
}

pub fn algorithms() -> Result<(), String> {
    for alg in Algorithm::ALL {
        say!("{:<13} {}", alg.name(), alg.description());
    }
    Ok(())
}

pub fn examples() -> Result<(), String> {
    for (name, about) in examples::NAMES {
        say!("example:{name:<10} {about}");
    }
    Ok(())
}
