//! `opportunist` (POFO Section 5.1): keep the link busy offloading groups,
//! recompute inside each group with rotor. See the family's doc (`mod.rs`).

use super::prefetch::replace_prefetches;
use super::{
    bytes_of, check_heuristic_size, finish, fits_as_is, rotor_segment, run, solution, sub_chain,
};
use crate::model::units::format_bytes;
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::simulator::Lane;
use crate::solvers::api::{Algorithm, Options, Solution, SolveError};
use crate::solvers::bounds::max_useful_budget;

/// `opportunist` (POFO Section 5.1) for one budget.
pub fn opportunist(chain: &Chain, budget: u64, options: &Options) -> Result<Solution, SolveError> {
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let fail = |why: String| Ok(solution(Algorithm::Opportunist, budget, None, None, why));
    let n = chain.len();
    check_heuristic_size(Algorithm::Opportunist, n)?;
    // Whether stages s..=L run with F_all from `input`, next to δ^L only.
    let rest_fits = |s: usize, input: (usize, TensorKind)| {
        let sub = sub_chain(chain, s, n, bytes_of(chain, input));
        max_useful_budget(&sub) <= budget
    };
    let mut ops: Vec<Op> = Vec::new();
    let mut offloaded: Vec<(usize, TensorKind)> = Vec::new();
    // (first stage, last stage, the input it offloaded)
    let mut groups: Vec<(usize, usize, (usize, TensorKind))> = Vec::new();
    let mut input = (0, TensorKind::Output);
    let mut s = 1;
    while s < n && !rest_fits(s, input) {
        if bandwidth.is_none_or(|b| b <= 0.0) {
            return fail("needs a host↔device bandwidth to offload".into());
        }
        // F_all^s, then its input and ā^s leave while F_∅ runs. ā^s is
        // listed after its reader F^{s+1}: the copy starts when ā^s exists.
        let saved = (s, TensorKind::Saved);
        ops.push(Op::forward_all(s));
        ops.push(Op::Offload {
            stage: input.0,
            tensor: input.1,
        });
        offloaded.push(input);
        let mut e = s;
        while e + 1 < n {
            let mut trial = ops.clone();
            if e == s {
                trial.push(Op::Offload {
                    stage: s,
                    tensor: TensorKind::Saved,
                });
            }
            let Some(t) = run(chain, &trial, u64::MAX, bandwidth) else {
                return fail("its forward phase does not run".into());
            };
            let lane_end = |lane| {
                t.spans
                    .iter()
                    .filter(|sp| sp.lane == lane)
                    .map(|sp| sp.end)
                    .fold(0.0, f64::max)
            };
            if lane_end(Lane::Copy) <= lane_end(Lane::Compute) {
                break;
            }
            e += 1;
            ops.push(Op::ForwardNone { stage: e });
            if e == s + 1 {
                ops.push(Op::Offload {
                    stage: s,
                    tensor: TensorKind::Saved,
                });
                offloaded.push(saved);
            }
        }
        groups.push((s, e, input));
        // With no F_∅ after it, ā^s is the next group's input (offloaded there).
        input = if e == s {
            saved
        } else {
            (e, TensorKind::Output)
        };
        s = e + 1;
    }
    if !rest_fits(s, input) {
        return fail(format!(
            "stages {s}..{n} do not fit in {} even with everything before them offloaded",
            format_bytes(budget)
        ));
    }
    let tail = s;
    ops.extend((tail..=n).map(Op::forward_all));
    ops.extend((tail..=n).rev().map(|stage| Op::Backward { stage }));
    let mut back_on_device: Vec<(usize, TensorKind)> = Vec::new();
    for &(gs, ge, gin) in groups.iter().rev() {
        for t in [(gs, TensorKind::Saved), gin] {
            if offloaded.contains(&t) && !back_on_device.contains(&t) {
                ops.push(Op::Prefetch {
                    stage: t.0,
                    tensor: t.1,
                });
                back_on_device.push(t);
            }
        }
        if ge > gs {
            let room = budget.saturating_sub(bytes_of(chain, gin));
            let Some(seg) = rotor_segment(chain, gs + 1, ge, chain.saved_bytes(gs), room, options)?
            else {
                return fail(format!(
                    "rematerialization cannot fit stages {}..{ge} in what is left",
                    gs + 1
                ));
            };
            ops.extend(seg);
        }
        ops.push(Op::Backward { stage: gs });
    }
    let groups_n = groups.len();
    // Prefetches as pofo places them: from the loss on, as early as fits best.
    let loss = ops
        .iter()
        .position(|op| *op == Op::forward_all(n))
        .map_or(0, |p| p + 1);
    let ops = if fits_as_is(chain, &ops, budget, bandwidth) {
        replace_prefetches(chain, &ops, loss, budget, bandwidth)
    } else {
        ops
    };
    Ok(finish(
        chain,
        Algorithm::Opportunist,
        budget,
        bandwidth,
        ops,
        |t| {
            format!(
                "{groups_n} group{} offloaded ({}), stages {tail}..{n} kept",
                if groups_n == 1 { "" } else { "s" },
                format_bytes(t.offloaded_bytes)
            )
        },
    ))
}
