//! Algorithm 2 of the rotor report, once: the schedule a filled table
//! describes, read from its decisions. Both tables answer it — the grid
//! (`mod.rs`, memory in slots) and the breakpoints (`steps.rs`, memory in
//! bytes) — through [`Cells`], which says how a cell is read and what a
//! kept tensor takes on the table's memory axis; the walk, the ops and the
//! peak it predicts are this one function's, so the two cannot drift apart
//! (they were written twice and kept equal to the bit by hand).
//!
//! **Complexity.** O(L) decisions, each as costly as the table's `decide`
//! (O(L) candidates in the worst case).

use super::Decision;
use crate::model::Chain;
use crate::schedule::Op;
use std::ops::Sub;

/// A filled persistent table as the read-out sees it.
pub(super) trait Cells {
    /// The memory axis: slots (the grid) or bytes (the breakpoints).
    type Memory: Copy + Sub<Output = Self::Memory>;
    /// Which case of Theorem 1 reached C_BP(s, t, m).
    fn decide(&self, s: usize, t: usize, m: Self::Memory) -> Decision;
    /// What F_all^s under option `k` (0: the classic one) holds while
    /// s+1 … t run: ā^s[k], on the table's axis.
    fn held_by_forward_all(&self, chain: &Chain, s: usize, k: usize) -> Self::Memory;
    /// What the checkpoint a^{next−1} holds while next … t run.
    fn held_by_checkpoint(&self, chain: &Chain, next: usize) -> Self::Memory;
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
    match table.decide(s, t, m) {
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
            let held = table.held_by_forward_all(chain, s, k);
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
            let held = table.held_by_checkpoint(chain, next);
            let right = read_out(table, chain, next, t, m - held, ops);
            let left = read_out(table, chain, s, next - 1, m, ops);
            peak.max(a(next - 1) + right).max(left)
        }
    }
}
