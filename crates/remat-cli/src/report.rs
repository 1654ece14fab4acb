//! The JSON contract of `docs/cli.md`, one struct per `--json` output.
//!
//! [`print`] writes a report with its keys sorted, at every level: the
//! reports were first built with `serde_json::json!`, whose objects (no
//! `preserve_order`) print that way, and scripts may compare the bytes. So
//! the structs are free to share fields through `#[serde(flatten)]`.

use remat_core::measured::Comparison;
use remat_core::schedule::Segment;
use remat_core::simulator::{OpState, TensorId, Trace};
use remat_core::solvers::hong::Model;
use remat_core::solvers::DeltaSettings;
use remat_core::{Chain, Op};
use serde::Serialize;

/// Prints a report as pretty JSON on stdout, keys sorted.
pub fn print(report: &impl Serialize) {
    let sorted = serde_json::to_value(report).expect("a report serializes");
    say!(
        "{}",
        serde_json::to_string_pretty(&sorted).expect("a JSON value prints")
    );
}

/// What the simulator measured of a schedule at a budget (all null when
/// there is no schedule).
#[derive(Clone, Copy, Serialize)]
pub struct Measured {
    /// A schedule was found and its simulated peak is within the budget.
    pub feasible: bool,
    /// The simulated time of the step and its peak.
    pub makespan_seconds: Option<f64>,
    pub peak_bytes: Option<u64>,
    /// makespan / sequential − 1.
    pub overhead: Option<f64>,
    /// Forward operations beyond the first of each stage.
    pub recomputations: Option<usize>,
    /// Time the compute lane waits.
    pub idle_seconds: Option<f64>,
    /// Bytes moved to and from the host.
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

/// The fields every report of a schedule run shares: `solve`, `simulate`
/// and each point of `sweep`.
#[derive(Serialize)]
pub struct Run<'a> {
    pub algorithm: &'a str,
    pub chain: &'a str,
    pub stages: usize,
    pub budget_bytes: u64,
    pub bandwidth_bytes_per_s: Option<f64>,
    #[serde(flatten)]
    pub measured: Measured,
    /// Σ u_f + u_b, the time with no memory limit.
    pub sequential_seconds: f64,
    /// The solver's own prediction, to compare with the simulated values.
    pub predicted_seconds: Option<f64>,
    pub predicted_peak_bytes: Option<u64>,
}

impl<'a> Run<'a> {
    pub fn new(
        chain: &'a Chain,
        algorithm: &'a str,
        budget: u64,
        bandwidth: Option<f64>,
        trace: Option<&Trace>,
    ) -> Run<'a> {
        Run {
            algorithm,
            chain: &chain.name,
            stages: chain.len(),
            budget_bytes: budget,
            bandwidth_bytes_per_s: bandwidth,
            measured: Measured::new(trace, budget),
            sequential_seconds: chain.sequential_seconds(),
            predicted_seconds: None,
            predicted_peak_bytes: None,
        }
    }

    /// With the solver's prediction of time and peak.
    pub fn predicted(self, seconds: Option<f64>, peak_bytes: Option<u64>) -> Run<'a> {
        Run {
            predicted_seconds: seconds,
            predicted_peak_bytes: peak_bytes,
            ..self
        }
    }
}

/// `remat solve --json`.
#[derive(Serialize)]
pub struct SolveReport<'a> {
    #[serde(flatten)]
    pub run: Run<'a>,
    /// One line for people: the grid used, the segments, why infeasible.
    pub detail: &'a str,
    /// `exact` or `grid:<slot bytes>`.
    pub memory: String,
    /// The least memory any schedule of the chain needs (below it `solve`
    /// exits 2); at most M_low.
    pub floor_bytes: u64,
    pub m_low_bytes: Option<u64>,
    pub m_high_bytes: u64,
    pub algorithm_min_bytes: u64,
    /// The offloading algorithms' least is a bound no schedule can beat
    /// (an op's own inputs and outputs), not a budget they were seen to meet.
    pub algorithm_min_is_lower_bound: bool,
    /// DELTA's settings, for delta, delta-lru and delta-greedy only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<DeltaSettings>,
    /// pofo's and offload-only's grid, for those two only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload_grid: Option<OffloadGrid>,
    /// Where the peak comes from (null when infeasible).
    pub at_peak: Option<AtPeakReport>,
    /// The schedule (empty when infeasible).
    pub ops: &'a [Op],
    /// The menu options the schedule runs, by stage (empty: only classic
    /// F_all, or no menus).
    pub options: Vec<OptionReport>,
    /// False when the chain has menus this algorithm does not choose from.
    pub menus_used: bool,
    /// The certificate (issue 44): no schedule of `lower_bound_class` is
    /// faster at this budget. rotor and revolve: their class bound (the
    /// plan's own time where it is exact); optimal: its own time; the
    /// others: the time floor (`solvers::time_floor`). Null when infeasible.
    pub lower_bound_seconds: Option<f64>,
    /// Whose optimum it bounds: `persistent`, `revolve`,
    /// `without-transfers` (every schedule that moves nothing to the host)
    /// or `any` (every schedule).
    pub lower_bound_class: Option<&'static str>,
    /// The answer's time / lower_bound_seconds − 1 (0: proven optimal in
    /// its class); the time is the DP's for rotor and revolve (the
    /// simulator's to the bit), the simulated makespan for the others.
    pub gap: Option<f64>,
    /// rotor and revolve on a grid with `--refine`: the finer grids tried
    /// (absent when none ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refined: Option<RefinedReport>,
}

/// `"refined"`: each round of finer grids, why it stopped, how long it took.
#[derive(Clone, Serialize)]
pub struct RefinedReport {
    pub rounds: Vec<remat_core::solvers::persistent::refine::Round>,
    pub stop: remat_core::solvers::persistent::refine::Stop,
    pub seconds: f64,
    pub target_gap: f64,
    /// The gap reached (the same as the report's `gap`).
    pub gap: f64,
    #[serde(skip)]
    line: String,
}

impl RefinedReport {
    pub fn new(r: &remat_core::solvers::persistent::refine::Refined) -> RefinedReport {
        let last = r.rounds.last();
        RefinedReport {
            rounds: r.rounds.clone(),
            stop: r.stop,
            seconds: r.elapsed_seconds,
            target_gap: remat_core::solvers::persistent::refine::TARGET_GAP,
            gap: r.gap(),
            line: format!(
                "{} round{} to {} slots of {} in {:.1} s: {}",
                r.rounds.len(),
                if r.rounds.len() == 1 { "" } else { "s" },
                last.map_or(0, |x| x.slots),
                remat_core::model::units::format_bytes(last.map_or(0, |x| x.slot_bytes)),
                r.elapsed_seconds,
                r.stop.words()
            ),
        }
    }

    /// For the text report: "2 rounds to 2000 slots of 10.2 MiB in 4.1 s:
    /// reached the target gap".
    pub fn line(&self) -> &str {
        &self.line
    }
}

/// One entry of `"options"`: a stage whose F_all runs a menu option.
#[derive(Serialize)]
pub struct OptionReport {
    pub stage: usize,
    pub option: u8,
    pub policy: String,
    pub saved_bytes: u64,
    pub backward_extra_seconds: f64,
}

impl OptionReport {
    pub fn list(chain: &remat_core::Chain, ops: &[Op]) -> Vec<OptionReport> {
        remat_core::schedule::menu_choices(ops)
            .into_iter()
            .filter(|&(l, k)| {
                l >= 1 && l <= chain.len() && (k as usize) < chain.stage(l).option_count()
            })
            .map(|(l, k)| {
                let st = chain.stage(l);
                let o = &st.menu[k as usize - 1];
                OptionReport {
                    stage: l,
                    option: k,
                    policy: o.policy.clone(),
                    saved_bytes: o.saved_bytes,
                    backward_extra_seconds: o.backward_extra_seconds,
                }
            })
            .collect()
    }
}

/// `"at_peak"` of `remat solve --json` and `remat simulate --json`: where
/// the peak comes from, the tensors on the device at that moment.
#[derive(Serialize)]
pub struct AtPeakReport {
    /// The operation whose allocation reached the peak, by index and in the
    /// papers' notation (null: the step's initial state).
    pub op: Option<usize>,
    pub notation: Option<String>,
    pub time_seconds: f64,
    /// Largest first; with `given_back_bytes` they sum to `peak_bytes`.
    pub tensors: Vec<PeakTensorReport>,
    /// Bytes of δ^ℓ and ā^ℓ autograd had already freed inside a running
    /// B^ℓ (a negative backward overhead), still listed in `tensors`.
    pub given_back_bytes: u64,
}

/// One tensor of `"at_peak"."tensors"`.
#[derive(Serialize)]
pub struct PeakTensorReport {
    /// `a^3`, `ā^3`, `δ^3`, or `workspace of F_all^3` (an operation's
    /// transient).
    pub tensor: String,
    pub bytes: u64,
}

impl AtPeakReport {
    pub fn new(trace: &Trace, ops: &[Op]) -> AtPeakReport {
        AtPeakReport {
            op: trace.peak_op,
            notation: trace.peak_op.and_then(|i| ops.get(i)).map(Op::to_string),
            time_seconds: trace.peak_time,
            tensors: (trace.peak_named(ops).into_iter())
                .map(|(tensor, bytes)| PeakTensorReport { tensor, bytes })
                .collect(),
            given_back_bytes: trace.at_peak.given_back_bytes,
        }
    }
}

/// `"offload_grid"` of `remat solve --json` for pofo and offload-only: the
/// slots their DP ran on, fewer than asked where the tables would pass
/// `--max-table` (without `--slots`; with it, that is an error).
#[derive(Clone, Copy, Serialize)]
pub struct OffloadGrid {
    /// Slots of the DP's grid.
    pub slots: usize,
    /// Slots asked for (`--slots`, default 50).
    pub requested_slots: usize,
    /// True when `slots` < `requested_slots`.
    pub reduced: bool,
    /// Bytes of the DP's tables at `slots` and at `requested_slots`.
    pub table_bytes: u64,
    pub requested_table_bytes: u64,
    /// The limit (`--max-table`).
    pub max_table_bytes: u64,
}

impl From<remat_core::solvers::offload::pofo::Resolution> for OffloadGrid {
    fn from(r: remat_core::solvers::offload::pofo::Resolution) -> OffloadGrid {
        let bytes = |b: u128| b.min(u64::MAX as u128) as u64;
        OffloadGrid {
            slots: r.slots,
            requested_slots: r.requested,
            reduced: r.reduced(),
            table_bytes: bytes(r.table_bytes),
            requested_table_bytes: bytes(r.requested_bytes),
            max_table_bytes: r.limit_bytes,
        }
    }
}

/// `remat simulate --json`.
#[derive(Serialize)]
pub struct SimulateReport<'a> {
    #[serde(flatten)]
    pub run: Run<'a>,
    /// The number of operations.
    pub ops: usize,
    /// The step's memory before its first operation (a^0 and δ^L).
    pub initial_bytes: u64,
    /// Where the peak comes from.
    pub at_peak: AtPeakReport,
    /// With `--states` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<StateReport>>,
    /// With `--measured` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredRunReport<'a>>,
}

/// `"measured"` of `remat simulate --measured RUN --json`: a measured run
/// against the simulated step. Differences are measured − predicted;
/// percentages measured ÷ predicted − 1, × 100 (null when nothing was
/// predicted).
#[derive(Serialize)]
pub struct MeasuredRunReport<'a> {
    /// The run's `source`.
    pub source: &'a str,
    pub predicted_peak_bytes: u64,
    pub measured_peak_bytes: u64,
    pub peak_difference_percent: Option<f64>,
    /// The simulated makespan, and Σ of the run's seconds.
    pub predicted_seconds: f64,
    pub measured_seconds: f64,
    pub time_difference_percent: Option<f64>,
    pub ops: Vec<MeasuredOpReport>,
}

/// One operation of `"measured"."ops"`.
#[derive(Serialize)]
pub struct MeasuredOpReport {
    pub index: usize,
    /// As in `remat-schedule/1`: `op`, `stage`, `tensor` (transfers and
    /// releases only).
    #[serde(flatten)]
    pub op: Op,
    /// The papers' notation (`F_all^3`).
    pub notation: String,
    pub predicted_start_seconds: f64,
    pub predicted_end_seconds: f64,
    pub predicted_seconds: f64,
    pub measured_seconds: f64,
    pub seconds_difference: f64,
    pub predicted_memory_bytes: u64,
    pub measured_memory_bytes: u64,
    pub memory_difference_bytes: i64,
    pub predicted_peak_bytes: u64,
    pub measured_peak_bytes: u64,
    pub peak_difference_bytes: i64,
}

impl<'a> MeasuredRunReport<'a> {
    pub fn new(source: &'a str, c: &Comparison) -> MeasuredRunReport<'a> {
        // Saturated: sizes in a run may be any u64.
        let diff =
            |p: u64, m: u64| (m as i128 - p as i128).clamp(i64::MIN.into(), i64::MAX.into()) as i64;
        MeasuredRunReport {
            source,
            predicted_peak_bytes: c.predicted_peak_bytes,
            measured_peak_bytes: c.measured_peak_bytes,
            peak_difference_percent: c.peak_change().map(|x| 100.0 * x),
            predicted_seconds: c.predicted_makespan_seconds,
            measured_seconds: c.measured_seconds,
            time_difference_percent: c.time_change().map(|x| 100.0 * x),
            ops: c
                .rows
                .iter()
                .map(|r| MeasuredOpReport {
                    index: r.index,
                    op: r.op,
                    notation: r.op.to_string(),
                    predicted_start_seconds: r.predicted_start_seconds,
                    predicted_end_seconds: r.predicted_end_seconds,
                    predicted_seconds: r.predicted_seconds,
                    measured_seconds: r.measured_seconds,
                    seconds_difference: r.measured_seconds - r.predicted_seconds,
                    predicted_memory_bytes: r.predicted_memory_bytes,
                    measured_memory_bytes: r.measured_memory_bytes,
                    memory_difference_bytes: diff(
                        r.predicted_memory_bytes,
                        r.measured_memory_bytes,
                    ),
                    predicted_peak_bytes: r.predicted_peak_bytes,
                    measured_peak_bytes: r.measured_peak_bytes,
                    peak_difference_bytes: diff(r.predicted_peak_bytes, r.measured_peak_bytes),
                })
                .collect(),
        }
    }
}

/// One entry of `"states"`: tensors named as people and the papers write
/// them (`a^3`, `ā^3`, `δ^3`), which is also how a runtime's bookkeeping
/// names them, and the operation's caption in its context
/// ([`remat_core::schedule::captions`]).
#[derive(Serialize)]
pub struct StateReport {
    pub device: Vec<String>,
    pub host: Vec<String>,
    pub op: usize,
    pub caption: String,
    /// The operation's span on its lane in the simulated step.
    pub start_seconds: f64,
    pub end_seconds: f64,
    /// The chain's memory once it ended and the highest while it ran
    /// (`Trace::op_memory`, what `--measured` compares).
    pub memory_bytes: u64,
    pub peak_bytes: u64,
}

impl StateReport {
    pub fn new(
        s: &OpState,
        caption: &str,
        span: &remat_core::simulator::Span,
        memory: remat_core::simulator::OpMemory,
    ) -> StateReport {
        StateReport {
            device: tensor_names(&s.device),
            host: tensor_names(&s.host),
            op: s.op,
            caption: caption.to_string(),
            start_seconds: span.start,
            end_seconds: span.end,
            memory_bytes: memory.after_bytes,
            peak_bytes: memory.peak_bytes,
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
    pub sequential_seconds: f64,
    /// The least budget rotor meets under the sweep's memory treatment (α = 0).
    pub m_low_bytes: u64,
    pub m_low_algorithm: &'static str,
    /// Store-all's peak (α = 1).
    pub m_high_bytes: u64,
    pub points: Vec<SweepPoint<'a>>,
}

/// One algorithm at one budget and bandwidth of a sweep.
#[derive(Serialize)]
pub struct SweepPoint<'a> {
    #[serde(flatten)]
    pub run: Run<'a>,
    pub alpha: f64,
    /// budget / M_high.
    pub memory_ratio: f64,
    pub memory: String,
    /// Bytes the grid's rounding may hide, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_lost_bytes: Option<u64>,
}

/// `remat export --to pytorch-segments --json`.
#[derive(Serialize)]
pub struct ExportReport<'a> {
    pub format: &'static str,
    pub stages: usize,
    /// 1-based stages.
    pub segments: &'a [Segment],
    /// `checkpoint_sequential`'s k, when the segments are its.
    pub checkpoint_sequential_k: Option<usize>,
    pub snippet: &'a str,
    /// With --chain: the fidelity and the forms, as for --to pytorch.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub judged: Option<remat_core::lowering::lowered::Fidelity>,
}

/// `remat checkpoints --json`: a checkpoint set in one of Hong et al.'s
/// memory models.
#[derive(Serialize)]
pub struct CheckpointsReport<'a> {
    pub chain: &'a str,
    pub stages: usize,
    /// `pytorch` or `chen`.
    pub model: Model,
    /// Stage numbers, ascending, the last stage included.
    pub checkpoints: &'a [usize],
    /// True when `checkpoints` is the optimal set (no `--set`).
    pub optimal: bool,
    /// The set's peak in the model: the largest value of `curve`.
    pub peak_bytes: u64,
    /// The first training phase index where the curve reaches the peak.
    pub peak_phase: usize,
    /// Bytes at each training phase index 0 … 2N+1.
    pub curve: &'a [u64],
    /// The least peak of any set in the model (Algorithm 6 or 3); null for
    /// the Chen model past its stage limit.
    pub optimal_peak_bytes: Option<u64>,
    /// The paper's √n set (segments of ⌈√N⌉ stages) and its peak, the
    /// baseline of its Table 2.
    pub sqrt_checkpoints: &'a [usize],
    pub sqrt_peak_bytes: u64,
    /// The simulator's peak of the set's schedule (Remat's accounting,
    /// docs/model.md), what `remat solve -a hong` is judged by.
    pub simulated_peak_bytes: u64,
}

/// `remat bench --json`.
#[derive(Serialize)]
pub struct BenchReport {
    /// The synthetic chain's L and the rotor table's slots.
    pub stages: usize,
    pub slots: usize,
    /// Median seconds to build the rotor table, and its size.
    pub table_build_seconds: f64,
    pub table_bytes: usize,
    /// Median seconds to read one budget's schedule out of the table.
    pub readout_seconds: f64,
    /// The simulator's speed on the longest schedule read out.
    pub simulated_ops: usize,
    pub simulator_ops_per_second: f64,
    /// Empty, and null, with `--no-pofo`.
    pub pofo_dp_seconds: Vec<PofoDpTime>,
    pub pofo_solve_50_stages_seconds: Option<f64>,
    /// pofo's tables for every budget at L = 100 (`offload::Tables`,
    /// 50 slots at M_high): median seconds to build them and to answer a
    /// new budget from them (judged). Null with `--no-pofo`.
    pub pofo_table_100_stages: Option<PofoTableTime>,
    /// The threads pofo's tables were filled on (every core this process
    /// may use: `solvers::parallel::Workers`).
    pub pofo_threads: usize,
}

/// `remat bench`'s pofo table: build once, then answer budgets.
#[derive(Serialize)]
pub struct PofoTableTime {
    pub build_seconds: f64,
    pub answer_seconds: f64,
    pub budgets: usize,
}

/// Median seconds of pofo's DP at L stages and N slots.
#[derive(Serialize)]
pub struct PofoDpTime {
    pub stages: usize,
    pub slots: usize,
    pub seconds: f64,
}

/// `remat maxbatch --json`.
#[derive(Serialize)]
pub struct MaxBatchReport<'a> {
    pub chain: &'a str,
    /// `linear` (one profile scaled) or `affine` (two profiles fitted).
    pub model: &'static str,
    pub profiled_batches: Vec<u64>,
    /// M, `--fixed`, the margin in bytes, and what is left: M − fixed − margin.
    pub memory_bytes: u64,
    pub fixed_bytes: u64,
    pub margin_bytes: u64,
    pub activation_budget_bytes: u64,
    /// The largest batch tried.
    pub max_batch: u64,
    /// The baseline of the ratios, searched whether listed or not.
    pub store_all_batch: Option<u64>,
    pub methods: Vec<MaxBatchRow<'a>>,
}

/// One method's largest batch, its schedule there judged.
#[derive(Serialize)]
pub struct MaxBatchRow<'a> {
    pub algorithm: &'a str,
    /// null: not even one sample fits.
    pub batch: Option<u64>,
    /// The batch is `max_batch`: larger ones were not tried.
    pub at_limit: bool,
    /// One step at `batch`, and batch / that time.
    pub makespan_seconds: Option<f64>,
    pub samples_per_second: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub recomputations: Option<usize>,
    pub offloaded_bytes: Option<u64>,
    /// batch and samples/s over store-all's.
    pub growth_over_store_all: Option<f64>,
    pub throughput_over_store_all: Option<f64>,
    /// The solver's line at `batch`.
    pub detail: Option<&'a str>,
    /// Batches tried.
    pub probes: usize,
}
