//! One table for every budget (see the module's doc): built once on an
//! absolute grid, read out at any budget below its top.

use super::forward::OcState;
use super::{Filling, LossStep, Mode, Pofo, PofoPlan};
use crate::model::Chain;
use crate::solvers::api::{Progress, SolveError};
use crate::solvers::parallel::Workers;
use crate::solvers::slots::grid;

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
    pub(super) dp: Pofo,
    pub(super) slot_bytes: u64,
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
        let filling = Filling {
            with_cut: false,
            ..Filling::on(Workers::available())
        };
        let mut dp = Pofo::build(
            chain,
            mode,
            top_budget_bytes,
            slots,
            bandwidth,
            max_table_bytes,
            filling,
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
    pub(super) fn first(&self, budget_bytes: u64) -> Option<OcState> {
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
