//! A training step as a chain of stages 1..L (rotor report, Section 3.1).

use super::error::ChainError;
use super::inputs::{self, InputTensor};
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
    /// o_f^ℓ: transient extra memory while F_all^ℓ (the recording forward)
    /// runs, on top of its output; also F_ck^ℓ's and F_∅^ℓ's unless
    /// `forward_nograd_overhead_bytes` is given. Signed like o_b^ℓ, but F^ℓ
    /// keeps everything it leaves (F_all: ā^ℓ), so a valid chain has
    /// o_f^ℓ ≥ 0.
    pub forward_overhead_bytes: i64,
    /// o_b^ℓ: transient extra memory while B^ℓ runs, on top of δ^ℓ, ā^ℓ,
    /// δ^{ℓ-1} and the input. Negative when autograd frees δ^ℓ and parts of
    /// ā^ℓ before B^ℓ ends (measured that way, the memory during B^ℓ is often
    /// below the sum); at least −(ω_δ^ℓ + ω_ā^ℓ), what B^ℓ frees.
    pub backward_overhead_bytes: i64,
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
            forward_overhead_bytes: 0,
            backward_overhead_bytes: 0,
            forward_nograd_seconds: None,
            forward_nograd_overhead_bytes: None,
            module: None,
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
#[derive(Clone, Debug, PartialEq)]
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

    /// ω_δ^ℓ for ℓ in 0..=L.
    pub fn gradient_bytes(&self, l: usize) -> u64 {
        if l == 0 {
            self.input_gradient_bytes
        } else {
            self.stages[l - 1].gradient_bytes
        }
    }

    /// ω_ā^ℓ for ℓ in 1..=L.
    pub fn saved_bytes(&self, l: usize) -> u64 {
        self.stages[l - 1].saved_bytes
    }

    /// The memory B^ℓ needs besides its input a^{ℓ-1} / ā^{ℓ-1}: the most of
    /// ω_δ^ℓ + ω_ā^ℓ (what must be resident when it starts) and
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ (while it runs). A negative o_b^ℓ
    /// (autograd freeing δ^ℓ and parts of ā^ℓ as it goes) lowers the second
    /// term only: it cannot make room before B^ℓ has started, so a prefetch
    /// needed by B^ℓ still has to fit next to δ^ℓ and ā^ℓ. Every DP and the
    /// simulator count B^ℓ through this one term.
    pub fn backward_bytes(&self, l: usize) -> u64 {
        let s = self.stage(l);
        let start = s.gradient_bytes as i128 + s.saved_bytes as i128;
        let during = self.gradient_bytes(l - 1) as i128 + s.backward_overhead_bytes as i128;
        (start + during.max(0)) as u64
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
            let freed = s.gradient_bytes as i128 + s.saved_bytes as i128;
            if (s.backward_overhead_bytes as i128) < -freed {
                return Err(ChainError::new(
                    format!("stages[{i}].backward_overhead_bytes"),
                    format!(
                        "{} is below −(gradient_bytes + saved_bytes) = −{freed}: B^ℓ cannot free more than δ^ℓ and ā^ℓ while it runs",
                        s.backward_overhead_bytes
                    ),
                ));
            }
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
                    + s.forward_overhead_bytes.unsigned_abs() as u128
                    + s.forward_nograd_overhead_bytes.map_or(0, i64::unsigned_abs) as u128
                    + s.backward_overhead_bytes.unsigned_abs() as u128
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
        }
        format!("fnv1a64:{:016x}", h.finish())
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
