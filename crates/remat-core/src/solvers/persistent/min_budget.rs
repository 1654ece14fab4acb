//! M_low of the persistent schedules: the least budget, in exact bytes or
//! on a lattice's rounding, at which C_BP(1, L, ·) is finite. O(L³) each
//! (O(L²·K) more with menus of K options).

use super::{PersistentTable, SlotPolicy, Variant};
use crate::model::Chain;

/// M_low for persistent schedules: the smallest budget, in exact bytes, for
/// which C_BP(1, L, M − ω_a^0) is finite. O(L³), no discretization.
pub fn min_budget(chain: &Chain, variant: Variant) -> u64 {
    min_budget_holding(chain, variant, |x| x)
}

/// The smallest budget at which a table on `lattice`'s slot size is
/// feasible: [`min_budget`] with the held sizes rounded up to whole slots,
/// as the table holds them. Exact in bytes for that rounding, because the
/// lattice is anchored at the budget: the table is feasible at B if and only
/// if B is at least this. O(L³).
pub fn min_budget_on(chain: &Chain, variant: Variant, slot_bytes: u64) -> u64 {
    let u = slot_bytes.max(1);
    min_budget_holding(chain, variant, |x| x.div_ceil(u).saturating_mul(u))
}

/// The recursion of [`min_budget`], with `held` applied to the sizes that
/// stay resident while a sub-problem runs (a checkpoint, the ā of an F_all).
fn min_budget_holding(chain: &Chain, variant: Variant, held: impl Fn(u64) -> u64) -> u64 {
    let n = chain.len();
    let a = |l: usize| chain.output_bytes(l);
    let d = |l: usize| chain.gradient_bytes(l);
    // o_f∅ for F_ck and F_∅ (the table's terms); F_all's o_f is its option's.
    let ofn = |l: usize| chain.stage(l).nograd_forward_overhead();
    let sum = |xs: &[u64]| xs.iter().fold(0u64, |acc, &x| acc.saturating_add(x));
    // m_all^{s,t} of option k, and ā^{s,k}.
    let m_all = |s: usize, t: usize, k: usize| {
        let c = chain.stage(s).choice(k);
        sum(&[d(t), c.saved_bytes, c.forward_overhead]).max(chain.backward_bytes_of(s, k))
    };
    let abar = |s: usize, k: usize| chain.stage(s).choice(k).saved_bytes;
    let options = |s: usize| 0..chain.stage(s).option_count();
    // p[s][t]: min memory to process s..t, a^{s-1} excluded.
    let mut p = vec![vec![u64::MAX; n + 1]; n + 2];
    for s in (1..=n).rev() {
        for t in s..=n {
            if s == t {
                p[s][t] = options(s).map(|k| m_all(s, s, k)).min().unwrap_or(u64::MAX);
                continue;
            }
            let mut best = u64::MAX;
            if variant == Variant::Rotor {
                for k in options(s) {
                    let need = m_all(s, t, k).max(held(abar(s, k)).saturating_add(p[s + 1][t]));
                    best = best.min(need);
                }
            }
            // The F_∅^j of the split at `next`: s < j < next (the table's m_∅).
            let mut inner = 0u64;
            for next in s + 1..=t {
                if next >= s + 2 {
                    inner = inner.max(sum(&[a(next - 2), a(next - 1), ofn(next - 1)]));
                }
                let thr = sum(&[d(t), a(s), ofn(s)]).max(d(t).saturating_add(inner));
                let need = thr
                    .max(held(a(next - 1)).saturating_add(p[next][t]))
                    .max(p[s][next - 1]);
                best = best.min(need);
            }
            p[s][t] = best;
        }
    }
    a(0).saturating_add(p[1][n])
}

/// The least budget `solve` meets with this variant under `policy`, and
/// whether it is the exact M_low (a budget one byte less is infeasible).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinBudget {
    pub bytes: u64,
    /// True when `solve` at `bytes` ran on an exact lattice, so
    /// `bytes` = [`min_budget`]; false when rounding made it larger (then
    /// `bytes` is met, but a smaller budget may be met too).
    pub exact: bool,
}

/// The smallest budget that `solvers::solve` with this variant and these
/// knobs answers feasibly, found as the fixed point B = M_low(lattice(B)):
/// start at the exact M_low; while the lattice `solve` would use at B is not
/// feasible there, move B up to that lattice's own minimum
/// ([`min_budget_on`]). Each step is O(L³) and B only grows; on an exact
/// lattice the first step ends it. `cap` (M_high for rotor, whose planner
/// answers store-all there) ends the search; None if it ran 64 steps.
pub fn min_budget_met(
    chain: &Chain,
    variant: Variant,
    policy: SlotPolicy,
    slots: usize,
    max_table_bytes: u64,
    cap: Option<u64>,
) -> Option<MinBudget> {
    let exact = min_budget(chain, variant);
    let mut b = exact;
    for _ in 0..64 {
        if cap.is_some_and(|c| b >= c) {
            let c = cap.unwrap_or(b);
            return Some(MinBudget {
                bytes: c,
                exact: c == exact,
            });
        }
        let lattice = PersistentTable::lattice_for(chain, b, policy, slots, max_table_bytes);
        if lattice.exact() {
            return Some(MinBudget {
                bytes: b,
                exact: b == exact,
            });
        }
        let need = min_budget_on(chain, variant, lattice.slot_bytes);
        if need <= b {
            return Some(MinBudget {
                bytes: b,
                exact: b == exact,
            });
        }
        b = need;
    }
    None
}
