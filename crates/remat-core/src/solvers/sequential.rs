//! `sequential`: PyTorch's `torch.utils.checkpoint.checkpoint_sequential`.
//!
//! The chain is cut into k segments; the first k−1 have ⌊L/k⌋ stages and the
//! last one the rest, as PyTorch does. In the forward pass every segment but
//! the last runs without saving anything except its input (F_ck then F_∅);
//! the last runs normally (F_all). In the backward pass each earlier segment
//! is recomputed with F_all from its input, then back-propagated. With k = 1
//! it is `store-all`. Described as the *sequential* strategy in the rotor
//! report, Section 5.3.
//!
//! The best k for a budget is found by simulating every k = 1..L once
//! (O(L²) in all) and keeping the fastest that fits.

use crate::model::Chain;
use crate::schedule::Op;

/// The segments [first, last] (1-based, inclusive) PyTorch uses for k.
pub fn segments(n: usize, k: usize) -> Vec<(usize, usize)> {
    let k = k.clamp(1, n);
    let size = n / k;
    let mut out = Vec::with_capacity(k);
    for i in 0..k - 1 {
        out.push((i * size + 1, (i + 1) * size));
    }
    out.push(((k - 1) * size + 1, n));
    out
}

/// The schedule of `checkpoint_sequential` with `k` segments.
pub fn schedule(chain: &Chain, k: usize) -> Vec<Op> {
    let n = chain.len();
    let segs = segments(n, k);
    let (last_first, _) = *segs.last().expect("at least one segment");
    let mut ops = Vec::with_capacity(4 * n);
    for &(first, last) in &segs[..segs.len() - 1] {
        ops.push(Op::ForwardCheckpoint { stage: first });
        ops.extend((first + 1..=last).map(|stage| Op::ForwardNone { stage }));
    }
    ops.extend((last_first..=n).map(Op::forward_all));
    ops.extend((last_first..=n).rev().map(|stage| Op::Backward { stage }));
    for &(first, last) in segs[..segs.len() - 1].iter().rev() {
        ops.extend((first..=last).map(Op::forward_all));
        ops.extend((first..=last).rev().map(|stage| Op::Backward { stage }));
    }
    ops
}

/// Its time, from the model rather than the simulator: every stage forward
/// once with F_all, plus the no-grad forwards (F_ck, F_∅) of the k−1
/// segments that are run first and recomputed.
pub fn predicted_seconds(chain: &Chain, k: usize) -> f64 {
    let segs = segments(chain.len(), k);
    let recomputed: f64 = segs[..segs.len() - 1]
        .iter()
        .flat_map(|&(a, b)| a..=b)
        .map(|l| chain.stage(l).nograd_forward_seconds())
        .sum();
    chain.sequential_seconds() + recomputed
}
