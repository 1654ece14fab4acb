//! The four classic strategies of the gradient-checkpointing literature on
//! the chain on the page, each as a schedule the simulator judged: keep
//! everything (`store-all`), keep only the input (`recompute-all`), √n
//! (`checkpoint_sequential` with ⌈√L⌉ equal segments, Chen et al.'s
//! answer, which assumes equal layers) and the optimum among persistent
//! schedules at the budget (`rotor`). Pure: plain Rust, tested on the host.

use crate::current::Current;
use crate::protocol::Planned;
use remat_core::simulator::simulate;
use remat_core::solvers::{hong, solve, Algorithm, Options};
use remat_core::Chain;
use std::sync::Arc;

/// Rotor's breakpoint table is built here, in the page's thread, for
/// chains up to this many stages (vgg19: 24 stages, 32 ms); longer ones
/// show the three fixed strategies, and rotor is the plan above.
pub const MAX_ROTOR_STAGES: usize = 60;

/// One strategy: what to call it, how `remat solve` asks for it, and its
/// schedule on the chain (drawn against the page's budget).
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

/// The classic strategies on `chain`, with `budget` as the line they are
/// drawn against (the fixed ones do not depend on it; rotor does, and is
/// left out past [`MAX_ROTOR_STAGES`]).
pub fn classic_four(chain: &Arc<Chain>, budget: u64) -> Vec<Strategy> {
    let k = sqrt_segments(chain.len());
    let mut asked = vec![
        (
            "store-all: keep everything".to_string(),
            Algorithm::StoreAll,
            None,
            u64::MAX,
        ),
        (
            "recompute-all: keep only a^0".to_string(),
            Algorithm::RecomputeAll,
            None,
            u64::MAX,
        ),
        (
            format!("√n: {k} equal segments"),
            Algorithm::Sequential,
            Some(k),
            u64::MAX,
        ),
    ];
    if chain.len() <= MAX_ROTOR_STAGES {
        asked.push((
            "rotor: the optimum at the budget".to_string(),
            Algorithm::Rotor,
            None,
            budget,
        ));
    }
    asked
        .into_iter()
        .map(|(label, algorithm, segments, solve_at)| {
            let options = Options {
                segments,
                ..Options::default()
            };
            let solution = solve(chain, algorithm, solve_at, &options).ok();
            let ops = solution.as_ref().and_then(|s| s.ops.clone());
            // No transfers: the memory limit plays no part in the time.
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
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::examples::{by_name, teaching};
    use remat_core::solvers::max_useful_budget;

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
        assert_eq!(classic_four(&Arc::new(teaching()), u64::MAX).len(), 4);
    }
}
