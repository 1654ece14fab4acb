//! The "minimum memory" mode's numbers (Hong et al., *GPU Memory Usage
//! Optimization for Backward Propagation in Deep Network Training*): the
//! checkpoint set of least peak in the paper's memory model next to the set
//! `torch.utils.checkpoint.checkpoint_sequential` keeps with ⌈√n⌉ segments,
//! their curves over the training phase index, and what Remat's simulator
//! measures when each set runs as a schedule. Everything is O(n) (Algorithm
//! 6 for the PyTorch model; Algorithm 3, O(n³), for Chen's), so the page
//! computes it itself, no worker. Plain Rust, tested on the host.

use remat_core::model::units::format_bytes;
use remat_core::solvers::hong::{self, CheckpointError, Model};
use remat_core::{simulate, Chain};

/// One checkpoint set and how it fares.
#[derive(Clone, Debug, PartialEq)]
pub struct SetCurve {
    /// Stage numbers, ascending, n included (d_0 is always kept, not written).
    pub checkpoints: Vec<usize>,
    /// The peak in the paper's model (the curve's maximum).
    pub peak_bytes: u64,
    /// Memory at the training phase index 0 … 2n + 1.
    pub curve: Vec<u64>,
    /// The peak Remat's simulator measures for the set run as a schedule
    /// (`hong::schedule`), or why it could not run it.
    pub simulated_peak: Result<u64, String>,
}

/// The optimal set and checkpoint_sequential's √n set in one model.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub model: Model,
    pub optimal: SetCurve,
    /// checkpoint_sequential's segments: ⌈√n⌉.
    pub segments: usize,
    pub sequential: SetCurve,
}

/// checkpoint_sequential's segment count for the √n rule: ⌈√n⌉ (5 for
/// VGG-19's 24 stages, giving `{4, 8, 12, 16, 24}`; not the paper's
/// ⌈√n⌉-stage segments, `hong::sqrt_set`).
pub fn sqrt_segments(n: usize) -> usize {
    (1..=n).find(|k| k * k >= n).unwrap_or(1)
}

/// Both sets, their peaks and curves in `model`.
pub fn compare(chain: &Chain, model: Model) -> Result<Comparison, CheckpointError> {
    let n = chain.len();
    let optimal = hong::optimal(chain, model)?;
    let segments = sqrt_segments(n);
    let sequential = hong::sequential_set(n, segments);
    Ok(Comparison {
        model,
        optimal: set_curve(chain, model, optimal.checkpoints)?,
        segments,
        sequential: set_curve(chain, model, sequential)?,
    })
}

fn set_curve(chain: &Chain, model: Model, set: Vec<usize>) -> Result<SetCurve, CheckpointError> {
    let curve = hong::curve(chain, model, &set)?;
    let peak_bytes = hong::peak(chain, model, &set)?;
    let simulated_peak = hong::schedule(chain, &set)
        .map_err(|e| e.to_string())
        .and_then(|ops| simulate(chain, &ops).map_err(|e| e.to_string()))
        .map(|t| t.peak_bytes);
    Ok(SetCurve {
        checkpoints: set,
        peak_bytes,
        curve,
        simulated_peak,
    })
}

/// A set as the paper writes it: `{3, 6, 24}`.
pub fn set_text(set: &[usize]) -> String {
    let inner: Vec<String> = set.iter().map(|c| c.to_string()).collect();
    format!("{{{}}}", inner.join(", "))
}

/// The peak difference in words.
pub fn summary(c: &Comparison) -> String {
    let (best, seq) = (c.optimal.peak_bytes, c.sequential.peak_bytes);
    let sequential = format!(
        "checkpoint_sequential's √n set {} ({} segments, peak {})",
        set_text(&c.sequential.checkpoints),
        c.segments,
        format_bytes(seq)
    );
    let relation = match best.cmp(&seq) {
        std::cmp::Ordering::Less => format!("{} below {sequential}", format_bytes(seq - best)),
        std::cmp::Ordering::Equal => format!("the same as {sequential}"),
        // Cannot happen for an optimal set; said plainly rather than hidden.
        std::cmp::Ordering::Greater => format!("{} above {sequential}", format_bytes(best - seq)),
    };
    format!(
        "The optimal set {} peaks at {}, {relation}.",
        set_text(&c.optimal.checkpoints),
        format_bytes(best)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::examples;

    /// Could fail if the page showed another set than checkpoint_sequential's
    /// (the paper's √n set for VGG-19 is {5, 10, 15, 20, 24}), or a curve
    /// whose maximum is not the peak. Mutation tried: `sqrt_segments`
    /// returning ⌊√n⌋ (4 for n = 24, the set {6, 12, 18, 24}): this test
    /// and `sqrt_segments_is_the_ceiling` failed.
    #[test]
    fn vgg19_sets_and_curves() {
        let chain = examples::by_name("vgg19").unwrap();
        let n = chain.len();
        for model in Model::ALL {
            let c = compare(&chain, model).unwrap();
            assert!(c.segments * c.segments >= n);
            assert!((c.segments - 1) * (c.segments - 1) < n);
            assert_eq!(
                c.sequential.checkpoints,
                hong::sequential_set(n, c.segments)
            );
            for s in [&c.optimal, &c.sequential] {
                assert_eq!(s.curve.len(), 2 * n + 2);
                assert_eq!(s.curve.iter().max(), Some(&s.peak_bytes));
                assert_eq!(s.checkpoints.last(), Some(&n));
                assert!(s.simulated_peak.is_ok(), "{:?}", s.simulated_peak);
            }
            assert!(c.optimal.peak_bytes <= c.sequential.peak_bytes);
        }
    }

    #[test]
    fn sqrt_segments_is_the_ceiling() {
        assert_eq!(
            [1, 2, 4, 5, 10, 24, 25, 26].map(sqrt_segments),
            [1, 2, 2, 3, 4, 5, 5, 6]
        );
    }

    /// The sentence names both sets, both peaks and the difference; equal
    /// peaks say so instead of "0 B below".
    #[test]
    fn summary_words() {
        let curve = |set: Vec<usize>, peak| SetCurve {
            checkpoints: set,
            peak_bytes: peak,
            curve: vec![],
            simulated_peak: Ok(0),
        };
        let mut c = Comparison {
            model: Model::PyTorch,
            optimal: curve(vec![3, 6, 24], 3 << 30),
            segments: 5,
            sequential: curve(vec![4, 8, 12, 16, 24], (3 << 30) + (412 << 20)),
        };
        let s = summary(&c);
        assert!(
            s.starts_with("The optimal set {3, 6, 24} peaks at 3.00 GiB, 412"),
            "{s}"
        );
        assert!(
            s.contains("below checkpoint_sequential's √n set {4, 8, 12, 16, 24} (5 segments"),
            "{s}"
        );
        c.sequential.peak_bytes = c.optimal.peak_bytes;
        assert!(summary(&c).contains("the same as checkpoint_sequential"));
    }
}
