//! Shared helpers for the integration tests: random chains and brute force.
#![allow(dead_code)]

use proptest::prelude::*;
use remat_core::pipeline::{Pipeline, PipelineSchedule};
use remat_core::simulator::simulate;
use remat_core::solvers::no_progress;
use remat_core::solvers::offload::pofo::{Filling, LossStep, Mode, Pofo};
use remat_core::solvers::persistent::Variant;
use remat_core::{Chain, Op, Stage};

/// A chain whose times and sizes are small integers, so every sum is exact
/// in f64 and the DP's value must equal the simulated makespan bit for bit.
///
/// `with_overheads` also draws what measured chains have: backward overheads
/// down to −(ω_δ^ℓ + ω_ā^ℓ) (autograd frees δ^ℓ and ā^ℓ while B^ℓ runs) and
/// no-grad forward times below the recording ones, and no-grad forward
/// transients o_f∅ apart from o_f (0..=6 against 0..=3: above and below it),
/// and parameter gradients g^ℓ (0..=4) that B^ℓ leaves resident.
/// How a test over these can fail: a DP that counts B^ℓ without its
/// (negative) overhead predicts a higher peak or a larger M_low than the
/// simulator measures, one that times F_ck / F_∅ with the recording u_f
/// predicts a slower schedule, and one that charges F_ck / F_∅ the recording
/// transient o_f (or F_all the no-grad one) predicts another peak, M_low or
/// feasibility than the simulator's. Mutations tried, all caught by
/// tests/exhaustive.rs: clamping o_b at 0 in `Chain::backward_bytes` (the
/// DPs' B^ℓ term), summing u_f instead of the no-grad times in rotor's C_ck
/// case, and o_f instead of o_f∅ in rotor's m_∅ (`none_term`).
pub fn integer_chain(max_len: usize, with_overheads: bool) -> impl Strategy<Value = Chain> {
    let stage = (
        1u32..=10,
        1u32..=20,
        0u64..=8,
        0u64..=6,
        0u64..=8,
        0i64..=3,
        -12i64..=3,
        proptest::option::of(0u32..=10),
        proptest::option::of(0i64..=6),
        0u64..=4,
    )
        .prop_map(
            move |(f, b, out, extra, grad, of, ob, nograd, of_nograd, params)| {
                let params = if with_overheads { params } else { 0 };
                let freed = (grad + out + extra) as i64 - params as i64;
                Stage {
                    name: String::new(),
                    forward_seconds: f as f64,
                    backward_seconds: b as f64,
                    output_bytes: out,
                    saved_bytes: out + extra,
                    gradient_bytes: grad,
                    parameter_gradient_bytes: params,
                    forward_overhead_bytes: if with_overheads { of } else { 0 },
                    backward_overhead_bytes: if with_overheads { ob.max(-freed) } else { 0 },
                    input_freed_bytes: 0,
                    forward_nograd_seconds: nograd
                        .filter(|_| with_overheads)
                        .map(|t| t.min(f) as f64),
                    forward_nograd_overhead_bytes: of_nograd.filter(|_| with_overheads),
                    module: None,
                    parameters: Vec::new(),
                    menu: Vec::new(),
                }
            },
        );
    (
        proptest::collection::vec(stage, 1..=max_len),
        0u64..=8,
        0u64..=8,
        proptest::collection::vec(0u64..=8, max_len),
    )
        .prop_map(move |(stages, input, input_grad, freed)| Chain {
            name: "random".into(),
            source: "proptest".into(),
            input_bytes: input,
            input_gradient_bytes: input_grad,
            bandwidth_bytes_per_s: None,
            stages: if with_overheads {
                with_freed_inputs(stages, &freed)
            } else {
                stages
            },
            ..Chain::default()
        })
}

/// ι^ℓ drawn for stages 2..=L, at most their input ω_a^{ℓ-1} (a loss whose
/// backward reads neither its logits nor lets the head read them): B^ℓ
/// then runs beside less than its whole input. How a test over these can
/// fail: a planner or the simulator that books B^ℓ on top of its whole
/// input while the other drops ι^ℓ predicts another peak, M_low or
/// feasibility. Mutations tried: the simulator's B^ℓ without
/// `- input_freed_bytes` → tests/exhaustive.rs (rotor and revolve against
/// their enumerations), tests/optimal.rs, tests/properties.rs (every solver
/// judged valid) and tests/dynamic.rs fail; ι^ℓ drawn up to the input
/// alone, not clamped to what B^ℓ leaves of δ^ℓ and ā^ℓ → tests/dynamic.rs
/// fails (DTR's books after B^ℓ above the budget: peak 85 > 84).
pub fn with_freed_inputs(mut stages: Vec<Stage>, freed: &[u64]) -> Vec<Stage> {
    for l in 1..stages.len() {
        let input = stages[l - 1].output_bytes;
        let s = &stages[l];
        // What `Chain::validate` allows: no more than B^ℓ leaves of δ^ℓ
        // and ā^ℓ (the classic option's; these stages have no menu).
        let room = (s.backward_overhead_bytes + s.gradient_bytes as i64 + s.saved_bytes as i64
            - s.parameter_gradient_bytes as i64)
            .max(0) as u64;
        stages[l].input_freed_bytes = freed.get(l).copied().unwrap_or(0).min(input).min(room);
    }
    stages
}

/// A chain with real-valued times and large sizes, like a profiled network.
pub fn real_chain(max_len: usize) -> impl Strategy<Value = Chain> {
    let stage = (
        1e-4f64..1e-1,
        1e-4f64..2e-1,
        1u64..1 << 30,
        0u64..1 << 30,
        0u64..1 << 24,
        any::<bool>(),
        proptest::option::of(0.3f64..1.0),
        // A no-grad transient apart from o_f, above or below it.
        proptest::option::of(0u64..1 << 25),
        // Parameter gradients, kept by B^ℓ (`set_to_none=True`) or not.
        proptest::option::of(0u64..1 << 26),
    )
        .prop_map(
            |(f, b, out, extra, of, freeing, nograd, of_nograd, params)| Stage {
                name: String::new(),
                forward_seconds: f,
                backward_seconds: b,
                output_bytes: out,
                saved_bytes: out + extra,
                gradient_bytes: out,
                parameter_gradient_bytes: params.unwrap_or(0),
                forward_overhead_bytes: of as i64,
                // Measured the way autograd runs, B^ℓ often frees δ^ℓ early;
                // it keeps its parameter gradients.
                backward_overhead_bytes: if freeing {
                    -((out / 2) as i64)
                } else {
                    (of / 2) as i64
                }
                .max(params.unwrap_or(0) as i64 - (2 * out + extra) as i64),
                input_freed_bytes: 0,
                forward_nograd_seconds: nograd.map(|r| f * r),
                forward_nograd_overhead_bytes: of_nograd.map(|o| o as i64),
                module: None,
                parameters: Vec::new(),
                menu: Vec::new(),
            },
        );
    (proptest::collection::vec(stage, 1..=max_len), 1u64..1 << 28).prop_map(|(stages, input)| {
        Chain {
            name: "random".into(),
            source: "proptest".into(),
            input_bytes: input,
            input_gradient_bytes: input,
            bandwidth_bytes_per_s: None,
            stages,
            ..Chain::default()
        }
    })
}

/// Every persistent schedule of stages s..=t, by the structure the rotor
/// report proves persistent schedules have (Section 4.2): start with F_all^s
/// (then s+1..t, then B^s) or with F_ck^s, F_∅ up to the next checkpoint s'−1,
/// then s'..t, then s..s'−1. `Revolve` keeps F_all right before its B.
pub fn persistent_schedules(s: usize, t: usize, variant: Variant) -> Vec<Vec<Op>> {
    if s == t {
        return vec![vec![Op::forward_all(s), Op::Backward { stage: s }]];
    }
    let mut out = Vec::new();
    if variant == Variant::Rotor {
        for sub in persistent_schedules(s + 1, t, variant) {
            let mut ops = vec![Op::forward_all(s)];
            ops.extend(sub);
            ops.push(Op::Backward { stage: s });
            out.push(ops);
        }
    }
    for next in s + 1..=t {
        let mut prefix = vec![Op::ForwardCheckpoint { stage: s }];
        prefix.extend((s + 1..next).map(|stage| Op::ForwardNone { stage }));
        let lefts = persistent_schedules(s, next - 1, variant);
        for right in persistent_schedules(next, t, variant) {
            for left in &lefts {
                let mut ops = prefix.clone();
                ops.extend(right.iter().copied());
                ops.extend(left.iter().copied());
                out.push(ops);
            }
        }
    }
    out
}

/// (makespan, peak) of every persistent schedule, judged by the simulator.
pub fn measured(chain: &Chain, variant: Variant) -> Vec<(f64, u64)> {
    persistent_schedules(1, chain.len(), variant)
        .iter()
        .map(|ops| {
            let t = simulate(chain, ops).expect("every enumerated schedule is valid");
            (t.makespan_seconds, t.peak_bytes)
        })
        .collect()
}

/// The fastest of `all` whose peak fits `budget`.
pub fn brute_best(all: &[(f64, u64)], budget: u64) -> Option<f64> {
    all.iter()
        .filter(|(_, peak)| *peak <= budget)
        .map(|(time, _)| *time)
        .min_by(f64::total_cmp)
}

/// `integer_chain` whose stages carry menus of 0–2 options (issue 41):
/// each keeps between a^ℓ and a^ℓ + 8 (below, equal to or above ā^ℓ), adds
/// 0–8 s to B^ℓ, and has its own o_b (down to what B^ℓ may free) and,
/// sometimes, its own o_f. How a test over these can fail: a DP that
/// shifts a sub-problem by the classic ā^s instead of the option's, checks
/// the classic m_all, or times B^s without the option's recomputation
/// finds another optimum (or another feasibility) than the enumeration
/// the simulator judges, and a simulator that sizes ā^ℓ or times B^ℓ by
/// the classic option disagrees with the DP's prediction.
pub fn integer_chain_with_menus(max_len: usize) -> impl Strategy<Value = Chain> {
    let option = (
        0u64..=8,
        0u32..=8,
        -12i64..=3,
        proptest::option::of(0i64..=4),
    );
    (
        integer_chain(max_len, true),
        proptest::collection::vec(proptest::collection::vec(option, 0..=2), max_len),
    )
        .prop_map(|(mut chain, menus)| {
            for (s, menu) in chain.stages.iter_mut().zip(menus) {
                s.menu = menu
                    .into_iter()
                    .enumerate()
                    .map(|(k, (keep, extra, ob, of))| {
                        let saved = s.output_bytes + keep;
                        let freed =
                            (s.gradient_bytes + saved) as i64 - s.parameter_gradient_bytes as i64;
                        remat_core::MenuOption {
                            policy: format!("p{k}"),
                            saved_bytes: saved,
                            backward_extra_seconds: extra as f64,
                            backward_overhead_bytes: ob.max(-freed),
                            forward_overhead_bytes: of,
                        }
                    })
                    .collect();
            }
            chain
        })
}

/// Every schedule of `schedules` with each F_all^ℓ run once per option of
/// stage ℓ's menu (the classic included): the persistent class with menus.
pub fn with_every_option(chain: &Chain, schedules: &[Vec<Op>]) -> Vec<Vec<Op>> {
    let mut out = Vec::new();
    for ops in schedules {
        let mut partial = vec![Vec::with_capacity(ops.len())];
        for &op in ops {
            let options = match op {
                Op::ForwardAll { stage, .. } => chain.stage(stage).option_count(),
                _ => 1,
            };
            let mut next = Vec::with_capacity(partial.len() * options);
            for p in &partial {
                for k in 0..options {
                    let mut q = p.clone();
                    q.push(match op {
                        Op::ForwardAll { stage, .. } => Op::ForwardAll {
                            stage,
                            option: k as u8,
                        },
                        other => other,
                    });
                    next.push(q);
                }
            }
            partial = next;
        }
        out.extend(partial);
    }
    out
}

/// (makespan, peak) of every persistent schedule with every option.
pub fn measured_with_options(chain: &Chain, variant: Variant) -> Vec<(f64, u64)> {
    let class = persistent_schedules(1, chain.len(), variant);
    with_every_option(chain, &class)
        .iter()
        .map(|ops| {
            let t = simulate(chain, ops).expect("every enumerated schedule is valid");
            (t.makespan_seconds, t.peak_bytes)
        })
        .collect()
}

/// pofo's DP for one budget on `slots` slots, its tables as large as they
/// need (no limit), filled the default way, `loss` its loss step.
pub fn pofo_dp(
    chain: &Chain,
    mode: Mode,
    budget: u64,
    slots: usize,
    bw: Option<f64>,
    loss: LossStep,
) -> Pofo {
    let unlimited = 1 << 40;
    Pofo::build(
        chain,
        mode,
        budget,
        slots,
        bw,
        unlimited,
        Filling::default(),
        &mut no_progress(),
    )
    .unwrap()
    .with_loss_step(loss)
}

/// n stages cut as evenly as they go over `ranks` ranks (at most n), m
/// micro-batches under GPipe or 1F1B, one chunk per rank, no link.
pub fn pipeline_of(n: usize, ranks: usize, m: usize, gpipe: bool) -> Pipeline {
    Pipeline {
        split: Pipeline::even_split(n, ranks.clamp(1, n)),
        microbatches: m,
        schedule: if gpipe {
            PipelineSchedule::GPipe
        } else {
            PipelineSchedule::OneFOneB
        },
        chunks: 1,
        link_bytes_per_s: None,
    }
}
