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
//! a segment to L), under the same judge. With a host link
//! ([`Asked::offload`]) each path is also judged offloading its waiting
//! micro-batches, its segments also given the room left beside the fewest
//! others an offloading step counts beside a B phase: the best of those
//! candidates, no longer an optimum (an offloading step's room depends on
//! its copies' timing, which depends on the segments).
//!
//! **Complexity.** The paths number about 3^{L−1} (each stage starts an
//! F_all, starts a segment of any length, or lies inside one), so pieces of
//! more than [`EXACT_MAX_STAGES`] stages take the search over rotor's curve
//! instead ([`super::plan`]); the slices' tables are O(L²) rotor tables of
//! at most L stages.

use super::judge::MicrobatchCost;
use super::offload::{counted_beside_backward_at_best, fastest_fitting, judge_way, Way};
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

/// What a rank's exact search is asked.
pub struct Asked<'a> {
    /// The rank's activation budget.
    pub budget: u64,
    /// The order the plan must fit at, and the rank's own (judged at).
    pub plan_as: &'a [Slot],
    pub order: &'a [Slot],
    /// Whether the piece hands its last stage's output on (every rank's
    /// but the last, whose last stage holds the loss): only then may a
    /// path end in a segment to L.
    pub sends: bool,
    /// β of the rank's host link: each path also judged offloading its
    /// waiting micro-batches (`offload.rs`), its segments also given the
    /// room left beside the fewest others an offloading step counts beside
    /// a B phase; the fastest rank step (compute and stalls) kept. Then the
    /// answer is the best of these candidates, not an optimum.
    pub offload: Option<f64>,
}

/// The best kept so far: its key (time per micro-batch without
/// offloading, the rank's step with it), schedule, cost and judgement.
type Best = Option<(f64, Vec<Op>, MicrobatchCost, Way)>;

/// The best schedule of `piece` that fits `asked.budget` at
/// `asked.plan_as`, judged then at `asked.order`; None when no persistent
/// schedule fits.
pub fn best(piece: &Chain, asked: &Asked<'_>) -> Result<Option<super::offload::Found>, SolveError> {
    let n = piece.len();
    let others_b = others_beside(asked.plan_as, Phase::Backward) as u64;
    // The others beside a B phase each path's segments are given room
    // for: all of them on the device, and with offloading the fewest.
    let mut counts = vec![others_b];
    if asked.offload.is_some() {
        let fewest = counted_beside_backward_at_best(asked.plan_as) as u64;
        if fewest < others_b {
            counts.push(fewest);
        }
    }
    let mut slices = Slices {
        piece,
        tables: HashMap::new(),
    };
    let mut best: Best = None;
    let mut path: Vec<Top> = Vec::with_capacity(n);
    let mut visit = |path: &[Top]| {
        for &others in &counts {
            evaluate(piece, path, asked, others, &mut slices, &mut best)?;
        }
        Ok(())
    };
    walk(piece, 1, asked.sends, &mut path, &mut visit)?;
    Ok(best.map(|(_, ops, cost, way)| {
        let own = judge_way(&cost, asked.order, way.offload.map(|o| o.bytes_per_s));
        (ops, cost, own)
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

/// Completes `path` with the best segments for its budgets, `others_b`
/// micro-batches' h beside its B phase, and keeps it in `best` when
/// faster and judged to fit.
fn evaluate(
    piece: &Chain,
    path: &[Top],
    asked: &Asked<'_>,
    others_b: u64,
    slices: &mut Slices<'_>,
    best: &mut Best,
) -> Result<(), SolveError> {
    let (budget, plan_as) = (asked.budget, asked.plan_as);
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
    // Without offloading the key is the time per micro-batch; with it the
    // rank's step, at least m micro-batches' time (stalls ≥ 0).
    let m = (plan_as.len() / 2) as f64;
    let least = match asked.offload {
        None => seconds,
        Some(_) => m * seconds * (1.0 - 1e-12),
    };
    if best.as_ref().is_some_and(|b| b.0 <= least) {
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
    let Some(way) = fastest_fitting(&cost, plan_as, budget, asked.offload) else {
        return Ok(());
    };
    let key = match asked.offload {
        None => cost.seconds(),
        Some(_) => way.seconds,
    };
    if asked.offload.is_none() || best.as_ref().is_none_or(|b| key < b.0) {
        *best = Some((key, ops, cost, way));
    }
    Ok(())
}
