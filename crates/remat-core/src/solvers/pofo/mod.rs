//! `pofo` and `offload-only`: rematerialization combined with offloading.
//!
//! **Paper.** Beaumont, Eyraud-Dubois, Shilova, *Efficient Combination of
//! Rematerialization and Offloading for Training DNNs*, NeurIPS 2021, and
//! its supplementary Appendix B (see `docs/algorithms.md`). The forward phase is OC_x(i, A_i,
//! Δ_F, Δ_B) (B.1, Table 2), the backward phase C_Δ(i, j, A, Δ) (B.3), idle
//! times come from Lemma 1. `offload-only` is the same forward DP with F_all
//! as the only forward (no recomputation; the only decision is which inputs to
//! offload), as the paper's DYNPROG baseline under the same model.
//!
//! **Assumptions** (Section 3.2): (i) offloads happen in the forward phase and
//! prefetches after the loss, each tensor at most once; (ii) persistency; (iii)
//! transfers free and fill memory continuously (the DP's model). The schedule
//! we return moves each tensor at once, as the paper does for its
//! experiments; the simulator, with the budget as its memory limit, judges
//! it, so [`PofoPlan::predicted_seconds`] (the DP) and the simulated time are
//! reported side by side.
//!
//! **Adaptations to this crate's chain.** The last stage computes the loss
//! (the paper adds a stage L+1): OC(L) is F_all^L then B^L, with the idle
//! times ε_F, ε_B of Case 1 (B.1) and the link moving D_F = (u_F + ε_F) β of
//! the offloads during F_all^L and D_B = (u_B + ε_B) β of the prefetches
//! during B^L. What is left after that is timed by [`LossStep`]:
//!
//! * [`LossStep::Paper`] (the default, what runs unless asked otherwise):
//!   Appendix B.2, ε_G = (Δ_F' + Δ_B') / β with Δ_F' = max(Δ_F − D_F, 0) and
//!   Δ_B' = max(Δ_B − D_B, 0): the computation waits between F_all^L and B^L
//!   until both leftovers have crossed the link.
//! * [`LossStep::Overlap`]: the copy lane drains the offloads, then
//!   prefetches (from the end of F_all^L on) while B^L runs; the step ends at
//!   max(compute, copy). Never slower than `Paper`, but not the paper's DP.
//!
//! Memory is counted
//! as in [`persistent`](super::persistent), δ^{ℓ-1} included, so with no
//! bandwidth every Δ is 0 and the recursion is exactly rotor's (Theorem 1 of
//! the rotor report): same value, bit for bit. States where the un-offloaded
//! data A + I + Δ exceed the budget are infeasible (the paper's formulas
//! would only charge idle time for them).
//!
//! **Discretization.** N slots of ⌊budget / N⌋ bytes (default 50, as the
//! paper); sizes round up, and so does every Δ passed to a sub-problem (a
//! pessimistic rounding: more left to move). Where the tables for N slots
//! pass `Options::max_table_bytes` and the slots were not asked for
//! explicitly, the DP runs on the most slots that fit and says so
//! ([`resolution`]).
//!
//! **Complexity.** C_Δ is a dense table over (i, j, m, Δ ≤ m): O(L²N²)
//! entries, O(L) each, O(L³N²) time, filled split-major. OC is a dense table
//! over (i, x, A, Δ_F, Δ_B) with A + Δ ≤ N, O(L N³) entries, O(L) each:
//! O(L²N³). Memory: about 10 bytes per entry of both tables, plus a row
//! minimum per row (`table_bytes`, an upper bound: C_Δ's pairs counted
//! as squares, which the DP stores as triangles cut at D_i, below).
//!
//! **How it is computed** (same values and choices as the recursion above,
//! bit for bit, wherever an optimal path can go: [`reference`] is the
//! straightforward DP, and the tests compare both entry by entry):
//!
//! 1. C_Δ at Δ = 0 only (no link: all of it), then OC over the states with
//!    nothing in flight and no offload; its OC_0(1, 0, 0, 0) bounds the
//!    optimum and gives every stage and every C_Δ(i, j) a *cut* above which
//!    nothing is on an optimal path (`Pofo::find_cut`).
//! 2. C_Δ split-major. A split's candidate is ((f + right) + left) + ε with
//!    ε ≥ 0, so (f + the right sub-row's least) + left bounds it exactly
//!    (float addition is monotone): a cell already at or below that bound,
//!    or a bound over the cut, is skipped without the candidate's
//!    arithmetic, and a whole row when its least bound reaches the row's
//!    largest value.
//! 3. OC bottom-up (stage L first), a square (i, x, A) of (Δ_F, Δ_B) at a
//!    time, instead of top-down from OC_0(1, 0, 0, 0): every state, no
//!    recursion, each sub-problem a small square read in order. The
//!    reference's branch and bound is kept cell by cell (its "break" a
//!    per-cell stop), plus the same exact row bounds from each sub-square
//!    row's least value, plus the cut.
//! 4. Both tables on the machine's cores ([`Workers`]): C_Δ as a
//!    wavefront of rows i = L − 1, …, 1 (a pair (i, j) reads its own row's
//!    (i, last < j) and later rows' (i' > i, j); each pair is published
//!    once filled and a reader waits for it), so a row's left sub-pairs are
//!    read from cache; OC stage by stage, whose squares read only later
//!    stages. Each piece (a pair, a square) is carved off the table as a
//!    `&mut` slice of its own and computed by one thread, in the order one
//!    thread would, so the tables are the same to the bit on any number of
//!    threads (the tests fill every other chain on three). One thread in
//!    wasm.
//!
//! 5. Case 2's cells are tried without a branch (`Loops::try_option`):
//!    the reference's per-cell stop and bound skip only candidates that
//!    cannot be strictly better, so trying them changes nothing and is
//!    cheaper than the tests; the cut's test stays (it is what keeps
//!    states above their cut no lower than the reference's).
//! 6. No state past D_i (`Grid::reached`): Δ_F and Δ_B at stage i are at
//!    most what stages before i can have offloaded, and so is the Δ of
//!    every C_Δ(i, ·) a path reads. OC's squares stop there and C_Δ's
//!    pairs are stored as triangles (Δ ≤ m) cut there (`PairLayout`): the
//!    first stages of a chain, which try the most splits, have the fewest
//!    cells. The states the reference reaches are all within D_i (the test
//!    compares each of them).
//! 7. Both inner loops (C_Δ's split, OC's option) in `kernel.rs`, with an
//!    AVX2 version picked at run time: the same values and choices. The
//!    recursion is generic over them and compiled once per version, the
//!    AVX2 one with AVX2 enabled and the loops inlined (most rows are a
//!    few cells: a call per row cost as much as its cells).
//!
//! Against the reference, at L = 100, N = 50 and L = 50, N = 100 (the
//! `pofo` criterion bench, one run on this project's idle 2-core machine):
//! 7.17 s and 11.17 s before; 1.08 s and 1.41 s on one thread (6.6× and
//! 7.9×); 635 ms and 967 ms on both cores (11.3× and 11.5×; the machine
//! drifts: the same code has measured 616 ms and, ten minutes later,
//! 980 ms at L = 100). What
//! is left is bound by memory more than by instructions (15 % fewer of
//! OC's changed nothing measurable), and pruning candidates will not go
//! much further: at L = 100, N = 50, before the D_i bound, 357 M
//! (cell, split) pairs passed the reference's stops, and even
//! with each cell's final value and the least bound over all later splits
//! (f + the sub-square's least + C_Δ + ε_F), 317 M (89 %) have a bound
//! below that value — many splits cost nearly the same, so the candidates
//! are the work. The reference visits about a quarter of OC's states;
//! computing all of them bottom-up pays only because each is cheap. The
//! cut is tight (the transfer-free optimum is within 1 % of the optimum
//! at L = 100: 2.203 s against 2.186 s) but removes few states, since most
//! cost little over F and B. One more exact bound was tried and dropped:
//! in Case 2, per Δ_B, the least candidate of every later split (3.32 s
//! against 3.13 s, medians of 3 alternating, L = 100, N = 50, both cores:
//! it pruned too little to pay for its own O(L N) a square). So were, this
//! time: Case 2 split-major over groups of neighbouring squares (for the
//! cache: no change then, with the loops not yet inlined), and
//! both options in one pass (more instructions, counted by cachegrind).
//!
//! **One table for every budget ([`Table`]): offloading at slider speed.**
//! C_Δ depends on the slot size only, never on the budget, and every term
//! of OC depends on the free memory N − A only, to the bit (Case 2's
//! excess is summed as reach + (A + Δ_F + I − N), an exact whole number
//! added last: [`case2_excess`]). So on one *absolute* grid — u = ⌊top / N⌋
//! bytes a slot, N slots at the top — the per-budget DP of a budget B,
//! with its ⌊B / u⌋ slots, is the table's OC at A = N − ⌊B / u⌋: one build
//! answers every budget up to the top, each a read-out of O(L) states
//! (2.4 µs at L = 100, N = 50; a judged answer — prefetches placed, the
//! DP's and rotor's schedules simulated — in 4.1 ms:
//! [`offload::TablePlanner`](super::offload::TablePlanner)). The one
//! budget-dependent part of the per-budget DP is its cut (a bound from
//! *its* budget's transfer-free optimum), which may not be carried to other
//! budgets: the table has its own, per A kept slots, from the largest
//! transfer-free optimum of the budgets whose paths can reach A (A only
//! grows along a path), and leaves C_Δ uncut (`Pofo::find_table_cut`). It
//! builds in about 1.1 per-budget solves of N slots (L = 100, N = 50:
//! 8.85 s against 7.88 s, and 11.90 s with no cut at all; medians of 3,
//! alternating, one sitting on this project's loaded 2-core machine; the
//! same memory, [`table_bytes`]). Why a table and not warm-started solves: a
//! new budget changes which states are reachable and every idle time
//! (Lemma 1 measures against the budget), so a per-budget solve shares
//! nothing with the last one but C_Δ, while the absolute grid makes every
//! budget's states a sub-table of the top's. Its price is resolution: at B
//! below the top the answer has ⌊B / u⌋ < N slots (coarser than the
//! paper's N at B, never better than the exact optimum), so a caller that
//! wants the paper's grid shows the table's answer at once, says which grid
//! it is on (`TableAnswer::slots`), and refines it with a per-budget solve.

mod kernel;
pub mod reference;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "x86_64")]
use kernel::Avx2;
use kernel::{leftover, Kernel, Loops, Portable, SplitTerms, Terms};

use super::api::{Progress, SolveError};
use super::parallel::Workers;
use super::slots::{grid, SlotSizes};
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use std::sync::OnceLock;

/// Which forward operations the DP may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// F_all and F_ck with recomputation (pofo).
    Full,
    /// F_all only: no recomputation (offload-only).
    OffloadOnly,
}

pub use super::api::LossStep;

/// A state of OC_x(i, A, Δ_F, Δ_B): stage i, its input a^{i-1} (x = 0) or
/// ā^{i-1} (x = 1), A slots of activations kept, Δ_F and Δ_B slots left to
/// offload and to prefetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OcState {
    i: usize,
    x: usize,
    a: usize,
    df: usize,
    db: usize,
}

impl OcState {
    /// OC_0(1, 0, 0, 0): the whole chain from a^0, nothing kept or in flight.
    const FIRST: OcState = OcState {
        i: 1,
        x: 0,
        a: 0,
        df: 0,
        db: 0,
    };
}

/// What the DP returns for one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct PofoPlan {
    /// Compute operations and offloads; prefetches are placed by
    /// [`super::offload::place_prefetches`] (their deadlines are in `needs`).
    pub ops: Vec<Op>,
    /// (index in `ops`, stage, tensor): the offloaded tensor must be back on
    /// the device before `ops[index]` runs.
    pub needs: Vec<(usize, usize, TensorKind)>,
    /// Index in `ops` of F_all^L: prefetches come after it (assumption (i)).
    pub loss_index: usize,
    /// OC_0(1, 0, 0, 0), the DP's time under assumption (iii).
    pub predicted_seconds: f64,
}

/// Sizes in slots and times of one chain on one grid.
struct Grid {
    n: usize,
    /// N: slots of the budget.
    slots: usize,
    /// β in slots per second; 0 when there is no link.
    beta: f64,
    a: Vec<usize>,
    abar: Vec<usize>,
    d: Vec<usize>,
    of: Vec<usize>,
    /// o_f∅^ℓ: the transient of the no-grad F_ck / F_∅.
    ofn: Vec<usize>,
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ (o_b may be negative).
    b: Vec<usize>,
    uf: Vec<f64>,
    ub: Vec<f64>,
    /// u_f^ℓ under no-grad: the F_ck / F_∅ chains of Case 2.
    ufn: Vec<f64>,
    /// Σ_{k=ℓ}^{L} (u_f + u_b): no schedule of stages ℓ..L is faster.
    rest: Vec<f64>,
    /// D_ℓ = Σ_{k<ℓ} max(a^{k-1}, ā^{k-1}), at most N: the most that can
    /// have been offloaded before stage ℓ (each stage's input at most
    /// once). It bounds Δ_F and Δ_B of every OC state at stage ℓ, and the Δ
    /// of every C_Δ(ℓ, ·) an optimal path can read — see `Grid::reached`.
    sent_before: Vec<usize>,
}

impl Grid {
    fn new(chain: &Chain, budget_bytes: u64, slots: usize, bandwidth: Option<f64>) -> Grid {
        let n = chain.len();
        let (slot_bytes, slots) = grid(budget_bytes, slots);
        let SlotSizes {
            a,
            abar,
            d,
            of,
            ofn,
            b,
            uf,
            ub,
            ufn,
        } = SlotSizes::new(chain, slot_bytes, slots + 1);
        let mut rest = vec![0.0; n + 2];
        for l in (1..=n).rev() {
            rest[l] = rest[l + 1] + (uf[l] + ub[l]);
        }
        let mut sent_before = vec![0usize; n + 2];
        for l in 1..=n {
            let input = a[l - 1].max(abar[l - 1]);
            sent_before[l + 1] = sent_before[l].saturating_add(input).min(slots);
        }
        Grid {
            n,
            slots,
            beta: bandwidth.filter(|b| *b > 0.0).unwrap_or(0.0) / slot_bytes as f64,
            a,
            abar,
            d,
            of,
            ofn,
            b,
            uf,
            ub,
            ufn,
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
    fn reached(&self, l: usize) -> usize {
        self.sent_before[l]
    }

    /// Lemma 1: the idle time that lets the link make up `excess` slots.
    fn idle(&self, excess: f64) -> f64 {
        kernel::idle(excess, self.beta)
    }

    /// A Δ left over, rounded up to slots (what a sub-problem is asked).
    fn leftover(&self, x: f64) -> usize {
        leftover(x)
    }

    /// 𝓜_{F_all^i}^{i,j}: F_all^i with δ^j resident (its input is counted apart).
    fn m_fall(&self, i: usize, j: usize) -> usize {
        self.d[j] + self.abar[i] + self.of[i]
    }

    /// 𝓜_{F^k}^{i,j} for the F_ck^i / F_∅^k chain: a^{k-1} counts for k > i;
    /// no graph is recorded, so the transient is o_f∅^k.
    fn m_fnone(&self, i: usize, k: usize, j: usize) -> usize {
        let input = if k == i { 0 } else { self.a[k - 1] };
        self.d[j] + input + self.a[k] + self.ofn[k]
    }

    /// 𝓜_{B_i}^{i,j}: B^i holds ā^i, δ^i and δ^{i-1}.
    fn m_b(&self, i: usize) -> usize {
        self.b[i]
    }

    /// I_i^x: a^{i-1} (x = 0) or ā^{i-1} (x = 1).
    fn input(&self, i: usize, x: usize) -> usize {
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
fn largest(xs: &[f64]) -> f64 {
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
fn least(xs: &[f64]) -> f64 {
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
fn case2_excess(reach: f64, mfx: f64, big_n: f64) -> f64 {
    reach + (mfx - big_n)
}

/// One decision of C_Δ: 0 infeasible, 1 F_all^i (or the leaf), 2 + k F_ck^i
/// with the next checkpoint a^{i+k}.
type Choice = u16;

/// C_Δ(i, j, m, Δ) for every 1 ≤ i ≤ j < L, m ≤ N free slots besides the
/// segment's input, Δ ≤ m slots to prefetch by the segment's end.
struct Backward {
    values: Vec<f64>,
    choices: Vec<Choice>,
    layout: PairLayout,
    /// min over Δ of C_Δ(i, j, m, ·), per pair and m (the fill's bounds).
    row_min: Vec<f64>,
    /// The fill computes Δ ≤ this (0 for the first, transfer-free pass).
    delta_cap: usize,
}

/// Where C_Δ(i, j, ·, ·) lies: pairs by segment length j − i, then by i.
/// The fill does not need this order (each pair is a slice of its own,
/// `Pofo::fill_backward`). Stored by row i or by column j instead, OC's
/// pass on both cores measured 1.1–1.25× slower, but in prototypes that
/// also left the caller's thread idle (since found to slow OC by itself,
/// `Workers::pull`), so whether the layout matters is not known; it
/// stays as it was.
/// A pair (i, ·) stores row m's cells Δ ≤ min(m, Δ_max, D_i) only — the
/// others are ∞ (Δ > m: not that much memory to prefetch into; Δ > D_i:
/// on no path, `Grid::reached`) — so a pair is a triangle, cut at D_i,
/// not an (N + 1)² square: half the memory or less, and half the reading.
struct PairLayout {
    /// The first pair of each length.
    len_start: Vec<usize>,
    /// The first entry of each pair, by pair index, and the table's size.
    pair_at: Vec<usize>,
    /// Per stage i (from 1), where row m of a pair (i, ·) starts, for m in
    /// 0..=N + 1 (the last: the pair's size); rows (N + 2) apart.
    row_at: Vec<usize>,
    /// Per stage i, min(Δ_max, D_i): the widest Δ stored for pairs (i, ·).
    cap: Vec<usize>,
    slots: usize,
}

impl PairLayout {
    /// `reached[i]` is D_i for stage i in 0..=n (`Grid::reached`).
    fn new(n: usize, slots: usize, max_delta: usize, reached: &[usize]) -> PairLayout {
        // n − len pairs of each length len (i = 1..=n − len).
        let mut len_start = vec![0usize; n + 1];
        for len in 0..n {
            len_start[len + 1] = len_start[len] + (n - len);
        }
        let cap: Vec<usize> = (0..=n).map(|i| max_delta.min(reached[i])).collect();
        let rows = slots + 2;
        let mut row_at = vec![0usize; (n + 1) * rows];
        for i in 1..=n {
            for m in 0..=slots {
                row_at[i * rows + m + 1] = row_at[i * rows + m] + m.min(cap[i]) + 1;
            }
        }
        // Pairs in the order of `pair`: by length, then i = 1..=n − len.
        let sizes = (0..n).flat_map(|len| (1..=n - len).map(|i| row_at[i * rows + slots + 1]));
        let mut pair_at = Vec::with_capacity(len_start[n] + 1);
        pair_at.push(0);
        for size in sizes {
            pair_at.push(pair_at.last().expect("one at least") + size);
        }
        PairLayout {
            len_start,
            pair_at,
            row_at,
            cap,
            slots,
        }
    }

    /// Pairs in all.
    fn pairs(&self) -> usize {
        *self.len_start.last().expect("n + 1 entries")
    }

    /// Entries in all.
    fn entries(&self) -> usize {
        *self.pair_at.last().expect("pairs + 1 entries")
    }

    fn pair(&self, i: usize, j: usize) -> usize {
        self.len_start[j - i] + (i - 1)
    }

    /// Where row m of a pair (i, ·) starts, from the pair's first entry.
    fn row(&self, i: usize, m: usize) -> usize {
        self.row_at[i * (self.slots + 2) + m]
    }

    /// Whether C_Δ(i, ·, m, Δ) is stored (else it is ∞).
    fn stored(&self, i: usize, m: usize, delta: usize) -> bool {
        m <= self.slots && delta <= m && delta <= self.cap[i]
    }

    /// Where C_Δ(i, j, m, Δ) is; only for a stored cell.
    fn index(&self, i: usize, j: usize, m: usize, delta: usize) -> usize {
        debug_assert!(self.stored(i, m, delta));
        self.pair_at[self.pair(i, j)] + self.row(i, m) + delta
    }
}

/// C_Δ as it is read: whole, or its finished pairs while it is filled.
struct CRead<'a> {
    grid: &'a Grid,
    layout: &'a PairLayout,
    finished: Finished<'a>,
}

/// A pair's entries and its rows' least values, as stored.
type PairCells<'a> = (&'a [f64], &'a [f64]);

/// Where a reader of C_Δ finds a pair.
enum Finished<'a> {
    /// The whole table, after the fill.
    Table {
        values: &'a [f64],
        row_min: &'a [f64],
    },
    /// During the fill ([`Pofo::fill_backward`]): each pair once it is
    /// published, by pair index; a reader waits for a pair not yet done.
    Published(&'a [OnceLock<PairCells<'a>>]),
}

impl<'a> CRead<'a> {
    /// C_Δ(i, j, ·, ·) (its rows as `PairLayout::row` places them) and
    /// its rows' least values.
    fn pair(&self, i: usize, j: usize) -> PairCells<'a> {
        let p = self.layout.pair(i, j);
        match self.finished {
            Finished::Table { values, row_min } => {
                let rows = self.layout.slots + 1;
                (
                    &values[self.layout.pair_at[p]..self.layout.pair_at[p + 1]],
                    &row_min[p * rows..][..rows],
                )
            }
            Finished::Published(pairs) => *pairs[p].wait(),
        }
    }

    /// C_Δ(i, j, m, Δ), ∞ when infeasible or out of the table.
    fn c(&self, i: usize, j: usize, m: usize, delta: usize) -> f64 {
        if !self.layout.stored(i, m, delta) {
            return f64::INFINITY;
        }
        self.pair(i, j).0[self.layout.row(i, m) + delta]
    }

    /// The leaf C_Δ(i, i, ·) or Case 1 (F_all^i) of C_Δ(i, j, m, Δ).
    fn backward_first(&self, i: usize, j: usize, m: usize, delta: usize) -> (f64, Choice) {
        let g = self.grid;
        if i == j {
            let (mf, mb) = (g.m_fall(i, j), g.m_b(i));
            if mf > m || mb > m {
                return (f64::INFINITY, 0);
            }
            let dl = delta as f64;
            let eps = g
                .idle(mf as f64 - g.beta * g.ub[i] + dl - m as f64)
                .max(g.idle(mb as f64 + dl - m as f64));
            return ((g.uf[i] + g.ub[i]) + eps, 1);
        }
        match self.backward_all(i, j, m, delta) {
            Some((v, _)) => (v, 1),
            None => (f64::INFINITY, 0),
        }
    }

    /// Case 1 of B.3: F_all^i, C_Δ(i+1, j, m − ā^i, Δ1), B^i. Returns the
    /// value and Δ1.
    fn backward_all(&self, i: usize, j: usize, m: usize, delta: usize) -> Option<(f64, usize)> {
        let g = self.grid;
        let (mf, mb) = (g.m_fall(i, j), g.m_b(i));
        if mf > m || mb > m || g.abar[i] > m {
            return None;
        }
        let dl = delta as f64;
        let eps_b = g.idle(mb as f64 + dl - m as f64);
        let d1 = g.leftover(dl - (g.ub[i] + eps_b) * g.beta);
        let sub = self.c(i + 1, j, m - g.abar[i], d1);
        if !sub.is_finite() {
            return None;
        }
        let d2 = (d1 as f64 - sub * g.beta).max(0.0);
        let eps_f = g.idle(mf as f64 + d2 - m as f64);
        let v = (g.uf[i] + g.ub[i]) + sub + (eps_f + eps_b);
        v.is_finite().then_some((v, d1))
    }

    /// Case 1 (F_all^i) of row m of C_Δ(i, j, m, ·), i < j, for every Δ of
    /// `vals`: [`CRead::backward_first`] cell by cell, with what the row
    /// shares (the memories, the sub-row C_Δ(i + 1, j, m − ā^i, ·)) found
    /// once — the same arithmetic in the same order, so the same bits.
    fn backward_all_row(&self, i: usize, j: usize, m: usize, vals: &mut [f64], chs: &mut [Choice]) {
        let g = self.grid;
        let (mf, mb) = (g.m_fall(i, j), g.m_b(i));
        if mf > m || mb > m || g.abar[i] > m {
            vals.fill(f64::INFINITY);
            chs.fill(0);
            return;
        }
        let m2 = m - g.abar[i];
        // The sub-row's stored cells (`PairLayout::stored`); past them, ∞.
        let layout = self.layout;
        let sub_row =
            &self.pair(i + 1, j).0[layout.row(i + 1, m2)..][..m2.min(layout.cap[i + 1]) + 1];
        let fixed = g.uf[i] + g.ub[i];
        for (delta, (val, ch)) in vals.iter_mut().zip(chs.iter_mut()).enumerate() {
            let dl = delta as f64;
            let eps_b = g.idle(mb as f64 + dl - m as f64);
            let d1 = g.leftover(dl - (g.ub[i] + eps_b) * g.beta);
            let sub = sub_row.get(d1).copied().unwrap_or(f64::INFINITY);
            let d2 = (d1 as f64 - sub * g.beta).max(0.0);
            let eps_f = g.idle(mf as f64 + d2 - m as f64);
            let v = fixed + sub + (eps_f + eps_b);
            // As `backward_first`: an infinite sub-problem or idle time is
            // no candidate (∞, choice 0).
            (*val, *ch) = if v.is_finite() {
                (v, 1)
            } else {
                (f64::INFINITY, 0)
            };
        }
    }
}

/// One pair C_Δ(i, j, ·, ·) being filled: its entries, choices and row
/// minima.
struct PairOut<'a> {
    i: usize,
    j: usize,
    values: &'a mut [f64],
    choices: &'a mut [Choice],
    row_min: &'a mut [f64],
}

/// The DP for one chain, budget and bandwidth.
pub struct Pofo {
    grid: Grid,
    mode: Mode,
    loss: LossStep,
    back: Backward,
    forward: Forward,
    /// OC's memo holds every state (for the current loss step).
    forward_filled: bool,
    /// Bottom-up OC: per stage i, the value above which a state cannot be
    /// on an optimal path (∞: no cut).
    cut: Vec<f64>,
    /// A [`Table`]'s cut instead, per A: every budget whose optimal path can
    /// reach a state of A kept slots has its transfer-free optimum at most
    /// this, times 1 + [`CUT_SLACK`] (`find_table_cut`); None per budget.
    table_tops: Option<Vec<f64>>,
    /// Bottom-up OC's first pass: Δ_F = Δ_B = 0 and no offload only.
    only_kept: bool,
    /// The threads a layer of either table is filled on (the tables are
    /// the same to the bit whatever their number).
    workers: Workers,
    /// The inner loops both tables are filled with ([`Kernel::detect`];
    /// the tables are the same to the bit whichever).
    kernel: Kernel,
}

/// OC's memo, dense: for each (i, x), every (A, Δ_F, Δ_B) with A + Δ_F ≤ N
/// and A + Δ_B ≤ N (larger states cannot fit) — Σ_A (N − A + 1)² entries.
/// Reached states are a large share of it, and a flat array is several
/// times faster than hashing them.
struct Forward {
    slots: usize,
    /// Δ_F and Δ_B stay 0 with no link.
    max_delta: usize,
    /// Offset of the (A, ·, ·) square inside a block, for A in 0..=N.
    square: Vec<usize>,
    block: usize,
    values: Vec<f64>,
    /// [`ForwardChoice::encode`]d.
    choices: Vec<u16>,
    /// Offset of the (A, ·) rows inside a block of row minima, for A in
    /// 0..=N, and the block's length (Σ_A side(A)).
    rows: Vec<usize>,
    row_block: usize,
    /// min over Δ_B of OC_x(i, A, Δ_F, ·), per row (bottom-up OC's bounds).
    row_min: Vec<f64>,
}

impl Forward {
    fn side(slots: usize, max_delta: usize, a: usize) -> usize {
        (slots - a + 1).min(max_delta + 1)
    }

    /// Entries for stages 1..=n: 2 × Σ_A side(A)² per stage (in u128: this
    /// is what is checked against the limit, before any allocation).
    fn entries(n: usize, slots: usize, max_delta: usize) -> u128 {
        let block: u128 = (0..=slots)
            .map(|a| (Self::side(slots, max_delta, a) as u128).pow(2))
            .sum();
        (n as u128 + 1) * 2 * block
    }

    fn new(n: usize, slots: usize, max_delta: usize) -> Result<Forward, SolveError> {
        let mut square = Vec::with_capacity(slots + 2);
        let mut at = 0;
        for a in 0..=slots {
            square.push(at);
            at += Self::side(slots, max_delta, a).pow(2);
        }
        let len = (n + 1) * 2 * at;
        let mut rows = Vec::with_capacity(slots + 2);
        let mut row_block = 0;
        for a in 0..=slots {
            rows.push(row_block);
            row_block += Self::side(slots, max_delta, a);
        }
        Ok(Forward {
            slots,
            max_delta,
            square,
            block: at,
            values: filled(len, f64::NAN)?,
            choices: filled(len, 0)?,
            rows,
            row_block,
            row_min: filled((n + 1) * 2 * row_block, f64::INFINITY)?,
        })
    }

    /// None for states outside the table (they cannot fit).
    fn index(&self, i: usize, x: usize, a: usize, df: usize, db: usize) -> Option<usize> {
        if a > self.slots {
            return None;
        }
        let side = Self::side(self.slots, self.max_delta, a);
        (df < side && db < side).then(|| (2 * i + x) * self.block + self.square[a] + df * side + db)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ForwardChoice {
    Infeasible,
    Loss,
    All { offload: bool },
    Checkpoint { last: usize, offload: bool },
}

impl ForwardChoice {
    /// Two bytes in the memo: 0 infeasible, 1 loss, 2 + offload for F_all,
    /// 4 + 2 (last − i) + offload for F_ck.
    fn encode(self, i: usize) -> u16 {
        match self {
            ForwardChoice::Infeasible => 0,
            ForwardChoice::Loss => 1,
            ForwardChoice::All { offload } => 2 + offload as u16,
            ForwardChoice::Checkpoint { last, offload } => {
                4 + 2 * (last - i) as u16 + offload as u16
            }
        }
    }

    fn decode(code: u16, i: usize) -> ForwardChoice {
        match code {
            0 => ForwardChoice::Infeasible,
            1 => ForwardChoice::Loss,
            2 | 3 => ForwardChoice::All { offload: code == 3 },
            c => ForwardChoice::Checkpoint {
                last: i + ((c - 4) / 2) as usize,
                offload: c % 2 == 1,
            },
        }
    }
}

/// Case 2 of OC at one stage i, per `last` (index last − i): what every
/// state shares ([`Pofo::splits_of`]).
#[derive(Default)]
struct Splits {
    /// 𝓜 of F_ck^i.
    first: usize,
    /// max 𝓜 over F_ck^i, F_∅ … F_∅^last (the input kept throughout).
    kept_max: Vec<usize>,
    /// max 𝓜 over F_∅^{i+1} … F_∅^last (0 for last = i).
    sent_max: Vec<usize>,
    /// Σ_{i..=last} u_f∅.
    f: Vec<f64>,
    /// rest_i + f and f + rest_{last+1}, as OC sums them.
    rest_f: Vec<f64>,
    f_rest: Vec<f64>,
    /// Lemma 1's reach, max_k (𝓜_k − β Σ_{h<k} u_f∅), before the state's
    /// own A + Δ_F + I − N is added (an exact integer: see [`case2_idle`]).
    reach: Vec<f64>,
}

/// Per-row and per-column work space of [`Pofo::fill_square`].
struct Scratch {
    ef: Vec<f64>,
    eb: Vec<f64>,
    rk: Vec<usize>,
    ro: Vec<usize>,
    ck: Vec<usize>,
    co: Vec<usize>,
    /// `ck`'s and `co`'s quads, where the loops read them (`Loops::columns`).
    ck_quads: Vec<u32>,
    co_quads: Vec<u32>,
    /// The largest value of each row of the square (an upper bound).
    row_max: Vec<f64>,
}

impl Scratch {
    fn new(side: usize) -> Scratch {
        Scratch {
            ef: vec![0.0; side],
            eb: vec![0.0; side],
            rk: vec![0; side],
            ro: vec![0; side],
            ck: vec![0; side],
            co: vec![0; side],
            ck_quads: vec![0; side / 4],
            co_quads: vec![0; side / 4],
            row_max: vec![0.0; side],
        }
    }
}

/// The relative slack on the bound of OC's cut: far above float rounding
/// (≈ 1e-13 for sums of 10⁴ terms), so a state on an optimal path is never
/// cut, and far below a real difference.
const CUT_SLACK: f64 = 1e-6;

/// The share of the progress bar that C_Δ's table fills; OC's states the rest.
const FILL_SHARE: f64 = 0.5;

/// Checks what pofo's tables can encode, before anything is allocated:
/// choices are two bytes, so N ≤ 65533 slots and L ≤ 32765 stages (a choice
/// encodes the next checkpoint's distance). Sizes within these are then
/// checked against `max_table_bytes` by [`table_bytes`].
pub fn validate(stages: usize, slots: usize) -> Result<(), SolveError> {
    if slots == 0 {
        return Err(SolveError::BadOption("slots: must be at least 1".into()));
    }
    if slots > u16::MAX as usize - 2 {
        return Err(SolveError::BadOption(format!(
            "slots: {slots} is more than pofo's DP allows ({}); use fewer --slots (the paper uses 50)",
            u16::MAX - 2
        )));
    }
    let most = (u16::MAX as usize - 5) / 2;
    if stages > most {
        return Err(SolveError::TooLarge(format!(
            "stages: pofo's DP handles at most {most} stages, the chain has {stages}; use rotor"
        )));
    }
    Ok(())
}

/// A vector of `len` copies of `value`, or [`SolveError::TooLarge`] when the
/// memory cannot be had (sizes were checked against the limit before).
fn filled<T: Clone>(len: usize, value: T) -> Result<Vec<T>, SolveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        SolveError::TooLarge(format!(
            "max_table_bytes: not enough memory for pofo's table of {len} entries; use fewer --slots"
        ))
    })?;
    v.resize(len, value);
    Ok(v)
}

/// Bytes of pofo's tables: C_Δ (value and choice per entry) for `Full`, and
/// OC's dense memo — an upper bound. It counts C_Δ's pairs as whole
/// (N + 1)² squares, as the resolution has always been chosen; the DP
/// stores them as triangles Δ ≤ m cut at D_i (`PairLayout`), half of that
/// or less. The bound stays the square on purpose: it keeps the DP off
/// chains too long to solve in reasonable time at a coarse grid (those
/// with the triangle counted would fit a few slots, and take hours); a
/// chain too long at any grid is refused by [`MAX_SPLIT_STEPS`].
pub fn table_bytes(n: usize, slots: usize, with_bandwidth: bool, mode: Mode) -> u128 {
    let pairs = (n as u128) * (n as u128 + 1) / 2;
    let deltas = if with_bandwidth { slots as u128 + 1 } else { 1 };
    // C_Δ's value and choice per entry, and each row's least value; while
    // it is filled, each pair's slice and its published view
    // (`Pofo::fill_backward`): more than the pair's cells at one slot.
    let fill = (std::mem::size_of::<PairOut<'_>>() + std::mem::size_of::<OnceLock<PairCells<'_>>>())
        as u128;
    let backward = if mode == Mode::Full {
        pairs * ((slots as u128 + 1) * (deltas * 10 + 8) + fill)
    } else {
        0
    };
    let max_delta = if with_bandwidth { slots } else { 0 };
    let rows: u128 = (0..=slots)
        .map(|a| Forward::side(slots, max_delta, a) as u128)
        .sum();
    backward + Forward::entries(n, slots, max_delta) * 10 + (n as u128 + 1) * 2 * rows * 8
}

/// The grid one pofo (or offload-only) solve runs on: the slots asked for
/// where their tables fit `max_table_bytes`, else — unless the slots were
/// asked for explicitly — the most slots whose tables fit (a coarser grid,
/// said in the solution's detail and by the CLI), rather than a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// Slots asked for (`Options::offload_slots`).
    pub requested: usize,
    /// Slots the DP runs on: `requested`, or fewer where its tables would
    /// pass the limit.
    pub slots: usize,
    /// Bytes of the tables at `requested` slots ([`table_bytes`]).
    pub requested_bytes: u128,
    /// Bytes of the tables at `slots`.
    pub table_bytes: u128,
    /// The limit they are held to.
    pub limit_bytes: u64,
}

impl Resolution {
    /// Whether the grid is coarser than asked.
    pub fn reduced(&self) -> bool {
        self.slots < self.requested
    }

    /// "37 slots, not the 50 asked: their tables would need 1.35 GiB, over
    /// the limit of 1 GiB", or "" when the grid is the one asked for.
    pub fn note(&self) -> String {
        use crate::model::units::format_bytes;
        if !self.reduced() {
            return String::new();
        }
        format!(
            "{} slots, not the {} asked: their tables would need {}, over the limit of {}",
            self.slots,
            self.requested,
            format_bytes(self.requested_bytes.min(u64::MAX as u128) as u64),
            format_bytes(self.limit_bytes)
        )
    }
}

/// The [`Resolution`] for a chain of `stages` with `requested` slots. With
/// `explicit` (the user named the slots: `--slots`), tables over the limit
/// are an error naming the flag, as [`Pofo::build`] gives; otherwise the
/// most slots that fit are chosen (tables grow with the slots), and only a
/// chain whose tables pass the limit even at one slot is an error.
pub fn resolution(
    stages: usize,
    requested: usize,
    with_bandwidth: bool,
    mode: Mode,
    max_table_bytes: u64,
    explicit: bool,
) -> Result<Resolution, SolveError> {
    validate(stages, requested)?;
    let bytes = |slots| table_bytes(stages, slots, with_bandwidth, mode);
    let limit = max_table_bytes as u128;
    let requested_bytes = bytes(requested);
    let fits = |slots| bytes(slots) <= limit;
    let slots = if fits(requested) {
        requested
    } else if explicit || !fits(1) {
        return Err(too_large(
            stages,
            requested,
            requested_bytes,
            max_table_bytes,
        ));
    } else {
        // The largest slots in 1..requested whose tables fit.
        let (mut lo, mut hi) = (1, requested);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    };
    Ok(Resolution {
        requested,
        slots,
        requested_bytes,
        table_bytes: bytes(slots),
        limit_bytes: max_table_bytes,
    })
}

/// The most (pair, split) steps C_Δ's fill may take: L(L − 1)(L + 1) / 6,
/// whatever the slots (each step costs a few ns even with no cell to
/// try). A 5000-stage chain takes 2.1 × 10¹⁰ and ran for 191 s at one slot
/// (this machine, before this limit); the limit is about 20 s of that.
pub const MAX_SPLIT_STEPS: u128 = 2_000_000_000;

/// C_Δ's (pair, split) steps for `n` stages.
fn split_steps(n: usize) -> u128 {
    let n = n as u128;
    n * (n * n).saturating_sub(1) / 6
}

/// A chain too long for pofo's DP at any resolution: refused at once.
fn within_split_limit(stages: usize) -> Result<(), SolveError> {
    let steps = split_steps(stages);
    if steps <= MAX_SPLIT_STEPS {
        return Ok(());
    }
    Err(SolveError::TooLarge(format!(
        "stages: pofo's C_Δ for {stages} stages takes {steps} (pair, split) steps whatever the slots, over the limit of {MAX_SPLIT_STEPS}; split the network into fewer, larger stages"
    )))
}

/// The error for tables over the limit: names the limit and `--slots`.
fn too_large(stages: usize, slots: usize, need: u128, max_table_bytes: u64) -> SolveError {
    SolveError::TooLarge(format!(
        "max_table_bytes: pofo's tables (C_Δ and OC's memo) for {stages} stages × {slots} slots need {}, over the limit of {}; use fewer --slots",
        crate::model::units::format_bytes(need.min(u64::MAX as u128) as u64),
        crate::model::units::format_bytes(max_table_bytes)
    ))
}

impl Pofo {
    /// Builds C_Δ (the O(L³N²) part, with progress) and prepares OC, both
    /// on every core this process may use ([`Workers::available`]).
    pub fn build(
        chain: &Chain,
        mode: Mode,
        budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
        max_table_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<Pofo, SolveError> {
        Self::build_on(
            chain,
            mode,
            budget_bytes,
            slots,
            bandwidth,
            max_table_bytes,
            Workers::available(),
            progress,
        )
    }

    /// [`build`](Self::build) on `workers` threads (the same tables, to
    /// the bit, whatever their number).
    #[allow(clippy::too_many_arguments)]
    pub fn build_on(
        chain: &Chain,
        mode: Mode,
        budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
        max_table_bytes: u64,
        workers: Workers,
        progress: &mut Progress<'_>,
    ) -> Result<Pofo, SolveError> {
        Self::build_with(
            chain,
            mode,
            budget_bytes,
            slots,
            bandwidth,
            max_table_bytes,
            true,
            workers,
            Kernel::detect(),
            progress,
        )
    }

    /// [`build`](Self::build), with or without the cut (`find_cut`): without
    /// it every entry of both tables is exact, whatever the budget it is
    /// read for ([`Table`]). Both tables are filled on `workers` threads.
    #[allow(clippy::too_many_arguments)]
    fn build_with(
        chain: &Chain,
        mode: Mode,
        budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
        max_table_bytes: u64,
        with_cut: bool,
        workers: Workers,
        kernel: Kernel,
        progress: &mut Progress<'_>,
    ) -> Result<Pofo, SolveError> {
        validate(chain.len(), slots)?;
        if mode == Mode::Full {
            within_split_limit(chain.len())?;
        }
        let grid = Grid::new(chain, budget_bytes, slots, bandwidth);
        let n = grid.n;
        let with_bw = grid.beta > 0.0;
        let need = table_bytes(n, grid.slots, with_bw, mode);
        if need > max_table_bytes as u128 {
            return Err(too_large(n, grid.slots, need, max_table_bytes));
        }
        let max_delta = if with_bw { grid.slots } else { 0 };
        let grid_slots = grid.slots;
        let layout = PairLayout::new(n, grid_slots, max_delta, &grid.sent_before);
        let len = if mode == Mode::Full {
            layout.entries()
        } else {
            0
        };
        let values = filled(len, f64::INFINITY)?;
        let choices = filled(len, 0)?;
        let row_min = if mode == Mode::Full {
            filled(layout.pairs() * (grid_slots + 1), f64::INFINITY)?
        } else {
            Vec::new()
        };
        let forward = Forward::new(n, grid_slots, max_delta)?;
        let mut pofo = Pofo {
            grid,
            mode,
            loss: LossStep::Paper,
            back: Backward {
                values,
                choices,
                layout,
                row_min,
                delta_cap: max_delta,
            },
            forward,
            forward_filled: false,
            cut: vec![f64::INFINITY; n + 2],
            table_tops: None,
            only_kept: false,
            workers,
            kernel,
        };
        // C_Δ at Δ = 0 first (all of it with no link), then OC's states
        // without transfers: their value bounds the optimum, which cuts
        // both tables (`find_cut`); then the rest of C_Δ under the cut.
        if mode == Mode::Full {
            pofo.back.delta_cap = 0;
            if max_delta == 0 {
                pofo.fill_backward(progress)?;
            } else {
                pofo.fill_backward(&mut |_| true)?;
            }
        }
        if with_cut {
            pofo.find_cut();
        } else {
            pofo.find_table_cut();
        }
        if mode == Mode::Full && max_delta > 0 {
            pofo.back.delta_cap = max_delta;
            pofo.fill_backward(progress)?;
        }
        Ok(pofo)
    }

    /// The DP with `loss` as its loss step (OC is computed after this, so it
    /// can be chosen once C_Δ is built; the default is [`LossStep::Paper`]).
    pub fn with_loss_step(mut self, loss: LossStep) -> Pofo {
        self.loss = loss;
        // OC's memo holds values of the other loss step, if any were computed.
        self.forward_filled = false;
        self
    }

    /// C_Δ, whole.
    fn read_c(&self) -> CRead<'_> {
        CRead {
            grid: &self.grid,
            layout: &self.back.layout,
            finished: Finished::Table {
                values: &self.back.values,
                row_min: &self.back.row_min,
            },
        }
    }

    /// C_Δ(i, j, m, Δ), ∞ when infeasible or out of the table.
    fn c(&self, i: usize, j: usize, m: usize, delta: usize) -> f64 {
        self.read_c().c(i, j, m, delta)
    }

    /// Section B.3 (stages i..j with j < L), as a wavefront on the
    /// machine's cores: a pair (i, j) reads (i, last) for last < j and
    /// (i', j) for i < i' ≤ j, so the rows i = L − 1, …, 1 are handed out in
    /// that order ([`Workers::pull`]), each filled j ascending by one thread,
    /// and a pair is published once filled; a reader waits for a pair not
    /// yet published (only ever one of a row taken before its own). Each
    /// pair is computed as one thread alone would, so the table is the same
    /// to the bit on any number of threads. Why rows, not segment lengths
    /// (one length's pairs are independent): a row's left sub-pairs
    /// (i, last) are its own, just filled, so they are read from cache;
    /// by length, every pair streamed all of its sub-pairs from memory
    /// (cachegrind, L = 100, N = 50, a 1 MiB cache: 22.8 M misses → 8.1 M).
    // `i` is a pair's stage and its row's index at once.
    #[allow(clippy::needless_range_loop)]
    fn fill_backward(&mut self, progress: &mut Progress<'_>) -> Result<(), SolveError> {
        let n = self.grid.n;
        let Backward {
            values,
            choices,
            layout,
            row_min,
            delta_cap,
        } = &mut self.back;
        let layout = &*layout;
        let rows = layout.slots + 1;
        // Every pair carved off the table as a `&mut` slice of its own, in
        // the layout's order (by length, then i), into its row: for one i
        // the lengths ascend, so a row's pairs come j ascending. The pairs
        // ending at L are never read, and not filled.
        let mut by_row: Vec<Vec<PairOut<'_>>> = (0..n).map(|i| Vec::with_capacity(n - i)).collect();
        let (mut values, mut choices, mut row_min) =
            (&mut values[..], &mut choices[..], &mut row_min[..]);
        for len in 0..n {
            for i in 1..=n - len {
                let p = layout.pair(i, i + len);
                let size = layout.pair_at[p + 1] - layout.pair_at[p];
                let (v, rest) = std::mem::take(&mut values).split_at_mut(size);
                values = rest;
                let (c, rest) = std::mem::take(&mut choices).split_at_mut(size);
                choices = rest;
                let (r, rest) = std::mem::take(&mut row_min).split_at_mut(rows);
                row_min = rest;
                if i + len < n {
                    by_row[i].push(PairOut {
                        i,
                        j: i + len,
                        values: v,
                        choices: c,
                        row_min: r,
                    });
                }
            }
        }
        // Rows i = L − 1, …, 1.
        let pieces: Vec<Vec<PairOut<'_>>> = by_row.into_iter().skip(1).rev().collect();
        let published: Vec<OnceLock<PairCells<'_>>> =
            (0..layout.pairs()).map(|_| OnceLock::new()).collect();
        let layer = CLayer {
            read: CRead {
                grid: &self.grid,
                layout,
                finished: Finished::Published(&published),
            },
            cut: &self.cut,
            delta_cap: *delta_cap,
            kernel: self.kernel,
        };
        // Progress by pairs: rows are taken in order, and the k-th has k
        // pairs.
        let total = (n * n.saturating_sub(1) / 2).max(1);
        let filled = self.workers.pull(
            pieces,
            // A row's work: its entries times their splits.
            |row| {
                row.iter()
                    .map(|p| (p.values.len() * (p.j - p.i + 1)) as u64)
                    .sum()
            },
            || vec![0.0; rows],
            |row_max, row| {
                for mut p in row {
                    layer.fill_pair(&mut p, row_max);
                    let PairOut {
                        i,
                        j,
                        values,
                        row_min,
                        ..
                    } = p;
                    let cells: PairCells<'_> = (values, row_min);
                    published[layout.pair(i, j)]
                        .set(cells)
                        .expect("each pair is filled once");
                }
            },
            &mut |k| progress(FILL_SHARE * (k * (k + 1) / 2) as f64 / total as f64),
        );
        if filled {
            Ok(())
        } else {
            Err(SolveError::Cancelled)
        }
    }

    /// The DP's best time for the whole chain, None if infeasible: OC
    /// bottom-up (`fill_forward`), then OC_0(1, 0, 0, 0).
    pub fn best_seconds(&mut self, progress: &mut Progress<'_>) -> Result<Option<f64>, SolveError> {
        let start = if self.mode == Mode::Full {
            FILL_SHARE
        } else {
            0.0
        };
        if !self.forward_filled {
            let mut report = |d: f64| progress(start + (1.0 - start) * d);
            if !self.fill_forward(&mut report) {
                return Err(SolveError::Cancelled);
            }
            self.forward_filled = true;
        }
        progress(1.0);
        let first = self.forward.index(1, 0, 0, 0, 0).expect("in the table");
        let v = self.forward.values[first];
        Ok(v.is_finite().then_some(v))
    }

    /// OC bottom-up over every state of the memo (stage L first): the
    /// same recursion as the reference's `oc_compute`, state by state
    /// (a state's value depends on its own candidates only), computed a
    /// square (i, x, A) at a time.
    fn fill_forward(&mut self, progress: &mut dyn FnMut(f64) -> bool) -> bool {
        self.fill_pass(progress)
    }

    /// OC's states without transfers first (Δ_F = Δ_B = 0, never
    /// offloading; C_Δ at Δ = 0 is all they read): a path of OC's own, so
    /// OC_0(1, 0, 0, 0) there, U, bounds the optimum from above, in O(L² N).
    /// A state at stage i on an optimal path then has a value of at most
    /// cut_i = U (1 + [`CUT_SLACK`]) − Σ_{k<i} (u_f^k + u_b^k) (stages 1..i−1
    /// run F and B at least once before it), and a C_Δ(i, j, ·) cell on one
    /// at most cut_i − Σ_{k>j} (u_f^k + u_b^k). Candidates whose lower bound
    /// passes the cut are skipped: a state or cell above its cut may keep a
    /// value above its own (never below), and no state or cell at most its
    /// cut reads one above (its best candidate's sub-problems are within
    /// their cuts, by the same sums), so those are exact, bit for bit. The
    /// cut is the same for both loss steps: with nothing in flight the loss
    /// step is timed alike.
    fn find_cut(&mut self) {
        let n = self.grid.n;
        self.cut = vec![f64::INFINITY; n + 2];
        self.only_kept = true;
        self.fill_pass(&mut |_| true);
        self.only_kept = false;
        let first = self.forward.index(1, 0, 0, 0, 0).expect("in the table");
        let bound = self.forward.values[first];
        if bound.is_finite() {
            let g = &self.grid;
            let top = bound * (1.0 + CUT_SLACK);
            for i in 1..=n {
                self.cut[i] = top - (g.rest[1] - g.rest[i]);
            }
        }
    }

    /// The cut of a [`Table`], read at every budget: OC's only C_Δ-free
    /// bound per budget is no use to another, but along any path A only
    /// grows (an input is kept or offloaded, never dropped), so a state of
    /// A kept slots is on the optimal path of no budget starting above A,
    /// i.e. with fewer than N − A slots. The transfer-free pass gives U(A0)
    /// = OC_0(1, A0, 0, 0) for every start A0; a state at (i, A) gets the
    /// cut max_{A0 ≤ A} U(A0) (1 + [`CUT_SLACK`]) − Σ_{k<i} (u_f^k + u_b^k)
    /// — never below its own budget's, and growing with A, so a state
    /// within its cut reads sub-states within theirs, as in `find_cut`.
    /// C_Δ is read at every A and left uncut.
    fn find_table_cut(&mut self) {
        let n = self.grid.n;
        self.cut = vec![f64::INFINITY; n + 2];
        self.table_tops = None;
        self.only_kept = true;
        self.fill_pass(&mut |_| true);
        self.only_kept = false;
        let mut most = f64::NEG_INFINITY;
        let tops = (0..=self.grid.slots)
            .map(|a| {
                let at = self.forward.index(1, 0, a, 0, 0).expect("in the table");
                most = most.max(self.forward.values[at]);
                if most.is_finite() {
                    most * (1.0 + CUT_SLACK)
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        self.table_tops = Some(tops);
    }

    /// OC's cut at stage i and A kept slots.
    fn oc_cut(&self, i: usize, a: usize) -> f64 {
        match &self.table_tops {
            Some(tops) => tops[a] - (self.grid.rest[1] - self.grid.rest[i]),
            None => self.cut[i],
        }
    }

    /// One bottom-up pass over every square, stage L first.
    fn fill_pass(&mut self, progress: &mut dyn FnMut(f64) -> bool) -> bool {
        let n = self.grid.n;
        for i in (1..=n).rev() {
            let splits = self.splits_of(i);
            self.fill_stage(i, &splits);
            if !progress((n + 1 - i) as f64 / n as f64) {
                return false;
            }
        }
        true
    }

    /// Every square (i, x, A) of stage i, on the machine's cores: a square
    /// reads only stages after i (finished) and writes only its own cells,
    /// so the squares are independent ([`Workers`]).
    fn fill_stage(&mut self, i: usize, splits: &Splits) {
        let cuts: Vec<f64> = (0..=self.grid.slots).map(|a| self.oc_cut(i, a)).collect();
        let Forward {
            slots,
            max_delta,
            square,
            block,
            values,
            choices,
            rows,
            row_block,
            row_min,
        } = &mut self.forward;
        let (slots, max_delta, block, row_block) = (*slots, *max_delta, *block, *row_block);
        // Stage i's two blocks (x = 0, 1) and, after them, the finished stages.
        let (done_at, done_rows_at) = ((2 * i + 2) * block, (2 * i + 2) * row_block);
        let (now, done) = values.split_at_mut(done_at);
        let (now_rows, done_row_min) = row_min.split_at_mut(done_rows_at);
        let mut now = &mut now[2 * i * block..];
        let mut now_choices = &mut choices[2 * i * block..done_at];
        let mut now_rows = &mut now_rows[2 * i * row_block..];
        let mut pieces = Vec::with_capacity(2 * (slots + 1));
        for x in 0..2 {
            for (a, &cut) in cuts.iter().enumerate() {
                let side = Forward::side(slots, max_delta, a);
                let (values, rest) = std::mem::take(&mut now).split_at_mut(side * side);
                now = rest;
                let (choices, rest) = std::mem::take(&mut now_choices).split_at_mut(side * side);
                now_choices = rest;
                let (row_min, rest) = std::mem::take(&mut now_rows).split_at_mut(side);
                now_rows = rest;
                pieces.push(SquareOut {
                    x,
                    a,
                    cut,
                    values,
                    choices,
                    row_min,
                });
            }
        }
        // Both squares of one A read the same sub-squares (stage > i at A,
        // the input sent): one after the other, they find them in cache.
        // (The order changes no cell: each square is computed alone.)
        pieces.sort_by_key(|p| p.a);
        let layer = OcLayer {
            grid: &self.grid,
            back: &self.back,
            mode: self.mode,
            loss: self.loss,
            only_kept: self.only_kept,
            slots,
            max_delta,
            block,
            square,
            row_block,
            rows,
            done,
            done_at,
            done_row_min,
            done_rows_at,
            i,
            splits,
            kernel: self.kernel,
        };
        // A square's work: its cells times the splits Case 2 may try.
        let lasts = (splits.f.len() + 1) as u64;
        self.workers.run(
            pieces,
            |p| p.values.len() as u64 * lasts,
            || Scratch::new(max_delta + 1),
            |sc, mut p| layer.fill_square(&mut p, sc),
        );
    }

    /// What Case 2 of OC needs at stage i for each `last` (index last − i),
    /// whatever the state.
    fn splits_of(&self, i: usize) -> Splits {
        let g = &self.grid;
        let n = g.n;
        let mut out = Splits::default();
        if i >= n {
            return out;
        }
        let mut f = 0.0;
        let mut reach = f64::NEG_INFINITY;
        let mut kmax = 0;
        let mut smax = 0;
        out.first = g.m_fnone(i, i, n);
        for last in i..n {
            let mk = g.m_fnone(i, last, n);
            kmax = kmax.max(mk);
            if last > i {
                smax = smax.max(mk);
            }
            reach = reach.max(mk as f64 - g.beta * f);
            f += g.ufn[last];
            out.kept_max.push(kmax);
            out.sent_max.push(smax);
            out.f.push(f);
            out.rest_f.push(g.rest[i] + f);
            out.f_rest.push(f + g.rest[last + 1]);
            out.reach.push(reach);
        }
        out
    }

    /// Table 2: the state after this step, offloading the input or not, at
    /// stage i with input kind x.
    #[allow(clippy::too_many_arguments)]
    fn next_state(
        &self,
        from: OcState,
        (i, x): (usize, usize),
        input: usize,
        sent: f64,
        fetched: f64,
        offload: bool,
    ) -> OcState {
        let g = &self.grid;
        let OcState { a, df, db, .. } = from;
        let left_b = g.leftover(db as f64 - fetched);
        let (a, df, db) = if offload {
            (a, g.leftover((df + input) as f64 - sent), left_b + input)
        } else {
            (a + input, g.leftover(df as f64 - sent), left_b)
        };
        OcState { i, x, a, df, db }
    }

    /// The schedule of the DP's optimum (compute ops and offloads; the
    /// prefetches' deadlines in `needs`).
    pub fn plan(&mut self, progress: &mut Progress<'_>) -> Result<Option<PofoPlan>, SolveError> {
        let Some(predicted_seconds) = self.best_seconds(progress)? else {
            return Ok(None);
        };
        let mut out = PofoPlan {
            ops: Vec::with_capacity(4 * self.grid.n),
            needs: Vec::new(),
            loss_index: 0,
            predicted_seconds,
        };
        self.read_forward(OcState::FIRST, &mut out);
        Ok(Some(out))
    }

    fn read_forward(&self, state: OcState, out: &mut PofoPlan) {
        let OcState { i, x, a, df, db } = state;
        let at = self
            .forward
            .index(i, x, a, df, db)
            .expect("a state on the optimal path is in the table");
        let choice = ForwardChoice::decode(self.forward.choices[at], i);
        let input = self.grid.input(i, x);
        let tensor = if x == 1 {
            TensorKind::Saved
        } else {
            TensorKind::Output
        };
        let g = &self.grid;
        let big_n = g.slots;
        let mfx = (a + df + input) as f64;
        let mbx = (a + db + input) as f64;
        match choice {
            ForwardChoice::Infeasible => unreachable!("read out of an infeasible state"),
            ForwardChoice::Loss => {
                out.loss_index = out.ops.len();
                out.ops.push(Op::forward_all(i));
                out.ops.push(Op::Backward { stage: i });
            }
            ForwardChoice::All { offload } => {
                let n = g.n;
                let (mf, mb) = (g.m_fall(i, n), g.m_b(i));
                let eps_f = g.idle(mf as f64 + mfx - big_n as f64);
                let eps_b = g.idle(mb as f64 + mbx - big_n as f64);
                let sent = (g.uf[i] + eps_f) * g.beta;
                let fetched = (g.ub[i] + eps_b) * g.beta;
                out.ops.push(Op::forward_all(i));
                if offload {
                    out.ops.push(Op::Offload {
                        stage: i - 1,
                        tensor,
                    });
                }
                let next = self.next_state(state, (i + 1, 1), input, sent, fetched, offload);
                self.read_forward(next, out);
                if offload {
                    out.needs.push((out.ops.len(), i - 1, tensor));
                }
                out.ops.push(Op::Backward { stage: i });
            }
            ForwardChoice::Checkpoint { last, offload } => {
                let n = g.n;
                let free = big_n - a - input;
                let mut f = 0.0;
                let mut reach = f64::NEG_INFINITY;
                for k in i..=last {
                    reach = reach.max(g.m_fnone(i, k, n) as f64 - g.beta * f);
                    f += g.ufn[k];
                }
                let eps_f = g.idle(case2_excess(reach, mfx, big_n as f64));
                let back = self.c(i, last, free, db);
                let sent = (f + eps_f) * g.beta;
                let fetched = back * g.beta;
                out.ops.push(Op::ForwardCheckpoint { stage: i });
                if offload {
                    out.ops.push(Op::Offload {
                        stage: i - 1,
                        tensor,
                    });
                }
                out.ops
                    .extend((i + 1..=last).map(|stage| Op::ForwardNone { stage }));
                let next = self.next_state(state, (last + 1, 0), input, sent, fetched, offload);
                self.read_forward(next, out);
                if offload {
                    out.needs.push((out.ops.len(), i - 1, tensor));
                }
                self.read_backward(i, last, free, db, &mut out.ops);
            }
        }
    }

    /// Appends the ops of C_Δ(i, j, m, Δ).
    fn read_backward(&self, i: usize, j: usize, m: usize, delta: usize, ops: &mut Vec<Op>) {
        let g = &self.grid;
        let choice = self.back.choices[self.back.layout.index(i, j, m, delta)];
        if i == j || choice == 1 {
            ops.push(Op::forward_all(i));
            if i < j {
                let (_, d1) = self
                    .read_c()
                    .backward_all(i, j, m, delta)
                    .expect("the stored choice is feasible");
                self.read_backward(i + 1, j, m - g.abar[i], d1, ops);
            }
            ops.push(Op::Backward { stage: i });
            return;
        }
        let last = i + (choice - 2) as usize;
        ops.push(Op::ForwardCheckpoint { stage: i });
        ops.extend((i + 1..=last).map(|stage| Op::ForwardNone { stage }));
        let left = self.c(i, last, m, delta);
        let d2 = g.leftover(delta as f64 - left * g.beta);
        self.read_backward(last + 1, j, m - g.a[last], d2, ops);
        self.read_backward(i, last, m, delta, ops);
    }
}

/// C_Δ being filled: its finished pairs, the cut, and how far Δ goes in
/// this pass.
struct CLayer<'a> {
    read: CRead<'a>,
    cut: &'a [f64],
    delta_cap: usize,
    /// The split loop, chosen once for this CPU.
    kernel: Kernel,
}

impl CLayer<'_> {
    /// C_Δ(i, j, ·, ·): F_all^i (or the leaf) for every (m, Δ), then each
    /// F_ck split over every (m, Δ) at once — split-major, so the left
    /// sub-table C_Δ(i, last, ·, ·) is read in order. Candidates are tried in
    /// the same order as one cell at a time would (F_all, then `last`
    /// ascending, strict improvement), so the values and choices are too.
    // `m` indexes the row maxima and two tables' rows at once.
    #[allow(clippy::needless_range_loop)]
    fn fill_pair(&self, out: &mut PairOut<'_>, row_max: &mut [f64]) {
        let (i, j) = (out.i, out.j);
        let slots = self.read.grid.slots;
        let layout = self.read.layout;
        // Δ ≤ cap: the transfer-free pass computes Δ = 0 only.
        let cap = self.delta_cap.min(layout.cap[i]);
        for m in 0..slots + 1 {
            // Half-open ranges in the hot loops: an inclusive one checks an
            // extra flag on every step.
            let cells = m.min(cap) + 1;
            let at = layout.row(i, m);
            let vals = &mut out.values[at..][..cells];
            let chs = &mut out.choices[at..][..cells];
            if i == j {
                for delta in 0..cells {
                    (vals[delta], chs[delta]) = self.read.backward_first(i, j, m, delta);
                }
            } else {
                self.read.backward_all_row(i, j, m, vals, chs);
            }
            row_max[m] = largest(vals);
        }
        if i < j {
            match self.kernel {
                Kernel::Portable => self.fill_splits(out, row_max, Portable),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: an `Avx2` is only made on a CPU with AVX2.
                Kernel::Avx2(avx2) => unsafe { self.fill_splits_avx2(out, row_max, avx2) },
            }
        }
        // Each row's least value, for the bounds of longer segments (the
        // cells past this pass's cap hold ∞).
        for m in 0..=slots {
            let row = &out.values[layout.row(i, m)..layout.row(i, m + 1)];
            out.row_min[m] = least(row);
        }
    }

    /// The F_ck^i splits of C_Δ(i, j, ·, ·), split-major.
    ///
    /// A split's candidate at (m, Δ) is v = ((f + right) + left) + ε with
    /// right ≥ r_min, the least of its right sub-row, and ε ≥ 0; float
    /// addition is monotone, so v ≥ (f + r_min) + left exactly, and a cell
    /// whose value is already at most that bound cannot improve (a candidate
    /// must be strictly better): it is skipped without computing v, and a
    /// whole row is when (f + r_min) + l_min reaches the row's largest
    /// value. No margin is needed; nothing a skip saves could have changed
    /// a value or a choice.
    #[inline(always)]
    fn fill_splits<L: Loops>(&self, out: &mut PairOut<'_>, row_max: &mut [f64], loops: L) {
        let (i, j) = (out.i, out.j);
        let CRead {
            grid: g, layout, ..
        } = &self.read;
        let slots = g.slots;
        // Δ ≤ cap: the transfer-free pass computes Δ = 0 only.
        let max_delta = self.delta_cap;
        let beta = g.beta;
        // Above this, C_Δ(i, j, ·) is on no optimal path (`find_cut`): a
        // candidate whose bound passes it is skipped.
        let cut = self.cut[i] - g.rest[j + 1];
        // Every forward of the F_ck^i / F_∅ chain over i..=last must fit
        // (only those: a later stage's forward is the sub-problem's, which
        // may run it as an F_all, whose o_f may be below o_f∅).
        let mut threshold = 0;
        let mut f = 0.0;
        let mut reach = f64::NEG_INFINITY;
        for last in i..j {
            threshold = threshold.max(g.m_fnone(i, last, j));
            f += g.ufn[last];
            reach = reach.max(g.m_fnone(i, last, j) as f64 + beta * f);
            let code = 2 + (last - i) as Choice;
            // Lemma 1's term of `backward_checkpoint`, ((reach − β f) + Δ3) − m:
            // its first difference is the same for every cell.
            let k = reach - beta * f;
            let w = g.a[last];
            // Both sub-pairs are finished (`Pofo::fill_backward`).
            let (left, left_min) = self.read.pair(i, last);
            let (right, right_min) = self.read.pair(last + 1, j);
            for m in threshold.max(w)..slots + 1 {
                let lb = f + right_min[m - w];
                let row_lb = lb + left_min[m];
                if row_lb >= row_max[m] || row_lb > cut {
                    continue;
                }
                let mf = m as f64;
                // Each row as stored: Δ ≤ min(m, Δ_max, D) (`PairLayout`),
                // and no more than this pass computes.
                let rdm = (m - w).min(max_delta).min(layout.cap[last + 1]);
                let dm = m.min(max_delta).min(layout.cap[i]);
                let out_at = layout.row(i, m);
                // Slices of the row's exact length: no bounds check per cell.
                let lefts = &left[out_at..][..dm + 1];
                let rights = &right[layout.row(last + 1, m - w)..][..rdm + 1];
                let vals = &mut out.values[out_at..][..dm + 1];
                let chs = &mut out.choices[out_at..][..dm + 1];
                let terms = SplitTerms {
                    f,
                    lb,
                    cut,
                    beta,
                    k,
                    m: mf,
                    lefts,
                    rights,
                };
                row_max[m] = loops.try_split(&terms, code, vals, chs);
            }
        }
    }

    /// [`CLayer::fill_splits`] compiled with AVX2, its loops inlined.
    ///
    /// # Safety
    /// The CPU has AVX2 (an [`Avx2`] is the proof).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn fill_splits_avx2(&self, out: &mut PairOut<'_>, row_max: &mut [f64], avx2: Avx2) {
        self.fill_splits(out, row_max, avx2);
    }
}

/// What every square of one OC stage i reads: the grid, C_Δ, and OC's
/// finished stages (i + 1 ..= L), which start at `done_at` (values) and
/// `done_rows_at` (row minima) in the whole memo.
struct OcLayer<'a> {
    grid: &'a Grid,
    back: &'a Backward,
    mode: Mode,
    loss: LossStep,
    only_kept: bool,
    slots: usize,
    max_delta: usize,
    block: usize,
    square: &'a [usize],
    row_block: usize,
    rows: &'a [usize],
    done: &'a [f64],
    done_at: usize,
    done_row_min: &'a [f64],
    done_rows_at: usize,
    i: usize,
    splits: &'a Splits,
    /// Case 2's inner loop, chosen once for this CPU.
    kernel: Kernel,
}

/// One square (i, x, A) of OC being filled: its cells, its rows' least
/// values, and its cut.
struct SquareOut<'a> {
    x: usize,
    a: usize,
    cut: f64,
    values: &'a mut [f64],
    choices: &'a mut [u16],
    row_min: &'a mut [f64],
}

impl OcLayer<'_> {
    /// OC_x(i, A, ·, ·) for every Δ_F, Δ_B of the memo's square, and the
    /// least value of each of its rows.
    fn fill_square(&self, out: &mut SquareOut<'_>, sc: &mut Scratch) {
        match self.kernel {
            Kernel::Portable => self.fill_square_values(out, sc, Portable),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Avx2` is only made on a CPU with AVX2.
            Kernel::Avx2(avx2) => unsafe { self.fill_square_values_avx2(out, sc, avx2) },
        }
        let side = Forward::side(self.slots, self.max_delta, out.a);
        for r in 0..side {
            let row = &out.values[r * side..][..side];
            out.row_min[r] = least(row);
        }
    }

    /// [`OcLayer::fill_square_values`] compiled with AVX2, its loops inlined.
    ///
    /// # Safety
    /// The CPU has AVX2 (an [`Avx2`] is the proof).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn fill_square_values_avx2(
        &self,
        out: &mut SquareOut<'_>,
        sc: &mut Scratch,
        avx2: Avx2,
    ) {
        self.fill_square_values(out, sc, avx2);
    }

    // Rows and columns index several per-row and per-column arrays at once.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn fill_square_values<L: Loops>(&self, out: &mut SquareOut<'_>, sc: &mut Scratch, loops: L) {
        let (i, x, a, splits) = (self.i, out.x, out.a, self.splits);
        let n = self.grid.n;
        let big_n = self.grid.slots;
        let side = Forward::side(big_n, self.max_delta, a);
        out.values.fill(f64::INFINITY);
        out.choices.fill(ForwardChoice::Infeasible.encode(i));
        let input = self.grid.input(i, x);
        if a + input > big_n {
            return;
        }
        let free = big_n - a - input;
        // Δ_F, Δ_B ≤ free: larger ones cannot fit.
        let s = if self.only_kept {
            1
        } else {
            (free + 1).min(side).min(self.grid.reached(i) + 1)
        };
        let cut = out.cut;
        let g = self.grid;
        let beta = g.beta;
        let nf = big_n as f64;
        // This square's cells (from 0) and the finished stages' (from
        // `done_at` in the whole memo).
        let values = &mut *out.values;
        let choices = &mut *out.choices;
        let done = self.done;
        let at = 0;
        if i == n {
            let (mf, mb) = (g.m_fall(n, n), g.m_b(n));
            if mf > free || mb > free {
                return;
            }
            let code = ForwardChoice::Loss.encode(i);
            for df in 0..s {
                let mfx = (a + df + input) as f64;
                let eps_f = g.idle(mf as f64 + mfx - nf);
                for db in 0..s {
                    let mbx = (a + db + input) as f64;
                    let eps_b = g.idle(mb as f64 + mbx - nf);
                    let v = if df == 0 && db == 0 {
                        (g.uf[n] + g.ub[n]) + (eps_f + eps_b)
                    } else {
                        match self.loss {
                            LossStep::Paper => {
                                let left_f = (df as f64 - (g.uf[n] + eps_f) * beta).max(0.0);
                                let left_b = (db as f64 - (g.ub[n] + eps_b) * beta).max(0.0);
                                (g.uf[n] + g.ub[n]) + (eps_f + eps_b) + (left_f + left_b) / beta
                            }
                            LossStep::Overlap => {
                                let compute = eps_f + g.uf[n] + g.ub[n] + eps_b;
                                let copy =
                                    (df as f64 / beta).max(eps_f + g.uf[n]) + db as f64 / beta;
                                compute.max(copy)
                            }
                        }
                    };
                    values[at + df * side + db] = v;
                    choices[at + df * side + db] = code;
                }
            }
            return;
        }
        let can_offload = beta > 0.0 && !self.only_kept;
        let fwd_block = self.block;
        let square = self.square;
        let (row_block, rows) = (self.row_block, self.rows);
        let row_min = self.done_row_min;
        let md = self.max_delta;
        let (done_at, done_rows_at) = (self.done_at, self.done_rows_at);
        // The sub-square (i2, x2, a2) of a finished stage (i2 > i): its
        // base in `done`, side and row minima's base in `row_min`, or None
        // when A2 > N (every state there is out of the table: ∞).
        let sub_square = |i2: usize, x2: usize, a2: usize| -> Option<(usize, usize, usize)> {
            (a2 <= big_n).then(|| {
                (
                    (2 * i2 + x2) * fwd_block + square[a2] - done_at,
                    Forward::side(big_n, md, a2),
                    (2 * i2 + x2) * row_block + rows[a2] - done_rows_at,
                )
            })
        };
        // Case 1: F_all^i.
        let (mf, mb) = (g.m_fall(i, n), g.m_b(i));
        if mf <= free && mb <= free {
            for df in 0..s {
                let mfx = (a + df + input) as f64;
                let eps_f = g.idle(mf as f64 + mfx - nf);
                let sent = (g.uf[i] + eps_f) * beta;
                sc.ef[df] = eps_f;
                sc.rk[df] = leftover(df as f64 - sent);
                sc.ro[df] = leftover((df + input) as f64 - sent);
            }
            for db in 0..s {
                let mbx = (a + db + input) as f64;
                let eps_b = g.idle(mb as f64 + mbx - nf);
                let fetched = (g.ub[i] + eps_b) * beta;
                let lb = leftover(db as f64 - fetched);
                sc.eb[db] = eps_b;
                sc.ck[db] = lb;
                sc.co[db] = lb + input;
            }
            let fixed = g.uf[i] + g.ub[i];
            for offload in [false, true] {
                if offload && !can_offload {
                    continue;
                }
                let code = ForwardChoice::All { offload }.encode(i);
                let (rows, cols) = if offload {
                    (&sc.ro, &sc.co)
                } else {
                    (&sc.rk, &sc.ck)
                };
                let a2 = if offload { a } else { a + input };
                let Some((base2, side2, _)) = sub_square(i + 1, 1, a2) else {
                    continue;
                };
                for df in 0..s {
                    let r = rows[df];
                    if r >= side2 {
                        continue;
                    }
                    let row2 = base2 + r * side2;
                    let ef = sc.ef[df];
                    let out = at + df * side;
                    for db in 0..s {
                        let c = cols[db];
                        if c >= side2 {
                            continue;
                        }
                        let sub = done[row2 + c];
                        let v = fixed + sub + (ef + sc.eb[db]);
                        if v < values[out + db] {
                            values[out + db] = v;
                            choices[out + db] = code;
                        }
                    }
                }
            }
        }
        if self.mode == Mode::OffloadOnly {
            return;
        }
        // Case 2: F_ck^i, F_∅ up to `last`.
        if splits.first > free {
            return;
        }
        for df in 0..s {
            let row = &values[at + df * side..][..s];
            sc.row_max[df] = largest(row);
        }
        let back = &self.back;
        for (k, last) in (i..n).enumerate() {
            // fits_sent: every F_∅ after F_ck^i with the input sent.
            if splits.sent_max[k] > free + input {
                break;
            }
            // Past the cut every cell stops (the reference's per-cell
            // stop, for the whole square at once: rest_f is the same).
            let rest_f = splits.rest_f[k];
            if rest_f > cut {
                break;
            }
            let fits_kept = splits.kept_max[k] <= free;
            let f = splits.f[k];
            let f_rest = splits.f_rest[k];
            let reach = splits.reach[k];
            for df in 0..s {
                let mfx = (a + df + input) as f64;
                let eps_f = g.idle(case2_excess(reach, mfx, nf));
                let sent = (f + eps_f) * beta;
                sc.ef[df] = eps_f;
                sc.rk[df] = leftover(df as f64 - sent);
                sc.ro[df] = leftover((df + input) as f64 - sent);
            }
            let crow = back.layout.index(i, last, free, 0);
            // The next split's row of C_Δ, on its way while this split runs:
            // each split's is in another pair, far from this one, and its
            // load was the setup's slowest step.
            if last + 1 < n {
                let next = back.layout.index(i, last + 1, free, 0);
                kernel::prefetch(&back.values[next..][..s]);
            }
            for db in 0..s {
                let b = back.values[crow + db];
                sc.eb[db] = b;
                let lb = leftover(db as f64 - b * beta);
                sc.ck[db] = lb;
                sc.co[db] = lb + input;
            }
            let keep = if fits_kept {
                sub_square(last + 1, 0, a + input)
            } else {
                None
            };
            let sent = if can_offload {
                sub_square(last + 1, 0, a)
            } else {
                None
            };
            // Each option's columns, checked once against its sub-square.
            let keep_cols =
                keep.map(|(_, side2, _)| loops.columns(&sc.ck[..s], side2, &mut sc.ck_quads));
            let sent_cols =
                sent.map(|(_, side2, _)| loops.columns(&sc.co[..s], side2, &mut sc.co_quads));
            let code_keep = ForwardChoice::Checkpoint {
                last,
                offload: false,
            }
            .encode(i);
            let code_sent = ForwardChoice::Checkpoint {
                last,
                offload: true,
            }
            .encode(i);
            // A row's candidates are at least ((f + the sub-row's least) +
            // the least C_Δ) + ε_F (float addition is monotone): a row whose
            // largest value is already at most that cannot improve, exactly.
            let b_min = least(&sc.eb[..s]);
            let mut alive = false;
            for df in 0..s {
                let ef = sc.ef[df];
                let out = at + df * side;
                // The reference's per-cell stop (rest_f past the cell's best,
                // with its margin) for the row's largest best: the margin
                // only grows with the best, so no cell of a row past this
                // can take a candidate at this split or any later one.
                let row_most = sc.row_max[df];
                if rest_f > row_most + row_most.abs() * 1e-9 {
                    continue;
                }
                alive = true;
                let row_of = |sub: Option<(usize, usize, usize)>, r: usize| match sub {
                    Some((base2, side2, rb2)) if r < side2 => {
                        Some((&done[base2 + r * side2..][..side2], row_min[rb2 + r]))
                    }
                    _ => None,
                };
                let krow = row_of(keep, sc.rk[df]);
                let srow = row_of(sent, sc.ro[df]);
                let sub_least =
                    |row: Option<(&[f64], f64)>| row.map_or(f64::INFINITY, |(_, m)| f + m);
                let lb = sub_least(krow).min(sub_least(srow));
                if (lb + b_min) + ef >= row_most {
                    continue;
                }
                let vals = &mut values[out..][..s];
                let chs = &mut choices[out..][..s];
                let terms = Terms {
                    f,
                    ef,
                    f_rest,
                    cut,
                    eb: &sc.eb[..s],
                };
                // Each option returns the row's largest value after it: the
                // row's bound for the next split (unchanged if neither ran).
                if let (Some((row2, _)), Some(cols)) = (krow, &keep_cols) {
                    sc.row_max[df] = loops.try_option(&terms, row2, cols, code_keep, vals, chs);
                }
                if let (Some((row2, _)), Some(cols)) = (srow, &sent_cols) {
                    sc.row_max[df] = loops.try_option(&terms, row2, cols, code_sent, vals, chs);
                }
            }
            if !alive {
                break;
            }
        }
    }
}

/// pofo's (or offload-only's) tables for every budget up to a top at once,
/// on one absolute grid: slots of u = ⌊top / N⌋ bytes, N of them at the top
/// (the per-budget grid of the top budget). A budget B has ⌊B / u⌋ of them
/// (at most N), and its optimum is OC_0(1, N − ⌊B / u⌋, 0, 0) of the one
/// table: built once, each new budget is a read-out of O(L) states.
///
/// **Why it is exact.** C_Δ(i, j, m, Δ) depends on the slot size only,
/// never on the budget, and every term of OC depends on the free memory
/// N − A, never on N alone: Lemma 1's excesses are sums of whole slots
/// (exact in floats) plus, in Case 2, one float `reach` added to the exact
/// whole number A + Δ_F + I − N ([`case2_excess`]); Δ ≤ N − A bounds the
/// square of A either way. So the state (A, Δ_F, Δ_B) of a budget of N_B
/// slots is, to the bit, the state (A + N − N_B, Δ_F, Δ_B) of the table,
/// value and choice, and the plan read from it is the per-budget DP's on
/// the same grid ([`Pofo::build`] with a budget of ⌊B / u⌋ u bytes and
/// ⌊B / u⌋ slots): the tests compare both on thousands of chains.
///
/// **What it gives up.** The per-budget DP's cut (`Pofo::find_cut`) bounds
/// its states by *that* budget's transfer-free optimum and cuts C_Δ too; a
/// table read at every budget has its own (`Pofo::find_table_cut`): per
/// A, the largest transfer-free optimum of the budgets whose path can
/// reach A (A only grows along a path), and C_Δ uncut. It builds in about
/// 1.1 per-budget solves of N slots (L = 100, N = 50; 1.3× faster than
/// with no cut; the same memory, [`table_bytes`]). And at a budget below
/// the top it has fewer slots than the per-budget DP's N (⌊B / u⌋, coarser
/// in proportion), so its answer may be slower than the per-budget one,
/// never faster than the exact optimum: a caller wanting the paper's grid
/// at B shows this answer at once and refines it with [`Pofo::build`] at B.
pub struct Table {
    dp: Pofo,
    slot_bytes: u64,
}

impl Table {
    /// The tables for every budget up to `top_budget_bytes` on its grid of
    /// `slots` slots (C_Δ and then every OC state; `progress` sees both).
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        chain: &Chain,
        mode: Mode,
        loss: LossStep,
        top_budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
        max_table_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<Table, SolveError> {
        let mut dp = Pofo::build_with(
            chain,
            mode,
            top_budget_bytes,
            slots,
            bandwidth,
            max_table_bytes,
            false,
            Workers::available(),
            Kernel::detect(),
            progress,
        )?
        .with_loss_step(loss);
        dp.best_seconds(progress)?;
        let (slot_bytes, _) = grid(top_budget_bytes, slots);
        Ok(Table { dp, slot_bytes })
    }

    /// u: bytes a slot.
    pub fn slot_bytes(&self) -> u64 {
        self.slot_bytes
    }

    /// N: the slots of the top budget (the table's largest).
    pub fn top_slots(&self) -> usize {
        self.dp.grid.slots
    }

    /// ⌊budget / u⌋, at most N: the slots `budget` has on this grid.
    pub fn slots_for(&self, budget_bytes: u64) -> usize {
        (budget_bytes / self.slot_bytes).min(self.top_slots() as u64) as usize
    }

    /// The budget a per-budget solve on this grid is asked for `budget`:
    /// its slots times u (what the answer is exact for; at most `budget`).
    pub fn grid_budget(&self, budget_bytes: u64) -> u64 {
        self.slots_for(budget_bytes) as u64 * self.slot_bytes
    }

    /// The optimum's start state for `budget`: None with no slot at all.
    fn first(&self, budget_bytes: u64) -> Option<OcState> {
        let slots = self.slots_for(budget_bytes);
        (slots > 0).then(|| OcState {
            a: self.top_slots() - slots,
            ..OcState::FIRST
        })
    }

    /// The DP's time at `budget`, None where nothing fits on the grid.
    pub fn seconds(&self, budget_bytes: u64) -> Option<f64> {
        let OcState { i, x, a, df, db } = self.first(budget_bytes)?;
        let at = self.dp.forward.index(i, x, a, df, db)?;
        let v = self.dp.forward.values[at];
        v.is_finite().then_some(v)
    }

    /// The DP's plan at `budget` (O(L) states read), None where nothing fits.
    pub fn plan(&self, budget_bytes: u64) -> Option<PofoPlan> {
        let predicted_seconds = self.seconds(budget_bytes)?;
        let mut out = PofoPlan {
            ops: Vec::with_capacity(4 * self.dp.grid.n),
            needs: Vec::new(),
            loss_index: 0,
            predicted_seconds,
        };
        self.dp.read_forward(self.first(budget_bytes)?, &mut out);
        Some(out)
    }
}

/// The tables entry by entry, for the cross-check of `tests`.
#[cfg(test)]
impl Pofo {
    /// C_Δ(i, j, m, Δ) and its choice.
    fn c_entry(&self, i: usize, j: usize, m: usize, delta: usize) -> (f64, u16) {
        let at = self.back.layout.index(i, j, m, delta);
        (self.back.values[at], self.back.choices[at])
    }

    /// OC_x(i, A, Δ_F, Δ_B) and its choice.
    fn oc_entry(&self, i: usize, x: usize, a: usize, df: usize, db: usize) -> Option<(f64, u16)> {
        self.forward
            .index(i, x, a, df, db)
            .map(|at| (self.forward.values[at], self.forward.choices[at]))
    }

    /// Stage i's cut: states above it are not kept exact.
    fn cut_at(&self, i: usize) -> f64 {
        self.cut[i]
    }

    /// C_Δ(i, j, ·)'s cut.
    fn c_cut(&self, i: usize, j: usize) -> f64 {
        self.cut[i] - self.grid.rest[j + 1]
    }

    /// D_i: C_Δ(i, ·) past it is on no path and left ∞.
    fn reached_at(&self, i: usize) -> usize {
        self.grid.reached(i)
    }
}
