//! pofo's two inner loops, where most of its time goes: one split of C_Δ
//! for every cell Δ of a row (B.3's Case 2, [`Loops::try_split`]), and
//! one option of OC's Case 2 (input kept or sent) at one split for every
//! cell Δ_B of a row ([`Loops::try_option`]).
//!
//! Kept apart from the recursion (as rotor keeps its kernels apart) because
//! each has a vector version: per lane the same operations in the same
//! order, the same comparisons, and a select, so every value and choice is
//! the same to the bit as the portable loop's (the tests here compare them
//! on random rows; `super::tests` compares the tables with the reference,
//! filled with either). The vector version is picked once, at run time,
//! where the CPU has AVX2 ([`Kernel::detect`]); wasm and other CPUs run
//! the portable loops. The recursion is generic over [`Loops`] and
//! compiled once per implementation, the AVX2 copy with AVX2 enabled, so
//! the loops inline into it: most rows are short (a few cells), and a
//! call per row cost as much as the row.
//!
//! OC's sub-problem values are read through a column per cell. Four
//! columns within four cells of each other (most: plateaus and ramps) are
//! one load and a permutation ([`quad`]); others, four scalar loads (a
//! gather instruction was slower on this project's AMD machine).

/// One split's candidates of one row of C_Δ(i, j, m, ·) (B.3's Case 2,
/// `backward_checkpoint`): what every cell Δ shares.
pub(super) struct SplitTerms<'a> {
    /// Σ_{i..=last} u_f∅.
    pub f: f64,
    /// f + the least of the right sub-row: (lb + left) bounds a candidate.
    pub lb: f64,
    /// C_Δ(i, j)'s cut.
    pub cut: f64,
    /// β, slots per second (0: no link).
    pub beta: f64,
    /// Lemma 1's reach − β f, and m, as floats.
    pub k: f64,
    pub m: f64,
    /// C_Δ(i, last, m, ·), the left sub-row (one per cell).
    pub lefts: &'a [f64],
    /// C_Δ(last + 1, j, m − a^last, ·), the right sub-row: a Δ2 past it
    /// is no candidate.
    pub rights: &'a [f64],
}

/// Case 2's candidates of one row at one split share: Σ u_f∅ (f), ε_F,
/// f + rest_{last+1}, the square's cut, and C_Δ per Δ_B.
pub(super) struct Terms<'a> {
    pub f: f64,
    pub ef: f64,
    pub f_rest: f64,
    pub cut: f64,
    pub eb: &'a [f64],
}

/// The row of cells a loop improves: each cell's value and the choice that
/// made it, and the choice `code` a candidate writes where it wins.
pub(super) struct Row<'a> {
    pub vals: &'a mut [f64],
    pub chs: &'a mut [u16],
    pub code: u16,
}

/// Column indices into the sub-square's rows, each checked once (when the
/// split's columns are computed) to be below `side`, so the kernels index
/// rows of at least `side` cells without a check per cell; and, for the
/// vector loop, each four columns as one load ([`quad`]).
// Only the vector loops read `side` and `quads`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) struct Columns<'a> {
    index: &'a [usize],
    side: usize,
    /// One [`quad`] per four columns ([`Avx2`]'s; empty for the portable
    /// loops, which read columns one by one).
    quads: &'a [u32],
}

impl<'a> Columns<'a> {
    /// Panics where a column is past `side`: the recursion never makes one
    /// (a column is at most Δ_B, + I when the input is sent, below the side
    /// N − A2 + 1 of the square after the step).
    pub fn new(index: &'a [usize], side: usize) -> Columns<'a> {
        let most = index.iter().fold(0, |m, &c| m.max(c));
        assert!(
            index.is_empty() || most < side,
            "pofo: column {most} past a sub-square of side {side}"
        );
        Columns {
            index,
            side,
            quads: &[],
        }
    }
}

/// A quad of four columns whose cells cannot be read in one load.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const SCATTERED: u32 = u32::MAX;

/// Four columns c_0..c_3 of a row as one unaligned load of the four cells
/// from `base` and a permutation of them: `base << 8 | code`, where the
/// code's bits 2j, 2j + 1 hold c_j − base; [`SCATTERED`] where the columns
/// span more than four cells or the row has fewer than four.
///
/// Why: a column is ⌈Δ_B − β C_Δ⌉ (what is left to prefetch), so along a
/// row the columns are mostly a plateau (everything prefetched: 0) or a
/// ramp (C_Δ flat: Δ_B less a constant), four cells at most apart; at
/// L = 100, N = 50, 78 % of the quads are one or the other and most of the
/// rest span under four cells. Four scalar loads were the vector loop's
/// hottest instructions. `base` stays within the row (at most side − 4),
/// so the load never reads past it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn quad(cols: [usize; 4], side: usize) -> u32 {
    let lo = cols.iter().fold(usize::MAX, |m, &c| m.min(c));
    let hi = cols.iter().fold(0, |m, &c| m.max(c));
    if side < 4 || hi - lo > 3 {
        return SCATTERED;
    }
    let base = lo.min(side - 4);
    let code = cols
        .iter()
        .enumerate()
        .fold(0, |code, (j, &c)| code | ((c - base) as u32) << (2 * j));
    (base as u32) << 8 | code
}

/// For each quad code, the 32-bit lane indices that move cell c_j − base
/// (two 32-bit halves of an f64) of a four-cell load into lane j
/// (`_mm256_permutevar8x32_ps`, which moves bits unchanged).
#[cfg(target_arch = "x86_64")]
#[repr(align(32))]
struct Permutations([[i32; 8]; 256]);

#[cfg(target_arch = "x86_64")]
static PERMUTATIONS: Permutations = {
    let mut t = [[0i32; 8]; 256];
    let mut code = 0;
    while code < 256 {
        let mut j = 0;
        while j < 4 {
            let cell = ((code >> (2 * j)) & 3) as i32;
            t[code][2 * j] = 2 * cell;
            t[code][2 * j + 1] = 2 * cell + 1;
            j += 1;
        }
        code += 1;
    }
    Permutations(t)
};

/// Both inner loops, in one implementation: [`Portable`] everywhere,
/// [`Avx2`] where the CPU has it; [`Kernel`] is the one this process
/// picked. The recursion is generic over it, so that its AVX2 copy is
/// compiled with AVX2 and the loops inline into it (a call per row cost
/// about as many instructions as the row's cells: most rows are short).
pub(super) trait Loops: Copy {
    /// `index`'s columns checked against `side` ([`Columns::new`]), with
    /// their quads in `quads` (at least `index.len() / 4` of them) where
    /// these loops read them.
    fn columns<'a>(self, index: &'a [usize], side: usize, quads: &'a mut [u32]) -> Columns<'a>;

    /// The candidate ((f + sub) + C_Δ) + ε_F of every cell Δ_B of `vals`,
    /// with sub = `row2[cols[Δ_B]]`, taken where the bound (f +
    /// rest_{last+1}) + C_Δ + ε_F is within the cut and the candidate
    /// strictly better — the reference's arithmetic and tie-break, without
    /// a branch.
    ///
    /// The reference also skips a cell once rest_f, or that bound, passes
    /// the cell's best with its 1e-9 margin: both are exact lower bounds of
    /// the candidate (F and B run once at least), so a skipped candidate is
    /// never strictly better, and trying it anyway changes no value or
    /// choice — and is cheaper than the tests. The cut's test stays: a C_Δ
    /// above its own cut may hold a value *above* its optimum, and a larger
    /// C_Δ leaves less to prefetch, so the state after it may be cheaper
    /// enough to make the candidate *lower* than the reference's (dropping
    /// this test fails the entry-by-entry test at once).
    ///
    /// Returns the row's largest value after it (−∞ for an empty row), by
    /// plain comparisons: the row holds no NaN (∞ or sums).
    fn try_option(self, terms: &Terms<'_>, row2: &[f64], cols: &Columns<'_>, row: Row<'_>) -> f64;

    /// One split of C_Δ(i, j, m, ·) for every cell Δ of `vals`: the
    /// candidate ((f + right) + left) + ε, with left = C_Δ(i, last, m, Δ),
    /// Δ2 = ⌈Δ − β left⌉ the prefetch left over, right = C_Δ(last + 1, j,
    /// m − a^last, Δ2) and ε Lemma 1's idle time for ((k + Δ3) − m), Δ3 =
    /// max(Δ2 − β right, 0) — `backward_checkpoint`'s arithmetic, in its
    /// order — taken where strictly better; skipped where its bound lb +
    /// left is not below the cell or passes the cut, or Δ2 is past the
    /// right sub-row (the reference's tests, kept: they decide which
    /// candidates exist). Returns the row's largest value after it.
    fn try_split(self, t: &SplitTerms<'_>, row: Row<'_>) -> f64;
}

/// The loops one cell at a time: wasm, and CPUs without AVX2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Portable;

impl Loops for Portable {
    #[inline(always)]
    fn columns<'a>(self, index: &'a [usize], side: usize, _quads: &'a mut [u32]) -> Columns<'a> {
        Columns::new(index, side)
    }

    #[inline(always)]
    fn try_option(self, terms: &Terms<'_>, row2: &[f64], cols: &Columns<'_>, row: Row<'_>) -> f64 {
        try_option_portable(terms, row2, cols.index, row)
    }

    #[inline(always)]
    fn try_split(self, t: &SplitTerms<'_>, row: Row<'_>) -> f64 {
        try_split_cells(t, 0, row)
    }
}

/// The loops four cells at a time. Only [`Kernel::detect`] makes one, on a
/// CPU with AVX2: holding it is the proof the `unsafe` calls below need.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Loops for Avx2 {
    #[inline(always)]
    fn columns<'a>(self, index: &'a [usize], side: usize, quads: &'a mut [u32]) -> Columns<'a> {
        let mut columns = Columns::new(index, side);
        let quads = &mut quads[..index.len() / 4];
        for (q, c) in quads.iter_mut().zip(index.chunks_exact(4)) {
            *q = quad([c[0], c[1], c[2], c[3]], side);
        }
        columns.quads = quads;
        columns
    }

    #[inline(always)]
    fn try_option(self, terms: &Terms<'_>, row2: &[f64], cols: &Columns<'_>, row: Row<'_>) -> f64 {
        let (n, chs) = (row.vals.len(), &row.chs);
        assert!(
            row2.len() >= cols.side
                && cols.index.len() >= n
                && cols.quads.len() >= n / 4
                && terms.eb.len() >= n
                && chs.len() >= n
        );
        // SAFETY: `Avx2` is only made by `detect` on a CPU with AVX2; the
        // lengths were checked above, every column is below `cols.side` ≤
        // row2.len() (`Columns::new`), and so is every quad's base + 3
        // (`quad`).
        unsafe { try_option_avx2(terms, row2, cols, row) }
    }

    #[inline(always)]
    fn try_split(self, t: &SplitTerms<'_>, row: Row<'_>) -> f64 {
        let n = row.vals.len();
        assert!(t.lefts.len() >= n && row.chs.len() >= n && !t.rights.is_empty());
        // SAFETY: `Avx2` is only made by `detect` on a CPU with AVX2; the
        // lengths were checked above, and every Δ2 read is clamped into
        // `rights`.
        unsafe { try_split_avx2(t, row) }
    }
}

/// The loops this process runs: chosen once per build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
}

impl Kernel {
    /// AVX2 where the CPU has it, else the portable loops.
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2(Avx2(()));
            }
        }
        Kernel::Portable
    }
}

/// The loop, one cell at a time (the reference's arithmetic, in its order).
fn try_option_portable(terms: &Terms<'_>, row2: &[f64], cols: &[usize], row: Row<'_>) -> f64 {
    let Row { vals, chs, code } = row;
    let Terms {
        f,
        ef,
        f_rest,
        cut,
        eb,
    } = *terms;
    let mut most = f64::NEG_INFINITY;
    for db in 0..vals.len() {
        let v = ((f + row2[cols[db]]) + eb[db]) + ef;
        let bound = (f_rest + eb[db]) + ef;
        let take = (bound <= cut) & (v < vals[db]);
        vals[db] = if take { v } else { vals[db] };
        chs[db] = if take { code } else { chs[db] };
        if vals[db] > most {
            most = vals[db];
        }
    }
    most
}

/// For each 4-bit lane mask, 16 bits set per taken lane: the choices of four
/// cells (four u16) updated as one u64.
#[cfg(target_arch = "x86_64")]
const LANE_BITS: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut m = 0;
    while m < 16 {
        let mut lane = 0;
        while lane < 4 {
            if m & (1 << lane) != 0 {
                t[m] |= 0xFFFF << (16 * lane);
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// Four cells at a time: the sub-problem's four values loaded one by one,
/// the same additions in the same order per lane; a candidate past the cut
/// made +∞, then MINPD for the values and the take mask applied to the
/// choices through [`LANE_BITS`]. No gather instruction: on this project's
/// AMD machine `vgatherqpd` made the loop slower than the scalar one, four
/// loads are not.
///
/// # Safety
/// The CPU has AVX2; `columns.index`, `eb` and `chs` hold at least
/// `vals.len()` cells and `columns.quads` a quad per whole four of them;
/// every column, and every quad's base + 3, is an index into `row2`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn try_option_avx2(
    terms: &Terms<'_>,
    row2: &[f64],
    columns: &Columns<'_>,
    row: Row<'_>,
) -> f64 {
    use std::arch::x86_64::*;
    let Row { vals, chs, code } = row;
    let n = vals.len();
    let quads = n / 4;
    let eb = terms.eb;
    let cols = columns.index;
    // SAFETY: AVX2 (the caller's contract).
    let lanes = unsafe { OptionLanes::splat(terms) };
    let mut most = _mm256_set1_pd(f64::NEG_INFINITY);
    let codes = u64::from(code) * 0x0001_0001_0001_0001;
    let (pq, pr, pc, pe, pv, ph) = (
        columns.quads.as_ptr(),
        row2.as_ptr(),
        cols.as_ptr(),
        eb.as_ptr(),
        vals.as_mut_ptr(),
        chs.as_mut_ptr(),
    );
    for q in 0..quads {
        let k = 4 * q;
        // SAFETY: k + 4 ≤ n, within cols, eb, vals and chs; each column
        // indexes row2 (the caller's contract).
        unsafe {
            let four = *pq.add(q);
            let sub = if four != SCATTERED {
                let cells = _mm256_loadu_ps(pr.add((four >> 8) as usize) as *const f32);
                let perm = _mm256_load_si256(
                    PERMUTATIONS.0[(four & 0xff) as usize].as_ptr() as *const __m256i
                );
                _mm256_castps_pd(_mm256_permutevar8x32_ps(cells, perm))
            } else {
                _mm256_set_pd(
                    *pr.add(*pc.add(k + 3)),
                    *pr.add(*pc.add(k + 2)),
                    *pr.add(*pc.add(k + 1)),
                    *pr.add(*pc.add(k)),
                )
            };
            let v = lanes.candidates(sub, _mm256_loadu_pd(pe.add(k)));
            let cur = _mm256_loadu_pd(pv.add(k));
            most = take_four(v, cur, codes, pv.add(k), ph.add(k), most);
        }
    }
    // The last one to three cells as a quad of their own, padded with
    // lanes that cannot take (sub = +∞, so v = +∞) and do not count in
    // the row's largest value (cur = −∞), written back lane by lane.
    let k = 4 * quads;
    let rest = n - k;
    if rest > 0 {
        let (mut sub, mut e, mut cur) = ([f64::INFINITY; 4], [0.0; 4], [f64::NEG_INFINITY; 4]);
        for j in 0..rest {
            sub[j] = row2[cols[k + j]];
            e[j] = eb[k + j];
            cur[j] = vals[k + j];
        }
        // SAFETY: AVX2 (the caller's contract); loads of local arrays.
        unsafe {
            let (sub, e, cur) = (
                _mm256_loadu_pd(sub.as_ptr()),
                _mm256_loadu_pd(e.as_ptr()),
                _mm256_loadu_pd(cur.as_ptr()),
            );
            let v = lanes.candidates(sub, e);
            let taken = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(v, cur));
            if taken != 0 {
                let mut lanes = [0.0; 4];
                _mm256_storeu_pd(lanes.as_mut_ptr(), v);
                for j in 0..rest {
                    if taken & (1 << j) != 0 {
                        vals[k + j] = lanes[j];
                        chs[k + j] = code;
                    }
                }
            }
            most = _mm256_max_pd(_mm256_min_pd(v, cur), most);
        }
    }
    // SAFETY: AVX2, as this function.
    unsafe { largest_of(most, f64::NEG_INFINITY) }
}

/// A row's terms of Case 2 in every lane: the candidate arithmetic, once
/// for the vector loop's whole quads and its last partial one.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct OptionLanes {
    f: std::arch::x86_64::__m256d,
    ef: std::arch::x86_64::__m256d,
    f_rest: std::arch::x86_64::__m256d,
    cut: std::arch::x86_64::__m256d,
}

#[cfg(target_arch = "x86_64")]
impl OptionLanes {
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    unsafe fn splat(terms: &Terms<'_>) -> OptionLanes {
        use std::arch::x86_64::_mm256_set1_pd;
        OptionLanes {
            f: _mm256_set1_pd(terms.f),
            ef: _mm256_set1_pd(terms.ef),
            f_rest: _mm256_set1_pd(terms.f_rest),
            cut: _mm256_set1_pd(terms.cut),
        }
    }

    /// Four candidates ((f + sub) + C_Δ) + ε_F, in the portable loop's
    /// order; one whose bound (f + rest) + C_Δ + ε_F passes the cut becomes
    /// +∞, which never takes.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    unsafe fn candidates(
        self,
        sub: std::arch::x86_64::__m256d,
        eb: std::arch::x86_64::__m256d,
    ) -> std::arch::x86_64::__m256d {
        use std::arch::x86_64::*;
        let v = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(self.f, sub), eb), self.ef);
        let bound = _mm256_add_pd(_mm256_add_pd(self.f_rest, eb), self.ef);
        let inf = _mm256_set1_pd(f64::INFINITY);
        _mm256_blendv_pd(inf, v, _mm256_cmp_pd::<_CMP_LE_OQ>(bound, self.cut))
    }
}

/// Four cells' update: where the candidate `v` is strictly below the cell
/// `cur`, the cell takes it and its choice becomes `codes`' (one code per
/// u16 lane); returns `most` raised to the new values.
///
/// # Safety
/// The CPU has AVX2; `val` and `ch` point to four cells each.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn take_four(
    v: std::arch::x86_64::__m256d,
    cur: std::arch::x86_64::__m256d,
    codes: u64,
    val: *mut f64,
    ch: *mut u16,
    most: std::arch::x86_64::__m256d,
) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    let take = _mm256_cmp_pd::<_CMP_LT_OQ>(v, cur);
    // MINPD(v, cur) = v < cur ? v : cur, the scalar rule; a blend here
    // would be compiled to a masked store (vmaskmovpd), which is microcoded
    // on AMD and slower than the scalar loop.
    let new = _mm256_min_pd(v, cur);
    let taken = _mm256_movemask_pd(take);
    if taken != 0 {
        let lanes = LANE_BITS[taken as usize];
        let ch = ch as *mut u64;
        // SAFETY: four cells each (the caller's contract), unaligned.
        unsafe {
            _mm256_storeu_pd(val, new);
            ch.write_unaligned((ch.read_unaligned() & !lanes) | (codes & lanes));
        }
    }
    // MAXPD(new, most) = new > most ? new : most: the scalar fold.
    _mm256_max_pd(new, most)
}

/// The largest of four lanes and `tail` (no NaN: plain comparisons).
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn largest_of(most: std::arch::x86_64::__m256d, tail: f64) -> f64 {
    let mut lanes = [0.0; 4];
    // SAFETY: an unaligned store of four lanes into four f64.
    unsafe { std::arch::x86_64::_mm256_storeu_pd(lanes.as_mut_ptr(), most) };
    lanes
        .into_iter()
        .fold(tail, |m, x| if x > m { x } else { m })
}

/// Asks the CPU to bring `cells` into its cache (a hint: nothing where
/// the target has no such instruction).
#[inline(always)]
pub(super) fn prefetch(cells: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for line in cells.chunks(8) {
            // SAFETY: a prefetch never faults, and the address is in `cells`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr() as *const i8) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = cells;
}

/// Lemma 1: the idle time that lets a link of β slots per second make up
/// `excess` slots (`Grid::idle`).
#[inline(always)]
pub(super) fn idle(excess: f64, beta: f64) -> f64 {
    if excess <= 0.0 {
        0.0
    } else if beta > 0.0 {
        excess / beta
    } else {
        f64::INFINITY
    }
}

/// A Δ left over, rounded up to slots: `(x − 1e-9).ceil() as usize` above
/// 1e-9, else 0 (`f64::ceil` is a library call on x86-64 without SSE4.1;
/// truncating and correcting gives the same integer for every x here,
/// including NaN, which both map to 0). Every x is a count of slots less
/// what the link moved (at most N + an input ≤ 2 · 65533, [`validate`](super::validate)),
/// so it truncates through u32, which x86-64 converts in one instruction
/// where u64 needs a branch for values past 2⁶³.
#[inline(always)]
pub(super) fn leftover(x: f64) -> usize {
    if x <= 1e-9 {
        0
    } else {
        let y = x - 1e-9;
        let t = y as u32;
        (t + ((t as f64) < y) as u32) as usize
    }
}

/// C_Δ's split, one cell at a time (the reference's arithmetic and tests),
/// for the cells Δ ≥ `from`; returns their largest value.
fn try_split_cells(t: &SplitTerms<'_>, from: usize, row: Row<'_>) -> f64 {
    let Row { vals, chs, code } = row;
    let rdm = t.rights.len() - 1;
    let mut most = f64::NEG_INFINITY;
    for delta in from..vals.len() {
        let left = t.lefts[delta];
        let mut cur = vals[delta];
        let cell_lb = t.lb + left;
        if cell_lb < cur && cell_lb <= t.cut {
            let d2 = leftover(delta as f64 - left * t.beta);
            if d2 <= rdm {
                // An infinite left or right makes v infinite.
                let right = t.rights[d2];
                let d3 = (d2 as f64 - right * t.beta).max(0.0);
                let v = ((t.f + right) + left) + idle(t.k + d3 - t.m, t.beta);
                if v < cur {
                    cur = v;
                    vals[delta] = v;
                    chs[delta] = code;
                }
            }
        }
        // No NaN here: one comparison (see `largest`).
        if cur > most {
            most = cur;
        }
    }
    most
}

/// C_Δ's split four cells at a time: every lane computes its candidate
/// (the same operations in the same order as the scalar loop) and the
/// reference's tests become a mask; a lane whose tests fail becomes +∞.
/// ⌈x − 1e-9⌉ (`leftover`) is a truncation to i32 and a correction, as the
/// scalar one through u32 (every x here is below 2³¹, see `leftover`); a
/// lane whose x is not above 1e-9 (NaN included) gets 0.
///
/// # Safety
/// The CPU has AVX2; `lefts` and `chs` hold at least `vals.len()` cells and
/// `rights` at least one.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn try_split_avx2(t: &SplitTerms<'_>, row: Row<'_>) -> f64 {
    let Row { vals, chs, code } = row;
    use std::arch::x86_64::*;
    let n = vals.len();
    let quads = n / 4;
    let rdm = t.rights.len() - 1;
    let splat = |x: f64| _mm256_set1_pd(x);
    let (fv, lbv, cutv, betav, kv, mv) = (
        splat(t.f),
        splat(t.lb),
        splat(t.cut),
        splat(t.beta),
        splat(t.k),
        splat(t.m),
    );
    let (zero, one, inf, tiny) = (splat(0.0), splat(1.0), splat(f64::INFINITY), splat(1e-9));
    let rdmv = splat(rdm as f64);
    let mut deltas = _mm256_set_pd(3.0, 2.0, 1.0, 0.0);
    let four = splat(4.0);
    let mut most = splat(f64::NEG_INFINITY);
    let codes = u64::from(code) * 0x0001_0001_0001_0001;
    let (pl, pr, pv, ph) = (
        t.lefts.as_ptr(),
        t.rights.as_ptr(),
        vals.as_mut_ptr(),
        chs.as_mut_ptr(),
    );
    for q in 0..quads {
        let k = 4 * q;
        // SAFETY: k + 4 ≤ n, within lefts, vals and chs; every index into
        // rights is clamped to rdm.
        unsafe {
            let left = _mm256_loadu_pd(pl.add(k));
            let cur = _mm256_loadu_pd(pv.add(k));
            let cell_lb = _mm256_add_pd(lbv, left);
            let mut ok = _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_LT_OQ>(cell_lb, cur),
                _mm256_cmp_pd::<_CMP_LE_OQ>(cell_lb, cutv),
            );
            // Most cells of C_Δ are already at or below their bound: four
            // of them at once cost one test.
            if _mm256_movemask_pd(ok) == 0 {
                most = _mm256_max_pd(cur, most);
                deltas = _mm256_add_pd(deltas, four);
                continue;
            }
            // Δ2 = leftover(Δ − left β).
            let x = _mm256_sub_pd(deltas, _mm256_mul_pd(left, betav));
            let y = _mm256_sub_pd(x, tiny);
            let tr = _mm256_cvtepi32_pd(_mm256_cvttpd_epi32(y));
            let up = _mm256_blendv_pd(
                tr,
                _mm256_add_pd(tr, one),
                _mm256_cmp_pd::<_CMP_LT_OQ>(tr, y),
            );
            let d2 = _mm256_blendv_pd(zero, up, _mm256_cmp_pd::<_CMP_GT_OQ>(x, tiny));
            ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(d2, rdmv));
            let mut at = [0i32; 4];
            _mm_storeu_si128(
                at.as_mut_ptr() as *mut __m128i,
                _mm256_cvttpd_epi32(_mm256_min_pd(d2, rdmv)),
            );
            let right = _mm256_set_pd(
                *pr.add(at[3] as usize),
                *pr.add(at[2] as usize),
                *pr.add(at[1] as usize),
                *pr.add(at[0] as usize),
            );
            // Δ3 = max(Δ2 − right β, 0): MAXPD gives 0 for a NaN, as f64::max.
            let d3 = _mm256_max_pd(_mm256_sub_pd(d2, _mm256_mul_pd(right, betav)), zero);
            let excess = _mm256_sub_pd(_mm256_add_pd(kv, d3), mv);
            // idle: 0 where excess ≤ 0, else excess / β (+∞ when β = 0;
            // excess is never NaN: d3 is not, k and m are finite).
            let eps = _mm256_blendv_pd(
                _mm256_div_pd(excess, betav),
                zero,
                _mm256_cmp_pd::<_CMP_LE_OQ>(excess, zero),
            );
            let v = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(fv, right), left), eps);
            let v = _mm256_blendv_pd(inf, v, ok);
            most = take_four(v, cur, codes, pv.add(k), ph.add(k), most);
            deltas = _mm256_add_pd(deltas, four);
        }
    }
    let tail_most = try_split_cells(t, 4 * quads, Row { vals, chs, code });
    // SAFETY: AVX2, as this function.
    unsafe { largest_of(most, tail_most) }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::solvers::offload::pofo::tests::Rng;

    fn row<'a>(vals: &'a mut [f64], chs: &'a mut [u16], code: u16) -> Row<'a> {
        Row { vals, chs, code }
    }

    /// A table's value: ∞ (one in eight), 0 (one in eight) or in [0, 1).
    fn value(rng: &mut Rng) -> f64 {
        match rng.below(8) {
            0 => f64::INFINITY,
            1 => 0.0,
            _ => rng.unit(),
        }
    }

    /// Below n.
    fn below(rng: &mut Rng, n: usize) -> usize {
        rng.below(n as u64) as usize
    }

    /// Every kernel this CPU has gives the portable loop's values, choices
    /// and row maximum, to the bit, on rows of every length (every tail),
    /// columns in ramps, plateaus and at random, cells at ∞, and ties on
    /// purpose: a candidate equal to its cell (must not take) and a bound
    /// equal to the cut (must take). How it can fail: a comparison of the
    /// wrong kind (< for ≤), a lane's choice written to another lane, an
    /// addition re-associated, a tail cell dropped, a quad's cells moved
    /// to the wrong lanes. Mutations tried, each failing at once: the AVX2
    /// cut test made `_CMP_LT_OQ`; `LANE_BITS` shifted by 8 bits a lane
    /// instead of 16; a quad's offsets packed j bits apart instead of 2j.
    /// (A quad's base not moved back at the row's end changes no value —
    /// the permutation picks only the row's cells — but reads past the
    /// row: `a_quad_is_a_load_within_the_row_and_four_offsets` pins it.)
    #[test]
    fn every_kernel_equals_the_portable_loop() {
        match Kernel::detect() {
            Kernel::Portable => options_as_the_portable_loop(Portable, false),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(avx2) => options_as_the_portable_loop(avx2, true),
        }
    }

    /// `kernel`'s option loop against the portable one; `vector`: it reads
    /// quads (and must have read many).
    fn options_as_the_portable_loop<L: Loops + std::fmt::Debug>(kernel: L, vector: bool) {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut cases, mut packed) = (0, 0);
        for _ in 0..20_000 {
            let n = below(&mut rng, 24);
            let side = n + 1 + below(&mut rng, 4);
            // The row sits between other cells (1000 + k, never a
            // candidate's): a load past either end of it would show.
            let mut cells: Vec<f64> = (0..side + 8).map(|k| 1000.0 + k as f64).collect();
            for cell in &mut cells[4..4 + side] {
                *cell = value(&mut rng);
            }
            let row2 = &cells[4..4 + side];
            let shift = below(&mut rng, side);
            let cols: Vec<usize> = match below(&mut rng, 5) {
                // A ramp, shifted: its last columns meet the row's end.
                0 => (0..n).map(|db| (db + shift).min(side - 1)).collect(),
                // A plateau.
                1 => vec![shift; n],
                // Near a ramp: steps of 0, 1 or 2, a quad spanning up to
                // seven cells, down as well as up.
                2 => (0..n)
                    .scan(shift, |c, _| {
                        let now = *c;
                        *c = (*c + below(&mut rng, 3)).min(side - 1);
                        Some(now)
                    })
                    .collect(),
                3 => (0..n)
                    .map(|_| (shift + below(&mut rng, 4)).min(side - 1))
                    .collect(),
                _ => (0..n).map(|_| below(&mut rng, side)).collect(),
            };
            let eb: Vec<f64> = (0..n).map(|_| value(&mut rng)).collect();
            let (f, ef, f_rest) = (rng.unit(), rng.unit(), rng.unit());
            let mut cut = rng.unit() * 4.0;
            if n > 0 && below(&mut rng, 2) == 0 {
                // A bound exactly at the cut: ≤ takes it.
                cut = (f_rest + eb[below(&mut rng, n)]) + ef;
            }
            let terms = Terms {
                f,
                ef,
                f_rest,
                cut,
                eb: &eb,
            };
            let mut vals: Vec<f64> = (0..n).map(|_| value(&mut rng) * 3.0).collect();
            for db in 0..n {
                if below(&mut rng, 4) == 0 {
                    // A candidate exactly equal to its cell: < keeps the cell.
                    vals[db] = ((f + row2[cols[db]]) + eb[db]) + ef;
                }
            }
            let chs: Vec<u16> = (0..n).map(|_| below(&mut rng, 9) as u16).collect();
            let code = 11 + below(&mut rng, 50) as u16;
            let (mut v1, mut c1) = (vals.clone(), chs.clone());
            let one_by_one = Columns::new(&cols, side);
            let most1 = Portable.try_option(&terms, row2, &one_by_one, row(&mut v1, &mut c1, code));
            let (mut v2, mut c2) = (vals, chs);
            let mut quads = vec![0; n / 4];
            let columns = kernel.columns(&cols, side, &mut quads);
            let most2 = kernel.try_option(&terms, row2, &columns, row(&mut v2, &mut c2, code));
            packed += quads.iter().filter(|&&q| q != SCATTERED).count();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v1), bits(&v2), "values, {kernel:?}, n = {n}");
            assert_eq!(c1, c2, "choices, {kernel:?}, n = {n}");
            assert_eq!(most1.to_bits(), most2.to_bits(), "row maximum, {kernel:?}");
            cases += usize::from(c1.contains(&code));
        }
        // Most rows take a candidate somewhere, and a vector kernel read
        // many quads in one load (the test is not vacuous).
        assert!(cases > 10_000, "{cases}");
        assert!(!vector || packed > 20_000, "{packed}");
    }

    /// C_Δ's split: every kernel this CPU has gives the portable loop's
    /// values, choices and row maximum, to the bit, on rows of every length,
    /// with and without a link (β = 0 makes every positive idle time ∞),
    /// lefts and rights at ∞ or 0, right sub-rows shorter than the row (so
    /// Δ2 falls past them), leftovers at whole numbers (x − 1e-9 just
    /// below and above an integer), and ties with the cell and the cut on
    /// purpose. How it can fail: a rounding of Δ2 off by one, a lane
    /// reading another lane's right, an idle time computed where the
    /// excess is not positive, a test of the wrong kind. Mutations tried,
    /// each failing at once: `leftover`'s correction dropped in the AVX2
    /// loop (truncation only); the cell bound's test made `_CMP_LE_OQ`.
    #[test]
    fn every_kernel_splits_as_the_portable_loop() {
        match Kernel::detect() {
            Kernel::Portable => splits_as_the_portable_loop(Portable),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(avx2) => splits_as_the_portable_loop(avx2),
        }
    }

    /// `kernel`'s split loop against the portable one.
    fn splits_as_the_portable_loop<L: Loops + std::fmt::Debug>(kernel: L) {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut taken, mut past) = (0, 0);
        for _ in 0..20_000 {
            let n = below(&mut rng, 24);
            let rights: Vec<f64> = (0..1 + below(&mut rng, n + 2))
                .map(|_| value(&mut rng))
                .collect();
            let beta = [0.0, 0.5, 1.0, 3.0, 40.0][below(&mut rng, 5)];
            let mut lefts: Vec<f64> = (0..n).map(|_| value(&mut rng)).collect();
            for (delta, left) in lefts.iter_mut().enumerate() {
                if beta > 0.0 && below(&mut rng, 4) == 0 {
                    // Δ − left β a whole number, and 1e-9 off it.
                    let whole = below(&mut rng, delta + 1) as f64;
                    let nudge = [0.0, 1e-9, 2e-9, -1e-9][below(&mut rng, 4)];
                    *left = (delta as f64 - whole + nudge) / beta;
                }
            }
            let f = rng.unit();
            let lb = f + rng.unit() * 0.1;
            let mut cut = lb + rng.unit() * 2.0;
            if n > 0 && below(&mut rng, 3) == 0 {
                // A cell bound exactly at the cut: ≤ keeps the candidate.
                cut = lb + lefts[below(&mut rng, n)];
            }
            let t = SplitTerms {
                f,
                lb,
                cut,
                beta,
                k: rng.unit() * 8.0 - 4.0,
                m: below(&mut rng, 30) as f64,
                lefts: &lefts,
                rights: &rights,
            };
            let mut vals: Vec<f64> = (0..n).map(|_| value(&mut rng) * 4.0).collect();
            for delta in 0..n {
                if below(&mut rng, 5) == 0 {
                    // A cell equal to its bound: < skips it.
                    vals[delta] = lb + lefts[delta];
                }
            }
            let chs: Vec<u16> = (0..n).map(|_| below(&mut rng, 9) as u16).collect();
            let code = 11 + below(&mut rng, 50) as u16;
            let (mut v1, mut c1) = (vals.clone(), chs.clone());
            let most1 = Portable.try_split(&t, row(&mut v1, &mut c1, code));
            let (mut v2, mut c2) = (vals, chs);
            let most2 = kernel.try_split(&t, row(&mut v2, &mut c2, code));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&v1),
                bits(&v2),
                "values, {kernel:?}, n = {n}, β = {beta}"
            );
            assert_eq!(c1, c2, "choices, {kernel:?}, n = {n}, β = {beta}");
            assert_eq!(most1.to_bits(), most2.to_bits(), "row maximum, {kernel:?}");
            taken += usize::from(c1.contains(&code));
            past += usize::from(n > rights.len());
        }
        // Not vacuous: many rows take a candidate, many reach past the right.
        assert!(taken > 5_000 && past > 5_000, "{taken} {past}");
    }

    /// A quad is one load from a base within the row and each column's
    /// offset from it, or scattered.
    #[test]
    fn a_quad_is_a_load_within_the_row_and_four_offsets() {
        let at = |base: u32, offsets: [u32; 4]| {
            base << 8 | offsets[0] | offsets[1] << 2 | offsets[2] << 4 | offsets[3] << 6
        };
        assert_eq!(quad([3, 3, 3, 3], 10), at(3, [0; 4]));
        assert_eq!(quad([3, 4, 5, 6], 10), at(3, [0, 1, 2, 3]));
        assert_eq!(quad([5, 4, 4, 2], 10), at(2, [3, 2, 2, 0]));
        // Near the row's end the base moves back: base + 3 is the last cell.
        assert_eq!(quad([8, 9, 9, 9], 10), at(6, [2, 3, 3, 3]));
        assert_eq!(quad([0, 0, 0, 0], 4), at(0, [0; 4]));
        assert_eq!(quad([0, 2, 4, 4], 10), SCATTERED);
        assert_eq!(quad([0, 1, 1, 2], 3), SCATTERED);
    }

    /// The portable loop against the recursion's rule written out, cell by
    /// cell: a candidate over the cut or not strictly better is left.
    #[test]
    fn the_portable_loop_takes_only_strictly_better_candidates_within_the_cut() {
        let row2 = [5.0, 1.0, 2.0, f64::INFINITY];
        let cols = [0, 1, 2, 3, 1];
        let eb = [0.0, 0.0, 1.0, 0.0, 3.0];
        let terms = Terms {
            f: 1.0,
            ef: 0.0,
            f_rest: 1.0,
            cut: 3.0,
            eb: &eb,
        };
        // Candidates: 6, 2, 4, ∞, 5; bounds: 1, 1, 2, 1, 4 (the last past the cut).
        let mut vals = [7.0, 2.0, 9.0, 8.0, 9.0];
        let mut chs = [0; 5];
        let cells = row(&mut vals, &mut chs, 3);
        let most = Portable.try_option(&terms, &row2, &Columns::new(&cols, 4), cells);
        assert_eq!(vals, [6.0, 2.0, 4.0, 8.0, 9.0]);
        assert_eq!(chs, [3, 0, 3, 0, 0]);
        assert_eq!(most, 9.0);
    }
}
