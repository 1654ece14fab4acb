//! What a simulation reports: lanes, memory curve, residency, totals.

use crate::model::units::format_bytes;
use crate::schedule::Op;
use serde::Serialize;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Forward and backward operations (the GPU).
    Compute,
    /// Offload and prefetch (PCIe).
    Copy,
}

/// One operation's time on its lane.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Span {
    /// Index of the operation in the schedule.
    pub op: usize,
    pub lane: Lane,
    pub start: f64,
    pub end: f64,
}

/// A tensor held in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", content = "stage", rename_all = "snake_case")]
pub enum TensorId {
    /// a^ℓ.
    Activation(usize),
    /// ā^ℓ.
    Saved(usize),
    /// δ^ℓ.
    Gradient(usize),
    /// g^ℓ: the parameter gradients B^ℓ leaves in `.grad` to the step's end.
    ParameterGradient(usize),
    /// The transient overhead of the operation with this index.
    Workspace(usize),
}

impl fmt::Display for TensorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorId::Activation(l) => write!(f, "a^{l}"),
            TensorId::Saved(l) => write!(f, "ā^{l}"),
            TensorId::Gradient(l) => write!(f, "δ^{l}"),
            TensorId::ParameterGradient(l) => write!(f, "g^{l}"),
            TensorId::Workspace(op) => write!(f, "workspace of op {op}"),
        }
    }
}

/// A tensor's stay on the device, from allocation to free.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Residency {
    pub tensor: TensorId,
    pub bytes: u64,
    pub start: f64,
    /// The makespan if it is still resident at the end.
    pub end: f64,
}

/// Device memory right after an allocation or a free.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemoryStep {
    pub time: f64,
    pub bytes: u64,
    /// The operation whose allocation or free this is; None for the step's
    /// initial state (a^0 and δ^L, at time 0).
    pub op: Option<usize>,
}

/// The chain's memory around one operation, read off the trace
/// ([`Trace::op_memory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OpMemory {
    /// Once the operation ended: its own frees at its end counted, the
    /// events of operations listed after it at that instant not.
    pub after_bytes: u64,
    /// The highest level while it ran: from its start (after the events of
    /// the operations listed before it at that instant) to its end.
    pub peak_bytes: u64,
}

/// The device's contents at the peak: Σ of the residencies' bytes minus
/// `given_back_bytes` is `peak_bytes` ([`Trace::peak_tensors`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AtPeak {
    /// Indices into [`Trace::residency`], in allocation order.
    pub residencies: Vec<usize>,
    /// Bytes of δ^ℓ and ā^ℓ autograd had already freed inside a running
    /// B^ℓ (a negative o_b), still counted in their residencies.
    pub given_back_bytes: u64,
}

/// When an offload's device copy leaves memory in the simulation, said as
/// a runtime can act on it: right after operation `after`, the last compute
/// operation listed after the offload that starts before the copy ends
/// (the offload itself when none does: freed at once). A runtime running
/// the operations one after the other and freeing it there, not when it
/// issues the copy, holds the simulator's level at every compute
/// operation's start, where the simulator allocates
/// ([`Trace::offload_frees`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadFree {
    /// The offload's index in the schedule.
    pub offload: usize,
    pub after: usize,
}

/// Everything the simulator measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trace {
    /// One span per operation, in schedule order.
    pub spans: Vec<Span>,
    /// The memory curve, one step per allocation or free, in time order.
    pub memory: Vec<MemoryStep>,
    /// Which tensor was on the device when (for stacked memory charts).
    pub residency: Vec<Residency>,
    pub peak_bytes: u64,
    pub peak_time: f64,
    /// The operation whose allocation reached the peak (None: the initial state).
    pub peak_op: Option<usize>,
    /// Where the peak comes from: what was on the device at that moment.
    pub at_peak: AtPeak,
    pub makespan_seconds: f64,
    pub compute_busy_seconds: f64,
    /// Time the compute lane waits (for transfers, or after its last op).
    pub idle_seconds: f64,
    /// Forward operations beyond the first of each stage.
    pub recomputations: usize,
    pub offloaded_bytes: u64,
    pub prefetched_bytes: u64,
    /// Σ u_f + u_b: the time with no memory limit.
    pub sequential_seconds: f64,
    /// Device memory left at the end (δ^0 and whatever was not freed).
    pub final_bytes: u64,
}

impl Trace {
    /// makespan / sequential − 1: the price of the memory savings. Sums in
    /// another order differ in the last bits; that is not an overhead.
    pub fn overhead(&self) -> f64 {
        if self.sequential_seconds <= 0.0 {
            return 0.0;
        }
        let ratio = self.makespan_seconds / self.sequential_seconds - 1.0;
        if ratio.abs() < 1e-12 {
            0.0
        } else {
            ratio
        }
    }

    /// Where each offload of `ops` (the schedule this trace ran) frees its
    /// device copy, in schedule order ([`OffloadFree`]). Compute operations
    /// run in list order, so their starts grow and the last that starts
    /// before the copy's end is found by bisection: O(k log n) for k
    /// offloads.
    pub fn offload_frees(&self, ops: &[Op]) -> Vec<OffloadFree> {
        let compute: Vec<(usize, f64)> = (self.spans.iter())
            .filter(|s| {
                (ops.get(s.op))
                    .is_some_and(|op| op.is_forward() || matches!(op, Op::Backward { .. }))
            })
            .map(|s| (s.op, s.start))
            .collect();
        (self.spans.iter())
            .filter(|s| matches!(ops.get(s.op), Some(Op::Offload { .. })))
            .map(|s| {
                let first = compute.partition_point(|&(i, _)| i < s.op);
                let running = compute[first..].partition_point(|&(_, start)| start < s.end);
                OffloadFree {
                    offload: s.op,
                    after: match running {
                        0 => s.op,
                        k => compute[first + k - 1].0,
                    },
                }
            })
            .collect()
    }

    /// Whether the schedule stayed within `budget`: the one definition of
    /// "fits" (peak ≤ budget) that solvers, the CLI and the explorer share.
    pub fn fits(&self, budget: u64) -> bool {
        self.peak_bytes <= budget
    }

    /// The memory after each operation and the highest during it, in
    /// schedule order: what a runtime that measures op by op compares with
    /// (`remat simulate --measured`). Read off the one memory curve, so it
    /// agrees with the peak: the largest `peak_bytes` is `peak_bytes`
    /// unless the peak is the initial state. Events at one instant are in
    /// the order of the operations that caused them, so an operation's
    /// window is a slice of the curve. O(n log m).
    pub fn op_memory(&self) -> Vec<OpMemory> {
        let steps = &self.memory;
        // A step's place: its time, then its operation (None first).
        let rank = |s: &MemoryStep| s.op.map_or(0, |o| o + 1);
        let upto = |time: f64, op_rank: usize| {
            steps.partition_point(|s| s.time.total_cmp(&time).then(rank(s).cmp(&op_rank)).is_le())
        };
        let level = |k: usize| if k == 0 { 0 } else { steps[k - 1].bytes };
        self.spans
            .iter()
            .map(|span| {
                // Before: everything up to this operation's start, the
                // operations listed before it at that instant included.
                let before = upto(span.start, span.op);
                let after = upto(span.end, span.op + 1).max(before);
                let peak = steps[before..after]
                    .iter()
                    .map(|s| s.bytes)
                    .fold(level(before), u64::max);
                OpMemory {
                    after_bytes: level(after),
                    peak_bytes: peak,
                }
            })
            .collect()
    }

    /// The tensors on the device at the peak, largest first (ties in
    /// allocation order): the answer to "why this much?". With
    /// [`AtPeak::given_back_bytes`] they sum to the peak.
    pub fn peak_tensors(&self) -> Vec<Residency> {
        let mut out: Vec<Residency> = (self.at_peak.residencies.iter())
            .map(|&r| self.residency[r])
            .collect();
        out.sort_by_key(|r| std::cmp::Reverse(r.bytes));
        out
    }

    /// [`peak_tensors`](Self::peak_tensors) named for people: `a^3`, `ā^3`,
    /// `δ^3`, or `workspace of F_all^3` (an operation's transient, named by
    /// its operation in `ops`, the schedule simulated), largest first. The
    /// parameter gradients are one entry, `parameter gradients of B^4…B^9`:
    /// one per stage would crowd out the tensors a plan decides on.
    pub fn peak_named(&self, ops: &[Op]) -> Vec<(String, u64)> {
        let (gradients, tensors): (Vec<Residency>, Vec<Residency>) = (self.peak_tensors())
            .into_iter()
            .partition(|r| matches!(r.tensor, TensorId::ParameterGradient(_)));
        let mut named: Vec<(String, u64)> = (tensors.iter())
            .map(|r| {
                let name = match r.tensor {
                    TensorId::Workspace(i) => ops
                        .get(i)
                        .map_or_else(|| r.tensor.to_string(), |op| format!("workspace of {op}")),
                    other => other.to_string(),
                };
                (name, r.bytes)
            })
            .collect();
        let stages: Vec<usize> = (gradients.iter())
            .filter_map(|r| match r.tensor {
                TensorId::ParameterGradient(l) => Some(l),
                _ => None,
            })
            .collect();
        if let (Some(&low), Some(&high)) = (stages.iter().min(), stages.iter().max()) {
            let bytes = gradients.iter().map(|r| r.bytes).sum();
            let which = if low == high {
                format!("B^{low}")
            } else {
                format!("B^{low}…B^{high}")
            };
            let at = named.partition_point(|(_, b)| *b >= bytes);
            named.insert(at, (format!("parameter gradients of {which}"), bytes));
        }
        named
    }

    /// Where the peak comes from, in one line: the operation that reached
    /// it and the six largest tensors then (`during B^9: ā^9 128 MiB, a^0
    /// 64.0 MiB, …`), the CLI's `at peak` and the explorer's.
    pub fn peak_line(&self, ops: &[Op]) -> String {
        const SHOWN: usize = 6;
        let named = self.peak_named(ops);
        let mut parts: Vec<String> = (named.iter().take(SHOWN))
            .map(|(name, bytes)| format!("{name} {}", format_bytes(*bytes)))
            .collect();
        if named.len() > SHOWN {
            let rest: u64 = named[SHOWN..].iter().map(|(_, b)| b).sum();
            parts.push(format!(
                "{} more {}",
                named.len() - SHOWN,
                format_bytes(rest)
            ));
        }
        if self.at_peak.given_back_bytes > 0 {
            parts.push(format!(
                "− {} already freed inside the backward",
                format_bytes(self.at_peak.given_back_bytes)
            ));
        }
        let during = (self.peak_op.and_then(|i| ops.get(i)))
            .map_or_else(|| "at the start".to_string(), |op| format!("during {op}"));
        format!("{during}: {}", parts.join(", "))
    }

    /// Tensors on the device at `time` (residencies with start ≤ time < end).
    pub fn resident_at(&self, time: f64) -> Vec<Residency> {
        self.residency
            .iter()
            .filter(|r| r.start <= time && time < r.end)
            .copied()
            .collect()
    }
}
