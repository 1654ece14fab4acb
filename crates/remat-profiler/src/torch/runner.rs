//! `remat-profile run`: one training step that follows a schedule.
//!
//! Each operation does what the chain model says it does (the table in
//! docs/model.md):
//! - F_all^ℓ runs stage ℓ recording its graph, on a detached copy-free alias
//!   of its input that requires grad (so B^ℓ stops there and leaves δ^{ℓ-1}
//!   in its `.grad`); the graph and the output are ā^ℓ.
//! - F_ck^ℓ / F_∅^ℓ run it under no-grad; F_∅ drops a plain input that is no
//!   checkpoint.
//! - B^ℓ hands the output and δ^ℓ to autograd (freed as autograd goes), takes
//!   δ^{ℓ-1} out of the input's `.grad`, and drops a plain a^{ℓ-1}; the
//!   parameter gradients it creates are booked outside the chain
//!   (`Net::backward_stage`).
//! - offload / prefetch copy a^ℓ to and from host memory (on the CPU: memory
//!   the counting allocator books as host, not device).
//!
//! Every forward of stage ℓ starts from the same seed, so dropout masks are
//! replayed on recomputation and the gradients equal a plain step's.

use super::ffi;
use super::nets::Net;
use crate::models::ModelSpec;
use crate::Failure;
use remat_core::format::ScheduleFile;
use remat_core::{Chain, Op, TensorKind};
use serde::Serialize;
use std::time::Instant;
use tch::Tensor;

/// The state of one step: which tensors exist, as in the simulator.
pub struct Exec<'n> {
    net: &'n Net,
    /// a^ℓ (plain, no graph), and whether F_ck made it a checkpoint.
    act: Vec<Option<(Tensor, bool)>>,
    /// ā^ℓ: the output with its graph, and the leaf the stage read.
    saved: Vec<Option<(Tensor, Tensor)>>,
    /// δ^ℓ.
    grad: Vec<Option<Tensor>>,
    /// Offloaded a^ℓ (host copies) with their checkpoint flag.
    host: Vec<Option<(Tensor, bool)>>,
    /// Seconds each operation took, in list order.
    pub op_seconds: Vec<f64>,
}

fn seed(l: usize) {
    tch::manual_seed(1_000 + l as i64);
}

impl<'n> Exec<'n> {
    /// A step with a^0 (the input batch) and δ^L (the loss seed) resident.
    pub fn new(net: &'n Net) -> Exec<'n> {
        let n = net.stages.len();
        let mut e = Exec {
            net,
            act: (0..=n).map(|_| None).collect(),
            saved: (0..=n).map(|_| None).collect(),
            grad: (0..=n).map(|_| None).collect(),
            host: (0..=n).map(|_| None).collect(),
            op_seconds: Vec::new(),
        };
        e.act[0] = Some((net.input(), false));
        e.grad[n] = Some(Tensor::ones([], (tch::Kind::Float, tch::Device::Cpu)));
        e
    }

    fn input(&self, l: usize) -> Result<Tensor, String> {
        if let Some((t, _)) = &self.act[l - 1] {
            return Ok(t.detach());
        }
        if let Some((y, _)) = &self.saved[l - 1] {
            return Ok(y.detach());
        }
        Err(format!("stage {l}: its input a^{} is not resident", l - 1))
    }

    /// Runs one operation.
    pub fn step(&mut self, op: Op) -> Result<(), String> {
        let start = Instant::now();
        let n = self.net.stages.len();
        let l = op.stage();
        if l > n || (l == 0 && !op.is_transfer()) {
            return Err(format!("{op}: stage {l} does not exist (1..={n})"));
        }
        match op {
            Op::ForwardAll { .. } => {
                let mut x = self.input(l)?;
                if l > 1 {
                    x = x.set_requires_grad(true);
                }
                seed(l);
                let y = (self.net.stages[l - 1].1)(&x);
                self.saved[l] = Some((y, x));
            }
            Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. } => {
                let x = self.input(l)?;
                seed(l);
                let y = tch::no_grad(|| (self.net.stages[l - 1].1)(&x));
                drop(x);
                if let Some((_, checkpoint)) = &mut self.act[l - 1] {
                    if matches!(op, Op::ForwardCheckpoint { .. }) {
                        *checkpoint = true;
                    } else if !*checkpoint {
                        self.act[l - 1] = None;
                    }
                }
                self.act[l] = Some((y, false));
            }
            Op::Backward { .. } => {
                let (y, mut x) = self.saved[l]
                    .take()
                    .ok_or_else(|| format!("{op}: ā^{l} is not resident"))?;
                let g = self.grad[l]
                    .take()
                    .ok_or_else(|| format!("{op}: δ^{l} is not resident"))?;
                self.net.backward_stage(l, y, g)?;
                if l > 1 {
                    self.grad[l - 1] = ffi::take_grad(&mut x);
                }
                drop(x);
                // A plain a^{ℓ-1} is not needed any more; ā^{ℓ-1} waits for B^{ℓ-1}.
                self.act[l - 1] = None;
            }
            Op::Offload { tensor, .. } => {
                if tensor != TensorKind::Output {
                    return Err(format!("{op}: offloading ā (the saved tensors of an autograd graph) is not supported by this runner yet"));
                }
                let (t, checkpoint) = self.act[l]
                    .take()
                    .ok_or_else(|| format!("{op}: a^{l} is not on the device"))?;
                let h = ffi::on_host(|| t.copy());
                drop(t);
                self.host[l] = Some((h, checkpoint));
            }
            Op::Prefetch { tensor, .. } => {
                if tensor != TensorKind::Output {
                    return Err(format!(
                        "{op}: prefetching ā is not supported by this runner yet"
                    ));
                }
                let (h, checkpoint) = self.host[l]
                    .take()
                    .ok_or_else(|| format!("{op}: a^{l} has no host copy"))?;
                self.act[l] = Some((h.copy(), checkpoint));
            }
        }
        self.op_seconds.push(start.elapsed().as_secs_f64());
        Ok(())
    }

    pub fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        ops.iter().try_for_each(|&op| self.step(op))
    }
}

/// The store-all schedule of a net with `n` stages.
pub fn store_all(n: usize) -> Vec<Op> {
    (1..=n)
        .map(|stage| Op::ForwardAll { stage })
        .chain((1..=n).rev().map(|stage| Op::Backward { stage }))
        .collect()
}

/// What one measured step took.
pub struct StepMeasure {
    /// Peak bytes above the level before the step, parameter gradients
    /// booked outside (the chain's accounting).
    pub peak: u64,
    /// Peak of every byte above the level before the step, parameter
    /// gradients included.
    pub total_peak: u64,
    pub seconds: f64,
}

/// One step of `ops` from parameter gradients set to none.
pub fn measured_step(net: &mut Net, ops: &[Op]) -> Result<StepMeasure, String> {
    net.zero_grad();
    let (base, base_total) = (ffi::current(), ffi::total());
    ffi::reset_peak();
    let start = Instant::now();
    {
        let mut e = Exec::new(net);
        e.run(ops)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(StepMeasure {
        peak: (ffi::peak() - base).max(0) as u64,
        total_peak: (ffi::total_peak() - base_total).max(0) as u64,
        seconds,
    })
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub model: String,
    pub algorithm: String,
    pub budget_bytes: u64,
    pub measured_peak_bytes: u64,
    pub predicted_peak_bytes: u64,
    /// Σ parameter-gradient bytes the step creates (outside the chain).
    pub parameter_gradient_bytes: u64,
    /// The step's peak with the parameter gradients counted: at most
    /// measured_peak_bytes + parameter_gradient_bytes.
    pub measured_total_peak_bytes: u64,
    /// measured / predicted − 1.
    pub peak_error: f64,
    /// Median of the timed steps.
    pub measured_seconds: f64,
    pub predicted_seconds: f64,
    pub steps: usize,
    pub gradients_match: bool,
    /// max |g − g_plain| over every parameter gradient.
    pub max_gradient_difference: f64,
    pub offloaded_bytes: u64,
}

impl Report {
    pub fn human(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        format!(
            "{} {} at budget {:.2} MiB\n  peak:  measured {:.3} MiB, predicted {:.3} MiB ({:+.2} %); {:.3} MiB with the parameter gradients ({:.3} MiB, outside the chain)\n  time:  measured {:.4} s, predicted {:.4} s (median of {} steps)\n  gradients match a plain store-all step: {} (max difference {:.3e})",
            self.model,
            self.algorithm,
            mib(self.budget_bytes),
            mib(self.measured_peak_bytes),
            mib(self.predicted_peak_bytes),
            100.0 * self.peak_error,
            mib(self.measured_total_peak_bytes),
            mib(self.parameter_gradient_bytes),
            self.measured_seconds,
            self.predicted_seconds,
            self.steps,
            self.gradients_match,
            self.max_gradient_difference
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `schedule` for one training step (three, for the time) and checks it.
pub fn run(spec: &ModelSpec, chain: &Chain, schedule: &ScheduleFile) -> Result<Report, Failure> {
    ffi::install();
    let trace = remat_core::solvers::offload::judge(
        chain,
        &schedule.ops,
        schedule.budget_bytes,
        schedule
            .bandwidth_bytes_per_s
            .or(chain.bandwidth_bytes_per_s),
    )
    .map_err(|e| Failure::BadInput(format!("--schedule: {e}")))?;
    let mut net = super::nets::build(spec);
    if net.stages.len() != chain.len() {
        return Err(Failure::BadInput(format!(
            "--chain: {} stages, but {} has {}",
            chain.len(),
            spec.name,
            net.stages.len()
        )));
    }
    let plain = store_all(chain.len());
    let rt = Failure::Runtime;
    // Warm-up: learns each stage's parameter-gradient bytes (booked outside
    // the chain), warms caches.
    measured_step(&mut net, &plain).map_err(rt)?;
    measured_step(&mut net, &plain).map_err(rt)?;
    let reference = ffi::on_host(|| net.gradients());
    let measure = measured_step(&mut net, &schedule.ops).map_err(rt)?;
    let (peak, first) = (measure.peak, measure.seconds);
    let got = ffi::on_host(|| net.gradients());
    let mut diff = 0f64;
    let mut same = true;
    for ((na, a), (nb, b)) in reference.iter().zip(&got) {
        same &= na == nb && a.size() == b.size();
        let d = (a - b).abs().max().double_value(&[]);
        let scale = a.abs().max().double_value(&[]);
        same &= d <= 1e-5 * scale.max(1e-6);
        diff = diff.max(d);
    }
    let mut times = vec![first];
    for _ in 0..2 {
        times.push(measured_step(&mut net, &schedule.ops).map_err(rt)?.seconds);
    }
    let predicted_peak = trace.peak_bytes;
    Ok(Report {
        model: spec.tag(),
        algorithm: schedule.algorithm.clone(),
        budget_bytes: schedule.budget_bytes,
        measured_peak_bytes: peak,
        predicted_peak_bytes: predicted_peak,
        parameter_gradient_bytes: net.parameter_gradient_bytes().iter().sum(),
        measured_total_peak_bytes: measure.total_peak,
        peak_error: peak as f64 / predicted_peak.max(1) as f64 - 1.0,
        measured_seconds: median(times),
        predicted_seconds: trace.makespan_seconds,
        steps: 3,
        gradients_match: same && reference.len() == got.len(),
        max_gradient_difference: diff,
        offloaded_bytes: trace.offloaded_bytes,
    })
}
