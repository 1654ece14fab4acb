//! Optimal persistent schedules: `rotor` and `revolve`.
//!
//! **Paper.** Beaumont, Eyraud-Dubois, Herrmann, Joly, Shilova, *Optimal
//! checkpointing for heterogeneous chains: how to train deep neural networks
//! with limited memory*, Inria research report RR-9302, 2019 (`docs/algorithms.md`).
//! `rotor` is Theorem 1 with Algorithms 1–2: C_BP(s, t, m) is the best time to
//! back-propagate stages s..t with a^{s-1} and δ^t resident and m slots free
//! besides a^{s-1}; either F_ck^s + F_∅ up to s'−1 then two sub-chains
//! (C_ck), or F_all^s, the sub-chain s+1..t, then B^s (C_all).
//! `revolve` is the same recursion restricted to the automatic-differentiation
//! model the report compares against (Section 5.3): only a^ℓ are checkpointed
//! and F_all^ℓ is always run right before B^ℓ, i.e. C_all only when s = t.
//!
//! **Accounting.** `docs/model.md`'s: B^ℓ holds δ^ℓ, ā^ℓ, δ^{ℓ-1} and its input at
//! once, so m_all^{s,t} = max(ω_δ^t + ω_ā^s + o_f^s, ω_δ^s + ω_ā^s + ω_δ^{s-1} + o_b^s).
//! F_all takes the recording forward's transient o_f; F_ck and F_∅ the
//! no-grad one o_f∅ (`forward_nograd_overhead_bytes`, o_f when not given),
//! in m_∅: ω_δ^t + ω_a^s + o_f∅^s and ω_δ^t + ω_a^{j-1} + ω_a^j + o_f∅^j
//! for the F_∅^j the split at s' runs, s < j < s' (the report's Theorem 1
//! takes every s < j < t, the same answer only when o_f∅ = o_f:
//! [`PersistentTable::m_none`]).
//! The initial δ^L counts against the budget, like a^0. o_b^s may be negative
//! (autograd frees δ^s and parts of ā^s while B^s runs); the second term is
//! [`Chain::backward_bytes`], rounded up as one sum.
//!
//! **No-grad forwards.** F_ck and F_∅ record no graph; where a chain gives
//! `forward_nograd_seconds`, the C_ck case sums those times (the forward
//! chain F_ck^s, F_∅^{s+1..s'-1}) and C_all keeps the recording u_f^s.
//!
//! **Discretization.** Memory is a [`Lattice`] anchored at the budget: index m
//! stands for exactly `budget − ω_a^0 − (M − m)·u` bytes. Only the sizes held
//! while a sub-problem runs (a checkpoint a^ℓ, the ā^s of an F_all) move m,
//! and they are rounded up to whole slots of u bytes; every other size (δ,
//! overheads, the two activations of an F_∅) enters one operation's own need
//! and is compared in exact bytes. So the table is exact when u divides every
//! held size, which [`SlotPolicy::Exact`] arranges whenever the table for
//! that u fits the size limit (u = their gcd: 64 MiB for the teaching chain,
//! 64 KiB for VGG-19). Otherwise the schedule is still valid in bytes and the
//! lattice states the worst case of the bytes rounding hid
//! ([`Lattice::lost_bytes`]). The rotor report instead cuts the budget into
//! 500 slots of ⌊budget/500⌋ bytes and rounds every size up, so its M_low
//! misses the exact one ([`SlotPolicy::Fixed`] keeps that unit).
//!
//! **Breakpoints.** The planner answers from [`StepTable`] instead
//! (`steps.rs`): each cell as the budgets in bytes where its optimum
//! changes, exact at every budget at once, with this table's values and
//! schedules on an exact lattice bit for bit; [`Table::build`] falls back
//! to this grid where the breakpoints would take more memory than it, and
//! says so. [`solve`] (one budget, for the offloading heuristics) stays on
//! the grid.
//!
//! **Complexity.** Building the table is O(L³·S) time and O(L²·S) memory
//! (S = slots, M + 1); reading out a schedule for any budget up to the table's is
//! O(L²) in the worst case, O(L) nodes. The table is laid out one row of S+1
//! values per (s, t), so the innermost loop (over m) runs over contiguous
//! memory and vectorizes.
//!
//! **Assumptions.** Persistent schedules only (a checkpoint stays until its
//! backward uses it); the report shows non-persistent ones can be faster on
//! contrived chains (Figure 2).

use super::api::{Options, Progress, SolveError};
use super::bounds::max_useful_budget;
use super::slots::lattice;
pub use super::slots::{Lattice, SlotPolicy};
use super::store_all;
use crate::model::Chain;
use crate::schedule::Op;
use read_out::Cells;
use serde::{Deserialize, Serialize};
use sizes::Sizes;

mod min_budget;
mod read_out;
pub mod refine;
mod sizes;
mod steps;
pub use min_budget::{min_budget, min_budget_met, min_budget_on, MinBudget};
pub use steps::{StepParts, StepStats, StepTable};

/// The largest table an exact lattice may take (the non-exact fallback of
/// `Options::slots` slots is bounded by `max_table_bytes` only).
pub const EXACT_TABLE_BYTES: u64 = 256 << 20;

/// The most (s, t, split) triples × slots an exact lattice may cost: about
/// a second natively (VGG-19 exact at M_high: 2 300 triples × 67 523 slots,
/// 0.14 s).
pub const EXACT_WORK: u128 = 1 << 30;

/// Which class of persistent schedules the table optimizes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// F_all may be run anywhere (rotor report, Theorem 1).
    Rotor,
    /// F_all only right before its B (the automatic-differentiation model).
    Revolve,
}

/// The memory grid of a table: which DP, and its lattice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableGrid {
    pub variant: Variant,
    pub lattice: Lattice,
}

/// How a table rounds the sizes it holds to whole slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Up: every schedule the table finds fits in bytes (the planner's).
    Up,
    /// Down: every schedule that fits in bytes fits the table, so its value
    /// at a budget is a lower bound on the optimum there; its schedules
    /// may not fit and are never read out ([`PersistentTable::bound_seconds`]).
    Down,
}

/// The table C_BP(s, t, m) for one chain and every budget up to `budget_bytes`.
pub struct PersistentTable {
    rounding: Rounding,
    n: usize,
    lattice: Lattice,
    /// M: the number of slots of the largest budget.
    max_slots: usize,
    /// Held sizes in slots, rounded as `rounding` says (capped at M+1,
    /// already infeasible).
    act: Vec<usize>,
    saved: Vec<usize>,
    /// Exact bytes and times, for each operation's own need.
    sizes: Sizes,
    /// The menu's options of each F_all^s (k ≥ 1; option 0 is `sizes`),
    /// empty for stages without one.
    menu: Vec<Vec<AllOption>>,
    row_start: Vec<usize>,
    table: Vec<f64>,
}

/// Option k ≥ 1 of F_all^s in a table's terms (`Stage::choice`): what it
/// holds, its own needs and B^s's time.
#[derive(Clone, Copy, Debug)]
pub(super) struct AllOption {
    pub option: u8,
    /// ω_ā^{s,k} in slots, rounded up (grid only; the breakpoints use bytes).
    pub held: usize,
    pub saved_bytes: u64,
    pub fwd_over: u64,
    /// [`Chain::backward_bytes_of`] for this option.
    pub bwd_need: u64,
    /// u_b^s plus the option's recomputation.
    pub backward: f64,
}

/// Every stage's menu as [`AllOption`]s, sizes held on `lattice` rounded
/// as `rounding` says (None: in bytes, held = 0).
pub(super) fn all_options(
    chain: &Chain,
    lattice: Option<(&Lattice, Rounding)>,
) -> Vec<Vec<AllOption>> {
    (0..=chain.len())
        .map(|l| {
            if l == 0 {
                return Vec::new();
            }
            let st = chain.stage(l);
            (1..st.option_count())
                .map(|k| {
                    let c = st.choice(k);
                    AllOption {
                        option: k as u8,
                        held: lattice.map_or(0, |(x, r)| held(x, r, c.saved_bytes)),
                        saved_bytes: c.saved_bytes,
                        fwd_over: c.forward_overhead,
                        bwd_need: chain.backward_bytes_of(l, k),
                        backward: c.backward_seconds,
                    }
                })
                .collect()
        })
        .collect()
}

/// `bytes` in slots of `lattice`, rounded as `rounding` says.
fn held(lattice: &Lattice, rounding: Rounding, bytes: u64) -> usize {
    match rounding {
        Rounding::Up => lattice.held(bytes),
        Rounding::Down => lattice.held_down(bytes),
    }
}

/// The option of a leaf (F_all^s then B^s) whose time `value` a table
/// holds: the first, in the fill's order (the classic one first, when it
/// `fits` with its u_b^s `classic`), that fits and takes that time. Both
/// tables' read-outs call it, so they name the same option.
fn leaf_option(
    forward: f64,
    classic: Option<f64>,
    menu: &[AllOption],
    fits: impl Fn(&AllOption) -> bool,
    value: f64,
) -> u8 {
    if classic.is_some_and(|backward| forward + backward == value) {
        return 0;
    }
    menu.iter()
        .find(|o| fits(o) && forward + o.backward == value)
        .map_or(0, |o| o.option)
}

/// One decision of Algorithm 2, for people and for the peak prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// F_all^s then B^s, with this option.
    Leaf {
        option: u8,
    },
    /// F_all^s (this option), s+1..t, then B^s.
    All {
        option: u8,
    },
    Checkpoint {
        next: usize,
    },
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

    /// The most slots M whose table for `n` stages fits `max_table_bytes`.
    pub fn max_slots(n: usize, max_table_bytes: u64) -> usize {
        let per_slot = Self::table_bytes(n, 0).max(1);
        ((max_table_bytes as u128 / per_slot).saturating_sub(1)).min(usize::MAX as u128) as usize
    }

    /// The most slots an exact lattice may have for `n` stages: its table
    /// within `max_table_bytes` and [`EXACT_TABLE_BYTES`], and its fill
    /// within [`EXACT_WORK`] cells × splits (L³/6 · S), so that exactness
    /// costs at most about a second and a quarter GiB, never the size limit.
    pub fn exact_max_slots(n: usize, max_table_bytes: u64) -> usize {
        let by_memory = Self::max_slots(n, max_table_bytes.min(EXACT_TABLE_BYTES));
        let n = n as u128;
        let triples = (n * (n + 1) * (n + 2) / 6).max(1);
        let by_work = (EXACT_WORK / triples).saturating_sub(1);
        by_memory.min(by_work.min(usize::MAX as u128) as usize)
    }

    /// The lattice `build` uses for `budget_bytes` (see [`SlotPolicy`]).
    pub fn lattice_for(
        chain: &Chain,
        budget_bytes: u64,
        policy: SlotPolicy,
        slots: usize,
        max_table_bytes: u64,
    ) -> Lattice {
        let max = Self::exact_max_slots(chain.len(), max_table_bytes);
        lattice(chain, budget_bytes, policy, slots, max)
    }

    /// Algorithm 1 on ⌊budget / slots⌋-byte slots ([`SlotPolicy::Fixed`]).
    pub fn build(
        chain: &Chain,
        variant: Variant,
        budget_bytes: u64,
        slots: usize,
        max_table_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<PersistentTable, SolveError> {
        Self::build_with(
            chain,
            variant,
            budget_bytes,
            SlotPolicy::Fixed,
            slots,
            max_table_bytes,
            progress,
        )
    }

    /// [`build_with`](Self::build_with) on `options`' lattice: its slot
    /// policy, slots and table limit.
    pub fn build_for(
        chain: &Chain,
        variant: Variant,
        budget_bytes: u64,
        options: &Options,
        progress: &mut Progress<'_>,
    ) -> Result<PersistentTable, SolveError> {
        let (policy, slots) = (options.slot_policy, options.slots);
        Self::build_with(
            chain,
            variant,
            budget_bytes,
            policy,
            slots,
            options.max_table_bytes,
            progress,
        )
    }

    /// Algorithm 1: fills C_BP(s, t, m) for all 1 ≤ s ≤ t ≤ L and m ≤ M, on
    /// the lattice `policy` picks for `budget_bytes`.
    pub fn build_with(
        chain: &Chain,
        variant: Variant,
        budget_bytes: u64,
        policy: SlotPolicy,
        slots: usize,
        max_table_bytes: u64,
        progress: &mut Progress<'_>,
    ) -> Result<PersistentTable, SolveError> {
        if slots == 0 {
            return Err(SolveError::BadOption("slots: must be at least 1".into()));
        }
        let n = chain.len();
        let lattice = Self::lattice_for(chain, budget_bytes, policy, slots, max_table_bytes);
        let need = Self::table_bytes(n, lattice.slots);
        if need > max_table_bytes as u128 {
            return Err(SolveError::TooLarge(format!(
                "slots: the table for {n} stages × {} slots of {} needs {} (limit {}); use fewer --slots",
                lattice.slots,
                crate::model::units::format_bytes(lattice.slot_bytes),
                crate::model::units::format_bytes(need.min(u64::MAX as u128) as u64),
                crate::model::units::format_bytes(max_table_bytes)
            )));
        }
        let grid = TableGrid { variant, lattice };
        Self::filled(chain, grid, Rounding::Up, progress)
    }

    /// The table on `grid` with sizes rounded *down*: its value at a budget
    /// is at most the optimum of the persistent class there (issue 44's
    /// certificate, [`bound_seconds`](Self::bound_seconds)). Same cost as
    /// the planner's table on that grid.
    pub fn build_lower_bound(
        chain: &Chain,
        grid: TableGrid,
        progress: &mut Progress<'_>,
    ) -> Result<PersistentTable, SolveError> {
        Self::filled(chain, grid, Rounding::Down, progress)
    }

    fn filled(
        chain: &Chain,
        grid: TableGrid,
        rounding: Rounding,
        progress: &mut Progress<'_>,
    ) -> Result<PersistentTable, SolveError> {
        let mut t = PersistentTable::empty(chain, grid, rounding);
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
    fn empty(chain: &Chain, grid: TableGrid, rounding: Rounding) -> PersistentTable {
        let n = chain.len();
        let lattice = grid.lattice;
        let sizes = Sizes::of(chain, grid.variant);
        let on_grid = |bytes: &[u64]| -> Vec<usize> {
            bytes.iter().map(|&x| held(&lattice, rounding, x)).collect()
        };
        let mut row_start = vec![0usize; n + 2];
        for s in 1..=n {
            row_start[s + 1] = row_start[s] + (n - s + 1);
        }
        PersistentTable {
            rounding,
            n,
            lattice,
            max_slots: lattice.slots,
            act: on_grid(&sizes.act_bytes),
            saved: on_grid(&sizes.saved_bytes),
            sizes,
            menu: all_options(chain, Some((&lattice, rounding))),
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
            variant: self.sizes.variant,
            lattice: self.lattice,
        }
    }

    /// Rebuilds a table from [`into_values`](Self::into_values) for the same chain.
    pub fn from_values(
        chain: &Chain,
        grid: TableGrid,
        values: Vec<f64>,
    ) -> Result<PersistentTable, SolveError> {
        let l = grid.lattice;
        let consistent = l.slot_bytes > 0
            && (l.slots as u128) * (l.slot_bytes as u128) <= l.free_bytes as u128
            && Self::table_bytes(chain.len(), l.slots) / 8 == values.len() as u128;
        if !consistent {
            return Err(SolveError::BadOption(format!(
                "table: {} values do not fit a {}-stage chain on {} slots",
                values.len(),
                chain.len(),
                l.slots
            )));
        }
        let mut t = PersistentTable::empty(chain, grid, Rounding::Up);
        let expected = t.row_start[t.n + 1] * (t.max_slots + 1);
        if values.len() != expected {
            return Err(SolveError::BadOption(format!(
                "table: {} values do not fit a {}-stage chain on {} slots (expected {expected})",
                values.len(),
                t.n,
                grid.lattice.slots
            )));
        }
        t.table = values;
        Ok(t)
    }

    fn row(&self, s: usize, t: usize) -> usize {
        (self.row_start[s] + (t - s)) * (self.max_slots + 1)
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
        // Per column of the block: where its computed part ends.
        let mut limits = [0usize; COLUMNS];
        let mut done = 0usize;
        let mut t0 = 1;
        while t0 <= n {
            let t1 = (t0 + COLUMNS - 1).min(n);
            for s in (1..=t1).rev() {
                let first = t0.max(s);
                for t in first..=t1 {
                    limits[t - t0] = self.start_row(s, t, &mut sat, &mut tail, &mut best[t - t0]);
                }
                let mut f = 0.0;
                // max over the F_∅^j of this split, s < j < next.
                let mut inner = 0u64;
                for next in s + 1..=t1 {
                    f += self.sizes.forward_nograd[next - 1];
                    if next >= s + 2 {
                        inner = inner.max(self.none_term(next - 1));
                    }
                    let w = self.act[next - 1];
                    let left = self.row_start[s] + (next - 1 - s);
                    if next > first {
                        // All splits of (s, next−1) are done: it is final.
                        self.finish_row(
                            s,
                            next - 1,
                            tail[left],
                            limits[next - 1 - t0],
                            &best[next - 1 - t0],
                        );
                    }
                    let b = self.row(s, next - 1);
                    for t in next.max(first)..=t1 {
                        let hi = limits[t - t0];
                        let lo = self.m_none(s, t, inner).max(w);
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
                self.finish_row(s, t1, tail[last], limits[t1 - t0], &best[t1 - t0]);
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
        let fb = self.sizes.forward[s] + self.sizes.backward[s];
        if self.sizes.variant == Variant::Rotor {
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
            // Only an F_all before a sub-problem holds ā^s (index − w ≥ 0);
            // a leaf's ā^s is part of its own need, compared in bytes.
            let held = if s == t { 0 } else { self.saved[s] };
            let lo = self.m_all(s, t).max(held).min(hi);
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
            // The menu's options: the same case with another ā^s and B^s.
            // They never beat the tail (u_b^{s,k} ≥ u_b^s), so only below hi.
            for o in &self.menu[s] {
                let fb = self.sizes.forward[s] + o.backward;
                let held = if s == t { 0 } else { o.held };
                let lo = self.m_all_with(t, o).max(held).min(hi);
                if s == t {
                    lower_portable(&mut best[lo..hi], fb);
                } else if lo < hi {
                    let w = o.held;
                    let sub = self.row(s + 1, t);
                    let sub = &self.table[sub + lo - w..sub + hi - w];
                    for (v, c) in best[lo..hi].iter_mut().zip(sub) {
                        let c = fb + c;
                        if c < *v {
                            *v = c;
                        }
                    }
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

    /// The largest budget this table answers (its lattice's top, a^0 included).
    pub fn budget_bytes(&self) -> u64 {
        self.lattice.free_bytes + self.sizes.act_bytes[0]
    }

    pub fn slot_bytes(&self) -> u64 {
        self.lattice.slot_bytes
    }

    pub fn lattice(&self) -> Lattice {
        self.lattice
    }

    /// Worst case of the bytes of `budget_bytes` this table's answer may
    /// waste: the lattice's rounding plus the budget's distance down to the
    /// nearest lattice point. 0 means the answer is exact.
    pub fn lost_bytes(&self, budget_bytes: u64) -> u64 {
        let free = budget_bytes.saturating_sub(self.sizes.act_bytes[0]);
        match self.lattice.index_for(free) {
            Some(m) => self.lattice.lost_bytes + (free - self.lattice.bytes_at(m).min(free)),
            None => self.lattice.lost_bytes + free,
        }
    }

    pub fn slots(&self) -> usize {
        self.max_slots
    }

    /// Memory the table holds.
    pub fn memory_bytes(&self) -> usize {
        self.table.len() * std::mem::size_of::<f64>()
    }

    /// The lattice index for `budget_bytes`: a^0 taken off exactly, then
    /// the highest lattice point at most the bytes left.
    fn top_slots(&self, budget_bytes: u64) -> Option<usize> {
        let free = budget_bytes.checked_sub(self.sizes.act_bytes[0])?;
        self.lattice.index_for(free)
    }

    /// The DP's best time for `budget_bytes`, or None if infeasible on this grid.
    pub fn best_seconds(&self, budget_bytes: u64) -> Option<f64> {
        let m = self.top_slots(budget_bytes)?;
        let v = self.table[self.row(1, self.n) + m];
        v.is_finite().then_some(v)
    }

    /// A lower bound on the best persistent schedule's time at
    /// `budget_bytes`, from a [`Rounding::Down`] table or an exact lattice
    /// (where rounding down changes nothing): read at the lowest index with
    /// at least the budget's bytes. None: no schedule fits there, so none
    /// fits in bytes either; or this table rounds up on a lattice that is
    /// not exact.
    pub fn bound_seconds(&self, budget_bytes: u64) -> Option<f64> {
        if self.rounding != Rounding::Down && !self.lattice.exact() {
            return None;
        }
        self.read_bound(self.top_row(), budget_bytes)
    }

    /// C(1, L, ·): the row every budget is read from, one value per slot
    /// count (what a lower bound keeps of its table: [`Table::certify`]).
    pub fn top_row(&self) -> &[f64] {
        let start = self.row(1, self.n);
        &self.table[start..start + self.max_slots + 1]
    }

    /// A lower bound read from `row`, the [`top_row`](Self::top_row) of a
    /// [`Rounding::Down`] table on this table's grid, as
    /// [`bound_seconds`](Self::bound_seconds) reads its own.
    pub fn read_bound(&self, row: &[f64], budget_bytes: u64) -> Option<f64> {
        let free = budget_bytes.checked_sub(self.sizes.act_bytes[0])?;
        let v = *row.get(self.lattice.index_at_least(free))?;
        v.is_finite().then_some(v)
    }

    /// Algorithm 2: the optimal persistent schedule for `budget_bytes` (at
    /// most the table's budget; larger budgets are answered as the table's).
    /// None on a [`Rounding::Down`] table, whose schedules may not fit.
    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> Option<PersistentPlan> {
        if self.rounding == Rounding::Down {
            return None;
        }
        let m = self.top_slots(budget_bytes)?;
        let predicted_seconds = self.table[self.row(1, self.n) + m];
        if !predicted_seconds.is_finite() {
            return None;
        }
        let mut ops = Vec::with_capacity(4 * self.n);
        let peak = read_out::read_out(self, chain, 1, self.n, m, &mut ops);
        Some(PersistentPlan {
            ops,
            predicted_seconds,
            predicted_peak_bytes: chain.output_bytes(0) + peak,
        })
    }
}

impl read_out::Cells for PersistentTable {
    type Memory = usize;
    fn value(&self, s: usize, t: usize, m: usize) -> f64 {
        self.table[self.row(s, t) + m]
    }
    fn sizes(&self) -> &Sizes {
        &self.sizes
    }
    fn menu(&self, s: usize) -> &[AllOption] {
        &self.menu[s]
    }
    /// The first index whose bytes hold it (exact bytes).
    fn on_axis(&self, bytes: u64) -> usize {
        self.lattice.need(bytes)
    }
    fn held_by_forward_all(&self, s: usize, k: usize) -> usize {
        match k {
            0 => self.saved[s],
            _ => self.menu[s][k - 1].held,
        }
    }
    fn held_by_checkpoint(&self, next: usize) -> usize {
        self.act[next - 1]
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

/// How many cells a relax updates: the shortest slice's.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
fn relax_len(best: &[f64], a: &[f64], b: &[f64]) -> usize {
    best.len().min(a.len()).min(b.len())
}

/// The cells a vector loop left, from `done` on, one at a time.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
fn relax_rest(best: &mut [f64], a: &[f64], b: &[f64], f: f64, done: usize) {
    let n = relax_len(best, a, b);
    relax_portable(&mut best[done..n], &a[done..n], &b[done..n], f);
}

/// The same with explicit AVX2: auto-vectorized code turns the conditional
/// update into masked stores (vmaskmovpd), which are microcoded on AMD and
/// made the table 3× slower than plain loads, adds, a min and a store.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn relax_avx2(best: &mut [f64], a: &[f64], b: &[f64], f: f64) {
    use std::arch::x86_64::*;
    let chunks = relax_len(best, a, b) / 4;
    let fv = _mm256_set1_pd(f);
    let (pv, pa, pb) = (best.as_mut_ptr(), a.as_ptr(), b.as_ptr());
    for i in 0..chunks {
        let k = 4 * i;
        // SAFETY: k + 4 ≤ 4 · chunks, within all three slices.
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
    relax_rest(best, a, b, f, 4 * chunks);
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
    let n = relax_len(best, a, b);
    let fv = f64x2_splat(f);
    let lanes = (best[..n].chunks_exact_mut(2))
        .zip(a.chunks_exact(2))
        .zip(b.chunks_exact(2));
    for ((v, x), y) in lanes {
        // SAFETY: each chunk is two f64 (16 bytes); v128 loads and stores
        // need no alignment.
        unsafe {
            let sum = f64x2_add(fv, v128_load(x.as_ptr().cast()));
            let c = f64x2_add(sum, v128_load(y.as_ptr().cast()));
            let old = v128_load(v.as_ptr().cast());
            // pmin(old, c) = c < old ? c : old, exactly the scalar rule.
            v128_store(v.as_mut_ptr().cast(), f64x2_pmin(old, c));
        }
    }
    relax_rest(best, a, b, f, n / 2 * 2);
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

/// Rotor's class contains store-all: its time Σ u and its peak M_high, to
/// check exactly where the slot grid would round (None for revolve, whose
/// model keeps F_all right before B).
pub fn store_all_point(chain: &Chain, variant: Variant) -> Option<(f64, u64)> {
    (variant == Variant::Rotor).then(|| (chain.sequential_seconds(), max_useful_budget(chain)))
}

/// Whether store-all (`store_all`, from [`store_all_point`]) answers
/// `budget_bytes` instead of the table: it fits and is faster than the
/// table's best (`table_seconds`, None when the table has no schedule).
pub fn store_all_wins(
    store_all: Option<(f64, u64)>,
    table_seconds: Option<f64>,
    budget_bytes: u64,
) -> bool {
    store_all.is_some_and(|(seconds, peak)| {
        peak <= budget_bytes && seconds < table_seconds.unwrap_or(f64::INFINITY)
    })
}

/// `from_table`, a table's answer at `budget_bytes`, or store-all's where it
/// wins ([`store_all_wins`]); the flag says store-all answered.
pub fn or_store_all(
    from_table: Option<PersistentPlan>,
    chain: &Chain,
    budget_bytes: u64,
    store_all: Option<(f64, u64)>,
) -> Option<(PersistentPlan, bool)> {
    let table_seconds = from_table.as_ref().map(|p| p.predicted_seconds);
    match store_all {
        Some((seconds, peak)) if store_all_wins(store_all, table_seconds, budget_bytes) => Some((
            PersistentPlan {
                ops: store_all::schedule(chain),
                predicted_seconds: seconds,
                predicted_peak_bytes: peak,
            },
            true,
        )),
        _ => from_table.map(|p| (p, false)),
    }
}

/// What a persistent planner answers from: the breakpoint table, exact in
/// bytes at every budget, or the grid table where the breakpoints would
/// take more memory than the grid's (or where the grid is asked for:
/// [`SlotPolicy::Fixed`]).
pub enum Table {
    Steps(StepTable),
    Grid {
        table: PersistentTable,
        /// Why the breakpoints were given up, when they were.
        fallback: Option<String>,
        /// C(1, L, ·) of the same grid with sizes rounded down, where the
        /// lattice is not exact: the certificate's lower bound at every
        /// budget (issue 44; the rest of that table is dropped).
        bound: Option<Vec<f64>>,
    },
}

/// A [`Table`] taken apart ([`Table::into_parts`]) to move it between
/// threads: the breakpoints, or the grid's values with why the
/// breakpoints were given up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TableParts {
    Steps(StepParts),
    Grid {
        grid: TableGrid,
        values: Vec<f64>,
        fallback: Option<String>,
        /// The certificate's row ([`Table::certify`]), when built.
        #[serde(default)]
        bound: Option<Vec<f64>>,
    },
}

impl TableParts {
    pub fn variant(&self) -> Variant {
        match self {
            TableParts::Steps(p) => p.variant,
            TableParts::Grid { grid, .. } => grid.variant,
        }
    }
}

impl Table {
    pub fn into_parts(self) -> TableParts {
        match self {
            Table::Steps(t) => TableParts::Steps(t.into_parts()),
            Table::Grid {
                table,
                fallback,
                bound,
            } => {
                let (grid, values) = table.into_values();
                TableParts::Grid {
                    grid,
                    values,
                    fallback,
                    bound,
                }
            }
        }
    }

    /// Rebuilds the table of [`into_parts`](Self::into_parts) for the same chain.
    pub fn from_parts(chain: &Chain, parts: TableParts) -> Result<Table, SolveError> {
        Ok(match parts {
            TableParts::Steps(p) => Table::Steps(StepTable::from_parts(chain, p)?),
            TableParts::Grid {
                grid,
                values,
                fallback,
                bound,
            } => {
                let table = PersistentTable::from_values(chain, grid, values)?;
                if bound
                    .as_ref()
                    .is_some_and(|row| row.len() != table.top_row().len())
                {
                    return Err(SolveError::BadOption(format!(
                        "table: a lower bound of {} values for {} slots",
                        bound.map_or(0, |row| row.len()),
                        table.slots()
                    )));
                }
                Table::Grid {
                    table,
                    fallback,
                    bound,
                }
            }
        })
    }

    /// The grid table, None for the breakpoints.
    pub fn grid(&self) -> Option<&PersistentTable> {
        match self {
            Table::Steps(_) => None,
            Table::Grid { table, .. } => Some(table),
        }
    }

    /// Why the breakpoints were given up, when they were.
    pub fn fallback(&self) -> Option<&str> {
        match self {
            Table::Grid {
                fallback: Some(why),
                ..
            } => Some(why),
            _ => None,
        }
    }

    /// Under [`SlotPolicy::Exact`] the breakpoint table, unless it would
    /// take more than the grid table of `options.slots` slots (or
    /// `options.max_table_bytes`); otherwise, and under
    /// [`SlotPolicy::Fixed`], the grid for `budget_bytes`
    /// ([`PersistentTable::build_with`]).
    pub fn build(
        chain: &Chain,
        variant: Variant,
        budget_bytes: u64,
        options: &Options,
        progress: &mut Progress<'_>,
    ) -> Result<Table, SolveError> {
        let mut fallback = None;
        if options.slot_policy == SlotPolicy::Exact && options.slots > 0 {
            let grid = PersistentTable::table_bytes(chain.len(), options.slots);
            let limit = grid.min(options.max_table_bytes as u128) as u64;
            match StepTable::build(chain, variant, limit, progress)? {
                Some(t) => return Ok(Table::Steps(t)),
                None => fallback = Some(format!(
                    "not exact: its breakpoints pass {} (the {}-slot grid's table{}; counted, or projected from its shorter sub-chains), so on the grid",
                    crate::model::units::format_bytes(limit),
                    options.slots,
                    if (limit as u128) < grid {
                        ", capped at --max-table"
                    } else {
                        ""
                    }
                )),
            }
        }
        let table = PersistentTable::build_for(chain, variant, budget_bytes, options, progress)?;
        Ok(Table::Grid {
            table,
            fallback,
            bound: None,
        })
    }

    /// Adds the certificate's lower bound where the answer may not be
    /// exact: where rounding may hide bytes, the same grid rounded down
    /// bounds the optimum from below (as long to build as the grid). A
    /// no-op on the breakpoints and on an exact lattice, which are their
    /// own bound.
    pub fn certify(
        &mut self,
        chain: &Chain,
        progress: &mut Progress<'_>,
    ) -> Result<(), SolveError> {
        if let Table::Grid { table, bound, .. } = self {
            if bound.is_none() && !table.lattice().exact() {
                let lower = PersistentTable::build_lower_bound(chain, table.grid(), progress)?;
                *bound = Some(lower.top_row().to_vec());
            }
        }
        Ok(())
    }

    /// A time no persistent schedule beats at `budget_bytes`: the answer
    /// itself where it is exact (breakpoints, or an exact lattice at a
    /// lattice point), else the rounded-down grid's value (an exact
    /// lattice is its own); None where neither is known (a grid rebuilt
    /// from parts, not exact) or nothing fits.
    pub fn lower_bound_seconds(&self, budget_bytes: u64) -> Option<f64> {
        match self {
            Table::Steps(t) => t.best_seconds(budget_bytes),
            Table::Grid {
                table,
                bound: Some(row),
                ..
            } => table.read_bound(row, budget_bytes),
            Table::Grid { table, .. } => table.bound_seconds(budget_bytes),
        }
    }

    pub fn plan(&self, chain: &Chain, budget_bytes: u64) -> Option<PersistentPlan> {
        match self {
            Table::Steps(t) => t.plan(chain, budget_bytes),
            Table::Grid { table, .. } => table.plan(chain, budget_bytes),
        }
    }

    pub fn best_seconds(&self, budget_bytes: u64) -> Option<f64> {
        match self {
            Table::Steps(t) => t.best_seconds(budget_bytes),
            Table::Grid { table, .. } => table.best_seconds(budget_bytes),
        }
    }

    /// Worst case of the bytes of `budget_bytes` the answer may waste
    /// (0: exact; always 0 for the breakpoints).
    pub fn lost_bytes(&self, budget_bytes: u64) -> u64 {
        match self {
            Table::Steps(_) => 0,
            Table::Grid { table, .. } => table.lost_bytes(budget_bytes),
        }
    }

    /// Memory the table holds.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Table::Steps(t) => t.memory_bytes(),
            Table::Grid { table, .. } => table.memory_bytes(),
        }
    }

    /// The answer at `budget_bytes`, or store-all's where it wins.
    pub fn plan_or_store_all(
        &self,
        chain: &Chain,
        budget_bytes: u64,
        store_all: Option<(f64, u64)>,
    ) -> Option<(PersistentPlan, bool)> {
        or_store_all(
            self.plan(chain, budget_bytes),
            chain,
            budget_bytes,
            store_all,
        )
    }

    /// "exact: 1234 breakpoints", "exact: 6 slots of 64 MiB", or "500 slots
    /// of 1 MiB; rounding may hide up to 2 MiB (0.5% of the budget)", with
    /// the reason the breakpoints were given up, if they were.
    pub fn describe(&self, budget_bytes: u64) -> String {
        let table = self.describe_table(budget_bytes);
        match self.fallback() {
            Some(why) => format!("{table}; {why}"),
            None => table,
        }
    }

    /// [`describe`](Self::describe) without the reason of a fallback.
    pub fn describe_table(&self, budget_bytes: u64) -> String {
        use crate::model::units::format_bytes;
        let table = match self {
            Table::Steps(t) => {
                let s = t.stats();
                return format!(
                    "exact: {} breakpoints in bytes, {} in C(1, L)",
                    s.total, s.top
                );
            }
            Table::Grid { table, .. } => table,
        };
        let slots = format!(
            "{} slots of {}",
            table.slots(),
            format_bytes(table.slot_bytes())
        );
        let certified = self
            .lower_bound_seconds(budget_bytes)
            .zip(table.best_seconds(budget_bytes));
        match table.lost_bytes(budget_bytes) {
            0 => format!("exact: {slots}"),
            _ if certified.is_some() => {
                let (bound, seconds) = certified.unwrap_or_default();
                format!(
                    "{slots}; within {} of the optimum (none is faster than {})",
                    format_gap(seconds, bound),
                    crate::model::units::format_seconds(bound)
                )
            }
            lost => format!(
                "{slots}; rounding may hide up to {} ({:.2}% of the budget)",
                format_bytes(lost),
                100.0 * lost as f64 / budget_bytes.max(1) as f64
            ),
        }
    }
}

/// How far `seconds` is above a lower `bound` on the optimum, as a
/// fraction of the bound (0 when it meets it, or when the bound is 0): the
/// one definition of a certificate's gap (the CLI, the page, the pipeline
/// plans).
pub fn gap(seconds: f64, bound: f64) -> f64 {
    if bound > 0.0 {
        (seconds / bound - 1.0).max(0.0)
    } else {
        0.0
    }
}

/// `seconds` over a lower bound, as people read it: "0.31 %", "0 %".
pub fn format_gap(seconds: f64, bound: f64) -> String {
    let gap = gap(seconds, bound);
    // Below 1e-9 the difference is float rounding (a bound taken a hair
    // low so that rounding never lifts it above a schedule), not time.
    if gap < 1e-9 {
        "0 %".to_string()
    } else if gap < 0.0001 {
        "0.01 %".to_string()
    } else {
        format!("{:.2} %", 100.0 * gap)
    }
}

/// The schedule `variant` gives for exactly `budget_bytes` under `options`
/// on the grid (a table built for this budget, store-all where it wins),
/// for the algorithms that run rotor inside them (pofo's comparison,
/// opportunist's groups, autocapper's M'). It stays on the grid, exact
/// wherever the lattice at this budget is: the breakpoint table answers
/// every budget at once, which a single budget does not need, and costs
/// more where it is large. None when no persistent schedule meets the
/// budget.
pub fn solve(
    chain: &Chain,
    variant: Variant,
    budget_bytes: u64,
    options: &Options,
) -> Result<Option<PersistentPlan>, SolveError> {
    let mut progress = super::api::no_progress();
    let table = PersistentTable::build_for(chain, variant, budget_bytes, options, &mut progress)?;
    let store_all = store_all_point(chain, variant);
    let from_table = table.plan(chain, budget_bytes);
    Ok(or_store_all(from_table, chain, budget_bytes, store_all).map(|(p, _)| p))
}
