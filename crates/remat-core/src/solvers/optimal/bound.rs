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
//! For the peak ([`remaining_peak`]): what stays resident until an
//! operation runs is known. ā^i is freed only by B^i and an a^i that F_ck
//! marked a checkpoint only by B^{i+1}, so both are still resident when any
//! F_all^j or B^j with j > i runs (the backwards run in order), and so is
//! a^0. Every remaining B^j therefore needs at least a^0, the resident ā^i
//! and checkpoints below it, its input (a^{j−1} at least), δ^j, ā^j and what
//! it allocates; every missing ā^j an F_all^j with the same below it, its
//! input, ā^j and o_f^j. The highest of these is a lower bound on the peak of
//! any way to finish. Every operation either only adds residents (the bound
//! can only rise) or frees what the bound did not count (a plain a^ℓ), or
//! is B^next, whose own peak covers the term it removes: the bottleneck
//! search with it closes states at their least peak, and A* drops a state
//! whose bound exceeds the budget (it cannot finish).

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
    let (saved, checkpoint) = (s.saved, s.checkpoint);
    // a^0, then the resident ā^i (i < j) and checkpoints a^i (1 ≤ i < j).
    let mut held = model.input_bytes();
    let mut h = 0;
    for j in 1..=s.next as usize {
        let counted_input = j == 1 || (saved | checkpoint) >> (j - 1) & 1 == 1;
        let input = if counted_input {
            0
        } else {
            model.output_bytes(j - 1)
        };
        h = h.max(held + input + model.backward_need(j));
        if saved >> j & 1 == 0 {
            h = h.max(held + input + model.forward_all_need(j));
        }
        if saved >> j & 1 == 1 {
            held += model.saved_bytes(j);
        }
        if checkpoint >> j & 1 == 1 {
            held += model.output_bytes(j);
        }
    }
    h
}
