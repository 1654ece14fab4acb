//! OC_x(i, A, Δ_F, Δ_B), the forward phase (Appendix B.1, Table 2): its
//! dense table ([`Forward`]), the cut that bounds it, the fill bottom-up a
//! square at a time ([`OcLayer`]), and the read-out into operations.

use super::backward::Backward;
use super::grid::{case2_excess, largest, least, Grid};
#[cfg(target_arch = "x86_64")]
use super::kernel::Avx2;
use super::kernel::{self, leftover, Kernel, Loops, Portable, Row, Terms};
use super::{filled, LossStep, Mode, Pofo, PofoPlan};
use crate::schedule::{Op, TensorKind};
use crate::solvers::api::SolveError;

/// A state of OC_x(i, A, Δ_F, Δ_B): stage i, its input a^{i-1} (x = 0) or
/// ā^{i-1} (x = 1), A slots of activations kept, Δ_F and Δ_B slots left to
/// offload and to prefetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OcState {
    pub(super) i: usize,
    pub(super) x: usize,
    pub(super) a: usize,
    pub(super) df: usize,
    pub(super) db: usize,
}

impl OcState {
    /// OC_0(1, 0, 0, 0): the whole chain from a^0, nothing kept or in flight.
    pub(super) const FIRST: OcState = OcState {
        i: 1,
        x: 0,
        a: 0,
        df: 0,
        db: 0,
    };
}

/// OC's memo, dense: for each (i, x), every (A, Δ_F, Δ_B) with A + Δ_F ≤ N
/// and A + Δ_B ≤ N (larger states cannot fit) — Σ_A (N − A + 1)² entries.
/// Reached states are a large share of it, and a flat array is several
/// times faster than hashing them.
pub(super) struct Forward {
    pub(super) slots: usize,
    /// Δ_F and Δ_B stay 0 with no link.
    pub(super) max_delta: usize,
    /// Offset of the (A, ·, ·) square inside a block, for A in 0..=N.
    pub(super) square: Vec<usize>,
    pub(super) block: usize,
    pub(super) values: Vec<f64>,
    /// [`ForwardChoice::encode`]d.
    pub(super) choices: Vec<u16>,
    /// Offset of the (A, ·) rows inside a block of row minima, for A in
    /// 0..=N, and the block's length (Σ_A side(A)).
    pub(super) rows: Vec<usize>,
    pub(super) row_block: usize,
    /// min over Δ_B of OC_x(i, A, Δ_F, ·), per row (bottom-up OC's bounds).
    pub(super) row_min: Vec<f64>,
}

impl Forward {
    pub(super) fn side(slots: usize, max_delta: usize, a: usize) -> usize {
        (slots - a + 1).min(max_delta + 1)
    }

    /// Entries for stages 1..=n: 2 × Σ_A side(A)² per stage (in u128: this
    /// is what is checked against the limit, before any allocation).
    pub(super) fn entries(n: usize, slots: usize, max_delta: usize) -> u128 {
        let block: u128 = (0..=slots)
            .map(|a| (Self::side(slots, max_delta, a) as u128).pow(2))
            .sum();
        (n as u128 + 1) * 2 * block
    }

    pub(super) fn new(n: usize, slots: usize, max_delta: usize) -> Result<Forward, SolveError> {
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
    pub(super) fn index(
        &self,
        i: usize,
        x: usize,
        a: usize,
        df: usize,
        db: usize,
    ) -> Option<usize> {
        if a > self.slots {
            return None;
        }
        let side = Self::side(self.slots, self.max_delta, a);
        (df < side && db < side).then(|| (2 * i + x) * self.block + self.square[a] + df * side + db)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ForwardChoice {
    Infeasible,
    Loss,
    All { offload: bool },
    Checkpoint { last: usize, offload: bool },
}

impl ForwardChoice {
    /// Two bytes in the memo: 0 infeasible, 1 loss, 2 + offload for F_all,
    /// 4 + 2 (last − i) + offload for F_ck.
    pub(super) fn encode(self, i: usize) -> u16 {
        match self {
            ForwardChoice::Infeasible => 0,
            ForwardChoice::Loss => 1,
            ForwardChoice::All { offload } => 2 + offload as u16,
            ForwardChoice::Checkpoint { last, offload } => {
                4 + 2 * (last - i) as u16 + offload as u16
            }
        }
    }

    pub(super) fn decode(code: u16, i: usize) -> ForwardChoice {
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
pub(super) struct Splits {
    /// 𝓜 of F_ck^i.
    pub(super) first: usize,
    /// max 𝓜 over F_ck^i, F_∅ … F_∅^last (the input kept throughout).
    pub(super) kept_max: Vec<usize>,
    /// max 𝓜 over F_∅^{i+1} … F_∅^last (0 for last = i).
    pub(super) sent_max: Vec<usize>,
    /// Σ_{i..=last} u_f∅.
    pub(super) f: Vec<f64>,
    /// rest_i + f and f + rest_{last+1}, as OC sums them.
    pub(super) rest_f: Vec<f64>,
    pub(super) f_rest: Vec<f64>,
    /// Lemma 1's reach, max_k (𝓜_k − β Σ_{h<k} u_f∅), before the state's
    /// own A + Δ_F + I − N is added (an exact integer: see [`case2_idle`]).
    pub(super) reach: Vec<f64>,
}

/// Per-row and per-column work space of [`Pofo::fill_square`].
pub(super) struct Scratch {
    pub(super) ef: Vec<f64>,
    pub(super) eb: Vec<f64>,
    pub(super) rk: Vec<usize>,
    pub(super) ro: Vec<usize>,
    pub(super) ck: Vec<usize>,
    pub(super) co: Vec<usize>,
    /// `ck`'s and `co`'s quads, where the loops read them (`Loops::columns`).
    pub(super) ck_quads: Vec<u32>,
    pub(super) co_quads: Vec<u32>,
    /// The largest value of each row of the square (an upper bound).
    pub(super) row_max: Vec<f64>,
}

impl Scratch {
    pub(super) fn new(side: usize) -> Scratch {
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
pub(super) const CUT_SLACK: f64 = 1e-6;

impl Pofo {
    /// OC bottom-up over every state of the memo (stage L first): the
    /// same recursion as the reference's `oc_compute`, state by state
    /// (a state's value depends on its own candidates only), computed a
    /// square (i, x, A) at a time.
    pub(super) fn fill_forward(&mut self, progress: &mut dyn FnMut(f64) -> bool) -> bool {
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
    pub(super) fn find_cut(&mut self) {
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
    pub(super) fn find_table_cut(&mut self) {
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
    pub(super) fn oc_cut(&self, i: usize, a: usize) -> f64 {
        match &self.table_tops {
            Some(tops) => tops[a] - (self.grid.rest[1] - self.grid.rest[i]),
            None => self.cut[i],
        }
    }

    /// One bottom-up pass over every square, stage L first.
    pub(super) fn fill_pass(&mut self, progress: &mut dyn FnMut(f64) -> bool) -> bool {
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
    pub(super) fn fill_stage(&mut self, i: usize, splits: &Splits) {
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
    pub(super) fn splits_of(&self, i: usize) -> Splits {
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
    pub(super) fn next_state(
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

    pub(super) fn read_forward(&self, state: OcState, out: &mut PofoPlan) {
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
}

/// What every square of one OC stage i reads: the grid, C_Δ, and OC's
/// finished stages (i + 1 ..= L), which start at `done_at` (values) and
/// `done_rows_at` (row minima) in the whole memo.
pub(super) struct OcLayer<'a> {
    pub(super) grid: &'a Grid,
    pub(super) back: &'a Backward,
    pub(super) mode: Mode,
    pub(super) loss: LossStep,
    pub(super) only_kept: bool,
    pub(super) slots: usize,
    pub(super) max_delta: usize,
    pub(super) block: usize,
    pub(super) square: &'a [usize],
    pub(super) row_block: usize,
    pub(super) rows: &'a [usize],
    pub(super) done: &'a [f64],
    pub(super) done_at: usize,
    pub(super) done_row_min: &'a [f64],
    pub(super) done_rows_at: usize,
    pub(super) i: usize,
    pub(super) splits: &'a Splits,
    /// Case 2's inner loop, chosen once for this CPU.
    pub(super) kernel: Kernel,
}

/// One square (i, x, A) of OC being filled: its cells, its rows' least
/// values, and its cut.
pub(super) struct SquareOut<'a> {
    pub(super) x: usize,
    pub(super) a: usize,
    pub(super) cut: f64,
    pub(super) values: &'a mut [f64],
    pub(super) choices: &'a mut [u16],
    pub(super) row_min: &'a mut [f64],
}

impl OcLayer<'_> {
    /// OC_x(i, A, ·, ·) for every Δ_F, Δ_B of the memo's square, and the
    /// least value of each of its rows.
    pub(super) fn fill_square(&self, out: &mut SquareOut<'_>, sc: &mut Scratch) {
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
    pub(super) unsafe fn fill_square_values_avx2(
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
    pub(super) fn fill_square_values<L: Loops>(
        &self,
        out: &mut SquareOut<'_>,
        sc: &mut Scratch,
        loops: L,
    ) {
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
                    let row = Row {
                        vals: &mut *vals,
                        chs: &mut *chs,
                        code: code_keep,
                    };
                    sc.row_max[df] = loops.try_option(&terms, row2, cols, row);
                }
                if let (Some((row2, _)), Some(cols)) = (srow, &sent_cols) {
                    let row = Row {
                        vals: &mut *vals,
                        chs: &mut *chs,
                        code: code_sent,
                    };
                    sc.row_max[df] = loops.try_option(&terms, row2, cols, row);
                }
            }
            if !alive {
                break;
            }
        }
    }
}
