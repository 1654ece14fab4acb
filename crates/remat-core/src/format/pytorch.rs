//! `remat export --to pytorch-segments`: a schedule as the checkpointed
//! segments `torch.utils.checkpoint` can run, with a snippet to paste.
//!
//! `torch.utils.checkpoint.checkpoint(run, x)` on a run of consecutive
//! stages s..=t is, in the op language of docs/model.md, F_ck^s then
//! F_∅^{s+1..=t} in the forward pass (only the segment's input is kept), and
//! in the backward pass F_all^{s..=t} (the recomputation with its graph)
//! followed by B^t … B^s. A stage outside every checkpoint runs F_all in the
//! forward pass and B in the backward pass. `checkpoint_sequential(model, k,
//! x)` is the case where every segment but the last is checkpointed.
//!
//! A schedule is exported only when it *is* such a schedule, op for op: the
//! segments are read off its forward pass, the canonical schedule of those
//! segments is rebuilt, and the two lists must be equal. Anything else —
//! rotor's and revolve's nested recomputations (a checkpoint taken while
//! recomputing inside the backward pass), a stage recomputed twice,
//! offloading — is refused with the first operation that differs and why,
//! pointing to the `remat_torch` wrapper, which runs any schedule.

use crate::schedule::Op;
use crate::solvers::sequential;
use std::fmt;
use std::fmt::Write as _;

/// A run of consecutive stages `first..=last` (1-based, as in the papers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Segment {
    pub first: usize,
    pub last: usize,
    /// Run under `torch.utils.checkpoint` (only its input kept, recomputed
    /// in the backward pass); false: run normally, everything kept.
    pub checkpointed: bool,
}

/// Why a schedule cannot be written as checkpointed segments.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SegmentsError {
    #[error("the schedule has no operations")]
    Empty,
    #[error("op {index} ({op}) moves a tensor to or from the host: torch.utils.checkpoint cannot offload; run this schedule with the remat_torch wrapper (docs/pytorch.md)")]
    Offloading { index: usize, op: Op },
    #[error("op {index} ({op}) takes a checkpoint while recomputing in the backward pass: this schedule nests recomputations (rotor's and revolve's F_all/F_ck recursion), which torch.utils.checkpoint segments cannot express; run it with the remat_torch wrapper (docs/pytorch.md)")]
    Nested { index: usize, op: Op },
    #[error("op {index}: the checkpointed segments {segments} would run {expected} here, the schedule runs {found}; torch.utils.checkpoint cannot express this schedule; run it with the remat_torch wrapper (docs/pytorch.md)")]
    Differs {
        index: usize,
        segments: String,
        expected: String,
        found: String,
    },
}

/// Reads the segments of a schedule that `torch.utils.checkpoint` can run.
pub fn segments(ops: &[Op]) -> Result<Vec<Segment>, SegmentsError> {
    if ops.is_empty() {
        return Err(SegmentsError::Empty);
    }
    if let Some((index, &op)) = ops.iter().enumerate().find(|(_, op)| op.is_transfer()) {
        return Err(SegmentsError::Offloading { index, op });
    }
    // The forward pass: everything before the first backward.
    let first_backward = ops
        .iter()
        .position(|op| matches!(op, Op::Backward { .. }))
        .unwrap_or(ops.len());
    if let Some((i, &op)) = ops[first_backward..]
        .iter()
        .enumerate()
        .find(|(_, op)| matches!(op, Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. }))
    {
        return Err(SegmentsError::Nested {
            index: first_backward + i,
            op,
        });
    }
    let mut segs: Vec<Segment> = Vec::new();
    for &op in &ops[..first_backward] {
        let stage = op.stage();
        match (op, segs.last_mut()) {
            (Op::ForwardNone { .. }, Some(s)) if s.checkpointed && s.last + 1 == stage => {
                s.last = stage
            }
            (Op::ForwardAll { .. }, Some(s)) if !s.checkpointed && s.last + 1 == stage => {
                s.last = stage
            }
            (Op::ForwardCheckpoint { .. } | Op::ForwardAll { .. }, _) => segs.push(Segment {
                first: stage,
                last: stage,
                checkpointed: matches!(op, Op::ForwardCheckpoint { .. }),
            }),
            // An F_∅ that starts nothing: the rebuilt list will differ here.
            _ => segs.push(Segment {
                first: stage,
                last: stage,
                checkpointed: true,
            }),
        }
    }
    let expected = schedule(&segs);
    let differs = |index: usize, expected: Option<&Op>, found: Option<&Op>| {
        let show =
            |op: Option<&Op>| op.map_or("nothing (the list ends)".to_string(), Op::to_string);
        SegmentsError::Differs {
            index,
            segments: describe(&segs),
            expected: show(expected),
            found: show(found),
        }
    };
    for i in 0..expected.len().max(ops.len()) {
        if expected.get(i) != ops.get(i) {
            return Err(differs(i, expected.get(i), ops.get(i)));
        }
    }
    Ok(segs)
}

/// The schedule `torch.utils.checkpoint` runs for these segments (stages
/// 1..=L in order).
pub fn schedule(segs: &[Segment]) -> Vec<Op> {
    let mut ops = Vec::new();
    for s in segs {
        if s.checkpointed {
            ops.push(Op::ForwardCheckpoint { stage: s.first });
            ops.extend((s.first + 1..=s.last).map(|stage| Op::ForwardNone { stage }));
        } else {
            ops.extend((s.first..=s.last).map(|stage| Op::ForwardAll { stage }));
        }
    }
    for s in segs.iter().rev() {
        if s.checkpointed {
            ops.extend((s.first..=s.last).map(|stage| Op::ForwardAll { stage }));
        }
        ops.extend((s.first..=s.last).rev().map(|stage| Op::Backward { stage }));
    }
    ops
}

/// `[1–4 checkpointed, 5–7 stored]`, for messages.
fn describe(segs: &[Segment]) -> String {
    let parts: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.checkpointed {
            "checkpointed"
        } else {
            "stored"
        };
        if self.first == self.last {
            write!(f, "{} {what}", self.first)
        } else {
            write!(f, "{}–{} {what}", self.first, self.last)
        }
    }
}

/// k when the segments are exactly `checkpoint_sequential(model, k, x)`'s:
/// the split of [`sequential::segments`] (PyTorch's, shared with the
/// `sequential` solver), every segment but the last checkpointed.
pub fn sequential_k(segs: &[Segment]) -> Option<usize> {
    let n = segs.last()?.last;
    let k = segs.len();
    let (last, rest) = segs.split_last()?;
    let split = segs.iter().map(|s| (s.first, s.last));
    let same = split.eq(sequential::segments(n, k));
    (same && !last.checkpointed && rest.iter().all(|s| s.checkpointed)).then_some(k)
}

/// A Python snippet that runs these segments with `torch.utils.checkpoint`,
/// for a `model` that is an `nn.Sequential` of the chain's stages whose last
/// module returns the loss from `(activation, target)` (the `remat_torch`
/// convention). `title` goes in the first comment line.
pub fn snippet(segs: &[Segment], title: &str) -> String {
    let n = segs.last().map_or(0, |s| s.last);
    let mut py = String::new();
    let _ = writeln!(py, "# {title}");
    let _ = writeln!(
        py,
        "# model: nn.Sequential of the chain's {n} stages (model[0] is stage 1); the last"
    );
    let _ = writeln!(
        py,
        "# returns the loss from (activation, target). Segments, as model[start:end]:"
    );
    for s in segs {
        let _ = writeln!(py, "#   model[{}:{}]  stages {s}", s.first - 1, s.last);
    }
    if segs.iter().all(|s| !s.checkpointed) {
        let _ = writeln!(
            py,
            "# Nothing is checkpointed (store-all): a plain step is this schedule.\n\
             import torch\n\n\
             def forward_loss(model, x, target):\n    \
                 for module in model[:-1]:\n        \
                     x = module(x)\n    \
                 return model[-1](x, target)\n\n\
             # loss = forward_loss(model, x, target); loss.backward()"
        );
        return py;
    }
    if let Some(k) = sequential_k(segs) {
        let _ = writeln!(
            py,
            "# These are checkpoint_sequential's segments for k = {k}: a model whose last\n\
             # module takes one input can also run checkpoint_sequential(model, {k}, x, use_reentrant=False)."
        );
    }
    let list: Vec<String> = segs
        .iter()
        .map(|s| {
            format!(
                "({}, {}, {})",
                s.first - 1,
                s.last,
                if s.checkpointed { "True" } else { "False" }
            )
        })
        .collect();
    let _ = write!(
        py,
        "import torch\n\
         from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop\n\n\
         SEGMENTS = [{}]  # (start, end, checkpointed)\n\n\
         def run_segment(model, start, end, x, target):\n    \
             for i in range(start, end):\n        \
                 x = model[i](x, target) if i == len(model) - 1 else model[i](x)\n    \
             return x\n\n\
         def forward_loss(model, x, target):\n    \
             for start, end, checkpointed in SEGMENTS:\n        \
                 if checkpointed:\n            \
                     # Early stop off: recompute the whole segment, as the schedule\n            \
                     # (and its predicted time and peak) says.\n            \
                     with set_checkpoint_early_stop(False):\n                \
                         x = checkpoint(run_segment, model, start, end, x, target, use_reentrant=False)\n        \
                 else:\n            \
                     x = run_segment(model, start, end, x, target)\n    \
             return x  # the loss\n\n\
         # loss = forward_loss(model, x, target); loss.backward()\n",
        list.join(", ")
    );
    py
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples;
    use crate::solvers::{solve, Algorithm, Options};

    #[test]
    fn sequential_schedules_read_back_as_their_segments() {
        let chain = examples::teaching();
        let n = chain.len();
        for k in 1..=n {
            let ops = sequential::schedule(&chain, k);
            let segs = segments(&ops).unwrap();
            assert_eq!(schedule(&segs), ops, "k = {k}");
            let expected: Vec<(usize, usize)> = sequential::segments(n, k);
            let got: Vec<(usize, usize)> = segs.iter().map(|s| (s.first, s.last)).collect();
            if k == 1 {
                // One stored segment: store-all.
                assert_eq!(got, vec![(1, n)]);
            } else {
                assert_eq!(got, expected, "k = {k}");
                assert_eq!(sequential_k(&segs), Some(k));
            }
        }
    }

    #[test]
    fn rotor_nesting_and_offloading_are_refused_with_the_op() {
        let chain = examples::teaching();
        // Over budgets from M_low to M_high rotor's schedules are either
        // checkpointed segments (then exported) or nest recomputations
        // (then refused as such); near M_low they nest.
        let low = crate::solvers::persistent::min_budget(
            &chain,
            crate::solvers::persistent::Variant::Rotor,
        );
        let high = crate::solvers::max_useful_budget(&chain);
        let mut nested = 0;
        for i in 0..=20u64 {
            let budget = low + (high - low) * i / 20;
            let options = Options {
                slots: budget as usize / (1 << 20),
                ..Options::default()
            };
            let sol = solve(&chain, Algorithm::Rotor, budget, &options).unwrap();
            let ops = sol.ops.unwrap();
            match segments(&ops) {
                Ok(segs) => assert_eq!(schedule(&segs), ops),
                Err(err @ SegmentsError::Nested { .. }) => {
                    assert!(err.to_string().contains("remat_torch"), "{err}");
                    nested += 1;
                }
                Err(err) => panic!("budget {budget}: {err}"),
            }
        }
        assert!(nested > 0, "no rotor schedule nests recomputations");
        let mut ops = sequential::schedule(&chain, 2);
        ops.insert(
            1,
            Op::Offload {
                stage: 1,
                tensor: crate::schedule::TensorKind::Output,
            },
        );
        assert!(matches!(
            segments(&ops),
            Err(SegmentsError::Offloading { index: 1, .. })
        ));
    }

    #[test]
    fn a_schedule_that_differs_from_its_segments_names_the_op() {
        // Segments 1–2 checkpointed, 3 stored, but the backward recomputes
        // stage 1 twice: not what checkpoint() does.
        let segs = [
            Segment {
                first: 1,
                last: 2,
                checkpointed: true,
            },
            Segment {
                first: 3,
                last: 3,
                checkpointed: false,
            },
        ];
        let mut ops = schedule(&segs);
        let good = ops.clone();
        assert_eq!(segments(&good).unwrap(), segs);
        ops.pop(); // drop B^1: truncated
        let err = segments(&ops).unwrap_err().to_string();
        assert_eq!(
            err,
            "op 7: the checkpointed segments [1–2 checkpointed, 3 stored] would run B^1 here, the schedule runs nothing (the list ends); torch.utils.checkpoint cannot express this schedule; run it with the remat_torch wrapper (docs/pytorch.md)"
        );
    }

    #[test]
    fn the_snippet_lists_the_segments_zero_based() {
        let segs = segments(&sequential::schedule(&examples::teaching(), 3)).unwrap();
        let py = snippet(&segs, "test");
        assert!(
            py.contains("SEGMENTS = [(0, 3, True), (3, 6, True), (6, 10, False)]"),
            "{py}"
        );
        assert!(py.contains("checkpoint_sequential(model, 3, x"), "{py}");
    }
}
