//! The admissible lower bound on the time still to spend from a state.
//!
//! Every backward B^1 … B^next must still run, and B^j reads ā^j, which
//! only F_all^j produces (nothing is offloaded): each ā^j not resident now
//! costs at least one F_all^j. So
//!
//! h = Σ_{j ≤ next} u_b^j + Σ_{j ≤ next, ā^j absent} u_f^j ≤ the true rest.
//!
//! It is also consistent (h drops by at most the cost of any operation:
//! F_all^j for j ≤ next lowers it by exactly u_f^j, B^next by u_b^next,
//! everything else leaves it unchanged), so A* closes each state at its
//! optimal time the first time it is taken from the queue.
//!
//! For the least peak ([`remaining_peak`]): every remaining B^j runs with
//! a^0, δ^j, ā^j and its input resident (at least a^{j−1}, the smaller of
//! a^{j−1} and ā^{j−1}) and allocates what it allocates; every missing ā^j
//! is computed by an F_all^j with its input and a^0 resident. The highest
//! of these is at most the peak of any way to finish; it only falls when a
//! backward runs, and then by no more than that backward's own peak, so the
//! bottleneck search with it also closes states at their least peak.

use super::state::{Model, State};

/// The lower bound h(s) of the module doc.
pub fn remaining_seconds(model: &Model, s: &State) -> f64 {
    let mut h = 0.0;
    for j in 1..=s.next as usize {
        h += model.backward_seconds[j];
        if s.saved >> j & 1 == 0 {
            h += model.forward_all_seconds[j];
        }
    }
    h
}

/// A lower bound on the highest memory still to come (module doc).
pub fn remaining_peak(model: &Model, s: &State) -> u64 {
    let mut h = 0;
    for j in 1..=s.next as usize {
        h = h.max(model.least_backward_bytes(j));
        if s.saved >> j & 1 == 0 {
            h = h.max(model.least_forward_all_bytes(j));
        }
    }
    h
}
