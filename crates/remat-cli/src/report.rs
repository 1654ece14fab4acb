//! The JSON contract of `docs/cli.md`, one struct per `--json` output.
//!
//! Fields are declared in alphabetical order on purpose: the reports were
//! first written with `serde_json::json!`, whose objects (no
//! `preserve_order`) print their keys sorted, and scripts may have compared
//! the bytes. Keep new fields in that order. The core's own types inside a
//! report (operations, segments) go through [`Sorted`] for the same reason.

use remat_core::simulator::{OpState, TensorId, Trace};
use serde::{Serialize, Serializer};

/// Prints a report as pretty JSON on stdout.
pub fn print(report: &impl Serialize) {
    say!(
        "{}",
        serde_json::to_string_pretty(report).expect("a report serializes")
    );
}

/// A core value whose JSON objects print with their keys sorted, as in a
/// `json!` value.
pub struct Sorted<T>(pub T);

impl<T: Serialize> Serialize for Sorted<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::to_value(&self.0)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

/// What the simulator measured of a schedule at a budget (all None when
/// there is no schedule): the fields every report shares.
#[derive(Clone, Copy, Default)]
pub struct Measured {
    pub feasible: bool,
    pub makespan_seconds: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub overhead: Option<f64>,
    pub recomputations: Option<usize>,
    pub idle_seconds: Option<f64>,
    pub offloaded_bytes: Option<u64>,
    pub prefetched_bytes: Option<u64>,
}

impl Measured {
    pub fn new(trace: Option<&Trace>, budget: u64) -> Measured {
        Measured {
            feasible: trace.is_some_and(|t| t.fits(budget)),
            makespan_seconds: trace.map(|t| t.makespan_seconds),
            peak_bytes: trace.map(|t| t.peak_bytes),
            overhead: trace.map(|t| t.overhead()),
            recomputations: trace.map(|t| t.recomputations),
            idle_seconds: trace.map(|t| t.idle_seconds),
            offloaded_bytes: trace.map(|t| t.offloaded_bytes),
            prefetched_bytes: trace.map(|t| t.prefetched_bytes),
        }
    }
}

/// `remat solve --json`.
#[derive(Serialize)]
pub struct SolveReport<'a> {
    pub algorithm: &'a str,
    pub algorithm_min_bytes: u64,
    /// The offloading algorithms' least is a bound no schedule can beat
    /// (an op's own inputs and outputs), not a budget they were seen to meet.
    pub algorithm_min_is_lower_bound: bool,
    pub bandwidth_bytes_per_s: Option<f64>,
    pub budget_bytes: u64,
    pub chain: &'a str,
    pub detail: &'a str,
    pub feasible: bool,
    pub idle_seconds: Option<f64>,
    pub m_high_bytes: u64,
    pub m_low_bytes: Option<u64>,
    pub makespan_seconds: Option<f64>,
    pub memory: String,
    pub offloaded_bytes: Option<u64>,
    pub ops: Sorted<&'a [remat_core::Op]>,
    pub overhead: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub predicted_peak_bytes: Option<u64>,
    pub predicted_seconds: Option<f64>,
    pub prefetched_bytes: Option<u64>,
    pub recomputations: Option<usize>,
    pub sequential_seconds: f64,
    pub stages: usize,
}

/// `remat simulate --json`.
#[derive(Serialize)]
pub struct SimulateReport<'a> {
    pub algorithm: &'a str,
    pub bandwidth_bytes_per_s: Option<f64>,
    pub budget_bytes: u64,
    pub chain: &'a str,
    pub feasible: bool,
    pub idle_seconds: Option<f64>,
    pub makespan_seconds: Option<f64>,
    pub offloaded_bytes: Option<u64>,
    /// The number of operations.
    pub ops: usize,
    pub overhead: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub predicted_peak_bytes: Option<u64>,
    pub predicted_seconds: Option<f64>,
    pub prefetched_bytes: Option<u64>,
    pub recomputations: Option<usize>,
    pub sequential_seconds: f64,
    pub stages: usize,
    /// With `--states` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<StateReport>>,
}

/// One entry of `"states"`: tensors named as people and the papers write
/// them (`a^3`, `ā^3`, `δ^3`), which is also how a runtime's bookkeeping
/// names them.
#[derive(Serialize)]
pub struct StateReport {
    pub device: Vec<String>,
    pub host: Vec<String>,
    pub op: usize,
}

impl From<&OpState> for StateReport {
    fn from(s: &OpState) -> StateReport {
        StateReport {
            device: tensor_names(&s.device),
            host: tensor_names(&s.host),
            op: s.op,
        }
    }
}

pub fn tensor_names(tensors: &[TensorId]) -> Vec<String> {
    tensors.iter().map(|t| t.to_string()).collect()
}

/// `remat sweep --format json`.
#[derive(Serialize)]
pub struct SweepReport<'a> {
    pub chain: &'a str,
    pub m_high_bytes: u64,
    pub m_low_algorithm: &'static str,
    pub m_low_bytes: u64,
    pub points: Vec<SweepPoint<'a>>,
    pub sequential_seconds: f64,
}

/// One algorithm at one budget and bandwidth of a sweep.
#[derive(Serialize)]
pub struct SweepPoint<'a> {
    pub algorithm: &'a str,
    pub alpha: f64,
    pub bandwidth_bytes_per_s: Option<f64>,
    pub budget_bytes: u64,
    pub chain: &'a str,
    pub feasible: bool,
    pub idle_seconds: Option<f64>,
    pub makespan_seconds: Option<f64>,
    pub memory: String,
    /// Bytes the grid's rounding may hide, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_lost_bytes: Option<u64>,
    pub memory_ratio: f64,
    pub offloaded_bytes: Option<u64>,
    pub overhead: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub predicted_peak_bytes: Option<u64>,
    pub predicted_seconds: Option<f64>,
    pub prefetched_bytes: Option<u64>,
    pub recomputations: Option<usize>,
    pub sequential_seconds: f64,
    pub stages: usize,
}

/// `remat export --to pytorch-segments --json`.
#[derive(Serialize)]
pub struct ExportReport<'a> {
    pub checkpoint_sequential_k: Option<usize>,
    pub format: &'static str,
    pub segments: Sorted<&'a [remat_core::format::pytorch::Segment]>,
    pub snippet: &'a str,
    pub stages: usize,
}

/// `remat bench --json`.
#[derive(Serialize)]
pub struct BenchReport {
    pub pofo_dp_seconds: Vec<PofoDpTime>,
    pub pofo_solve_50_stages_seconds: Option<f64>,
    pub readout_seconds: f64,
    pub simulated_ops: usize,
    pub simulator_ops_per_second: f64,
    pub slots: usize,
    pub stages: usize,
    pub table_build_seconds: f64,
    pub table_bytes: usize,
}

/// Median seconds of pofo's DP at L stages and N slots.
#[derive(Serialize)]
pub struct PofoDpTime {
    pub seconds: f64,
    pub slots: usize,
    pub stages: usize,
}
