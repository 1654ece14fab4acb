//! `autocapper` (POFO Section 5.1): `capper(M')` for 40 budgets M' from the
//! budget to M_high, the best simulated schedule kept. See the family's
//! doc (`mod.rs`).

use super::prefetch::replace_prefetches;
use super::{check_heuristic_size, run, solution};
use crate::model::units::format_bytes;
use crate::model::Chain;
use crate::schedule::{Op, TensorKind};
use crate::simulator::{TensorId, Trace};
use crate::solvers::api::{no_progress, Algorithm, Options, Progress, Solution, SolveError};
use crate::solvers::bounds::max_useful_budget;
use crate::solvers::persistent::{self, PersistentTable, Variant};

/// Whether `op` may read `tensor` (as its input, or B^ℓ's ā^ℓ).
fn reads(op: Op, tensor: TensorId) -> bool {
    match (op, tensor) {
        (Op::Offload { .. } | Op::Prefetch { .. }, _) => false,
        (op, TensorId::Activation(l) | TensorId::Saved(l)) if op.stage() == l + 1 => true,
        (Op::Backward { stage }, TensorId::Saved(l)) => stage == l,
        _ => false,
    }
}

/// Whether `op` puts `tensor` on the device.
fn produces(op: Op, tensor: TensorId) -> bool {
    match (op, tensor) {
        (Op::ForwardAll { stage, .. }, TensorId::Saved(l)) => stage == l,
        (Op::ForwardCheckpoint { stage } | Op::ForwardNone { stage }, TensorId::Activation(l)) => {
            stage == l
        }
        (Op::Prefetch { stage, tensor: k }, TensorId::Activation(l)) => {
            stage == l && k == TensorKind::Output
        }
        (Op::Prefetch { stage, tensor: k }, TensorId::Saved(l)) => {
            stage == l && k == TensorKind::Saved
        }
        _ => false,
    }
}

/// `capper(M')`: `rotor`, rotor's schedule for M', with offloads added at
/// each peak over `budget` until it fits.
fn capper(
    chain: &Chain,
    budget: u64,
    rotor: Vec<Op>,
    bandwidth: Option<f64>,
) -> Option<(Vec<Op>, Trace)> {
    let mut ops = rotor;
    let mut tried: Vec<(usize, TensorId)> = Vec::new();
    for _ in 0..8 * chain.len() + 16 {
        let trace = run(chain, &ops, budget, bandwidth)?;
        if trace.fits(budget) {
            return Some((ops, trace));
        }
        let peak_op = trace.peak_op?;
        let mut candidates: Vec<TensorId> = trace
            .resident_at(trace.peak_time)
            .into_iter()
            .map(|r| r.tensor)
            .filter(|t| matches!(t, TensorId::Activation(_) | TensorId::Saved(_)))
            .filter(|t| !reads(ops[peak_op], *t) && !produces(ops[peak_op], *t))
            .filter(|t| !tried.contains(&(peak_op, *t)))
            .collect();
        candidates.sort_by_key(|t| match t {
            TensorId::Activation(l) => (*l, 0),
            TensorId::Saved(l) => (*l, 1),
            _ => (usize::MAX, 2),
        });
        let mut moved = false;
        for t in candidates {
            tried.push((peak_op, t));
            let Some(next) = offload_around(&ops, peak_op, t) else {
                continue;
            };
            if run(chain, &next, budget, bandwidth).is_some() {
                ops = next;
                moved = true;
                break;
            }
        }
        if !moved {
            return None;
        }
    }
    None
}

/// `ops` with `tensor` offloaded after its last use before `peak` and
/// prefetched right before its next use after it.
fn offload_around(ops: &[Op], peak: usize, tensor: TensorId) -> Option<Vec<Op>> {
    let last = (0..peak)
        .rev()
        .find(|&i| reads(ops[i], tensor) || produces(ops[i], tensor))?;
    let next = (peak + 1..ops.len()).find(|&i| reads(ops[i], tensor))?;
    let (stage, kind) = match tensor {
        TensorId::Activation(l) => (l, TensorKind::Output),
        TensorId::Saved(l) => (l, TensorKind::Saved),
        _ => return None,
    };
    let mut out = Vec::with_capacity(ops.len() + 2);
    out.extend_from_slice(&ops[..=last]);
    out.push(Op::Offload {
        stage,
        tensor: kind,
    });
    out.extend_from_slice(&ops[last + 1..next]);
    out.push(Op::Prefetch {
        stage,
        tensor: kind,
    });
    out.extend_from_slice(&ops[next..]);
    Some(out)
}

/// How many budgets M' autocapper tries (POFO Section 5.1).
pub const AUTOCAPPER_TRIES: usize = 40;

/// `autocapper` (POFO Section 5.1) for one budget.
pub fn autocapper(
    chain: &Chain,
    budget: u64,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<Solution, SolveError> {
    check_heuristic_size(Algorithm::Autocapper, chain.len())?;
    let bandwidth = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let high = max_useful_budget(chain).max(budget);
    let low = persistent::min_budget(chain, Variant::Rotor);
    let plain = Options {
        bandwidth_bytes_per_s: None,
        ..options.clone()
    };
    // One rotor table for M_high answers every M' (read-outs are O(L));
    // M' = budget gets a table of its own, so autocapper is feasible
    // wherever rotor is.
    let table = PersistentTable::build_with(
        chain,
        Variant::Rotor,
        high,
        plain.slot_policy,
        plain.slots,
        plain.max_table_bytes,
        &mut no_progress(),
    )?;
    let store_all = persistent::store_all_point(chain, Variant::Rotor);
    let mut best: Option<(Vec<Op>, Trace, u64)> = None;
    for k in 0..AUTOCAPPER_TRIES {
        let m_prime =
            budget + ((high - budget) as f64 * k as f64 / (AUTOCAPPER_TRIES - 1) as f64) as u64;
        let rotor = if k == 0 {
            persistent::solve(chain, Variant::Rotor, m_prime, &plain)?
        } else {
            let from_table = table.plan(chain, m_prime);
            persistent::or_store_all(from_table, chain, m_prime, store_all).map(|(p, _)| p)
        }
        .map(|p| p.ops);
        if let (true, Some(rotor)) = (m_prime >= low, rotor) {
            if let Some((ops, trace)) = capper(chain, budget, rotor, bandwidth) {
                // Prefetches as pofo places them (capper puts each right
                // before its next use): after its offload, as early as fits
                // best. The placement starts from capper's, which fits.
                let placed = replace_prefetches(chain, &ops, 0, budget, bandwidth);
                let (ops, trace) = match run(chain, &placed, budget, bandwidth) {
                    Some(t) if t.fits(budget) => (placed, t),
                    _ => (ops, trace),
                };
                if best
                    .as_ref()
                    .is_none_or(|b| trace.makespan_seconds < b.1.makespan_seconds)
                {
                    best = Some((ops, trace, m_prime));
                }
            }
        }
        if !progress((k + 1) as f64 / AUTOCAPPER_TRIES as f64) {
            return Err(SolveError::Cancelled);
        }
    }
    Ok(match best {
        Some((ops, trace, m_prime)) => solution(
            Algorithm::Autocapper,
            budget,
            Some(ops),
            None,
            format!(
                "capper at M' = {}: {} offloaded",
                format_bytes(m_prime),
                format_bytes(trace.offloaded_bytes)
            ),
        ),
        None => solution(
            Algorithm::Autocapper,
            budget,
            None,
            None,
            format!(
                "no M' from {} up gives a schedule that fits",
                format_bytes(budget)
            ),
        ),
    })
}
