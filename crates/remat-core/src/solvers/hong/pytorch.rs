//! The PyTorch model (Hong et al., Section 4): memory is released as soon as
//! it is no longer used, and each recomputed segment holds one output-gradient
//! buffer the size of its largest tensor (Algorithm 4).
//!
//! With checkpoints C (d_0 and d_n included) and h the checkpoint before i,
//! the memory while stage i's backward runs is, for i ∈ C (Eq. 9, 12)
//!
//! m(i) = Σ_{c ∈ C, c ≤ i} d_c + s(h, i),  s(h, i) = Σ_{k=h+1}^{i−1} d_k + max_{h≤k<i} d_k (Eq. 11),
//!
//! and the peak of C is the largest m(i) over i ∈ C \ {0}: inside a segment
//! the memory only falls (Eq. 10), and forward step k (the checkpoints
//! before k, and d_k) is at most m(c) for the checkpoint c that ends k's
//! segment.
//!
//! The optimum is M(0) of the recursion (Eq. 13–16, extended to i = 0 since
//! d_0 is always a checkpoint here)
//!
//! M(n) = d_n,  M(i) = d_i + min_{i<j≤n} max(M(j), U(i, j)),  U(i, j) = s(i, j) + d_j,
//!
//! where j is the checkpoint after i. [`algorithm5`] evaluates it directly in
//! O(n²); [`algorithm6`] in O(n).

use super::range_max::RangeMax;
use super::{spans, Selection};

/// The peak of a checkpoint set (Eq. 12 maximised over C). `set` is
/// ascending, ends with n, and does not contain 0; `d` is d_0 … d_n.
pub fn peak(d: &[u64], set: &[usize]) -> u64 {
    let mut kept = d[0];
    spans(set)
        .map(|(h, i)| {
            kept += d[i];
            let segment: u64 = d[h + 1..i].iter().sum();
            let buffer = d[h..i].iter().copied().max().unwrap_or(0);
            kept + segment + buffer
        })
        .max()
        .unwrap_or(0)
}

/// Algorithm 5: the recursion of Eq. 13 in O(n²), s(i, j) kept as a running
/// sum and maximum while j grows.
pub fn algorithm5(d: &[u64]) -> Selection {
    let n = d.len() - 1;
    let mut m = vec![0u64; n + 1];
    let mut next = vec![n; n + 1];
    m[n] = d[n];
    for i in (0..n).rev() {
        let (mut best, mut arg) = (u64::MAX, n);
        // Σ_{k=i+1}^{j−1} d_k and max_{i≤k<j} d_k for the current j.
        let (mut inner, mut largest) = (0u64, d[i]);
        for j in i + 1..=n {
            let u = inner + largest + d[j];
            let value = d[i] + m[j].max(u);
            if value < best {
                (best, arg) = (value, j);
            }
            inner += d[j];
            largest = largest.max(d[j]);
        }
        m[i] = best;
        next[i] = arg;
    }
    Selection {
        checkpoints: follow(&next),
        peak_bytes: m[0],
    }
}

/// Algorithm 6: the same recursion in O(n).
///
/// Two facts make it linear (Section 4.2). Only the j whose M(j) is smaller
/// than every M to its left can win (Lemma 3): they form a queue Q whose M
/// falls as j grows, while U(i, ·) rises (Lemma 1), so the best j is where
/// they cross. And U(i−1, j) ≥ U(i, j) (Eq. 25–29), so the crossing only
/// moves left as i falls (Lemma 4): one pointer swept once finds them all.
///
/// `q` stores Q with the largest index first; `cross` counts its leading
/// entries where U(i, j) ≥ M(j) (a prefix, since U − M rises with j). The
/// candidates are the last of them (value U) and the first entry after them
/// (value M); the paper's line 13 compares the same two. Unlike the paper's
/// pseudo-code, which starts the walk at the previous j*, the pointer here
/// is the crossing itself: when M(i+1) pushes entries out of the head of Q,
/// the pointer is clamped to what is left, which keeps it valid (those
/// entries had U ≥ M for i+1, hence for i). The pointer moves up at most
/// once per entry pushed plus once per entry popped: O(n) in all. U(i, j)
/// is two prefix sums and one O(1) range maximum.
pub fn algorithm6(d: &[u64]) -> Selection {
    algorithm6_counted(d).0
}

/// Algorithm 6, and how many times it evaluated U(i, j): at most 4n (the
/// pointer moves up at most 2n times, and each i adds the check that stops
/// it and one candidate), which the tests check so that
/// a change that keeps the answer but loses linearity is caught.
fn algorithm6_counted(d: &[u64]) -> (Selection, usize) {
    let n = d.len() - 1;
    let prefix = prefix_sums(d);
    let range = RangeMax::new(d);
    let evaluations = std::cell::Cell::new(0usize);
    let u = |i: usize, j: usize| {
        evaluations.set(evaluations.get() + 1);
        prefix[j] - prefix[i + 1] + range.max(i, j - 1) + d[j]
    };
    let mut m = vec![0u64; n + 1];
    let mut next = vec![n; n + 1];
    m[n] = d[n];
    let mut q = vec![n];
    let mut cross = 0;
    for i in (0..n).rev() {
        while cross < q.len() && u(i, q[cross]) >= m[q[cross]] {
            cross += 1;
        }
        let rising = (cross > 0).then(|| (u(i, q[cross - 1]), q[cross - 1]));
        let falling = q.get(cross).map(|&j| (m[j], j));
        let (best, arg) = match (rising, falling) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => unreachable!("Q always holds at least one index"),
        };
        m[i] = d[i] + best;
        next[i] = arg;
        while q.last().is_some_and(|&t| m[t] >= m[i]) {
            q.pop();
        }
        cross = cross.min(q.len());
        q.push(i);
    }
    let selection = Selection {
        checkpoints: follow(&next),
        peak_bytes: m[0],
    };
    (selection, evaluations.get())
}

/// prefix[k] = d_0 + … + d_{k−1}.
fn prefix_sums(d: &[u64]) -> Vec<u64> {
    let mut prefix = Vec::with_capacity(d.len() + 1);
    let mut sum = 0u64;
    prefix.push(0);
    for &x in d {
        sum += x;
        prefix.push(sum);
    }
    prefix
}

/// The checkpoints from 0 on, following each one's chosen successor to n.
fn follow(next: &[usize]) -> Vec<usize> {
    let n = next.len() - 1;
    let mut set = Vec::new();
    let mut i = 0;
    while i < n {
        i = next[i];
        set.push(i);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    // Algorithm 6 stays linear: at most 4n evaluations of U on 10⁵ stages of
    // random, rising, falling and equal sizes (the answers are checked against
    // Algorithm 5 in tests/hong.rs; this checks the cost, which those tests
    // cannot see). How it could fail: a pointer restarted each step, or
    // moved back after the queue changes. Mutation tried: `cross = 0` in
    // place of `cross = cross.min(q.len())` (still correct, but quadratic)
    // made it fail.
    #[test]
    fn algorithm6_evaluates_u_at_most_4n_times() {
        let n = 100_000usize;
        let mut state = 1u64;
        let random: Vec<u64> = (0..=n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                1 + (state >> 34)
            })
            .collect();
        let rising: Vec<u64> = (0..=n as u64).map(|k| k + 1).collect();
        let falling: Vec<u64> = rising.iter().rev().copied().collect();
        let equal = vec![7u64; n + 1];
        for (name, d) in [
            ("random", random),
            ("rising", rising),
            ("falling", falling),
            ("equal", equal),
        ] {
            let (_, evaluations) = algorithm6_counted(&d);
            assert!(
                evaluations <= 4 * n,
                "{name}: {evaluations} evaluations of U for n = {n}"
            );
        }
    }
}
