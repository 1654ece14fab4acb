//! The pipeline card: controls (ranks, micro-batches, schedule, chunks
//! under an interleaved schedule, budget per rank), a sentence, a table per
//! rank (per chunk, interleaved) and the ranks' memory curves.

use crate::kit::format::{bytes, ms};
use crate::kit::palette::{BACKWARD, FORWARD};
use crate::kit::scale::{CHART_W, MARGIN_L, MARGIN_R};
use crate::kit::widgets::{swatches, CardHead};
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::pipeline::{
    plan, plan_with, rank_chain, rank_curve_chunks, rank_curve_offloaded, Pipeline, PipelinePlan,
    PipelineSchedule, RankPlan,
};
use remat_core::Chain;
use remat_core::Op;
use std::fmt::Write;
use std::sync::Arc;

/// The longest chain the page plans here (beyond it: `remat pipeline`).
pub const MAX_STAGES: usize = 160;
/// The most ranks the place offers.
const MAX_RANKS: usize = 8;
/// The most chunks per rank it offers under an interleaved schedule.
const MAX_CHUNKS: usize = 4;
/// The links between ranks it offers (bytes per second; 0: not counted).
const LINKS: [(&str, f64); 5] = [
    ("not counted", 0.0),
    ("100 Gb/s Ethernet ≈ 12.5 GB/s", 12.5e9),
    ("PCIe 4 ×16 ≈ 32 GB/s", 32e9),
    ("400 Gb/s InfiniBand ≈ 50 GB/s", 50e9),
    ("NVLink 4 ≈ 450 GB/s", 450e9),
];
/// Each rank's link to host memory for `--offload` (bytes per second each
/// way; 0: no offloading).
const HOST_LINKS: [(&str, f64); 4] = [
    ("no offloading", 0.0),
    ("PCIe 4 ×16 ≈ 25 GB/s", 25e9),
    ("PCIe 5 ×16 ≈ 50 GB/s", 50e9),
    ("NVLink-C2C ≈ 450 GB/s", 450e9),
];
/// What the waiting micro-batches hold, under the running one.
const HELD: &str = "#b8c2cf";
const ROW_H: f64 = 118.0;
const PLOT_H: f64 = 84.0;

/// Everything the card shows for one setting.
#[derive(Clone, PartialEq)]
struct Planned {
    pipeline: Pipeline,
    budget: u64,
    /// Each rank's peak without a plan (store-all), from a roomy plan; by
    /// rank, where the plans are by piece (rank r's chunk c is piece c·p + r).
    plain: Vec<u64>,
    per_rank: PipelinePlan,
    uniform: PipelinePlan,
    /// β of each rank's host link when the ranks may offload.
    offload: Option<f64>,
}

/// The card's settings.
#[derive(Clone, Copy, PartialEq)]
struct Controls {
    ranks: usize,
    microbatches: usize,
    schedule: PipelineSchedule,
    /// Chunks per rank under an interleaved schedule (else ignored).
    chunks: usize,
    /// β between two ranks; None: sends take no time.
    link: Option<f64>,
    /// β of each rank's link to host memory; None: no offloading (and
    /// none under an interleaved schedule, which it does not model).
    offload: Option<f64>,
    /// The budget per rank, as a share of the most a rank needs without a
    /// plan.
    share: f64,
}

fn compute(chain: &Chain, c: Controls) -> Result<Planned, String> {
    if chain.len() > MAX_STAGES {
        return Err(format!(
            "The page plans pipelines of chains up to {MAX_STAGES} stages; this one has {}: use `remat pipeline` (docs/cli.md).",
            chain.len()
        ));
    }
    let Controls {
        ranks,
        microbatches,
        schedule,
        chunks,
        link,
        offload,
        share,
    } = c;
    let interleaved = schedule == PipelineSchedule::Interleaved1F1B;
    let chunks = if interleaved { chunks } else { 1 };
    let offload = offload.filter(|_| !interleaved);
    let ranks = ranks.clamp(1, chain.len());
    if ranks * chunks > chain.len() {
        return Err(format!(
            "{ranks} ranks × {chunks} chunks need {} pieces of at least one stage; this chain has {}.",
            ranks * chunks,
            chain.len()
        ));
    }
    let pipeline = Pipeline {
        split: Pipeline::even_split(chain.len(), ranks * chunks),
        microbatches,
        schedule,
        chunks,
        link_bytes_per_s: link,
    };
    let err = |e: remat_core::pipeline::PlanError| e.to_string();
    let roomy = plan(chain, &pipeline, &[u64::MAX / 4], false, &mut |_| true).map_err(err)?;
    let plain: Vec<u64> = (0..pipeline.ranks())
        .map(|r| roomy.ranks[r].judged.map_or(0, |j| j.peak_bytes))
        .collect();
    let top = plain.iter().copied().max().unwrap_or(0);
    let budget = (top as f64 * share).round() as u64;
    let per_rank =
        plan_with(chain, &pipeline, &[budget], false, offload, &mut |_| true).map_err(err)?;
    let uniform =
        plan_with(chain, &pipeline, &[budget], true, offload, &mut |_| true).map_err(err)?;
    Ok(Planned {
        pipeline,
        budget,
        plain,
        per_rank,
        uniform,
        offload,
    })
}

/// The stages a plan recomputes, for people: "2, 5, 6", "none".
fn recomputed(r: &RankPlan) -> String {
    if r.ops.is_none() {
        return "—".into();
    }
    let again: Vec<String> = r.recomputed_stages().iter().map(usize::to_string).collect();
    if again.is_empty() {
        "none".into()
    } else {
        again.join(", ")
    }
}

fn sentence(p: &Planned) -> String {
    let ranks = p.pipeline.ranks();
    let first = &p.per_rank.ranks[0];
    let last = &p.per_rank.ranks[ranks - 1];
    let mut s = format!(
        "Under {}, rank 0 holds up to {} micro-batches between their forward and their backward, rank {} holds {}. ",
        match p.pipeline.schedule {
            PipelineSchedule::OneFOneB => "1F1B".to_string(),
            PipelineSchedule::GPipe => "GPipe".to_string(),
            PipelineSchedule::Interleaved1F1B =>
                format!("interleaved 1F1B with {} chunks per rank", p.pipeline.chunks),
        },
        first.in_flight,
        ranks - 1,
        last.in_flight
    );
    match (p.per_rank.makespan_seconds, p.uniform.makespan_seconds) {
        (Some(a), Some(b)) => {
            let _ = write!(
                s,
                "With {} per rank, per-rank plans take {} per step, one plan for all ranks {} ({:.2}×): the later ranks need not recompute for micro-batches they never hold.",
                bytes(p.budget),
                ms(a),
                ms(b),
                a / b
            );
        }
        (Some(a), None) => {
            let _ = write!(
                s,
                "With {} per rank, per-rank plans take {} per step; one plan for all ranks (each planned as rank 0) does not fit some rank.",
                bytes(p.budget),
                ms(a)
            );
        }
        _ => {
            let _ = write!(
                s,
                "With {} per rank, some rank has no schedule that fits: give the ranks more memory or more of them.",
                bytes(p.budget)
            );
        }
    }
    if let Some(beta) = p.pipeline.link_bytes_per_s {
        let _ = write!(
            s,
            " Sends between ranks at {:.1} GB/s are counted in the steps.",
            beta / 1e9
        );
    }
    if let Some(beta) = p.offload {
        s.push_str(&offloading(p, beta));
    }
    s
}

/// What offloading to host memory does, rank by rank, for the sentence.
fn offloading(p: &Planned, beta: f64) -> String {
    let m = p.pipeline.microbatches;
    let ranks: Vec<String> = (p.per_rank.ranks.iter())
        .filter_map(|r| r.offload.map(|o| (r, o)))
        .map(|(r, o)| {
            format!(
                "rank {} sends {} of {m} micro-batches ({} each way) and stalls {}",
                r.rank,
                o.microbatches_offloaded,
                bytes(o.bytes_moved / 2),
                ms(o.stall_seconds)
            )
        })
        .collect();
    let link = format!("{:.0} GB/s", beta / 1e9);
    if ranks.is_empty() {
        format!(
            " With a {link} link to host memory no rank offloads: keeping what waits on the device is as fast here, or its copies would not hide behind the other micro-batches' phases."
        )
    } else {
        format!(
            " Over a {link} link to host memory, what waiting micro-batches hold goes to the host and comes back before their backward: {}.",
            ranks.join("; ")
        )
    }
}

/// Each rank's memory over its step, one row per rank on a common time
/// scale: the waiting micro-batches (grey) under the running one (blue
/// while a forward runs, green while a backward runs), the budget dashed.
fn figure(chain: &Chain, p: &Planned) -> (String, f64) {
    let ranks = p.pipeline.ranks();
    let h = 30.0 + ranks as f64 * ROW_H;
    let right = CHART_W - MARGIN_R;
    let width = right - MARGIN_L;
    let longest = (p.per_rank.ranks.iter())
        .filter_map(RankPlan::step_seconds)
        .fold(0.0, f64::max)
        .max(1e-12);
    let mut s = String::new();
    for rank in 0..ranks {
        // The rank's plans, one per chunk (one but interleaved): they share
        // the rank's judgement.
        let plans: Vec<&RankPlan> = (p.pipeline.pieces_of(rank).into_iter())
            .map(|k| &p.per_rank.ranks[k])
            .collect();
        let r = plans[0];
        let ranges: Vec<String> = (plans.iter())
            .map(|q| match q.first_stage == q.last_stage {
                true => q.first_stage.to_string(),
                false => format!("{}–{}", q.first_stage, q.last_stage),
            })
            .collect();
        let top = 10.0 + r.rank as f64 * ROW_H;
        let base = top + PLOT_H;
        let y_max = p.budget.max(r.judged.map_or(0, |j| j.peak_bytes)).max(1) as f64 * 1.08;
        let y = |b: u64| base - b as f64 / y_max * PLOT_H;
        // The rank, its stages (a line per chunk: "stages 1–4", "9–11"),
        // its micro-batches in flight.
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="13" font-weight="600" text-anchor="end" fill="#1f2733">rank {}</text>"##,
            MARGIN_L - 8.0,
            top + 14.0,
            r.rank
        );
        let mut line = top + 28.0;
        for (c, range) in ranges.iter().enumerate() {
            // "stages " where it fits the 70 px left of the plot at 10 px
            // (about 12 characters): not before 3-digit stage numbers.
            let lead = if c == 0 && range.chars().count() <= 5 {
                "stages "
            } else {
                ""
            };
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{line:.1}" font-size="10" text-anchor="end" fill="#5a6474">{lead}{range}</text>"##,
                MARGIN_L - 8.0,
            );
            line += 12.0;
        }
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#8a94a3">0 B</text><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#5a6474">{} in flight</text>"##,
            MARGIN_L - 8.0,
            base + 3.5,
            MARGIN_L - 8.0,
            line + 2.0,
            r.in_flight
        );
        let found: Option<Vec<(Chain, &[Op])>> = (plans.iter())
            .map(|q| (q.ops.as_deref()).map(|ops| (rank_chain(chain, q.stages()), ops)))
            .collect();
        let (Some(pieces), Some(judged)) = (found, r.judged) else {
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" font-size="13" fill="#b00020">no schedule fits {} with {} micro-batches in flight</text>"##,
                MARGIN_L + 10.0,
                top + PLOT_H / 2.0,
                bytes(r.budget_bytes),
                r.in_flight
            );
            continue;
        };
        let order = p.pipeline.order(r.rank);
        let chunks: Vec<(&Chain, &[Op])> = pieces.iter().map(|(c, ops)| (c, *ops)).collect();
        // A rank that offloads: its waiting micro-batches on the device
        // only while they are (or are in transit), its phases after their
        // stalls.
        let curve = match (r.offload, chunks.as_slice()) {
            (Some(o), [(piece, ops)]) => rank_curve_offloaded(piece, ops, &order, o.bytes_per_s),
            _ => rank_curve_chunks(&chunks, &order),
        };
        let Ok(curve) = curve else {
            continue;
        };
        // The curve's highest level: the judged peak (the page's test
        // reads it beside the judge's).
        let drawn = (curve.iter())
            .map(|pt| pt.running_bytes.saturating_add(pt.held_bytes))
            .max()
            .unwrap_or(0);
        // One column per pixel: the highest total there, so that the drawn
        // peak is the judged one however many events a column holds.
        let columns = width.ceil() as usize;
        let mut col: Vec<Option<(u64, u64, bool)>> = vec![None; columns + 1];
        for (i, pt) in curve.iter().enumerate() {
            let end = curve.get(i + 1).map_or(pt.seconds, |n| n.seconds);
            let (a, b) = (pt.seconds / longest * width, end / longest * width);
            let forward = order[pt.slot].phase == remat_core::pipeline::Phase::Forward;
            let hi = (b.ceil() as usize).min(columns);
            let lo = (a.floor() as usize).min(hi);
            let total = pt.running_bytes + pt.held_bytes;
            for cell in &mut col[lo..=hi] {
                if cell.is_none_or(|(t, _, _)| total > t) {
                    *cell = Some((total, pt.held_bytes, forward));
                }
            }
        }
        for (c, v) in col.iter().enumerate() {
            let Some((total, held, forward)) = *v else {
                continue;
            };
            let x = MARGIN_L + c as f64;
            let _ = write!(
                s,
                r##"<rect x="{x:.1}" y="{:.1}" width="1.6" height="{:.1}" fill="{HELD}"/><rect x="{x:.1}" y="{:.1}" width="1.6" height="{:.1}" fill="{}"/>"##,
                y(held),
                base - y(held),
                y(total),
                y(held) - y(total),
                if forward { FORWARD } else { BACKWARD }
            );
        }
        let by = y(r.budget_bytes);
        let _ = write!(
            s,
            r##"<line x1="{MARGIN_L}" x2="{right}" y1="{by:.1}" y2="{by:.1}" stroke="#b00020" stroke-dasharray="5 4"/><text x="{right}" y="{:.1}" font-size="11" text-anchor="end" fill="#b00020">budget {}</text><line x1="{MARGIN_L}" x2="{right}" y1="{base:.1}" y2="{base:.1}" stroke="#8a94a3"/>"##,
            by - 4.0,
            bytes(r.budget_bytes)
        );
        // The peak and where it comes from.
        let slot = order[judged.peak_slot];
        let at = curve
            .iter()
            .filter(|pt| pt.slot == judged.peak_slot)
            .map(|pt| pt.seconds)
            .next()
            .unwrap_or(0.0);
        let px = MARGIN_L + at / longest * width;
        let what = match slot.phase {
            remat_core::pipeline::Phase::Forward => "forward",
            remat_core::pipeline::Phase::Backward => "backward",
        };
        let chunk = if plans.len() > 1 {
            format!(" (chunk {})", slot.chunk)
        } else {
            String::new()
        };
        let why = if judged.held_at_peak == 0 {
            format!(
                "peak {}: the {what} of micro-batch {}{chunk} alone",
                bytes(judged.peak_bytes),
                slot.microbatch
            )
        } else if plans.len() > 1 {
            format!(
                "peak {}: the {what} of micro-batch {}{chunk} beside {} waiting",
                bytes(judged.peak_bytes),
                slot.microbatch,
                judged.held_at_peak
            )
        } else {
            format!(
                "peak {}: the {what} of micro-batch {} beside {} waiting × {}",
                bytes(judged.peak_bytes),
                slot.microbatch,
                judged.held_at_peak,
                bytes(r.cost.map_or(0, |c| c.held_bytes))
            )
        };
        let anchor = if px > MARGIN_L + width * 0.6 {
            "end"
        } else {
            "start"
        };
        let _ = write!(
            s,
            r##"<text class="pipeline-peak" data-rank="{}" data-bytes="{}" data-drawn="{drawn}" x="{px:.1}" y="{:.1}" font-size="12" font-weight="600" text-anchor="{anchor}" fill="#1f2733">{why}</text>"##,
            r.rank,
            judged.peak_bytes,
            (y(judged.peak_bytes) - 4.0).max(top + 10.0)
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#3a4350">each rank's compute over one step, micro-batch after micro-batch in its order (waits for the other ranks left out{}); 0 to {}</text>"##,
        (MARGIN_L + right) / 2.0,
        h - 8.0,
        if p.offload.is_some() {
            "; stalls for prefetches in"
        } else {
            ""
        },
        ms(longest)
    );
    (s, h)
}

fn table(p: &Planned) -> impl IntoView {
    // By rank, then chunk (the plans are by piece: chunk c of rank r is
    // piece c·p + r).
    let mut pieces: Vec<usize> = (0..p.per_rank.ranks.len()).collect();
    pieces.sort_by_key(|&k| (p.per_rank.ranks[k].rank, p.per_rank.ranks[k].chunk));
    let interleaved = p.pipeline.chunks > 1;
    let rows = (pieces.into_iter())
        .map(|k| (&p.per_rank.ranks[k], &p.uniform.ranks[k]))
        .map(|(r, u)| {
            let plain = &p.plain[r.rank];
            let peak = r
                .judged
                .map_or("none fits".to_string(), |j| bytes(j.peak_bytes));
            let held = r.cost.map_or("—".to_string(), |c| bytes(c.held_bytes));
            let step = r.judged.map_or("—".to_string(), |j| ms(j.compute_seconds));
            let m = p.pipeline.microbatches;
            let moved = r.offload.map_or("none".to_string(), |o| {
                format!("{} of {m} · stalls {}", o.microbatches_offloaded, ms(o.stall_seconds))
            });
            let offloading = p.offload.is_some();
            let ustep = u
                .judged
                .map_or("none fits".to_string(), |j| ms(j.compute_seconds));
            view! {
                <tr data-rank=r.rank.to_string() data-chunk=r.chunk.to_string() data-in-flight=r.in_flight.to_string()>
                    <td>{if interleaved { format!("{} · chunk {}", r.rank, r.chunk) } else { r.rank.to_string() }}</td>
                    <td>{format!("{}–{}", r.first_stage, r.last_stage)}</td>
                    <td>{r.in_flight}</td>
                    <td>{bytes(*plain)}</td>
                    <td>{peak}</td>
                    <td>{held}</td>
                    <td class="pipeline-recomputes">{recomputed(r)}</td>
                    <td>{step}</td>
                    {offloading.then(|| view! { <td class="pipeline-offloads">{moved}</td> })}
                    <td class="pipeline-uniform">{recomputed(u)}</td>
                    <td>{ustep}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div style="overflow-x:auto"><table class="grid" id="pipeline-table">
            <thead><tr>
                <th>"rank"</th><th>"stages"</th><th>"in flight"</th><th>"no plan needs"</th>
                <th>"peak"</th><th>"held, each waiting"</th>
                <th>"recomputes"</th><th>"compute"</th>
                {p.offload.is_some().then(|| view! { <th>"offloads"</th> })}
                <th>"one for all: recomputes"</th><th>"compute"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table></div>
    }
}

/// The place's card.
#[component]
pub fn PipelineCard() -> impl IntoView {
    let app = use_app();
    let ranks = RwSignal::new(4usize);
    let micro = RwSignal::new(8usize);
    let schedule = RwSignal::new(PipelineSchedule::OneFOneB);
    let chunks = RwSignal::new(2usize);
    let link = RwSignal::new(None::<f64>);
    let offload = RwSignal::new(None::<f64>);
    let share = RwSignal::new(0.6f64);
    let planned = Memo::new(move |_| {
        let chain: Arc<Chain> = app.loaded.chain.get();
        let controls = Controls {
            ranks: ranks.get(),
            microbatches: micro.get(),
            schedule: schedule.get(),
            chunks: chunks.get(),
            link: link.get(),
            offload: offload.get(),
            share: share.get(),
        };
        compute(&chain, controls).map(|p| (chain, p))
    });
    let number = |signal: RwSignal<usize>, lo: usize, hi: usize| {
        move |ev: leptos::ev::Event| {
            if let Ok(v) = event_target_value(&ev).parse::<usize>() {
                signal.set(v.clamp(lo, hi));
            }
        }
    };
    view! {
        <section class="card" id="pipeline-card">
            <CardHead title="Pipeline: one plan per rank">
                <label class="toggle">"ranks "
                    <input id="pipeline-ranks" type="number" min="1" max=MAX_RANKS.to_string()
                        prop:value=move || ranks.get().to_string() on:change=number(ranks, 1, MAX_RANKS) />
                </label>
                <label class="toggle">"micro-batches "
                    <input id="pipeline-microbatches" type="number" min="1" max="64"
                        prop:value=move || micro.get().to_string() on:change=number(micro, 1, 64) />
                </label>
                <label class="toggle">"schedule "
                    <select id="pipeline-schedule"
                        prop:value=move || schedule.get().name().to_string()
                        on:change=move |ev| {
                            if let Some(s) = PipelineSchedule::from_name(&event_target_value(&ev)) {
                                schedule.set(s);
                            }
                        }>
                        <option value="1f1b">"1F1B"</option>
                        <option value="gpipe">"GPipe"</option>
                        <option value="interleaved-1f1b">"interleaved 1F1B"</option>
                    </select>
                </label>
                <label class="toggle" title="interleaved 1F1B only: each rank holds this many pieces of the chain (virtual stages), rank r the pieces r, p + r, 2p + r, …">"chunks per rank "
                    <input id="pipeline-chunks" type="number" min="2" max=MAX_CHUNKS.to_string()
                        prop:disabled=move || schedule.get() != PipelineSchedule::Interleaved1F1B
                        prop:value=move || chunks.get().to_string() on:change=number(chunks, 2, MAX_CHUNKS) />
                </label>
                <label class="toggle" title="the link between two ranks: each forward waits for the previous rank's activation, each backward for the next rank's gradient">"link "
                    <select id="pipeline-link"
                        on:change=move |ev| link.set(event_target_value(&ev).parse::<f64>().ok().filter(|b| *b > 0.0))>
                        {LINKS.iter().map(|(name, beta)| view! { <option value=beta.to_string()>{*name}</option> }).collect_view()}
                    </select>
                </label>
                <label class="toggle" title="each rank's link to host memory: a micro-batch waiting between its forward and its backward may go to the host and come back before its backward (PipeOffload); 1F1B and GPipe">"offload "
                    <select id="pipeline-offload"
                        prop:disabled=move || schedule.get() == PipelineSchedule::Interleaved1F1B
                        on:change=move |ev| offload.set(event_target_value(&ev).parse::<f64>().ok().filter(|b| *b > 0.0))>
                        {HOST_LINKS.iter().map(|(name, beta)| view! { <option value=beta.to_string()>{*name}</option> }).collect_view()}
                    </select>
                </label>
                <label class="toggle">"budget per rank "
                    <input id="pipeline-budget" type="range" min="10" max="100" step="1"
                        prop:value=move || ((share.get() * 100.0).round() as u32).to_string()
                        on:input=move |ev| {
                            if let Ok(v) = event_target_value(&ev).parse::<f64>() {
                                share.set((v / 100.0).clamp(0.1, 1.0));
                            }
                        } />
                    <span id="pipeline-budget-words">{move || format!("{:.0} % of the most a rank needs without a plan", share.get() * 100.0)}</span>
                </label>
            </CardHead>
            <p class="hint">"The chain on the page, cut into consecutive pieces, one per rank; its batch is one micro-batch. Between a micro-batch's forward and its backward a rank keeps what its plan saves; under 1F1B rank r of p holds up to min(p − r, m) of them, so the first rank needs the most memory; under interleaved 1F1B each rank holds several pieces (chunks), planned together. Each rank is planned for its own micro-batches in flight (exactly, for pieces of up to 12 stages), and beside it one plan for all ranks, each planned as if it held rank 0's."</p>
            {move || match planned.get() {
                Err(e) => view! { <p class="hint" id="pipeline-error">{e}</p> }.into_any(),
                Ok((chain, p)) => {
                    let (fig, h) = figure(&chain, &p);
                    let makespan = p.per_rank.makespan_seconds.map_or(String::new(), |t| t.to_string());
                    let uniform = p.uniform.makespan_seconds.map_or(String::new(), |t| t.to_string());
                    view! {
                        <div id="pipeline" data-budget=p.budget.to_string() data-makespan=makespan data-uniform-makespan=uniform
                            data-offload=p.offload.map_or(String::new(), |b| b.to_string())>
                            <p id="pipeline-summary" class="min-memory-summary">{sentence(&p)}</p>
                            <div class="legend">
                                {swatches(&[(HELD, "micro-batches waiting for their backward"), (FORWARD, "a forward running"), (BACKWARD, "a backward running (with its recomputations)")])}
                                <span class="swatch"><i style="background:repeating-linear-gradient(90deg,#b00020 0 6px,transparent 6px 9px)"></i><span>"budget per rank"</span></span>
                            </div>
                            <div class="chart-wrap pipeline-chart">
                                <svg id="pipeline-svg" xmlns="http://www.w3.org/2000/svg" viewBox=format!("0 0 {CHART_W} {h}")
                                    font-family="Inter, system-ui, sans-serif" role="img"
                                    aria-label="each rank's memory over its step with the per-rank plans">
                                    <rect x="0" y="0" width=CHART_W height=h fill="#ffffff" />
                                    <g inner_html=fig></g>
                                </svg>
                            </div>
                            {table(&p)}
                            <p class="hint">"Times from the chain; sends between ranks counted only with a link chosen (a forward waits for its activation, a backward for its gradient, both overlapping compute); offloading counts a waiting micro-batch on the device in the phases its copies overlap and its backward's stall in the rank's step (the CLI's `--offload`, a prediction: the runtime does not offload yet); the CLI's `remat pipeline` gives the same plans, and `remat_torch.plan_pipeline` applies them under torch.distributed.pipelining (docs/pytorch.md, \"Pipelines\")."</p>
                        </div>
                    }.into_any()
                }
            }}
        </section>
    }
}
