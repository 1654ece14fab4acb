//! The operations a schedule is made of (rotor report Table 1; POFO Section 3
//! for offload and prefetch). Stages are numbered 1..=L as in the papers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which tensor of a stage an offload or prefetch moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorKind {
    /// a^ℓ, the stage output (stage 0 is the input batch).
    Output,
    /// ā^ℓ, everything B^ℓ needs from F^ℓ.
    Saved,
}

/// One operation of a schedule, as written in `remat-schedule/1`:
/// `{"op": "forward_all", "stage": 3}`, `{"op": "forward_all", "stage": 3, "option": 2}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// F_all^ℓ: compute a^ℓ and keep ā^ℓ for B^ℓ; the input stays.
    /// `option` k ≥ 1 runs menu entry k − 1 of the stage instead
    /// ([`crate::model::MenuOption`]: keep less, recompute the rest in
    /// B^ℓ); 0, the classic, is left out of files.
    ForwardAll {
        stage: usize,
        #[serde(default, skip_serializing_if = "is_classic")]
        option: u8,
    },
    /// F_ck^ℓ: compute a^ℓ and keep the input a^{ℓ-1} as a checkpoint.
    ForwardCheckpoint { stage: usize },
    /// F_∅^ℓ: compute a^ℓ, drop the input unless it is a kept checkpoint.
    ForwardNone { stage: usize },
    /// B^ℓ: compute δ^{ℓ-1} from δ^ℓ, ā^ℓ and the input.
    Backward { stage: usize },
    /// O: copy a tensor to host memory; the device copy is freed when done.
    Offload { stage: usize, tensor: TensorKind },
    /// P: copy a tensor back from host memory.
    Prefetch { stage: usize, tensor: TensorKind },
    /// R: forget a tensor, wherever it is: a device copy is freed (a dynamic
    /// runtime's eviction, DTR and DELTA), a host copy is discarded (to
    /// recompute it instead of reloading it). Takes no time.
    Release { stage: usize, tensor: TensorKind },
}

fn is_classic(option: &u8) -> bool {
    *option == 0
}

impl Op {
    /// F_all^ℓ with the classic option (keep ā^ℓ).
    pub const fn forward_all(stage: usize) -> Op {
        Op::ForwardAll { stage, option: 0 }
    }

    /// The same operation on stage ℓ + `by`: a sub-chain's schedule
    /// (stages numbered from 1) placed back in the chain it was cut from.
    pub fn shifted(self, by: usize) -> Op {
        match self {
            Op::ForwardAll { stage, option } => Op::ForwardAll {
                stage: stage + by,
                option,
            },
            Op::ForwardCheckpoint { stage } => Op::ForwardCheckpoint { stage: stage + by },
            Op::ForwardNone { stage } => Op::ForwardNone { stage: stage + by },
            Op::Backward { stage } => Op::Backward { stage: stage + by },
            Op::Offload { stage, tensor } => Op::Offload {
                stage: stage + by,
                tensor,
            },
            Op::Prefetch { stage, tensor } => Op::Prefetch {
                stage: stage + by,
                tensor,
            },
            Op::Release { stage, tensor } => Op::Release {
                stage: stage + by,
                tensor,
            },
        }
    }

    pub fn stage(&self) -> usize {
        match *self {
            Op::ForwardAll { stage, .. }
            | Op::ForwardCheckpoint { stage }
            | Op::ForwardNone { stage }
            | Op::Backward { stage }
            | Op::Offload { stage, .. }
            | Op::Prefetch { stage, .. }
            | Op::Release { stage, .. } => stage,
        }
    }

    pub fn is_forward(&self) -> bool {
        matches!(
            self,
            Op::ForwardAll { .. } | Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. }
        )
    }

    /// Offload and prefetch run on the copy lane; everything else computes.
    pub fn is_transfer(&self) -> bool {
        matches!(self, Op::Offload { .. } | Op::Prefetch { .. })
    }

    /// The snake_case name used in files (`forward_all`, `backward`, …).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Op::ForwardAll { .. } => "forward_all",
            Op::ForwardCheckpoint { .. } => "forward_checkpoint",
            Op::ForwardNone { .. } => "forward_none",
            Op::Backward { .. } => "backward",
            Op::Offload { .. } => "offload",
            Op::Prefetch { .. } => "prefetch",
            Op::Release { .. } => "release",
        }
    }

    /// One sentence saying what the operation does, for people learning the model.
    pub fn explain(&self) -> String {
        match *self {
            Op::ForwardAll { stage: l, option: 0 } => format!(
                "F_all^{l}: compute stage {l} and keep everything its backward needs (ā^{l}); its input stays in memory."
            ),
            Op::ForwardAll { stage: l, option } => format!(
                "F_all^{l} with option {option}: compute stage {l} and keep only what that option saves; B^{l} recomputes the rest; its input stays in memory."
            ),
            Op::ForwardCheckpoint { stage: l } => format!(
                "F_ck^{l}: compute a^{l} without saving ā^{l}; keep the input a^{} as a checkpoint.",
                l - 1
            ),
            Op::ForwardNone { stage: l } => format!(
                "F_∅^{l}: compute a^{l} without saving anything; the input a^{} is dropped unless it is a checkpoint.",
                l - 1
            ),
            Op::Backward { stage: l } => format!(
                "B^{l}: back-propagate through stage {l}: δ^{l} and ā^{l} are consumed, δ^{} is produced.",
                l - 1
            ),
            Op::Offload { stage, tensor } => format!(
                "Offload {}: copy it to host memory over PCIe; its device memory is freed when the copy ends.",
                tensor_symbol(tensor, stage)
            ),
            Op::Prefetch { stage, tensor } => format!(
                "Prefetch {}: copy it back to the device; computations that need it wait for the copy.",
                tensor_symbol(tensor, stage)
            ),
            Op::Release { stage, tensor } => format!(
                "Release {}: forget it; its device memory is freed now (or its host copy discarded), and it must be recomputed or reloaded before it is read again.",
                tensor_symbol(tensor, stage)
            ),
        }
    }
}

/// `a^3` or `ā^3`.
pub fn tensor_symbol(kind: TensorKind, stage: usize) -> String {
    match kind {
        TensorKind::Output => format!("a^{stage}"),
        TensorKind::Saved => format!("ā^{stage}"),
    }
}

impl fmt::Display for Op {
    /// The papers' notation: `F_all^3`, `F_ck^3`, `F_∅^3`, `B^3`, `O(ā^3)`,
    /// `P(a^3)`, and `R(ā^3)` for a release.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::ForwardAll { stage, option: 0 } => write!(f, "F_all^{stage}"),
            Op::ForwardAll { stage, option } => write!(f, "F_all^{stage}[{option}]"),
            Op::ForwardCheckpoint { stage } => write!(f, "F_ck^{stage}"),
            Op::ForwardNone { stage } => write!(f, "F_∅^{stage}"),
            Op::Backward { stage } => write!(f, "B^{stage}"),
            Op::Offload { stage, tensor } => write!(f, "O({})", tensor_symbol(tensor, stage)),
            Op::Prefetch { stage, tensor } => write!(f, "P({})", tensor_symbol(tensor, stage)),
            Op::Release { stage, tensor } => write!(f, "R({})", tensor_symbol(tensor, stage)),
        }
    }
}

/// Writes a whole op list in the papers' notation, comma-separated.
pub fn format_ops(ops: &[Op]) -> String {
    ops.iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The menu options a schedule runs: (stage, option) for each F_all^ℓ
/// with option ≥ 1, by stage, each pair once.
///
/// ```
/// use remat_core::schedule::{menu_choices, Op};
///
/// let ops = [Op::ForwardAll { stage: 2, option: 1 }, Op::forward_all(1)];
/// assert_eq!(menu_choices(&ops), vec![(2, 1)]);
/// ```
pub fn menu_choices(ops: &[Op]) -> Vec<(usize, u8)> {
    let mut out: Vec<(usize, u8)> = ops
        .iter()
        .filter_map(|op| match *op {
            Op::ForwardAll { stage, option } if option > 0 => Some((stage, option)),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
