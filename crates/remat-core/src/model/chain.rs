//! A training step as a chain of stages 1..L (rotor report, Section 3.1).

use super::error::ChainError;
use super::inputs::{self, InputTensor};
use super::peer::{self, Peer};
use std::fmt;

/// One stage ℓ of the chain: F^ℓ maps a^{ℓ-1} to a^ℓ, B^ℓ maps δ^ℓ to δ^{ℓ-1}.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub name: String,
    /// u_f^ℓ: time of F^ℓ.
    pub forward_seconds: f64,
    /// u_b^ℓ: time of B^ℓ.
    pub backward_seconds: f64,
    /// ω_a^ℓ: size of a^ℓ, the stage output.
    pub output_bytes: u64,
    /// ω_ā^ℓ: size of ā^ℓ, everything B^ℓ needs from F^ℓ, a^ℓ included.
    pub saved_bytes: u64,
    /// ω_δ^ℓ: size of δ^ℓ = ∂loss/∂a^ℓ.
    pub gradient_bytes: u64,
    /// g^ℓ: the parameter gradients B^ℓ creates and leaves in `.grad` until
    /// the step ends, as PyTorch's `zero_grad(set_to_none=True)` (its
    /// default) makes them: counted in the chain's memory from B^ℓ on, and
    /// in o_b^ℓ while B^ℓ runs. 0 when they are outside the chain (kept
    /// across steps with `set_to_none=False`, counted with the weights).
    /// See [`Chain::gradient_bytes`] for how the planners count them.
    pub parameter_gradient_bytes: u64,
    /// o_f^ℓ: transient extra memory while F_all^ℓ (the recording forward)
    /// runs, on top of its output; also F_ck^ℓ's and F_∅^ℓ's unless
    /// `forward_nograd_overhead_bytes` is given. Signed like o_b^ℓ, but F^ℓ
    /// keeps everything it leaves (F_all: ā^ℓ), so a valid chain has
    /// o_f^ℓ ≥ 0.
    pub forward_overhead_bytes: i64,
    /// o_b^ℓ: transient extra memory while B^ℓ runs, on top of δ^ℓ, ā^ℓ,
    /// δ^{ℓ-1} and the input (and of the parameter gradients earlier
    /// backwards left; its own g^ℓ is part of o_b^ℓ). Negative when autograd
    /// frees δ^ℓ and parts of ā^ℓ before B^ℓ ends (measured that way, the
    /// memory during B^ℓ is often below the sum); at least
    /// −(ω_δ^ℓ + ω_ā^ℓ) + g^ℓ: B^ℓ frees δ^ℓ and ā^ℓ and keeps g^ℓ.
    pub backward_overhead_bytes: i64,
    /// ι^ℓ: the bytes of a^{ℓ-1} that no graph reads once F^ℓ has run —
    /// not B^ℓ, and not B^{ℓ-1} when a^{ℓ-1} is part of ā^{ℓ-1} (a loss's
    /// logits: cross-entropy's backward reads its softmax, the head's
    /// backward its own input). The runtime drops them as B^ℓ starts, so
    /// while B^ℓ runs its input holds ι^ℓ less than rotor's model says; the
    /// books keep a^{ℓ-1} / ā^{ℓ-1} whole otherwise (an over-count of ι^ℓ
    /// from B^ℓ to B^{ℓ-1}, never an under-count). So that this over-count
    /// never sets a peak, ι^ℓ ≤ o_b^{ℓ,k} + ω_δ^ℓ + ω_ā^{ℓ,k} − g^ℓ for
    /// every option k: the memory after B^ℓ stays below the memory during
    /// it. 0: B^ℓ reads its input, or it was not measured. ι^1 = 0 (a^0 is
    /// the caller's batch).
    pub input_freed_bytes: u64,
    /// u_f^ℓ of a forward that records no graph (F_ck, F_∅ run under
    /// no-grad); None: the same as `forward_seconds`.
    pub forward_nograd_seconds: Option<f64>,
    /// o_f∅^ℓ: transient extra memory while a forward that records no graph
    /// (F_ck^ℓ, F_∅^ℓ) runs, on top of its output; None: the same as
    /// `forward_overhead_bytes`. Frameworks pick other kernels without
    /// autograd (another attention, another cuDNN workspace), so the two
    /// transients can differ either way. ≥ 0 in a valid chain.
    pub forward_nograd_overhead_bytes: Option<i64>,
    /// The qualified name of the framework module(s) the stage runs
    /// (`transformer.h.3`, `conv1+bn1+relu+maxpool`), for people; None when
    /// not known. Outside the digest, like `name`.
    pub module: Option<String>,
    /// The qualified names of the trainable parameters the stage reads, as
    /// the model names them (`classifier.3.weight`); empty when not known.
    /// `module` may name a whole parent of which the stage runs a part (a
    /// classifier cut in two), so this, not `module`, says which weights
    /// two stages share (the export's tied-weight bookkeeping). Outside the
    /// digest, like `module`.
    pub parameters: Vec<String>,
    /// Other ways to run F_all^ℓ that keep less than ā^ℓ and recompute the
    /// rest inside B^ℓ (selective checkpointing policies, a compiled
    /// stage's partitions; Rockmate's per-block options). Option 0 is
    /// always the classic F_all^ℓ (this stage's own fields); menu entry k−1
    /// is option k. Empty: only the classic one.
    pub menu: Vec<MenuOption>,
}

/// One entry of a stage's menu: another F_all^ℓ, which keeps ā^{ℓ,k} (less
/// than ā^ℓ) for B^ℓ, and a B^ℓ that recomputes the rest first. The
/// forward is the same computation, so it takes u_f^ℓ.
#[derive(Clone, Debug, PartialEq)]
pub struct MenuOption {
    /// What runs it (`save_mm_attention`, `save_nothing`, `compile@0.4`):
    /// the runtime lowers the option by this name.
    pub policy: String,
    /// ω_ā^{ℓ,k}: what this F_all^ℓ keeps for B^ℓ, a^ℓ included.
    pub saved_bytes: u64,
    /// The time B^ℓ spends recomputing what was not kept, on top of u_b^ℓ.
    pub backward_extra_seconds: f64,
    /// o_b^{ℓ,k}: B^ℓ's transient under this option (the recomputed
    /// intermediates included), signed as o_b^ℓ.
    pub backward_overhead_bytes: i64,
    /// o_f^{ℓ,k}: F_all^ℓ's transient under this option; None: o_f^ℓ.
    pub forward_overhead_bytes: Option<i64>,
}

/// The most menu entries a stage may have (options are numbered in a byte).
pub const MAX_MENU: usize = 15;

/// What F_all^ℓ with one option keeps and what its B^ℓ costs: the numbers
/// every DP and the simulator read, option 0 (the classic) included.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// ω_ā^{ℓ,k}.
    pub saved_bytes: u64,
    /// o_f^{ℓ,k} (≥ 0 in a validated chain).
    pub forward_overhead: u64,
    /// u_b^ℓ plus the option's recomputation.
    pub backward_seconds: f64,
    /// o_b^{ℓ,k}.
    pub backward_overhead_bytes: i64,
}

impl Stage {
    /// A stage with no overheads and δ^ℓ the size of a^ℓ (the usual case).
    pub fn new(
        name: impl Into<String>,
        forward_seconds: f64,
        backward_seconds: f64,
        output_bytes: u64,
        saved_bytes: u64,
    ) -> Stage {
        Stage {
            name: name.into(),
            forward_seconds,
            backward_seconds,
            output_bytes,
            saved_bytes,
            gradient_bytes: output_bytes,
            parameter_gradient_bytes: 0,
            forward_overhead_bytes: 0,
            backward_overhead_bytes: 0,
            input_freed_bytes: 0,
            forward_nograd_seconds: None,
            forward_nograd_overhead_bytes: None,
            module: None,
            parameters: Vec::new(),
            menu: Vec::new(),
        }
    }

    /// What B^ℓ under option `k` leaves of δ^ℓ and ā^{ℓ,k} while it runs
    /// (o_b^{ℓ,k} + ω_δ^ℓ + ω_ā^{ℓ,k} − g^ℓ): the most ι^ℓ may be
    /// ([`input_freed_bytes`](Self::input_freed_bytes)).
    pub fn backward_room(&self, k: usize) -> i128 {
        let c = self.choice(k);
        c.backward_overhead_bytes as i128 + self.gradient_bytes as i128 + c.saved_bytes as i128
            - self.parameter_gradient_bytes as i128
    }

    /// How many ways F_all^ℓ can run: the classic one and the menu's.
    pub fn option_count(&self) -> usize {
        1 + self.menu.len()
    }

    /// Option `k` of F_all^ℓ: 0 the classic (ā^ℓ, u_b^ℓ, o_b^ℓ), k ≥ 1
    /// menu entry k − 1. Panics past the menu (a schedule is checked first).
    pub fn choice(&self, k: usize) -> Choice {
        if k == 0 {
            return Choice {
                saved_bytes: self.saved_bytes,
                forward_overhead: self.forward_overhead(),
                backward_seconds: self.backward_seconds,
                backward_overhead_bytes: self.backward_overhead_bytes,
            };
        }
        let o = &self.menu[k - 1];
        Choice {
            saved_bytes: o.saved_bytes,
            forward_overhead: o
                .forward_overhead_bytes
                .unwrap_or(self.forward_overhead_bytes)
                .max(0) as u64,
            // u_b + extra, added once here so every reader gets the same f64.
            backward_seconds: self.backward_seconds + o.backward_extra_seconds,
            backward_overhead_bytes: o.backward_overhead_bytes,
        }
    }

    /// The policy name of option `k` (`all` for the classic F_all).
    pub fn policy(&self, k: usize) -> &str {
        if k == 0 {
            "all"
        } else {
            &self.menu[k - 1].policy
        }
    }

    /// Time of F_ck^ℓ and F_∅^ℓ: the no-grad time when measured, else u_f^ℓ.
    pub fn nograd_forward_seconds(&self) -> f64 {
        self.forward_nograd_seconds.unwrap_or(self.forward_seconds)
    }

    /// o_f^ℓ in bytes, F_all^ℓ's transient (≥ 0 in a validated chain).
    pub fn forward_overhead(&self) -> u64 {
        self.forward_overhead_bytes.max(0) as u64
    }

    /// o_f∅^ℓ in bytes, the transient of F_ck^ℓ and F_∅^ℓ: the no-grad
    /// overhead when given, else o_f^ℓ (≥ 0 in a validated chain).
    pub fn nograd_forward_overhead(&self) -> u64 {
        self.forward_nograd_overhead_bytes
            .unwrap_or(self.forward_overhead_bytes)
            .max(0) as u64
    }

    /// The transient of a forward of either kind: o_f^ℓ when `records`
    /// (F_all^ℓ), o_f∅^ℓ otherwise (F_ck^ℓ, F_∅^ℓ).
    pub fn forward_overhead_of(&self, records: bool) -> u64 {
        if records {
            self.forward_overhead()
        } else {
            self.nograd_forward_overhead()
        }
    }
}

/// A chain of stages 1..L; the last stage computes the loss.
///
/// Memory accounting starts with a^0 (the input batch) and δ^L (the seed of
/// the backward pass) resident; both count against the budget.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chain {
    pub name: String,
    /// Where the numbers come from ("analytic", "measured on …", "rotor import").
    pub source: String,
    /// ω_a^0: size of the input batch a^0.
    pub input_bytes: u64,
    /// ω_δ^0: size of δ^0, the gradient B^1 produces (defaults to `input_bytes`).
    pub input_gradient_bytes: u64,
    /// β: host↔device bandwidth for offloading, if known.
    pub bandwidth_bytes_per_s: Option<f64>,
    pub stages: Vec<Stage>,
    /// The tensors of the batch the numbers were measured on, for people;
    /// None when not known. Outside the digest, like `name` and `source`.
    pub inputs: Option<Vec<InputTensor>>,
    /// What the model the numbers were measured on is made of, as the
    /// runtime that measured it names it (`remat_torch` writes
    /// `sha256:…` of every stage's parameter and buffer shapes and dtypes):
    /// a runtime refuses a plan on a model whose fingerprint differs. None
    /// when not known. Outside the digest, like `inputs`.
    pub model_fingerprint: Option<String>,
    /// Steps of the same model measured another way (`peer`): drawn beside
    /// the planners' curves, outside the digest.
    pub peers: Vec<Peer>,
    /// The step constants' bytes (the target, masks, position ids, tables
    /// more than one stage reads), made once per step and held outside the
    /// chain's memory as the weights are; None when not known. They change
    /// no plan, but say what a budget means: two chains of one model staged
    /// differently hold different constants, so one real memory is two
    /// budgets, apart by the difference. Outside the digest.
    pub constant_bytes: Option<u64>,
}

/// The largest chain the tools accept; beyond it tables and pages get unwieldy.
pub const MAX_STAGES: usize = 5000;

impl Chain {
    /// L, the number of stages.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Stage ℓ, numbered 1..=L as in the papers.
    pub fn stage(&self, l: usize) -> &Stage {
        &self.stages[l - 1]
    }

    /// ω_a^ℓ for ℓ in 0..=L (ω_a^0 is the input).
    pub fn output_bytes(&self, l: usize) -> u64 {
        if l == 0 {
            self.input_bytes
        } else {
            self.stages[l - 1].output_bytes
        }
    }

    /// ω_δ^ℓ for ℓ in 0..=L as every planner and the simulator count it:
    /// δ^ℓ plus the parameter gradients B^L … B^{ℓ+1} left resident,
    /// Σ_{j>ℓ} g^j ([`Stage::parameter_gradient_bytes`]; 0 in chains that
    /// keep them outside). δ^ℓ lives from the end of B^{ℓ+1} to the end of
    /// B^ℓ, the backwards run in the order L … 1 and no schedule moves a
    /// gradient, so at every instant of every schedule the resident δ's
    /// carry exactly the gradients accumulated so far: folding them in
    /// leaves every DP unchanged and exact (`crates/remat-core/tests/parameter_gradients.rs`
    /// checks the fold against a replay that books them apart). O(L − ℓ);
    /// [`gradient_sizes`](Self::gradient_sizes) gives all of them in O(L).
    pub fn gradient_bytes(&self, l: usize) -> u64 {
        self.activation_gradient_bytes(l) + self.parameter_gradients_after(l)
    }

    /// ω_δ^ℓ alone, as the stage gives it (no parameter gradient folded
    /// in): what a piece of the chain on another device starts from.
    pub fn activation_gradient_bytes(&self, l: usize) -> u64 {
        if l == 0 {
            self.input_gradient_bytes
        } else {
            self.stages[l - 1].gradient_bytes
        }
    }

    /// [`gradient_bytes`](Self::gradient_bytes) for ℓ = 0..=L.
    pub fn gradient_sizes(&self) -> Vec<u64> {
        let n = self.len();
        let mut sizes = vec![0; n + 1];
        let mut after = 0u64;
        for l in (0..=n).rev() {
            sizes[l] = self.activation_gradient_bytes(l) + after;
            if l > 0 {
                after += self.stages[l - 1].parameter_gradient_bytes;
            }
        }
        sizes
    }

    /// Σ_{j>ℓ} g^j: the parameter gradients resident once B^{ℓ+1} has run.
    pub fn parameter_gradients_after(&self, l: usize) -> u64 {
        self.stages[l..]
            .iter()
            .map(|s| s.parameter_gradient_bytes)
            .sum()
    }

    /// Σ g^ℓ: every parameter gradient the chain counts (resident at the
    /// step's end).
    pub fn parameter_gradient_total(&self) -> u64 {
        self.parameter_gradients_after(0)
    }

    /// Whether the chain counts parameter gradients at all (described with
    /// `zero_grad(set_to_none=True)`, or a tied weight's): what the
    /// exports, the device budget and the page's keys ask.
    pub fn counts_parameter_gradients(&self) -> bool {
        self.stages.iter().any(|s| s.parameter_gradient_bytes > 0)
    }

    /// o_b^{ℓ,k} as the planners count it: B^ℓ's transient less the
    /// parameter gradients Σ_{j≥ℓ} g^j that [`gradient_bytes`]
    /// (Self::gradient_bytes) already counts in δ^{ℓ-1}, so that
    /// ω_δ^{ℓ-1} + o_b^{ℓ,k} is what the stage's own numbers say; and less
    /// ι^ℓ, the part of the input dropped as B^ℓ starts
    /// ([`Stage::input_freed_bytes`]), since every planner counts B^ℓ on
    /// top of its whole input.
    pub fn backward_overhead_of(&self, l: usize, k: usize) -> i64 {
        let stage = self.stage(l);
        let inside = self.parameter_gradients_after(l - 1);
        stage.choice(k).backward_overhead_bytes - inside as i64 - stage.input_freed_bytes as i64
    }

    /// ω_ā^ℓ for ℓ in 1..=L.
    pub fn saved_bytes(&self, l: usize) -> u64 {
        self.stages[l - 1].saved_bytes
    }

    /// The memory B^ℓ needs besides its input a^{ℓ-1} / ā^{ℓ-1}: the most of
    /// ω_δ^ℓ + ω_ā^ℓ (what must be resident when it starts) and
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ − ι^ℓ (while it runs). A negative
    /// o_b^ℓ (autograd freeing δ^ℓ and parts of ā^ℓ as it goes) and the
    /// input's ι^ℓ dropped as it starts lower the second term only: they
    /// cannot make room before B^ℓ has started, so a prefetch needed by B^ℓ
    /// still has to fit next to δ^ℓ, ā^ℓ and the whole input. Every DP and
    /// the simulator count B^ℓ through this one term.
    pub fn backward_bytes(&self, l: usize) -> u64 {
        self.backward_bytes_of(l, 0)
    }

    /// [`backward_bytes`](Self::backward_bytes) when F_all^ℓ ran option `k`
    /// (its ω_ā^{ℓ,k} and o_b^{ℓ,k}).
    pub fn backward_bytes_of(&self, l: usize, k: usize) -> u64 {
        let c = self.stage(l).choice(k);
        let start = self.gradient_bytes(l) as i128 + c.saved_bytes as i128;
        let during = self.gradient_bytes(l - 1) as i128 + self.backward_overhead_of(l, k) as i128;
        (start + during.max(0)) as u64
    }

    /// Whether any stage has a menu (the solvers that cannot choose an
    /// option say so).
    pub fn has_menus(&self) -> bool {
        self.stages.iter().any(|s| !s.menu.is_empty())
    }

    /// The time of one training step with no memory limit: Σ u_f + u_b.
    pub fn sequential_seconds(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.forward_seconds + s.backward_seconds)
            .sum()
    }

    /// The batch it was measured on in one line (`input_ids int64 [4, 128]`);
    /// None when no input is described.
    pub fn inputs_summary(&self) -> Option<String> {
        self.inputs
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(inputs::describe)
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ChainError> {
        if self.stages.is_empty() {
            return Err(ChainError::new("stages", "the chain has no stage"));
        }
        if self.stages.len() > MAX_STAGES {
            return Err(ChainError::new(
                "stages",
                format!(
                    "{} stages is more than the {MAX_STAGES} this tool accepts; group layers into blocks",
                    self.stages.len()
                ),
            ));
        }
        if let Some(bw) = self.bandwidth_bytes_per_s {
            if bw < 0.0 {
                return Err(ChainError::new(
                    "bandwidth_bytes_per_s",
                    format!("must be ≥ 0, got {bw}"),
                ));
            }
            // Below 1 B/s (a subnormal, say) size/β overflows to infinity.
            if !bw.is_finite() || (bw > 0.0 && bw < 1.0) {
                return Err(ChainError::new(
                    "bandwidth_bytes_per_s",
                    format!("must be 0 (no link) or a finite rate of at least 1 byte/s, got {bw}"),
                ));
            }
        }
        if let Some(tensors) = &self.inputs {
            inputs::validate(tensors)?;
        }
        peer::validate(&self.peers)?;
        for (i, s) in self.stages.iter().enumerate() {
            for (field, v) in [
                ("forward_seconds", s.forward_seconds),
                ("backward_seconds", s.backward_seconds),
                (
                    "forward_nograd_seconds",
                    s.forward_nograd_seconds.unwrap_or(0.0),
                ),
            ] {
                let problem = if !v.is_finite() {
                    "must be finite"
                } else if v < 0.0 {
                    "must be ≥ 0"
                } else {
                    continue;
                };
                return Err(ChainError::new(
                    format!("stages[{i}].{field}"),
                    format!("{problem}, got {v}"),
                ));
            }
            if s.saved_bytes < s.output_bytes {
                return Err(ChainError::new(
                    format!("stages[{i}].saved_bytes"),
                    format!(
                        "smaller than output_bytes ({} < {}): ā^ℓ includes a^ℓ",
                        s.saved_bytes, s.output_bytes
                    ),
                ));
            }
            // The memory during an operation never drops below what it leaves
            // resident: F^ℓ keeps its output (o_f ≥ 0), B^ℓ frees at most
            // δ^ℓ and ā^ℓ before it ends.
            for (field, v) in [
                ("forward_overhead_bytes", s.forward_overhead_bytes),
                (
                    "forward_nograd_overhead_bytes",
                    s.forward_nograd_overhead_bytes.unwrap_or(0),
                ),
            ] {
                if v < 0 {
                    return Err(ChainError::new(
                        format!("stages[{i}].{field}"),
                        format!(
                            "must be ≥ 0, got {v}: F^ℓ keeps what it computes, so the memory while it runs is at least what it leaves"
                        ),
                    ));
                }
            }
            let freed = s.gradient_bytes as i128 + s.saved_bytes as i128
                - s.parameter_gradient_bytes as i128;
            if (s.backward_overhead_bytes as i128) < -freed {
                return Err(ChainError::new(
                    format!("stages[{i}].backward_overhead_bytes"),
                    format!(
                        "{} is below {}: B^ℓ cannot free more than δ^ℓ and ā^ℓ while it runs, and keeps its parameter gradients",
                        s.backward_overhead_bytes,
                        bound_words(-freed, s.parameter_gradient_bytes > 0)
                    ),
                ));
            }
        }
        for (i, s) in self.stages.iter().enumerate() {
            validate_menu(i, s)?;
            validate_input_freed(self, i)?;
        }
        // A DP adds up to L recomputations of every forward: the time of a
        // step times L must stay finite, or every budget would look infeasible.
        let mut total_seconds = 0.0f64;
        for (i, s) in self.stages.iter().enumerate() {
            total_seconds += s.forward_seconds + s.backward_seconds;
            if !(total_seconds * (self.stages.len() as f64 + 1.0)).is_finite() {
                return Err(ChainError::new(
                    format!("stages[{i}].forward_seconds"),
                    format!(
                        "the stage times up to here add up to {total_seconds:e} s, too large to plan with (check the unit: seconds)"
                    ),
                ));
            }
        }
        // Sums of a few sizes must not overflow u64 anywhere in the solvers.
        let total: u128 = self
            .stages
            .iter()
            .map(|s| {
                s.saved_bytes as u128
                    + s.output_bytes as u128
                    + s.gradient_bytes as u128
                    + s.parameter_gradient_bytes as u128
                    + s.forward_overhead_bytes.unsigned_abs() as u128
                    + s.forward_nograd_overhead_bytes.map_or(0, i64::unsigned_abs) as u128
                    + s.backward_overhead_bytes.unsigned_abs() as u128
                    + s.input_freed_bytes as u128
                    + s.menu
                        .iter()
                        .map(|o| {
                            o.saved_bytes as u128
                                + o.backward_overhead_bytes.unsigned_abs() as u128
                                + o.forward_overhead_bytes.map_or(0, i64::unsigned_abs) as u128
                        })
                        .sum::<u128>()
            })
            .sum::<u128>()
            + self.input_bytes as u128
            + self.input_gradient_bytes as u128;
        if total > (u64::MAX / 4) as u128 {
            return Err(ChainError::new(
                "stages",
                "the sizes add up to more than 4 EiB; check the units (bytes)",
            ));
        }
        Ok(())
    }

    /// A digest of everything that decides whether a schedule is valid and
    /// how long it takes (sizes, times, input), not what only describes the
    /// chain: its name, source and inputs, the stages' names and modules
    /// (nor the bandwidth, which a schedule records itself).
    ///
    /// FNV-1a over a canonical encoding: cheap, dependency-free and stable
    /// across platforms; it identifies a chain, it does not protect it.
    pub fn digest(&self) -> String {
        let mut h = Fnv1a::new();
        h.write_u64(self.input_bytes);
        h.write_u64(self.input_gradient_bytes);
        h.write_u64(self.stages.len() as u64);
        for s in &self.stages {
            h.write_u64(s.forward_seconds.to_bits());
            h.write_u64(s.backward_seconds.to_bits());
            h.write_u64(s.output_bytes);
            h.write_u64(s.saved_bytes);
            h.write_u64(s.gradient_bytes);
            // Two's complement: a non-negative overhead hashes as before.
            h.write_u64(s.forward_overhead_bytes as u64);
            h.write_u64(s.backward_overhead_bytes as u64);
            // Only when given, so chains without it keep their digests.
            if let Some(t) = s.forward_nograd_seconds {
                h.write_u64(0x6e6f_6772_6164); // "nograd"
                h.write_u64(t.to_bits());
            }
            if let Some(o) = s.forward_nograd_overhead_bytes {
                h.write_u64(0x6e6f_6772_6164_6f66); // "nogradof"
                h.write_u64(o as u64);
            }
            if s.parameter_gradient_bytes > 0 {
                h.write_u64(0x7061_7261_6d67); // "paramg"
                h.write_u64(s.parameter_gradient_bytes);
            }
            if s.input_freed_bytes > 0 {
                h.write_u64(0x696e_6672_6565); // "infree"
                h.write_u64(s.input_freed_bytes);
            }
            // The policy decides what runs, so it is part of the digest.
            for o in &s.menu {
                h.write_u64(0x6d65_6e75); // "menu"
                h.write_u64(o.policy.len() as u64);
                for b in o.policy.bytes() {
                    h.write_u64(b as u64);
                }
                h.write_u64(o.saved_bytes);
                h.write_u64(o.backward_extra_seconds.to_bits());
                h.write_u64(o.backward_overhead_bytes as u64);
                h.write_u64(o.forward_overhead_bytes.map_or(u64::MAX, |v| v as u64));
            }
        }
        format!("fnv1a64:{:016x}", h.finish())
    }
}

/// Checks stage `i`'s menu; the error names the entry and its field.
fn validate_menu(i: usize, s: &Stage) -> Result<(), ChainError> {
    if s.menu.len() > MAX_MENU {
        return Err(ChainError::new(
            format!("stages[{i}].menu"),
            format!(
                "{} options is more than the {MAX_MENU} a stage may have",
                s.menu.len()
            ),
        ));
    }
    for (k, o) in s.menu.iter().enumerate() {
        let field = |f: &str| format!("stages[{i}].menu[{k}].{f}");
        if o.policy.trim().is_empty() {
            return Err(ChainError::new(field("policy"), "must name the policy"));
        }
        if s.menu[..k].iter().any(|p| p.policy == o.policy) || o.policy == "all" {
            return Err(ChainError::new(
                field("policy"),
                format!("`{}` is already an option of this stage", o.policy),
            ));
        }
        if o.saved_bytes < s.output_bytes {
            return Err(ChainError::new(
                field("saved_bytes"),
                format!(
                    "smaller than the stage's output_bytes ({} < {}): what an option keeps includes a^ℓ",
                    o.saved_bytes, s.output_bytes
                ),
            ));
        }
        let extra = o.backward_extra_seconds;
        if !extra.is_finite() || extra < 0.0 {
            return Err(ChainError::new(
                field("backward_extra_seconds"),
                format!("must be a finite number ≥ 0, got {extra}: recomputing takes time"),
            ));
        }
        if o.forward_overhead_bytes.is_some_and(|v| v < 0) {
            return Err(ChainError::new(
                field("forward_overhead_bytes"),
                format!(
                    "must be ≥ 0, got {}: F^ℓ keeps what it computes",
                    o.forward_overhead_bytes.unwrap_or(0)
                ),
            ));
        }
        let freed =
            s.gradient_bytes as i128 + o.saved_bytes as i128 - s.parameter_gradient_bytes as i128;
        if (o.backward_overhead_bytes as i128) < -freed {
            return Err(ChainError::new(
                field("backward_overhead_bytes"),
                format!(
                    "{} is below {}: B^ℓ cannot free more than δ^ℓ and what the option kept, and keeps its parameter gradients",
                    o.backward_overhead_bytes,
                    bound_words(-freed, s.parameter_gradient_bytes > 0)
                ),
            ));
        }
    }
    Ok(())
}

/// Checks stage `i`'s ι (`input_freed_bytes`): part of its input, which
/// is not the caller's batch.
fn validate_input_freed(chain: &Chain, i: usize) -> Result<(), ChainError> {
    let freed = chain.stages[i].input_freed_bytes;
    if freed == 0 {
        return Ok(());
    }
    let field = format!("stages[{i}].input_freed_bytes");
    if i == 0 {
        return Err(ChainError::new(
            field,
            format!(
                "must be 0 for the first stage, got {freed}: its input is the caller's batch, which the step never drops"
            ),
        ));
    }
    let input = chain.stages[i - 1].output_bytes;
    if freed > input {
        return Err(ChainError::new(
            field,
            format!(
                "{freed} is more than the stage's input (stages[{}].output_bytes = {input}): B^ℓ can drop only what a^{{ℓ-1}} holds",
                i - 1
            ),
        ));
    }
    // The books keep a^{ℓ-1} / ā^{ℓ-1} whole after B^ℓ, so the memory once
    // B^ℓ has ended (δ^{ℓ-1} and g^ℓ in, δ^ℓ and ā^ℓ out) must not exceed
    // the memory while it ran: ι^ℓ at most what B^ℓ's own transient leaves
    // of δ^ℓ and ā^ℓ, for every option. Otherwise an instant the real run
    // never has would set the peak (`describe_chain` clamps ι to this).
    let s = &chain.stages[i];
    for k in 0..s.option_count() {
        let room = s.backward_room(k);
        if freed as i128 > room {
            let what = if k == 0 {
                String::new()
            } else {
                format!(" under menu option `{}`", s.policy(k))
            };
            return Err(ChainError::new(
                field,
                format!(
                    "{freed} is more than B^ℓ leaves of δ^ℓ and ā^ℓ while it runs{what}: backward_overhead_bytes + gradient_bytes + saved_bytes − parameter_gradient_bytes = {room}"
                ),
            ));
        }
    }
    Ok(())
}

/// The least o_b in words: `−(gradient_bytes + saved_bytes) = −12`, with
/// `+ parameter_gradient_bytes` when the stage has some.
fn bound_words(least: i128, with_parameters: bool) -> String {
    let value = if least < 0 {
        format!("−{}", least.unsigned_abs())
    } else {
        least.to_string()
    };
    if with_parameters {
        format!("−(gradient_bytes + saved_bytes) + parameter_gradient_bytes = {value}")
    } else {
        format!("−(gradient_bytes + saved_bytes) = {value}")
    }
}

struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
    fn write_u64(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} stages)", self.name, self.stages.len())
    }
}
