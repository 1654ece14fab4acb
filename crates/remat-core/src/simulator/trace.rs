//! What a simulation reports: lanes, memory curve, residency, totals.

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
    /// The transient overhead of the operation with this index.
    Workspace(usize),
}

impl fmt::Display for TensorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorId::Activation(l) => write!(f, "a^{l}"),
            TensorId::Saved(l) => write!(f, "ā^{l}"),
            TensorId::Gradient(l) => write!(f, "δ^{l}"),
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

    /// Whether the schedule stayed within `budget`: the one definition of
    /// "fits" (peak ≤ budget) that solvers, the CLI and the explorer share.
    pub fn fits(&self, budget: u64) -> bool {
        self.peak_bytes <= budget
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
