//! Optimal persistent schedules: `rotor` and `revolve`.
//!
//! **Paper.** Beaumont, Eyraud-Dubois, Herrmann, Joly, Shilova, *Optimal
//! checkpointing for heterogeneous chains: how to train deep neural networks
//! with limited memory*, RR-9302 (`papers/rotor-heterogeneous-chains-rr9302.txt`).
//! `rotor` is Theorem 1 with Algorithms 1–2: C_BP(s, t, m) is the best time to
//! back-propagate stages s..t with a^{s-1} and δ^t resident and m slots free
//! besides a^{s-1}; either F_ck^s + F_∅ up to s'−1 then two sub-chains
//! (C_ck), or F_all^s, the sub-chain s+1..t, then B^s (C_all).
//! `revolve` is the same recursion restricted to the automatic-differentiation
//! model the report compares against (Section 5.3): only a^ℓ are checkpointed
//! and F_all^ℓ is always run right before B^ℓ, i.e. C_all only when s = t.
//!
//! **Accounting.** DESIGN.md's: B^ℓ holds δ^ℓ, ā^ℓ, δ^{ℓ-1} and its input at
//! once, so m_all^{s,t} = max(ω_δ^t + ω_ā^s + o_f^s, ω_δ^s + ω_ā^s + ω_δ^{s-1} + o_b^s).
//! The initial δ^L counts against the budget, like a^0. o_b^s may be negative
//! (autograd frees δ^s and parts of ā^s while B^s runs); the second term is
//! [`Chain::backward_bytes`], rounded up as one sum.
//!
//! **No-grad forwards.** F_ck and F_∅ record no graph; where a chain gives
//! `forward_nograd_seconds`, the C_ck case sums those times (the forward
//! chain F_ck^s, F_∅^{s+1..s'-1}) and C_all keeps the recording u_f^s.
//!
//! **Discretization.** Memory is cut into `slots` slots of ⌊budget / slots⌋ bytes and
//! every size is rounded up, so a schedule found on slots is valid in bytes;
//! it is exact when every size is a multiple of the slot size.
//!
//! **Complexity.** Building the table is O(L³·S) time and O(L²·S) memory
//! (S = slots); reading out a schedule for any budget up to the table's is
//! O(L²) in the worst case, O(L) nodes. The table is laid out one row of S+1
//! values per (s, t), so the innermost loop (over m) runs over contiguous
//! memory and vectorizes.
//!
//! **Assumptions.** Persistent schedules only (a checkpoint stays until its
//! backward uses it); the report shows non-persistent ones can be faster on
//! contrived chains (Figure 2).

use super::slots::{grid, SlotSizes};
use super::{Progress, SolveError};
use crate::model::Chain;
use crate::schedule::Op;
use serde::{Deserialize, Serialize};

/// Which class of persistent schedules the table optimizes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// F_all may be run anywhere (rotor report, Theorem 1).
    Rotor,
    /// F_all only right before its B (the automatic-differentiation model).
    Revolve,
}

/// The memory grid of a table: which DP, and its slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableGrid {
    pub variant: Variant,
    pub slot_bytes: u64,
    /// M, the slots of the largest budget.
    pub slots: usize,
}

/// The table C_BP(s, t, m) for one chain and every budget up to `budget_bytes`.
pub struct PersistentTable {
    variant: Variant,
    n: usize,
    slot_bytes: u64,
    /// M: the number of slots of the largest budget.
    max_slots: usize,
    /// Sizes in slots (capped at M+1, which is already infeasible).
    act: Vec<usize>,
    saved: Vec<usize>,
    grad: Vec<usize>,
    fwd_over: Vec<usize>,
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ in slots.
    bwd_need: Vec<usize>,
    forward: Vec<f64>,
    /// u_f^ℓ under no-grad (F_ck, F_∅).
    forward_nograd: Vec<f64>,
    backward: Vec<f64>,
    row_start: Vec<usize>,
    table: Vec<f64>,
}

/// One decision of Algorithm 2, for people and for the peak prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Leaf,
    All,
    Checkpoint { next: usize },
}

/// What a table answers for one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct PersistentPlan {
    pub ops: Vec<Op>,
    /// C_BP(1, L, M − ω_a^0), the DP's time.
    pub predicted_seconds: f64,
    /// The peak of this schedule per the DP's accounting, in exact bytes.
    pub predicted_peak_bytes: u64,
}

impl PersistentTable {
    /// Bytes the table for `n` stages and `slots` slots would take.
    pub fn table_bytes(n: usize, slots: usize) -> u128 {
        (n as u128 * (n as u128 + 1) / 2) * (slots as u128 + 1) * 8
    }

    /// Algorithm 1: fills C_BP(s, t, m) for all 1 ≤ s ≤ t ≤ L and m ≤ M.
    pub fn build(
        chain: &Chain,
        variant: Variant,
        budget_bytes: u64,
        slots: usize,
        max_table_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<PersistentTable, SolveError> {
        if slots == 0 {
            return Err(SolveError::BadOption("slots: must be at least 1".into()));
        }
        let n = chain.len();
        let need = Self::table_bytes(n, slots);
        if need > max_table_bytes as u128 {
            return Err(SolveError::TooLarge(format!(
                "slots: the table for {n} stages × {slots} slots needs {} (limit {}); use fewer --slots",
                crate::model::units::format_bytes(need.min(u64::MAX as u128) as u64),
                crate::model::units::format_bytes(max_table_bytes)
            )));
        }
        // ⌊budget / slots⌋ bytes a slot, so exactly `slots` of them fit.
        let (slot_bytes, slots) = grid(budget_bytes, slots);
        let grid = TableGrid {
            variant,
            slot_bytes,
            slots,
        };
        let mut t = PersistentTable::empty(chain, grid);
        let len = t.row_start[t.n + 1] * (t.max_slots + 1);
        let mut table = Vec::new();
        table
            .try_reserve_exact(len)
            .map_err(|_| SolveError::TooLarge("slots: not enough memory for the table".into()))?;
        table.resize(len, f64::INFINITY);
        t.table = table;
        t.fill(progress)?;
        Ok(t)
    }

    /// The sizes of `chain` on `grid`, with no values yet.
    fn empty(chain: &Chain, grid: TableGrid) -> PersistentTable {
        let n = chain.len();
        let slot_bytes = grid.slot_bytes.max(1);
        let SlotSizes {
            a,
            abar,
            d,
            of,
            b,
            uf,
            ub,
            ufn,
        } = SlotSizes::new(chain, slot_bytes, grid.slots + 1);
        let mut row_start = vec![0usize; n + 2];
        for s in 1..=n {
            row_start[s + 1] = row_start[s] + (n - s + 1);
        }
        PersistentTable {
            variant: grid.variant,
            n,
            slot_bytes,
            max_slots: grid.slots,
            act: a,
            saved: abar,
            grad: d,
            fwd_over: of,
            bwd_need: b,
            forward: uf,
            forward_nograd: ufn,
            backward: ub,
            row_start,
            table: Vec::new(),
        }
    }

    /// The grid and the values of the table, to move it elsewhere (a Web
    /// Worker builds it, the page reads schedules out of it).
    pub fn into_values(self) -> (TableGrid, Vec<f64>) {
        (self.grid(), self.table)
    }

    pub fn grid(&self) -> TableGrid {
        TableGrid {
            variant: self.variant,
            slot_bytes: self.slot_bytes,
            slots: self.max_slots,
        }
    }

    /// Rebuilds a table from [`into_values`](Self::into_values) for the same chain.
    pub fn from_values(
        chain: &Chain,
        grid: TableGrid,
        values: Vec<f64>,
    ) -> Result<PersistentTable, SolveError> {
        let mut t = PersistentTable::empty(chain, grid);
        let expected = t.row_start[t.n + 1] * (t.max_slots + 1);
        if values.len() != expected || grid.slot_bytes == 0 {
            return Err(SolveError::BadOption(format!(
                "table: {} values do not fit a {}-stage chain on {} slots (expected {expected})",
                values.len(),
                t.n,
                grid.slots
            )));
        }
        t.table = values;
        Ok(t)
    }

    fn row(&self, s: usize, t: usize) -> usize {
        (self.row_start[s] + (t - s)) * (self.max_slots + 1)
    }

    /// m_all^{s,t} in slots.
    fn m_all(&self, s: usize, t: usize) -> usize {
        (self.grad[t] + self.saved[s] + self.fwd_over[s]).max(self.bwd_need[s])
    }

    /// One term of m_∅: running F^j with a^{j-1} and a^j resident.
    fn none_term(&self, j: usize) -> usize {
        self.act[j - 1] + self.act[j] + self.fwd_over[j]
    }

    /// m_∅^{s,t} in slots, given max_{s<j<t} of the F_∅ terms.
    fn m_none(&self, s: usize, t: usize, inner: usize) -> usize {
        (self.grad[t] + self.act[s] + self.fwd_over[s]).max(self.grad[t] + inner)
    }

    fn all_allowed(&self, s: usize, t: usize) -> bool {
        s == t || self.variant == Variant::Rotor
    }

    /// Fills the table (Algorithm 1).
    ///
    /// Rows are computed in blocks of `COLUMNS` consecutive t, with s
    /// descending inside a block. For one s, every split s' updates the rows
    /// (s, t) of all the block's columns at once: they share the left
    /// sub-row C_BP(s, s'−1, ·), which is then read from L1 instead of memory,
    /// and the right sub-rows C_BP(s', t, ·) of the block's columns were just
    /// computed and are still in cache. The table is far larger than the
    /// caches, so this order, not arithmetic, sets the speed.
    ///
    /// Rotor only: `sat[r]` = P_all(s, t), the slots from which the F_all
    /// chain over s..t fits; from there on C_BP(s, t, m) is its time
    /// `tail[r]` = Σ (u_f + u_b), the lower bound of any schedule. Rows are
    /// computed up to P_all only, and a candidate whose two sub-rows are both
    /// in their tails is a constant: this skips most of the memory traffic
    /// without changing any value.
    fn fill(&mut self, progress: &mut Progress<'_>) -> Result<(), SolveError> {
        const COLUMNS: usize = 16;
        let n = self.n;
        let width = self.max_slots + 1;
        let rows = self.row_start[n + 1];
        let relax = relax_kernel();
        let lower = lower_kernel();
        let mut sat = vec![width; rows];
        let mut tail = vec![f64::INFINITY; rows];
        let mut best = vec![vec![f64::INFINITY; width]; COLUMNS];
        // Per column of the block: (hi, m_∅ threshold).
        let mut limits = [(0usize, 0usize); COLUMNS];
        let mut done = 0usize;
        let mut t0 = 1;
        while t0 <= n {
            let t1 = (t0 + COLUMNS - 1).min(n);
            for s in (1..=t1).rev() {
                let first = t0.max(s);
                let mut inner = (s + 1..first).map(|j| self.none_term(j)).max().unwrap_or(0);
                for t in first..=t1 {
                    if t >= s + 2 && t > first {
                        inner = inner.max(self.none_term(t - 1));
                    }
                    let hi = self.start_row(s, t, &mut sat, &mut tail, &mut best[t - t0]);
                    limits[t - t0] = (hi, self.m_none(s, t, inner));
                }
                let mut f = 0.0;
                for next in s + 1..=t1 {
                    f += self.forward_nograd[next - 1];
                    let w = self.act[next - 1];
                    let left = self.row_start[s] + (next - 1 - s);
                    if next > first {
                        // All splits of (s, next−1) are done: it is final.
                        self.finish_row(
                            s,
                            next - 1,
                            tail[left],
                            limits[next - 1 - t0].0,
                            &best[next - 1 - t0],
                        );
                    }
                    let b = self.row(s, next - 1);
                    for t in next.max(first)..=t1 {
                        let (hi, thr) = limits[t - t0];
                        let lo = thr.max(w);
                        if lo >= hi {
                            continue;
                        }
                        let right = self.row_start[next] + (t - next);
                        // From `flat` on, both sub-rows sit in their tails.
                        let flat = sat[left].max(sat[right].saturating_add(w)).clamp(lo, hi);
                        let a = self.row(next, t);
                        let row = &mut best[t - t0];
                        relax(
                            &mut row[lo..flat],
                            &self.table[a + lo - w..a + flat - w],
                            &self.table[b + lo..b + flat],
                            f,
                        );
                        if flat < hi {
                            lower(&mut row[flat..hi], (f + tail[right]) + tail[left]);
                        }
                    }
                }
                let last = self.row_start[s] + (t1 - s);
                self.finish_row(s, t1, tail[last], limits[t1 - t0].0, &best[t1 - t0]);
                done += t1 + 1 - first;
            }
            t0 = t1 + 1;
            if !progress(done as f64 / rows as f64) {
                return Err(SolveError::Cancelled);
            }
        }
        Ok(())
    }

    /// Starts row (s, t) in `best` with the C_all case (Theorem 1) and
    /// records its P_all and tail; returns where the computed part ends.
    fn start_row(
        &self,
        s: usize,
        t: usize,
        sat: &mut [usize],
        tail: &mut [f64],
        best: &mut [f64],
    ) -> usize {
        let width = self.max_slots + 1;
        let here = self.row_start[s] + (t - s);
        let fb = self.forward[s] + self.backward[s];
        if self.variant == Variant::Rotor {
            let (p, v) = if s == t {
                (self.m_all(s, s), fb)
            } else {
                let below = self.row_start[s + 1] + (t - s - 1);
                (
                    self.m_all(s, t).max(self.saved[s] + sat[below]),
                    fb + tail[below],
                )
            };
            sat[here] = p.min(width);
            tail[here] = v;
        }
        let hi = sat[here];
        best.fill(f64::INFINITY);
        if self.all_allowed(s, t) {
            let lo = self.m_all(s, t).max(self.saved[s]).min(hi);
            if s == t {
                best[lo..hi].fill(fb);
            } else if lo < hi {
                let w = self.saved[s];
                let sub = self.row(s + 1, t);
                let sub = &self.table[sub + lo - w..sub + hi - w];
                for (v, c) in best[lo..hi].iter_mut().zip(sub) {
                    *v = fb + c;
                }
            }
        }
        hi
    }

    /// Writes a finished row: computed up to `hi`, its tail after.
    fn finish_row(&mut self, s: usize, t: usize, tail: f64, hi: usize, best: &[f64]) {
        let width = self.max_slots + 1;
        let r = self.row(s, t);
        self.table[r..r + hi].copy_from_slice(&best[..hi]);
        self.table[r + hi..r + width].fill(tail);
    }

    /// The largest budget this table answers exactly (its slot grid).
    pub fn budget_bytes(&self) -> u64 {
        self.slot_bytes * self.max_slots as u64
    }

    pub fn slot_bytes(&self) -> u64 {
        self.slot_bytes
    }

    pub fn slots(&self) -> usize {
        self.max_slots
    }

    /// Memory the table holds.
    pub fn memory_bytes(&self) -> usize {
        self.table.len() * std::mem::size_of::<f64>()
    }

    fn top_slots(&self, budget_bytes: u64) -> Option<usize> {
        let m = ((budget_bytes / self.slot_bytes) as usize).min(self.max_slots);
        m.checked_sub(self.act[0])
    }

    /// The DP's best time for `budget_bytes`, or None if infeasible on this grid.
    pub fn best_seconds(&self, budget_bytes: u64) -> Option<f64> {
        let m = self.top_slots(budget_bytes)?;
        let v = self.table[self.row(1, self.n) + m];
        v.is_finite().then_some(v)
    }

    /// Algorithm 2: the optimal persistent schedule for `budget_bytes` (at
    /// most the table's budget; larger budgets are answered as the table's).
    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> Option<PersistentPlan> {
        let m = self.top_slots(budget_bytes)?;
        let predicted_seconds = self.table[self.row(1, self.n) + m];
        if !predicted_seconds.is_finite() {
            return None;
        }
        let mut ops = Vec::with_capacity(4 * self.n);
        let peak = self.read_out(chain, 1, self.n, m, &mut ops);
        Some(PersistentPlan {
            ops,
            predicted_seconds,
            predicted_peak_bytes: chain.output_bytes(0) + peak,
        })
    }

    /// Which case of Theorem 1 reached C_BP(s, t, m). It recomputes each
    /// candidate with the same arithmetic as `fill`, so equality is exact.
    fn decide(&self, s: usize, t: usize, m: usize) -> Decision {
        if s == t {
            return Decision::Leaf;
        }
        let value = self.table[self.row(s, t) + m];
        // The first candidate equal to the stored minimum is the one `fill`
        // kept; the nearest one is a fallback that exact arithmetic never needs.
        let mut nearest = (f64::INFINITY, Decision::Leaf);
        let mut consider = |c: f64, d: Decision| -> Option<Decision> {
            if c == value {
                return Some(d);
            }
            if (c - value).abs() < nearest.0 {
                nearest = ((c - value).abs(), d);
            }
            None
        };
        if self.all_allowed(s, t) {
            let w = self.saved[s];
            if m >= self.m_all(s, t).max(w) {
                let c =
                    (self.forward[s] + self.backward[s]) + self.table[self.row(s + 1, t) + m - w];
                if let Some(d) = consider(c, Decision::All) {
                    return d;
                }
            }
        }
        let inner = (s + 1..t).map(|j| self.none_term(j)).max().unwrap_or(0);
        let thr = self.m_none(s, t, inner);
        let mut f = 0.0;
        for next in s + 1..=t {
            f += self.forward_nograd[next - 1];
            let w = self.act[next - 1];
            if m >= thr.max(w) {
                let c = (f + self.table[self.row(next, t) + m - w])
                    + self.table[self.row(s, next - 1) + m];
                if let Some(d) = consider(c, Decision::Checkpoint { next }) {
                    return d;
                }
            }
        }
        nearest.1
    }

    /// Appends the ops of OptRec(s, t, m) and returns their peak in bytes,
    /// a^{s-1} excluded, δ^t included (the DP's own accounting, unrounded).
    fn read_out(&self, chain: &Chain, s: usize, t: usize, m: usize, ops: &mut Vec<Op>) -> u64 {
        let a = |l: usize| chain.output_bytes(l);
        let d = |l: usize| chain.gradient_bytes(l);
        let abar = |l: usize| chain.saved_bytes(l);
        let st = chain.stage(s);
        let backward_peak = chain.backward_bytes(s);
        match self.decide(s, t, m) {
            Decision::Leaf => {
                ops.push(Op::ForwardAll { stage: s });
                ops.push(Op::Backward { stage: s });
                (d(s) + abar(s) + st.forward_overhead()).max(backward_peak)
            }
            Decision::All => {
                ops.push(Op::ForwardAll { stage: s });
                let sub = self.read_out(chain, s + 1, t, m - self.saved[s], ops);
                ops.push(Op::Backward { stage: s });
                (d(t) + abar(s) + st.forward_overhead())
                    .max(abar(s) + sub)
                    .max(backward_peak)
            }
            Decision::Checkpoint { next } => {
                ops.push(Op::ForwardCheckpoint { stage: s });
                let mut peak = d(t) + a(s) + st.forward_overhead();
                for j in s + 1..next {
                    ops.push(Op::ForwardNone { stage: j });
                    peak = peak.max(d(t) + a(j - 1) + a(j) + chain.stage(j).forward_overhead());
                }
                let right = self.read_out(chain, next, t, m - self.act[next - 1], ops);
                let left = self.read_out(chain, s, next - 1, m, ops);
                peak.max(a(next - 1) + right).max(left)
            }
        }
    }
}

type Relax = fn(&mut [f64], &[f64], &[f64], f64);

/// best[m] = min(best[m], (f + a[m]) + b[m]), over equal-length slices.
fn relax_portable(best: &mut [f64], a: &[f64], b: &[f64], f: f64) {
    for ((v, &x), &y) in best.iter_mut().zip(a).zip(b) {
        let c = (f + x) + y;
        if c < *v {
            *v = c;
        }
    }
}

/// The same with explicit AVX2: auto-vectorized code turns the conditional
/// update into masked stores (vmaskmovpd), which are microcoded on AMD and
/// made the table 3× slower than plain loads, adds, a min and a store.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn relax_avx2(best: &mut [f64], a: &[f64], b: &[f64], f: f64) {
    use std::arch::x86_64::*;
    let n = best.len().min(a.len()).min(b.len());
    let chunks = n / 4;
    let fv = _mm256_set1_pd(f);
    let (pv, pa, pb) = (best.as_mut_ptr(), a.as_ptr(), b.as_ptr());
    for i in 0..chunks {
        let k = 4 * i;
        // SAFETY: k + 4 ≤ n, within all three slices.
        unsafe {
            let c = _mm256_add_pd(
                _mm256_add_pd(fv, _mm256_loadu_pd(pa.add(k))),
                _mm256_loadu_pd(pb.add(k)),
            );
            let v = _mm256_loadu_pd(pv.add(k));
            // MINPD(c, v) = c < v ? c : v, exactly the scalar rule.
            _mm256_storeu_pd(pv.add(k), _mm256_min_pd(c, v));
        }
    }
    relax_portable(
        &mut best[4 * chunks..n],
        &a[4 * chunks..n],
        &b[4 * chunks..n],
        f,
    );
}

#[cfg(target_arch = "x86_64")]
fn relax_avx2_safe(best: &mut [f64], a: &[f64], b: &[f64], f: f64) {
    // SAFETY: only selected by `relax_kernel` after detecting AVX2.
    unsafe { relax_avx2(best, a, b, f) }
}

type Lower = fn(&mut [f64], f64);

/// best[m] = min(best[m], c).
fn lower_portable(best: &mut [f64], c: f64) {
    for v in best {
        if c < *v {
            *v = c;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lower_avx2(best: &mut [f64], c: f64) {
    use std::arch::x86_64::*;
    let chunks = best.len() / 4;
    let cv = _mm256_set1_pd(c);
    let p = best.as_mut_ptr();
    for i in 0..chunks {
        // SAFETY: 4i + 4 ≤ len.
        unsafe {
            let v = _mm256_loadu_pd(p.add(4 * i));
            _mm256_storeu_pd(p.add(4 * i), _mm256_min_pd(cv, v));
        }
    }
    lower_portable(&mut best[4 * chunks..], c);
}

fn lower_kernel() -> Lower {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected.
            return |b, c| unsafe { lower_avx2(b, c) };
        }
    }
    lower_portable
}

/// The same with WebAssembly SIMD (two lanes), when built with `simd128`.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn relax_simd128(best: &mut [f64], a: &[f64], b: &[f64], f: f64) {
    use std::arch::wasm32::*;
    let n = best.len().min(a.len()).min(b.len());
    let pairs = n / 2;
    let fv = f64x2_splat(f);
    let (pv, pa, pb) = (best.as_mut_ptr(), a.as_ptr(), b.as_ptr());
    for i in 0..pairs {
        let k = 2 * i;
        // SAFETY: k + 2 ≤ n, within all three slices; v128 loads are unaligned.
        unsafe {
            let c = f64x2_add(
                f64x2_add(fv, v128_load(pa.add(k) as *const v128)),
                v128_load(pb.add(k) as *const v128),
            );
            let v = v128_load(pv.add(k) as *const v128);
            // pmin(v, c) = c < v ? c : v, exactly the scalar rule.
            v128_store(pv.add(k) as *mut v128, f64x2_pmin(v, c));
        }
    }
    relax_portable(
        &mut best[2 * pairs..n],
        &a[2 * pairs..n],
        &b[2 * pairs..n],
        f,
    );
}

/// The inner loop, compiled for the widest vectors this CPU has.
fn relax_kernel() -> Relax {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return relax_avx2_safe;
        }
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        return relax_simd128;
    }
    #[allow(unreachable_code)]
    relax_portable
}

/// M_low for persistent schedules: the smallest budget, in exact bytes, for
/// which C_BP(1, L, M − ω_a^0) is finite. O(L³), no discretization.
pub fn min_budget(chain: &Chain, variant: Variant) -> u64 {
    let n = chain.len();
    let a = |l: usize| chain.output_bytes(l);
    let d = |l: usize| chain.gradient_bytes(l);
    let abar = |l: usize| chain.saved_bytes(l);
    let of = |l: usize| chain.stage(l).forward_overhead();
    let m_all = |s: usize, t: usize| (d(t) + abar(s) + of(s)).max(chain.backward_bytes(s));
    // p[s][t]: min memory to process s..t, a^{s-1} excluded.
    let mut p = vec![vec![u64::MAX; n + 1]; n + 2];
    for s in (1..=n).rev() {
        let mut inner = 0u64;
        for t in s..=n {
            if s == t {
                p[s][t] = m_all(s, s);
                continue;
            }
            if t >= s + 2 {
                inner = inner.max(a(t - 2) + a(t - 1) + of(t - 1));
            }
            let mut best = u64::MAX;
            if variant == Variant::Rotor {
                best = m_all(s, t).max(abar(s).saturating_add(p[s + 1][t]));
            }
            let thr = (d(t) + a(s) + of(s)).max(d(t) + inner);
            for next in s + 1..=t {
                let need = thr
                    .max(a(next - 1).saturating_add(p[next][t]))
                    .max(p[s][next - 1]);
                best = best.min(need);
            }
            p[s][t] = best;
        }
    }
    a(0).saturating_add(p[1][n])
}
