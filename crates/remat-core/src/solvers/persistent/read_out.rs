//! Algorithm 2 of the rotor report, once: the schedule a filled table
//! describes, read from its decisions. Both tables answer it — the grid
//! (`mod.rs`, memory in slots) and the breakpoints (`steps.rs`, memory in
//! bytes) — through [`Cells`], which says how a cell is read and what a
//! kept tensor takes on the table's memory axis; the walk, the ops and the
//! peak it predicts are this one function's, so the two cannot drift apart
//! (they were written twice and kept equal to the bit by hand).
//!
//! Which case of Theorem 1 reached a cell ([`decide`]) is written once
//! too, over the same trait: each table says how its cells, its
//! stages' times and its memory needs read on its axis.
//!
//! **Complexity.** O(L) decisions, each O(L) candidates in the worst case.

use super::sizes::Sizes;
use super::{leaf_option, AllOption, Decision};
use crate::model::Chain;
use crate::schedule::Op;
use std::ops::Sub;

/// A filled persistent table as the read-out sees it: its cells, its
/// chain's sizes, and how bytes read on its memory axis; the rest are
/// [`Sizes`]' needs put on that axis, the same for both tables.
pub(super) trait Cells {
    /// The memory axis: slots (the grid) or bytes (the breakpoints).
    type Memory: Copy + Ord + Sub<Output = Self::Memory>;
    /// C_BP(s, t, m), as the fill stored it.
    fn value(&self, s: usize, t: usize, m: Self::Memory) -> f64;
    /// The sizes and times the fill read.
    fn sizes(&self) -> &Sizes;
    /// F_all^s's menu options (k ≥ 1), as the fill read them.
    fn menu(&self, s: usize) -> &[AllOption];
    /// A need of `bytes` on the table's axis (the first slot that holds it).
    fn on_axis(&self, bytes: u64) -> Self::Memory;
    /// What F_all^s under option `k` (0: the classic one) holds while
    /// s+1 … t run: ā^s[k], on the table's axis (the grid rounds it as
    /// the table does, which `on_axis` need not).
    fn held_by_forward_all(&self, s: usize, k: usize) -> Self::Memory;
    /// What the checkpoint a^{next−1} holds while next … t run.
    fn held_by_checkpoint(&self, next: usize) -> Self::Memory;

    /// u_f^s, u_f∅^s (no graph recorded) and u_b^s.
    fn forward(&self, s: usize) -> f64 {
        self.sizes().forward[s]
    }
    fn forward_nograd(&self, s: usize) -> f64 {
        self.sizes().forward_nograd[s]
    }
    fn backward(&self, s: usize) -> f64 {
        self.sizes().backward[s]
    }
    /// m_all^{s,t}, classic and under option `o`, on the table's axis.
    fn m_all(&self, s: usize, t: usize) -> Self::Memory {
        self.on_axis(self.sizes().m_all(s, t))
    }
    fn m_all_with(&self, t: usize, o: &AllOption) -> Self::Memory {
        self.on_axis(self.sizes().m_all_with(t, o))
    }
    /// One F_∅^j term in bytes, and m_∅ of a split of (s, t) whose F_∅
    /// terms peak at `inner` bytes, on the table's axis.
    fn none_term(&self, j: usize) -> u64 {
        self.sizes().none_term(j)
    }
    fn m_none(&self, s: usize, t: usize, inner: u64) -> Self::Memory {
        self.on_axis(self.sizes().m_none(s, t, inner))
    }
    /// Whether F_all^s may start a sub-chain longer than one (rotor).
    fn all_allowed(&self, s: usize, t: usize) -> bool {
        self.sizes().all_allowed(s, t)
    }
}

/// Which case of Theorem 1 reached C_BP(s, t, m): the first candidate, in
/// the fill's order, equal to the stored value. Each is recomputed with the
/// fill's arithmetic (the same operands added in the same order on both
/// tables), so equality is exact; the nearest one is a fallback that exact
/// arithmetic never needs.
pub(super) fn decide<T: Cells>(table: &T, s: usize, t: usize, m: T::Memory) -> Decision {
    let value = table.value(s, t, m);
    if s == t {
        // The first option, in the fill's order, that fits and gives it.
        let option = leaf_option(
            table.forward(s),
            (m >= table.m_all(s, s)).then_some(table.backward(s)),
            table.menu(s),
            |o| m >= table.m_all_with(s, o),
            value,
        );
        return Decision::Leaf { option };
    }
    let mut nearest = (f64::INFINITY, Decision::All { option: 0 });
    let mut consider = |c: f64, d: Decision| -> Option<Decision> {
        if c == value {
            return Some(d);
        }
        if (c - value).abs() < nearest.0 {
            nearest = ((c - value).abs(), d);
        }
        None
    };
    if table.all_allowed(s, t) {
        let w = table.held_by_forward_all(s, 0);
        if m >= table.m_all(s, t).max(w) {
            let c = (table.forward(s) + table.backward(s)) + table.value(s + 1, t, m - w);
            if let Some(d) = consider(c, Decision::All { option: 0 }) {
                return d;
            }
        }
        for o in table.menu(s) {
            let w = table.held_by_forward_all(s, o.option as usize);
            if m >= table.m_all_with(t, o).max(w) {
                let c = (table.forward(s) + o.backward) + table.value(s + 1, t, m - w);
                if let Some(d) = consider(c, Decision::All { option: o.option }) {
                    return d;
                }
            }
        }
    }
    let mut f = 0.0;
    let mut inner = 0u64;
    for next in s + 1..=t {
        f += table.forward_nograd(next - 1);
        if next >= s + 2 {
            inner = inner.max(table.none_term(next - 1));
        }
        let w = table.held_by_checkpoint(next);
        if m >= table.m_none(s, t, inner).max(w) {
            let c = (f + table.value(next, t, m - w)) + table.value(s, next - 1, m);
            if let Some(d) = consider(c, Decision::Checkpoint { next }) {
                return d;
            }
        }
    }
    nearest.1
}

/// Appends the ops of OptRec(s, t, m) and returns their peak in bytes,
/// a^{s−1} excluded, δ^t included (the DP's own accounting, unrounded).
pub(super) fn read_out<T: Cells>(
    table: &T,
    chain: &Chain,
    s: usize,
    t: usize,
    m: T::Memory,
    ops: &mut Vec<Op>,
) -> u64 {
    let a = |l: usize| chain.output_bytes(l);
    let d = |l: usize| chain.gradient_bytes(l);
    let st = chain.stage(s);
    match decide(table, s, t, m) {
        Decision::Leaf { option } => {
            let k = option as usize;
            let c = st.choice(k);
            ops.push(Op::ForwardAll { stage: s, option });
            ops.push(Op::Backward { stage: s });
            (d(s) + c.saved_bytes + c.forward_overhead).max(chain.backward_bytes_of(s, k))
        }
        Decision::All { option } => {
            let k = option as usize;
            let c = st.choice(k);
            ops.push(Op::ForwardAll { stage: s, option });
            let held = table.held_by_forward_all(s, k);
            let sub = read_out(table, chain, s + 1, t, m - held, ops);
            ops.push(Op::Backward { stage: s });
            (d(t) + c.saved_bytes + c.forward_overhead)
                .max(c.saved_bytes + sub)
                .max(chain.backward_bytes_of(s, k))
        }
        Decision::Checkpoint { next } => {
            ops.push(Op::ForwardCheckpoint { stage: s });
            let mut peak = d(t) + a(s) + st.nograd_forward_overhead();
            for j in s + 1..next {
                ops.push(Op::ForwardNone { stage: j });
                let of = chain.stage(j).nograd_forward_overhead();
                peak = peak.max(d(t) + a(j - 1) + a(j) + of);
            }
            let held = table.held_by_checkpoint(next);
            let right = read_out(table, chain, next, t, m - held, ops);
            let left = read_out(table, chain, s, next - 1, m, ops);
            peak.max(a(next - 1) + right).max(left)
        }
    }
}
