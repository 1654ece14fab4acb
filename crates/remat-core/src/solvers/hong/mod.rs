//! `hong`: the checkpoint set of least **peak** memory, after D.-Y. Hong,
//! T.-H. Tsai, N. Wang, P. Liu, J.-J. Wu, *GPU Memory Usage Optimization for
//! Backward Propagation in Deep Network Training* (Sections 3–4).
//!
//! A checkpoint set C picks which stage outputs d_i the forward pass keeps;
//! the stages between two checkpoints form a segment, recomputed in the
//! backward pass. Here d_0 is the chain's `input_bytes`, d_i stage i's
//! `output_bytes`, and, as in the paper's Section 3.1, d_0 and d_n are always
//! checkpoints and count in the peak. A set is written as stage numbers,
//! ascending, n included (the paper's `{3, 6, 24}` for VGG-19); n may be left
//! out and 0 is never written.
//!
//! Two memory models, two objectives:
//!
//! * [`Model::Chen`] (Section 3, Eq. 6; Chen et al.'s Algorithm 2): all
//!   checkpoints stay for the whole backward pass and a recomputed segment is
//!   held whole; peak = checkpoint memory + largest segment. Minimised by
//!   Algorithm 3 in O(n³) ([`chen::algorithm3`]).
//! * [`Model::PyTorch`] (Section 4, Algorithm 4, Eq. 9–12): what PyTorch
//!   does, as the paper traced it — a tensor is freed as soon as its backward
//!   is done, checkpoints included, and each segment's backward holds an
//!   output-gradient buffer the size of the segment's largest tensor (its
//!   left checkpoint included). Minimised by Algorithm 5 in O(n²)
//!   ([`pytorch::algorithm5`]) and Algorithm 6 in O(n)
//!   ([`pytorch::algorithm6`], what [`optimal`] runs).
//!
//! [`curve()`] gives either model's memory over the paper's training phase
//! index 0 … 2n + 1, replaying its pseudo-code; [`peak`] the closed-form peak
//! of any set, which equals the curve's maximum.
//!
//! **How this differs from Remat's own accounting** ([simulator](crate::simulator),
//! docs/model.md). [`schedule`] turns a set into Remat operations (every
//! segment but the last run with F_ck/F_∅ and recomputed with F_all before
//! its backward; the last run with F_all, as Algorithm 4 recomputes it right
//! at the start of the backward pass), and the simulator accepts it, but its
//! peak is not the one computed here: the paper counts only stage outputs
//! d_i, where Remat keeps ā^ℓ (`saved_bytes` ≥ `output_bytes`) for each
//! stage awaiting its backward; the paper has one gradient buffer per
//! segment, Remat holds δ^ℓ and allocates δ^{ℓ−1} per backward, with δ^L
//! resident from the start; the paper has no workspace overheads (o_f, o_b);
//! and it samples memory once per stage, where the simulator takes every
//! allocation (while F_∅^ℓ runs, a^{ℓ−1} and a^ℓ are both resident). The
//! optimal set here is optimal for the paper's model, not for Remat's.
//!
//! [`segments`] gives the segment boundaries to run with
//! `torch.utils.checkpoint` (the last segment runs normally).
//!
//! As one of Remat's algorithms (`remat solve -a hong`, `-a hong-chen`),
//! the planner builds a [`Plan`] and answers a budget with the optimal
//! set's schedule when the simulator's peak of it fits the budget
//! ([`Plan::answer`]).
//!
//! Assumptions: a chain, sizes only (times play no part); Σ d_i + max d_i
//! must fit in 64 bits ([`CheckpointError::TooLarge`] otherwise).
//!
//! ```
//! use remat_core::solvers::hong::{self, Model};
//! use remat_core::{Chain, Stage};
//!
//! // d_0 = 4, then stage outputs 8, 1, 8, 1, 8 (bytes).
//! let stages = [8, 1, 8, 1, 8]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, &a)| Stage::new(format!("s{}", i + 1), 1.0, 1.0, a, a))
//!     .collect();
//! let chain = Chain {
//!     name: "toy".into(),
//!     source: "doc example".into(),
//!     input_bytes: 4,
//!     input_gradient_bytes: 4,
//!     bandwidth_bytes_per_s: None,
//!     stages,
//!     ..Chain::default()
//! };
//! let best = hong::optimal(&chain, Model::PyTorch).unwrap();
//! assert_eq!(best.checkpoints, vec![2, 4, 5]); // keep the small tensors
//! assert_eq!(best.peak_bytes, hong::peak(&chain, Model::PyTorch, &best.checkpoints).unwrap());
//! let curve = hong::curve(&chain, Model::PyTorch, &best.checkpoints).unwrap();
//! assert_eq!(curve.len(), 2 * 5 + 2);
//! assert_eq!(curve.iter().max(), Some(&best.peak_bytes));
//! ```

mod as_algorithm;
pub mod chen;
pub mod curve;
pub mod pytorch;
mod range_max;

pub use as_algorithm::{describe, model_of, plan, Plan};

use crate::model::Chain;
use crate::schedule::segments::{self, Segment};
use crate::schedule::Op;
use std::fmt;
use std::str::FromStr;

/// Which memory model the peak is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// Section 4: freed as soon as unused, one output-gradient buffer.
    PyTorch,
    /// Section 3, Eq. 6: checkpoints kept throughout, segments held whole.
    Chen,
}

impl Model {
    pub const ALL: [Model; 2] = [Model::PyTorch, Model::Chen];

    /// The name on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Model::PyTorch => "pytorch",
            Model::Chen => "chen",
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Model {
    type Err = CheckpointError;

    fn from_str(s: &str) -> Result<Model, CheckpointError> {
        Model::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| CheckpointError::UnknownModel(s.to_string()))
    }
}

/// A checkpoint set and its peak in the chosen model.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Selection {
    /// Stage numbers, ascending, n included, 0 not written.
    pub checkpoints: Vec<usize>,
    pub peak_bytes: u64,
}

/// Why a chain or a checkpoint set cannot be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the chain has no stage")]
    NoStage,
    #[error("checkpoints: stage {stage} is out of range; stages are numbered 1..={stages} (the input, 0, is always kept)")]
    StageOutOfRange { stage: usize, stages: usize },
    #[error("checkpoints: stage {stage} (position {position}) comes after {previous}; list stages once each, ascending")]
    NotAscending {
        position: usize,
        stage: usize,
        previous: usize,
    },
    #[error("output_bytes: the sizes add up to more than 2^64 bytes (with the gradient buffer); this model cannot count them")]
    TooLarge,
    #[error("stages: Algorithm 3 (the Chen model) takes O(n³) time and O(n²) memory; {stages} stages is over its limit of {limit}; use the PyTorch model (Algorithm 6, O(n))")]
    TooLong { stages: usize, limit: usize },
    #[error("model: unknown memory model `{0}`; choose pytorch or chen")]
    UnknownModel(String),
}

/// The longest chain Algorithm 3 is run on: its O(n³) steps took 2 s at
/// 500 stages and 11 s at 1000 on the (loaded) build machine, native.
pub const MAX_CHEN_STAGES: usize = 500;

/// d_0 … d_n: the input, then each stage's output.
pub fn sizes(chain: &Chain) -> Vec<u64> {
    (0..=chain.len()).map(|l| chain.output_bytes(l)).collect()
}

/// The set of least peak in `model`: Algorithm 6 (PyTorch) or 3 (Chen).
pub fn optimal(chain: &Chain, model: Model) -> Result<Selection, CheckpointError> {
    optimal_for_sizes(&sizes(chain), model)
}

/// [`optimal`] on d_0 … d_n directly, for chains longer than a `Chain`
/// accepts (`MAX_STAGES`).
pub fn optimal_for_sizes(d: &[u64], model: Model) -> Result<Selection, CheckpointError> {
    check_sizes(d)?;
    let stages = d.len() - 1;
    if model == Model::Chen && stages > MAX_CHEN_STAGES {
        return Err(CheckpointError::TooLong {
            stages,
            limit: MAX_CHEN_STAGES,
        });
    }
    Ok(match model {
        Model::PyTorch => pytorch::algorithm6(d),
        Model::Chen => chen::algorithm3(d),
    })
}

/// The peak of `set` in `model` (Eq. 12 or Eq. 6).
pub fn peak(chain: &Chain, model: Model, set: &[usize]) -> Result<u64, CheckpointError> {
    let (d, set) = checked(chain, set)?;
    Ok(match model {
        Model::PyTorch => pytorch::peak(&d, &set),
        Model::Chen => chen::peak(&d, &set),
    })
}

/// The memory over the training phase index 0 … 2n + 1 (see the [`mod@curve`]
/// module): 2n + 2 values.
pub fn curve(chain: &Chain, model: Model, set: &[usize]) -> Result<Vec<u64>, CheckpointError> {
    let (d, set) = checked(chain, set)?;
    Ok(match model {
        Model::PyTorch => curve::pytorch(&d, &set),
        Model::Chen => curve::chen(&d, &set),
    })
}

/// The set behind the paper's O(√n) column (Table 2): segments of ⌈√n⌉
/// stages, the last one shorter — `{5, 10, 15, 20, 24}` for VGG-19 (n = 24),
/// `{4, 8, 12, 15}` for AlexNet (n = 15).
pub fn sqrt_set(n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let step = (1..=n).find(|s| s * s >= n).unwrap_or(n);
    let mut set: Vec<usize> = (1..).map(|k| k * step).take_while(|&c| c < n).collect();
    set.push(n);
    set
}

/// The set `checkpoint_sequential(model, k, x)` keeps: the last stage of
/// each of its k segments ([`crate::solvers::sequential::segments`]:
/// ⌊n/k⌋ stages each, the last one the rest). For VGG-19 and k = 5 it is
/// `{4, 8, 12, 16, 24}`, not the paper's √n set ([`sqrt_set`]).
pub fn sequential_set(n: usize, k: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    crate::solvers::sequential::segments(n, k)
        .into_iter()
        .map(|(_, last)| last)
        .collect()
}

/// The segments `torch.utils.checkpoint` runs for `set` on a chain of `n`
/// stages: one per checkpoint, from the stage after the previous checkpoint
/// to it (1-based, inclusive); every segment but the last checkpointed.
pub fn segments(n: usize, set: &[usize]) -> Result<Vec<Segment>, CheckpointError> {
    if n == 0 {
        return Err(CheckpointError::NoStage);
    }
    let set = normalize(n, set)?;
    let mut first = 1;
    Ok(set
        .iter()
        .map(|&last| {
            let seg = Segment {
                first,
                last,
                checkpointed: last < n,
            };
            first = last + 1;
            seg
        })
        .collect())
}

/// `set` as a Remat schedule (the schedule of its [`segments`]), which
/// [`crate::simulator::simulate`] accepts.
pub fn schedule(chain: &Chain, set: &[usize]) -> Result<Vec<Op>, CheckpointError> {
    Ok(segments::schedule(&segments(chain.len(), set)?))
}

/// The set as the algorithms read it: ascending, in 1..=n, n appended if
/// the caller left it out.
pub fn normalize(n: usize, set: &[usize]) -> Result<Vec<usize>, CheckpointError> {
    let mut previous = 0;
    for (position, &stage) in set.iter().enumerate() {
        if stage == 0 || stage > n {
            return Err(CheckpointError::StageOutOfRange { stage, stages: n });
        }
        if stage <= previous {
            return Err(CheckpointError::NotAscending {
                position,
                stage,
                previous,
            });
        }
        previous = stage;
    }
    let mut set = set.to_vec();
    if previous != n {
        set.push(n);
    }
    Ok(set)
}

/// The sizes and the normalized set, both checked.
fn checked(chain: &Chain, set: &[usize]) -> Result<(Vec<u64>, Vec<usize>), CheckpointError> {
    let d = sizes(chain);
    check_sizes(&d)?;
    Ok((d, normalize(chain.len(), set)?))
}

/// Each checkpoint of a normalized set with the one before it (0 first):
/// the segment between them is h + 1 … i − 1.
fn spans(set: &[usize]) -> impl Iterator<Item = (usize, usize)> + '_ {
    std::iter::once(0)
        .chain(set.iter().copied())
        .zip(set.iter().copied())
}

/// At least one stage, and every sum the models form fits in 64 bits.
fn check_sizes(d: &[u64]) -> Result<(), CheckpointError> {
    if d.len() < 2 {
        return Err(CheckpointError::NoStage);
    }
    let total = d.iter().try_fold(0u64, |acc, &x| acc.checked_add(x));
    let largest = d.iter().copied().max().unwrap_or(0);
    match total.and_then(|t| t.checked_add(largest)) {
        Some(_) => Ok(()),
        None => Err(CheckpointError::TooLarge),
    }
}
