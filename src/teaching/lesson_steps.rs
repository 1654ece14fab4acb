//! The lesson of the *Learn* place (issue 27, point 3): five steps in the
//! order a 15-minute lecture on checkpointing takes them — a uniform chain,
//! where √n is a good answer; a real one, where it is not; a budget √n
//! cannot meet; offloading; the optimum and its gap to rotor. Each step is
//! a short text, a view of the page (chain, algorithm, budget, link, which
//! figures a presentation shows) and one question, whose answer is computed
//! from the chain, never written by hand. Plain Rust, tested on the host.

use crate::teaching::classics::{sqrt_segments, Classic, Strategy, MAX_OPTIMAL_STAGES};
use remat_core::examples;
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::solvers::{memory_floor, solve, Algorithm, Options};
use remat_core::Chain;
use std::sync::Arc;

/// What a step's budget is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// The peak of √n on the chain: the memory the naive answer needs,
    /// given to rotor to compare at equal memory.
    SqrtPeak,
    Bytes(u64),
}

/// The figures a step puts on a slide (the presentation shows these and
/// the step's text, nothing else).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figures {
    /// The classic strategies side by side.
    SideBySide,
    /// The plan's memory curve and timelines (the PCIe lane with them).
    MemoryAndTimelines,
}

/// One step of the lesson.
pub struct Step {
    pub title: &'static str,
    /// What to look at, in two or three sentences (the page's notation:
    /// `a^ℓ`, `ā^ℓ`, `δ^ℓ`).
    pub text: &'static str,
    pub question: &'static str,
    pub chain: &'static str,
    pub algorithm: Algorithm,
    pub budget: Budget,
    /// The host link in bytes/s; None: the chain's own.
    pub bandwidth: Option<f64>,
    pub figures: Figures,
}

/// The lesson, in order.
pub const STEPS: [Step; 5] = [
    Step {
        title: "A uniform chain: √n is a good answer",
        text: "The teaching chain has 10 equal stages. Keeping everything costs the most memory; keeping only a^0 recomputes the whole prefix before every backward. √n (Chen et al.) cuts the chain into ⌈√L⌉ = 4 equal segments and keeps their ends: with equal layers, that is close to the best there is. Press “Race them” to play the steps on one clock.",
        question: "With exactly √n's memory, how much faster than √n is rotor, the optimum among persistent schedules?",
        chain: "teaching",
        algorithm: Algorithm::Rotor,
        budget: Budget::SqrtPeak,
        bandwidth: None,
        figures: Figures::SideBySide,
    },
    Step {
        title: "A real network: equal segments are not equal",
        text: "VGG-19, measured on an H100, has 24 stages of very unequal size: its first convolutions keep ā^ℓ of about 392 MiB, its last ones a few MiB. √n still cuts 5 segments of equal length, so one segment holds most of the bytes. Rotor gets the same memory.",
        question: "With √n's memory, how much time does rotor save, and which tensors set √n's peak?",
        chain: "vgg19-h100",
        algorithm: Algorithm::Rotor,
        budget: Budget::SqrtPeak,
        bandwidth: None,
        figures: Figures::SideBySide,
    },
    Step {
        title: "A budget √n cannot meet",
        text: "ResNet-50 (H100) at 1 GB: √n's 5 segments need more, and keeping only a^0 fits but re-runs the prefix before every backward. Slide the budget down to its left end, M_low, the least any schedule needs.",
        question: "At 1 GB, what does rotor's step cost, and what would keeping only a^0 cost?",
        chain: "resnet50-h100",
        algorithm: Algorithm::Rotor,
        budget: Budget::Bytes(1_000_000_000),
        bandwidth: None,
        figures: Figures::SideBySide,
    },
    Step {
        title: "Offloading: the PCIe lane works while the GPU computes",
        text: "The same budget with pofo: a checkpoint can also be copied to host memory during the forward pass and brought back before its backward, on the copy lane under the compute lane. A copy costs no GPU time if it hides behind compute; a late prefetch makes the GPU wait (hatched).",
        question: "At the H100's measured link, how much of rotor's overhead does offloading take back?",
        chain: "resnet50-h100",
        algorithm: Algorithm::Pofo,
        budget: Budget::Bytes(1_000_000_000),
        bandwidth: None,
        figures: Figures::MemoryAndTimelines,
    },
    Step {
        title: "The optimum, and the gap",
        text: "Rotor is optimal among persistent schedules, those that keep each stage's saved ā^ℓ until its backward once computed. The exact optimum searches every schedule; this 5-stage chain was found where it wins. On real chains the gap is small or zero: the Compare place measures it for every algorithm.",
        question: "How much faster than rotor is the exact optimum here?",
        chain: "optimal-wins",
        algorithm: Algorithm::Rotor,
        budget: Budget::Bytes(33),
        bandwidth: None,
        figures: Figures::SideBySide,
    },
];

/// A step's chain, budget in bytes and link, as the page loads them.
pub struct StepView {
    pub chain: Arc<Chain>,
    pub budget: u64,
    /// Bytes/s; 0: no link.
    pub bandwidth: f64,
}

/// Resolves step `i`'s view (0-based); None past the last step.
pub fn view_of(i: usize) -> Option<StepView> {
    let step = STEPS.get(i)?;
    let chain = Arc::new(examples::by_name(step.chain)?);
    let budget = match step.budget {
        Budget::Bytes(b) => b,
        Budget::SqrtPeak => sqrt_peak(&chain)?,
    };
    let bandwidth = step
        .bandwidth
        .or(chain.bandwidth_bytes_per_s)
        .unwrap_or(0.0);
    Some(StepView {
        chain,
        budget,
        bandwidth,
    })
}

/// The peak of √n's schedule on `chain`.
fn sqrt_peak(chain: &Chain) -> Option<u64> {
    let options = Options {
        segments: Some(sqrt_segments(chain.len())),
        ..Options::default()
    };
    solve(chain, Algorithm::Sequential, u64::MAX, &options)
        .ok()?
        .predicted_peak_bytes
}

/// The plan on the page an answer reads (pofo's, for the offloading step,
/// solved by the page's worker): its step time and the link it was solved
/// for (bytes/s; None or 0: no link), which the user may have changed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShownPlan {
    pub seconds: f64,
    pub link: Option<f64>,
}

/// Step `i`'s answer on `chain` at `budget`, from the strategies solved
/// there and, for the offloading step, the plan on the page.
pub fn answer(i: usize, chain: &Arc<Chain>, budget: u64, shown: Option<ShownPlan>) -> String {
    let classic = Classic::new(chain);
    let at = classic.at(budget);
    let base = chain.sequential_seconds();
    let find = |a: Algorithm| at.iter().find(|s| s.algorithm == a);
    let seconds = |s: Option<&Strategy>| {
        s.and_then(|s| s.current.ok_trace())
            .map(|t| t.makespan_seconds)
    };
    let peak = |s: Option<&Strategy>| s.and_then(|s| s.current.ok_trace()).map(|t| t.peak_bytes);
    let over = |t: f64| format!("{} (+{:.1} %)", format_seconds(t), 100.0 * (t / base - 1.0));
    let (sqrt, rotor) = (find(Algorithm::Sequential), find(Algorithm::Rotor));
    let (sqrt_t, rotor_t) = (seconds(sqrt), seconds(rotor));
    match (i, sqrt_t, rotor_t) {
        (0, Some(s), Some(r)) => format!(
            "√n takes {}, rotor {}: with equal layers √n is within {:.1} % of rotor.",
            over(s),
            over(r),
            100.0 * (s / r - 1.0)
        ),
        (1, Some(s), Some(r)) => {
            let why = sqrt
                .and_then(|s| {
                    let trace = s.current.ok_trace()?;
                    Some(trace.peak_line(s.current.ops()))
                })
                .unwrap_or_default();
            format!(
                "√n takes {}, rotor {}: {:.0} % of √n's overhead saved with the same memory. √n's peak comes {why}.",
                over(s),
                over(r),
                100.0 * (s - r) / (s - base).max(1e-15)
            )
        }
        (2, _, Some(r)) => {
            let all = find(Algorithm::RecomputeAll);
            format!(
                "Rotor takes {}; keeping only a^0, {} with a peak of {}. √n needs {}. M_low, the least rotor can do with (the slider's left end), is {}.",
                over(r),
                seconds(all).map_or_else(|| "—".into(), over),
                peak(all).map_or_else(|| "—".into(), format_bytes),
                peak(sqrt).map_or_else(|| "—".into(), format_bytes),
                format_bytes(classic.rotor_low().unwrap_or(memory_floor(chain).bytes))
            )
        }
        (3, _, Some(r)) => match shown {
            Some(p) => format!(
                "Rotor takes {}, pofo {}: offloading takes back {:.0} % of the overhead at {}.",
                over(r),
                over(p.seconds),
                100.0 * (r - p.seconds) / (r - base).max(1e-15),
                link_words(p.link)
            ),
            None => "Waiting for pofo's plan at this budget …".into(),
        },
        (4, _, Some(r)) => match seconds(find(Algorithm::Optimal)) {
            Some(o) => format!(
                "The optimum takes {}, rotor {}: rotor is {:.1} % slower. The Compare place measures this gap for every algorithm on chains up to {MAX_OPTIMAL_STAGES} stages.",
                format_seconds(o),
                format_seconds(r),
                100.0 * (r / o - 1.0)
            ),
            None => format!("The exact optimum is searched on chains up to {MAX_OPTIMAL_STAGES} stages."),
        },
        _ => "No schedule at this budget: move the budget back to the step's.".into(),
    }
}

fn link_words(link: Option<f64>) -> String {
    match link.filter(|&b| b > 0.0) {
        Some(b) => format!("{:.0} GB/s", b / 1e9),
        None => "no host link".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step resolves: its chain exists, its budget is at or above
    /// the chain's least memory, and rotor (and, at step 5, the optimum)
    /// answers there. Could fail if an example were renamed, or a budget
    /// set below M_low (the step's figures would show no schedule).
    #[test]
    fn every_step_has_a_view_that_plans() {
        for i in 0..STEPS.len() {
            let v = view_of(i).unwrap_or_else(|| panic!("step {}", i + 1));
            assert!(v.budget >= memory_floor(&v.chain).bytes, "step {}", i + 1);
            let shown = ShownPlan {
                seconds: v.chain.sequential_seconds(),
                link: Some(v.bandwidth),
            };
            let a = answer(i, &v.chain, v.budget, Some(shown));
            assert!(!a.contains("No schedule"), "step {}: {a}", i + 1);
        }
        assert!(view_of(STEPS.len()).is_none());
    }

    /// The story the lesson tells is what the chains say: √n close to
    /// rotor on equal layers, far on VGG-19, over 1 GB on ResNet-50, and
    /// the optimum faster than rotor on its example. Could fail if a step's
    /// budget were taken from another chain, or the answers hard-coded
    /// numbers that drift from the solvers. Mutation tried: √n's peak taken
    /// from sequential's best k (`segments: None`, one segment at an
    /// unlimited budget): step 1's budget becomes M_high and its gap check
    /// fails.
    #[test]
    fn the_answers_tell_the_lessons_story() {
        let gap = |i: usize| {
            let v = view_of(i).unwrap();
            let at = Classic::new(&v.chain).at(v.budget);
            let t = |a: Algorithm| {
                (at.iter().find(|s| s.algorithm == a))
                    .and_then(|s| s.current.ok_trace())
                    .map(|t| t.makespan_seconds)
            };
            (t(Algorithm::Sequential), t(Algorithm::Rotor), at)
        };
        let (s, r, _) = gap(0);
        assert!(s.unwrap() / r.unwrap() < 1.05);
        let (s, r, _) = gap(1);
        assert!(s.unwrap() / r.unwrap() > 1.15);
        let (_, _, at) = gap(2);
        let sqrt = at
            .iter()
            .find(|s| s.algorithm == Algorithm::Sequential)
            .unwrap();
        assert!(sqrt.current.ok_trace().unwrap().peak_bytes > 1_000_000_000);
        let v = view_of(4).unwrap();
        let a = answer(4, &v.chain, v.budget, None);
        assert!(a.starts_with("The optimum takes 79"), "{a}");
        let v = view_of(1).unwrap();
        let a = answer(1, &v.chain, v.budget, None);
        assert!(a.contains("ā^1"), "{a}");
        // Step 3 names M_low, rotor's least (765 337 600 B on resnet50-h100,
        // `remat solve`'s m_low_bytes), not the floor below it.
        let v = view_of(2).unwrap();
        let a = answer(2, &v.chain, v.budget, None);
        assert!(
            a.contains(&format!("is {}.", format_bytes(765_337_600))),
            "{a}"
        );
    }

    /// The offloading step's answer reads the page's plan: without one it
    /// says what to wait for. Could fail if it silently used rotor's time,
    /// or named the chain's link instead of the plan's (it did: a plan at
    /// 6 GB/s was said to be at 54 GB/s).
    #[test]
    fn the_offloading_answer_waits_for_the_pages_plan() {
        let v = view_of(3).unwrap();
        assert!(answer(3, &v.chain, v.budget, None).starts_with("Waiting for pofo's plan"));
        let shown = |link| ShownPlan {
            seconds: 0.03687,
            link,
        };
        let a = answer(3, &v.chain, v.budget, Some(shown(Some(v.bandwidth))));
        assert!(a.contains("pofo 36.87 ms"), "{a}");
        assert!(a.contains("54 GB/s"), "{a}");
        // The link the page's plan was solved for, not the chain's: a user
        // who typed 6 GB/s reads 6 GB/s.
        let a = answer(3, &v.chain, v.budget, Some(shown(Some(6e9))));
        assert!(a.contains("at 6 GB/s"), "{a}");
        let a = answer(3, &v.chain, v.budget, Some(shown(Some(0.0))));
        assert!(a.contains("at no host link"), "{a}");
    }
}
