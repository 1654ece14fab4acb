//! The Chen model (Hong et al., Section 3; Chen et al.'s Algorithm 2): every
//! checkpoint stays in memory for the whole backward pass, and a recomputed
//! segment is held whole until the next checkpoint's backward frees it. The
//! peak of a set C (d_0 and d_n included) is Eq. 6:
//!
//! Σ_{c ∈ C} d_c + max over segments of Σ_{k in the segment} d_k.
//!
//! Algorithm 3 minimises it in two steps: for each possible segment memory s
//! (0 or a sum of consecutive d_k, k in 1..n−1: O(n²) values), the least
//! checkpoint memory c_s whose segments all fit in s (a DP over a sliding
//! window with a monotone queue, O(n)); then the least s + c_s. O(n³) in all.

use super::{spans, Selection};
use std::collections::VecDeque;

/// The peak of a checkpoint set (Eq. 6). `set` is ascending, ends with n and
/// does not contain 0; `d` is d_0 … d_n.
pub fn peak(d: &[u64], set: &[usize]) -> u64 {
    let kept: u64 = d[0] + set.iter().map(|&i| d[i]).sum::<u64>();
    let largest = spans(set)
        .map(|(h, i)| d[h + 1..i].iter().sum::<u64>())
        .max();
    kept + largest.unwrap_or(0)
}

/// Algorithm 3.
pub fn algorithm3(d: &[u64]) -> Selection {
    let n = d.len() - 1;
    let mut best: Option<(u64, u64)> = None;
    for s in segment_memories(d) {
        let total = s.saturating_add(least_checkpoint_memory(d, s).0);
        if best.is_none_or(|(b, _)| total < b) {
            best = Some((total, s));
        }
    }
    let (peak_bytes, s) = best.expect("0 is always a segment memory");
    let (_, last) = least_checkpoint_memory(d, s);
    // last[i]: the last checkpoint at or before i in the best prefix 0..=i.
    let mut checkpoints = vec![n];
    let mut i = n - 1;
    while i > 0 && last[i] > 0 {
        checkpoints.push(last[i]);
        i = last[i] - 1;
    }
    checkpoints.reverse();
    Selection {
        checkpoints,
        peak_bytes,
    }
}

/// Every value the segment memory can take: 0 (all segments empty) and each
/// Σ_{k=a}^{b} d_k with 1 ≤ a ≤ b ≤ n−1 (d_n is a checkpoint, never in a
/// segment). Sorted, without repeats.
fn segment_memories(d: &[u64]) -> Vec<u64> {
    let n = d.len() - 1;
    let mut all = vec![0];
    for a in 1..n {
        let mut sum = 0;
        for &x in &d[a..n] {
            sum += x;
            all.push(sum);
        }
    }
    all.sort_unstable();
    all.dedup();
    all
}

/// c_s = d_n + M(n−1, s), and for each i the last checkpoint j ≤ i chosen.
///
/// M(i, s) is the least checkpoint memory of d_0 … d_i (d_0 kept) whose
/// segments, the open one ending at i included, hold at most s (Eq. 8):
/// M(i, s) = min_{l(i) ≤ j ≤ i} F(j), F(0) = d_0, F(j) = d_j + M(j−1, s),
/// where l(i) is the least j with Σ_{k=j+1}^{i} d_k ≤ s (Inequality 7).
/// Q keeps the window's j in order with F rising, so its head is the
/// minimum. The paper's pseudo-code adds i to Q after reading the head; i is
/// a valid j for M(i, s) (a checkpoint at i, nothing open), and without it Q
/// is empty whenever d_i > s, so here i enters first.
fn least_checkpoint_memory(d: &[u64], s: u64) -> (u64, Vec<usize>) {
    let n = d.len() - 1;
    let mut m = vec![0u64; n];
    let mut last = vec![0usize; n];
    let f = |j: usize, m: &[u64]| if j == 0 { d[0] } else { d[j] + m[j - 1] };
    m[0] = d[0];
    let mut q: VecDeque<usize> = VecDeque::from([0]);
    let (mut l, mut window) = (0usize, 0u64);
    for i in 1..n {
        let fi = f(i, &m);
        while q.back().is_some_and(|&t| f(t, &m) >= fi) {
            q.pop_back();
        }
        q.push_back(i);
        window += d[i];
        while window > s {
            l += 1;
            window -= d[l];
        }
        while q.front().is_some_and(|&h| h < l) {
            q.pop_front();
        }
        let head = *q.front().expect("i itself is always in the window");
        m[i] = f(head, &m);
        last[i] = head;
    }
    (d[n] + m[n - 1], last)
}
