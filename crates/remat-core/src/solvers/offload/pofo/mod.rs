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
//! as in [`persistent`](crate::solvers::persistent), δ^{ℓ-1} included, so with no
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
//! [`offload::Tables`](super::Tables)). The one
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

mod backward;
mod forward;
mod grid;
mod kernel;
mod limits;
/// The slow oracle the DP is tested against (feature `reference`: the
/// crate's tests and benches only). It is test code, so it lives with the
/// tests; it stays `pofo::reference` because it reads pofo's own helpers.
#[cfg(any(test, feature = "reference"))]
#[path = "tests/reference.rs"]
pub mod reference;
mod table;
#[cfg(test)]
mod tests;

use backward::{Backward, PairLayout};
use forward::{Forward, OcState};
use grid::Grid;
use kernel::Kernel;
pub use limits::{resolution, table_bytes, validate, Resolution, MAX_SPLIT_STEPS};
use limits::{too_large, within_split_limit};
pub use table::Table;

use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::solvers::api::{Algorithm, Progress, SolveError};
use crate::solvers::parallel::Workers;

/// Which forward operations the DP may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// F_all and F_ck with recomputation (pofo).
    Full,
    /// F_all only: no recomputation (offload-only).
    OffloadOnly,
}

impl Mode {
    /// The mode `algorithm` runs this DP in; None for the algorithms that
    /// do not run it.
    pub fn of(algorithm: Algorithm) -> Option<Mode> {
        match algorithm {
            Algorithm::Pofo => Some(Mode::Full),
            Algorithm::OffloadOnly => Some(Mode::OffloadOnly),
            _ => None,
        }
    }

    /// The algorithm that runs this DP in this mode.
    pub fn algorithm(self) -> Algorithm {
        match self {
            Mode::Full => Algorithm::Pofo,
            Mode::OffloadOnly => Algorithm::OffloadOnly,
        }
    }
}

pub use crate::solvers::api::LossStep;

/// How the tables are filled. Nothing here changes a value or a plan: the
/// tables are the same to the bit on any number of threads, with either
/// kernel, and the cut only leaves out states no optimal path reaches.
#[derive(Clone, Copy, Debug)]
pub struct Filling {
    /// The threads a layer of either table is filled on.
    pub workers: Workers,
    /// The inner loops ([`Kernel::detect`] but in the kernel's own tests).
    kernel: Kernel,
    /// OC's cut (`find_cut`); off where every entry must be exact
    /// ([`Table`]).
    with_cut: bool,
}

impl Default for Filling {
    fn default() -> Filling {
        Filling::on(Workers::available())
    }
}

impl Filling {
    /// On `workers` threads, with this CPU's kernel and the cut.
    pub fn on(workers: Workers) -> Filling {
        Filling {
            workers,
            kernel: Kernel::detect(),
            with_cut: true,
        }
    }
}

/// What the DP returns for one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct PofoPlan {
    /// Compute operations and offloads; prefetches are placed by
    /// [`super::place_prefetches`] (their deadlines are in `needs`).
    pub ops: Vec<Op>,
    /// (index in `ops`, stage, tensor): the offloaded tensor must be back on
    /// the device before `ops[index]` runs.
    pub needs: Vec<(usize, usize, TensorKind)>,
    /// Index in `ops` of F_all^L: prefetches come after it (assumption (i)).
    pub loss_index: usize,
    /// OC_0(1, 0, 0, 0), the DP's time under assumption (iii).
    pub predicted_seconds: f64,
}

/// One decision of C_Δ: 0 infeasible, 1 F_all^i (or the leaf), 2 + k F_ck^i
/// with the next checkpoint a^{i+k}.
type Choice = u16;

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

/// The share of the progress bar that C_Δ's table fills; OC's states the rest.
const FILL_SHARE: f64 = 0.5;

impl Pofo {
    /// Builds C_Δ (the O(L³N²) part, with progress) and prepares OC, the
    /// tables filled as `filling` says (the same tables, to the bit,
    /// whatever it says; [`Filling::default`]: on every core this process
    /// may use, [`Workers::available`]).
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        chain: &Chain,
        mode: Mode,
        budget_bytes: u64,
        slots: usize,
        bandwidth: Option<f64>,
        max_table_bytes: u64,
        filling: Filling,
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
            workers: filling.workers,
            kernel: filling.kernel,
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
        if filling.with_cut {
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
