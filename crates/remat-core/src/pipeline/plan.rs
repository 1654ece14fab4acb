//! One plan per rank: the fastest of rotor's trade-off curve that fits the
//! rank's budget with its micro-batches in flight, and its certificate
//! (module doc of [`super`]).

use super::exact::{self, EXACT_MAX_STAGES};
use super::judge::{judge, makespan, MicrobatchCost, RankJudgement};
use super::order::{in_flight, others_held, Slot};
use super::{rank_chain, Pipeline, PipelineError};
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
}

/// One rank's plan and what it costs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankPlan {
    pub rank: usize,
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
    /// The rank's step, judged at its own order.
    pub judged: Option<RankJudgement>,
    /// No persistent schedule that fits is faster per micro-batch than
    /// this; None: none fits at all (the proof that the rank is
    /// infeasible). The exact search's own time where it answers; otherwise
    /// rotor's optimum at M − r·h_min + ω_δ^L (module doc). A uniform plan
    /// (planned for more in flight than its own) keeps the latter.
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

/// h_min: what any persistent schedule of `chain` holds between its phases
/// at least: its input, the input of B^L and the least ā^L any option keeps.
fn least_held(chain: &Chain) -> u64 {
    let n = chain.len();
    let last = chain.stage(n);
    let saved = (1..last.option_count())
        .map(|k| last.choice(k).saved_bytes)
        .fold(chain.saved_bytes(n), u64::min);
    let input_of_last = if n >= 2 { chain.output_bytes(n - 1) } else { 0 };
    chain
        .input_bytes
        .saturating_add(input_of_last)
        .saturating_add(saved)
}

/// The fastest candidate for `chain` (one rank's piece) that fits `budget`
/// when judged at `plan_as`, then judged at `order`, the rank's own.
/// `table` is rotor's breakpoint table of `chain`.
fn search(
    chain: &Chain,
    table: &StepTable,
    budget: u64,
    plan_as: &[Slot],
    order: &[Slot],
) -> (Option<(Vec<Op>, MicrobatchCost, RankJudgement)>, usize) {
    let mut candidates: Vec<(f64, Vec<Op>)> =
        vec![(chain.sequential_seconds(), store_all::schedule(chain))];
    let curve = table.curve();
    let mut judged = 0;
    // From the fastest down: the first that fits is the fastest candidate
    // (the curve's times fall as its budgets grow, store-all is the fastest).
    let mut at = curve.len();
    loop {
        if candidates.is_empty() {
            if at == 0 {
                return (None, judged);
            }
            at -= 1;
            if let Some(plan) = table.plan(chain, curve[at].0) {
                candidates.push((plan.predicted_seconds, plan.ops));
            }
            continue;
        }
        let (_, ops) = candidates.pop().expect("not empty");
        judged += 1;
        let Ok(cost) = MicrobatchCost::of(chain, &ops) else {
            continue;
        };
        if judge(&cost, plan_as).peak_bytes <= budget {
            let own = judge(&cost, order);
            return (Some((ops, cost, own)), judged);
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
    pipeline.validate(chain.len())?;
    let stages = pipeline.stages(rank);
    let piece = rank_chain(chain, stages.clone());
    let order = pipeline.order(rank);
    let plan_as = if uniform {
        pipeline.order(0)
    } else {
        order.clone()
    };
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
        Search::Exact => (exact::best(&piece, budget, &plan_as, &order)?, 0),
        Search::RotorCurve => search(&piece, &table, budget, &plan_as, &order),
    };
    // The certificate, at the rank's own order: beside the busiest forward
    // and backward, `others` micro-batches hold at least h_min each.
    let others = others_held(&order);
    let seed = piece.gradient_bytes(piece.len());
    let lower_bound_seconds = (others as u64)
        .checked_mul(least_held(&piece))
        .and_then(|held| budget.checked_sub(held))
        .and_then(|own| table.best_seconds(own.saturating_add(seed)));
    // The exact search's answer is the optimum: its own certificate; when
    // it finds none, none fits.
    let lower_bound_seconds = match (search_by, &found) {
        (Search::Exact, Some((_, cost, _))) if !uniform => Some(cost.seconds()),
        (Search::Exact, None) if !uniform => None,
        _ => lower_bound_seconds,
    };
    let (ops, cost, judged) = match found {
        Some((ops, cost, judged)) => (Some(ops), Some(cost), Some(judged)),
        None => (None, None, None),
    };
    Ok(RankPlan {
        rank,
        first_stage: *stages.start(),
        last_stage: *stages.end(),
        in_flight: in_flight(&order),
        planned_for: in_flight(&plan_as),
        budget_bytes: budget,
        ops,
        cost,
        judged,
        lower_bound_seconds,
        search: search_by,
        candidates_judged,
    })
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
    pipeline.validate(chain.len())?;
    let p = pipeline.ranks();
    if budgets.len() != 1 && budgets.len() != p {
        return Err(PipelineError::Budgets {
            given: budgets.len(),
            ranks: p,
        }
        .into());
    }
    let mut ranks = Vec::with_capacity(p);
    for rank in 0..p {
        let budget = budgets[if budgets.len() == 1 { 0 } else { rank }];
        let mut part = |f: f64| progress((rank as f64 + f) / p as f64);
        ranks.push(plan_rank(
            chain, pipeline, rank, budget, uniform, None, &mut part,
        )?);
    }
    let costs: Option<Vec<MicrobatchCost>> = ranks.iter().map(|r| r.cost).collect();
    let orders: Vec<Vec<Slot>> = (0..p).map(|r| pipeline.order(r)).collect();
    Ok(PipelinePlan {
        makespan_seconds: costs.map(|c| makespan(&orders, &c)),
        ranks,
    })
}
