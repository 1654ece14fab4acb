//! The exact per-rank plan for short pieces: every top-level path of a
//! persistent schedule, each B-phase segment solved by rotor.
//!
//! A persistent schedule's F phase is its *top-level path*: from stage s,
//! either F_all^s (option k) and on from s + 1, or F_ck^s, F_∅ up to s' − 1
//! and on from s' (rotor report, Theorem 1's two cases, taken along the
//! chain until F_all^L). The path alone fixes the F phase and so h, what
//! the micro-batch holds between its phases. Its B phase then runs, right
//! to left, B^s for each F_all^s of the path and, for each F_ck^s … s' − 1,
//! the segment s..s'−1 as its own persistent schedule, beside what the path
//! stored to its left and h for every other micro-batch in flight. Unlike a
//! whole step's schedule, a piece's path may also end in a segment s..L
//! (F_ck^s, F_∅ … F_∅^L): the F phase then sends a^L and keeps only it and
//! a^{s−1}, and the B phase runs the segment again, F_all^L included
//! ([`forward_phase_len`](super::judge::forward_phase_len)) — what
//! `checkpoint` around a rank's last block does, which a persistent
//! schedule of the piece alone cannot (it keeps ā^L between the phases).
//! The segments are independent given their budgets, so each is rotor's
//! optimum of its slice at its budget, and the best schedule of the class
//! is the best path: exact over persistent schedules (and those ending in
//! a segment to L), under the same judge.
//!
//! **Complexity.** The paths number about 3^{L−1} (each stage starts an
//! F_all, starts a segment of any length, or lies inside one), so pieces of
//! more than [`EXACT_MAX_STAGES`] stages take the search over rotor's curve
//! instead ([`super::plan`]); the slices' tables are O(L²) rotor tables of
//! at most L stages.

use super::judge::{judge, MicrobatchCost, RankJudgement};
use super::order::{Phase, Slot};
use super::rank_chain;
use crate::model::Chain;
use crate::schedule::Op;
use crate::solvers::persistent::{StepTable, Variant, EXACT_TABLE_BYTES};
use crate::solvers::{no_progress, SolveError};
use std::collections::HashMap;

/// The longest piece planned exactly (about 3^11 ≈ 177 000 paths).
pub const EXACT_MAX_STAGES: usize = 12;

/// One step of a top-level path.
#[derive(Clone, Copy, Debug)]
enum Top {
    /// F_all^s with option k.
    All { stage: usize, option: usize },
    /// F_ck^s, F_∅^{s+1..next−1}; the segment s..next−1 waits for the B phase.
    Checkpoint { stage: usize, next: usize },
}

/// Rotor's tables of the piece's slices s..t, built on first use.
struct Slices<'a> {
    piece: &'a Chain,
    tables: HashMap<(usize, usize), (Chain, StepTable)>,
}

impl Slices<'_> {
    fn get(&mut self, s: usize, t: usize) -> Result<&(Chain, StepTable), SolveError> {
        if !self.tables.contains_key(&(s, t)) {
            let slice = rank_chain(self.piece, s..=t);
            let table = StepTable::build(
                &slice,
                Variant::Rotor,
                EXACT_TABLE_BYTES,
                &mut no_progress(),
            )?
            .ok_or_else(|| {
                SolveError::TooLarge(format!("stages {s}–{t}: rotor's table is too large"))
            })?;
            self.tables.insert((s, t), (slice, table));
        }
        Ok(&self.tables[&(s, t)])
    }
}

/// The most others held beside a phase of `order`, per phase.
fn others_beside(order: &[Slot], phase: Phase) -> usize {
    let mut held = 0usize;
    let mut most = 0;
    for slot in order {
        match slot.phase {
            Phase::Forward => {
                if phase == Phase::Forward {
                    most = most.max(held);
                }
                held += 1;
            }
            Phase::Backward => {
                held -= 1;
                if phase == Phase::Backward {
                    most = most.max(held);
                }
            }
        }
    }
    most
}

/// What the path's step `top` leaves stored, and the time of its forwards.
fn stored_and_time(piece: &Chain, top: Top) -> (u64, f64) {
    match top {
        Top::All { stage, option } => {
            let s = piece.stage(stage);
            (s.choice(option).saved_bytes, s.forward_seconds)
        }
        Top::Checkpoint { stage, next } => (
            piece.output_bytes(next - 1),
            (stage..next)
                .map(|l| piece.stage(l).nograd_forward_seconds())
                .sum(),
        ),
    }
}

/// The best schedule of `piece` that fits `budget` at `plan_as`, judged
/// then at `order`; None when no persistent schedule fits. `sends` says
/// whether the piece hands its last stage's output on (every rank's but
/// the last, whose last stage holds the loss): only then may a path end
/// in a segment to L.
pub fn best(
    piece: &Chain,
    budget: u64,
    plan_as: &[Slot],
    order: &[Slot],
    sends: bool,
) -> Result<Option<(Vec<Op>, MicrobatchCost, RankJudgement)>, SolveError> {
    let n = piece.len();
    let others_b = others_beside(plan_as, Phase::Backward) as u64;
    let mut slices = Slices {
        piece,
        tables: HashMap::new(),
    };
    let mut best: Option<(f64, Vec<Op>, MicrobatchCost)> = None;
    let mut path: Vec<Top> = Vec::with_capacity(n);
    let mut visit = |path: &[Top]| {
        evaluate(
            piece,
            path,
            budget,
            others_b,
            plan_as,
            &mut slices,
            &mut best,
        )
    };
    walk(piece, 1, sends, &mut path, &mut visit)?;
    Ok(best.map(|(_, ops, cost)| {
        let judged = judge(&cost, order);
        (ops, cost, judged)
    }))
}

/// Calls `visit` on every top-level path from stage `s` on.
fn walk(
    piece: &Chain,
    s: usize,
    sends: bool,
    path: &mut Vec<Top>,
    visit: &mut dyn FnMut(&[Top]) -> Result<(), SolveError>,
) -> Result<(), SolveError> {
    let n = piece.len();
    if s > n {
        return visit(path);
    }
    for option in 0..piece.stage(s).option_count() {
        path.push(Top::All { stage: s, option });
        walk(piece, s + 1, sends, path, visit)?;
        path.pop();
    }
    // next = n + 1: the segment s..L, recomputed once the gradient arrives.
    let last = if sends { n + 1 } else { n };
    for next in s + 1..=last {
        path.push(Top::Checkpoint { stage: s, next });
        walk(piece, next, sends, path, visit)?;
        path.pop();
    }
    Ok(())
}

/// Completes `path` with the best segments for its budgets and keeps it
/// in `best` when faster and judged to fit.
fn evaluate(
    piece: &Chain,
    path: &[Top],
    budget: u64,
    others_b: u64,
    plan_as: &[Slot],
    slices: &mut Slices<'_>,
    best: &mut Option<(f64, Vec<Op>, MicrobatchCost)>,
) -> Result<(), SolveError> {
    let parts: Vec<(u64, f64)> = path.iter().map(|&t| stored_and_time(piece, t)).collect();
    let held = parts
        .iter()
        .fold(piece.input_bytes, |a, p| a.saturating_add(p.0));
    let Some(room) = budget.checked_sub(others_b.saturating_mul(held)) else {
        return Ok(());
    };
    let sent = match path.last() {
        Some(&Top::Checkpoint { next, .. }) if next > piece.len() => {
            piece.output_bytes(piece.len())
        }
        _ => 0,
    };
    // Times first: forwards, each F_all's backward, each segment's best.
    let mut seconds: f64 = parts.iter().map(|p| p.1).sum();
    let mut prefix = piece.input_bytes;
    let mut segment_budgets = Vec::with_capacity(path.len());
    for (i, &top) in path.iter().enumerate() {
        match top {
            Top::All { stage, option } => {
                seconds += piece.stage(stage).choice(option).backward_seconds;
                segment_budgets.push(0);
            }
            Top::Checkpoint { stage, next } => {
                // Resident beside the segment: what the path stored to its
                // left, and the a^L a path ending in a segment to L sent,
                // which stays through the whole B phase (the segments run
                // right to left, that one first); the slice counts its own
                // input a^{s−1} itself.
                let input = piece.output_bytes(stage - 1);
                let Some(b) = (room.saturating_add(input)).checked_sub(prefix.saturating_add(sent))
                else {
                    return Ok(());
                };
                let (_, table) = slices.get(stage, next - 1)?;
                let Some(t) = table.best_seconds(b) else {
                    return Ok(());
                };
                seconds += t;
                segment_budgets.push(b);
            }
        }
        prefix = prefix.saturating_add(parts[i].0);
    }
    if best.as_ref().is_some_and(|b| b.0 <= seconds) {
        return Ok(());
    }
    let mut ops = Vec::with_capacity(4 * piece.len());
    for &top in path {
        match top {
            Top::All { stage, option } => ops.push(Op::ForwardAll {
                stage,
                option: option as u8,
            }),
            Top::Checkpoint { stage, next } => {
                ops.push(Op::ForwardCheckpoint { stage });
                ops.extend((stage + 1..next).map(|stage| Op::ForwardNone { stage }));
            }
        }
    }
    for (i, &top) in path.iter().enumerate().rev() {
        match top {
            Top::All { stage, .. } => ops.push(Op::Backward { stage }),
            Top::Checkpoint { stage, next } => {
                let (slice, table) = slices.get(stage, next - 1)?;
                let plan = table
                    .plan(slice, segment_budgets[i])
                    .expect("a segment with a finite time has a plan");
                // The slice numbers its stages from 1.
                ops.extend(plan.ops.into_iter().map(|op| op.shifted(stage - 1)));
            }
        }
    }
    let Ok(cost) = MicrobatchCost::of(piece, &ops) else {
        return Ok(());
    };
    if judge(&cost, plan_as).peak_bytes <= budget {
        *best = Some((cost.seconds(), ops, cost));
    }
    Ok(())
}
