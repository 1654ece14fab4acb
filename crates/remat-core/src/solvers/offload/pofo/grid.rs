//! One chain on pofo's grid: sizes in slots, times, β in slots per
//! second, and the idle times of Lemma 1 (the paper's Appendix B).

use super::kernel::{self, leftover};
use crate::model::Chain;
use crate::solvers::slots::{grid, SlotSizes};

/// Sizes in slots and times of one chain on one grid.
pub(super) struct Grid {
    pub(super) n: usize,
    /// N: slots of the budget.
    pub(super) slots: usize,
    /// β in slots per second; 0 when there is no link.
    pub(super) beta: f64,
    pub(super) a: Vec<usize>,
    pub(super) abar: Vec<usize>,
    pub(super) d: Vec<usize>,
    pub(super) of: Vec<usize>,
    /// o_f∅^ℓ: the transient of the no-grad F_ck / F_∅.
    pub(super) ofn: Vec<usize>,
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ (o_b may be negative).
    pub(super) b: Vec<usize>,
    pub(super) uf: Vec<f64>,
    pub(super) ub: Vec<f64>,
    /// u_f^ℓ under no-grad: the F_ck / F_∅ chains of Case 2.
    pub(super) ufn: Vec<f64>,
    /// Σ_{k=ℓ}^{L} (u_f + u_b): no schedule of stages ℓ..L is faster.
    pub(super) rest: Vec<f64>,
    /// D_ℓ = Σ_{k<ℓ} max(a^{k-1}, ā^{k-1}), at most N: the most that can
    /// have been offloaded before stage ℓ (each stage's input at most
    /// once). It bounds Δ_F and Δ_B of every OC state at stage ℓ, and the Δ
    /// of every C_Δ(ℓ, ·) an optimal path can read — see `Grid::reached`.
    pub(super) sent_before: Vec<usize>,
}

impl Grid {
    pub(super) fn new(
        chain: &Chain,
        budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
    ) -> Grid {
        let n = chain.len();
        let (slot_bytes, slots) = grid(budget_bytes, slots);
        let sizes = SlotSizes::new(chain, slot_bytes, slots + 1);
        let mut rest = vec![0.0; n + 2];
        for l in (1..=n).rev() {
            rest[l] = rest[l + 1] + (sizes.uf[l] + sizes.ub[l]);
        }
        let mut sent_before = vec![0usize; n + 2];
        for l in 1..=n {
            let input = sizes.a[l - 1].max(sizes.abar[l - 1]);
            sent_before[l + 1] = sent_before[l].saturating_add(input).min(slots);
        }
        Grid {
            n,
            slots,
            beta: bandwidth.filter(|b| *b > 0.0).unwrap_or(0.0) / slot_bytes as f64,
            a: sizes.a,
            abar: sizes.abar,
            d: sizes.d,
            of: sizes.of,
            ofn: sizes.ofn,
            b: sizes.b,
            uf: sizes.uf,
            ub: sizes.ub,
            ufn: sizes.ufn,
            rest,
            sent_before,
        }
    }

    /// The largest Δ (Δ_F or Δ_B) of a state at stage ℓ, or of a C_Δ(ℓ, ·)
    /// cell, that the DP can reach from where every plan starts, OC at
    /// stage 1 with nothing in flight. Along every step Δ grows by at most
    /// the input the step offloads (an F_all or F_ck^i sending its input
    /// adds I_i^x; the link only lowers Δ, and rounding up a leftover never
    /// passes what it rounds), and C_Δ(ℓ, ·) is read at Δ_B of a state at ℓ,
    /// or by C_Δ(k ≤ ℓ, ·) at a Δ no larger than its own. So cells past
    /// D_ℓ are on no path: the fill leaves them ∞ and skips their work,
    /// which is most of it at the first stages of a long chain (the
    /// candidates are also tried over more splits there).
    pub(super) fn reached(&self, l: usize) -> usize {
        self.sent_before[l]
    }

    /// Lemma 1: the idle time that lets the link make up `excess` slots.
    pub(super) fn idle(&self, excess: f64) -> f64 {
        kernel::idle(excess, self.beta)
    }

    /// A Δ left over, rounded up to slots (what a sub-problem is asked).
    pub(super) fn leftover(&self, x: f64) -> usize {
        leftover(x)
    }

    /// 𝓜_{F_all^i}^{i,j}: F_all^i with δ^j resident (its input is counted apart).
    pub(super) fn m_fall(&self, i: usize, j: usize) -> usize {
        self.d[j] + self.abar[i] + self.of[i]
    }

    /// 𝓜_{F^k}^{i,j} for the F_ck^i / F_∅^k chain: a^{k-1} counts for k > i;
    /// no graph is recorded, so the transient is o_f∅^k.
    pub(super) fn m_fnone(&self, i: usize, k: usize, j: usize) -> usize {
        let input = if k == i { 0 } else { self.a[k - 1] };
        self.d[j] + input + self.a[k] + self.ofn[k]
    }

    /// 𝓜_{B_i}^{i,j}: B^i holds ā^i, δ^i and δ^{i-1}.
    pub(super) fn m_b(&self, i: usize) -> usize {
        self.b[i]
    }

    /// I_i^x: a^{i-1} (x = 0) or ā^{i-1} (x = 1).
    pub(super) fn input(&self, i: usize, x: usize) -> usize {
        if x == 1 {
            self.abar[i - 1]
        } else {
            self.a[i - 1]
        }
    }
}

/// The largest of `xs` (−∞ if empty). The rows folded hold no NaN (a
/// square or pair is set before it is read: ∞ or a sum), so the plain
/// comparison (one `maxsd`) equals `f64::max`, which pays for NaN
/// handling on every element of the fill's hottest folds.
#[inline(always)]
pub(super) fn largest(xs: &[f64]) -> f64 {
    let mut most = f64::NEG_INFINITY;
    for &x in xs {
        if x > most {
            most = x;
        }
    }
    most
}

/// The least of `xs` (∞ if empty), as [`largest`].
#[inline(always)]
pub(super) fn least(xs: &[f64]) -> f64 {
    let mut low = f64::INFINITY;
    for &x in xs {
        if x < low {
            low = x;
        }
    }
    low
}

/// Lemma 1's excess for Case 2 of OC: reach + ((A + Δ_F + I) − N), where
/// `mfx` = A + Δ_F + I and `big_n` = N are whole numbers, so their
/// difference is exact and the only rounding is the one addition. The sum
/// thus depends on the free memory N − A alone, to the bit, which is what
/// lets one table on an absolute grid answer every budget ([`Table`]): the
/// state (A, ·) of a budget of N slots is the state (A + N' − N, ·) of a
/// table of N' slots. (Until this, the DP summed (reach − N) + mfx: two
/// roundings, the first depending on N.)
#[inline(always)]
pub(super) fn case2_excess(reach: f64, mfx: f64, big_n: f64) -> f64 {
    reach + (mfx - big_n)
}
