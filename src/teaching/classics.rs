//! The four classic strategies of the gradient-checkpointing literature on
//! the chain on the page, each as a schedule the simulator judged: keep
//! everything (`store-all`), keep only the input (`recompute-all`), √n
//! (`checkpoint_sequential` with ⌈√L⌉ equal segments, Chen et al.'s
//! answer, which assumes equal layers) and the optimum among persistent
//! schedules at the budget (`rotor`). Pure: plain Rust, tested on the host.

use crate::planning::current::Current;
use crate::planning::protocol::Planned;
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::simulator::{simulate, Lane};
use remat_core::solvers::{
    hong, max_useful_budget, no_progress, solve, Algorithm, Options, Planner, Solution, SolveError,
};
use remat_core::Chain;
use std::sync::Arc;

/// Rotor's breakpoint table is built here, in the page's thread, for
/// chains up to this many stages (vgg19: 24 stages, 32 ms); longer ones
/// show the three fixed strategies, and rotor is the plan above.
pub const MAX_ROTOR_STAGES: usize = 60;

/// The exact optimum (`optimal`, any schedule, persistent or not) joins
/// the strategies on chains up to this many stages: its search answers a
/// budget there in milliseconds (the teaching chain: 10 ms natively;
/// nonpersistent, 12 stages, the same), in the page's thread. It answers
/// up to 18 stages, but at seconds a budget (gpt2, 14 stages: 4 s) it
/// would freeze the slider; there the lesson says rotor is the optimum
/// among persistent schedules, and Compare searches it when asked.
pub const MAX_OPTIMAL_STAGES: usize = crate::planning::optimality::AUTO_OPTIMAL_STAGES;

/// One strategy: what to call it, how `remat solve` asks for it, and its
/// schedule on the chain (drawn against the page's budget).
#[derive(Clone)]
pub struct Strategy {
    /// Its name in the figure (`√n: 4 segments`).
    pub label: String,
    pub algorithm: Algorithm,
    /// `sequential`'s fixed k (√n), None for the others.
    pub segments: Option<usize>,
    /// The schedule and its trace; a `Current` with no ops when the
    /// strategy has none at the budget (rotor below M_low).
    pub current: Arc<Current>,
}

/// ⌈√L⌉, the number of segments of the √n strategy.
pub fn sqrt_segments(stages: usize) -> usize {
    let mut k = (stages as f64).sqrt().floor() as usize;
    while k * k < stages {
        k += 1;
    }
    k.max(1)
}

/// The classic strategies of one chain, with what does not depend on the
/// budget done once: the three fixed schedules simulated, and rotor's
/// planner (its breakpoint table answers every budget exactly). A budget
/// move then costs one read of that table, and the exact optimum's search
/// on chains up to [`MAX_OPTIMAL_STAGES`] stages.
pub struct Classic {
    chain: Arc<Chain>,
    fixed: Vec<Strategy>,
    rotor: Option<RotorTable>,
}

/// Rotor's planner on one chain, built once (its breakpoint table answers
/// every budget exactly): its least budget, its time at any budget, and
/// where that time doubles. What *Where does the time double?* needs, with
/// none of the fixed strategies [`Classic`] also simulates.
pub struct RotorTable {
    chain: Arc<Chain>,
    planner: Planner,
}

impl Classic {
    /// Builds the fixed three and rotor's table (chains up to
    /// [`MAX_ROTOR_STAGES`] stages).
    pub fn new(chain: &Arc<Chain>) -> Classic {
        let k = sqrt_segments(chain.len());
        let fixed = [
            (
                "store-all: keep everything".to_string(),
                Algorithm::StoreAll,
                None,
            ),
            (
                "recompute-all: keep only a^0".to_string(),
                Algorithm::RecomputeAll,
                None,
            ),
            (
                format!("√n: {k} equal segments"),
                Algorithm::Sequential,
                Some(k),
            ),
        ]
        .into_iter()
        .map(|(label, algorithm, segments)| {
            let options = Options {
                segments,
                ..Options::default()
            };
            let solution = solve(chain, algorithm, u64::MAX, &options);
            strategy(chain, label, algorithm, segments, u64::MAX, solution)
        })
        .collect();
        Classic {
            chain: chain.clone(),
            fixed,
            rotor: RotorTable::new(chain),
        }
    }

    /// The strategies at `budget`: the fixed three, rotor read from its
    /// table, and the exact optimum on short chains.
    pub fn at(&self, budget: u64) -> Vec<Strategy> {
        let chain = &self.chain;
        // The fixed three are drawn against the page's budget: each a copy
        // with that budget (their schedules do not depend on it).
        let mut all: Vec<Strategy> = (self.fixed.iter())
            .map(|s| Strategy {
                current: Arc::new(Current {
                    planned: Planned {
                        budget,
                        ..s.current.planned.clone()
                    },
                    ..(*s.current).clone()
                }),
                ..s.clone()
            })
            .collect();
        if let Some(rotor) = &self.rotor {
            let label = "rotor: the optimum among persistent schedules".to_string();
            let solution = rotor.planner.plan(chain, budget);
            all.push(strategy(
                chain,
                label,
                Algorithm::Rotor,
                None,
                budget,
                solution,
            ));
        }
        if chain.len() <= MAX_OPTIMAL_STAGES {
            let label = "optimal: the exact optimum, any schedule".to_string();
            let solution = solve(chain, Algorithm::Optimal, budget, &Options::default());
            all.push(strategy(
                chain,
                label,
                Algorithm::Optimal,
                None,
                budget,
                solution,
            ));
        }
        all
    }
}

/// Where rotor's step takes twice the time of keeping everything.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Doubling {
    /// The least budget at which rotor's step takes at most twice the
    /// no-limit time; one byte less and it takes more.
    At(u64),
    /// Even at the least memory rotor stays under twice: its overhead
    /// there (0.077 for +7.7 %).
    Never { overhead_at_low: f64 },
    /// Rotor is not solved here (chains over [`MAX_ROTOR_STAGES`]).
    NotSolved,
}

impl Classic {
    /// M_low: the least budget rotor has a schedule for, None past
    /// [`MAX_ROTOR_STAGES`].
    pub fn rotor_low(&self) -> Option<u64> {
        self.rotor.as_ref().map(RotorTable::low)
    }
}

impl RotorTable {
    /// Rotor's table for every budget, None past [`MAX_ROTOR_STAGES`] (or
    /// where it cannot be built).
    pub fn new(chain: &Arc<Chain>) -> Option<RotorTable> {
        if chain.len() > MAX_ROTOR_STAGES {
            return None;
        }
        let planner = Planner::build(
            chain,
            Algorithm::Rotor,
            max_useful_budget(chain),
            &Options::default(),
            &mut no_progress(),
        )
        .ok()?;
        Some(RotorTable {
            chain: chain.clone(),
            planner,
        })
    }

    /// M_low: the least budget rotor has a schedule for.
    pub fn low(&self) -> u64 {
        self.planner.min_budget_bytes()
    }

    /// Rotor's step time at `budget`, None where it has no schedule.
    pub fn seconds(&self, budget: u64) -> Option<f64> {
        let solution = self.planner.plan(&self.chain, budget).ok()?;
        solution.feasible().then_some(solution.predicted_seconds?)
    }

    /// Where rotor's time doubles, by bisection on its table: the time is
    /// non-increasing in the budget (a larger budget admits every schedule
    /// a smaller one does), so one threshold splits the range.
    pub fn doubling(&self) -> Doubling {
        let twice = 2.0 * self.chain.sequential_seconds();
        let (low, high) = (self.low(), max_useful_budget(&self.chain));
        let slow = |b: u64| self.seconds(b).is_none_or(|t| t > twice);
        match self.seconds(low) {
            Some(t) if t <= twice => {
                return Doubling::Never {
                    overhead_at_low: t / self.chain.sequential_seconds() - 1.0,
                }
            }
            None => return Doubling::NotSolved,
            Some(_) => {}
        }
        // slow(lo) holds, slow(hi) does not (at M_high rotor keeps all).
        let (mut lo, mut hi) = (low, high);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if slow(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Doubling::At(hi)
    }
}

/// The classic strategies on `chain`, with `budget` as the line they are
/// drawn against (the fixed ones do not depend on it; rotor does, and is
/// left out past [`MAX_ROTOR_STAGES`]; the optimum joins up to
/// [`MAX_OPTIMAL_STAGES`]).
pub fn classic_four(chain: &Arc<Chain>, budget: u64) -> Vec<Strategy> {
    Classic::new(chain).at(budget)
}

/// A solved strategy, simulated (no transfers: the memory limit plays no
/// part in the time).
fn strategy(
    chain: &Arc<Chain>,
    label: String,
    algorithm: Algorithm,
    segments: Option<usize>,
    budget: u64,
    solution: Result<Solution, SolveError>,
) -> Strategy {
    let solution = solution.ok();
    let ops = solution.as_ref().and_then(|s| s.ops.clone());
    let trace = ops
        .as_ref()
        .map(|ops| simulate(chain, ops).map_err(|e| e.to_string()));
    let planned = Planned {
        generation: 0,
        id: 0,
        algorithm,
        budget,
        bandwidth: None,
        exact: true,
        predicted_seconds: solution.as_ref().and_then(|s| s.predicted_seconds),
        predicted_peak_bytes: solution.as_ref().and_then(|s| s.predicted_peak_bytes),
        detail: solution.map(|s| s.detail).unwrap_or_default(),
        ops,
        error: None,
        summaries: Vec::new(),
        grid_loss: None,
        gap: None,
        stage: Default::default(),
    };
    Strategy {
        label,
        algorithm,
        segments,
        current: Arc::new(Current {
            chain: chain.clone(),
            algorithm: algorithm.name().to_string(),
            planned,
            trace,
            file: None,
        }),
    }
}

/// A guess at which stages to keep: the schedule `torch.utils.checkpoint`
/// runs for that set (each stage kept as a checkpoint, the segments between
/// recomputed in the backward; Hong et al.'s sets are built the same way),
/// and what the optimum does with the same memory.
pub struct Guess {
    /// The stages kept, ascending (the last stage is always one).
    pub kept: Vec<usize>,
    pub peak_bytes: u64,
    pub seconds: f64,
    /// Where the peak comes from (the simulator's `peak_line`).
    pub peak_line: String,
    /// Rotor's step time at the guess's peak, None past
    /// [`MAX_ROTOR_STAGES`] (or if rotor found nothing, which cannot
    /// happen: the guess is a persistent schedule that fits).
    pub optimum_seconds: Option<f64>,
}

/// Simulates the guess `kept` on `chain` and answers it with rotor at the
/// same peak; an error names what is wrong with the set.
pub fn guess(chain: &Chain, kept: &[usize]) -> Result<Guess, String> {
    let ops = hong::schedule(chain, kept).map_err(|e| e.to_string())?;
    let trace = simulate(chain, &ops).map_err(|e| e.to_string())?;
    let optimum_seconds = (chain.len() <= MAX_ROTOR_STAGES)
        .then(|| {
            solve(
                chain,
                Algorithm::Rotor,
                trace.peak_bytes,
                &Options::default(),
            )
            .ok()
        })
        .flatten()
        .and_then(|s| s.predicted_seconds);
    let kept = hong::normalize(chain.len(), kept).map_err(|e| e.to_string())?;
    Ok(Guess {
        kept,
        peak_bytes: trace.peak_bytes,
        seconds: trace.makespan_seconds,
        peak_line: trace.peak_line(&ops),
        optimum_seconds,
    })
}

/// The largest peak among them and the budget: the memory axis they share.
pub fn shared_top(strategies: &[Strategy], budget: u64) -> u64 {
    (strategies.iter())
        .filter_map(|s| s.current.ok_trace().map(|t| t.peak_bytes))
        .fold(budget, u64::max)
}

/// The slowest one's makespan: the time axis they share.
pub fn shared_end(strategies: &[Strategy]) -> f64 {
    (strategies.iter())
        .filter_map(|s| s.current.ok_trace().map(|t| t.makespan_seconds))
        .fold(0.0, f64::max)
}

/// The race's next time: `step` on from `t` (from 0 when there is none),
/// back to 0 once past `end`, so the race loops.
pub fn race_step(t: Option<f64>, step: f64, end: f64) -> f64 {
    match t {
        Some(t) if t < end => (t + step).min(end),
        Some(_) => 0.0,
        None => 0.0,
    }
}

/// What a strategy is doing at time `t` of the race: the operation running
/// and the memory in use, or when it finished.
pub fn now_line(c: &Current, t: f64) -> String {
    let Some(trace) = c.ok_trace() else {
        return String::new();
    };
    if t >= trace.makespan_seconds {
        return format!("done at {}", format_seconds(trace.makespan_seconds));
    }
    let running = (trace.spans.iter())
        .find(|s| s.lane == Lane::Compute && s.start <= t && t < s.end)
        .map_or_else(|| "idle".to_string(), |s| c.ops()[s.op].to_string());
    let resident: u64 = trace.resident_at(t).iter().map(|r| r.bytes).sum();
    format!(
        "at {}: {running}, {} in use",
        format_seconds(t),
        format_bytes(resident)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::examples::{by_name, teaching};
    use remat_core::solvers::max_useful_budget;

    /// The race runs every strategy on one clock to the slowest one's end
    /// and loops; each row says what runs at the cursor. Could fail if the
    /// axis ended at the fastest makespan (store-all's: the others would
    /// be cut), or the clock stopped at the end instead of wrapping.
    #[test]
    fn the_race_shares_one_clock() {
        let chain = Arc::new(teaching());
        let four = classic_four(&chain, 600_000_000);
        let end = shared_end(&four);
        let recompute_all = four[1].current.ok_trace().unwrap().makespan_seconds;
        assert_eq!(end, recompute_all);
        assert_eq!(race_step(None, 0.1, end), 0.0);
        assert_eq!(race_step(Some(0.2), 0.1, end), 0.30000000000000004);
        assert_eq!(race_step(Some(end - 0.01), 0.1, end), end);
        assert_eq!(race_step(Some(end), 0.1, end), 0.0);
        let store_all = &four[0].current;
        assert_eq!(
            now_line(store_all, 0.005),
            "at 5.00 ms: F_all^1, 192 MiB in use"
        );
        assert_eq!(now_line(store_all, 1.0), "done at 300.00 ms");
    }

    /// The doubling point is a threshold of rotor's own time: at it the
    /// step takes at most twice the no-limit time, one byte below more
    /// (`remat solve` agrees); on VGG-19 rotor never doubles. Could fail if
    /// the bisection kept the wrong end, or the time were compared with 2×
    /// rotor at M_high. Mutation tried: `Doubling::At(lo)`: rotor at that
    /// budget takes more than twice, the first assertion fails.
    #[test]
    fn the_time_doubles_at_one_budget() {
        let chain = Arc::new(teaching());
        let rotor = RotorTable::new(&chain).expect("a short chain");
        let Doubling::At(b) = rotor.doubling() else {
            panic!("{:?}", rotor.doubling())
        };
        let twice = 2.0 * chain.sequential_seconds();
        let t = |b: u64| {
            solve(&chain, Algorithm::Rotor, b, &Options::default())
                .unwrap()
                .predicted_seconds
        };
        assert!(t(b).unwrap() <= twice);
        assert!(t(b - 1).is_none_or(|t| t > twice));
        let vgg = Arc::new(by_name("vgg19-h100").unwrap());
        match RotorTable::new(&vgg).expect("a short chain").doubling() {
            Doubling::Never { overhead_at_low } => assert!(overhead_at_low < 1.0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sqrt_segments_is_the_ceiling_of_the_root() {
        let got: Vec<usize> = [1, 2, 4, 5, 9, 10, 24, 25, 26, 300]
            .map(sqrt_segments)
            .to_vec();
        assert_eq!(got, [1, 2, 2, 3, 3, 4, 5, 5, 6, 18]);
    }

    /// Each strategy is what `remat solve` answers for it, simulated: the
    /// peak store-all keeps is M_high, recompute-all's the least, √n in
    /// between, and rotor fits the budget. Could fail if √n were solved
    /// with the best k instead of ⌈√L⌉ (mutation tried: `segments: None`
    /// gives sequential's best k at u64::MAX, one segment: its peak is
    /// M_high and the order assertion fails), or one of them were solved
    /// as another algorithm (the ops compared with `solve`'s).
    #[test]
    fn the_classic_four_are_what_solve_answers() {
        let chain = Arc::new(by_name("vgg19-h100").unwrap());
        let high = max_useful_budget(&chain);
        let budget = high * 8 / 10;
        let four = classic_four(&chain, budget);
        let names: Vec<&str> = four.iter().map(|s| s.algorithm.name()).collect();
        assert_eq!(names, ["store-all", "recompute-all", "sequential", "rotor"]);
        let peak = |i: usize| four[i].current.ok_trace().unwrap().peak_bytes;
        let time = |i: usize| four[i].current.ok_trace().unwrap().makespan_seconds;
        assert_eq!(peak(0), high);
        // On VGG-19 √n needs no more than recompute-all (the big early
        // layers set both peaks) at a fraction of its time.
        assert!(
            peak(1) <= peak(2) && peak(2) < peak(0),
            "{} {} {}",
            peak(1),
            peak(2),
            peak(0)
        );
        assert!(time(0) < time(2) && time(2) < time(1));
        assert!(peak(3) <= budget);
        assert_eq!(four[2].segments, Some(5));
        for s in &four {
            let options = Options {
                segments: s.segments,
                ..Options::default()
            };
            let at = if s.algorithm == Algorithm::Rotor {
                budget
            } else {
                u64::MAX
            };
            let solved = solve(&chain, s.algorithm, at, &options).unwrap();
            assert_eq!(s.current.planned.ops, solved.ops, "{}", s.label);
        }
        assert_eq!(shared_top(&four, budget), high);
        // Each is drawn against the page's budget (a fixed one solved at
        // u64::MAX drew its budget line at 16 777 216 TiB).
        assert!(four.iter().all(|s| s.current.planned.budget == budget));
    }

    /// A guess is the set's schedule simulated, and rotor never does worse
    /// with the same memory. Could fail if the set were read as segments'
    /// starts instead of their ends (the peak would differ from `remat
    /// checkpoints --set`'s simulated peak: 2 076 837 888 B for 4,8,16 on
    /// vgg19-h100), or rotor asked at another budget.
    #[test]
    fn a_guess_is_its_sets_schedule_against_rotor_at_its_peak() {
        let chain = by_name("vgg19-h100").unwrap();
        let g = guess(&chain, &[4, 8, 16]).unwrap();
        assert_eq!(g.kept, [4, 8, 16, 24]);
        assert_eq!(g.peak_bytes, 2_076_837_888);
        assert!(g.optimum_seconds.unwrap() <= g.seconds);
        assert!(g.peak_line.starts_with("during "), "{}", g.peak_line);
        let err = guess(&chain, &[8, 4]).err().unwrap();
        assert!(err.contains("checkpoints"), "{err}");
    }

    #[test]
    fn long_chains_leave_rotor_to_the_plan_above() {
        let long = Arc::new(remat_core::examples::synthetic(MAX_ROTOR_STAGES + 1));
        assert_eq!(classic_four(&long, u64::MAX).len(), 3);
        let vgg = Arc::new(by_name("vgg19-h100").unwrap());
        assert_eq!(classic_four(&vgg, u64::MAX).len(), 4);
        assert_eq!(classic_four(&Arc::new(teaching()), u64::MAX).len(), 5);
    }

    /// Built once, read at many budgets: rotor's plan from the table built
    /// for M_high is `remat solve`'s at each budget, and on a short chain
    /// the exact optimum joins, never slower than rotor and strictly faster
    /// on the example built for it (`optimal-wins`). Could fail if
    /// the planner were built on a grid (its plans would differ from the
    /// exact solve's at budgets between slots), or the optimum were asked
    /// at another budget than rotor.
    #[test]
    fn built_once_rotor_and_the_optimum_follow_the_budget() {
        for name in ["teaching", "nonpersistent", "vgg19-h100"] {
            let chain = Arc::new(by_name(name).unwrap());
            let classic = Classic::new(&chain);
            let low = remat_core::solvers::memory_floor(&chain).bytes;
            let high = max_useful_budget(&chain);
            for i in 0..=8u64 {
                let budget = low + (high - low) * i / 8;
                let at = classic.at(budget);
                let rotor = at.iter().find(|s| s.algorithm == Algorithm::Rotor).unwrap();
                let solved = solve(&chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
                assert_eq!(rotor.current.planned.ops, solved.ops, "{name} at {budget}");
                if let Some(best) = at.iter().find(|s| s.algorithm == Algorithm::Optimal) {
                    let t = |s: &Strategy| s.current.ok_trace().map(|t| t.makespan_seconds);
                    if let (Some(b), Some(r)) = (t(best), t(rotor)) {
                        assert!(b <= r + 1e-12, "{name} at {budget}: {b} > {r}");
                    }
                }
            }
        }
        // The example where no persistent schedule is optimal: 79 s
        // against rotor's 88 s at 33 B.
        let chain = Arc::new(by_name("optimal-wins").unwrap());
        let at = Classic::new(&chain).at(33);
        let t = |a: Algorithm| {
            (at.iter().find(|s| s.algorithm == a))
                .and_then(|s| s.current.ok_trace())
                .map(|t| t.makespan_seconds)
                .unwrap()
        };
        assert!(t(Algorithm::Optimal) < t(Algorithm::Rotor));
    }
}
