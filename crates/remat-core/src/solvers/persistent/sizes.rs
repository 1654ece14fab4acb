//! A chain's sizes and times as both rotor tables read them — the grid
//! (`mod.rs`, memory in slots) and the breakpoints (`steps.rs`, memory in
//! bytes) — and the memory needs of Theorem 1's cases in bytes, written
//! once: each table only says how bytes read on its own axis
//! ([`read_out::Cells::on_axis`](super::read_out::Cells::on_axis)).
//! Index 0 is the input batch: a^0 and δ^0, no ā, no time.

use super::{AllOption, Variant};
use crate::model::{Chain, Stage};

/// ω_a, ω_ā, ω_δ, o_f, o_f∅ and B's need in bytes, u_f, u_f∅, u_b in
/// seconds, per stage (index 0: the input).
pub(super) struct Sizes {
    pub variant: Variant,
    pub act_bytes: Vec<u64>,
    pub saved_bytes: Vec<u64>,
    pub grad: Vec<u64>,
    /// o_f (F_all's transient) and o_f∅ (F_ck's and F_∅'s).
    pub fwd_over: Vec<u64>,
    pub fwd_over_nograd: Vec<u64>,
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ ([`Chain::backward_bytes`]: o_b
    /// may be negative).
    pub bwd_need: Vec<u64>,
    pub forward: Vec<f64>,
    /// u_f^ℓ under no-grad (F_ck, F_∅).
    pub forward_nograd: Vec<f64>,
    pub backward: Vec<f64>,
}

/// `a + b`, or u64::MAX (no budget reaches it).
pub(super) fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

impl Sizes {
    pub fn of(chain: &Chain, variant: Variant) -> Sizes {
        let n = chain.len();
        let per_stage = |f: fn(&Stage) -> u64| -> Vec<u64> {
            (0..=n)
                .map(|l| if l == 0 { 0 } else { f(chain.stage(l)) })
                .collect()
        };
        let times = |f: fn(&Stage) -> f64| -> Vec<f64> {
            (0..=n)
                .map(|l| if l == 0 { 0.0 } else { f(chain.stage(l)) })
                .collect()
        };
        Sizes {
            variant,
            act_bytes: (0..=n).map(|l| chain.output_bytes(l)).collect(),
            saved_bytes: per_stage(|s| s.saved_bytes),
            grad: (0..=n).map(|l| chain.gradient_bytes(l)).collect(),
            fwd_over: per_stage(|s| s.forward_overhead()),
            fwd_over_nograd: per_stage(|s| s.nograd_forward_overhead()),
            bwd_need: (0..=n)
                .map(|l| if l == 0 { 0 } else { chain.backward_bytes(l) })
                .collect(),
            forward: times(|s| s.forward_seconds),
            forward_nograd: times(|s| s.forward_nograd_seconds.unwrap_or(s.forward_seconds)),
            backward: times(|s| s.backward_seconds),
        }
    }

    /// m_all^{s,t} in bytes: F_all^s with δ^t and ā^s resident, and B^s.
    pub fn m_all(&self, s: usize, t: usize) -> u64 {
        let forward = add(add(self.grad[t], self.saved_bytes[s]), self.fwd_over[s]);
        forward.max(self.bwd_need[s])
    }

    /// m_all^{s,t} of menu option `o` in bytes (its ā, o_f and B^s).
    pub fn m_all_with(&self, t: usize, o: &AllOption) -> u64 {
        add(add(self.grad[t], o.saved_bytes), o.fwd_over).max(o.bwd_need)
    }

    /// One term of m_∅ in bytes: F_∅^j with a^{j−1} and a^j resident.
    pub fn none_term(&self, j: usize) -> u64 {
        add(
            add(self.act_bytes[j - 1], self.act_bytes[j]),
            self.fwd_over_nograd[j],
        )
    }

    /// m_∅ in bytes of a split of (s, t) whose F_∅^j terms, s < j < s',
    /// peak at `inner`. (The rotor report takes s < j < t: with one o_f
    /// the terms j ≥ s' are implied by the sub-chain s'..t, which must run
    /// F^j; with o_f∅ apart that sub-chain may run it as an F_all with a
    /// smaller o_f, and the report's form misses such schedules.)
    pub fn m_none(&self, s: usize, t: usize, inner: u64) -> u64 {
        let d = self.grad[t];
        let first = add(add(d, self.act_bytes[s]), self.fwd_over_nograd[s]);
        first.max(add(d, inner))
    }

    /// Whether F_all^s may start a sub-chain longer than one (rotor).
    pub fn all_allowed(&self, s: usize, t: usize) -> bool {
        s == t || self.variant == Variant::Rotor
    }
}
