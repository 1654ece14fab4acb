//! `recompute-all`: the other end of the classic trade-off from
//! `store-all`, as the gradient-checkpointing literature draws it (the
//! "memory-poor" strategy of Chen et al., 2016, §3; the leftmost animation
//! of Salimans and Bulatov's `gradient-checkpointing` README).
//!
//! Only the input a^0 is kept. The forward pass runs F_ck^1, then F_∅^2 …
//! F_∅^{L−1} (each frees its input), and F_all^L; B^L follows. Before each
//! later B^ℓ the forward is re-run from a^0: F_∅^1 … F_∅^{ℓ−1}, F_all^ℓ, B^ℓ.
//! So at any time at most a^0, one activation in flight, one ā^ℓ and the
//! gradient are resident: the least memory of the fixed strategies, at the
//! cost of Σ_ℓ (L − ℓ) no-grad forwards of stage ℓ (O(L²) operations).
//! One schedule whatever the budget; it is a persistent schedule, so its
//! peak is never below rotor's M_low. O(L²) to write out.

use crate::model::Chain;
use crate::schedule::Op;

pub fn schedule(chain: &Chain) -> Vec<Op> {
    let n = chain.len();
    let mut ops = Vec::with_capacity(n * (n + 3) / 2);
    for target in (1..=n).rev() {
        // The first pass marks a^0 as a checkpoint (F_ck^1), so that every
        // later F_∅^1 leaves it in place.
        for stage in 1..target {
            ops.push(if stage == 1 && target == n {
                Op::ForwardCheckpoint { stage }
            } else {
                Op::ForwardNone { stage }
            });
        }
        ops.push(Op::forward_all(target));
        ops.push(Op::Backward { stage: target });
    }
    ops
}

/// Its time, from the model rather than the simulator: every stage forward
/// once with F_all and backward once, plus stage ℓ's no-grad forward
/// L − ℓ times (once before each B^m, m > ℓ).
pub fn predicted_seconds(chain: &Chain) -> f64 {
    let n = chain.len();
    let recomputed: f64 = (1..n)
        .map(|l| (n - l) as f64 * chain.stage(l).nograd_forward_seconds())
        .sum();
    chain.sequential_seconds() + recomputed
}
