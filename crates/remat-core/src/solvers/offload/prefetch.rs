//! Where prefetches go: one rule for pofo, opportunist and capper, so that
//! comparing them compares what they offload and recompute.

use super::run;
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::simulator::Trace;
use crate::solvers::offload::pofo::PofoPlan;

/// Inserts one prefetch per entry of `needs` ((deadline index, stage, tensor),
/// in deadline order) after `first` and before its deadline: each at the
/// place, from its deadline back to the previous prefetch, where the judged
/// schedule fits and is fastest (prefetches keep their order: one copy lane).
/// O(P · L · n) for P prefetches over n ops: one simulation per place tried.
pub fn place_prefetches(
    chain: &Chain,
    ops: &[Op],
    needs: &[(usize, usize, TensorKind)],
    first: usize,
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let earliest = vec![first; needs.len()];
    place_prefetches_after(chain, ops, needs, &earliest, budget, bandwidth)
}

/// POFO's plan with its prefetches placed after F_all^L (assumption (i)):
/// the schedule [`place_prefetches`] makes of the DP's ops and deadlines.
pub fn with_prefetches(
    chain: &Chain,
    plan: &PofoPlan,
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let first = plan.loss_index + 1;
    place_prefetches(chain, &plan.ops, &plan.needs, first, budget, bandwidth)
}

/// The placement of [`place_prefetches`] applied to a schedule that already
/// has its prefetches (opportunist, capper): each is taken out, its deadline
/// is the operation it preceded, and it goes back at the best place after
/// `first` (the loss, for the heuristics whose offloads all come before it)
/// and after its own offload. So the three algorithms that prefetch share one
/// rule and differ only by what they offload and recompute.
pub(super) fn replace_prefetches(
    chain: &Chain,
    ops: &[Op],
    first: usize,
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let mut bare = Vec::with_capacity(ops.len());
    let mut needs = Vec::new();
    let mut earliest = Vec::new();
    // Index in `bare` after the latest offload of each (stage, tensor).
    let mut offloaded: Vec<((usize, TensorKind), usize)> = Vec::new();
    for op in ops {
        match *op {
            Op::Prefetch { stage, tensor } => {
                let after = offloaded
                    .iter()
                    .rev()
                    .find(|(t, _)| *t == (stage, tensor))
                    .map_or(0, |x| x.1);
                needs.push((bare.len(), stage, tensor));
                earliest.push(after.max(first.min(bare.len())));
            }
            Op::Offload { stage, tensor } => {
                bare.push(*op);
                offloaded.push(((stage, tensor), bare.len()));
            }
            _ => bare.push(*op),
        }
    }
    if needs.is_empty() {
        return ops.to_vec();
    }
    place_prefetches_after(chain, &bare, &needs, &earliest, budget, bandwidth)
}

/// [`place_prefetches`] with a lower bound of its own for each prefetch.
fn place_prefetches_after(
    chain: &Chain,
    ops: &[Op],
    needs: &[(usize, usize, TensorKind)],
    earliest: &[usize],
    budget: u64,
    bandwidth: Option<f64>,
) -> Vec<Op> {
    let mut places: Vec<usize> = needs.iter().map(|n| n.0).collect();
    let build = |places: &[usize]| -> Vec<Op> {
        let mut out = Vec::with_capacity(ops.len() + needs.len());
        let mut k = 0;
        for (i, op) in ops.iter().enumerate() {
            while k < needs.len() && places[k] == i {
                out.push(Op::Prefetch {
                    stage: needs[k].1,
                    tensor: needs[k].2,
                });
                k += 1;
            }
            out.push(*op);
        }
        out
    };
    // Fitting first, then the makespan: (over the budget, seconds).
    let score = |t: &Option<Trace>| match t {
        Some(t) => (u8::from(!t.fits(budget)), t.makespan_seconds),
        None => (1, f64::INFINITY),
    };
    for k in 0..needs.len() {
        let deadline = needs[k].0;
        let lowest = if k == 0 {
            earliest[k]
        } else {
            places[k - 1].max(earliest[k])
        }
        .min(deadline);
        let mut best = (
            score(&run(chain, &build(&places), budget, bandwidth)),
            deadline,
        );
        // A prefetch listed at p is issued when ops[p − 1] ends: only places
        // after an op that frees memory (a backward, an F_∅), and the first
        // one, can start it earlier than the next such place.
        let frees = |p: usize| {
            p == lowest || matches!(ops[p - 1], Op::Backward { .. } | Op::ForwardNone { .. })
        };
        for p in (lowest..deadline).rev().filter(|&p| frees(p)) {
            places[k] = p;
            let s = score(&run(chain, &build(&places), budget, bandwidth));
            if s.0 < best.0 .0 || (s.0 == best.0 .0 && s.1 < best.0 .1) {
                best = (s, p);
            }
        }
        places[k] = best.1;
    }
    build(&places)
}
