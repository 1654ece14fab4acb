//! One plan per rank: the fastest of rotor's trade-off curve that fits the
//! rank's budget with its micro-batches in flight, and its certificate
//! (module doc of [`super`]). With a host link ([`plan_with`]), every
//! candidate is also judged offloading its waiting micro-batches
//! (`offload.rs`) and the fastest rank step, stalls included, is kept.

use super::exact::{self, EXACT_MAX_STAGES};
use super::judge::{judge_chunks, makespan_offloaded, MicrobatchCost, RankJudgement};
use super::offload::{self, fastest_fitting, Found, Offload, OffloadError, Way};
use super::order::{in_flight, others_held, Slot};
use super::{frameworks, rank_chain, Pipeline, PipelineError};
use crate::model::Chain;
use crate::schedule::Op;
use crate::solvers::persistent::{StepTable, Variant, EXACT_TABLE_BYTES};
use crate::solvers::{store_all, Progress, SolveError};
use serde::Serialize;
use std::ops::RangeInclusive;

/// Why a pipeline plan could not be made (not "no plan fits": that is a
/// [`RankPlan`] without ops).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error(transparent)]
    Solve(#[from] SolveError),
    #[error(transparent)]
    Offload(#[from] OffloadError),
}

/// One rank's plan and what it costs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankPlan {
    pub rank: usize,
    /// Which of the rank's chunks this plan is for (0 but under an
    /// interleaved schedule, where each chunk, piece c·p + r, has a plan
    /// of its own and all of the rank's share `judged`).
    pub chunk: usize,
    /// The chain's stages this rank runs (1-based).
    pub first_stage: usize,
    pub last_stage: usize,
    /// The most micro-batches in flight on this rank.
    pub in_flight: usize,
    /// How many in flight the plan was chosen for (`in_flight` unless one
    /// plan was made for every rank).
    pub planned_for: usize,
    /// The activation memory this rank may use.
    pub budget_bytes: u64,
    /// One micro-batch's schedule on the rank's piece (stages renumbered
    /// 1..=L_r); None when no candidate fits.
    pub ops: Option<Vec<Op>>,
    pub cost: Option<MicrobatchCost>,
    /// The rank's step, judged at its own order (with offloading when
    /// `offload` says so: its peak then counts h only where it is on the
    /// device, `offload.rs`).
    pub judged: Option<RankJudgement>,
    /// With `--offload`: what offloading the waiting micro-batches' h to
    /// host memory did on this rank (null: the plan keeps them on the
    /// device, because it fits faster so or the link was not given).
    pub offload: Option<Offload>,
    /// No persistent schedule that fits is faster per micro-batch than
    /// this; None: none fits at all (the proof that the rank is
    /// infeasible). The exact search's own time where it answers; otherwise
    /// rotor's optimum at M − r·h_min + ω_δ^L (module doc). A uniform plan
    /// (planned for more in flight than its own) keeps the latter. When the
    /// rank may offload, the others may hold nothing on the device: rotor's
    /// optimum at the whole budget M + ω_δ^L, which every schedule that
    /// fits meets, offloading or not.
    pub lower_bound_seconds: Option<f64>,
    pub search: Search,
    /// How many of rotor's schedules were judged before one fit (0 for
    /// the exact search).
    pub candidates_judged: usize,
}

impl RankPlan {
    pub fn stages(&self) -> RangeInclusive<usize> {
        self.first_stage..=self.last_stage
    }

    /// The chain's stages (numbered in the whole chain) this plan runs
    /// forward more than once per micro-batch; empty without a plan.
    pub fn recomputed_stages(&self) -> Vec<usize> {
        let mut runs = std::collections::BTreeMap::<usize, usize>::new();
        for op in self.ops.iter().flatten() {
            if !matches!(op, Op::Backward { .. }) {
                *runs.entry(op.stage() + self.first_stage - 1).or_default() += 1;
            }
        }
        runs.into_iter()
            .filter(|&(_, n)| n > 1)
            .map(|(s, _)| s)
            .collect()
    }

    /// The rank's step: its compute and, offloading, its stalls; None
    /// when no schedule fits.
    pub fn step_seconds(&self) -> Option<f64> {
        let j = self.judged?;
        Some(j.compute_seconds + self.offload.map_or(0.0, |o| o.stall_seconds))
    }

    /// (plan − bound) / bound, when both exist.
    pub fn gap(&self) -> Option<f64> {
        Some(crate::solvers::persistent::gap(
            self.cost?.seconds(),
            self.lower_bound_seconds?,
        ))
    }
}

/// Every rank's plan and the pipeline's time with them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipelinePlan {
    pub ranks: Vec<RankPlan>,
    /// The step's time ([`makespan`]); None unless every rank fits.
    pub makespan_seconds: Option<f64>,
}

/// h_min: what any schedule of `chain` the plans search (persistent, its
/// path possibly ending in a segment to L when the piece `sends` its
/// output on: `exact.rs`) holds between its phases at least: its input,
/// and either a^L alone (sent on, the segment to recompute) or the input
/// of B^L and the least ā^L any option keeps.
fn least_held(chain: &Chain, sends: bool) -> u64 {
    let n = chain.len();
    let last = chain.stage(n);
    let saved = (1..last.option_count())
        .map(|k| last.choice(k).saved_bytes)
        .fold(chain.saved_bytes(n), u64::min);
    let input_of_last = if n >= 2 { chain.output_bytes(n - 1) } else { 0 };
    let kept = input_of_last.saturating_add(saved);
    let kept = if sends {
        kept.min(chain.output_bytes(n))
    } else {
        kept
    };
    chain.input_bytes.saturating_add(kept)
}

/// `ops` (a persistent schedule of a piece of `stages` stages, F_all^L
/// right before its first backward) with its last stage recomputed: F_ck^L
/// ends the F phase (a^L sent, a^{L−1} kept), F_all^L starts the B phase.
/// None when `ops` has no such F_all^L.
fn with_last_recomputed(ops: &[Op], stages: usize) -> Option<Vec<Op>> {
    let first_backward = ops
        .iter()
        .position(|op| matches!(op, Op::Backward { .. }))?;
    let last = first_backward.checked_sub(1)?;
    if !matches!(ops[last], Op::ForwardAll { stage, .. } if stage == stages) {
        return None;
    }
    let mut out = ops[..last].to_vec();
    out.push(Op::ForwardCheckpoint { stage: stages });
    out.extend_from_slice(&ops[last..]);
    Some(out)
}

/// The fastest candidate for `chain` (one rank's piece) that fits `budget`
/// when judged at `plan_as`, then judged at `order`, the rank's own.
/// `table` is rotor's breakpoint table of `chain`. With `offload` (β of
/// the rank's host link) each candidate is judged with and without
/// offloading and the fastest rank step (compute and stalls) kept: the
/// candidates are visited from the fastest per micro-batch down until one
/// is slower, m micro-batches of it alone, than the best kept.
fn search(
    chain: &Chain,
    table: &StepTable,
    budget: u64,
    plan_as: &[Slot],
    order: &[Slot],
    offload: Option<f64>,
) -> (Option<Found>, usize) {
    let mut candidates: Vec<(f64, Vec<Op>)> =
        vec![(chain.sequential_seconds(), store_all::schedule(chain))];
    let curve = table.curve();
    let mut judged = 0;
    let m = (plan_as.len() / 2) as f64;
    let mut best: Option<(Vec<Op>, MicrobatchCost, Way)> = None;
    let answer = |best: Option<(Vec<Op>, MicrobatchCost, Way)>, judged| {
        let found = best.map(|(ops, cost, way)| {
            let own = offload::judge_way(&cost, order, way.offload.map(|o| o.bytes_per_s));
            (ops, cost, own)
        });
        (found, judged)
    };
    // From the fastest down: the first that fits is the fastest candidate
    // (the curve's times fall as its budgets grow, store-all is the fastest);
    // with offloading, until no later one can be faster.
    let mut at = curve.len();
    loop {
        if candidates.is_empty() {
            if at == 0 {
                return answer(best, judged);
            }
            at -= 1;
            if let Some(plan) = table.plan(chain, curve[at].0) {
                candidates.push((plan.predicted_seconds, plan.ops));
            }
            continue;
        }
        let (seconds, ops) = candidates.pop().expect("not empty");
        if best
            .as_ref()
            .is_some_and(|b| b.2.seconds < m * seconds * (1.0 - 1e-12))
        {
            return answer(best, judged);
        }
        judged += 1;
        let Ok(cost) = MicrobatchCost::of(chain, &ops) else {
            continue;
        };
        if let Some(way) = fastest_fitting(&cost, plan_as, budget, offload) {
            if offload.is_none() {
                return answer(Some((ops, cost, way)), judged);
            }
            if best.as_ref().is_none_or(|b| way.seconds < b.2.seconds) {
                best = Some((ops, cost, way));
            }
        }
    }
}

/// How a rank's plan is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// Every top-level path, each B-phase segment by rotor: the optimum
    /// over persistent schedules (`exact.rs`), about 3^{L−1} paths.
    Exact,
    /// Rotor's optimal schedules at every budget and store-all, the
    /// fastest that fits: for any length, with the certificate.
    RotorCurve,
}

impl Search {
    /// Exact up to [`EXACT_MAX_STAGES`] stages, rotor's curve beyond.
    pub fn for_stages(stages: usize) -> Search {
        if stages <= EXACT_MAX_STAGES {
            Search::Exact
        } else {
            Search::RotorCurve
        }
    }
}

/// Plans rank `rank` of `pipeline` on `chain` within `budget` bytes of
/// activations, by `search_by` (None: [`Search::for_stages`]). With `uniform`, the plan is chosen as if the rank held as
/// many micro-batches as rank 0 (one plan for every rank, what a single
/// setting gives) and judged at the rank's own order.
pub fn plan_rank(
    chain: &Chain,
    pipeline: &Pipeline,
    rank: usize,
    budget: u64,
    uniform: bool,
    search_by: Option<Search>,
    progress: &mut Progress<'_>,
) -> Result<RankPlan, PlanError> {
    let how = RankOptions {
        uniform,
        search: search_by,
        offload: None,
    };
    plan_rank_with(chain, pipeline, rank, budget, &how, progress)
}

/// How [`plan_rank_with`] plans a rank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RankOptions {
    /// Chosen as if the rank held as many micro-batches as rank 0 (as in
    /// [`plan_rank`]).
    pub uniform: bool,
    /// None: [`Search::for_stages`].
    pub search: Option<Search>,
    /// β of the rank's host link (bytes/s each way): every candidate is
    /// also judged offloading its waiting micro-batches' h (`offload.rs`),
    /// and the fastest rank step that fits is kept. One chunk per rank.
    pub offload: Option<f64>,
}

/// [`plan_rank`] with offloading (`how.offload`).
pub fn plan_rank_with(
    chain: &Chain,
    pipeline: &Pipeline,
    rank: usize,
    budget: u64,
    how: &RankOptions,
    progress: &mut Progress<'_>,
) -> Result<RankPlan, PlanError> {
    let (uniform, search_by, offload) = (how.uniform, how.search, how.offload);
    pipeline.validate(chain.len())?;
    check_offload(pipeline, offload)?;
    let stages = pipeline.stages(rank);
    let piece = rank_chain(chain, stages.clone());
    let asked = Asked::new(pipeline, rank, uniform, budget);
    let (order, plan_as) = (&asked.order, &asked.plan_as);
    // Every piece but the last hands its output on; the last holds the loss.
    let sends = *stages.end() < chain.len();
    let table = StepTable::build(&piece, Variant::Rotor, EXACT_TABLE_BYTES, progress)?.ok_or_else(
        || {
            SolveError::TooLarge(format!(
                "split: rank {rank}'s {} stages need a larger breakpoint table than {} MiB; \
                 cut the chain into more ranks or coarser stages",
                piece.len(),
                EXACT_TABLE_BYTES >> 20
            ))
        },
    )?;
    let search_by = search_by.unwrap_or_else(|| Search::for_stages(piece.len()));
    let (found, candidates_judged) = match search_by {
        Search::Exact => {
            let asked = exact::Asked {
                budget,
                plan_as,
                order,
                sends,
                offload,
            };
            (exact::best(&piece, &asked)?, 0)
        }
        Search::RotorCurve => search(&piece, &table, budget, plan_as, order, offload),
    };
    // The certificate, at the rank's own order: beside the busiest forward
    // and backward, `others` micro-batches hold at least h_min each.
    let others = others_held(order);
    let seed = piece.gradient_bytes(piece.len());
    // Offloading, the others may hold nothing on the device beside it.
    let others = if offload.is_some() { 0 } else { others };
    let lower_bound_seconds = (others as u64)
        .checked_mul(least_held(&piece, sends))
        .and_then(|held| budget.checked_sub(held))
        .and_then(|own| table.best_seconds(own.saturating_add(seed)));
    // The exact search's answer is the optimum over persistent schedules
    // kept on the device: its own certificate; when it finds none, none
    // fits. Not so with offloading (module doc of `offload.rs`).
    let lower_bound_seconds = match (search_by, &found) {
        (Search::Exact, Some((_, cost, _))) if !uniform && offload.is_none() => {
            Some(cost.seconds())
        }
        (Search::Exact, None) if !uniform && offload.is_none() => None,
        _ => lower_bound_seconds,
    };
    let proof = Proof {
        lower_bound_seconds,
        search: search_by,
        candidates_judged,
    };
    Ok(asked.answer(0, stages, found, proof))
}

/// What a rank's plan is asked before any search: the rank, the order it
/// is judged at, the order it is planned for (rank 0's for one plan for
/// every rank), and its budget.
struct Asked {
    rank: usize,
    order: Vec<Slot>,
    plan_as: Vec<Slot>,
    budget: u64,
}

/// Offloading needs a positive β and one chunk per rank.
fn check_offload(pipeline: &Pipeline, offload: Option<f64>) -> Result<(), OffloadError> {
    let Some(beta) = offload else {
        return Ok(());
    };
    offload::validate_rate(beta)?;
    if pipeline.chunks > 1 {
        return Err(OffloadError::Interleaved);
    }
    Ok(())
}

/// How a [`RankPlan`] was found and how far from the optimum it may be.
struct Proof {
    lower_bound_seconds: Option<f64>,
    search: Search,
    candidates_judged: usize,
}

impl Asked {
    fn new(pipeline: &Pipeline, rank: usize, uniform: bool, budget: u64) -> Asked {
        let order = pipeline.order(rank);
        let plan_as = if uniform {
            pipeline.order(0)
        } else {
            order.clone()
        };
        Asked {
            rank,
            order,
            plan_as,
            budget,
        }
    }

    /// The plan of chunk `chunk` (the chain's `stages`): the schedule found,
    /// its cost and its rank's judgement (None: none fits), and `proof`.
    fn answer(
        &self,
        chunk: usize,
        stages: RangeInclusive<usize>,
        found: Option<Found>,
        proof: Proof,
    ) -> RankPlan {
        let (ops, cost, judged, offload) = match found {
            Some((ops, cost, way)) => (Some(ops), Some(cost), Some(way.judged), way.offload),
            None => (None, None, None, None),
        };
        RankPlan {
            rank: self.rank,
            chunk,
            first_stage: *stages.start(),
            last_stage: *stages.end(),
            in_flight: in_flight(&self.order),
            planned_for: in_flight(&self.plan_as),
            budget_bytes: self.budget,
            ops,
            cost,
            judged,
            offload,
            lower_bound_seconds: proof.lower_bound_seconds,
            search: proof.search,
            candidates_judged: proof.candidates_judged,
        }
    }
}

/// Plans every rank: `budgets` has one budget for all ranks or one per
/// rank. `uniform` as in [`plan_rank`].
pub fn plan(
    chain: &Chain,
    pipeline: &Pipeline,
    budgets: &[u64],
    uniform: bool,
    progress: &mut Progress<'_>,
) -> Result<PipelinePlan, PlanError> {
    plan_with(chain, pipeline, budgets, uniform, None, progress)
}

/// [`plan`], each rank also judged offloading its waiting micro-batches
/// to host memory over a link of `offload` bytes/s each way
/// ([`RankOptions::offload`]); refused under an interleaved schedule.
pub fn plan_with(
    chain: &Chain,
    pipeline: &Pipeline,
    budgets: &[u64],
    uniform: bool,
    offload: Option<f64>,
    progress: &mut Progress<'_>,
) -> Result<PipelinePlan, PlanError> {
    pipeline.validate(chain.len())?;
    check_offload(pipeline, offload)?;
    let p = pipeline.ranks();
    if budgets.len() != 1 && budgets.len() != p {
        return Err(PipelineError::Budgets {
            given: budgets.len(),
            ranks: p,
        }
        .into());
    }
    // The plans are listed by piece: rank r's chunk c runs piece c·p + r.
    let mut by_piece: Vec<Option<RankPlan>> = vec![None; pipeline.split.len()];
    for rank in 0..p {
        let budget = budgets[if budgets.len() == 1 { 0 } else { rank }];
        let mut part = |f: f64| progress((rank as f64 + f) / p as f64);
        // Under an interleaved schedule a rank's chunks are planned together.
        let plans = if pipeline.chunks > 1 {
            plan_chunks(chain, pipeline, rank, budget, uniform, &mut part)?
        } else {
            let how = RankOptions {
                uniform,
                search: None,
                offload,
            };
            vec![plan_rank_with(
                chain, pipeline, rank, budget, &how, &mut part,
            )?]
        };
        for (piece, plan) in pipeline.pieces_of(rank).into_iter().zip(plans) {
            by_piece[piece] = Some(plan);
        }
    }
    let ranks: Vec<RankPlan> = by_piece.into_iter().flatten().collect();
    let costs: Option<Vec<MicrobatchCost>> = ranks.iter().map(|r| r.cost).collect();
    let orders: Vec<Vec<Slot>> = (0..p).map(|r| pipeline.order(r)).collect();
    let links: Vec<Option<f64>> = (ranks.iter())
        .map(|r| r.offload.map(|o| o.bytes_per_s))
        .collect();
    Ok(PipelinePlan {
        makespan_seconds: costs
            .map(|c| makespan_offloaded(&orders, &c, pipeline.link_bytes_per_s, &links)),
        ranks,
    })
}

/// The most combinations of its chunks' candidates one rank's search may
/// judge (each O(v·m)); past it the rank's pieces are too long for it.
pub const MAX_COMBINATIONS: u128 = 1_000_000;

/// One candidate schedule of a piece and what a micro-batch of it costs.
type Candidate = (Vec<Op>, MicrobatchCost);

/// Rank `rank`'s chunks under an interleaved schedule: for each piece,
/// rotor's optimal schedules at every budget where its optimum changes and
/// store-all (less those another beats in time, held bytes and both
/// phases' peaks), then the combination with the least time per
/// micro-batch whose rank step, judged at `plan_as` ([`judge_chunks`]:
/// every chunk's micro-batches in flight at once), fits `budget`, judged
/// again at the rank's own order. Each piece's candidates include every
/// Megatron-Core and torchtitan setting's schedule of it
/// ([`frameworks::piece_schedules`]), so that no setting that fits is
/// faster than the plan. Not exact over persistent schedules, as
/// [`Search::RotorCurve`]; each piece's certificate is rotor's optimum of
/// that piece alone at the whole budget, which every schedule of the rank
/// must meet (the other chunks hold ≥ 0 beside it).
fn plan_chunks(
    chain: &Chain,
    pipeline: &Pipeline,
    rank: usize,
    budget: u64,
    uniform: bool,
    progress: &mut Progress<'_>,
) -> Result<Vec<RankPlan>, PlanError> {
    let pieces = pipeline.pieces_of(rank);
    let asked = Asked::new(pipeline, rank, uniform, budget);
    let (order, plan_as) = (&asked.order, &asked.plan_as);
    let mut lists: Vec<Vec<Candidate>> = Vec::with_capacity(pieces.len());
    let mut bounds = Vec::with_capacity(pieces.len());
    // The frameworks' settings as candidates too: the search is not exact,
    // and a user compares it with exactly these.
    let mut knobs = frameworks::piece_schedules(chain, pipeline, rank).into_iter();
    for (c, &k) in pieces.iter().enumerate() {
        let piece = rank_chain(chain, pipeline.stages(k));
        let mut part = |f: f64| progress((c as f64 + f) / pieces.len() as f64);
        let table = StepTable::build(&piece, Variant::Rotor, EXACT_TABLE_BYTES, &mut part)?
            .ok_or_else(|| {
                SolveError::TooLarge(format!(
                    "split: piece {k}'s {} stages need a larger breakpoint table than {} MiB; \
                     cut the chain into more pieces or coarser stages",
                    piece.len(),
                    EXACT_TABLE_BYTES >> 20
                ))
            })?;
        let mut found: Vec<Candidate> = Vec::new();
        let schedules = std::iter::once(store_all::schedule(&piece))
            .chain(
                (table.curve().into_iter())
                    .filter_map(|(b, _)| table.plan(&piece, b).map(|p| p.ops)),
            )
            .chain(knobs.next().unwrap_or_default());
        for ops in schedules {
            // Each also with its last stage recomputed when the gradient
            // arrives (less held between the phases, one forward more),
            // but on the piece that holds the loss.
            let sends = *pipeline.stages(k).end() < chain.len();
            let late = with_last_recomputed(&ops, piece.len()).filter(|_| sends);
            for ops in std::iter::once(ops).chain(late) {
                if let Ok(cost) = MicrobatchCost::of(&piece, &ops) {
                    found.push((ops, cost));
                }
            }
        }
        lists.push(undominated(found));
        let seed = piece.gradient_bytes(piece.len());
        bounds.push(table.best_seconds(budget.saturating_add(seed)));
    }
    let combinations = lists.iter().map(|l| l.len() as u128).product::<u128>();
    if combinations > MAX_COMBINATIONS {
        return Err(SolveError::TooLarge(format!(
            "split: rank {rank}'s chunks have {combinations} combinations of candidate schedules \
             to judge (at most {MAX_COMBINATIONS}); cut the chain into coarser stages"
        ))
        .into());
    }
    // Every combination, fastest first (mixed radix over the lists).
    let mut all: Vec<(f64, Vec<usize>)> = Vec::with_capacity(combinations as usize);
    let mut pick = vec![0usize; lists.len()];
    loop {
        let seconds = (pick.iter().zip(&lists))
            .map(|(&i, l)| l[i].1.seconds())
            .sum();
        all.push((seconds, pick.clone()));
        let Some(c) = (0..lists.len()).find(|&c| pick[c] + 1 < lists[c].len()) else {
            break;
        };
        pick[c] += 1;
        pick[..c].iter_mut().for_each(|i| *i = 0);
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut judged_count = 0;
    let mut chosen = None;
    for (_, pick) in &all {
        judged_count += 1;
        let costs: Vec<MicrobatchCost> = (pick.iter().zip(&lists)).map(|(&i, l)| l[i].1).collect();
        if judge_chunks(&costs, plan_as).peak_bytes <= budget {
            chosen = Some((pick.clone(), judge_chunks(&costs, order)));
            break;
        }
    }
    Ok((pieces.iter().enumerate())
        .map(|(c, &k)| {
            let found = chosen.as_ref().map(|(pick, judged)| {
                let (ops, cost) = &lists[c][pick[c]];
                let way = Way {
                    seconds: judged.compute_seconds,
                    judged: *judged,
                    offload: None,
                };
                (ops.clone(), *cost, way)
            });
            let proof = Proof {
                lower_bound_seconds: bounds[c],
                search: Search::RotorCurve,
                candidates_judged: judged_count,
            };
            asked.answer(c, pipeline.stages(k), found, proof)
        })
        .collect())
}

/// The candidates no other beats or equals in time, held bytes and both
/// phases' peaks at once (the first of equals kept), fastest first.
fn undominated(mut found: Vec<Candidate>) -> Vec<Candidate> {
    let key = |c: &MicrobatchCost| {
        (
            c.seconds(),
            c.held_bytes,
            c.forward_peak_bytes,
            c.backward_peak_bytes,
        )
    };
    found.sort_by(|a, b| {
        let (x, y) = (key(&a.1), key(&b.1));
        x.0.total_cmp(&y.0)
            .then((x.1, x.2, x.3).cmp(&(y.1, y.2, y.3)))
    });
    let mut kept: Vec<Candidate> = Vec::new();
    for cand in found {
        let c = key(&cand.1);
        let beaten = kept.iter().any(|k| {
            let k = key(&k.1);
            k.0 <= c.0 && k.1 <= c.1 && k.2 <= c.2 && k.3 <= c.3
        });
        if !beaten {
            kept.push(cand);
        }
    }
    kept
}
