//! C_Δ(i, j, m, Δ), the backward phase (Appendix B.3): its table, stored
//! as triangles per pair (i, j) ([`PairLayout`]), filled split-major as a
//! wavefront of rows on the machine's cores ([`CLayer`]), and read out into
//! operations.

use super::grid::{largest, least, Grid};
#[cfg(target_arch = "x86_64")]
use super::kernel::Avx2;
use super::kernel::{Kernel, Loops, Portable, Row, SplitTerms};
use super::{Choice, Pofo, FILL_SHARE};
use crate::schedule::Op;
use crate::solvers::api::{Progress, SolveError};
use std::sync::OnceLock;

/// C_Δ(i, j, m, Δ) for every 1 ≤ i ≤ j < L, m ≤ N free slots besides the
/// segment's input, Δ ≤ m slots to prefetch by the segment's end.
pub(super) struct Backward {
    pub(super) values: Vec<f64>,
    pub(super) choices: Vec<Choice>,
    pub(super) layout: PairLayout,
    /// min over Δ of C_Δ(i, j, m, ·), per pair and m (the fill's bounds).
    pub(super) row_min: Vec<f64>,
    /// The fill computes Δ ≤ this (0 for the first, transfer-free pass).
    pub(super) delta_cap: usize,
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
pub(super) struct PairLayout {
    /// The first pair of each length.
    pub(super) len_start: Vec<usize>,
    /// The first entry of each pair, by pair index, and the table's size.
    pub(super) pair_at: Vec<usize>,
    /// Per stage i (from 1), where row m of a pair (i, ·) starts, for m in
    /// 0..=N + 1 (the last: the pair's size); rows (N + 2) apart.
    pub(super) row_at: Vec<usize>,
    /// Per stage i, min(Δ_max, D_i): the widest Δ stored for pairs (i, ·).
    pub(super) cap: Vec<usize>,
    pub(super) slots: usize,
}

impl PairLayout {
    /// `reached[i]` is D_i for stage i in 0..=n (`Grid::reached`).
    pub(super) fn new(n: usize, slots: usize, max_delta: usize, reached: &[usize]) -> PairLayout {
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
    pub(super) fn pairs(&self) -> usize {
        *self.len_start.last().expect("n + 1 entries")
    }

    /// Entries in all.
    pub(super) fn entries(&self) -> usize {
        *self.pair_at.last().expect("pairs + 1 entries")
    }

    pub(super) fn pair(&self, i: usize, j: usize) -> usize {
        self.len_start[j - i] + (i - 1)
    }

    /// Where row m of a pair (i, ·) starts, from the pair's first entry.
    pub(super) fn row(&self, i: usize, m: usize) -> usize {
        self.row_at[i * (self.slots + 2) + m]
    }

    /// Whether C_Δ(i, ·, m, Δ) is stored (else it is ∞).
    pub(super) fn stored(&self, i: usize, m: usize, delta: usize) -> bool {
        m <= self.slots && delta <= m && delta <= self.cap[i]
    }

    /// Where C_Δ(i, j, m, Δ) is; only for a stored cell.
    pub(super) fn index(&self, i: usize, j: usize, m: usize, delta: usize) -> usize {
        debug_assert!(self.stored(i, m, delta));
        self.pair_at[self.pair(i, j)] + self.row(i, m) + delta
    }
}

/// C_Δ as it is read: whole, or its finished pairs while it is filled.
pub(super) struct CRead<'a> {
    pub(super) grid: &'a Grid,
    pub(super) layout: &'a PairLayout,
    pub(super) finished: Finished<'a>,
}

/// A pair's entries and its rows' least values, as stored.
pub(super) type PairCells<'a> = (&'a [f64], &'a [f64]);

/// Where a reader of C_Δ finds a pair.
pub(super) enum Finished<'a> {
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
    pub(super) fn pair(&self, i: usize, j: usize) -> PairCells<'a> {
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
    pub(super) fn c(&self, i: usize, j: usize, m: usize, delta: usize) -> f64 {
        if !self.layout.stored(i, m, delta) {
            return f64::INFINITY;
        }
        self.pair(i, j).0[self.layout.row(i, m) + delta]
    }

    /// The leaf C_Δ(i, i, ·) or Case 1 (F_all^i) of C_Δ(i, j, m, Δ).
    pub(super) fn backward_first(
        &self,
        i: usize,
        j: usize,
        m: usize,
        delta: usize,
    ) -> (f64, Choice) {
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
    pub(super) fn backward_all(
        &self,
        i: usize,
        j: usize,
        m: usize,
        delta: usize,
    ) -> Option<(f64, usize)> {
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
    pub(super) fn backward_all_row(
        &self,
        i: usize,
        j: usize,
        m: usize,
        vals: &mut [f64],
        chs: &mut [Choice],
    ) {
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
pub(super) struct PairOut<'a> {
    pub(super) i: usize,
    pub(super) j: usize,
    pub(super) values: &'a mut [f64],
    pub(super) choices: &'a mut [Choice],
    pub(super) row_min: &'a mut [f64],
}

impl Pofo {
    /// C_Δ, whole.
    pub(super) fn read_c(&self) -> CRead<'_> {
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
    pub(super) fn c(&self, i: usize, j: usize, m: usize, delta: usize) -> f64 {
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
    pub(super) fn fill_backward(&mut self, progress: &mut Progress<'_>) -> Result<(), SolveError> {
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

    /// Appends the ops of C_Δ(i, j, m, Δ).
    pub(super) fn read_backward(
        &self,
        i: usize,
        j: usize,
        m: usize,
        delta: usize,
        ops: &mut Vec<Op>,
    ) {
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
pub(super) struct CLayer<'a> {
    pub(super) read: CRead<'a>,
    pub(super) cut: &'a [f64],
    pub(super) delta_cap: usize,
    /// The split loop, chosen once for this CPU.
    pub(super) kernel: Kernel,
}

impl CLayer<'_> {
    /// C_Δ(i, j, ·, ·): F_all^i (or the leaf) for every (m, Δ), then each
    /// F_ck split over every (m, Δ) at once — split-major, so the left
    /// sub-table C_Δ(i, last, ·, ·) is read in order. Candidates are tried in
    /// the same order as one cell at a time would (F_all, then `last`
    /// ascending, strict improvement), so the values and choices are too.
    // `m` indexes the row maxima and two tables' rows at once.
    #[allow(clippy::needless_range_loop)]
    pub(super) fn fill_pair(&self, out: &mut PairOut<'_>, row_max: &mut [f64]) {
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
    pub(super) fn fill_splits<L: Loops>(
        &self,
        out: &mut PairOut<'_>,
        row_max: &mut [f64],
        loops: L,
    ) {
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
                row_max[m] = loops.try_split(&terms, Row { vals, chs, code });
            }
        }
    }

    /// [`CLayer::fill_splits`] compiled with AVX2, its loops inlined.
    ///
    /// # Safety
    /// The CPU has AVX2 (an [`Avx2`] is the proof).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn fill_splits_avx2(
        &self,
        out: &mut PairOut<'_>,
        row_max: &mut [f64],
        avx2: Avx2,
    ) {
        self.fill_splits(out, row_max, avx2);
    }
}
