//! `remat export`: a schedule in the forms people run without Remat.
//!
//! **Segments** (`--to pytorch-segments`). `torch.utils.checkpoint.checkpoint(run, x)`
//! on a run of consecutive stages s..=t is, in the op language of
//! docs/model.md, F_ck^s then F_∅^{s+1..=t} in the forward pass (only the
//! segment's input is kept), and in the backward pass F_all^{s..=t} (the
//! recomputation with its graph) followed by B^t … B^s. A stage outside every
//! checkpoint runs F_all in the forward pass and B in the backward pass.
//! `checkpoint_sequential(model, k, x)` is the case where every segment but
//! the last is checkpointed.
//!
//! A schedule is exported only when it *is* such a schedule, op for op: the
//! segments are read off its forward pass, the canonical schedule of those
//! segments is rebuilt, and the two lists must be equal. Anything else —
//! rotor's and revolve's nested recomputations (a checkpoint taken while
//! recomputing inside the backward pass), a stage recomputed twice,
//! offloading — is refused with the first operation that differs and why,
//! pointing to the `remat_torch` wrapper, which runs any schedule.
//!
//! **Nested regions** (`--to pytorch`, [`regions`]). Non-reentrant
//! checkpoints nest: a checkpoint taken inside another one's function saves
//! its input to the outer one (so the outer recomputation makes it again) and
//! its own saved tensors to itself (PyTorch's note "Nestable Checkpoint" in
//! `torch/utils/checkpoint.py`). With early stop off, a region over stages
//! s..=t whose function runs a sequence of stored stages and inner regions
//! is, in the op language: F_ck^s F_∅^{s+1..=t} in the forward pass; in the
//! backward pass, when autograd first reaches it, the whole sequence again
//! (stored stages F_all, inner regions F_ck/F_∅), then, from its last item
//! back, B^j for a stored stage and the same rule for an inner region. That
//! is exactly the shape of rotor's recursion (a persistent schedule: `F_all^s`
//! then the rest, or `F_ck^s … F_∅^{s′−1}`, the rest, then s..s′−1 again), so
//! rotor's, revolve's, `sequential`'s, store-all's and hong's schedules are
//! read as a tree of regions and rebuilt op for op, with no rounding: a
//! stage nested d deep runs d + 1 forwards in the plan and in PyTorch alike.
//! Offloads and releases are refused with the op.
//!
//! **What differs is the cost, not the list** ([`lowered_chain`]).
//! Non-reentrant checkpoint runs a region's forward with grad mode on and
//! throws away what autograd saves: every F_ck and F_∅ records a graph, so
//! it takes u_f, not the no-grad time; its memory is the no-grad forward's
//! liveness (nothing saved stays) with the recording kernels. The export
//! simulates the same list on the chain with u_f∅ := u_f and
//! o_f∅ := max(o_f, o_f∅), and calls the export exact only when peak and
//! time equal the plan's.

use crate::model::Chain;
use crate::schedule::segments::{schedule, Segment};
use crate::schedule::Op;
use crate::simulator::{judge, SimError, Trace};
use crate::solvers::sequential;
use std::fmt::Write as _;

/// Why a schedule cannot be written as checkpointed segments.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SegmentsError {
    #[error("the schedule has no operations")]
    Empty,
    #[error("op {index} ({op}) moves a tensor to or from the host: torch.utils.checkpoint cannot offload; run this schedule with the remat_torch wrapper (docs/pytorch.md)")]
    Offloading { index: usize, op: Op },
    #[error("op {index} ({op}) runs option {option} of the stage's menu (a selective-checkpointing policy): checkpointed segments run classic forwards only; run this schedule with the remat_torch wrapper (docs/pytorch.md)")]
    MenuOption { index: usize, op: Op, option: u8 },
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
    if let Some((index, &op)) = ops
        .iter()
        .enumerate()
        .find(|(_, op)| matches!(op, Op::ForwardAll { option, .. } if *option > 0))
    {
        let option = match op {
            Op::ForwardAll { option, .. } => option,
            _ => 0,
        };
        return Err(SegmentsError::MenuOption { index, op, option });
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

/// `[1–4 checkpointed, 5–7 stored]`, for messages.
fn describe(segs: &[Segment]) -> String {
    let parts: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
    format!("[{}]", parts.join(", "))
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
            "# These are checkpoint_sequential's segments for k = {k}; checkpoint_sequential(model, {k}, x)\n\
             # itself would also run them, but would update BatchNorm running statistics a second\n\
             # time in each recomputation: the code below restores them."
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
        "import contextlib\n\
         import torch\n\
         from torch.utils.checkpoint import checkpoint\n\n\
         SEGMENTS = [{}]  # (start, end, checkpointed)\n\n\
         def run_segment(model, start, end, x, target):\n    \
             for i in range(start, end):\n        \
                 x = model[i](x, target) if i == len(model) - 1 else model[i](x)\n    \
             return x\n\n\
         @contextlib.contextmanager\n\
         def restoring(buffers):\n    \
             # A recomputation must not update BatchNorm's running statistics a second\n    \
             # time: they are put back as they were (one update per step, as a plain step).\n    \
             saved = [b.detach().clone() for b in buffers]\n    \
             try:\n        \
                 yield\n    \
             finally:\n        \
                 with torch.no_grad():\n            \
                     for b, old in zip(buffers, saved):\n                \
                         b.copy_(old)\n\n\
         def norm_buffers(modules):\n    \
             return [b for m in modules for sub in m.modules()\n            \
                     if isinstance(sub, torch.nn.modules.batchnorm._NormBase) and sub.track_running_stats\n            \
                     for b in (sub.running_mean, sub.running_var, sub.num_batches_tracked) if b is not None]\n\n\
         def forward_loss(model, x, target):\n    \
             for start, end, checkpointed in SEGMENTS:\n        \
                 if checkpointed:\n            \
                     buffers = norm_buffers(model[start:end])\n            \
                     # Early stop off: recompute the whole segment, as the schedule\n            \
                     # (and its predicted time and peak) says.\n            \
                     x = checkpoint(run_segment, model, start, end, x, target, use_reentrant=False,\n                           \
                                    early_stop=False,\n                           \
                                    context_fn=lambda b=buffers: (contextlib.nullcontext(), restoring(b)))\n        \
                 else:\n            \
                     x = run_segment(model, start, end, x, target)\n    \
             return x  # the loss\n\n\
         # loss = forward_loss(model, x, target); loss.backward()\n",
        list.join(", ")
    );
    py
}

/// A checkpoint region: the consecutive stages `first..=last` run by one
/// non-reentrant `torch.utils.checkpoint` call (early stop off). Its
/// recomputation runs the stages again as a sequence in which `regions`
/// (in stage order, inside `first..=last`) are checkpointed once more and
/// every other stage is stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Region {
    pub first: usize,
    pub last: usize,
    pub regions: Vec<Region>,
}

impl Region {
    /// A region of one stage, nothing nested: a per-module wrapper.
    pub fn single(stage: usize) -> Region {
        Region {
            first: stage,
            last: stage,
            regions: Vec::new(),
        }
    }
}

/// Why a schedule cannot be written as nested checkpoint regions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    #[error("the schedule has no operations")]
    Empty,
    #[error("op {index} ({op}) moves a tensor to or from the host: stock PyTorch's checkpoint cannot offload (torch.autograd.graph.save_on_cpu copies every saved tensor at once, in the compute stream, with no prefetch); run this schedule with remat_torch.checkpointed (docs/pytorch.md)")]
    Offloading { index: usize, op: Op },
    #[error("op {index} ({op}) releases a tensor (a dynamic runtime's eviction): stock PyTorch's checkpoint cannot forget a tensor it holds; run this schedule with remat_torch.checkpointed (docs/pytorch.md)")]
    Release { index: usize, op: Op },
    #[error("op {index} ({op}) runs option {option} of the stage's menu (a selective-checkpointing policy) inside the checkpoint region {first}–{last}: the export writes a stage's policy only where no region recomputes it (a selective checkpoint nested in a region is not lowered); run this schedule with remat_torch.checkpointed, which runs each option with its policy (docs/pytorch.md)")]
    MenuOption {
        index: usize,
        op: Op,
        option: u8,
        first: usize,
        last: usize,
    },
    #[error("op {index}: the nested checkpoint regions {regions} would run {expected} here, the schedule runs {found}; stock PyTorch's checkpoint cannot express this schedule; run it with remat_torch.checkpointed (docs/pytorch.md)")]
    Differs {
        index: usize,
        regions: String,
        expected: String,
        found: String,
    },
}

/// Reads a schedule over stages `1..=stages` as nested checkpoint regions
/// (the top-level ones, in stage order; stages outside them are stored),
/// or says which operation no such tree runs.
///
/// The tree is read greedily, op by op, exactly as [`regions_schedule`]
/// writes it; at the first operation that does not fit, the rest of the
/// tree is filled with stored stages. The tree's own list is then compared
/// with the schedule, so the first difference is that operation (or a
/// missing or extra one at the end).
pub fn regions(ops: &[Op], stages: usize) -> Result<Vec<Region>, LowerError> {
    if ops.is_empty() {
        return Err(LowerError::Empty);
    }
    for (index, &op) in ops.iter().enumerate() {
        match op {
            Op::Offload { .. } | Op::Prefetch { .. } => {
                return Err(LowerError::Offloading { index, op })
            }
            Op::Release { .. } => return Err(LowerError::Release { index, op }),
            _ => {}
        }
    }
    // Menu options are read apart: the tree is read from the classic ops,
    // then each option must sit on a stage no region recomputes, where the
    // stage's policy wraps its one F_all (`with_options`).
    let classic: Vec<Op> = ops
        .iter()
        .map(|&op| match op {
            Op::ForwardAll { stage, .. } => Op::forward_all(stage),
            other => other,
        })
        .collect();
    let tree = read_regions(&classic, stages)?;
    for (index, &op) in ops.iter().enumerate() {
        if let Op::ForwardAll { stage, option } = op {
            if let Some(r) = tree
                .iter()
                .find(|r| option > 0 && (r.first..=r.last).contains(&stage))
            {
                return Err(LowerError::MenuOption {
                    index,
                    op,
                    option,
                    first: r.first,
                    last: r.last,
                });
            }
        }
    }
    Ok(tree)
}

/// `ops` with each F_all of a stage in `options` (stage, option) running
/// that option: the lowered list of a plan whose options sit on stages no
/// region recomputes (each such stage has one F_all).
pub fn with_options(mut ops: Vec<Op>, options: &[(usize, u8)]) -> Vec<Op> {
    for op in &mut ops {
        if let Op::ForwardAll { stage, option } = op {
            if let Some(&(_, k)) = options.iter().find(|(l, _)| l == stage) {
                *option = k;
            }
        }
    }
    ops
}

/// [`regions`] on a list with classic F_all only.
fn read_regions(ops: &[Op], stages: usize) -> Result<Vec<Region>, LowerError> {
    let mut reader = Reader {
        ops,
        pos: 0,
        stuck: false,
        depth_left: stages.saturating_add(1),
    };
    let tree = reader.sequence(1, stages);
    let rebuilt = regions_schedule(&tree, stages);
    let show = |op: Option<&Op>| op.map_or("nothing (the list ends)".to_string(), Op::to_string);
    for i in 0..rebuilt.len().max(ops.len()) {
        if rebuilt.get(i) != ops.get(i) {
            return Err(LowerError::Differs {
                index: i,
                regions: describe_regions(&tree),
                expected: show(rebuilt.get(i)),
                found: show(ops.get(i)),
            });
        }
    }
    Ok(tree)
}

/// The greedy reader of [`regions`]: `stuck` once an operation does not fit,
/// after which nothing more is consumed and every stage reads as stored.
struct Reader<'a> {
    ops: &'a [Op],
    pos: usize,
    stuck: bool,
    /// Nesting deeper than the chain is long is no schedule's (a region of
    /// one stage nested in itself again and again); it stops the reader
    /// before the stack does.
    depth_left: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<Op> {
        if self.stuck {
            None
        } else {
            self.ops.get(self.pos).copied()
        }
    }

    fn take(&mut self, want: Op) {
        if self.peek() == Some(want) {
            self.pos += 1;
        } else {
            self.stuck = true;
        }
    }

    /// The sequence over `a..=b`: its forwards, then its items backwards.
    fn sequence(&mut self, a: usize, b: usize) -> Vec<Region> {
        let mut regions = Vec::new();
        let mut c = a;
        while c <= b {
            match self.peek() {
                Some(Op::ForwardAll { stage, .. }) if stage == c => {
                    self.pos += 1;
                    c += 1;
                }
                Some(Op::ForwardCheckpoint { stage }) if stage == c && self.depth_left > 0 => {
                    self.pos += 1;
                    let mut last = c;
                    while last < b && self.peek() == Some(Op::ForwardNone { stage: last + 1 }) {
                        self.pos += 1;
                        last += 1;
                    }
                    regions.push(Region {
                        first: c,
                        last,
                        regions: Vec::new(),
                    });
                    c = last + 1;
                }
                _ => {
                    self.stuck = true;
                    c += 1;
                }
            }
        }
        let mut c = b;
        let mut next = regions.len();
        while c >= a && c > 0 {
            if next > 0 && regions[next - 1].last == c {
                next -= 1;
                let (first, last) = (regions[next].first, regions[next].last);
                self.depth_left -= 1;
                regions[next].regions = self.sequence(first, last);
                self.depth_left += 1;
                c = first - 1;
            } else {
                self.take(Op::Backward { stage: c });
                c -= 1;
            }
        }
        regions
    }
}

/// The list of operations nested non-reentrant checkpoints with early stop
/// off run for `regions` over stages `1..=stages` (module doc).
pub fn regions_schedule(regions: &[Region], stages: usize) -> Vec<Op> {
    let mut ops = Vec::new();
    sequence_ops(regions, 1, stages, &mut ops);
    ops
}

fn sequence_ops(regions: &[Region], a: usize, b: usize, ops: &mut Vec<Op>) {
    let mut c = a;
    let mut inner = regions.iter().peekable();
    while c <= b {
        match inner.next_if(|r| r.first == c) {
            Some(r) => {
                ops.push(Op::ForwardCheckpoint { stage: c });
                ops.extend((c + 1..=r.last).map(|stage| Op::ForwardNone { stage }));
                c = r.last + 1;
            }
            None => {
                ops.push(Op::forward_all(c));
                c += 1;
            }
        }
    }
    let mut c = b;
    let mut inner = regions.iter().rev().peekable();
    while c >= a && c > 0 {
        match inner.next_if(|r| r.last == c) {
            Some(r) => {
                sequence_ops(&r.regions, r.first, r.last, ops);
                c = r.first - 1;
            }
            None => {
                ops.push(Op::Backward { stage: c });
                c -= 1;
            }
        }
    }
}

/// `2–9 {2–3, 5–6 {5}}`: the regions, the nested ones in braces.
pub fn describe_regions(regions: &[Region]) -> String {
    if regions.is_empty() {
        return "none (store-all)".to_string();
    }
    let parts: Vec<String> = regions
        .iter()
        .map(|r| {
            let range = if r.first == r.last {
                r.first.to_string()
            } else {
                format!("{}–{}", r.first, r.last)
            };
            if r.regions.is_empty() {
                range
            } else {
                format!("{range} {{{}}}", describe_regions(&r.regions))
            }
        })
        .collect();
    parts.join(", ")
}

/// The stages inside some region (recomputed in the backward pass), ascending.
pub fn recomputed_stages(regions: &[Region]) -> Vec<usize> {
    regions.iter().flat_map(|r| r.first..=r.last).collect()
}

/// How deep the regions nest (0: none, 1: no region inside another).
pub fn nesting_depth(regions: &[Region]) -> usize {
    regions
        .iter()
        .map(|r| 1 + nesting_depth(&r.regions))
        .max()
        .unwrap_or(0)
}

/// `checkpoint_sequential(model, k, x)` as regions: PyTorch's split
/// ([`sequential::segments`]), every segment but the last checkpointed.
pub fn sequential_regions(stages: usize, k: usize) -> Vec<Region> {
    let segs = sequential::segments(stages, k);
    segs[..segs.len() - 1]
        .iter()
        .map(|&(first, last)| Region {
            first,
            last,
            regions: Vec::new(),
        })
        .collect()
}

/// ⌈√L⌉, the number of segments people give `checkpoint_sequential`.
pub fn sqrt_segments(stages: usize) -> usize {
    let mut k = (stages as f64).sqrt().ceil() as usize;
    while k > 1 && (k - 1) * (k - 1) >= stages {
        k -= 1;
    }
    while k * k < stages {
        k += 1;
    }
    k.max(1)
}

/// A parameter that several stages use (tied weights: GPT-2's `lm_head`
/// and `wte`). One backward over the whole graph — what stock PyTorch runs
/// for a plain step and for its checkpoints alike — sums its gradient in
/// autograd's buffer: the part B^`last` computes waits there, outside
/// `.grad`, until B^`first` adds its own, so `bytes` more are held from
/// B^last to the end of B^first. `remat_torch` runs each B^ℓ as its own
/// backward, which accumulates into `.grad` at once (outside the budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SharedGradient {
    pub first: usize,
    pub last: usize,
    pub bytes: u64,
}

/// The chain as stock PyTorch runs a checkpoint region's forwards: with
/// grad mode on and the saved tensors thrown away (module doc). Every
/// F_ck^ℓ and F_∅^ℓ takes u_f^ℓ (a graph is recorded) and holds
/// max(o_f^ℓ, o_f∅^ℓ): nothing saved stays, as in the no-grad forward whose
/// transient o_f∅ measures, but the framework may pick the recording
/// kernels, whose transient is o_f (another attention kernel, another
/// cuDNN workspace). Where a chain gives neither no-grad figure, this is
/// the chain itself.
///
/// Each [`SharedGradient`] rides on the gradients in between: its bytes
/// are added to δ^j for first ≤ j < last (one of them is resident at every
/// instant from B^last to B^first) and taken from o_b^j for first < j ≤
/// last. So B^j (first < j < last) holds the buffer once although it holds
/// δ^j and δ^{j−1} at once; B^last's own memory is unchanged (its measured
/// transient already holds the weight gradient it computes, until autograd
/// hands it on) and the buffer stays from its end; B^first, whose
/// transient holds its own part, frees the buffer with δ^first.
///
/// Only the buffers the chain does not count already are added (`held_apart`).
pub fn lowered_chain(chain: &Chain, shared: &[SharedGradient]) -> Chain {
    let shared = held_apart(chain, shared);
    let mut lowered = chain.clone();
    for stage in &mut lowered.stages {
        if stage.forward_nograd_seconds.is_some() {
            stage.forward_nograd_seconds = Some(stage.forward_seconds);
        }
        if let Some(nograd) = stage.forward_nograd_overhead_bytes {
            stage.forward_nograd_overhead_bytes = Some(nograd.max(stage.forward_overhead_bytes));
        }
    }
    for s in shared {
        for j in s.first..s.last {
            let stage = &mut lowered.stages[j - 1];
            stage.gradient_bytes = stage.gradient_bytes.saturating_add(s.bytes);
        }
        // Every option's B^j holds the buffer the same way: its o_b^{j,k}
        // gives it back as o_b^j does (else a plan running options counts
        // the buffer twice, once in δ and once in its transient).
        let bytes = i64::try_from(s.bytes).unwrap_or(i64::MAX);
        for j in s.first + 1..=s.last {
            let stage = &mut lowered.stages[j - 1];
            stage.backward_overhead_bytes = stage.backward_overhead_bytes.saturating_sub(bytes);
            for option in &mut stage.menu {
                option.backward_overhead_bytes =
                    option.backward_overhead_bytes.saturating_sub(bytes);
            }
            // ι^j stays within what B^j now leaves (`Chain::validate`).
            let room = (0..stage.option_count())
                .map(|k| stage.backward_room(k))
                .min()
                .unwrap_or(0)
                .max(0);
            stage.input_freed_bytes = stage.input_freed_bytes.min(room as u64);
        }
    }
    lowered
}

/// The shared gradients whose autograd buffer the chain does not count
/// already: all of them, unless the chain counts the parameter gradients
/// (g^ℓ, `zero_grad(set_to_none=True)`), which has each in g^last from
/// B^last to the step's end — the buffer is the `.grad` it becomes, and
/// adding it again would count it twice (a GPT-2's lowered forms 6–10 %
/// above their measured peaks).
fn held_apart<'a>(chain: &Chain, shared: &'a [SharedGradient]) -> &'a [SharedGradient] {
    if chain.counts_parameter_gradients() {
        &[]
    } else {
        shared
    }
}

/// What the lowered form of `ops` does differently from the plan on
/// `chain`, one sentence each (empty: nothing, the same list at the same
/// costs).
pub fn differences(chain: &Chain, ops: &[Op], shared: &[SharedGradient]) -> Vec<String> {
    let lowered = lowered_chain(chain, &[]);
    let nograd = |op: &&Op| matches!(op, Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. });
    let (mut slower, mut count, mut seconds) = (0, 0, 0.0);
    let mut heavier: Vec<usize> = Vec::new();
    for op in ops.iter().filter(nograd) {
        let l = op.stage();
        let (plan, low) = (chain.stage(l), lowered.stage(l));
        count += 1;
        if low.nograd_forward_seconds() != plan.nograd_forward_seconds() {
            slower += 1;
            seconds += low.nograd_forward_seconds() - plan.nograd_forward_seconds();
        }
        if low.nograd_forward_overhead() != plan.nograd_forward_overhead() && !heavier.contains(&l)
        {
            heavier.push(l);
        }
    }
    let mut out = Vec::new();
    if slower > 0 {
        out.push(format!(
            "{slower} of the {count} forwards the plan runs without a graph (F_ck, F_∅) record one under non-reentrant checkpoint, which runs a region with grad on and discards what it saves: they take the recording time u_f, {} in all",
            signed_seconds(seconds)
        ));
    }
    if !heavier.is_empty() {
        heavier.sort_unstable();
        let list: Vec<String> = heavier.iter().map(usize::to_string).collect();
        out.push(format!(
            "the checkpointed forwards of stage{} {} may use the recording kernels: their transient is taken as max(o_f, o_f∅) rather than o_f∅",
            if heavier.len() == 1 { "" } else { "s" },
            list.join(", ")
        ));
    }
    for g in held_apart(chain, shared) {
        out.push(format!(
            "a parameter of stages {} and {} (tied weights) has its gradient summed in autograd's buffer: {} held from the end of B^{} to B^{} (one backward over the whole graph)",
            g.first,
            g.last,
            crate::model::units::format_bytes(g.bytes),
            g.last,
            g.first
        ));
    }
    out
}

fn signed_seconds(s: f64) -> String {
    let text = crate::model::units::format_seconds(s.abs());
    if s < 0.0 {
        format!("−{text}")
    } else {
        format!("+{text}")
    }
}

/// Stages that are one block each of a repeated list (`transformer.h.3`,
/// `model.layers.0`, `layer2.1`): the chain's `module` is one name ending in
/// `.N`, and another stage's module shares its prefix. These are the
/// modules a framework's per-layer switch can checkpoint (transformers'
/// decoder layers); ascending.
pub fn layer_stages(chain: &Chain) -> Vec<usize> {
    let prefix = |l: usize| -> Option<&str> {
        let module = chain.stage(l).module.as_deref()?;
        if module.contains('+') {
            return None;
        }
        let (head, index) = module.rsplit_once('.')?;
        (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit())).then_some(head)
    };
    (1..=chain.len())
        .filter(|&l| {
            prefix(l).is_some_and(|p| (1..=chain.len()).any(|m| m != l && prefix(m) == Some(p)))
        })
        .collect()
}

/// Stages a per-module wrapper can checkpoint alone: those whose `module`
/// is one name. A stage of several modules (`conv1+bn1+relu+maxpool`,
/// GPT-2's `transformer.wte+transformer.wpe+transformer.drop`) has no one
/// module to wrap; only a range region can take it, and only where the
/// model's forward calls its modules as a chain. A chain that names no
/// module at all: every stage (the user wraps them). Ascending.
pub fn per_module_stages(chain: &Chain) -> Vec<usize> {
    let named = chain.stages.iter().any(|s| s.module.is_some());
    (1..=chain.len())
        .filter(|&l| match &chain.stage(l).module {
            Some(m) => !m.contains('+'),
            None => !named,
        })
        .collect()
}

/// One form of the step, judged by the simulator.
#[derive(Clone, Debug)]
pub struct Judged {
    pub regions: Vec<Region>,
    pub ops: Vec<Op>,
    pub trace: Trace,
}

/// Judges the regions' list on the lowered chain at `budget` (what stock
/// PyTorch runs for them).
pub fn judge_regions(
    chain: &Chain,
    shared: &[SharedGradient],
    regions: Vec<Region>,
    options: &[(usize, u8)],
    budget: u64,
) -> Result<Judged, SimError> {
    let ops = with_options(regions_schedule(&regions, chain.len()), options);
    let trace = judge(&lowered_chain(chain, shared), &ops, budget, None)?;
    Ok(Judged {
        regions,
        ops,
        trace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples;
    use crate::simulator::judge;
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
    fn menu_options_lower_where_no_region_recomputes_the_stage() {
        // Could fail if the options were dropped from the lowered list (the
        // judged peak would be the classic one) or if an option inside a
        // region were lowered (PyTorch would not run what the plan says).
        let chain = examples::gpt2_sac();
        let high = crate::solvers::max_useful_budget(&chain);
        let mut lowered = 0;
        for i in 1..=20u64 {
            let budget = high / 2 + high / 2 * i / 20;
            let sol = solve(&chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
            let ops = sol.ops.unwrap();
            let options = crate::schedule::menu_choices(&ops);
            match regions(&ops, chain.len()) {
                Ok(tree) => {
                    let rebuilt = with_options(regions_schedule(&tree, chain.len()), &options);
                    assert_eq!(rebuilt, ops, "budget {budget}");
                    lowered += usize::from(!options.is_empty());
                }
                Err(LowerError::MenuOption {
                    first, last, op, ..
                }) => {
                    assert!((first..=last).contains(&op.stage()));
                }
                Err(e) => panic!("budget {budget}: {e}"),
            }
        }
        assert!(lowered > 0, "no plan with options lowered");
        // An option inside a region is refused, naming the region.
        let ops = vec![
            Op::ForwardCheckpoint { stage: 1 },
            Op::forward_all(2),
            Op::Backward { stage: 2 },
            Op::ForwardAll {
                stage: 1,
                option: 1,
            },
            Op::Backward { stage: 1 },
        ];
        let err = regions(&ops, 2).unwrap_err();
        assert!(
            matches!(
                err,
                LowerError::MenuOption {
                    index: 3,
                    first: 1,
                    last: 1,
                    ..
                }
            ),
            "{err}"
        );
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
        assert!(py.contains("checkpoint_sequential(model, 3, x)"), "{py}");
        assert!(py.contains("context_fn="), "{py}");
    }

    /// The chains the lowering is tried on: hand-made, analytic and
    /// measured, short and long.
    fn lowering_chains() -> Vec<Chain> {
        ["teaching", "resnet50", "gpt2", "gpt2-h100-math"]
            .iter()
            .map(|name| examples::by_name(name).unwrap())
            .chain([examples::synthetic(16)])
            .collect()
    }

    #[test]
    fn rotor_and_revolve_schedules_read_as_nested_regions_and_rebuild_exactly() {
        // Could fail if a persistent schedule had a shape that nested
        // non-reentrant checkpoints do not run (the reader would refuse
        // it), or if the rebuilt list differed from the schedule anywhere.
        // Mutation tried: `sequence_ops` recomputing a region with its
        // nested regions left out (stored): every nested schedule was
        // refused at the first checkpoint taken while recomputing.
        let mut nested = 0;
        for chain in lowering_chains() {
            let low = crate::solvers::persistent::min_budget(
                &chain,
                crate::solvers::persistent::Variant::Rotor,
            );
            let high = crate::solvers::max_useful_budget(&chain);
            for algorithm in [Algorithm::Rotor, Algorithm::Revolve] {
                for i in 0..=12u64 {
                    let budget = low + (high - low) * i / 12;
                    let sol = solve(&chain, algorithm, budget, &Options::default()).unwrap();
                    let Some(ops) = sol.ops else { continue };
                    let tree = regions(&ops, chain.len()).unwrap_or_else(|e| {
                        panic!("{} {algorithm:?} at {budget}: {e}", chain.name)
                    });
                    assert_eq!(regions_schedule(&tree, chain.len()), ops);
                    if nesting_depth(&tree) > 1 {
                        nested += 1;
                    }
                }
            }
        }
        assert!(nested > 10, "only {nested} schedules nest regions");
    }

    #[test]
    fn sequential_store_all_and_hong_schedules_are_flat_regions() {
        let chain = examples::vgg19();
        let n = chain.len();
        for k in 1..=n {
            let ops = sequential::schedule(&chain, k);
            let tree = regions(&ops, n).unwrap();
            assert_eq!(tree, sequential_regions(n, k), "k = {k}");
            assert_eq!(regions_schedule(&tree, n), ops, "k = {k}");
            assert!(nesting_depth(&tree) <= 1);
        }
        let all = crate::solvers::store_all::schedule(&chain);
        assert!(regions(&all, n).unwrap().is_empty());
        for algorithm in [Algorithm::Hong, Algorithm::HongChen] {
            let budget = crate::solvers::max_useful_budget(&chain);
            let ops = solve(&chain, algorithm, budget, &Options::default())
                .unwrap()
                .ops
                .unwrap();
            let tree = regions(&ops, n).unwrap();
            assert_eq!(nesting_depth(&tree), 1, "{algorithm:?}");
        }
        assert_eq!(sqrt_segments(16), 4);
        assert_eq!(sqrt_segments(17), 5);
        assert_eq!(sqrt_segments(10), 4);
        assert_eq!(sqrt_segments(1), 1);
    }

    #[test]
    fn the_lowered_form_costs_what_the_plan_costs_when_no_grad_is_recording() {
        // With u_f∅ = u_f and o_f∅ = o_f (a chain without no-grad figures,
        // or with them equal) the lowered list is judged exactly as the
        // plan: same trace, "exact". With a faster no-grad forward the
        // lowered form is slower by exactly Σ (u_f − u_f∅) over the F_ck
        // and F_∅ it runs. Mutation tried: `lowered_chain` leaving the
        // no-grad time alone (the second half fails: equal makespans).
        let mut chain = examples::teaching();
        let budget = crate::solvers::persistent::min_budget(
            &chain,
            crate::solvers::persistent::Variant::Rotor,
        );
        let ops = solve(&chain, Algorithm::Rotor, budget, &Options::default())
            .unwrap()
            .ops
            .unwrap();
        let tree = regions(&ops, chain.len()).unwrap();
        assert!(nesting_depth(&tree) > 1);
        let plan = judge(&chain, &ops, budget, None).unwrap();
        let lowered = judge_regions(&chain, &[], tree.clone(), &[], budget).unwrap();
        assert_eq!(lowered.trace, plan);
        assert!(differences(&chain, &ops, &[]).is_empty());
        for s in &mut chain.stages {
            s.forward_nograd_seconds = Some(s.forward_seconds);
            s.forward_nograd_overhead_bytes = Some(s.forward_overhead_bytes);
        }
        assert_eq!(
            judge_regions(&chain, &[], tree.clone(), &[], budget)
                .unwrap()
                .trace,
            plan
        );
        assert!(differences(&chain, &ops, &[]).is_empty());
        for s in &mut chain.stages {
            s.forward_nograd_seconds = Some(s.forward_seconds / 2.0);
        }
        let plan = judge(&chain, &ops, budget, None).unwrap();
        let lowered = judge_regions(&chain, &[], tree, &[], budget).unwrap();
        let extra: f64 = ops
            .iter()
            .filter(|o| matches!(o, Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. }))
            .map(|o| chain.stage(o.stage()).forward_seconds / 2.0)
            .sum();
        assert!((lowered.trace.makespan_seconds - plan.makespan_seconds - extra).abs() < 1e-9);
        assert_eq!(lowered.trace.peak_bytes, plan.peak_bytes);
        let said = differences(&chain, &ops, &[]);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("record one"), "{said:?}");
    }

    #[test]
    fn a_shared_gradient_is_held_from_the_later_backward_to_the_earlier_one() {
        // The lowered chain adds G bytes exactly while autograd's buffer
        // holds them: the memory is the plain chain's, plus G from B^last's
        // end to B^first's end, plus 0 elsewhere (during B^last too); the
        // times are unchanged. Could fail if G were counted twice inside a backward
        // (δ^j and δ^{j−1} both carry it; o_b^j gives one back).
        // Mutation tried: not taking G from o_b^j: the steps inside B^j
        // for first < j < last came out 2G above the plain chain (and G
        // during B^last).
        let chain = examples::teaching();
        let g = 48 << 20;
        let shared = [SharedGradient {
            first: 2,
            last: 8,
            bytes: g,
        }];
        let budget = crate::solvers::max_useful_budget(&chain) * 7 / 10;
        let plans = [
            crate::solvers::store_all::schedule(&chain),
            solve(&chain, Algorithm::Rotor, budget, &Options::default())
                .unwrap()
                .ops
                .unwrap(),
        ];
        for ops in plans {
            assert_held_once(&chain, shared[0], &ops);
        }
        let said = differences(&chain, &[], &shared);
        assert!(
            said[0].contains("48.0 MiB held from the end of B^8 to B^2"),
            "{said:?}"
        );
    }

    /// The lowered chain of `shared` holds its bytes exactly from the end
    /// of B^last to the end of B^first, once, on top of the plain chain.
    fn assert_held_once(chain: &Chain, shared: SharedGradient, ops: &[Op]) {
        let g = shared.bytes;
        let plain = judge(chain, ops, u64::MAX, None).unwrap();
        let lowered = judge(&lowered_chain(chain, &[shared]), ops, u64::MAX, None).unwrap();
        assert_eq!(plain.makespan_seconds, lowered.makespan_seconds);
        let span = |stage: usize| {
            let i = ops
                .iter()
                .position(|o| *o == Op::Backward { stage })
                .unwrap();
            plain.spans[i]
        };
        let (from, to) = (span(shared.last).end, span(shared.first).end);
        // The level after every event of an instant.
        let level = |trace: &Trace, t: f64| {
            trace
                .memory
                .iter()
                .rev()
                .find(|m| m.time <= t)
                .map_or(0, |m| m.bytes)
        };
        let mut held = 0;
        for t in plain.memory.iter().chain(&lowered.memory).map(|m| m.time) {
            let extra = level(&lowered, t) - level(&plain, t);
            if (from..to).contains(&t) {
                assert_eq!(extra, g, "at {t}");
                held += 1;
            } else {
                assert_eq!(extra, 0, "at {t}");
            }
        }
        assert!(held > 0);
    }

    #[test]
    fn a_shared_gradient_is_held_once_by_stages_running_menu_options() {
        // Could fail if an option's B^j kept its own o_b^{j,k} while δ
        // carries the buffer: the buffer counted twice inside every
        // backward that runs an option (the export's prediction of a
        // tied GPT-2 with options was 128 000 B above the measured step).
        // Mutation tried: options' o_b left as they are: `extra` came out
        // 2G inside the blocks' backwards.
        let chain = examples::gpt2_sac();
        let n = chain.len();
        let shared = SharedGradient {
            first: 1,
            last: n,
            bytes: 96 << 20,
        };
        let blocks: Vec<(usize, u8)> = (1..=n)
            .filter(|&l| !chain.stage(l).menu.is_empty())
            .map(|l| (l, 1))
            .collect();
        assert!(blocks.len() >= 2);
        let every_block_option_1 =
            with_options(crate::solvers::store_all::schedule(&chain), &blocks);
        let budget = crate::solvers::max_useful_budget(&chain) * 6 / 10;
        let rotor = solve(&chain, Algorithm::Rotor, budget, &Options::default())
            .unwrap()
            .ops
            .unwrap();
        assert!(!crate::schedule::menu_choices(&rotor).is_empty());
        for ops in [every_block_option_1, rotor] {
            assert_held_once(&chain, shared, &ops);
        }
    }

    #[test]
    fn schedules_no_region_tree_runs_are_refused_naming_the_op() {
        let chain = examples::teaching();
        let n = chain.len();
        // An offload (pofo), a release (dtr): named, with the wrapper.
        let budget = crate::solvers::max_useful_budget(&chain) / 2;
        let options = Options {
            bandwidth_bytes_per_s: Some(12e9),
            ..Options::default()
        };
        let pofo = solve(&chain, Algorithm::Pofo, budget, &options)
            .unwrap()
            .ops
            .unwrap();
        let first = pofo.iter().position(Op::is_transfer).unwrap();
        let err = regions(&pofo, n).unwrap_err();
        assert_eq!(
            err,
            LowerError::Offloading {
                index: first,
                op: pofo[first]
            }
        );
        assert!(
            err.to_string().contains("remat_torch.checkpointed"),
            "{err}"
        );
        let dtr = solve(&chain, Algorithm::Dtr, budget, &Options::default())
            .unwrap()
            .ops
            .unwrap();
        let release = dtr
            .iter()
            .position(|o| matches!(o, Op::Release { .. }))
            .expect("dtr releases at half of M_high");
        assert!(matches!(
            regions(&dtr, n),
            Err(LowerError::Release { index, .. }) if index == release
        ));
        // A stage recomputed by F_ck where the tree stores it: op 11 is the
        // second F_ck^3 of [F_ck^1 F_∅^2 F_∅^3 … ] read back.
        let mut ops = regions_schedule(&[Region::single(1)], n);
        let good = ops.clone();
        assert_eq!(regions(&good, n).unwrap(), vec![Region::single(1)]);
        ops.pop();
        assert_eq!(
            regions(&ops, n).unwrap_err().to_string(),
            format!("op {}: the nested checkpoint regions 1 would run B^1 here, the schedule runs nothing (the list ends); stock PyTorch's checkpoint cannot express this schedule; run it with remat_torch.checkpointed (docs/pytorch.md)", good.len() - 1)
        );
        let mut ops = good.clone();
        ops.swap(0, 1);
        let err = regions(&ops, n).unwrap_err().to_string();
        assert!(
            err.starts_with("op 0: the nested checkpoint regions none (store-all) would run F_all^1 here, the schedule runs F_all^2"),
            "{err}"
        );
        assert_eq!(regions(&[], n), Err(LowerError::Empty));
        // A region nested in itself past the chain's length stops the reader.
        let deep: Vec<Op> =
            std::iter::repeat_n(Op::ForwardCheckpoint { stage: 1 }, 100_000).collect();
        assert!(matches!(regions(&deep, n), Err(LowerError::Differs { .. })));
    }

    #[test]
    fn regions_are_described_with_the_nested_ones_in_braces() {
        let tree = vec![
            Region {
                first: 2,
                last: 9,
                regions: vec![
                    Region {
                        first: 2,
                        last: 3,
                        regions: Vec::new(),
                    },
                    Region {
                        first: 5,
                        last: 6,
                        regions: vec![Region::single(5)],
                    },
                ],
            },
            Region::single(11),
        ];
        assert_eq!(describe_regions(&tree), "2–9 {2–3, 5–6 {5}}, 11");
        assert_eq!(nesting_depth(&tree), 3);
        assert_eq!(recomputed_stages(&tree), vec![2, 3, 4, 5, 6, 7, 8, 9, 11]);
        let ops = regions_schedule(&tree, 12);
        assert_eq!(regions(&ops, 12).unwrap(), tree);
        // Stage 5 is in three regions: four forwards.
        assert_eq!(
            ops.iter()
                .filter(|o| o.is_forward() && o.stage() == 5)
                .count(),
            4
        );
    }

    #[test]
    fn layer_stages_are_the_repeated_blocks_named_in_the_chain() {
        let mut chain = examples::teaching();
        assert!(layer_stages(&chain).is_empty());
        let names = [
            "transformer.wte+transformer.wpe+transformer.drop",
            "transformer.h.0",
            "transformer.h.1",
            "transformer.h.2",
            "transformer.h.10",
            "head.0",
            "transformer.h.x",
            "transformer.ln_f+lm_head",
        ];
        for (stage, name) in chain.stages.iter_mut().zip(names) {
            stage.module = Some(name.to_string());
        }
        assert_eq!(layer_stages(&chain), vec![2, 3, 4, 5]);
        assert_eq!(per_module_stages(&chain), vec![2, 3, 4, 5, 6, 7]);
        chain.stages[7].module = None;
        assert_eq!(per_module_stages(&chain), vec![2, 3, 4, 5, 6, 7]);
        assert_eq!(
            per_module_stages(&examples::teaching()),
            (1..=10).collect::<Vec<_>>()
        );
    }
}
