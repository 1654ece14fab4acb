//! Rotor and revolve exact in bytes, for every budget at once.
//!
//! C_BP(s, t, m) is a step function of the memory m (bytes free besides
//! a^{s−1}): infinite below the least memory any schedule of s..t needs,
//! then piecewise constant. [`StepTable`] stores each cell by its
//! breakpoints, the budgets where the value changes, with the value from
//! there on. The recursion is the same as the grid table's
//! ([`PersistentTable`](super::PersistentTable)) with m in exact bytes:
//!
//! * a split at s′ sums two step functions, the right one shifted by the
//!   checkpoint a^{s′−1} it holds, over the bytes where m_∅ fits: a merge of
//!   two sorted lists;
//! * C_all shifts C_BP(s+1, t, ·) by ā^s;
//! * the minimum over the cases is their lower envelope, merged into the
//!   cell one candidate at a time.
//!
//! Each value is computed with the grid's float association ((f + right) +
//! left, u_f + u_b + sub) and min rule, so at every budget the value is the
//! grid table's on an exact lattice, bit for bit; the read-out tries the
//! candidates in the grid's order and keeps the first equal to the value,
//! so the schedule is the same too. Rotor's cells stop at P_all(s, t), from
//! where the F_all chain fits, as the grid's rows do: beyond it the value
//! is Σ u_f + u_b.
//!
//! **Complexity.** A cell's steps are the (memory, time) Pareto front of the
//! persistent schedules of s..t, which has no polynomial bound in general;
//! with P breakpoints a cell, building is O(L³ · P) time and O(L² · P)
//! memory, and a candidate is skipped, or cut short, from where the cell's
//! envelope is already at or below the candidate's least value. Reading out
//! a schedule is O(L²) look-ups of O(log P).
//!
//! **Fallback.** The build stops as soon as its breakpoints take more
//! memory than a limit (the grid table's at the requested slots), or are
//! projected to after a row (each cell yet to come counted at the average
//! of the cells of its length so far, or of the longest so far): the
//! caller then builds the grid and says so.

use super::read_out::Cells;
use super::sizes::{add, Sizes};
use super::{all_options, AllOption, PersistentPlan, Variant};
use crate::model::Chain;
use crate::solvers::api::{Progress, SolveError};
use serde::{Deserialize, Serialize};

/// Bytes a breakpoint takes (its budget and its value).
pub const BREAKPOINT_BYTES: usize = 16;

/// Bytes each cell takes besides its breakpoints (where they start).
pub const CELL_BYTES: usize = 8;

/// Breakpoint counts of a table, for reports and benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepStats {
    /// Breakpoints over all cells.
    pub total: usize,
    /// The most in one cell.
    pub largest: usize,
    /// Those of C_BP(1, L, ·): the distinct optima over every budget.
    pub top: usize,
}

/// A [`StepTable`] taken apart ([`StepTable::into_parts`]): rows of
/// unequal length, so each cell's count and then every breakpoint, without
/// padding. 16 bytes a breakpoint and 4 a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepParts {
    pub variant: Variant,
    pub stages: usize,
    /// Breakpoints of each cell, cells in fill order (s from L down, t up).
    pub len: Vec<u32>,
    /// Every cell's budgets (bytes free besides a^{s−1}), then values (s).
    pub mem: Vec<u64>,
    pub val: Vec<f64>,
}

/// C_BP(s, t, ·) for every 1 ≤ s ≤ t ≤ L, as breakpoints in exact bytes.
pub struct StepTable {
    n: usize,
    row_start: Vec<usize>,
    /// Cell r (= row_start[s] + t − s) is mem/val[start[r]..start[r] + len[r]].
    start: Vec<u32>,
    len: Vec<u32>,
    /// Breakpoints: from mem[i] bytes on (until the next), the value val[i].
    mem: Vec<u64>,
    val: Vec<f64>,
    sizes: Sizes,
    /// The menu's options of each F_all^s (k ≥ 1), in bytes.
    menu: Vec<Vec<AllOption>>,
}

impl StepTable {
    /// Builds the table, or returns None as soon as it would take more
    /// than `limit_bytes` (breakpoints and per-cell starts together).
    pub fn build(
        chain: &Chain,
        variant: Variant,
        limit_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<Option<StepTable>, SolveError> {
        let mut t = Self::empty(chain, variant);
        if t.fill(limit_bytes, progress)? {
            Ok(Some(t))
        } else {
            Ok(None)
        }
    }

    fn empty(chain: &Chain, variant: Variant) -> StepTable {
        let n = chain.len();
        let mut row_start = vec![0usize; n + 2];
        for s in 1..=n {
            row_start[s + 1] = row_start[s] + (n - s + 1);
        }
        StepTable {
            n,
            row_start,
            start: Vec::new(),
            len: Vec::new(),
            mem: Vec::new(),
            val: Vec::new(),
            sizes: Sizes::of(chain, variant),
            menu: all_options(chain, None),
        }
    }

    fn cell(&self, s: usize, t: usize) -> usize {
        self.row_start[s] + (t - s)
    }

    fn slices(&self, r: usize) -> (&[u64], &[f64]) {
        let (a, l) = (self.start[r] as usize, self.len[r] as usize);
        (&self.mem[a..a + l], &self.val[a..a + l])
    }

    /// Fills every cell, s descending and t ascending (both sub-cells of a
    /// candidate come before it). False when the limit was passed.
    fn fill(&mut self, limit_bytes: u64, progress: &mut Progress<'_>) -> Result<bool, SolveError> {
        let n = self.n;
        let rows = self.row_start[n + 1];
        let fixed = (rows * CELL_BYTES) as u64;
        if fixed > limit_bytes {
            return Ok(false);
        }
        let max_points =
            ((limit_bytes - fixed) / BREAKPOINT_BYTES as u64).min(u32::MAX as u64) as usize;
        self.start = vec![0; rows];
        self.len = vec![0; rows];
        // Rotor: P_all(s, t) and Σ u_f + u_b from there; every cell's least value.
        let mut sat = vec![u64::MAX; rows];
        let mut tail = vec![f64::INFINITY; rows];
        let mut least = vec![f64::INFINITY; rows];
        let mut env: Vec<(u64, f64)> = Vec::new();
        let mut out: Vec<(u64, f64)> = Vec::new();
        let mut done = 0usize;
        // Breakpoints and cells by length t − s + 1, for the projection.
        let mut by_len = vec![(0usize, 0usize); n + 1];
        for s in (1..=n).rev() {
            for t in s..=n {
                let r = self.cell(s, t);
                let fb = self.sizes.forward[s] + self.sizes.backward[s];
                if self.sizes.variant == Variant::Rotor {
                    if s == t {
                        sat[r] = self.m_all(s, s);
                        tail[r] = fb;
                    } else {
                        let below = self.cell(s + 1, t);
                        sat[r] = self
                            .m_all(s, t)
                            .max(add(self.sizes.saved_bytes[s], sat[below]));
                        tail[r] = fb + tail[below];
                    }
                }
                let hi = sat[r];
                env.clear();
                if s == t {
                    let lo = self.m_all(s, s);
                    if lo < hi {
                        env.push((lo, fb));
                    }
                    // The menu's options: a constant f from their own need.
                    for o in &self.menu[s] {
                        let f = self.sizes.forward[s] + o.backward;
                        let lo = self.m_all_with(s, o);
                        let one = (&[0u64][..], &[0.0][..], 0, 0.0);
                        relax::<false>(&mut env, &mut out, one, (&[], &[], 0.0), f, lo, hi);
                    }
                } else {
                    if self.all_allowed(s, t) {
                        let w = self.sizes.saved_bytes[s];
                        let lo = self.m_all(s, t).max(w);
                        let below = self.cell(s + 1, t);
                        let (am, av) = self.slices(below);
                        relax::<false>(
                            &mut env,
                            &mut out,
                            (am, av, w, least[below]),
                            (&[], &[], 0.0),
                            fb,
                            lo,
                            hi,
                        );
                        for o in &self.menu[s] {
                            let w = o.saved_bytes;
                            let lo = self.m_all_with(t, o).max(w);
                            relax::<false>(
                                &mut env,
                                &mut out,
                                (am, av, w, least[below]),
                                (&[], &[], 0.0),
                                self.sizes.forward[s] + o.backward,
                                lo,
                                hi,
                            );
                        }
                    }
                    let mut f = 0.0;
                    let mut inner = 0u64;
                    for next in s + 1..=t {
                        f += self.sizes.forward_nograd[next - 1];
                        if next >= s + 2 {
                            inner = inner.max(self.none_term(next - 1));
                        }
                        let w = self.sizes.act_bytes[next - 1];
                        let lo = self.m_none(s, t, inner).max(w);
                        if lo >= hi {
                            continue;
                        }
                        let right = self.cell(next, t);
                        let left = self.cell(s, next - 1);
                        let (am, av) = self.slices(right);
                        let (bm, bv) = self.slices(left);
                        relax::<true>(
                            &mut env,
                            &mut out,
                            (am, av, w, least[right]),
                            (bm, bv, least[left]),
                            f,
                            lo,
                            hi,
                        );
                    }
                }
                if self.sizes.variant == Variant::Rotor && hi < u64::MAX {
                    push(&mut env, hi, tail[r]);
                }
                while env.last().is_some_and(|&(_, v)| v == f64::INFINITY) {
                    env.pop();
                }
                if self.mem.len() + env.len() > max_points {
                    return Ok(false);
                }
                self.start[r] = self.mem.len() as u32;
                self.len[r] = env.len() as u32;
                by_len[t - s + 1].0 += env.len();
                by_len[t - s + 1].1 += 1;
                least[r] = env.iter().map(|&(_, v)| v).fold(f64::INFINITY, f64::min);
                self.mem.extend(env.iter().map(|&(m, _)| m));
                self.val.extend(env.iter().map(|&(_, v)| v));
            }
            done += n - s + 1;
            if !progress(done as f64 / rows as f64) {
                return Err(SolveError::Cancelled);
            }
            if projected(&by_len, s, n, self.mem.len()) > max_points as f64 {
                return Ok(false);
            }
        }
        self.mem.shrink_to_fit();
        self.val.shrink_to_fit();
        Ok(true)
    }

    /// C_BP(s, t, m): the value of the last breakpoint at most m.
    fn value(&self, s: usize, t: usize, m: u64) -> f64 {
        let (mem, val) = self.slices(self.cell(s, t));
        match mem.partition_point(|&x| x <= m) {
            0 => f64::INFINITY,
            i => val[i - 1],
        }
    }

    /// The least budget any schedule of the class meets (a^0 included):
    /// the first breakpoint of C_BP(1, L, ·); None when there is none.
    pub fn min_budget(&self) -> Option<u64> {
        let (mem, _) = self.slices(self.cell(1, self.n));
        mem.first().map(|&m| add(m, self.sizes.act_bytes[0]))
    }

    /// The DP's best time for `budget_bytes`, or None if no schedule meets it.
    pub fn best_seconds(&self, budget_bytes: u64) -> Option<f64> {
        let m = budget_bytes.checked_sub(self.sizes.act_bytes[0])?;
        let v = self.value(1, self.n, m);
        v.is_finite().then_some(v)
    }

    /// Algorithm 2 in bytes: the optimal persistent schedule at `budget_bytes`.
    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> Option<PersistentPlan> {
        let m = budget_bytes.checked_sub(self.sizes.act_bytes[0])?;
        let predicted_seconds = self.value(1, self.n, m);
        if !predicted_seconds.is_finite() {
            return None;
        }
        let mut ops = Vec::with_capacity(4 * self.n);
        let peak = super::read_out::read_out(self, chain, 1, self.n, m, &mut ops);
        Some(PersistentPlan {
            ops,
            predicted_seconds,
            predicted_peak_bytes: chain.output_bytes(0) + peak,
        })
    }

    /// Takes the table apart to move it elsewhere (a Web Worker builds it,
    /// the page reads schedules out of it): its breakpoints and how many
    /// each cell has, cells in the order they were filled (s from L down
    /// to 1, t from s up), which is the order of the breakpoints. The
    /// chain's sizes and times do not travel: [`from_parts`](Self::from_parts)
    /// takes them from the chain again.
    pub fn into_parts(self) -> StepParts {
        let mut len = Vec::with_capacity(self.len.len());
        for s in (1..=self.n).rev() {
            for t in s..=self.n {
                len.push(self.len[self.cell(s, t)]);
            }
        }
        StepParts {
            variant: self.sizes.variant,
            stages: self.n,
            len,
            mem: self.mem,
            val: self.val,
        }
    }

    /// Rebuilds the table of [`into_parts`](Self::into_parts) for the same
    /// chain: an error when the parts cannot be that chain's table (another
    /// number of stages or cells, lengths that do not add up to the
    /// breakpoints, a cell whose budgets do not increase).
    pub fn from_parts(chain: &Chain, parts: StepParts) -> Result<StepTable, SolveError> {
        let bad = |why: String| Err(SolveError::BadOption(format!("breakpoint table: {why}")));
        let mut t = Self::empty(chain, parts.variant);
        let cells = t.row_start[t.n + 1];
        if parts.stages != t.n || parts.len.len() != cells {
            return bad(format!(
                "{} cells of {} stages do not fit a {}-stage chain ({cells} cells)",
                parts.len.len(),
                parts.stages,
                t.n
            ));
        }
        let points: u64 = parts.len.iter().map(|&l| l as u64).sum();
        if points != parts.mem.len() as u64 || points != parts.val.len() as u64 {
            return bad(format!(
                "the cells count {points} breakpoints, {} budgets and {} values came",
                parts.mem.len(),
                parts.val.len()
            ));
        }
        t.start = vec![0; cells];
        t.len = vec![0; cells];
        let mut at = 0usize;
        let mut lens = parts.len.iter();
        for s in (1..=t.n).rev() {
            for u in s..=t.n {
                let r = t.cell(s, u);
                let l = *lens.next().expect("counted above") as usize;
                if parts.mem[at..at + l].windows(2).any(|w| w[0] >= w[1]) {
                    return bad(format!("cell ({s}, {u}): its budgets do not increase"));
                }
                t.start[r] = at as u32;
                t.len[r] = l as u32;
                at += l;
            }
        }
        t.mem = parts.mem;
        t.val = parts.val;
        Ok(t)
    }

    /// The breakpoints: in all, in the largest cell, in C_BP(1, L, ·).
    pub fn stats(&self) -> StepStats {
        StepStats {
            total: self.mem.len(),
            largest: self.len.iter().copied().max().unwrap_or(0) as usize,
            top: self.len[self.cell(1, self.n)] as usize,
        }
    }

    /// Memory the table holds.
    pub fn memory_bytes(&self) -> usize {
        self.mem.len() * BREAKPOINT_BYTES + self.start.len() * CELL_BYTES
    }

    /// Every budget at which C_BP(1, L, ·) changes (a^0 included) and the
    /// DP's time from there on: the whole trade-off curve of the class.
    pub fn curve(&self) -> Vec<(u64, f64)> {
        let (mem, val) = self.slices(self.cell(1, self.n));
        mem.iter()
            .zip(val)
            .map(|(&m, &v)| (add(m, self.sizes.act_bytes[0]), v))
            .collect()
    }
}

impl Cells for StepTable {
    type Memory = u64;
    fn value(&self, s: usize, t: usize, m: u64) -> f64 {
        StepTable::value(self, s, t, m)
    }
    fn sizes(&self) -> &Sizes {
        &self.sizes
    }
    fn menu(&self, s: usize) -> &[AllOption] {
        &self.menu[s]
    }
    fn on_axis(&self, bytes: u64) -> u64 {
        bytes
    }
    // The table's own copies of the chain's sizes (`build`), as the fill
    // read them.
    fn held_by_forward_all(&self, s: usize, k: usize) -> u64 {
        match k {
            0 => self.sizes.saved_bytes[s],
            _ => self.menu[s][k - 1].saved_bytes,
        }
    }
    fn held_by_checkpoint(&self, next: usize) -> u64 {
        self.sizes.act_bytes[next - 1]
    }
}

/// The breakpoints the whole table will have, projected when rows s..L are
/// done: each cell of rows 1..s−1 is taken to have the average of the
/// cells of its length done so far, a cell longer than any done the
/// average of the longest (the rows' cells grow with their length: this
/// stops a table bound to pass its limit after its short cells, at a small
/// part of its cost).
fn projected(by_len: &[(usize, usize)], s: usize, n: usize, so_far: usize) -> f64 {
    let known = n - s + 1;
    let avg = |k: usize| {
        let (points, cells) = by_len[k.min(known)];
        points as f64 / cells.max(1) as f64
    };
    // Rows 1..s−1 hold min(s − 1, n − k + 1) cells of length k.
    so_far as f64
        + (1..=n)
            .map(|k| avg(k) * (s - 1).min(n - k + 1) as f64)
            .sum::<f64>()
}

/// Appends breakpoint (m, v) to a step function being written left to
/// right: a value equal to the last one adds nothing, and a second value
/// at the same m replaces the first.
#[inline]
fn push(out: &mut Vec<(u64, f64)>, m: u64, v: f64) {
    if let Some(last) = out.last_mut() {
        if last.0 == m {
            last.1 = v;
            let k = out.len();
            if k >= 2 && out[k - 2].1 == v {
                out.pop();
            }
            return;
        }
        if last.1 == v {
            return;
        }
    } else if v == f64::INFINITY {
        return;
    }
    out.push((m, v));
}

/// env ← min(env, candidate) on [lo, hi), the candidate being
/// `(f + A(m − w)) + B(m)` (TWO) or `f + A(m − w)` (one sub-cell), each a
/// step function given by its breakpoints and its least value. The part of
/// [lo, hi) from which env is already at or below the candidate's least
/// value is skipped; the rest is merged into `out` and spliced into env.
#[inline]
fn relax<const TWO: bool>(
    env: &mut Vec<(u64, f64)>,
    out: &mut Vec<(u64, f64)>,
    (am, av, w, a_least): (&[u64], &[f64], u64, f64),
    (bm, bv, b_least): (&[u64], &[f64], f64),
    f: f64,
    lo: u64,
    hi: u64,
) {
    let (Some(&a0), true) = (am.first(), !TWO || !bm.is_empty()) else {
        return;
    };
    let mut m0 = lo.max(add(a0, w));
    if TWO {
        m0 = m0.max(bm[0]);
    }
    // Float addition is monotone: no candidate value is below this one.
    let least = if TWO {
        (f + a_least) + b_least
    } else {
        f + a_least
    };
    // From `cut` on, env never exceeds `least`.
    let mut k = env.len();
    while k > 0 && env[k - 1].1 <= least {
        k -= 1;
    }
    let cut = if k == env.len() { u64::MAX } else { env[k].0 };
    let hi = hi.min(cut);
    if m0 >= hi {
        return;
    }
    out.clear();
    // env before m0 stays; an entry at m0 is rewritten.
    let mut ie = env.partition_point(|&(m, _)| m <= m0);
    let mut ve = if ie > 0 { env[ie - 1].1 } else { f64::INFINITY };
    let keep = if ie > 0 && env[ie - 1].0 == m0 {
        ie - 1
    } else {
        ie
    };
    let mut last = if keep > 0 {
        env[keep - 1].1
    } else {
        f64::INFINITY
    };
    let mut put = |out: &mut Vec<(u64, f64)>, m: u64, v: f64| {
        if v != last {
            out.push((m, v));
            last = v;
        }
    };
    let mut ia = am.partition_point(|&x| add(x, w) <= m0);
    let mut va = av[ia - 1];
    let (mut ib, mut vb) = if TWO {
        let i = bm.partition_point(|&x| x <= m0);
        (i, bv[i - 1])
    } else {
        (0, 0.0)
    };
    let mut m = m0;
    loop {
        let c = if TWO { (f + va) + vb } else { f + va };
        put(out, m, if c < ve { c } else { ve });
        let ne = env.get(ie).map_or(u64::MAX, |&(x, _)| x);
        let na = am.get(ia).map_or(u64::MAX, |&x| add(x, w));
        let nb = if TWO {
            bm.get(ib).copied().unwrap_or(u64::MAX)
        } else {
            u64::MAX
        };
        let next = ne.min(na).min(nb);
        if next >= hi {
            break;
        }
        m = next;
        if ne == next {
            ve = env[ie].1;
            ie += 1;
        }
        if na == next {
            va = av[ia];
            ia += 1;
        }
        if TWO && nb == next {
            vb = bv[ib];
            ib += 1;
        }
    }
    if hi < u64::MAX {
        while ie < env.len() && env[ie].0 <= hi {
            ve = env[ie].1;
            ie += 1;
        }
        put(out, hi, ve);
    } else {
        ie = env.len();
    }
    env.splice(keep..ie, out.drain(..));
}
