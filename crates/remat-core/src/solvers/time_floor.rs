//! The time floor: a step time no schedule beats at a budget, whatever it
//! recomputes, offloads or releases — the certificate of the algorithms
//! without a class bound of their own (pofo, offload-only, the offloading
//! heuristics, the dynamic runtimes, sequential, Hong et al.'s), issue 44.
//!
//! **The argument** (the simulator's accounting, docs/model.md). Take any
//! complete schedule that fits budget M, and t*, the start of its one B^L.
//!
//! * Before t*, every stage has run a forward (F_all^L needs a^{L−1}, which
//!   only a forward of L − 1 makes, and so on down): the compute lane spent
//!   at least T_F = Σ_{ℓ<L} min(u_f^ℓ, u_f∅^ℓ) + u_f^L.
//! * After t*, every B^ℓ runs: Σ u_b^ℓ (a menu option only adds time).
//! * Each ā^ℓ (ℓ < L) that B^ℓ reads was made by an F_all^ℓ. Either one runs
//!   after t* (ℓ is *recomputed*: u_f^ℓ more after t*), or the ā^ℓ B^ℓ reads
//!   already existed at t*: on the device (an offload still copying keeps
//!   its device copy; a prefetch takes its memory when it starts), or on the
//!   host only — then it was offloaded before t* and is prefetched after t*,
//!   its bytes crossing the one copy lane once each side of t*. a^0, which
//!   B^1 reads and no operation makes, is on the device or on the host.
//! * At t*, the device holds B^L's working set (δ^L, ā^L of some option,
//!   δ^{L−1} and o_b^L: `Chain::backward_bytes_of(L, k)`) and every ā^ℓ
//!   kept there, all within M.
//!
//! So with V the bytes on the host at t* and C the forwards recomputed,
//! makespan ≥ max(T_F, V/β) + max(Σ u_b + C, V/β), where the ā^ℓ kept on the
//! device fit in M less B^L's working set. Minimising that over every split
//! of the ā^ℓ into kept, moved and recomputed — relaxed to fractions of
//! tensors, which can only lower the minimum, and with each ā^ℓ at its
//! smallest option — gives a bound every schedule meets. Inputs a^{ℓ−1}
//! and checkpoints are not counted (again only lowering it).
//!
//! **Computing it exactly.** The relaxed problem: D bytes (what does not
//! fit) leave the device, V of them moved, D − V recomputed, cheapest
//! seconds per byte first (a^0 cannot be recomputed), so C(D − V) is convex
//! and piecewise linear in V, and so is the objective: its least value is
//! at a kink or an end of [0, D] — V = 0, D, β·T_F, every boundary between
//! two tensors of the cheapest-first order, and where Σ u_b + C(D − V)
//! crosses V/β on each piece. O(L log L).
//!
//! **What it is not.** rotor's and revolve's certificates
//! ([`persistent::Table::lower_bound_seconds`](super::persistent::Table::lower_bound_seconds))
//! bound their own class, persistent schedules, by the DP itself, and are
//! much tighter where recomputation is what the budget forces; this floor
//! sees one instant of the step. Where transfers hide behind the compute
//! (a fast link, a loose budget) it is Σ u_f + u_b, the step with no limit,
//! and the gap is the plan's overhead.
//!
//! ```
//! use remat_core::examples::teaching;
//! use remat_core::solvers::{max_useful_budget, memory_floor, time_floor};
//!
//! let chain = teaching();
//! // Everything fits at store-all's peak: the floor is the step with no limit.
//! let all = max_useful_budget(&chain);
//! let floor = time_floor(&chain, all, None).unwrap();
//! assert!((floor - chain.sequential_seconds()).abs() < 1e-9 * floor);
//! // Less memory, no host link: some forward must run again.
//! let low = memory_floor(&chain).bytes;
//! assert!(time_floor(&chain, low, None).unwrap() > chain.sequential_seconds());
//! ```

use crate::model::Chain;

/// The relative margin taken off the least value found, so that float
/// rounding in the kinks' arithmetic (a few ulps) never lifts the floor
/// above a schedule's exact time.
pub const MARGIN: f64 = 1e-12;

/// One tensor that may leave the device at t*: its bytes and what
/// recomputing it costs after t* (infinite for a^0).
#[derive(Clone, Copy, Debug)]
struct Leaving {
    bytes: f64,
    seconds: f64,
}

/// The least makespan of any complete schedule of `chain` within
/// `budget_bytes`, with a host link of `bandwidth` bytes/s (None: no
/// transfers). None where the budget cannot hold B^L's working set (no
/// schedule fits; [`memory_floor`](super::memory_floor) says why). See the
/// module's doc for the argument.
pub fn time_floor(chain: &Chain, budget_bytes: u64, bandwidth: Option<f64>) -> Option<f64> {
    let n = chain.len();
    let last = chain.stage(n);
    let working_set = (0..last.option_count())
        .map(|k| chain.backward_bytes_of(n, k))
        .min()?;
    let room = budget_bytes.checked_sub(working_set)? as f64;
    let forward: f64 = (1..n)
        .map(|l| {
            let s = chain.stage(l);
            s.forward_seconds.min(s.nograd_forward_seconds())
        })
        .sum::<f64>()
        + last.forward_seconds;
    let backward: f64 = chain.stages.iter().map(|s| s.backward_seconds).sum();
    // The tensors held across t*: a^0 and each ā^ℓ, ℓ < L, at its least option.
    let mut leaving: Vec<Leaving> = std::iter::once(Leaving {
        bytes: chain.input_bytes as f64,
        seconds: f64::INFINITY,
    })
    .chain((1..n).map(|l| {
        let s = chain.stage(l);
        let least = (0..s.option_count())
            .map(|k| s.choice(k).saved_bytes)
            .min()
            .unwrap_or(s.saved_bytes);
        Leaving {
            bytes: least as f64,
            seconds: s.forward_seconds,
        }
    }))
    .filter(|t| t.bytes > 0.0)
    .collect();
    let held: f64 = leaving.iter().map(|t| t.bytes).sum();
    let excess = (held - room).max(0.0);
    let beta = bandwidth.filter(|b| b.is_finite() && *b > 0.0);
    // Cheapest seconds per byte first (a^0 last: it cannot be recomputed).
    leaving.sort_by(|a, b| (a.seconds / a.bytes).total_cmp(&(b.seconds / b.bytes)));
    let recompute = |bytes: f64| recompute_seconds(&leaving, bytes);
    let least = match beta {
        None => forward + backward + recompute(excess),
        Some(beta) => {
            let at = |moved: f64| {
                let moved = moved.clamp(0.0, excess);
                forward.max(moved / beta) + (backward + recompute(excess - moved)).max(moved / beta)
            };
            // The kinks of the objective on [0, excess].
            let mut kinks = vec![0.0, excess, forward * beta];
            let mut covered = 0.0;
            for t in &leaving {
                covered += t.bytes;
                kinks.push(excess - covered);
            }
            kinks.retain(|v| (0.0..=excess).contains(v));
            kinks.sort_by(f64::total_cmp);
            // Where backward + C(excess − V) crosses V/β, piece by piece
            // (the difference is linear and decreasing on each piece).
            let crossing = |v: f64| backward + recompute(excess - v) - v / beta;
            let mut points = kinks.clone();
            for w in kinks.windows(2) {
                let (a, b) = (crossing(w[0]), crossing(w[1]));
                if a.is_finite() && b.is_finite() && a > 0.0 && b < 0.0 {
                    points.push(w[0] + (w[1] - w[0]) * a / (a - b));
                }
            }
            points.into_iter().map(at).fold(f64::INFINITY, f64::min)
        }
    };
    least.is_finite().then_some(least * (1.0 - MARGIN))
}

/// C(bytes): the least seconds to recompute `bytes` of the tensors, taken
/// cheapest per byte first and in fractions; infinite past what can be
/// recomputed at all.
fn recompute_seconds(cheapest_first: &[Leaving], bytes: f64) -> f64 {
    let mut left = bytes;
    let mut seconds = 0.0;
    for t in cheapest_first {
        if left <= 0.0 {
            break;
        }
        let take = left.min(t.bytes);
        if !t.seconds.is_finite() {
            return f64::INFINITY;
        }
        seconds += t.seconds * (take / t.bytes);
        left -= take;
    }
    if left > 0.0 {
        f64::INFINITY
    } else {
        seconds
    }
}
