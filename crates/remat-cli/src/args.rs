//! The command line as typed values. Every flag is parsed by clap into the
//! type its command uses (a [`Size`] in bytes, a [`Rate`] in bytes/s, an
//! [`Algorithm`], a [`Budget`], a count within its stated range) before any
//! command runs; a value that does not parse is refused by clap with the
//! flag's name (`invalid value 'lots' for '--budget <BUDGET>': …`) and exit 2.
//! What cannot be judged one flag at a time (`--segments` only with
//! `sequential`) is checked by the command, first.

use clap::{Args, ValueEnum};
use remat_core::lowering::pytorch::SharedGradient;
use remat_core::maxbatch::Margin;
use remat_core::model::units::{parse_rate, parse_size};
use remat_core::solvers::hong::Model;
use remat_core::solvers::offload::pofo::LossStep;
use remat_core::solvers::{Algorithm, MAX_RELOAD_LIMIT};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::str::FromStr;

/// The most memory slots any DP is asked for: past it a table is either over
/// the size limit or slower than a user waits for.
pub const MAX_SLOTS: u64 = 100_000;
/// The most budgets one sweep visits.
pub const MAX_POINTS: u64 = 1000;
/// The longest synthetic chain of `bench`: a rotor table for it at 500 slots
/// is already near the default size limit.
pub const MAX_BENCH_STAGES: u64 = 2000;
/// The most repetitions of one `bench` measurement.
pub const MAX_REPS: u64 = 1000;
/// The largest batch `maxbatch` accepts as a profile's or as its limit
/// (2⁴⁰ samples); the chain must also be representable there.
pub const MAX_BATCH: u64 = 1 << 40;

/// A count in `lo..=hi`, as a `usize`; out of range, clap's message states
/// the range (`0 is not in 1..=100000`).
fn count(lo: u64, hi: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(lo..=hi)
}

/// Why a flag's value does not parse; clap prints it after the flag's name.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ArgError {
    /// A size or a rate the core's unit parser refuses (its message).
    #[error("{0}")]
    Units(String),
    #[error("`{0}` is below 1 byte/s")]
    BelowOneBytePerSecond(String),
    #[error("`{0}` is not a percentage of M_high (write 60%)")]
    NotAPercentage(String),
    #[error("`{0}`: a share of M_high must be above 0 % and at most 1000 %")]
    ShareOutOfRange(String),
    #[error(transparent)]
    NotANumber(#[from] std::num::ParseFloatError),
    #[error("`{0}`: a share above 0 and at most 1")]
    ShareNotInUnit(String),
    #[error("a memory ratio from 0 to 1, got {0}")]
    RatioOutOfRange(f64),
    #[error(
        "`{0}`: a margin is bytes (512MiB) or a share of --memory from 0 % to below 100 % (1%)"
    )]
    MarginOutOfRange(String),
    #[error("`{0}`: seconds from 0 (no refinement) to 3600")]
    RefineSecondsOutOfRange(String),
    #[error("`{0}` is not a stage number; write the checkpoints as stage numbers separated by commas (3,6,24)")]
    NotAStage(String),
    /// The core's message (the names to choose from), and the name meant.
    #[error("{message}{}", meant.map(|m| format!("; did you mean `{m}`?")).unwrap_or_default())]
    UnknownAlgorithm {
        message: String,
        meant: Option<&'static str>,
    },
}

/// A number of bytes: `1048576`, `3.5GB`, `8GiB` (see `docs/cli.md`, SIZE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl FromStr for Size {
    type Err = ArgError;
    fn from_str(text: &str) -> Result<Size, ArgError> {
        parse_size(text)
            .map(Size)
            .map_err(|e| ArgError::Units(e.to_string()))
    }
}

/// Bytes per second: `12e9`, `12GB/s`, or bits, `12Gbps` (see RATE).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate(pub f64);

impl FromStr for Rate {
    type Err = ArgError;
    fn from_str(text: &str) -> Result<Rate, ArgError> {
        let rate = parse_rate(text).map_err(|e| ArgError::Units(e.to_string()))?;
        if rate > 0.0 && rate < 1.0 {
            return Err(ArgError::BelowOneBytePerSecond(text.to_string()));
        }
        Ok(Rate(rate))
    }
}

/// The bytes/s of an optional `--bandwidth`.
pub fn bytes_per_s(rate: Option<Rate>) -> Option<f64> {
    rate.map(|r| r.0)
}

/// A memory budget: bytes, or a share of the chain's M_high (`60%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    Bytes(u64),
    /// Fraction of M_high, the peak of store-all.
    OfHigh(f64),
}

impl Budget {
    /// In bytes, for a chain whose store-all peak is `m_high`.
    pub fn bytes(self, m_high: u64) -> u64 {
        match self {
            Budget::Bytes(b) => b,
            Budget::OfHigh(f) => (m_high as f64 * f).round() as u64,
        }
    }
}

impl FromStr for Budget {
    type Err = ArgError;
    /// `8GiB`, `3e9` or `60%` (of M_high, above 0 % and at most 1000 %).
    fn from_str(text: &str) -> Result<Budget, ArgError> {
        let share = Share {
            in_range: |pct| pct > 0.0 && pct <= 1000.0,
            not_a_number: ArgError::NotAPercentage,
            out_of_range: ArgError::ShareOutOfRange,
        };
        Ok(match share.parse(text)? {
            SizeOrShare::Bytes(b) => Budget::Bytes(b),
            SizeOrShare::Share(f) => Budget::OfHigh(f),
        })
    }
}

/// A size, or `P%`: a share of something the command knows.
enum SizeOrShare {
    Bytes(u64),
    /// P / 100.
    Share(f64),
}

/// How one flag reads `P%`: the percentages it accepts and its errors.
struct Share {
    in_range: fn(f64) -> bool,
    not_a_number: fn(String) -> ArgError,
    out_of_range: fn(String) -> ArgError,
}

impl Share {
    fn parse(&self, text: &str) -> Result<SizeOrShare, ArgError> {
        let Some(number) = text.trim().strip_suffix('%') else {
            return Size::from_str(text).map(|s| SizeOrShare::Bytes(s.0));
        };
        let pct: f64 = number
            .trim()
            .parse()
            .map_err(|_| (self.not_a_number)(text.to_string()))?;
        if !(self.in_range)(pct) {
            return Err((self.out_of_range)(text.to_string()));
        }
        Ok(SizeOrShare::Share(pct / 100.0))
    }
}

/// The allocator margin of `maxbatch`: bytes (`512MiB`) or a share of
/// `--memory` (`1%`, from 0 % to below 100 %).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarginArg(pub Margin);

impl FromStr for MarginArg {
    type Err = ArgError;
    fn from_str(text: &str) -> Result<MarginArg, ArgError> {
        let share = Share {
            in_range: |pct| (0.0..100.0).contains(&pct),
            not_a_number: ArgError::MarginOutOfRange,
            out_of_range: ArgError::MarginOutOfRange,
        };
        Ok(MarginArg(match share.parse(text)? {
            SizeOrShare::Bytes(b) => Margin::Bytes(b),
            SizeOrShare::Share(f) => Margin::OfMemory(f),
        }))
    }
}

/// The memory ratio α of a sweep: budget = (1 − α) M_low + α M_high.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Alpha(pub f64);

impl FromStr for Alpha {
    type Err = ArgError;
    fn from_str(text: &str) -> Result<Alpha, ArgError> {
        let x: f64 = text.parse()?;
        if !(0.0..=1.0).contains(&x) {
            return Err(ArgError::RatioOutOfRange(x));
        }
        Ok(Alpha(x))
    }
}

/// An algorithm by its name (`remat algorithms`); a near miss (`rotr`,
/// `Rotor`, `storeall`) adds the name meant.
pub fn algorithm(text: &str) -> Result<Algorithm, ArgError> {
    let text = text.trim();
    Algorithm::from_name(text).map_err(|e| ArgError::UnknownAlgorithm {
        message: e.to_string(),
        meant: did_you_mean(text),
    })
}

/// The algorithm name closest to `text` when it is close enough to be a
/// slip (Jaro–Winkler similarity of at least 0.8, ignoring case), else None.
fn did_you_mean(text: &str) -> Option<&'static str> {
    let typed = text.to_ascii_lowercase();
    Algorithm::ALL
        .iter()
        .map(|a| (strsim::jaro_winkler(&typed, a.name()), a.name()))
        .filter(|&(score, _)| score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// A checkpoint set as typed: stage numbers separated by commas (`3,6,24`),
/// in the order given. Whether they are in range and ascending depends on
/// the chain: the command checks that (`hong::normalize`), naming `--set`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointSet(pub Vec<usize>);

impl FromStr for CheckpointSet {
    type Err = ArgError;
    fn from_str(text: &str) -> Result<CheckpointSet, ArgError> {
        text.split(',')
            .map(|part| {
                let part = part.trim();
                part.parse::<usize>()
                    .map_err(|_| ArgError::NotAStage(part.to_string()))
            })
            .collect::<Result<Vec<usize>, ArgError>>()
            .map(CheckpointSet)
    }
}

/// What CHAIN names: a built-in example (`example:NAME`) or a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainArg {
    Example(String),
    File(PathBuf),
}

impl From<&OsStr> for ChainArg {
    fn from(arg: &OsStr) -> ChainArg {
        match arg.to_str().and_then(|s| s.strip_prefix("example:")) {
            Some(name) => ChainArg::Example(name.to_string()),
            None => ChainArg::File(PathBuf::from(arg)),
        }
    }
}

/// What every planning command shares: memory slots, the table limit, the link.
#[derive(Args)]
pub struct PlanFlags {
    /// Memory slots of the DPs (default 500 for revolve and rotor, 50 for
    /// pofo and offload-only, as their papers); 1 to 100000.
    #[arg(long, value_parser = count(1, MAX_SLOTS))]
    pub slots: Option<usize>,
    /// Refuse any DP table larger than this (e.g. 8GiB).
    #[arg(long, default_value = "2GiB")]
    pub max_table: Size,
    /// How pofo and offload-only time the loss step: `paper` (POFO
    /// Appendix B.2: leftover transfers wait after F_all^L) or `overlap`
    /// (offloads drain during F_all^L, prefetches overlap B^L).
    #[arg(long, value_enum, default_value = "paper")]
    pub loss_step: LossStepFlag,
    /// delta, delta-lru, delta-greedy: the share of the link a transfer
    /// achieves in the Director's cost (DELTA measured 0.35); above 0 to 1.
    #[arg(long, default_value = "0.35", value_parser = share)]
    pub link_share: f64,
    /// delta, delta-lru, delta-greedy: release from this share of the
    /// budget in use on (DELTA: 0.75); above 0 to 1.
    #[arg(long, default_value = "0.75", value_parser = share)]
    pub trigger: f64,
    /// delta, delta-lru, delta-greedy: the Prefetcher's reload limit, how
    /// many offloaded tensors it brings back ahead (default 2); 0 to 5000.
    #[arg(long, default_value = "2", value_parser = count(0, MAX_RELOAD_LIMIT as u64))]
    pub reload_limit: usize,
}

/// A share in (0, 1]: `0.35`.
fn share(text: &str) -> Result<f64, ArgError> {
    let x: f64 = text.trim().parse()?;
    if x > 0.0 && x <= 1.0 {
        Ok(x)
    } else {
        Err(ArgError::ShareNotInUnit(text.trim().to_string()))
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LossStepFlag {
    Paper,
    Overlap,
}

impl From<LossStepFlag> for LossStep {
    fn from(flag: LossStepFlag) -> LossStep {
        match flag {
            LossStepFlag::Paper => LossStep::Paper,
            LossStepFlag::Overlap => LossStep::Overlap,
        }
    }
}

#[derive(Args)]
pub struct SolveArgs {
    /// Chain file or example:NAME.
    pub chain: ChainArg,
    /// Algorithm (see `remat algorithms`).
    #[arg(long, short, value_parser = algorithm)]
    pub algorithm: Algorithm,
    /// Memory budget for activations (a^0 included): 8GiB, 3e9, or 60% of
    /// the chain's M_high (store-all's peak).
    #[arg(long, short)]
    pub budget: Budget,
    #[command(flatten)]
    pub plan: PlanFlags,
    /// `sequential` only: exactly K segments instead of the best K.
    #[arg(long, value_name = "K")]
    pub segments: Option<usize>,
    /// rotor and revolve on a grid: spend up to this many seconds on finer
    /// grids until the plan is certified within 0.5 % of the optimum
    /// (0: answer from the first grid).
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = refine_seconds, allow_negative_numbers = true)]
    pub refine: f64,
    /// Host↔device bandwidth, overriding the chain's (12GB/s, 16GiB/s,
    /// or bits: 100Gbps).
    #[arg(long)]
    pub bandwidth: Option<Rate>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the schedule (remat-schedule/1) to this file.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Seconds of refinement: 0 to an hour.
fn refine_seconds(text: &str) -> Result<f64, ArgError> {
    let x: f64 = text.trim().parse()?;
    if (0.0..=3600.0).contains(&x) {
        Ok(x)
    } else {
        Err(ArgError::RefineSecondsOutOfRange(text.trim().to_string()))
    }
}

/// The memory model of `checkpoints` (Hong et al., Sections 3 and 4).
#[derive(Clone, Copy, ValueEnum)]
pub enum ModelFlag {
    /// Section 4: each tensor freed as soon as unused, one output-gradient
    /// buffer per segment (Algorithm 6).
    Pytorch,
    /// Section 3, Eq. 6: checkpoints kept throughout, a recomputed segment
    /// held whole (Algorithm 3, O(n³)).
    Chen,
}

impl From<ModelFlag> for Model {
    fn from(flag: ModelFlag) -> Model {
        match flag {
            ModelFlag::Pytorch => Model::PyTorch,
            ModelFlag::Chen => Model::Chen,
        }
    }
}

#[derive(Args)]
pub struct CheckpointsArgs {
    /// Chain file or example:NAME.
    pub chain: ChainArg,
    /// The memory model the peak is measured in.
    #[arg(long, value_enum)]
    pub model: ModelFlag,
    /// Evaluate this set instead of finding the optimal one: stage numbers,
    /// ascending, separated by commas (3,6,24); the last stage is always a
    /// checkpoint and may be left out, the input (0) is never written.
    #[arg(long)]
    pub set: Option<CheckpointSet>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SimulateArgs {
    /// Chain file or example:NAME.
    pub chain: ChainArg,
    /// Schedule file (remat-schedule/1).
    pub schedule: PathBuf,
    /// Host↔device bandwidth, overriding the schedule's and the chain's.
    #[arg(long)]
    pub bandwidth: Option<Rate>,
    #[arg(long)]
    pub json: bool,
    /// Add, per operation, which tensors are on the device and on the host
    /// after it (in list order, transfers complete): `"states"` in the JSON,
    /// one line per operation in the text.
    #[arg(long)]
    pub states: bool,
    /// A measured run of this schedule (remat-run/1), or a PyTorch CUDA
    /// memory snapshot of its step (a pickle): predicted against measured,
    /// op by op, and the peaks and times; `"measured"` in the JSON.
    #[arg(long, value_name = "RUN")]
    pub measured: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepMemory {
    Auto,
    Exact,
    Grid,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SweepFormat {
    Csv,
    Json,
}

#[derive(Args)]
pub struct SweepArgs {
    /// Chain file or example:NAME.
    pub chain: ChainArg,
    /// Comma-separated algorithms (default: all; hong-chen only on chains
    /// of at most 500 stages).
    #[arg(long, value_delimiter = ',', value_parser = algorithm)]
    pub algorithms: Vec<Algorithm>,
    /// Number of budgets from M_low to M_high (memory ratio α from 0 to 1:
    /// budget = (1 − α) M_low + α M_high, POFO Section 5.2); 2 to 1000.
    #[arg(long, default_value_t = 20, value_parser = count(2, MAX_POINTS))]
    pub points: usize,
    /// One budget at this α instead (for a sweep over bandwidths).
    #[arg(long)]
    pub alpha: Option<Alpha>,
    #[command(flatten)]
    pub plan: PlanFlags,
    /// How every algorithm at a budget treats memory: `exact` (rotor and
    /// revolve on an exact lattice where the sizes allow; store-all and
    /// sequential are always exact), `grid` (every DP, rotor and revolve
    /// included, on POFO's grid of ⌊budget/slots⌋-byte slots, `--slots`
    /// default 50), or `auto`: `grid` when an offloading algorithm is
    /// swept, else `exact`. The `memory` column says what each row used.
    #[arg(long, value_enum, default_value = "auto")]
    pub memory: SweepMemory,
    /// Bandwidth, or a comma-separated list to sweep (12GB/s,24GB/s,36GB/s).
    #[arg(long, value_delimiter = ',')]
    pub bandwidth: Vec<Rate>,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: SweepFormat,
}

/// `--schedule` of `remat pipeline`.
#[derive(Clone, Copy, ValueEnum)]
pub enum PipelineScheduleFlag {
    /// Every forward, then every backward: all micro-batches in flight.
    Gpipe,
    /// One forward, one backward (PyTorch's Schedule1F1B): rank r of p
    /// holds min(p − r, m).
    #[value(name = "1f1b")]
    OneFOneB,
    /// Interleaved 1F1B (PyTorch's ScheduleInterleaved1F1B): each rank
    /// holds --chunks pieces of the model, piece k on rank k mod p.
    #[value(name = "interleaved-1f1b")]
    Interleaved1F1B,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("cut").required(true).args(["split", "ranks"])))]
pub struct PipelineArgs {
    /// Chain file or example:NAME: the whole model's chain, at the
    /// micro-batch size.
    pub chain: ChainArg,
    /// Stages per rank, rank 0 first: 4,4,3,3 (they must add up to the
    /// chain's length); with --chunks V, stages per piece, p·V of them
    /// (piece k on rank k mod p, PyTorch's stage index k).
    #[arg(long, value_delimiter = ',', value_parser = count(1, MAX_PIPELINE_STAGES as u64))]
    pub split: Vec<usize>,
    /// P ranks, the stages cut as evenly as they go (the first ranks take
    /// one more; with --chunks V, into P·V pieces).
    #[arg(long, value_parser = count(1, MAX_PIPELINE_STAGES as u64))]
    pub ranks: Option<usize>,
    /// V, the chunks (virtual stages) each rank holds under
    /// --schedule interleaved-1f1b (1 to 64).
    #[arg(long, default_value = "1", value_parser = count(1, remat_core::pipeline::MAX_CHUNKS as u64))]
    pub chunks: usize,
    /// m, micro-batches per step (1 to 100000).
    #[arg(long, short, value_parser = count(1, remat_core::pipeline::MAX_MICROBATCHES as u64))]
    pub microbatches: usize,
    #[arg(long, value_enum, default_value = "1f1b")]
    pub schedule: PipelineScheduleFlag,
    /// Activation memory per rank (what the device holds beside the rank's
    /// weights, gradients and optimizer state): one SIZE for every rank or
    /// one per rank, comma-separated.
    #[arg(long, short, value_delimiter = ',', required = true)]
    pub budget: Vec<Size>,
    /// Also plan every rank as rank 0 (one plan for all ranks, what one
    /// setting gives), judged at each rank's own order, for comparison.
    #[arg(long)]
    pub compare_uniform: bool,
    /// Also the nearest Megatron-Core and torchtitan settings (full-layer
    /// recomputation, one setting for every rank): the fastest that fits
    /// every rank, judged the same way.
    #[arg(long)]
    pub frameworks: bool,
    /// Bandwidth between two ranks (400Gbps, 50GB/s): each forward then
    /// waits for the previous piece's activation to arrive and each
    /// backward for the next piece's gradient (step time only; without
    /// it sends take no time and the step is a bound from below).
    #[arg(long)]
    pub link: Option<Rate>,
    /// Bandwidth between each rank and host memory, each way (25GB/s,
    /// 200Gbps): each rank may offload what its waiting micro-batches
    /// hold to the host during their wait and prefetch it before their
    /// backward (PipeOffload); every candidate plan is judged with and
    /// without it and the fastest that fits kept. 1f1b and gpipe only.
    #[arg(long)]
    pub offload: Option<Rate>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write each rank's schedule (remat-schedule/1, for its piece of the
    /// chain, stages numbered from 1) and the piece's chain to this folder:
    /// rank0.schedule.json, rank0.chain.json, …
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// The most stages or ranks `remat pipeline` takes (the chain's own limit).
pub const MAX_PIPELINE_STAGES: usize = remat_core::model::MAX_STAGES;

#[derive(Args)]
pub struct MaxbatchArgs {
    /// Chain file or example:NAME, profiled at --batch samples.
    pub chain: ChainArg,
    /// M, the device's memory: what the framework reports as its total
    /// (`torch.cuda.mem_get_info()[1]`; an H100 80GB reports about 79.2GiB).
    #[arg(long)]
    pub memory: Size,
    /// The batch CHAIN was profiled at; its sizes and times are scaled
    /// linearly from it (1 to 2^40).
    #[arg(long, value_parser = batch_count())]
    pub batch: u64,
    /// Bytes that do not grow with the batch: weights, their gradients and
    /// the optimizer state (Adam: 4× the weights in all).
    #[arg(long, default_value = "0")]
    pub fixed: Size,
    /// Memory kept free for what the chain does not account for (CUDA
    /// context, library workspaces, allocator): bytes or a share of
    /// --memory. 1% fits the reference H100 with expandable segments; use
    /// about 10% with PyTorch's default allocator (fragmentation). Default:
    /// 1% (`remat_core::maxbatch::DEFAULT_MARGIN`).
    #[arg(long)]
    pub margin: Option<MarginArg>,
    /// A second profile of the same stages, at --second-batch: every size
    /// and time is then the line through both profiles (fixed + per sample
    /// × batch) instead of a linear scaling of CHAIN.
    #[arg(long, value_name = "CHAIN2", requires = "second_batch")]
    pub second_profile: Option<ChainArg>,
    /// The batch the second profile was taken at.
    #[arg(long, value_parser = batch_count(), requires = "second_profile")]
    pub second_batch: Option<u64>,
    /// Comma-separated methods (default: store-all, dtr, delta, sequential,
    /// rotor, pofo); store-all is always searched, as the baseline.
    #[arg(long, short, value_delimiter = ',', value_parser = algorithm)]
    pub algorithms: Vec<Algorithm>,
    /// The largest batch tried (1 to 2^40).
    #[arg(long, default_value_t = remat_core::maxbatch::DEFAULT_MAX_BATCH, value_parser = batch_count())]
    pub max_batch: u64,
    #[command(flatten)]
    pub plan: PlanFlags,
    /// Host↔device bandwidth for the offloading methods, overriding the
    /// chain's.
    #[arg(long)]
    pub bandwidth: Option<Rate>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A batch: 1 to [`MAX_BATCH`].
fn batch_count() -> clap::builder::RangedU64ValueParser<u64> {
    clap::builder::RangedU64ValueParser::<u64>::new().range(1..=MAX_BATCH)
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Unit {
    Ms,
    S,
}

#[derive(Args)]
pub struct ConvertArgs {
    /// A JSON file with rotor's fw, bw, cw, cbw, ftmp, btmp lists.
    pub input: PathBuf,
    /// Unit of fw and bw (rotor measures milliseconds).
    #[arg(long, value_enum, default_value = "ms")]
    pub time_unit: Unit,
    /// Name of the chain.
    #[arg(long)]
    pub name: Option<String>,
    /// Host↔device bandwidth to record in the chain (e.g. 12GB/s).
    #[arg(long)]
    pub bandwidth: Option<Rate>,
    /// Output file (default: stdout).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExamplesArgs {
    /// Write this built-in chain (remat-chain/1) instead of listing them.
    #[arg(long, value_name = "NAME")]
    pub write: Option<String>,
    /// File to write it to (default: stdout).
    #[arg(long, short, requires = "write")]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportTarget {
    /// Nested `torch.utils.checkpoint` regions over stage ranges, applied to
    /// the model object by `remat_torch.apply_plan` (needs --chain).
    Pytorch,
    /// transformers' per-layer `gradient_checkpointing` switches (needs
    /// --chain, whose stages name their modules).
    Transformers,
    /// `torch.utils.checkpoint` segments and a snippet to paste.
    PytorchSegments,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Schedule file (remat-schedule/1), as `remat solve -o` writes it.
    pub schedule: PathBuf,
    /// The form to write.
    #[arg(long, value_enum)]
    pub to: ExportTarget,
    /// The chain the schedule was made for (file or example:NAME): the
    /// simulator judges each lowered form on it, and its stages' `module`
    /// names say what to wrap. Required with --to pytorch and transformers.
    #[arg(long, value_name = "CHAIN",
          required_if_eq_any([("to", "pytorch"), ("to", "transformers")]))]
    pub chain: Option<ChainArg>,
    /// FIRST:LAST:BYTES — a parameter stages FIRST and LAST both use (tied
    /// weights): stock PyTorch's one backward holds BYTES of its gradient
    /// from B^LAST to B^FIRST, which the lowered forms' peaks then count
    /// (`remat_torch.export_plan(..., model=)` finds them). Repeatable.
    #[arg(long, value_name = "FIRST:LAST:BYTES", value_parser = shared_gradient)]
    pub shared_gradient: Vec<SharedGradient>,
    /// One JSON object (what `remat_torch.apply_plan` reads).
    #[arg(long, conflicts_with = "code")]
    pub json: bool,
    /// Only the Python to paste into a training script (the explorer's
    /// Code card shows the same text): `remat_torch.apply_plan` with the
    /// plan inlined, headed by its predicted peak and time.
    #[arg(long)]
    pub code: bool,
}

/// `2:6:1024000`: stages FIRST < LAST (1-based) and a size.
fn shared_gradient(text: &str) -> Result<SharedGradient, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let [first, last, bytes] = parts[..] else {
        return Err(format!("`{text}` is not FIRST:LAST:BYTES"));
    };
    let stage = |s: &str| {
        s.trim()
            .parse::<usize>()
            .ok()
            .filter(|&l| l >= 1)
            .ok_or_else(|| format!("`{s}` is not a stage number (1, 2, …)"))
    };
    let (first, last) = (stage(first)?, stage(last)?);
    if first >= last {
        return Err(format!(
            "stage {first} is not before stage {last}: FIRST is the earlier stage"
        ));
    }
    let bytes = parse_size(bytes.trim()).map_err(|e| e.to_string())?;
    Ok(SharedGradient { first, last, bytes })
}

#[derive(Args)]
pub struct BenchArgs {
    /// Stages of the synthetic heterogeneous chain (1 to 2000).
    #[arg(long, default_value_t = 200, value_parser = count(1, MAX_BENCH_STAGES))]
    pub stages: usize,
    /// Memory slots of the rotor table (1 to 100000; the table must stay
    /// under the default size limit).
    #[arg(long, default_value_t = 500, value_parser = count(1, MAX_SLOTS))]
    pub slots: usize,
    /// Repetitions of each measurement, the median is reported (1 to 1000).
    #[arg(long, default_value_t = 5, value_parser = count(1, MAX_REPS))]
    pub reps: usize,
    #[arg(long)]
    pub json: bool,
    /// Skip the pofo measurements (seconds at L = 100).
    #[arg(long)]
    pub no_pofo: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_rates_and_budgets_parse_to_bytes() {
        assert_eq!("8GiB".parse::<Size>(), Ok(Size(8 << 30)));
        assert_eq!("12Gbps".parse::<Rate>(), Ok(Rate(1.5e9)));
        assert_eq!("60%".parse::<Budget>(), Ok(Budget::OfHigh(0.6)));
        assert_eq!("1KiB".parse::<Budget>(), Ok(Budget::Bytes(1024)));
        assert_eq!(Budget::OfHigh(0.6).bytes(1000), 600);
        assert_eq!("0.25".parse::<Alpha>(), Ok(Alpha(0.25)));
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        // Could fail if a parser accepted these (mutation tried: dropping the
        // range check of `Alpha` made the `1.5` and `NaN` cases pass).
        let message = |e: ArgError| e.to_string();
        assert!(message("8Gb".parse::<Size>().unwrap_err()).contains("in bits"));
        assert!(message("fast".parse::<Rate>().unwrap_err()).contains("bandwidth"));
        for (text, expected) in [
            ("0%", ArgError::ShareOutOfRange("0%".into())),
            ("1001%", ArgError::ShareOutOfRange("1001%".into())),
            ("x%", ArgError::NotAPercentage("x%".into())),
        ] {
            assert_eq!(text.parse::<Budget>(), Err(expected));
        }
        assert_eq!("1.5".parse::<Alpha>(), Err(ArgError::RatioOutOfRange(1.5)));
        assert!("NaN".parse::<Alpha>().is_err());
        assert_eq!(
            message(ArgError::ShareOutOfRange("0%".into())),
            "`0%`: a share of M_high must be above 0 % and at most 1000 %"
        );
    }

    #[test]
    fn a_near_miss_of_an_algorithm_name_is_named() {
        // Could fail if the suggestion were the first name or any name
        // (mutation tried: threshold 0.0 suggested a name for `magic`).
        assert_eq!(algorithm(" rotor "), Ok(Algorithm::Rotor));
        for (typed, meant) in [
            ("rotr", "rotor"),
            ("Rotor", "rotor"),
            ("storeall", "store-all"),
            ("offload", "offload-only"),
            ("revolv", "revolve"),
        ] {
            let e = algorithm(typed).unwrap_err().to_string();
            assert!(e.starts_with("algorithm: unknown algorithm"), "{e}");
            assert!(e.ends_with(&format!("did you mean `{meant}`?")), "{e}");
        }
        assert!(!algorithm("magic")
            .unwrap_err()
            .to_string()
            .contains("did you mean"));
    }

    #[test]
    fn margins_are_bytes_or_a_share_below_100_percent() {
        // Could fail if 100 % (no memory left) or a negative share parsed
        // (mutation tried: `0.0..=100.0`: `100%` parsed).
        assert_eq!("1%".parse(), Ok(MarginArg(Margin::OfMemory(0.01))));
        assert_eq!("0".parse(), Ok(MarginArg(Margin::Bytes(0))));
        assert_eq!("512MiB".parse(), Ok(MarginArg(Margin::Bytes(512 << 20))));
        for bad in ["100%", "-1%", "x%", "NaN%"] {
            assert_eq!(
                bad.parse::<MarginArg>(),
                Err(ArgError::MarginOutOfRange(bad.into()))
            );
        }
        assert!("lots".parse::<MarginArg>().is_err());
    }

    #[test]
    fn checkpoint_sets_parse_as_stage_numbers() {
        // Could fail if a set parsed into other numbers or accepted a word
        // (mutation tried: a part that is not a number read as 0,
        // `.or(Ok(0))`, instead of refused).
        assert_eq!("3,6,24".parse(), Ok(CheckpointSet(vec![3, 6, 24])));
        assert_eq!(" 3, 6 ".parse(), Ok(CheckpointSet(vec![3, 6])));
        assert_eq!(
            "3,x".parse::<CheckpointSet>(),
            Err(ArgError::NotAStage("x".into()))
        );
        assert_eq!(
            "".parse::<CheckpointSet>(),
            Err(ArgError::NotAStage("".into()))
        );
        assert_eq!(
            "-1".parse::<CheckpointSet>(),
            Err(ArgError::NotAStage("-1".into()))
        );
    }

    #[test]
    fn chain_args_name_an_example_or_a_file() {
        assert_eq!(
            ChainArg::from(OsStr::new("example:vgg19")),
            ChainArg::Example("vgg19".into())
        );
        assert_eq!(
            ChainArg::from(OsStr::new("net.json")),
            ChainArg::File("net.json".into())
        );
    }
}
