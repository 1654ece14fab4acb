//! `store-all`: what autograd does by default.
//!
//! F_all^1 … F_all^L, then B^L … B^1: every ā^ℓ is kept until its backward.
//! No recomputation, so its time is the no-limit time Σ u_f + u_b, and its
//! peak is M_high, the most memory any sensible schedule needs. O(L).

use crate::model::Chain;
use crate::schedule::Op;

pub fn schedule(chain: &Chain) -> Vec<Op> {
    let n = chain.len();
    (1..=n)
        .map(Op::forward_all)
        .chain((1..=n).rev().map(|stage| Op::Backward { stage }))
        .collect()
}
