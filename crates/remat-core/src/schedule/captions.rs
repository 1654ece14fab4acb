//! A caption for each operation of a schedule, in its context: what it
//! does ([`Op::explain`]), and for a recomputation which time it is and
//! why the tensor is needed again. The step-through of the explorer and
//! `remat simulate --states` show it; read from the op list alone, O(n + L).
//!
//! Why a forward runs again: the next backward B^m after it needs a^{m−1}
//! and ā^m, which were not kept; the forwards between the last kept
//! tensor and B^m rebuild them (a recomputed F_all^m keeps ā^m itself).

use super::Op;

/// One caption per operation, in schedule order. Stages past `stages` are
/// counted as one (a list that does not match the chain still gets
/// captions; the simulator rejects it elsewhere).
///
/// ```
/// use remat_core::examples::teaching;
/// use remat_core::schedule::captions;
/// use remat_core::solvers::recompute_all;
///
/// let chain = teaching();
/// let ops = recompute_all::schedule(&chain);
/// let text = captions(&ops, chain.len());
/// // After B^10, the forward is re-run from a^0 for B^9.
/// assert!(text[11].starts_with("F_∅^1, recomputed (2nd time) for B^9, which needs a^8"));
/// ```
pub fn captions(ops: &[Op], stages: usize) -> Vec<String> {
    let top = stages + 1;
    let mut runs = vec![0usize; top + 1];
    let next_backward = next_backwards(ops);
    ops.iter()
        .enumerate()
        .map(|(i, op)| {
            if !op.is_forward() {
                return op.explain();
            }
            let l = op.stage().min(top);
            runs[l] += 1;
            if runs[l] == 1 {
                return op.explain();
            }
            let why = match (op, next_backward[i]) {
                (Op::ForwardAll { stage, .. }, Some(m)) if *stage == m => {
                    format!("for B^{m}, which follows: ā^{m} was not kept")
                }
                (Op::ForwardAll { stage, .. }, Some(m)) => {
                    format!("on the way to B^{m}; ā^{stage} is kept again for B^{stage}")
                }
                (_, Some(m)) => format!(
                    "for B^{m}, which needs a^{} and ā^{m}: they were not kept, so the forward is re-run from the last tensor kept",
                    m - 1
                ),
                (_, None) => "no backward follows it".to_string(),
            };
            format!(
                "{op}, recomputed ({} time) {why}. {}",
                ordinal(runs[l]),
                op.explain()
            )
        })
        .collect()
}

/// For each op, the stage of the first backward after it (None: none).
fn next_backwards(ops: &[Op]) -> Vec<Option<usize>> {
    let mut out = vec![None; ops.len()];
    let mut next = None;
    for (i, op) in ops.iter().enumerate().rev() {
        out[i] = next;
        if let Op::Backward { stage } = op {
            next = Some(*stage);
        }
    }
    out
}

/// 1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st.
pub fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::teaching;
    use crate::solvers::{recompute_all, sequential};

    #[test]
    fn ordinals_in_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            got,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd",
                "101st", "111th"
            ]
        );
    }

    /// A first forward reads as before; a recomputation says which time
    /// and for which backward. Could fail if the run count were kept per
    /// op kind instead of per stage (F_∅^1 then F_all^1 would both read
    /// "1st"), or the backward looked up before the op instead of after
    /// (mutation tried: `next_backwards` without `.rev()`; fails on the
    /// first recomputation's target).
    #[test]
    fn recomputations_say_which_time_and_why() {
        let chain = teaching();
        let n = chain.len();
        let ops = recompute_all::schedule(&chain);
        let text = captions(&ops, n);
        assert_eq!(text.len(), ops.len());
        assert_eq!(text[0], ops[0].explain());
        // The first pass: F_ck^1, F_∅^2..9, F_all^10, B^10; then from a^0.
        assert_eq!(ops[n + 1], Op::ForwardNone { stage: 1 });
        assert!(
            text[n + 1]
                .starts_with("F_∅^1, recomputed (2nd time) for B^9, which needs a^8 and ā^9"),
            "{}",
            text[n + 1]
        );
        // Stage 1 runs once per backward but B^1's own F_all: the last
        // F_all^1 is its 10th run, and B^1 follows.
        let last_fall = ops.iter().rposition(|o| *o == Op::forward_all(1)).unwrap();
        assert!(
            text[last_fall].starts_with("F_all^1, recomputed (10th time) for B^1, which follows"),
            "{}",
            text[last_fall]
        );
        // Backwards keep their plain caption.
        let b = ops
            .iter()
            .position(|o| matches!(o, Op::Backward { .. }))
            .unwrap();
        assert_eq!(text[b], ops[b].explain());
        // Sequential with 2 segments: the first segment's F_all re-run for
        // the backward that follows it.
        let ops = sequential::schedule(&chain, 2);
        let text = captions(&ops, n);
        let again = ops.iter().rposition(|o| *o == Op::forward_all(5)).unwrap();
        assert!(
            text[again].starts_with("F_all^5, recomputed (2nd time) for B^5, which follows"),
            "{}",
            text[again]
        );
    }
}
