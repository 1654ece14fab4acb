//! One function per subcommand; each returns Err(message) for bad input.

use crate::input;
use crate::input::Budget;
use clap::{Args, ValueEnum};
use remat_core::format::{
    read_rotor, write_chain, write_schedule, Predicted, ScheduleFile, TimeUnit,
};
use remat_core::model::units::{format_bytes, format_rate, format_seconds};
use remat_core::schedule::format_ops;
use remat_core::simulator::judge;
use remat_core::simulator::{self, OpState, SimOptions, TensorId, Trace};
use remat_core::solvers::persistent::{min_budget_met, PersistentTable, Variant};
use remat_core::solvers::pofo::LossStep;
use remat_core::solvers::{
    budget_at_ratio, max_useful_budget, no_progress, Algorithm, Memory, Options, Planner,
    SlotPolicy, Solution, DEFAULT_OFFLOAD_SLOTS,
};
use remat_core::{examples, Chain};
use serde_json::{json, Value};

/// What every planning command shares: memory slots, the table limit, the link.
#[derive(Args)]
pub struct PlanFlags {
    /// Memory slots of the DPs (default 500 for revolve and rotor, 50 for
    /// pofo and offload-only, as their papers); 1 to 100000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=input::MAX_SLOTS))]
    slots: Option<u64>,
    /// Refuse any DP table larger than this (e.g. 8GiB).
    #[arg(long, value_parser = input::size, default_value = "2GiB")]
    max_table: u64,
    /// How pofo and offload-only time the loss step: `paper` (POFO
    /// Appendix B.2: leftover transfers wait after F_all^L) or `overlap`
    /// (offloads drain during F_all^L, prefetches overlap B^L).
    #[arg(long, value_enum, default_value = "paper")]
    loss_step: LossStepFlag,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LossStepFlag {
    Paper,
    Overlap,
}

impl PlanFlags {
    fn options(&self, bandwidth: Option<f64>) -> Options {
        let mut o = Options {
            bandwidth_bytes_per_s: bandwidth,
            max_table_bytes: self.max_table,
            loss_step: match self.loss_step {
                LossStepFlag::Paper => LossStep::Paper,
                LossStepFlag::Overlap => LossStep::Overlap,
            },
            ..Options::default()
        };
        if let Some(slots) = self.slots {
            o.slots = slots as usize;
            o.offload_slots = slots as usize;
        }
        o
    }
}

#[derive(Args)]
pub struct SolveArgs {
    /// Chain file or example:NAME.
    chain: String,
    /// Algorithm (see `remat algorithms`).
    #[arg(long, short, value_parser = parse_algorithm)]
    algorithm: Algorithm,
    /// Memory budget for activations (a^0 included): 8GiB, 3e9, or 60% of
    /// the chain's M_high (store-all's peak).
    #[arg(long, short, value_parser = input::budget)]
    budget: Budget,
    #[command(flatten)]
    plan: PlanFlags,
    /// `sequential` only: exactly K segments instead of the best K.
    #[arg(long, value_name = "K")]
    segments: Option<usize>,
    /// Host↔device bandwidth, overriding the chain's (12GB/s, 16GiB/s,
    /// or bits: 100Gbps).
    #[arg(long, value_parser = input::rate)]
    bandwidth: Option<f64>,
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
    #[arg(long, value_parser = input::rate)]
    bandwidth: Option<f64>,
    #[arg(long)]
    json: bool,
    /// Add, per operation, which tensors are on the device and on the host
    /// after it (in list order, transfers complete): `"states"` in the JSON,
    /// one line per operation in the text.
    #[arg(long)]
    states: bool,
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
    #[arg(long, value_delimiter = ',', value_parser = parse_algorithm)]
    algorithms: Vec<Algorithm>,
    /// Number of budgets from M_low to M_high (memory ratio α from 0 to 1:
    /// budget = (1 − α) M_low + α M_high, POFO Section 5.2); 2 to 1000.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(2..=input::MAX_POINTS))]
    points: u64,
    /// One budget at this α instead (for a sweep over bandwidths).
    #[arg(long)]
    alpha: Option<f64>,
    #[command(flatten)]
    plan: PlanFlags,
    /// How every algorithm at a budget treats memory: `exact` (rotor and
    /// revolve on an exact lattice where the sizes allow; store-all and
    /// sequential are always exact), `grid` (every DP, rotor and revolve
    /// included, on POFO's grid of ⌊budget/slots⌋-byte slots, `--slots`
    /// default 50), or `auto`: `grid` when an offloading algorithm is
    /// swept, else `exact`. The `memory` column says what each row used.
    #[arg(long, value_enum, default_value = "auto")]
    memory: SweepMemory,
    /// Bandwidth, or a comma-separated list to sweep (12GB/s,24GB/s,36GB/s).
    #[arg(long, value_delimiter = ',', value_parser = input::rate)]
    bandwidth: Vec<f64>,
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
    #[arg(long, value_parser = input::rate)]
    bandwidth: Option<f64>,
    /// Output file (default: stdout).
    #[arg(long, short)]
    output: Option<String>,
}

#[derive(Args)]
pub struct ExamplesArgs {
    /// Write this built-in chain (remat-chain/1) instead of listing them.
    #[arg(long, value_name = "NAME")]
    write: Option<String>,
    /// File to write it to (default: stdout).
    #[arg(long, short, requires = "write")]
    output: Option<String>,
}

/// clap value parser of algorithm names.
fn parse_algorithm(text: &str) -> Result<Algorithm, String> {
    Algorithm::from_name(text.trim()).map_err(|e| e.to_string())
}

/// The fields every JSON report shares (`docs/cli.md`).
fn report(
    chain: &Chain,
    algorithm: &str,
    budget: u64,
    bandwidth: Option<f64>,
    trace: Option<&Trace>,
    predicted: (Option<f64>, Option<u64>),
) -> Value {
    json!({
        "algorithm": algorithm,
        "chain": chain.name,
        "stages": chain.len(),
        "budget_bytes": budget,
        "bandwidth_bytes_per_s": bandwidth,
        "feasible": trace.is_some_and(|t| t.fits(budget)),
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
    let algorithm = a.algorithm;
    if a.segments.is_some() && algorithm != Algorithm::Sequential {
        return Err(format!(
            "--segments: only for -a sequential, not {algorithm}"
        ));
    }
    let m_high = max_useful_budget(&chain);
    let budget = a.budget.bytes(m_high);
    let bw = a.bandwidth.or(chain.bandwidth_bytes_per_s);
    let opts = Options {
        segments: a.segments,
        ..a.plan.options(bw)
    };
    let planner = Planner::build(&chain, algorithm, budget, &opts, &mut no_progress())
        .map_err(|e| e.to_string())?;
    let solution = planner.plan(&chain, budget).map_err(|e| e.to_string())?;
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
    let own_min = planner.min_budget_bytes();
    // Rotor's planner has just computed the chain's M_low (the same O(L³)
    // search with the same options): no second pass for it.
    let m_low = if algorithm == Algorithm::Rotor {
        Some(own_min.min(m_high))
    } else {
        chain_m_low(&chain, &opts, m_high)
    };
    if a.json {
        let mut v = report(
            &chain,
            algorithm.name(),
            budget,
            bw,
            trace.as_ref(),
            predicted,
        );
        v["detail"] = json!(solution.detail);
        v["m_low_bytes"] = json!(m_low);
        v["m_high_bytes"] = json!(m_high);
        v["algorithm_min_bytes"] = json!(own_min);
        // The offloading algorithms' least is a bound no schedule can beat
        // (an op's own inputs and outputs), not a budget they were seen to meet.
        v["algorithm_min_is_lower_bound"] = json!(algorithm.offloads());
        v["memory"] = json!(planner.memory(budget).to_string());
        v["ops"] = json!(solution.ops.clone().unwrap_or_default());
        say!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return Ok(());
    }
    say!("chain      {} ({} stages)", chain.name, chain.len());
    say!("algorithm  {algorithm} ({})", solution.detail);
    say!(
        "budget     {}   (M_low {}, {algorithm}'s least {}{}, M_high {})",
        format_bytes(budget),
        m_low.map_or_else(
            || format!("not computed: O(L³) for {} stages", chain.len()),
            format_bytes
        ),
        if algorithm.offloads() { "≥ " } else { "" },
        format_bytes(own_min),
        format_bytes(m_high)
    );
    if let Some(bw) = bw {
        say!("link       {}", format_rate(bw));
    }
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

/// The longest chain whose M_low `solve` computes: rotor's minimum-memory
/// recursion is O(L³) (about 1.7·10⁸ steps at this length, a second or two).
const MAX_M_LOW_STAGES: usize = 1000;

/// The chain's M_low: the least budget rotor — whose class holds every other
/// recompute-only planner's schedules — meets with these options; None for
/// chains past [`MAX_M_LOW_STAGES`].
fn chain_m_low(chain: &Chain, opts: &Options, m_high: u64) -> Option<u64> {
    (chain.len() <= MAX_M_LOW_STAGES).then(|| rotor_m_low(chain, opts, m_high))
}

/// The least budget rotor meets with these options (its slot policy and
/// grid), at most M_high, where its planner answers store-all. O(L³) per
/// lattice step: callers bound L first.
fn rotor_m_low(chain: &Chain, opts: &Options, m_high: u64) -> u64 {
    min_budget_met(
        chain,
        Variant::Rotor,
        opts.slot_policy,
        opts.slots,
        opts.max_table_bytes,
        Some(m_high),
    )
    .map_or(m_high, |m| m.bytes)
    .min(m_high)
}

fn predicted(s: &Solution) -> (Option<f64>, Option<u64>) {
    (s.predicted_seconds, s.predicted_peak_bytes)
}

pub fn simulate(a: SimulateArgs) -> Result<(), String> {
    let chain = input::chain(&a.chain)?;
    let schedule = input::schedule(&a.schedule)?;
    if let Some(warning) = schedule
        .check_chain(&chain)
        .map_err(|e| format!("{}: {e}", a.schedule))?
    {
        eprintln!("warning: {}: {warning}", a.schedule);
    }
    let bw = a
        .bandwidth
        .or(schedule.bandwidth_bytes_per_s)
        .or(chain.bandwidth_bytes_per_s);
    let trace = judge(&chain, &schedule.ops, schedule.budget_bytes, bw)
        .map_err(|e| format!("{}: invalid schedule: {e}", a.schedule))?;
    let states = if a.states {
        let options = SimOptions {
            bandwidth: bw,
            memory_limit: Some(schedule.budget_bytes),
        };
        simulator::states(&chain, &schedule.ops, options)
            .map_err(|e| format!("{}: invalid schedule: {e}", a.schedule))?
    } else {
        Vec::new()
    };
    let predicted = (
        schedule.predicted.as_ref().map(|p| p.makespan_seconds),
        schedule.predicted.as_ref().map(|p| p.peak_bytes),
    );
    if a.json {
        let mut v = report(
            &chain,
            &schedule.algorithm,
            schedule.budget_bytes,
            bw,
            Some(&trace),
            predicted,
        );
        v["ops"] = json!(schedule.ops.len());
        if a.states {
            v["states"] = states_json(&states);
        }
        say!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return Ok(());
    }
    say!("chain      {} ({} stages)", chain.name, chain.len());
    say!(
        "schedule   {} ops by {}",
        schedule.ops.len(),
        if schedule.algorithm.is_empty() {
            "hand"
        } else {
            &schedule.algorithm
        }
    );
    say!(
        "makespan   {}   (+{:.1}%{})",
        format_seconds(trace.makespan_seconds),
        100.0 * trace.overhead(),
        predicted
            .0
            .map(|p| format!("; predicted {}", format_seconds(p)))
            .unwrap_or_default()
    );
    say!(
        "peak       {}   (budget {}{})",
        format_bytes(trace.peak_bytes),
        format_bytes(schedule.budget_bytes),
        if !trace.fits(schedule.budget_bytes) {
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
    for s in &states {
        say!(
            "{:>5}  {:<8} device [{}]  host [{}]",
            s.op,
            schedule.ops[s.op].to_string(),
            tensor_names(&s.device).join(" "),
            tensor_names(&s.host).join(" ")
        );
    }
    Ok(())
}

/// `"states"` of `remat simulate --json --states`: tensors named as people
/// and the papers write them (`a^3`, `ā^3`, `δ^3`), which is also how a
/// runtime's bookkeeping names them.
fn states_json(states: &[OpState]) -> Value {
    Value::Array(
        states
            .iter()
            .map(|s| json!({"op": s.op, "device": tensor_names(&s.device), "host": tensor_names(&s.host)}))
            .collect(),
    )
}

fn tensor_names(tensors: &[TensorId]) -> Vec<String> {
    tensors.iter().map(|t| t.to_string()).collect()
}

/// The most steps rotor's minimum-memory recursion (O(L³/6)) may take in
/// a sweep before it is refused: about ten seconds.
const SWEEP_MAX_MIN_BUDGET_STEPS: u128 = 1 << 33;

/// The sweep's knobs: one memory treatment for every algorithm at a budget.
fn sweep_options(a: &SweepArgs, algorithms: &[Algorithm], bw: Option<f64>) -> Options {
    let offloading = algorithms.iter().any(|alg| alg.offloads());
    let grid = match a.memory {
        SweepMemory::Grid => true,
        SweepMemory::Exact => false,
        SweepMemory::Auto => offloading,
    };
    let mut o = a.plan.options(bw);
    if grid {
        // POFO's grid for everyone: rotor and revolve (also inside pofo and
        // the heuristics) on the same ⌊budget/N⌋-byte slots as pofo's DP.
        let n = a.plan.slots.map_or(DEFAULT_OFFLOAD_SLOTS, |n| n as usize);
        o.slots = n;
        o.offload_slots = n;
        o.slot_policy = SlotPolicy::Fixed;
    } else {
        o.slot_policy = SlotPolicy::Exact;
    }
    o
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
    let algorithms: Vec<Algorithm> = if a.algorithms.is_empty() {
        Algorithm::ALL.to_vec()
    } else {
        a.algorithms.clone()
    };
    let points = a.points as usize;
    let alphas: Vec<f64> = match a.alpha {
        Some(x) if !(0.0..=1.0).contains(&x) => {
            return Err(format!("--alpha: a memory ratio from 0 to 1, got {x}"))
        }
        Some(x) => vec![x],
        None => (0..points)
            .map(|i| i as f64 / (points - 1) as f64)
            .collect(),
    };
    let bandwidths: Vec<Option<f64>> = if a.bandwidth.is_empty() {
        vec![chain.bandwidth_bytes_per_s]
    } else {
        a.bandwidth.iter().map(|b| Some(*b)).collect()
    };
    let base = sweep_options(&a, &algorithms, chain.bandwidth_bytes_per_s);
    sweep_bounds(&chain, &algorithms, &base)?;
    // The paper's range: M_low recomputes as much as rotor can (the least
    // budget rotor meets under this sweep's memory treatment, so α = 0 is
    // feasible for rotor), M_high keeps all.
    let m_high = max_useful_budget(&chain);
    let m_low = rotor_m_low(&chain, &base, m_high);
    let mut rows = Vec::new();
    for bw in &bandwidths {
        let opts = sweep_options(&a, &algorithms, *bw);
        // Budget-independent planners (store-all, sequential) once; the
        // others are built for each budget, so each is solved for it.
        let mut fixed = Vec::new();
        for alg in &algorithms {
            fixed.push(match alg {
                Algorithm::StoreAll | Algorithm::Sequential => Some(
                    Planner::build(&chain, *alg, m_high, &opts, &mut no_progress())
                        .map_err(|e| format!("{alg}: {e}"))?,
                ),
                _ => None,
            });
        }
        for &alpha in &alphas {
            let budget = budget_at_ratio(m_low, m_high, alpha);
            for (alg, planner) in algorithms.iter().zip(&fixed) {
                let fresh;
                let p = match planner {
                    Some(p) => p,
                    None => {
                        fresh = Planner::build(&chain, *alg, budget, &opts, &mut no_progress())
                            .map_err(|e| format!("{alg} at α = {alpha}: {e}"))?;
                        &fresh
                    }
                };
                let sol = p
                    .plan(&chain, budget)
                    .map_err(|e| format!("{alg} at α = {alpha}: {e}"))?;
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
                    Some(t) if t.fits(*budget) => say!(
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
                    let mut v = report(&chain, alg.name(), *budget, *bw, t.as_ref(), (None, None));
                    v["memory_ratio"] = json!(*budget as f64 / m_high as f64);
                    v["alpha"] = json!(alpha);
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
    if let Some(bw) = a.bandwidth {
        chain.bandwidth_bytes_per_s = Some(bw);
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

pub fn examples(a: ExamplesArgs) -> Result<(), String> {
    let Some(name) = a.write else {
        let width = examples::names().map(str::len).max().unwrap_or(0);
        for e in examples::EXAMPLES {
            say!("example:{:<width$}  {}", e.name, e.about);
        }
        return Ok(());
    };
    let name = name.strip_prefix("example:").unwrap_or(&name);
    let text = write_chain(&input::example(name).map_err(|e| format!("--write: {e}"))?);
    match &a.output {
        Some(path) => input::write_text(path, &text),
        None => {
            say!("{text}");
            Ok(())
        }
    }
}
