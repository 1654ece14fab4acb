//! `remat sweep`: every algorithm at every budget from M_low to M_high
//! (memory ratio α) and every bandwidth (β), each solved for that budget
//! with the same memory treatment (see [`SweepMemory`]).
//!
//! [`compute`] is the whole computation; the rest reads flags and prints.

use super::{plan_options, TerminalProgress};
use crate::args::{SweepArgs, SweepFormat, SweepMemory};
use crate::error::{CliError, Result};
use crate::input;
use crate::report::{self, Run, SweepReport};
use remat_core::model::units::format_bytes;
use remat_core::solvers::hong::MAX_CHEN_STAGES;
use remat_core::solvers::optimal::limits::MAX_STAGES as OPTIMAL_MAX_STAGES;
use remat_core::solvers::persistent::PersistentTable;
use remat_core::solvers::{
    max_useful_budget, Algorithm, Memory, Options, SlotPolicy, DEFAULT_OFFLOAD_SLOTS,
};
use remat_core::sweep::{rotor_m_low, sweep, SweepPoint, SweepRun};
use remat_core::Chain;

/// The most steps rotor's minimum-memory recursion (O(L³/6)) may take in
/// a sweep before it is refused: about ten seconds.
const SWEEP_MAX_MIN_BUDGET_STEPS: u128 = 1 << 33;

/// What a sweep visits, as typed values.
pub struct SweepPlan {
    pub algorithms: Vec<Algorithm>,
    /// Memory ratios α in 0..=1.
    pub alphas: Vec<f64>,
    /// None: the chain has no link.
    pub bandwidths: Vec<Option<f64>>,
    pub memory: SweepMemory,
    /// `--slots`, `--max-table`, `--loss-step`.
    pub base: Options,
    /// `--slots` as given (the grid's default is POFO's 50).
    pub slots: Option<usize>,
}

/// A finished sweep: the budget range and its rows, bandwidth by bandwidth,
/// then α by α, then algorithm by algorithm.
pub struct Sweep {
    pub m_low: u64,
    pub m_high: u64,
    pub points: Vec<SweepPoint>,
}

pub fn run(a: &SweepArgs) -> Result<()> {
    let chain = input::chain(&a.chain)?;
    let plan = SweepPlan {
        algorithms: if a.algorithms.is_empty() {
            every_algorithm_for(&chain)
        } else {
            a.algorithms.clone()
        },
        alphas: match a.alpha {
            Some(alpha) => vec![alpha.0],
            None => (0..a.points)
                .map(|i| i as f64 / (a.points - 1) as f64)
                .collect(),
        },
        bandwidths: if a.bandwidth.is_empty() {
            vec![chain.bandwidth_bytes_per_s]
        } else {
            a.bandwidth.iter().map(|b| Some(b.0)).collect()
        },
        memory: a.memory,
        base: plan_options(&a.plan, None),
        slots: a.plan.slots,
    };
    let sweep = compute(&chain, &plan)?;
    match a.format {
        SweepFormat::Csv => print_csv(&sweep),
        SweepFormat::Json => report::print(&json_report(&chain, &sweep)),
    }
    Ok(())
}

/// The default list: every algorithm but `optimal` (an exponential search
/// at every budget, which may give up near M_low: asked for by name, a
/// budget it gives up on is an error), with a note, and hong-chen only up
/// to its stage limit (Algorithm 3 is O(n³)), with a note when it is left
/// out; asked for by name past the limit it is an error.
fn every_algorithm_for(chain: &Chain) -> Vec<Algorithm> {
    let chen_fits = chain.len() <= MAX_CHEN_STAGES;
    if !chen_fits {
        eprintln!(
            "note: hong-chen left out: Algorithm 3 is O(n³), run up to {MAX_CHEN_STAGES} stages, this chain has {}",
            chain.len()
        );
    }
    eprintln!(
        "note: optimal left out: its exact search is exponential (chains of at most {OPTIMAL_MAX_STAGES} stages); add it with --algorithms"
    );
    Algorithm::ALL
        .into_iter()
        .filter(|&alg| chen_fits || alg != Algorithm::HongChen)
        .filter(|&alg| alg != Algorithm::Optimal)
        .collect()
}

/// The sweep's knobs at one bandwidth: one memory treatment for every
/// algorithm at a budget.
fn options(plan: &SweepPlan, bandwidth: Option<f64>) -> Options {
    let offloading = plan.algorithms.iter().any(|alg| alg.offloads());
    let grid = match plan.memory {
        SweepMemory::Grid => true,
        SweepMemory::Exact => false,
        SweepMemory::Auto => offloading,
    };
    let mut o = Options {
        bandwidth_bytes_per_s: bandwidth,
        ..plan.base.clone()
    };
    if grid {
        // POFO's grid for everyone: rotor and revolve (also inside pofo and
        // the heuristics) on the same ⌊budget/N⌋-byte slots as pofo's DP.
        let n = plan.slots.unwrap_or(DEFAULT_OFFLOAD_SLOTS);
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
fn check_bounds(chain: &Chain, algorithms: &[Algorithm], o: &Options) -> Result<()> {
    let n = chain.len() as u128;
    let steps = n * (n + 1) * (n + 2) / 6;
    if steps > SWEEP_MAX_MIN_BUDGET_STEPS {
        return Err(CliError::SweepTooLong {
            stages: chain.len(),
            steps,
            limit: SWEEP_MAX_MIN_BUDGET_STEPS,
        });
    }
    if algorithms.iter().any(|alg| alg.uses_slots()) {
        // The exact lattice is capped well below the limit; the fallback
        // (or the fixed grid) has at most `slots` slots.
        let need = PersistentTable::table_bytes(chain.len(), o.slots);
        if need > o.max_table_bytes as u128 {
            return Err(CliError::SweepTable {
                stages: chain.len(),
                slots: o.slots,
                need: format_bytes(need.min(u64::MAX as u128) as u64),
                limit: format_bytes(o.max_table_bytes),
            });
        }
    }
    Ok(())
}

/// The sweep: every algorithm of `plan` at every α and bandwidth
/// ([`remat_core::sweep::sweep`], after the CLI's bounds).
///
/// Complexity: P budgets × B bandwidths × (rotor/revolve: one table per
/// budget, O(L³·S) with S ≤ the exact cap or `--slots`; pofo/offload-only:
/// their DP per budget; store-all and sequential: built once, O(L²)), plus
/// rotor's M_low, O(L³) per lattice step. Chains past the bounds of
/// [`check_bounds`] are refused before any work.
pub fn compute(chain: &Chain, plan: &SweepPlan) -> Result<Sweep> {
    let base = options(plan, chain.bandwidth_bytes_per_s);
    check_bounds(chain, &plan.algorithms, &base)?;
    // The paper's range: M_low recomputes as much as rotor can (the least
    // budget rotor meets under this sweep's memory treatment, so α = 0 is
    // feasible for rotor), M_high keeps all.
    let m_high = max_useful_budget(chain);
    let m_low = rotor_m_low(chain, &base, m_high);
    let runs: Vec<SweepRun> = plan
        .bandwidths
        .iter()
        .flat_map(|&bandwidth| {
            plan.alphas
                .iter()
                .map(move |&alpha| SweepRun { alpha, bandwidth })
        })
        .collect();
    let mut shown = TerminalProgress::new("sweeping");
    let points = sweep(
        chain,
        &plan.algorithms,
        &runs,
        m_low,
        m_high,
        &base,
        &mut |done| shown.report(done),
    )?;
    Ok(Sweep {
        m_low,
        m_high,
        points,
    })
}

fn print_csv(sweep: &Sweep) {
    say!("budget_bytes,memory_ratio,algorithm,feasible,makespan_seconds,overhead,peak_bytes,recomputations,alpha,bandwidth_bytes_per_s,offloaded_bytes,memory");
    for r in &sweep.points {
        let (budget, alpha, alg, memory) = (r.budget_bytes, r.alpha, r.algorithm, r.memory);
        let ratio = budget as f64 / sweep.m_high as f64;
        let bw = r.bandwidth.map(|b| b.to_string()).unwrap_or_default();
        match &r.trace {
            Some(t) if t.fits(budget) => say!(
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

fn json_report<'a>(chain: &'a Chain, sweep: &Sweep) -> SweepReport<'a> {
    let point = |r: &SweepPoint| report::SweepPoint {
        run: Run::new(
            chain,
            r.algorithm.name(),
            r.budget_bytes,
            r.bandwidth,
            r.trace.as_ref(),
        ),
        alpha: r.alpha,
        memory_ratio: r.budget_bytes as f64 / sweep.m_high as f64,
        memory: r.memory.to_string(),
        memory_lost_bytes: match r.memory {
            Memory::Grid { lost_bytes, .. } => lost_bytes,
            Memory::Exact => None,
        },
    };
    SweepReport {
        chain: &chain.name,
        m_high_bytes: sweep.m_high,
        m_low_algorithm: "rotor",
        m_low_bytes: sweep.m_low,
        points: sweep.points.iter().map(point).collect(),
        sequential_seconds: chain.sequential_seconds(),
    }
}
