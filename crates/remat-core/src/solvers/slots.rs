//! A chain on a memory grid: sizes in slots, rounded up so a schedule that
//! fits in slots fits in bytes, and times, indexed by stage 0..=L (stage 0
//! is the input batch: a^0 and δ^0, no ā, no time).

use crate::model::{Chain, Stage};

/// ⌊budget / slots⌋ bytes a slot (at least 1), and how many of them fit.
pub(crate) fn grid(budget_bytes: u64, slots: usize) -> (u64, usize) {
    let slot_bytes = (budget_bytes / slots as u64).max(1);
    (
        slot_bytes,
        ((budget_bytes / slot_bytes) as usize).min(slots),
    )
}

pub(crate) struct SlotSizes {
    /// ω_a^ℓ.
    pub a: Vec<usize>,
    /// ω_ā^ℓ (0 for ℓ = 0).
    pub abar: Vec<usize>,
    /// ω_δ^ℓ.
    pub d: Vec<usize>,
    /// o_f^ℓ (never negative in a valid chain).
    pub of: Vec<usize>,
    /// What B^ℓ needs besides its input: ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ
    /// ([`Chain::backward_bytes`]), rounded up as one sum so that a negative
    /// o_b^ℓ needs no signed arithmetic in the DPs (0 for ℓ = 0).
    pub b: Vec<usize>,
    /// u_f^ℓ, u_b^ℓ in seconds.
    pub uf: Vec<f64>,
    pub ub: Vec<f64>,
    /// u_f^ℓ of F_ck^ℓ and F_∅^ℓ, which record no graph
    /// ([`Stage::nograd_forward_seconds`]).
    pub ufn: Vec<f64>,
}

impl SlotSizes {
    /// Sizes in slots of `slot_bytes`, capped at `cap` (anything that large
    /// is already infeasible, and the cap keeps sums from overflowing).
    pub fn new(chain: &Chain, slot_bytes: u64, cap: usize) -> SlotSizes {
        let n = chain.len();
        let slot_bytes = slot_bytes.max(1);
        let in_slots = |b: u64| b.div_ceil(slot_bytes).min(cap as u64) as usize;
        let per_stage = |f: fn(&Stage) -> u64| -> Vec<usize> {
            (0..=n)
                .map(|l| {
                    if l == 0 {
                        0
                    } else {
                        in_slots(f(chain.stage(l)))
                    }
                })
                .collect()
        };
        let times = |f: fn(&Stage) -> f64| -> Vec<f64> {
            (0..=n)
                .map(|l| if l == 0 { 0.0 } else { f(chain.stage(l)) })
                .collect()
        };
        SlotSizes {
            a: (0..=n).map(|l| in_slots(chain.output_bytes(l))).collect(),
            abar: per_stage(|s| s.saved_bytes),
            d: (0..=n).map(|l| in_slots(chain.gradient_bytes(l))).collect(),
            of: per_stage(|s| s.forward_overhead()),
            b: (0..=n)
                .map(|l| {
                    if l == 0 {
                        0
                    } else {
                        in_slots(chain.backward_bytes(l))
                    }
                })
                .collect(),
            uf: times(|s| s.forward_seconds),
            ub: times(|s| s.backward_seconds),
            ufn: times(|s| s.nograd_forward_seconds()),
        }
    }
}
