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
//!   parameter gradients it creates are counted as the chain counts them
//!   (`Net::backward_stage`: in it, g^ℓ, for chains that carry
//!   `parameter_gradient_bytes`; booked outside for older ones).
//! - offload / prefetch move a^ℓ, or ā^ℓ (every tensor autograd saved for
//!   B^ℓ that F_all^ℓ allocated, and the output), into memory the counting
//!   allocator books as host, and back (`ffi::Storages`; src/shim/saved.cpp says
//!   why the storages move in place under their aliases).
//! - R(a^ℓ) / R(ā^ℓ) free a^ℓ's storage under every alias, as DTR evicts
//!   storages: the graph of stage ℓ+1 saved its input, so dropping the
//!   runner's handles alone would keep a^ℓ while the model frees it. The
//!   emptied handle waits in `discarded` until a forward recomputes a^ℓ
//!   (or a copy of it is on the device again), then the values go back
//!   under it with no copy (`ffi::restore`), so B^{ℓ+1} reads them from the
//!   one copy the model counts. Releasing a host copy frees no device memory
//!   and only drops it.
//!
//! Every forward of stage ℓ starts from the same seed, so dropout masks are
//! replayed on recomputation and the gradients equal a plain step's.
//!
//! On a GPU (feature `cuda`) the same code runs on the CUDA device: memory
//! from the caching allocator's statistics, op times between CUDA events,
//! offload / prefetch to pinned host memory on a side stream (src/shim/cuda.cpp;
//! `device` has the device-specific parts).

use super::device::{self, Timeline};
use super::ffi;
use super::net::{Gradients, Net};
use super::timing;
use crate::models::ModelSpec;
use crate::Failure;
use remat_core::format::ScheduleFile;
use remat_core::{Chain, Op, TensorKind};
use serde::Serialize;
use std::time::Instant;
use tch::Tensor;

/// ā^ℓ: the output with its graph, the leaf the stage read, and (when the
/// step records saved tensors) the storages an offload moves.
struct Saved {
    out: Tensor,
    leaf: Tensor,
    storages: Option<ffi::Storages>,
}

/// a^ℓ on the host: the tensor (its storage now booked as host) and the set
/// that moves it back.
struct HostAct {
    t: Tensor,
    checkpoint: bool,
    storages: ffi::Storages,
}

/// The state of one step: which tensors exist, as in the simulator.
pub struct Exec<'n> {
    net: &'n Net,
    /// Whether F_all registers ā^ℓ's saved tensors (needed to offload ā).
    record_saved: bool,
    /// a^ℓ (plain, no graph) on the device, and whether F_ck made it a checkpoint.
    act: Vec<Option<(Tensor, bool)>>,
    /// ā^ℓ on the device.
    saved: Vec<Option<Saved>>,
    /// δ^ℓ.
    grad: Vec<Option<Tensor>>,
    /// Offloaded a^ℓ.
    act_host: Vec<Option<HostAct>>,
    /// Offloaded ā^ℓ.
    saved_host: Vec<Option<Saved>>,
    /// a^ℓ released at the storage level: its emptied handle (no graph),
    /// kept while no device copy of a^ℓ exists.
    discarded: Vec<Option<Tensor>>,
    /// Times each operation, in list order (`op_seconds`).
    timeline: Timeline,
    /// Bytes really moved to host and back.
    pub offloaded_bytes: u64,
    pub prefetched_bytes: u64,
}

fn seed(l: usize) {
    tch::manual_seed(1_000 + l as i64);
}

/// Whether `ops` offloads some ā^ℓ (the step must then record saved tensors).
pub fn offloads_saved(ops: &[Op]) -> bool {
    ops.iter().any(|op| {
        matches!(
            op,
            Op::Offload {
                tensor: TensorKind::Saved,
                ..
            }
        )
    })
}

impl<'n> Exec<'n> {
    /// A step with a^0 (the input batch) and δ^L (the loss seed) resident.
    pub fn new(net: &'n Net) -> Exec<'n> {
        Exec::with_recording(net, false)
    }

    /// [`new`](Self::new), registering every ā^ℓ's saved tensors when
    /// `record_saved` (autograd saves through hooks then; see src/shim/saved.cpp).
    pub fn with_recording(net: &'n Net, record_saved: bool) -> Exec<'n> {
        if record_saved {
            ffi::install_saved_hooks();
        }
        let n = net.stages.len();
        let mut e = Exec {
            net,
            record_saved,
            act: (0..=n).map(|_| None).collect(),
            saved: (0..=n).map(|_| None).collect(),
            grad: (0..=n).map(|_| None).collect(),
            act_host: (0..=n).map(|_| None).collect(),
            saved_host: (0..=n).map(|_| None).collect(),
            discarded: (0..=n).map(|_| None).collect(),
            timeline: Timeline::new(),
            offloaded_bytes: 0,
            prefetched_bytes: 0,
        };
        e.act[0] = Some((net.input(), false));
        e.grad[n] = Some(Tensor::ones([], (tch::Kind::Float, device::tch_device())));
        e
    }

    fn input(&self, l: usize) -> Result<Tensor, String> {
        if let Some((t, _)) = &self.act[l - 1] {
            return Ok(t.detach());
        }
        if let Some(s) = &self.saved[l - 1] {
            return Ok(s.out.detach());
        }
        Err(format!(
            "stage {l}: its input a^{} is not on the device",
            l - 1
        ))
    }

    /// Runs one operation.
    pub fn step(&mut self, op: Op) -> Result<(), String> {
        device::op_boundary()?;
        self.timeline.begin()?;
        let n = self.net.stages.len();
        let l = op.stage();
        let stage_zero_ok = op.is_transfer() || matches!(op, Op::Release { .. });
        if l > n || (l == 0 && !stage_zero_ok) {
            return Err(format!("{op}: stage {l} does not exist (1..={n})"));
        }
        match op {
            Op::ForwardAll { .. } => {
                let mut x = self.input(l)?;
                if l > 1 {
                    x = x.set_requires_grad(true);
                }
                seed(l);
                let f = &self.net.stages[l - 1].1;
                let (out, storages) = if self.record_saved {
                    let set = ffi::Storages::new();
                    let y = set.record(|| f(&x));
                    set.add(&y);
                    (y, Some(set))
                } else {
                    (f(&x), None)
                };
                self.saved[l] = Some(Saved {
                    out,
                    leaf: x,
                    storages,
                });
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
                let Saved { out, mut leaf, .. } = take(
                    &mut self.saved[l],
                    op,
                    format!("ā^{l} is not on the device"),
                )?;
                let g = take(&mut self.grad[l], op, format!("δ^{l} is not on the device"))?;
                if self.act[l - 1].is_none() && self.saved[l - 1].is_none() {
                    return Err(format!("{op}: its input a^{} is not on the device", l - 1));
                }
                self.net.backward_stage(l, out, g)?;
                if l > 1 {
                    self.grad[l - 1] = ffi::take_grad(&mut leaf);
                }
                drop(leaf);
                // A plain a^{ℓ-1} is not needed any more; ā^{ℓ-1} waits for B^{ℓ-1}.
                self.act[l - 1] = None;
            }
            Op::Offload {
                tensor: TensorKind::Output,
                ..
            } => {
                let (t, checkpoint) =
                    take(&mut self.act[l], op, format!("a^{l} is not on the device"))?;
                // The storage moves under every alias (a graph that read a^ℓ
                // as its input keeps reading it after the prefetch).
                let storages = ffi::Storages::new();
                storages.add(&t);
                self.offloaded_bytes += storages.offload()?;
                self.act_host[l] = Some(HostAct {
                    t,
                    checkpoint,
                    storages,
                });
            }
            Op::Prefetch {
                tensor: TensorKind::Output,
                ..
            } => {
                let h = take(&mut self.act_host[l], op, format!("a^{l} has no host copy"))?;
                self.prefetched_bytes += h.storages.prefetch()?;
                self.act[l] = Some((h.t, h.checkpoint));
            }
            Op::Offload {
                tensor: TensorKind::Saved,
                ..
            } => {
                let s = take(
                    &mut self.saved[l],
                    op,
                    format!("ā^{l} is not on the device"),
                )?;
                let storages = s.storages.as_ref().ok_or_else(|| {
                    format!("{op}: this step did not record ā^{l}'s saved tensors")
                })?;
                self.offloaded_bytes += storages.offload()?;
                self.saved_host[l] = Some(s);
            }
            Op::Prefetch {
                tensor: TensorKind::Saved,
                ..
            } => {
                let s = take(
                    &mut self.saved_host[l],
                    op,
                    format!("ā^{l} has no host copy"),
                )?;
                if let Some(storages) = &s.storages {
                    self.prefetched_bytes += storages.prefetch()?;
                }
                self.saved[l] = Some(s);
            }
            // A dynamic runtime's eviction (dtr, delta): the device copy, or
            // the host copy of a tensor recomputed instead, is dropped.
            Op::Release {
                tensor: TensorKind::Output,
                ..
            } => {
                if let Some((t, _)) = self.act[l].take() {
                    self.discard(l, t).map_err(|e| format!("{op}: {e}"))?;
                } else if self.act_host[l].take().is_none() {
                    return Err(format!(
                        "{op}: a^{l} is neither on the device nor on the host"
                    ));
                }
            }
            Op::Release {
                tensor: TensorKind::Saved,
                ..
            } => {
                if let Some(s) = self.saved[l].take() {
                    // ā^ℓ's graph goes with the handles; a^ℓ, which the
                    // next stage's graph may hold, at the storage level.
                    let a = s.out.detach();
                    drop(s);
                    self.discard(l, a).map_err(|e| format!("{op}: {e}"))?;
                } else if self.saved_host[l].take().is_none() {
                    return Err(format!(
                        "{op}: ā^{l} is neither on the device nor on the host"
                    ));
                }
            }
        }
        self.settle().map_err(|e| format!("{op}: {e}"))?;
        self.timeline.end()
    }

    /// The device handles of tensors other than a^ℓ (leaves excluded: the
    /// leaf of stage ℓ+1 is an alias of a^ℓ by construction).
    fn other_resident(&self, l: usize) -> impl Iterator<Item = &Tensor> {
        let acts = self
            .act
            .iter()
            .enumerate()
            .filter_map(move |(k, a)| match a {
                Some((t, _)) if k != l => Some(t),
                _ => None,
            });
        let outs = self
            .saved
            .iter()
            .enumerate()
            .filter_map(move |(k, s)| match s {
                Some(s) if k != l => Some(&s.out),
                _ => None,
            });
        let host_acts = self.act_host.iter().flatten().map(|h| &h.t);
        let host_outs = self.saved_host.iter().flatten().map(|s| &s.out);
        acts.chain(outs)
            .chain(host_acts)
            .chain(host_outs)
            .chain(self.grad.iter().flatten())
    }

    /// Releases the device copy `t` of a^ℓ: its storage's bytes are freed
    /// under every alias and the emptied handle waits for a^ℓ's next device
    /// copy. A storage that another tensor of the step shares (a stage
    /// returning a view of its input) is not a^ℓ's alone: only the handle
    /// is dropped then.
    fn discard(&mut self, l: usize, t: Tensor) -> Result<(), String> {
        if self.other_resident(l).any(|o| ffi::same_storage(o, &t)) {
            return Ok(());
        }
        ffi::discard(&t)?;
        self.discarded[l] = Some(t);
        Ok(())
    }

    /// Puts a device copy of a^ℓ back under each released a^ℓ's storage,
    /// for every ℓ that has one again (the operation just run recomputed
    /// it: F_ck / F_∅ as a^ℓ, F_all inside ā^ℓ).
    fn settle(&mut self) -> Result<(), String> {
        for l in 0..self.discarded.len() {
            let Some(old) = self.discarded[l].take() else {
                continue;
            };
            // A no-grad a^ℓ (F_ck, F_∅) can give its block away; ā^ℓ's
            // output stays where its graph saved it, and is borrowed.
            let restored = match (&self.act[l], &self.saved[l]) {
                (Some((t, _)), _) => ffi::restore(&old, t, true)?,
                (None, Some(s)) => ffi::restore(&old, &s.out, false)?,
                (None, None) => {
                    self.discarded[l] = Some(old);
                    continue;
                }
            };
            if restored == ffi::Restored::Moved {
                if let Some((t, _)) = &mut self.act[l] {
                    *t = old;
                }
            }
        }
        Ok(())
    }

    /// Seconds each operation took, in list order (waits for the device).
    pub fn op_seconds(&mut self) -> Result<Vec<f64>, String> {
        self.timeline.seconds()
    }

    /// What the chain model says is on the device now: ω_a^ℓ for each a^ℓ,
    /// ω_ā^ℓ for each ā^ℓ, ω_δ^ℓ for each δ^ℓ alone (host copies count
    /// nothing); the parameter gradients the backwards left are the
    /// caller's to add (`measure`), as they outlive the last δ.
    pub fn resident_bytes(&self, chain: &Chain) -> u64 {
        fn sum<T>(v: &[Option<T>], size: impl Fn(usize) -> u64) -> u64 {
            (0..v.len()).filter(|&l| v[l].is_some()).map(size).sum()
        }
        sum(&self.act, |l| chain.output_bytes(l))
            + sum(&self.saved, |l| chain.saved_bytes(l))
            + sum(&self.grad, |l| chain.activation_gradient_bytes(l))
    }

    pub fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        ops.iter().try_for_each(|&op| self.step(op))
    }
}

/// The store-all schedule of a net with `n` stages.
pub fn store_all(n: usize) -> Vec<Op> {
    (1..=n)
        .map(Op::forward_all)
        .chain((1..=n).rev().map(|stage| Op::Backward { stage }))
        .collect()
}

/// What one measured step did.
pub struct StepMeasure {
    /// Peak device bytes above the level before the step, as the chain
    /// counts them (the parameter gradients in it, or booked outside:
    /// `Net::gradients`).
    pub peak: u64,
    /// Peak of every device byte above the level before the step,
    /// parameter gradients included.
    pub total_peak: u64,
    pub seconds: f64,
    /// Bytes really moved to host and back.
    pub offloaded: u64,
    pub prefetched: u64,
    /// After each operation: (device bytes measured above the level before
    /// the step, the chain's sizes of the tensors then on the device).
    pub resident: Vec<(i64, u64)>,
    /// On a GPU: the caching allocator's reserved peak minus the allocated
    /// peak during the step (memory a device budget must leave room for).
    pub reserved_gap: Option<i64>,
}

/// One step of `ops` from parameter gradients set to none.
pub fn measured_step(net: &mut Net, ops: &[Op]) -> Result<StepMeasure, String> {
    measure(net, ops, None)
}

/// One step of `ops` from parameter gradients set to none, recording saved
/// tensors when the schedule offloads some ā^ℓ; with a chain, the resident
/// bytes after every operation, measured and as the chain counts them.
pub fn measure(net: &mut Net, ops: &[Op], chain: Option<&Chain>) -> Result<StepMeasure, String> {
    net.zero_grad();
    // The step starts with an idle device (nothing on the CPU).
    device::synchronize()?;
    let (base, base_total) = (ffi::current(), ffi::total());
    ffi::reset_peak();
    let start = Instant::now();
    let mut resident = Vec::new();
    let mut gradients = 0u64;
    let (offloaded, prefetched) = {
        let mut e = Exec::with_recording(net, offloads_saved(ops));
        for &op in ops {
            e.step(op)?;
            if let Some(c) = chain {
                if let Op::Backward { stage } = op {
                    // g^ℓ stays to the step's end (0 in chains without it).
                    gradients += c.stage(stage).parameter_gradient_bytes;
                }
                resident.push((ffi::current() - base, e.resident_bytes(c) + gradients));
            }
        }
        (e.offloaded_bytes, e.prefetched_bytes)
    };
    device::synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(StepMeasure {
        peak: (ffi::peak() - base).max(0) as u64,
        total_peak: (ffi::total_peak() - base_total).max(0) as u64,
        seconds,
        offloaded,
        prefetched,
        resident,
        reserved_gap: device::reserved_gap(ffi::total_peak()),
    })
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub model: String,
    pub algorithm: String,
    pub budget_bytes: u64,
    pub measured_peak_bytes: u64,
    pub predicted_peak_bytes: u64,
    /// Σ parameter-gradient bytes the step creates: in the measured and
    /// predicted peaks when the chain carries them (remat-profile's chains
    /// since 2026-11-30, `remat_torch`'s), outside both for older chains.
    pub parameter_gradient_bytes: u64,
    /// Whether they are in the chain (and so in both peaks).
    pub parameter_gradients_in_chain: bool,
    /// The step's peak with the parameter gradients counted: at most
    /// measured_peak_bytes + parameter_gradient_bytes.
    pub measured_total_peak_bytes: u64,
    /// measured / predicted − 1.
    pub peak_error: f64,
    /// Median of the timed steps.
    pub measured_seconds: f64,
    pub predicted_seconds: f64,
    pub steps: usize,
    /// Every parameter gradient equals the plain step's (false when the net
    /// has none to compare: a match over nothing proves nothing).
    pub gradients_match: bool,
    /// How many parameter gradients were compared.
    pub gradients_compared: usize,
    /// max |g − g_plain| over every parameter gradient.
    pub max_gradient_difference: f64,
    /// Bytes the simulator moves to the host and back.
    pub offloaded_bytes: u64,
    pub prefetched_bytes: u64,
    /// Bytes the run really moved out of device-booked memory and back.
    pub measured_offloaded_bytes: u64,
    pub measured_prefetched_bytes: u64,
    /// Whether, after every operation, the device bytes measured equal the
    /// chain's sizes of the tensors then resident (each offload really frees
    /// what the model frees, each prefetch takes what it takes).
    pub resident_bytes_match: bool,
    /// max |measured − chain| over the operations, and where it first differs.
    pub max_resident_difference_bytes: u64,
    pub first_resident_difference: Option<String>,
    /// On a GPU: the caching allocator's reserved peak minus the allocated
    /// peak in the measured step. A budget in device memory must leave room
    /// for it. Absent on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_gap_bytes: Option<i64>,
    /// The CPU threads the step ran with (the chain's, unless --threads).
    pub threads: usize,
    /// Why the measured time may not be the network's (another process
    /// competing for the cores, steps that varied): empty on a quiet run.
    pub timing_warnings: Vec<String>,
}

impl Report {
    pub fn human(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let resident = match &self.first_resident_difference {
            None => "\n  resident bytes after every op equal the chain's".to_string(),
            Some(d) => format!(
                "\n  resident bytes differ from the chain's by up to {} B; first {d}",
                self.max_resident_difference_bytes
            ),
        };
        let transfers = if self.offloaded_bytes + self.measured_offloaded_bytes > 0 {
            format!(
                "\n  moved: offloaded {:.3} MiB (predicted {:.3}), prefetched {:.3} MiB (predicted {:.3})",
                mib(self.measured_offloaded_bytes),
                mib(self.offloaded_bytes),
                mib(self.measured_prefetched_bytes),
                mib(self.prefetched_bytes)
            )
        } else {
            String::new()
        };
        let reserved = match self.reserved_gap_bytes {
            Some(g) => format!(
                "\n  caching allocator: reserved peak {:.3} MiB above the allocated peak (leave room for it in a device budget)",
                g as f64 / (1u64 << 20) as f64
            ),
            None => String::new(),
        };
        let gradients = if self.parameter_gradients_in_chain {
            format!(
                "the parameter gradients ({:.3} MiB) in both",
                mib(self.parameter_gradient_bytes)
            )
        } else {
            format!(
                "{:.3} MiB with the parameter gradients ({:.3} MiB, outside the chain)",
                mib(self.measured_total_peak_bytes),
                mib(self.parameter_gradient_bytes)
            )
        };
        format!(
            "{} {} at budget {:.2} MiB\n  peak:  measured {:.3} MiB, predicted {:.3} MiB ({:+.2} %); {}\n  time:  measured {:.4} s, predicted {:.4} s (median of {} steps, {} threads)\n  gradients match a plain store-all step: {} (max difference {:.3e}){}{}{}{}",
            self.model,
            self.algorithm,
            mib(self.budget_bytes),
            mib(self.measured_peak_bytes),
            mib(self.predicted_peak_bytes),
            100.0 * self.peak_error,
            gradients,
            self.measured_seconds,
            self.predicted_seconds,
            self.steps,
            self.threads,
            self.gradients_match,
            self.max_gradient_difference,
            transfers,
            resident,
            reserved,
            self.timing_warnings
                .iter()
                .map(|w| format!("\n  warning: {w}"))
                .collect::<String>()
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The largest |measured − chain| resident difference, and the first
/// operation where they differ.
fn resident_difference(ops: &[Op], resident: &[(i64, u64)]) -> (u64, Option<String>) {
    let mut max = 0;
    let mut first = None;
    for (i, (&(measured, model), op)) in resident.iter().zip(ops).enumerate() {
        let d = (measured - model as i64).unsigned_abs();
        if d > 0 && first.is_none() {
            first = Some(format!(
                "after op {i} ({op}): {measured} bytes measured on the device, the chain counts {model}"
            ));
        }
        max = max.max(d);
    }
    (max, first)
}

/// Runs `schedule` for one training step (three, for the time) and checks it.
pub fn run(
    spec: &ModelSpec,
    chain: &Chain,
    schedule: &ScheduleFile,
    threads: Option<usize>,
) -> Result<Report, Failure> {
    device::current()
        .select()
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    // The chain's times hold for its thread count: run with it by default.
    let threads = timing::set_threads(threads.or_else(|| chain_threads(&chain.source)));
    let trace = remat_core::simulator::judge(
        chain,
        &schedule.ops,
        schedule.budget_bytes,
        schedule
            .bandwidth_bytes_per_s
            .or(chain.bandwidth_bytes_per_s),
    )
    .map_err(|e| Failure::BadInput(format!("--schedule: {e}")))?;
    let mut net = super::nets::build(spec);
    let in_chain = chain.stages.iter().any(|s| s.parameter_gradient_bytes > 0);
    net.gradients = if in_chain {
        Gradients::InChain
    } else {
        Gradients::OutsideFromBackward
    };
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
    // Warm-up: learns each stage's parameter-gradient bytes, warms caches.
    measured_step(&mut net, &plain).map_err(rt)?;
    measured_step(&mut net, &plain).map_err(rt)?;
    let reference = ffi::on_host(|| net.gradients());
    let first = measure(&mut net, &schedule.ops, Some(chain)).map_err(rt)?;
    let (max_resident, first_resident) = resident_difference(&schedule.ops, &first.resident);
    let got = ffi::on_host(|| net.gradients());
    let mut diff = 0f64;
    let mut same = true;
    for ((na, a), (nb, b)) in reference.iter().zip(&got) {
        if na != nb || a.size() != b.size() {
            same = false;
            continue;
        }
        if a.numel() == 0 {
            continue; // a parameter with a zero-size dimension: nothing to compare
        }
        let d = (a - b).abs().max().double_value(&[]);
        let scale = a.abs().max().double_value(&[]);
        // NaN compares false: a NaN gradient never matches.
        same &= d <= 1e-5 * scale.max(1e-6);
        diff = if d.is_nan() { f64::NAN } else { diff.max(d) };
    }
    let mut times = vec![first.seconds];
    let load = timing::CpuLoad::start();
    for _ in 0..2 {
        times.push(measured_step(&mut net, &schedule.ops).map_err(rt)?.seconds);
    }
    let timing_warnings = timing::warnings(&timing::Evidence {
        threads,
        cores: timing::cores(),
        others_cores: if device::current() == device::Device::Cpu {
            load.others_cores()
        } else {
            None
        },
        steps: &times,
        forwards: &[],
    });
    let predicted_peak = trace.peak_bytes;
    Ok(Report {
        model: spec.tag(),
        algorithm: schedule.algorithm.clone(),
        budget_bytes: schedule.budget_bytes,
        measured_peak_bytes: first.peak,
        predicted_peak_bytes: predicted_peak,
        parameter_gradient_bytes: net.parameter_gradient_bytes().iter().sum(),
        parameter_gradients_in_chain: in_chain,
        measured_total_peak_bytes: first.total_peak,
        peak_error: first.peak as f64 / predicted_peak.max(1) as f64 - 1.0,
        measured_seconds: median(times),
        predicted_seconds: trace.makespan_seconds,
        steps: 3,
        gradients_match: same && reference.len() == got.len() && !reference.is_empty(),
        gradients_compared: reference.len(),
        max_gradient_difference: diff,
        offloaded_bytes: trace.offloaded_bytes,
        prefetched_bytes: trace.prefetched_bytes,
        measured_offloaded_bytes: first.offloaded,
        measured_prefetched_bytes: first.prefetched,
        resident_bytes_match: max_resident == 0,
        max_resident_difference_bytes: max_resident,
        first_resident_difference: first_resident,
        reserved_gap_bytes: first.reserved_gap,
        threads,
        timing_warnings,
    })
}

/// The thread count a chain's times were taken with (`threads=N` in the
/// source remat-profile writes; older chains say "(N threads)").
fn chain_threads(source: &str) -> Option<usize> {
    let tagged = source
        .split(|c: char| c.is_whitespace() || c == ';')
        .find_map(|w| w.strip_prefix("threads=")?.parse().ok());
    tagged.or_else(|| {
        let i = source.find(" threads)")?;
        source[..i].rsplit('(').next()?.parse().ok()
    })
}

/// The tensor in `slot`, taken out of it, or the error "`op`: `missing`"
/// (the simulator has already refused such a schedule; this guards the run).
fn take<T>(slot: &mut Option<T>, op: Op, missing: String) -> Result<T, String> {
    slot.take().ok_or_else(|| format!("{op}: {missing}"))
}

#[cfg(test)]
mod tests {
    use super::chain_threads;

    /// How this can fail: `run` timing a chain on another thread count than
    /// it was measured with (its times then do not compare). Mutation
    /// tried: the "(N threads)" fallback removed — the older source read as
    /// None.
    #[test]
    fn a_chain_says_its_thread_count() {
        let new = "remat-profile 0.1.0: model=resnet18 batch=8; device=cpu (1 threads) threads=1 cores=2; libtorch";
        assert_eq!(chain_threads(new), Some(1));
        let old = "remat-profile 0.1.0: model=vgg19 batch=4 image=32; device=cpu (2 threads); libtorch 2.13";
        assert_eq!(chain_threads(old), Some(2));
        assert_eq!(chain_threads("measured on an H100 with PyTorch 2.11"), None);
    }
}
