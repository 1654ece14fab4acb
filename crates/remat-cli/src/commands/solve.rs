//! `remat solve`: one algorithm's schedule for one budget, judged by the
//! simulator, with the chain's M_low and M_high and the algorithm's least.

use super::{plan_options, say_chain, TerminalProgress};
use crate::args::{bytes_per_s, SolveArgs};
use crate::error::{CliError, Result};
use crate::input;
use crate::report::{self, AtPeakReport, Run, SolveReport};
use remat_core::format::{write_schedule, ScheduleFile};
use remat_core::model::units::{format_bytes, format_rate, format_seconds};
use remat_core::schedule::format_ops;
use remat_core::simulator::{judge, Trace};
use remat_core::solvers::offload::pofo::Resolution;
use remat_core::solvers::persistent::refine;
use remat_core::solvers::{
    max_useful_budget, memory_floor, Algorithm, BoundClass, Certificate, DeltaSettings, Options,
    Planner, Solution,
};
use remat_core::sweep::rotor_m_low;
use remat_core::Chain;

/// The longest chain whose M_low `solve` computes: rotor's minimum-memory
/// recursion is O(L³) (about 1.7·10⁸ steps at this length, a second or two).
const MAX_M_LOW_STAGES: usize = 1000;

/// A solved budget: the planner's answer, the simulator's verdict on it,
/// and the bounds it is reported against.
struct Solved {
    budget: u64,
    bandwidth: Option<f64>,
    solution: Solution,
    trace: Option<Trace>,
    memory: String,
    floor: u64,
    m_low: Option<u64>,
    m_high: u64,
    /// The algorithm's own least budget (a lower bound for the offloading ones).
    own_min: u64,
    /// DELTA's settings, when the algorithm is one of its runtimes.
    delta: Option<DeltaSettings>,
    /// pofo's and offload-only's grid.
    offload_grid: Option<Resolution>,
    /// The answer's certificate (issue 44): no schedule of a class is
    /// faster than its bound at the budget.
    certificate: Option<Certificate>,
    /// The refinement on finer grids, when one ran (`--refine`).
    refined: Option<report::RefinedReport>,
}

pub fn run(a: &SolveArgs) -> Result<()> {
    let chain = input::chain(&a.chain)?;
    let algorithm = a.algorithm;
    if a.segments.is_some() && algorithm != Algorithm::Sequential {
        return Err(CliError::SegmentsNotSequential(algorithm));
    }
    let s = solve(&chain, a)?;
    if let Some(path) = &a.output {
        match (&s.solution.ops, &s.trace) {
            (Some(ops), Some(t)) => {
                let file = ScheduleFile::judged(
                    &chain,
                    algorithm.name(),
                    s.budget,
                    s.bandwidth,
                    ops.clone(),
                    t,
                );
                input::write_text(path, &write_schedule(&file))?;
            }
            _ => eprintln!("note: no schedule written: the budget is infeasible for {algorithm}"),
        }
    }
    if a.json {
        report::print(&json_report(&chain, algorithm, &s));
    } else {
        print_text(&chain, algorithm, &s);
    }
    Ok(())
}

/// Plans `a.budget` on `chain` and judges the schedule.
fn solve(chain: &Chain, a: &SolveArgs) -> Result<Solved> {
    let algorithm = a.algorithm;
    let m_high = max_useful_budget(chain);
    let budget = a.budget.bytes(m_high);
    let floor = memory_floor(chain);
    floor.admit(budget)?;
    let bandwidth = bytes_per_s(a.bandwidth).or(chain.bandwidth_bytes_per_s);
    let opts = Options {
        segments: a.segments,
        ..plan_options(&a.plan, bandwidth)
    };
    // A long chain's table or search takes a while: its percentage on a
    // terminal (the build, then the per-budget solve, each from 0 to 100 %).
    let mut shown = TerminalProgress::new(format!("solving {algorithm}"));
    let mut planner = Planner::build(chain, algorithm, budget, &opts, &mut |d| shown.report(d))?;
    planner.certify(chain, &mut |d| shown.report(d))?;
    let mut solution = planner.plan_with_progress(chain, budget, &mut |d| shown.report(d))?;
    drop(shown);
    let refined = refine(chain, &planner, budget, &opts, a.refine)?;
    if let Some(r) = &refined {
        solution.ops = Some(r.plan.ops.clone());
        solution.predicted_seconds = Some(r.plan.predicted_seconds);
        solution.predicted_peak_bytes = Some(r.plan.predicted_peak_bytes);
        solution.detail = r.detail();
    }
    let trace = match &solution.ops {
        Some(ops) => Some(
            judge(chain, ops, budget, bandwidth)
                .map_err(|source| CliError::InvalidSolution { algorithm, source })?,
        ),
        None => None,
    };
    // rotor and revolve: the DP's time (the simulator's to the bit) against
    // their class bound; the others: the simulated makespan, which for
    // pofo is not the DP's continuous-transfer value.
    let certificate = match (&refined, &trace) {
        (Some(r), _) => Some(Certificate {
            lower_bound_seconds: r.lower_bound_seconds,
            seconds: r.plan.predicted_seconds,
            class: BoundClass::of(algorithm),
        }),
        (None, Some(t)) => {
            let seconds = match solution.predicted_seconds {
                Some(dp) if algorithm.uses_slots() => dp,
                _ => t.makespan_seconds,
            };
            planner.certificate(chain, budget, seconds)
        }
        (None, None) => None,
    };
    let own_min = planner.min_budget_bytes();
    // Rotor's planner has just computed the chain's M_low (the same O(L³)
    // search with the same options): no second pass for it.
    let m_low = if algorithm == Algorithm::Rotor {
        Some(own_min.min(m_high))
    } else {
        (chain.len() <= MAX_M_LOW_STAGES).then(|| rotor_m_low(chain, &opts, m_high))
    };
    Ok(Solved {
        budget,
        bandwidth,
        memory: planner.memory(budget).to_string(),
        solution,
        trace,
        floor: floor.bytes,
        m_low,
        m_high,
        own_min,
        delta: (algorithm.is_dynamic() && algorithm != Algorithm::Dtr).then_some(opts.delta),
        offload_grid: planner.offload_grid(),
        certificate,
        refined: refined.map(|r| report::RefinedReport::new(&r)),
    })
}

/// `--refine`: finer grids for up to `seconds` where the answer is on a
/// grid and its gap is above 0.5 % (None otherwise, or with 0 seconds).
fn refine(
    chain: &Chain,
    planner: &Planner,
    budget: u64,
    opts: &Options,
    seconds: f64,
) -> Result<Option<refine::Refined>> {
    if seconds <= 0.0 {
        return Ok(None);
    }
    let limits = refine::Limits {
        target_gap: refine::TARGET_GAP,
        max_seconds: seconds,
        max_table_bytes: opts.max_table_bytes,
        two_threads: true,
    };
    let start = std::time::Instant::now();
    let mut shown = TerminalProgress::new("refining the grid".to_string());
    let refined = planner.refine(
        chain,
        budget,
        opts,
        limits,
        &mut || start.elapsed().as_secs_f64(),
        &mut |d| shown.report(d),
    )?;
    Ok(refined)
}

fn json_report<'a>(chain: &'a Chain, algorithm: Algorithm, s: &'a Solved) -> SolveReport<'a> {
    SolveReport {
        run: Run::new(
            chain,
            algorithm.name(),
            s.budget,
            s.bandwidth,
            s.trace.as_ref(),
        )
        .predicted(
            s.solution.predicted_seconds,
            s.solution.predicted_peak_bytes,
        ),
        detail: &s.solution.detail,
        memory: s.memory.clone(),
        floor_bytes: s.floor,
        m_low_bytes: s.m_low,
        m_high_bytes: s.m_high,
        algorithm_min_bytes: s.own_min,
        algorithm_min_is_lower_bound: own_min_is_lower_bound(algorithm),
        delta: s.delta,
        offload_grid: s.offload_grid.map(Into::into),
        at_peak: (s.trace.as_ref())
            .zip(s.solution.ops.as_deref())
            .map(|(t, ops)| AtPeakReport::new(t, ops)),
        ops: s.solution.ops.as_deref().unwrap_or_default(),
        options: s
            .solution
            .ops
            .as_deref()
            .map(|ops| report::OptionReport::list(chain, ops))
            .unwrap_or_default(),
        lower_bound_seconds: s.certificate.map(|c| c.lower_bound_seconds),
        lower_bound_class: s.certificate.map(|c| c.class.name()),
        gap: s.certificate.map(|c| c.gap()),
        refined: s.refined.clone(),
        menus_used: !chain.has_menus()
            || algorithm.chooses_options()
            || s.solution
                .ops
                .as_deref()
                .is_some_and(|ops| !remat_core::schedule::menu_choices(ops).is_empty()),
    }
}

fn print_text(chain: &Chain, algorithm: Algorithm, s: &Solved) {
    say_chain(chain, 11);
    say!("algorithm  {algorithm} ({})", s.solution.detail);
    say!(
        "budget     {}   (floor {}, M_low {}, {algorithm}'s least {}{}, M_high {})",
        format_bytes(s.budget),
        format_bytes(s.floor),
        s.m_low.map_or_else(
            || format!("not computed: O(L³) for {} stages", chain.len()),
            format_bytes
        ),
        if own_min_is_lower_bound(algorithm) {
            "≥ "
        } else {
            ""
        },
        format_bytes(s.own_min),
        format_bytes(s.m_high)
    );
    if let Some(bw) = s.bandwidth {
        say!("link       {}", format_rate(bw));
    }
    if let Some(grid) = s.offload_grid.filter(|g| g.reduced()) {
        say!("grid       {} (--slots N to choose)", grid.note());
    }
    match (&s.solution.ops, &s.trace) {
        (Some(ops), Some(t)) => {
            say!(
                "makespan   {}   (+{:.1}% over {} with no limit)",
                format_seconds(t.makespan_seconds),
                100.0 * t.overhead(),
                format_seconds(t.sequential_seconds)
            );
            say!("peak       {}", format_bytes(t.peak_bytes));
            if let Some(c) = s.certificate {
                say!("certified  {}", c.line());
            }
            if let Some(r) = &s.refined {
                say!("refined    {}", r.line());
            }
            say!("at peak    {}", t.peak_line(ops));
            say!("recomputed {} forward operations", t.recomputations);
            for line in option_lines(chain, ops) {
                say!("option     {line}");
            }
            say!("schedule   {}", format_ops(ops));
        }
        _ => say!("infeasible: {}", s.solution.detail),
    }
    let ran_options = s
        .solution
        .ops
        .as_deref()
        .is_some_and(|ops| !remat_core::schedule::menu_choices(ops).is_empty());
    // pofo, opportunist and autocapper may answer with a rotor plan, which
    // can run options: only say "not used" when none ran.
    if chain.has_menus() && !algorithm.chooses_options() && !ran_options {
        say!("menus      not used: {algorithm} runs every F_all as the classic one (rotor and revolve choose options)");
    }
}

/// One line per stage whose F_all runs a menu option: the policy, what it
/// keeps against the classic ā^ℓ, and the time its backward adds.
fn option_lines(chain: &Chain, ops: &[remat_core::Op]) -> Vec<String> {
    remat_core::schedule::menu_choices(ops)
        .into_iter()
        .filter(|&(l, _)| l >= 1 && l <= chain.len())
        .map(|(l, k)| {
            let st = chain.stage(l);
            let c = st.choice(k as usize);
            let name = st.module.as_deref().unwrap_or(&st.name);
            let name = if name.is_empty() {
                String::new()
            } else {
                format!(" ({name})")
            };
            format!(
                "stage {l}{name}: {} keeps {} of {}, +{} in its backward",
                st.policy(k as usize),
                format_bytes(c.saved_bytes),
                format_bytes(st.saved_bytes),
                format_seconds(c.backward_seconds - st.backward_seconds)
            )
        })
        .collect()
}

/// Whether the planner's least budget is only a floor: the offloading
/// algorithms' and `optimal`'s (its exact least is a search of its own).
fn own_min_is_lower_bound(algorithm: Algorithm) -> bool {
    algorithm.offloads() || algorithm.is_dynamic() || algorithm == Algorithm::Optimal
}
