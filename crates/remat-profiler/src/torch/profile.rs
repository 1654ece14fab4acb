//! `remat-profile profile`: a network measured stage by stage into a chain.
//!
//! Sizes are allocator deltas (the counting CPU allocator, src/shim/memory.cpp),
//! never numel × element size, with the stage's input held apart:
//! - ω_a^ℓ: what a no-grad forward leaves allocated;
//! - ω_ā^ℓ: what a recording forward leaves allocated (output and graph);
//! - o_f^ℓ: the transient peak above what the op leaves, the larger of the
//!   recording and the no-grad forward;
//! - o_b^ℓ: the peak of B^ℓ, run the way autograd runs it (the output and
//!   δ^ℓ handed to autograd and freed as soon as their last reader ran),
//!   minus ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1}: signed, often negative;
//! - u_f^ℓ, u_b^ℓ: medians over k whole store-all steps after a warm-up,
//!   each op timed inside the step; the no-grad forward time likewise over
//!   k whole no-grad forward passes.
//!
//! Parameter gradients are set to none before each step, as PyTorch's
//! `optimizer.zero_grad()` does by default since 2.0: AccumulateGrad keeps
//! the gradient a backward creates (no temporary). They are in the chain as
//! the allocator sees them (`Gradients::InChain`, `remat_torch`'s
//! convention): in o_b^ℓ while B^ℓ creates them, then g^ℓ
//! (`parameter_gradient_bytes`) to the step's end.
//!
//! On a GPU (feature `cuda`, `--device cuda`) the same measurements read the
//! CUDA caching allocator's allocated bytes instead of the counting
//! allocator, op times are between CUDA events inside the store-all steps,
//! the bandwidth is the pinned host ↔ device copy rate, and `source` also
//! gives the caching allocator's reserved-vs-allocated gap in a store-all
//! step (see `device`).

use super::device::{self, Device, Timeline};
use super::ffi;
use super::net::Net;
use super::nets;
use super::runner::{self, Exec};
use super::timing;
use crate::models::ModelSpec;
use remat_core::{Chain, Op, Stage};
use std::time::Instant;
use tch::Tensor;

struct Sizes {
    output: u64,
    saved: u64,
    gradient: u64,
    /// o_f: the recording forward's (F_all's) transient.
    forward_overhead: i64,
    /// o_f∅: the no-grad forward's (F_ck's, F_∅'s) transient.
    forward_nograd_overhead: i64,
    backward_overhead: i64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The memory of every stage, and the size of the input batch.
///
/// The stages are measured in backward order (their inputs computed first by
/// no-grad forwards), so that when B^ℓ is measured the parameter gradients of
/// the stages after ℓ exist, as in a step: a weight shared with a later stage
/// then adds into its gradient here too.
fn measure_sizes(net: &mut Net) -> Result<(u64, Vec<Sizes>), String> {
    let n = net.stages.len();
    net.zero_grad();
    let before_input = ffi::current();
    let x0 = net.input();
    let input_bytes = (ffi::current() - before_input) as u64;
    let mut inputs = vec![x0];
    for l in 1..n {
        tch::manual_seed(1_000 + l as i64);
        let y = tch::no_grad(|| (net.stages[l - 1].1)(&inputs[l - 1]));
        inputs.push(y);
    }
    let mut out = Vec::with_capacity(n);
    for l in (1..=n).rev() {
        let f = &net.stages[l - 1].1;
        let mut x = if l > 1 {
            inputs[l - 1].detach().set_requires_grad(true)
        } else {
            inputs[0].shallow_clone()
        };
        let base0 = ffi::current();
        // No-grad forward: a^ℓ and its transient.
        ffi::reset_peak();
        tch::manual_seed(1_000 + l as i64);
        let y_ng = tch::no_grad(|| f(&x));
        let a = ffi::current() - base0;
        let of_ng = ffi::peak() - base0 - a;
        drop(y_ng);
        // Recording forward: ā^ℓ and its transient.
        let base1 = ffi::current();
        ffi::reset_peak();
        tch::manual_seed(1_000 + l as i64);
        let y = f(&x);
        let abar = ffi::current() - base1;
        let of_rec = ffi::peak() - base1 - abar;
        // δ^ℓ: a random gradient shaped like a^ℓ (ones for the loss).
        let before_g = ffi::current();
        let g = if l == n {
            Tensor::ones([], (tch::Kind::Float, device::tch_device()))
        } else {
            Tensor::randn_like(&y)
        };
        let d = ffi::current() - before_g;
        // B^ℓ as autograd runs it, the parameter gradients it creates
        // counted as they are allocated (they stay: g^ℓ).
        ffi::reset_peak();
        let created = net.backward_stage(l, y, g)? as i64;
        let peak_b = ffi::peak();
        let d_prev = if l > 1 {
            let gx = ffi::take_grad(&mut x);
            let s = ffi::current() - base1 - created;
            drop(gx);
            s
        } else {
            0
        };
        let ob = peak_b - base1 - abar - d - d_prev;
        let a = a.max(0) as u64;
        out.push(Sizes {
            output: a,
            // ā includes a^ℓ; a stage whose graph keeps less still holds its output.
            saved: (abar.max(0) as u64).max(a),
            gradient: d.max(0) as u64,
            forward_overhead: of_rec.max(0),
            forward_nograd_overhead: of_ng.max(0),
            backward_overhead: ob,
        });
        let s = out.last().expect("just pushed");
        eprintln!(
            "  stage {l:>3}/{n} {:<12} a {:>10}  ā {:>10}  δ {:>10}  o_f {:>10}  o_f∅ {:>10}  o_b {:>11}  param grads {:>10}",
            net.stages[l - 1].0,
            s.output,
            s.saved,
            s.gradient,
            s.forward_overhead,
            s.forward_nograd_overhead,
            s.backward_overhead,
            net.parameter_gradient_bytes()[l - 1],
        );
    }
    out.reverse();
    Ok((input_bytes, out))
}

/// Host-copy rate (bytes/s) of a 64 MiB tensor: on the CPU, the "link" of
/// offloading is a memory copy into host-booked memory.
fn copy_bandwidth() -> f64 {
    let t = Tensor::zeros([16 << 20], (tch::Kind::Float, tch::Device::Cpu));
    let mut rates = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let h = ffi::on_host(|| t.copy());
        rates.push((64u64 << 20) as f64 / start.elapsed().as_secs_f64());
        drop(h);
    }
    median(rates)
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    // Howard Hinnant's civil_from_days.
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Profiles `spec` with `steps` timed store-all steps, on `threads` CPU
/// threads (libtorch's default, one per core, when None).
pub fn profile(spec: &ModelSpec, steps: usize, threads: Option<usize>) -> Result<Chain, String> {
    let dev = device::current();
    dev.select().map_err(|e| e.to_string())?;
    let threads = timing::set_threads(threads);
    let mut net = nets::build(spec);
    let n = net.stages.len();
    match dev {
        Device::Cpu => eprintln!(
            "profiling {} ({n} stages) on cpu, {threads} threads of {} cores",
            spec.tag(),
            timing::cores()
        ),
        #[cfg(feature = "cuda")]
        Device::Cuda => eprintln!("profiling {} ({n} stages) on cuda:0", spec.tag()),
    }
    let plain = runner::store_all(n);
    // Warm-up: learns each stage's parameter-gradient bytes, warms caches
    // (on a GPU also cuDNN's algorithm choice and the caching allocator's pool).
    runner::measured_step(&mut net, &plain)?;
    let (input_bytes, sizes) = measure_sizes(&mut net)?;
    // Times inside whole store-all steps, and no-grad forwards inside whole
    // no-grad passes, the two interleaved: a burst of load then slows one
    // repetition of each rather than every repetition of one, and the
    // medians keep the quiet ones.
    let mut fwd = vec![Vec::new(); n];
    let mut bwd = vec![Vec::new(); n];
    let mut nograd = vec![Vec::new(); n];
    let mut step_seconds = Vec::with_capacity(steps);
    let load = timing::CpuLoad::start();
    for _ in 0..steps {
        net.zero_grad();
        let mut e = Exec::new(&net);
        e.run(&plain)?;
        let seconds = e.op_seconds()?;
        step_seconds.push(seconds.iter().sum::<f64>());
        for (op, &t) in plain.iter().zip(&seconds) {
            match *op {
                Op::ForwardAll { stage, .. } => fwd[stage - 1].push(t),
                Op::Backward { stage } => bwd[stage - 1].push(t),
                _ => {}
            }
        }
        drop(e);
        let mut x = net.input();
        let mut timeline = Timeline::new();
        for (l, (_, f)) in net.stages.iter().enumerate() {
            tch::manual_seed(1_000 + l as i64 + 1);
            timeline.begin()?;
            let y = tch::no_grad(|| f(&x));
            timeline.end()?;
            x = y;
        }
        for (l, t) in timeline.seconds()?.into_iter().enumerate() {
            nograd[l].push(t);
        }
    }
    let forwards: Vec<(String, f64, f64)> = (0..n)
        .map(|i| {
            (
                net.stages[i].0.clone(),
                median(fwd[i].clone()),
                median(nograd[i].clone()),
            )
        })
        .collect();
    let warnings = timing::warnings(&timing::Evidence {
        threads,
        cores: timing::cores(),
        // On a GPU the host's other processes do not slow the kernels.
        others_cores: if dev == Device::Cpu {
            load.others_cores()
        } else {
            None
        },
        steps: &step_seconds,
        forwards: &forwards,
    });
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let bandwidth = match device::bandwidth()? {
        Some(b) => b,
        None => copy_bandwidth(),
    };
    let stages = sizes
        .into_iter()
        .enumerate()
        .map(|(i, s)| Stage {
            name: net.stages[i].0.clone(),
            forward_seconds: median(fwd[i].clone()),
            backward_seconds: median(bwd[i].clone()),
            output_bytes: s.output,
            saved_bytes: s.saved,
            gradient_bytes: s.gradient,
            parameter_gradient_bytes: net.parameter_gradient_bytes()[i],
            input_freed_bytes: 0,
            forward_overhead_bytes: s.forward_overhead,
            backward_overhead_bytes: s.backward_overhead,
            forward_nograd_seconds: Some(median(nograd[i].clone())),
            forward_nograd_overhead_bytes: Some(s.forward_nograd_overhead),
            module: None,
            parameters: Vec::new(),
            menu: Vec::new(),
        })
        .collect();
    let mut source = match dev {
        Device::Cpu => cpu_source(spec, &net, steps, threads),
        #[cfg(feature = "cuda")]
        Device::Cuda => {
            // What the caching allocator reserves above the allocated peak
            // of a store-all step.
            let gap = runner::measured_step(&mut net, &plain)?.reserved_gap;
            cuda_source(spec, &net, steps, gap.unwrap_or(0))
        }
    };
    if !warnings.is_empty() {
        // In the chain too: whoever plans from it later should know.
        source.push_str(&format!("; timing warnings: {}", warnings.join(" | ")));
    }
    let chain = Chain {
        name: format!(
            "{} b{} {}",
            spec.name,
            spec.batch,
            if spec.seq > 0 {
                format!("seq{}", spec.seq)
            } else {
                format!("{}px", spec.image)
            }
        ),
        source,
        input_bytes,
        // The input batch needs no gradient: PyTorch never computes δ^0.
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: Some(bandwidth),
        stages,
        ..Chain::default()
    };
    chain
        .validate()
        .map_err(|e| format!("the measured chain is not valid ({e}); please report it"))?;
    Ok(chain)
}

/// The CPU chain's `source`: device, library, batch, size, date, method.
fn cpu_source(spec: &ModelSpec, net: &Net, steps: usize, threads: usize) -> String {
    format!(
        "remat-profile {}: {}; device=cpu ({threads} threads) threads={threads} cores={}; libtorch {} via tch 0.26, fp32, train mode, oneDNN on (its memory counted through c10), NNPACK off; measured {}; \
         method: counting CPU allocator deltas with the input held apart, ā = allocated after a recording forward, \
         o_f = max transient of recording and no-grad forwards, o_b signed (output and δ handed to autograd), \
         parameter gradients set to none before the step (PyTorch >= 2 zero_grad) and counted in the chain from their allocation in their stage's backward \
         (parameter_gradient_bytes, sum {} bytes), \
         times = median of {steps} store-all steps after warm-up, each followed by a no-grad pass (no-grad forward: median of those), \
         bandwidth = host copy rate",
        env!("CARGO_PKG_VERSION"),
        spec.tag(),
        timing::cores(),
        env!("REMAT_LIBTORCH_VERSION"),
        today(),
        net.parameter_gradient_bytes().iter().sum::<u64>(),
    )
}

/// The GPU chain's `source`, with the caching allocator's reserved gap.
#[cfg(feature = "cuda")]
fn cuda_source(spec: &ModelSpec, net: &Net, steps: usize, reserved_gap: i64) -> String {
    format!(
        "remat-profile {}: {}; device=cuda:0; libtorch {} via tch 0.26, fp32, train mode, PyTorch's cuDNN defaults; measured {}; \
         method: CUDA caching allocator deltas (allocated bytes, device statistics) with the input held apart, ā = allocated after a recording forward, \
         o_f = max transient of recording and no-grad forwards, o_b signed (output and δ handed to autograd), \
         parameter gradients set to none before the step (PyTorch >= 2 zero_grad) and counted in the chain from their allocation in their stage's backward \
         (parameter_gradient_bytes, sum {} bytes), \
         times = median of {steps} store-all steps after warm-up, between CUDA events at op boundaries (no-grad forward: median of {steps} no-grad passes, likewise), \
         bandwidth = pinned host<->device copy rate (64 MiB round trips on a side stream); \
         caching allocator: reserved peak exceeds the allocated peak by {reserved_gap} bytes in a store-all step (a budget in device memory must leave room for it)",
        env!("CARGO_PKG_VERSION"),
        spec.tag(),
        env!("REMAT_LIBTORCH_VERSION"),
        today(),
        net.parameter_gradient_bytes().iter().sum::<u64>(),
    )
}
