//! The pofo DP as it was before it was made faster (commit c717a1c): the
//! slow reference that `pofo`'s tests cross-check bit for bit (values,
//! choices, schedules), and the "before" of `benches/solvers.rs`. Not used
//! by any solver. The model, the recursion and the order of every float
//! operation are documented in [`super`]; nothing here may change except to
//! follow an API change.

use super::{validate, LossStep, Mode, PofoPlan};
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::solvers::api::{Progress, SolveError};
use crate::solvers::slots::{grid, SlotSizes};

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
        }
    }

    /// Lemma 1: the idle time that lets the link make up `excess` slots.
    fn idle(&self, excess: f64) -> f64 {
        if excess <= 0.0 {
            0.0
        } else if self.beta > 0.0 {
            excess / self.beta
        } else {
            f64::INFINITY
        }
    }

    /// A Δ left over, rounded up to slots (what a sub-problem is asked).
    fn leftover(&self, x: f64) -> usize {
        if x <= 1e-9 {
            0
        } else {
            (x - 1e-9).ceil() as usize
        }
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
}

/// One decision of C_Δ: 0 infeasible, 1 F_all^i (or the leaf), 2 + k F_ck^i
/// with the next checkpoint a^{i+k}.
type Choice = u16;

/// C_Δ(i, j, m, Δ) for every 1 ≤ i ≤ j < L, m ≤ N free slots besides the
/// segment's input, Δ ≤ m slots to prefetch by the segment's end.
struct Backward {
    values: Vec<f64>,
    choices: Vec<Choice>,
    pair_start: Vec<usize>,
    per_pair: usize,
    max_delta: usize,
}

impl Backward {
    fn index(&self, i: usize, j: usize, m: usize, delta: usize) -> usize {
        (self.pair_start[i] + (j - i)) * self.per_pair + m * (self.max_delta + 1) + delta
    }
}

/// The DP for one chain, budget and bandwidth.
pub struct Pofo {
    grid: Grid,
    mode: Mode,
    loss: LossStep,
    back: Backward,
    forward: Forward,
    /// OC states computed so far, for progress.
    computed: usize,
    /// The progress callback asked to stop: OC unwinds without memoizing.
    cancelled: bool,
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
        Ok(Forward {
            slots,
            max_delta,
            square,
            block: at,
            values: filled(len, f64::NAN)?,
            choices: filled(len, 0)?,
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

/// The share of the progress bar that C_Δ's table fills; OC's states the rest.
const FILL_SHARE: f64 = 0.5;

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
/// OC's dense memo.
fn table_bytes(n: usize, slots: usize, with_bandwidth: bool, mode: Mode) -> u128 {
    let pairs = (n as u128) * (n as u128 + 1) / 2;
    let deltas = if with_bandwidth { slots as u128 + 1 } else { 1 };
    let backward = if mode == Mode::Full {
        pairs * (slots as u128 + 1) * deltas * 10
    } else {
        0
    };
    let max_delta = if with_bandwidth { slots } else { 0 };
    backward + Forward::entries(n, slots, max_delta) * 10
}

impl Pofo {
    /// Builds C_Δ (the O(L³N²) part, with progress) and prepares OC.
    pub fn build(
        chain: &Chain,
        mode: Mode,
        budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
        max_table_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<Pofo, SolveError> {
        validate(chain.len(), slots)?;
        let grid = Grid::new(chain, budget_bytes, slots, bandwidth);
        let n = grid.n;
        let with_bw = grid.beta > 0.0;
        let need = table_bytes(n, grid.slots, with_bw, mode);
        if need > max_table_bytes as u128 {
            return Err(SolveError::TooLarge(format!(
                "max_table_bytes: pofo's tables (C_Δ and OC's memo) for {n} stages × {} slots need {}, over the limit of {}; use fewer --slots",
                grid.slots,
                crate::model::units::format_bytes(need.min(u64::MAX as u128) as u64),
                crate::model::units::format_bytes(max_table_bytes)
            )));
        }
        let max_delta = if with_bw { grid.slots } else { 0 };
        let grid_slots = grid.slots;
        let mut pair_start = vec![0usize; n + 2];
        for i in 1..=n {
            pair_start[i + 1] = pair_start[i] + (n - i + 1);
        }
        let per_pair = (grid.slots + 1) * (max_delta + 1);
        let len = if mode == Mode::Full {
            pair_start[n + 1] * per_pair
        } else {
            0
        };
        let values = filled(len, f64::INFINITY)?;
        let choices = filled(len, 0)?;
        let forward = Forward::new(n, grid_slots, max_delta)?;
        let mut pofo = Pofo {
            grid,
            mode,
            loss: LossStep::Paper,
            back: Backward {
                values,
                choices,
                pair_start,
                per_pair,
                max_delta,
            },
            forward,
            computed: 0,
            cancelled: false,
        };
        if mode == Mode::Full {
            pofo.fill_backward(progress)?;
        }
        Ok(pofo)
    }

    /// The DP with `loss` as its loss step (OC is computed after this, so it
    /// can be chosen once C_Δ is built; the default is [`LossStep::Paper`]).
    pub fn with_loss_step(mut self, loss: LossStep) -> Pofo {
        self.loss = loss;
        // OC's memo holds values of the other loss step, if any were computed.
        self.forward.values.fill(f64::NAN);
        self
    }

    /// C_Δ(i, j, m, Δ), ∞ when infeasible or out of the table.
    fn c(&self, i: usize, j: usize, m: usize, delta: usize) -> f64 {
        if delta > m || delta > self.back.max_delta || m > self.grid.slots {
            return f64::INFINITY;
        }
        self.back.values[self.back.index(i, j, m, delta)]
    }

    /// Section B.3, bottom-up by segment length (stages i..j with j < L).
    fn fill_backward(&mut self, progress: &mut Progress<'_>) -> Result<(), SolveError> {
        let n = self.grid.n;
        let total = (n * n.saturating_sub(1) / 2).max(1);
        let mut done = 0;
        for len in 0..n.saturating_sub(1) {
            for i in 1..n - len {
                self.fill_pair(i, i + len);
                done += 1;
            }
            if !progress(FILL_SHARE * done as f64 / total as f64) {
                return Err(SolveError::Cancelled);
            }
        }
        Ok(())
    }

    /// C_Δ(i, j, ·, ·): F_all^i (or the leaf) for every (m, Δ), then each
    /// F_ck split over every (m, Δ) at once — split-major, so the left
    /// sub-table C_Δ(i, last, ·, ·) is read in order. Candidates are tried in
    /// the same order as one cell at a time would (F_all, then `last`
    /// ascending, strict improvement), so the values and choices are too.
    fn fill_pair(&mut self, i: usize, j: usize) {
        let slots = self.grid.slots;
        let max_delta = self.back.max_delta;
        let stride = max_delta + 1;
        let base = self.back.index(i, j, 0, 0);
        for m in 0..=slots {
            for delta in 0..=m.min(max_delta) {
                let (v, ch) = self.backward_first(i, j, m, delta);
                self.back.values[base + m * stride + delta] = v;
                self.back.choices[base + m * stride + delta] = ch;
            }
        }
        if i == j {
            return;
        }
        // Every forward of the F_ck^i / F_∅ chain over i..=last must fit
        // (only those: a later stage's forward is the sub-problem's, which
        // may run it as an F_all, whose o_f may be below o_f∅).
        let mut threshold = 0;
        let mut f = 0.0;
        let mut reach = f64::NEG_INFINITY;
        for last in i..j {
            let g = &self.grid;
            threshold = threshold.max(g.m_fnone(i, last, j));
            f += g.ufn[last];
            reach = reach.max(g.m_fnone(i, last, j) as f64 + g.beta * f);
            let code = 2 + (last - i) as Choice;
            for m in threshold.max(g.a[last])..=slots {
                for delta in 0..=m.min(max_delta) {
                    let Some(v) = self.backward_checkpoint(i, j, m, delta, last, f, reach) else {
                        continue;
                    };
                    let at = base + m * stride + delta;
                    if v < self.back.values[at] {
                        self.back.values[at] = v;
                        self.back.choices[at] = code;
                    }
                }
            }
        }
    }

    /// The leaf C_Δ(i, i, ·) or Case 1 (F_all^i) of C_Δ(i, j, m, Δ).
    fn backward_first(&self, i: usize, j: usize, m: usize, delta: usize) -> (f64, Choice) {
        let g = &self.grid;
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
        let g = &self.grid;
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

    /// Case 2 of B.3 for one split: F_ck^i, F_∅ up to `last`, then
    /// C_Δ(last+1, j, m − a^last, Δ2), then C_Δ(i, last, m, Δ1 = Δ).
    /// `f` = Σ u_f over i..=last and `reach` = max_k (𝓜_k + β Σ_{h=i}^{k} u_f),
    /// so that max_k (𝓜_k − β Σ_{h=k+1}^{last} u_f), Lemma 1's term, is
    /// reach − β f.
    #[allow(clippy::too_many_arguments)]
    fn backward_checkpoint(
        &self,
        i: usize,
        j: usize,
        m: usize,
        delta: usize,
        last: usize,
        f: f64,
        reach: f64,
    ) -> Option<f64> {
        let g = &self.grid;
        let w = g.a[last];
        if w > m {
            return None;
        }
        let left = self.c(i, last, m, delta);
        if !left.is_finite() {
            return None;
        }
        let d2 = g.leftover(delta as f64 - left * g.beta);
        let right = self.c(last + 1, j, m - w, d2);
        if !right.is_finite() {
            return None;
        }
        let d3 = (d2 as f64 - right * g.beta).max(0.0);
        let eps = g.idle(reach - g.beta * f + d3 - m as f64);
        let v = (f + right) + left + eps;
        v.is_finite().then_some(v)
    }

    /// The DP's best time for the whole chain, None if infeasible.
    ///
    /// OC visits only the states it reaches, so its share of `progress` is
    /// an estimate: states computed against a quarter of the memo (about
    /// what L = 50, N = 50 reaches), held below 1 until the end.
    pub fn best_seconds(&mut self, progress: &mut Progress<'_>) -> Result<Option<f64>, SolveError> {
        let start = if self.mode == Mode::Full {
            FILL_SHARE
        } else {
            0.0
        };
        let expected = (self.forward.values.len() / 4).max(1) as f64;
        let mut report = |computed: usize| {
            progress(start + (1.0 - start) * (computed as f64 / expected).min(0.98))
        };
        let v = self.oc(OcState::FIRST, &mut report);
        if self.cancelled {
            return Err(SolveError::Cancelled);
        }
        progress(1.0);
        Ok(v.is_finite().then_some(v))
    }

    /// I_i^x: a^{i-1} (x = 0) or ā^{i-1} (x = 1).
    fn input(&self, i: usize, x: usize) -> usize {
        if x == 1 {
            self.grid.abar[i - 1]
        } else {
            self.grid.a[i - 1]
        }
    }

    /// OC_x(i, A, Δ_F, Δ_B) (Section B.1, with the loss at stage L),
    /// memoized.
    fn oc(&mut self, state: OcState, report: &mut dyn FnMut(usize) -> bool) -> f64 {
        let OcState { i, x, a, df, db } = state;
        let Some(at) = self.forward.index(i, x, a, df, db) else {
            return f64::INFINITY;
        };
        if self.cancelled {
            return f64::INFINITY;
        }
        let v = self.forward.values[at];
        if !v.is_nan() {
            return v;
        }
        let (v, choice) = self.oc_compute(state, report);
        if self.cancelled {
            return f64::INFINITY;
        }
        self.forward.values[at] = v;
        self.forward.choices[at] = choice.encode(i);
        self.computed += 1;
        if self.computed & 0x3fff == 0 && !report(self.computed) {
            self.cancelled = true;
        }
        v
    }

    /// OC's recursion for one state, and the choice that reached its value.
    fn oc_compute(
        &mut self,
        state: OcState,
        report: &mut dyn FnMut(usize) -> bool,
    ) -> (f64, ForwardChoice) {
        let OcState { i, x, a, df, db } = state;
        let n = self.grid.n;
        let big_n = self.grid.slots;
        let input = self.input(i, x);
        let mut best = (f64::INFINITY, ForwardChoice::Infeasible);
        if a + input + df > big_n || a + input + db > big_n {
            return best;
        }
        let free = big_n - a - input;
        let mfx = (a + df + input) as f64;
        let mbx = (a + db + input) as f64;
        let g = &self.grid;
        if i == n {
            let (mf, mb) = (g.m_fall(n, n), g.m_b(n));
            if mf > free || mb > free {
                return best;
            }
            let eps_f = g.idle(mf as f64 + mfx - big_n as f64);
            let eps_b = g.idle(mb as f64 + mbx - big_n as f64);
            let v = if df == 0 && db == 0 {
                (g.uf[n] + g.ub[n]) + (eps_f + eps_b)
            } else {
                match self.loss {
                    LossStep::Paper => {
                        // B.2: what the link has not moved during F_all^L
                        // (offloads) and B^L (prefetches) waits in between.
                        let left_f = (df as f64 - (g.uf[n] + eps_f) * g.beta).max(0.0);
                        let left_b = (db as f64 - (g.ub[n] + eps_b) * g.beta).max(0.0);
                        (g.uf[n] + g.ub[n]) + (eps_f + eps_b) + (left_f + left_b) / g.beta
                    }
                    LossStep::Overlap => {
                        // Offloads drain first on the one copy lane;
                        // prefetching starts after F_all^L and ends with B^L.
                        let compute = eps_f + g.uf[n] + g.ub[n] + eps_b;
                        let copy = (df as f64 / g.beta).max(eps_f + g.uf[n]) + db as f64 / g.beta;
                        compute.max(copy)
                    }
                }
            };
            return (v, ForwardChoice::Loss);
        }
        let can_offload = g.beta > 0.0;
        // Case 1: F_all^i.
        let (mf, mb) = (g.m_fall(i, n), g.m_b(i));
        if mf <= free && mb <= free {
            let eps_f = g.idle(mf as f64 + mfx - big_n as f64);
            let eps_b = g.idle(mb as f64 + mbx - big_n as f64);
            let sent = (g.uf[i] + eps_f) * g.beta;
            let fetched = (g.ub[i] + eps_b) * g.beta;
            let fixed = (g.uf[i] + g.ub[i], eps_f + eps_b);
            for offload in [false, true] {
                if offload && !can_offload {
                    continue;
                }
                let next = self.next_state(state, (i + 1, 1), input, sent, fetched, offload);
                let sub = self.oc(next, report);
                let v = fixed.0 + sub + fixed.1;
                if v < best.0 {
                    best = (v, ForwardChoice::All { offload });
                }
            }
        }
        if self.mode == Mode::OffloadOnly {
            return best;
        }
        // Case 2: F_ck^i, F_∅ up to `last`, a^last the next input. Kept, the
        // input counts during every forward; offloaded, only during F_ck^i.
        let mut f = 0.0;
        let mut reach = f64::NEG_INFINITY;
        let mut fits_kept = true;
        let mut fits_sent = true;
        for last in i..n {
            let g = &self.grid;
            let mk = g.m_fnone(i, last, n);
            fits_kept &= mk <= free;
            fits_sent &= if last == i {
                mk <= free
            } else {
                mk <= free + input
            };
            if !fits_sent {
                break;
            }
            reach = reach.max(mk as f64 - g.beta * f);
            f += g.ufn[last];
            // Branch and bound: any split costs at least every F and B once
            // plus the recomputed forwards, which only grow with `last`; the
            // margin keeps float rounding from pruning a better candidate.
            let beaten = |bound: f64| bound > best.0 + best.0.abs() * 1e-9;
            if beaten(g.rest[i] + f) {
                break;
            }
            let eps_f = g.idle(super::grid::case2_excess(reach, mfx, big_n as f64));
            let back = self.c(i, last, free, db);
            if !back.is_finite() || beaten(f + g.rest[last + 1] + back + eps_f) {
                continue;
            }
            let sent = (f + eps_f) * g.beta;
            let fetched = back * g.beta;
            for offload in [false, true] {
                if (offload && !can_offload) || (!offload && !fits_kept) {
                    continue;
                }
                let next = self.next_state(state, (last + 1, 0), input, sent, fetched, offload);
                let sub = self.oc(next, report);
                let v = (f + sub) + back + eps_f;
                if v < best.0 {
                    best = (v, ForwardChoice::Checkpoint { last, offload });
                }
            }
        }
        best
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

    fn read_forward(&mut self, state: OcState, out: &mut PofoPlan) {
        let OcState { i, x, a, df, db } = state;
        let at = self
            .forward
            .index(i, x, a, df, db)
            .expect("a state on the optimal path is in the table");
        let choice = ForwardChoice::decode(self.forward.choices[at], i);
        let input = self.input(i, x);
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
                let eps_f = g.idle(super::grid::case2_excess(reach, mfx, big_n as f64));
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
        let choice = self.back.choices[self.back.index(i, j, m, delta)];
        if i == j || choice == 1 {
            ops.push(Op::forward_all(i));
            if i < j {
                let (_, d1) = self
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

/// The tables entry by entry, for the cross-check of `pofo::tests`.
#[cfg(test)]
impl Pofo {
    /// (N, max Δ) of the grid.
    pub(super) fn dims(&self) -> (usize, usize) {
        (self.grid.slots, self.back.max_delta)
    }

    /// C_Δ(i, j, m, Δ) and its choice.
    pub(super) fn c_entry(&self, i: usize, j: usize, m: usize, delta: usize) -> (f64, u16) {
        let at = self.back.index(i, j, m, delta);
        (self.back.values[at], self.back.choices[at])
    }

    /// OC_x(i, A, Δ_F, Δ_B) and its choice (NaN where never computed), None
    /// outside the memo.
    pub(super) fn oc_entry(
        &self,
        i: usize,
        x: usize,
        a: usize,
        df: usize,
        db: usize,
    ) -> Option<(f64, u16)> {
        self.forward
            .index(i, x, a, df, db)
            .map(|at| (self.forward.values[at], self.forward.choices[at]))
    }
}
