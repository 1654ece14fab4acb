//! The largest batch each method runs within a device's memory, and its
//! throughput: the question "how far does checkpointing (or offloading)
//! take my batch?" (issue 15; the DELTA paper's Tables III–IV ask it of
//! dynamic runtimes).
//!
//! Like [`sweep`](crate::sweep), this sits above the [`Planner`]: for a
//! batch b it takes the chain at b from a [`BatchModel`] (one profile scaled
//! linearly, or two profiles fitted affinely; `model::scale` says what the
//! linear rule ignores), solves the activation budget with the method, and
//! lets the [judge](crate::simulator::judge) decide whether the schedule
//! fits. The activation budget is what the device leaves for them:
//! M − fixed (weights, their gradients, optimizer state) − an allocator
//! margin ([`Device::activation_budget`]).
//!
//! Search: b = 1, then doubling until a batch does not fit (or the batch
//! limit), then bisection between the last batch that fitted and the first
//! that did not. Every answer b is therefore probed feasible and b + 1
//! probed infeasible (unless b is the limit). That b is *the* largest batch
//! only if feasibility is monotone in b (fits at b ⇒ fits below b): true
//! for store-all and sequential (their peaks grow with every size, and
//! sizes grow with b under the linear rule), and for rotor's least memory
//! up to its grid's rounding; heuristics (and an affine fit whose sizes
//! fall with b) may fit again above b + 1, which this search does not
//! look for. Probes: at most 2⌈log₂ limit⌉ + 1 per method, each one solve
//! and one judge of the chain at that batch.

use crate::model::units::format_bytes;
use crate::model::{BatchModel, ChainError};
use crate::simulator::{judge, SimError, Trace};
use crate::solvers::{Algorithm, Options, Planner, Progress, Solution, SolveError};
use std::fmt;

/// The methods `remat maxbatch` compares when none is named: one row each;
/// a method added to the algorithm list joins here with one line.
pub const DEFAULT_ALGORITHMS: &[Algorithm] = &[
    Algorithm::StoreAll,
    Algorithm::Dtr,
    Algorithm::Delta,
    Algorithm::Sequential,
    Algorithm::Rotor,
    Algorithm::Pofo,
];

/// The default allocator margin: 1 % of the device memory. On the
/// reference H100 (79.2 GiB as PyTorch reports it, expandable segments on)
/// the measured largest batches leave 0.7–1.0 % of it unexplained by the
/// chain and the weights (the CUDA context, cuBLAS's workspace, allocator
/// rounding); without expandable segments fragmentation cost rotor 9.7 %
/// of its batch: pass a margin of about 10 % there.
pub const DEFAULT_MARGIN: Margin = Margin::OfMemory(0.01);

/// The default largest batch tried: 2²⁴ samples (24 doublings).
pub const DEFAULT_MAX_BATCH: u64 = 1 << 24;

/// Memory kept free for what the chain does not account for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Margin {
    Bytes(u64),
    /// A fraction of the device memory M, in [0, 1).
    OfMemory(f64),
}

impl Margin {
    /// In bytes, for a device of `memory_bytes`.
    pub fn bytes(self, memory_bytes: u64) -> u64 {
        match self {
            Margin::Bytes(b) => b,
            Margin::OfMemory(f) => (memory_bytes as f64 * f).round() as u64,
        }
    }
}

/// The device a batch must fit on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Device {
    /// M: the device's memory (what the framework reports as its total).
    pub memory_bytes: u64,
    /// Bytes that do not depend on the batch: weights, their gradients,
    /// optimizer state.
    pub fixed_bytes: u64,
    pub margin: Margin,
}

impl Device {
    /// M − fixed − margin: the budget activations get (a^0 included, as
    /// every budget in Remat). Refused, naming the field, when the margin
    /// is not a fraction in [0, 1), the fixed bytes take all the memory, or
    /// fixed + margin leave nothing.
    pub fn activation_budget(&self) -> Result<u64, MaxBatchError> {
        if let Margin::OfMemory(f) = self.margin {
            if !(f.is_finite() && (0.0..1.0).contains(&f)) {
                return Err(MaxBatchError::input(
                    Field::Margin,
                    format!(
                        "a share of the memory from 0 % to below 100 %, got {} %",
                        f * 100.0
                    ),
                ));
            }
        }
        if self.memory_bytes == 0 {
            return Err(MaxBatchError::input(
                Field::Memory,
                "must be more than 0 bytes".into(),
            ));
        }
        if self.fixed_bytes >= self.memory_bytes {
            return Err(MaxBatchError::input(
                Field::Fixed,
                format!(
                    "{} is not below the memory, {}",
                    format_bytes(self.fixed_bytes),
                    format_bytes(self.memory_bytes)
                ),
            ));
        }
        let margin = self.margin.bytes(self.memory_bytes);
        let taken = self.fixed_bytes as u128 + margin as u128;
        if taken >= self.memory_bytes as u128 {
            return Err(MaxBatchError::input(
                Field::Memory,
                format!(
                    "{} leaves nothing for activations: fixed {} + margin {} take it all",
                    format_bytes(self.memory_bytes),
                    format_bytes(self.fixed_bytes),
                    format_bytes(margin)
                ),
            ));
        }
        Ok(self.memory_bytes - taken as u64)
    }
}

/// The input a [`MaxBatchError::Input`] names (the CLI maps each to its flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Memory,
    Fixed,
    Margin,
    MaxBatch,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Memory => "memory",
            Field::Fixed => "fixed",
            Field::Margin => "margin",
            Field::MaxBatch => "max_batch",
        })
    }
}

/// Why a search stopped; the messages are the ones people see.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MaxBatchError {
    #[error("{field}: {message}")]
    Input { field: Field, message: String },
    /// The model has no chain at this batch (a fit that goes negative).
    #[error("the chain at batch {batch}: {error}")]
    Chain { batch: u64, error: ChainError },
    /// A solver failed (not "infeasible": no answer at all).
    #[error("{algorithm} at batch {batch}: {error}")]
    Solve {
        algorithm: Algorithm,
        batch: u64,
        error: SolveError,
    },
    /// A solver's schedule did not run: a solver bug, shown as one.
    #[error("{algorithm} at batch {batch}: {error}")]
    Judge {
        algorithm: Algorithm,
        batch: u64,
        error: SimError,
    },
    /// The progress callback asked to stop.
    #[error("cancelled")]
    Cancelled,
}

impl MaxBatchError {
    fn input(field: Field, message: String) -> MaxBatchError {
        MaxBatchError::Input { field, message }
    }
}

/// One batch tried, and whether the method's schedule fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    pub batch: u64,
    pub feasible: bool,
}

/// A method's largest batch, with its schedule judged there.
#[derive(Clone, Debug, PartialEq)]
pub struct Largest {
    pub algorithm: Algorithm,
    /// None: not even one sample fits.
    pub batch: Option<u64>,
    /// The batch is the search's limit: larger ones were not tried.
    pub at_limit: bool,
    /// The solver's answer at `batch` (its detail line).
    pub solution: Option<Solution>,
    /// The judged schedule at `batch`, within the budget.
    pub trace: Option<Trace>,
    /// Every batch tried, in order.
    pub probes: Vec<Probe>,
}

impl Largest {
    /// batch / makespan of one step, None without a batch or a positive time.
    pub fn samples_per_second(&self) -> Option<f64> {
        let batch = self.batch?;
        let seconds = self.trace.as_ref()?.makespan_seconds;
        (seconds > 0.0).then(|| batch as f64 / seconds)
    }
}

/// What a search found: the budget, store-all as the baseline, and one
/// [`Largest`] per method asked, in the order asked.
#[derive(Clone, Debug, PartialEq)]
pub struct MaxBatches {
    pub budget_bytes: u64,
    pub max_batch: u64,
    /// Store-all's answer, searched whether asked or not: growth is over it.
    pub store_all: Largest,
    pub methods: Vec<Largest>,
}

impl MaxBatches {
    /// A method's batch over store-all's (None when either has none).
    pub fn growth(&self, method: &Largest) -> Option<f64> {
        Some(method.batch? as f64 / self.store_all.batch? as f64)
    }

    /// A method's samples/s over store-all's.
    pub fn throughput_ratio(&self, method: &Largest) -> Option<f64> {
        Some(method.samples_per_second()? / self.store_all.samples_per_second()?)
    }
}

/// The most probes a search up to `max_batch` makes: b = 1, ⌈log₂⌉
/// doublings, as many bisections.
fn max_probes(max_batch: u64) -> usize {
    let doublings = 64 - (max_batch.max(1) - 1).leading_zeros() as usize;
    2 * doublings + 1
}

/// The largest b in 1..=limit with `fits(b)`, assuming fits is monotone,
/// or None when `fits(1)` is false; every probe is recorded. Doubling from
/// 1, then bisection: the answer was probed feasible and, below the limit,
/// answer + 1 probed infeasible.
fn search(
    limit: u64,
    probes: &mut Vec<Probe>,
    mut fits: impl FnMut(u64, usize) -> Result<bool, MaxBatchError>,
) -> Result<Option<u64>, MaxBatchError> {
    let mut probe = |batch: u64, probes: &mut Vec<Probe>| {
        let feasible = fits(batch, probes.len())?;
        probes.push(Probe { batch, feasible });
        Ok::<bool, MaxBatchError>(feasible)
    };
    if !probe(1, probes)? {
        return Ok(None);
    }
    let mut lo: u64 = 1; // fits
    let mut hi = loop {
        let next = lo.saturating_mul(2).min(limit);
        if next == lo {
            return Ok(Some(lo)); // the limit fits
        }
        if probe(next, probes)? {
            lo = next;
        } else {
            break next; // does not fit
        }
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if probe(mid, probes)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(lo))
}

/// Whether `algorithm`'s schedule for `budget` fits the chain at `batch`,
/// with the solution and the judged trace when it does.
fn attempt(
    model: &BatchModel,
    algorithm: Algorithm,
    batch: u64,
    budget: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<Option<(Solution, Trace)>, MaxBatchError> {
    let chain = model
        .at(batch)
        .map_err(|error| MaxBatchError::Chain { batch, error })?;
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let opts = Options {
        bandwidth_bytes_per_s: bandwidth,
        ..options.clone()
    };
    let failed = |error| match error {
        SolveError::Cancelled => MaxBatchError::Cancelled,
        error => MaxBatchError::Solve {
            algorithm,
            batch,
            error,
        },
    };
    let planner = Planner::build(&chain, algorithm, budget, &opts, progress).map_err(failed)?;
    let solution = planner
        .plan_with_progress(&chain, budget, progress)
        .map_err(failed)?;
    let Some(ops) = &solution.ops else {
        return Ok(None);
    };
    let trace = judge(&chain, ops, budget, bandwidth).map_err(|error| MaxBatchError::Judge {
        algorithm,
        batch,
        error,
    })?;
    Ok(trace.fits(budget).then_some((solution, trace)))
}

/// The largest batch of each of `algorithms` (and of store-all, the
/// baseline) whose schedule fits `device`'s activation budget, batches
/// 1..=`max_batch`, with `options` as the solvers' knobs. `progress` sees
/// the fraction done (store-all first, then each method; within one, the
/// probes made out of [`max_probes`]) and cancels with `false`.
///
/// ```
/// use remat_core::examples::teaching;
/// use remat_core::maxbatch::{max_batches, Device, Margin};
/// use remat_core::model::BatchModel;
/// use remat_core::solvers::{no_progress, Algorithm, Options};
///
/// // The teaching chain profiled at batch 8, on a 16 GiB device.
/// let model = BatchModel::linear(teaching(), 8).unwrap();
/// let device = Device { memory_bytes: 16 << 30, fixed_bytes: 1 << 30, margin: Margin::OfMemory(0.01) };
/// let found = max_batches(&model, &[Algorithm::Rotor], &device, 1 << 20,
///                         &Options::default(), &mut no_progress()).unwrap();
/// let rotor = &found.methods[0];
/// assert!(rotor.batch > found.store_all.batch); // recomputing buys batch
/// assert!(found.growth(rotor).unwrap() > 1.0);
/// ```
pub fn max_batches(
    model: &BatchModel,
    algorithms: &[Algorithm],
    device: &Device,
    max_batch: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<MaxBatches, MaxBatchError> {
    let budget = device.activation_budget()?;
    if max_batch == 0 {
        return Err(MaxBatchError::input(
            Field::MaxBatch,
            "must be at least 1".into(),
        ));
    }
    // Every batch up to the limit must have a chain: say so now, not after
    // minutes of searching.
    model.at(max_batch).map_err(|e| {
        MaxBatchError::input(
            Field::MaxBatch,
            format!("the chain at batch {max_batch} cannot be represented ({e}); choose a smaller limit"),
        )
    })?;
    let mut order = vec![Algorithm::StoreAll];
    order.extend(algorithms.iter().filter(|&&a| a != Algorithm::StoreAll));
    let total = order.len() as f64;
    let per_probe = 1.0 / max_probes(max_batch) as f64;
    let mut found = Vec::with_capacity(order.len());
    for (i, &algorithm) in order.iter().enumerate() {
        let mut probes = Vec::new();
        let mut best = None;
        let batch = search(max_batch, &mut probes, |batch, made| {
            let start = i as f64 + made as f64 * per_probe;
            let mut part = |f: f64| progress((start + f * per_probe) / total);
            let answer = attempt(model, algorithm, batch, budget, options, &mut part)?;
            if !progress((start + per_probe) / total) {
                return Err(MaxBatchError::Cancelled);
            }
            let fits = answer.is_some();
            if fits {
                best = answer; // the search only moves up on a fit
            }
            Ok(fits)
        })?;
        // Each fit probed is above the one before, so the last one kept
        // is the answer's.
        let (solution, trace) = match best {
            Some((s, t)) if batch.is_some() => (Some(s), Some(t)),
            _ => (None, None),
        };
        found.push(Largest {
            algorithm,
            batch,
            at_limit: batch == Some(max_batch),
            solution,
            trace,
            probes,
        });
        if !progress((i + 1) as f64 / total) {
            return Err(MaxBatchError::Cancelled);
        }
    }
    let store_all = found[0].clone();
    let methods = algorithms
        .iter()
        .map(|a| {
            found
                .iter()
                .find(|l| l.algorithm == *a)
                .cloned()
                .expect("every method asked was searched")
        })
        .collect();
    Ok(MaxBatches {
        budget_bytes: budget,
        max_batch,
        store_all,
        methods,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{self, teaching};
    use crate::model::{scaled, Chain, Scale};
    use crate::solvers::{max_useful_budget, no_progress, persistent, solve};

    fn device(memory_bytes: u64) -> Device {
        Device {
            memory_bytes,
            fixed_bytes: 0,
            margin: Margin::Bytes(0),
        }
    }

    /// The search with the default knobs and no progress report.
    fn searched(
        model: &BatchModel,
        algorithms: &[Algorithm],
        device: &Device,
        limit: u64,
    ) -> MaxBatches {
        max_batches(
            model,
            algorithms,
            device,
            limit,
            &Options::default(),
            &mut no_progress(),
        )
        .unwrap()
    }

    /// `algorithm`'s judged schedule for `budget` at `batch` when it fits,
    /// asked the plain way: `solve` on the scaled chain, judged.
    fn fits_plainly(
        model: &BatchModel,
        algorithm: Algorithm,
        batch: u64,
        budget: u64,
    ) -> Option<Trace> {
        let chain = model.at(batch).unwrap();
        let bw = chain.bandwidth_bytes_per_s;
        let options = Options {
            bandwidth_bytes_per_s: bw,
            ..Options::default()
        };
        let ops = solve(&chain, algorithm, budget, &options).unwrap().ops?;
        Some(judge(&chain, &ops, budget, bw).unwrap()).filter(|t| t.fits(budget))
    }

    /// The found batch fits and batch + 1 does not, asked through `solve`
    /// (not through the search's own probes), for every default method
    /// (store-all, dtr, delta, sequential, rotor, pofo; for the runtimes
    /// and heuristics b + 1 was probed, larger batches were not), on the
    /// measured ResNet-50 and the teaching chain; and the
    /// reported throughput is that batch over the judged makespan.
    /// Fails if the search stops one short or one over (mutation tried:
    /// bisecting `while hi - lo > 2` stopped one short, so one more sample
    /// fitted), or if the trace kept is another batch's (mutation tried:
    /// keeping the first fit's trace, batch 1's: the trace differed).
    #[test]
    fn the_answer_fits_and_one_more_does_not() {
        let cases = [
            (examples::by_name("resnet50-h100").unwrap(), 32, 20u64 << 30),
            (teaching(), 4, 8 << 30),
        ];
        for (chain, batch, memory) in cases {
            let model = BatchModel::linear(chain, batch).unwrap();
            // Every default method: one added to the list is checked here.
            let found = searched(
                &model,
                DEFAULT_ALGORITHMS,
                &device(memory),
                DEFAULT_MAX_BATCH,
            );
            for l in &found.methods {
                let b = l.batch.unwrap();
                assert!(!l.at_limit);
                let plain = fits_plainly(&model, l.algorithm, b, found.budget_bytes);
                assert!(plain.is_some(), "{}", l.algorithm);
                assert_eq!(l.trace, plain, "{} at {b}", l.algorithm);
                assert!(
                    fits_plainly(&model, l.algorithm, b + 1, found.budget_bytes).is_none(),
                    "{} at {b} + 1",
                    l.algorithm
                );
                let t = l.trace.as_ref().unwrap();
                assert_eq!(l.samples_per_second(), Some(b as f64 / t.makespan_seconds));
                // The probes say the same: b fitted, b + 1 did not.
                assert!(l.probes.contains(&Probe {
                    batch: b,
                    feasible: true
                }));
                assert!(l.probes.contains(&Probe {
                    batch: b + 1,
                    feasible: false
                }));
                assert!(l.probes.len() <= max_probes(DEFAULT_MAX_BATCH));
            }
        }
    }

    /// A chain whose sizes are all multiples of the profiled batch scales
    /// exactly, so store-all's peak at b is b × its peak per sample and its
    /// largest batch is ⌊budget / peak per sample⌋, margin and fixed bytes
    /// taken off M first. Fails if the budget forgot the margin or the
    /// fixed bytes (mutation tried: `taken = fixed` only: 1 more batch),
    /// or the search were off by one.
    #[test]
    fn store_all_matches_the_closed_form() {
        let per_sample = scaled(&teaching(), Scale::bytes(1.0 / 1024.0)).unwrap();
        let batch = 6;
        let profile = scaled(&per_sample, Scale::batch(1, batch)).unwrap();
        let peak_per_sample = max_useful_budget(&per_sample);
        let model = BatchModel::linear(profile, batch).unwrap();
        for (memory, fixed, margin) in [
            (10u64 << 30, 0, Margin::Bytes(0)),
            (10 << 30, 1 << 30, Margin::OfMemory(0.05)),
            (3 << 30, 123_457, Margin::Bytes(65_537)),
        ] {
            let device = Device {
                memory_bytes: memory,
                fixed_bytes: fixed,
                margin,
            };
            let found = searched(&model, &[Algorithm::StoreAll], &device, DEFAULT_MAX_BATCH);
            let budget = memory - fixed - margin.bytes(memory);
            assert_eq!(found.budget_bytes, budget);
            assert_eq!(found.store_all.batch, Some(budget / peak_per_sample));
            assert_eq!(found.methods[0], found.store_all);
            assert_eq!(found.growth(&found.store_all), Some(1.0));
        }
    }

    /// Rotor's class contains store-all, so it never runs a smaller batch
    /// (growth ≥ 1; on these chains recomputing buys much more), and at a
    /// lower throughput. On a chain whose sizes scale exactly (every size a
    /// multiple of the batch, an exact lattice) rotor's least memory at b is
    /// b × its least memory per sample (every peak is a sum of sizes), so
    /// its largest batch is ⌊budget / M_low per sample⌋. Fails if rotor's
    /// feasibility were read at another budget (mutation tried: solving
    /// rotor for budget / 2 still grew the batch 1.8×, caught only by the
    /// closed form) or growth were inverted (store-all / rotor).
    #[test]
    fn rotor_grows_the_batch_to_its_closed_form() {
        for (chain, batch) in [
            (examples::by_name("resnet50-h100").unwrap(), 32),
            (teaching(), 1),
            (examples::by_name("gpt2-h100-math").unwrap(), 4),
        ] {
            let model = BatchModel::linear(chain.clone(), batch).unwrap();
            let memory = 40 * max_useful_budget(&chain);
            let found = searched(
                &model,
                &[Algorithm::Rotor],
                &device(memory),
                DEFAULT_MAX_BATCH,
            );
            let growth = found.growth(&found.methods[0]).unwrap();
            assert!(growth >= 1.0, "{}: {growth}", chain.name);
            assert!(growth > 1.2, "{}: {growth}", chain.name);
            assert!(found.throughput_ratio(&found.methods[0]).unwrap() < 1.0);
        }
        let per_sample = scaled(&teaching(), Scale::bytes(1.0 / 1024.0)).unwrap();
        let m_low = persistent::min_budget(&per_sample, persistent::Variant::Rotor);
        let model =
            BatchModel::linear(scaled(&per_sample, Scale::batch(1, 4)).unwrap(), 4).unwrap();
        let memory = 3 << 30;
        let found = searched(
            &model,
            &[Algorithm::Rotor],
            &device(memory),
            DEFAULT_MAX_BATCH,
        );
        assert_eq!(found.methods[0].batch, Some(memory / m_low));
        assert!(found.growth(&found.methods[0]).unwrap() > 2.0);
    }

    /// Progress never goes back, passes through each method's share and
    /// ends at 1; `false` in the middle of a search stops it there with
    /// `Cancelled` (mutation tried: ignoring the answer after a probe ran
    /// the search on, calls past the fifth).
    #[test]
    fn progress_and_cancel_mid_search() {
        let model = BatchModel::linear(teaching(), 2).unwrap();
        let algorithms = [Algorithm::Rotor, Algorithm::Pofo];
        let mut seen = Vec::new();
        let mut record = |f: f64| {
            seen.push(f);
            true
        };
        let options = Options::default();
        max_batches(
            &model,
            &algorithms,
            &device(4 << 30),
            1 << 16,
            &options,
            &mut record,
        )
        .unwrap();
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        // Store-all, rotor and pofo each end at their third.
        for third in [1.0 / 3.0, 2.0 / 3.0, 1.0] {
            assert!(
                seen.iter().any(|&f| (f - third).abs() < 1e-12),
                "{third}: {seen:?}"
            );
        }
        assert_eq!(seen.last(), Some(&1.0));
        let mut calls = 0;
        let mut stop_at_five = |_: f64| {
            calls += 1;
            calls < 5
        };
        let stopped = max_batches(
            &model,
            &algorithms,
            &device(4 << 30),
            1 << 16,
            &options,
            &mut stop_at_five,
        );
        assert_eq!(stopped, Err(MaxBatchError::Cancelled));
        assert_eq!(calls, 5);
    }

    /// Absurd inputs are refused naming the field, before any search.
    /// Fails if a memory below fixed + margin wrapped around to a huge
    /// budget (mutation tried: dropping the `taken >= memory` check: the
    /// subtraction wrapped and a batch was found on a device with no room).
    #[test]
    fn absurd_inputs_name_the_field() {
        let model = BatchModel::linear(teaching(), 1).unwrap();
        let field = |device: Device, limit: u64| match max_batches(
            &model,
            &[Algorithm::StoreAll],
            &device,
            limit,
            &Options::default(),
            &mut no_progress(),
        ) {
            Err(MaxBatchError::Input { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let d = |memory, fixed, margin| Device {
            memory_bytes: memory,
            fixed_bytes: fixed,
            margin,
        };
        assert_eq!(
            field(d(1 << 30, 1 << 30, Margin::Bytes(0)), 10),
            Field::Fixed
        );
        assert_eq!(
            field(d(1 << 30, 1 << 29, Margin::Bytes(1 << 29)), 10),
            Field::Memory
        );
        assert_eq!(
            field(d(1 << 30, 0, Margin::Bytes(2 << 30)), 10),
            Field::Memory
        );
        assert_eq!(field(d(0, 0, Margin::Bytes(0)), 10), Field::Memory);
        assert_eq!(
            field(d(1 << 30, 0, Margin::OfMemory(1.0)), 10),
            Field::Margin
        );
        assert_eq!(
            field(d(1 << 30, 0, Margin::OfMemory(f64::NAN)), 10),
            Field::Margin
        );
        assert_eq!(field(d(1 << 30, 0, Margin::Bytes(0)), 0), Field::MaxBatch);
        // 2^62 samples of 64 MiB overflow 64 bits.
        assert_eq!(
            field(d(1 << 30, 0, Margin::Bytes(0)), 1 << 62),
            Field::MaxBatch
        );
        let e = max_batches(
            &model,
            &[],
            &d(1 << 30, 0, Margin::Bytes(0)),
            1 << 62,
            &Options::default(),
            &mut no_progress(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("max_batch: the chain at batch 4611686018427387904"),
            "{e}"
        );
    }

    /// Not even one sample: no batch, no throughput; a roomy device stops
    /// at the limit and says so.
    #[test]
    fn none_fits_or_the_limit_does() {
        let chain: Chain = teaching();
        let model = BatchModel::linear(chain.clone(), 1).unwrap();
        let tiny = searched(&model, &[Algorithm::Rotor], &device(1 << 20), 100);
        assert_eq!(tiny.methods[0].batch, None);
        assert_eq!(tiny.methods[0].samples_per_second(), None);
        assert_eq!(tiny.growth(&tiny.methods[0]), None);
        let roomy_device = device(1000 * max_useful_budget(&chain));
        let roomy = searched(&model, &[Algorithm::StoreAll], &roomy_device, 100);
        assert_eq!(roomy.store_all.batch, Some(100));
        assert!(roomy.store_all.at_limit);
    }
}
