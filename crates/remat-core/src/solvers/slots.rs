//! A chain on a memory grid: sizes in slots, rounded up so a schedule that
//! fits in slots fits in bytes, and times, indexed by stage 0..=L (stage 0
//! is the input batch: a^0 and δ^0, no ā, no time).

use crate::model::{Chain, Stage};
use serde::{Deserialize, Serialize};

/// ⌊budget / slots⌋ bytes a slot (at least 1), and how many of them fit.
pub(crate) fn grid(budget_bytes: u64, slots: usize) -> (u64, usize) {
    let slot_bytes = (budget_bytes / slots as u64).max(1);
    (
        slot_bytes,
        ((budget_bytes / slot_bytes) as usize).min(slots),
    )
}

pub(crate) struct SlotSizes {
    /// ω_a^ℓ.
    pub a: Vec<usize>,
    /// ω_ā^ℓ (0 for ℓ = 0).
    pub abar: Vec<usize>,
    /// ω_δ^ℓ.
    pub d: Vec<usize>,
    /// o_f^ℓ, F_all^ℓ's transient (never negative in a valid chain).
    pub of: Vec<usize>,
    /// o_f∅^ℓ, the transient of F_ck^ℓ and F_∅^ℓ
    /// ([`Stage::nograd_forward_overhead`]).
    pub ofn: Vec<usize>,
    /// What B^ℓ needs besides its input: ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ
    /// ([`Chain::backward_bytes`]), rounded up as one sum so that a negative
    /// o_b^ℓ needs no signed arithmetic in the DPs (0 for ℓ = 0).
    pub b: Vec<usize>,
    /// u_f^ℓ, u_b^ℓ in seconds.
    pub uf: Vec<f64>,
    pub ub: Vec<f64>,
    /// u_f^ℓ of F_ck^ℓ and F_∅^ℓ, which record no graph
    /// ([`Stage::nograd_forward_seconds`]).
    pub ufn: Vec<f64>,
}

impl SlotSizes {
    /// Sizes in slots of `slot_bytes`, capped at `cap` (anything that large
    /// is already infeasible, and the cap keeps sums from overflowing).
    pub fn new(chain: &Chain, slot_bytes: u64, cap: usize) -> SlotSizes {
        let n = chain.len();
        let slot_bytes = slot_bytes.max(1);
        let in_slots = |b: u64| b.div_ceil(slot_bytes).min(cap as u64) as usize;
        let per_stage = |f: fn(&Stage) -> u64| -> Vec<usize> {
            (0..=n)
                .map(|l| {
                    if l == 0 {
                        0
                    } else {
                        in_slots(f(chain.stage(l)))
                    }
                })
                .collect()
        };
        let times = |f: fn(&Stage) -> f64| -> Vec<f64> {
            (0..=n)
                .map(|l| if l == 0 { 0.0 } else { f(chain.stage(l)) })
                .collect()
        };
        SlotSizes {
            a: (0..=n).map(|l| in_slots(chain.output_bytes(l))).collect(),
            abar: per_stage(|s| s.saved_bytes),
            d: (0..=n).map(|l| in_slots(chain.gradient_bytes(l))).collect(),
            of: per_stage(|s| s.forward_overhead()),
            ofn: per_stage(|s| s.nograd_forward_overhead()),
            b: (0..=n)
                .map(|l| {
                    if l == 0 {
                        0
                    } else {
                        in_slots(chain.backward_bytes(l))
                    }
                })
                .collect(),
            uf: times(|s| s.forward_seconds),
            ub: times(|s| s.backward_seconds),
            ufn: times(|s| s.nograd_forward_seconds()),
        }
    }
}

/// How the persistent DPs (`rotor`, `revolve`) cut a budget into slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotPolicy {
    /// Exact whenever the chain's sizes allow it: the slot is the gcd of the
    /// sizes a DP holds across sub-problems, if the table for that many slots
    /// fits `Options::max_table_bytes`; otherwise the unit of at most
    /// `Options::slots` slots that loses the fewest bytes to rounding.
    #[default]
    Exact,
    /// ⌊budget / slots⌋ bytes a slot, as the rotor report and POFO (and the
    /// same unit as POFO's grid for that budget: for side-by-side sweeps).
    Fixed,
}

/// A memory lattice anchored at one budget.
///
/// The DP's memory index m ∈ 0..=M stands for exactly
/// `free_bytes − (M − m) · slot_bytes` bytes free besides a^0, so the
/// budget itself is a lattice point (no rounding of the budget). Sizes a
/// sub-problem *holds* while another runs (a checkpoint a^ℓ, the ā^s of an
/// F_all) move m and are rounded up to whole slots; sizes that appear only
/// in one operation's own need (δ^t, overheads, a^{j-1} + a^j of an F_∅)
/// are compared in exact bytes. Hence the DP is exact when every held size
/// is a multiple of the slot, and otherwise conservative: a schedule found
/// fits in bytes, and at most [`lost_bytes`](Self::lost_bytes) of the budget
/// are wasted by rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lattice {
    /// u: bytes a slot.
    pub slot_bytes: u64,
    /// M: slots of the top of the lattice.
    pub slots: usize,
    /// Bytes free besides a^0 at the top (the budget minus ω_a^0).
    pub free_bytes: u64,
    /// Worst case of the bytes rounding hides: Σ over held sizes x ≤ the
    /// budget of ⌈x/u⌉·u − x. 0 means the DP is exact on this lattice.
    pub lost_bytes: u64,
}

impl Lattice {
    /// Whether the DP on this lattice answers exactly as in bytes.
    pub fn exact(&self) -> bool {
        self.lost_bytes == 0
    }

    /// Bytes free at index 0 (`free_bytes mod u` when the lattice is full).
    fn floor_bytes(&self) -> u64 {
        self.free_bytes - self.slots as u64 * self.slot_bytes
    }

    /// The smallest index whose bytes reach `bytes`; M + 1 if none does.
    pub fn need(&self, bytes: u64) -> usize {
        if bytes > self.free_bytes {
            return self.slots + 1;
        }
        let r = self.floor_bytes();
        if bytes <= r {
            0
        } else {
            (bytes - r).div_ceil(self.slot_bytes) as usize
        }
    }

    /// A held size in slots (rounded up), capped at M + 1.
    pub fn held(&self, bytes: u64) -> usize {
        bytes.div_ceil(self.slot_bytes).min(self.slots as u64 + 1) as usize
    }

    /// A held size in slots rounded *down*, capped at M + 1: a table that
    /// holds sizes so admits every schedule that fits in bytes, so its
    /// value is a lower bound on the optimum (issue 44's certificate).
    pub fn held_down(&self, bytes: u64) -> usize {
        (bytes / self.slot_bytes).min(self.slots as u64 + 1) as usize
    }

    /// The lowest index whose bytes are at least `free` (M when `free` is
    /// above the top): a lower-bound table read there never has fewer
    /// bytes than the budget gives.
    pub fn index_at_least(&self, free: u64) -> usize {
        if free >= self.free_bytes {
            return self.slots;
        }
        let short = (self.free_bytes - free) / self.slot_bytes;
        self.slots - (short as usize).min(self.slots)
    }

    /// The highest index at most `free` bytes, or None below index 0.
    pub fn index_for(&self, free: u64) -> Option<usize> {
        if free >= self.free_bytes {
            return Some(self.slots);
        }
        let short = (self.free_bytes - free).div_ceil(self.slot_bytes);
        (self.slots as u64).checked_sub(short).map(|m| m as usize)
    }

    /// The bytes index m stands for.
    pub fn bytes_at(&self, m: usize) -> u64 {
        self.floor_bytes() + m as u64 * self.slot_bytes
    }
}

/// The sizes a persistent DP holds while a sub-problem runs: a^ℓ (a
/// checkpoint, ℓ = 1..L−1) and ā^s (an F_all before s+1..t, s = 1..L−1,
/// of every option of its menu).
/// a^0 is held throughout and taken off the budget exactly; a^L, ā^L and
/// every δ and overhead only enter one operation's own need.
pub(crate) fn held_sizes(chain: &Chain) -> impl Iterator<Item = u64> + '_ {
    let n = chain.len();
    (1..n).flat_map(move |l| {
        let s = chain.stage(l);
        // Every option's ā^{ℓ,k} may be held, so the lattice divides each.
        std::iter::once(chain.output_bytes(l))
            .chain((0..s.option_count()).map(move |k| s.choice(k).saved_bytes))
    })
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Worst-case bytes lost to rounding the held sizes up to `unit` (sizes
/// above `free` can never be held: they are infeasible anyway).
fn rounding_loss(chain: &Chain, unit: u64, free: u64) -> u64 {
    held_sizes(chain)
        .filter(|&x| x <= free)
        .map(|x| x.div_ceil(unit) * unit - x)
        .fold(0u64, u64::saturating_add)
}

/// The lattice for `budget_bytes` under `policy`: `slots` is the resolution
/// when exactness is out of reach, `max_slots` the most an exact one may have.
/// O(L · (log(size) + slots)) : a gcd per distinct held size, and for each of
/// the ≤ 64 distinct prefix gcds a search of a divisor among ≤ `slots`.
pub(crate) fn lattice(
    chain: &Chain,
    budget_bytes: u64,
    policy: SlotPolicy,
    slots: usize,
    max_slots: usize,
) -> Lattice {
    let free = budget_bytes.saturating_sub(chain.output_bytes(0));
    let on = |unit: u64| {
        let unit = unit.max(1);
        Lattice {
            slot_bytes: unit,
            slots: (free / unit).min(usize::MAX as u64) as usize,
            free_bytes: free,
            lost_bytes: rounding_loss(chain, unit, free),
        }
    };
    let slots = slots.max(1);
    if policy == SlotPolicy::Fixed {
        return on(budget_bytes / slots as u64);
    }
    let mut sizes: Vec<u64> = held_sizes(chain).filter(|&x| x > 0 && x <= free).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    let g = sizes.iter().fold(0, |g, &x| gcd(g, x));
    if g == 0 {
        // Nothing held: one lattice point, the budget itself, is exact.
        return on(free.max(1));
    }
    if free / g <= max_slots as u64 {
        return on(g);
    }
    // Not exact within the limit: among units giving at most `slots` slots,
    // the one that loses the fewest bytes. Candidates are u_min itself and,
    // for the gcd of the k largest sizes (k = 1, 2, …), its smallest divisor
    // ≥ u_min: a unit dividing the big sizes loses only on the small ones.
    let u_min = free.div_ceil(slots as u64).max(1);
    let mut best = on(u_min);
    let mut prefix = 0;
    for &x in &sizes {
        let next = gcd(prefix, x);
        if next == prefix {
            continue;
        }
        prefix = next;
        if prefix < u_min {
            break;
        }
        // The largest cofactor k ≤ prefix / u_min dividing prefix gives the
        // smallest divisor ≥ u_min; prefix ≤ free, so k ≤ slots.
        let unit = (1..=prefix / u_min)
            .rev()
            .find(|k| prefix % k == 0)
            .map_or(prefix, |k| prefix / k);
        let candidate = on(unit);
        if candidate.lost_bytes < best.lost_bytes {
            best = candidate;
        }
    }
    best
}

/// How one answer treated memory, for reports: `exact`, or `grid:<slot bytes>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// Sizes compared in exact bytes: the answer is the algorithm's optimum.
    Exact,
    /// A grid of `slot_bytes`; `lost_bytes` bounds the bytes of the budget
    /// the rounding may waste, where the solver can state it.
    Grid {
        slot_bytes: u64,
        lost_bytes: Option<u64>,
    },
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Memory::Exact => f.write_str("exact"),
            Memory::Grid { slot_bytes, .. } => write!(f, "grid:{slot_bytes}"),
        }
    }
}
