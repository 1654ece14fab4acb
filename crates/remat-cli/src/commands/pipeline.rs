//! `remat pipeline`: one plan per pipeline rank ([`remat_core::pipeline`]);
//! the rest reads flags, prints and writes each rank's files.

use super::{say_chain, TerminalProgress};
use crate::args::{PipelineArgs, PipelineScheduleFlag};
use crate::error::{CliError, Result};
use crate::input;
use crate::report;
use remat_core::format::{write_chain, write_schedule, Predicted, ScheduleFile};
use remat_core::model::units::{format_bytes, format_seconds};
use remat_core::pipeline::frameworks::{self, Setting};
use remat_core::pipeline::{
    plan_with, rank_chain, Pipeline, PipelineError, PipelinePlan, PipelineSchedule, PlanError,
    RankPlan, Search, Slot,
};
use remat_core::Chain;
use serde::Serialize;

#[derive(Serialize)]
struct Report<'a> {
    chain: &'a str,
    schedule: PipelineSchedule,
    microbatches: usize,
    /// v, the chunks per rank (per_rank lists one plan per piece, each
    /// with its rank and chunk).
    chunks: usize,
    split: &'a [usize],
    /// β between ranks (--link); null: sends take no time.
    link_bytes_per_s: Option<f64>,
    /// β between each rank and host memory (--offload); null: no rank
    /// offloads.
    offload_bytes_per_s: Option<f64>,
    /// Each rank's order of phases, the one its plan was judged at (rank
    /// 0 first; under an interleaved schedule PyTorch's own).
    orders: Vec<Vec<Slot>>,
    per_rank: &'a PipelinePlan,
    /// With --compare-uniform: every rank planned as rank 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    uniform: Option<&'a PipelinePlan>,
    /// With --frameworks: the nearest setting of each (null: none fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    frameworks: Option<Nearest<'a>>,
}

#[derive(Serialize)]
struct Nearest<'a> {
    megatron: Option<&'a Setting>,
    torchtitan: Option<&'a Setting>,
    /// Which of the chain's stages were taken for transformer layers.
    layers: Vec<usize>,
}

pub fn run(a: &PipelineArgs) -> Result<()> {
    let chain = input::chain(&a.chain)?;
    let pieces = a.ranks.map(|p| p.saturating_mul(a.chunks));
    let split = match pieces {
        Some(k) => Pipeline::even_split(chain.len(), k),
        None => a.split.clone(),
    };
    let pipeline = Pipeline {
        split,
        microbatches: a.microbatches,
        schedule: match a.schedule {
            PipelineScheduleFlag::Gpipe => PipelineSchedule::GPipe,
            PipelineScheduleFlag::OneFOneB => PipelineSchedule::OneFOneB,
            PipelineScheduleFlag::Interleaved1F1B => PipelineSchedule::Interleaved1F1B,
        },
        chunks: a.chunks,
        link_bytes_per_s: crate::args::bytes_per_s(a.link),
    };
    if let (Some(k), true) = (pieces, pieces.unwrap_or(0) > chain.len()) {
        return Err(CliError::BadValue {
            flag: "--ranks",
            message: format!(
                "{k} pieces ({} ranks × {} chunks) for {} stages; every piece needs a stage",
                a.ranks.unwrap_or(0),
                a.chunks,
                chain.len()
            ),
        });
    }
    let budgets: Vec<u64> = a.budget.iter().map(|b| b.0).collect();
    let mut shown = TerminalProgress::new("planning");
    let offload = crate::args::bytes_per_s(a.offload);
    let per_rank = plan_with(&chain, &pipeline, &budgets, false, offload, &mut |d| {
        shown.report(d)
    });
    let uniform = match (&per_rank, a.compare_uniform) {
        (Ok(_), true) => Some(plan_with(
            &chain,
            &pipeline,
            &budgets,
            true,
            offload,
            &mut |d| shown.report(d),
        )),
        _ => None,
    };
    drop(shown);
    let per_rank = per_rank.map_err(plan_error)?;
    let uniform = uniform.transpose().map_err(plan_error)?;
    let is_layer = |s: usize| frameworks::is_layer(&chain, s);
    let settings = if a.frameworks {
        frameworks::settings(&chain, &pipeline, &budgets, &is_layer)
    } else {
        Vec::new()
    };
    let nearest = a.frameworks.then(|| Nearest {
        megatron: frameworks::nearest(&settings, "megatron"),
        torchtitan: frameworks::nearest(&settings, "torchtitan"),
        layers: (1..=chain.len()).filter(|&s| is_layer(s)).collect(),
    });
    if let Some(dir) = &a.output {
        write_files(dir, &chain, &pipeline, &per_rank)?;
    }
    if a.json {
        report::print(&Report {
            chain: &chain.name,
            schedule: pipeline.schedule,
            microbatches: pipeline.microbatches,
            chunks: pipeline.chunks,
            split: &pipeline.split,
            link_bytes_per_s: pipeline.link_bytes_per_s,
            offload_bytes_per_s: offload,
            orders: (0..pipeline.ranks()).map(|r| pipeline.order(r)).collect(),
            per_rank: &per_rank,
            uniform: uniform.as_ref(),
            frameworks: nearest,
        });
    } else {
        print_text(&chain, &pipeline, offload, &per_rank, uniform.as_ref());
        if let Some(n) = &nearest {
            print_frameworks(n, per_rank.makespan_seconds);
        }
    }
    Ok(())
}

/// A pipeline the chain cannot take names its flag.
fn plan_error(e: PlanError) -> CliError {
    match e {
        PlanError::Pipeline(e) => {
            let flag = match e {
                PipelineError::Microbatches { .. } | PipelineError::Rounds { .. } => {
                    "--microbatches"
                }
                PipelineError::Budgets { .. } => "--budget",
                PipelineError::Chunks { .. } | PipelineError::ChunksNeedInterleaved { .. } => {
                    "--chunks"
                }
                PipelineError::Link { .. } => "--link",
                _ => "--split",
            };
            let text = e.to_string();
            let message = text
                .split_once(": ")
                .map_or(text.clone(), |(_, m)| m.to_string());
            CliError::BadValue { flag, message }
        }
        PlanError::Solve(e) => CliError::Solve(e),
        PlanError::Offload(e) => {
            let text = e.to_string();
            let message = text
                .split_once(": ")
                .map_or(text.clone(), |(_, m)| m.to_string());
            CliError::BadValue {
                flag: "--offload",
                message,
            }
        }
    }
}

fn write_files(
    dir: &std::path::Path,
    chain: &Chain,
    pipeline: &Pipeline,
    plan: &PipelinePlan,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::BadValue {
        flag: "--output",
        message: format!("{}: {e}", dir.display()),
    })?;
    for r in &plan.ranks {
        let piece = rank_chain(chain, r.stages());
        // rank0.*, or rank0.chunk1.* under an interleaved schedule.
        let name = if pipeline.chunks > 1 {
            format!("rank{}.chunk{}", r.rank, r.chunk)
        } else {
            format!("rank{}", r.rank)
        };
        input::write_text(
            &dir.join(format!("{name}.chain.json")),
            &write_chain(&piece),
        )?;
        match (&r.ops, r.judged) {
            (Some(ops), Some(judged)) => {
                let predicted = Predicted {
                    makespan_seconds: r.cost.map_or(0.0, |c| c.seconds()),
                    peak_bytes: judged.peak_bytes,
                };
                let file = ScheduleFile::new(
                    &piece,
                    "pipeline",
                    r.budget_bytes,
                    None,
                    predicted,
                    ops.clone(),
                );
                input::write_text(
                    &dir.join(format!("{name}.schedule.json")),
                    &write_schedule(&file),
                )?;
            }
            _ => eprintln!("note: {name}: no schedule fits its budget; none written"),
        }
    }
    Ok(())
}

fn row(r: &RankPlan, chunked: bool, offloading: bool) -> String {
    let stages = format!("{}–{}", r.first_stage, r.last_stage);
    let rank = if chunked {
        format!("{}.{}", r.rank, r.chunk)
    } else {
        r.rank.to_string()
    };
    let head = format!(
        "{:>4}  {:<9} {:>3}  {:>10}",
        rank,
        stages,
        r.in_flight,
        format_bytes(r.budget_bytes)
    );
    match (r.cost, r.judged) {
        (Some(cost), Some(judged)) => {
            let gap = match (r.search, r.planned_for == r.in_flight) {
                (Search::Exact, true) if !offloading => "exact".to_string(),
                _ => r
                    .gap()
                    .map_or("—".to_string(), |g| format!("{:.2} %", 100.0 * g)),
            };
            let offloaded = if offloading {
                format!("  {:<30}", offloaded(r))
            } else {
                String::new()
            };
            format!(
                "{head}  {:>10}  {:>10}  {:>10}  {:>11}  {:>8}{offloaded}  {}",
                format_bytes(judged.peak_bytes),
                format_bytes(cost.held_bytes),
                format_seconds(cost.seconds()),
                format_seconds(judged.compute_seconds),
                gap,
                recomputed(r)
            )
        }
        _ if r.planned_for != r.in_flight => format!(
            "{head}  none fits when planned for {} in flight",
            r.planned_for
        ),
        _ => match r.lower_bound_seconds {
            None => format!(
                "{head}  infeasible: no persistent schedule fits with {} in flight",
                r.in_flight
            ),
            Some(_) if offloading => format!(
                "{head}  no schedule found, offloading or not; the bound does not rule one out"
            ),
            Some(_) => format!(
                "{head}  no schedule found on rotor's curve; the bound does not rule one out"
            ),
        },
    }
}

/// What a rank offloads, for people: "7 mb, 1.2 GiB, stall 3.1 ms", "no".
fn offloaded(r: &RankPlan) -> String {
    match r.offload {
        Some(o) => format!(
            "{} mb, {}, stall {}",
            o.microbatches_offloaded,
            format_bytes(o.bytes_moved),
            format_seconds(o.stall_seconds)
        ),
        None => "no".into(),
    }
}

/// The stages a plan recomputes, for people: "2, 5, 6", "none".
fn recomputed(r: &RankPlan) -> String {
    if r.ops.is_none() {
        return String::new();
    }
    let again: Vec<String> = r.recomputed_stages().iter().map(usize::to_string).collect();
    if again.is_empty() {
        "none".into()
    } else {
        again.join(", ")
    }
}

fn print_text(
    chain: &Chain,
    pipeline: &Pipeline,
    offload: Option<f64>,
    plan: &PipelinePlan,
    uniform: Option<&PipelinePlan>,
) {
    say_chain(chain, 14);
    let chunked = pipeline.chunks > 1;
    say!(
        "{:<14}{} ranks{}, {} micro-batches, {}",
        "pipeline",
        pipeline.ranks(),
        if chunked {
            format!(" × {} chunks", pipeline.chunks)
        } else {
            String::new()
        },
        pipeline.microbatches,
        pipeline.schedule
    );
    if chain.counts_parameter_gradients() {
        // `rank_chain` leaves them out: micro-batches sum into them.
        say!(
            "{:<14}not in the ranks' peaks below: add each rank's share to its fixed memory",
            ""
        );
    }
    let header = if offload.is_some() {
        "rank  stages    m/r      budget        peak        held   per micro   rank step       gap  offload (to host)               recomputes"
    } else {
        "rank  stages    m/r      budget        peak        held   per micro   rank step       gap  recomputes"
    };
    let show = |title: &str, p: &PipelinePlan| {
        say!("");
        say!("{title}");
        say!("{header}");
        let mut rows: Vec<&RankPlan> = p.ranks.iter().collect();
        rows.sort_by_key(|r| (r.rank, r.chunk));
        for r in rows {
            say!("{}", row(r, chunked, offload.is_some()));
        }
        match p.makespan_seconds {
            Some(t) => say!(
                "pipeline step {} ({}{})",
                format_seconds(t),
                if p.ranks.iter().any(|r| r.offload.is_some()) {
                    "prefetch stalls counted; "
                } else {
                    ""
                },
                match pipeline.link_bytes_per_s {
                    Some(beta) => format!(
                        "sends between ranks at {}/s counted",
                        format_bytes(beta as u64)
                    ),
                    None => "sends between ranks not counted: give --link".into(),
                }
            ),
            None => say!("pipeline step: not every rank fits"),
        }
    };
    show(
        "per-rank plans (each for its own micro-batches in flight)",
        plan,
    );
    if let Some(u) = uniform {
        show("one plan for all ranks (each planned as rank 0)", u);
        if let (Some(a), Some(b)) = (plan.makespan_seconds, u.makespan_seconds) {
            say!("per-rank plans: {:.3}× the time of one plan for all", a / b);
        }
    }
    say!("");
    say!("m/r: micro-batches in flight on the rank; held: what each waiting micro-batch keeps;");
    say!("gap: to the certificate (no persistent schedule that fits is faster per micro-batch);");
    say!("exact: the optimum over persistent schedules (pieces of up to 12 stages).");
    if let Some(beta) = offload {
        say!(
            "offload: waiting micro-batches' held bytes sent to the host at {}/s each way and",
            format_bytes(beta as u64)
        );
        say!("prefetched before their backward (mb offloaded, bytes both ways, backward stalls; counted in");
        say!("the step, not in `rank step`); gap: to rotor's optimum at the whole budget.");
    }
    if chunked {
        say!("rank r.c: chunk c of rank r (piece c·p + r); peak and rank step are the rank's, every chunk");
        say!("in flight; gap: to rotor's optimum of the piece alone at the whole budget.");
    }
}

fn print_frameworks(n: &Nearest, plans: Option<f64>) {
    say!("");
    say!(
        "nearest framework settings (full-layer recomputation, one setting for every rank; {} stages taken for layers)",
        n.layers.len()
    );
    for (name, s) in [("megatron", n.megatron), ("torchtitan", n.torchtitan)] {
        match s {
            Some(s) => {
                let ratio = plans.map_or(String::new(), |t| {
                    format!(" (per-rank plans: {:.3}× its time)", t / s.makespan_seconds)
                });
                let peaks: Vec<String> = s.peaks.iter().map(|&b| format_bytes(b)).collect();
                say!("{name:<11} {}", s.config);
                say!(
                    "{:<11} step {}{ratio}; peaks {}",
                    "",
                    format_seconds(s.makespan_seconds),
                    peaks.join(", ")
                );
            }
            None => say!("{name:<11} no setting fits every rank"),
        }
    }
}
