//! The state machine behind [`simulate_with`](super::simulate_with) and
//! [`states`](super::states): where each tensor is (device, host, absent),
//! the two lanes' clocks and the memory events. The model it implements is
//! the module documentation of `simulator` (`mod.rs`).

use super::trace::{AtPeak, Lane, MemoryStep, Residency, Span, TensorId, Trace};
use super::{OpState, SimError, SimOptions};
use crate::model::Chain;
use crate::schedule::{analysis, Op, TensorKind};

#[derive(Clone, Copy, Debug)]
enum Where {
    /// Not on the device nor on the host; `freed_by` is the operation that
    /// freed it, if any.
    Absent { freed_by: Option<usize> },
    Device {
        /// When its producer ends (compute or prefetch).
        ready: f64,
        /// When the last operation that read it so far ends.
        last_use: f64,
        /// F_ck kept it as a checkpoint: F_∅ does not drop it.
        checkpoint: bool,
        residency: usize,
    },
    Host {
        ready: f64,
        offloaded_by: usize,
        checkpoint: bool,
    },
}

#[derive(Clone, Copy)]
struct Event {
    time: f64,
    seq: u32,
    alloc: bool,
    bytes: u64,
    op: u32,
    /// The residency this event opens or closes; [`NO_RESIDENCY`] for the
    /// bytes a negative o_b gives back while B^ℓ runs (no tensor's).
    residency: u32,
}

const NO_RESIDENCY: u32 = u32::MAX;

pub(super) struct Simulation<'a> {
    chain: &'a Chain,
    bandwidth: Option<f64>,
    memory_limit: Option<u64>,
    /// Device bytes once every event so far has happened.
    known_level: u64,
    /// End of the last compute operation listed so far (issue point of a prefetch).
    last_compute_end: f64,
    /// Start of the last span on the compute lane listed so far, a release's
    /// included (issue point of an offload).
    last_compute_start: f64,
    /// a^ℓ for ℓ in 0..=L.
    act: Vec<Where>,
    /// ā^ℓ for ℓ in 1..=L (index 0 unused).
    saved: Vec<Where>,
    /// The option of the F_all^ℓ that made ā^ℓ (0, the classic, until one
    /// runs): it sets ā^ℓ's size and what B^ℓ costs.
    saved_option: Vec<u8>,
    /// δ^ℓ for ℓ in 0..=L.
    grad: Vec<Where>,
    /// ω_δ^ℓ alone, once, not per operation. The parameter gradients the
    /// chain folds into it ([`Chain::gradient_bytes`]) are residencies of
    /// their own here, so that the trace names them: g^ℓ from B^ℓ's start
    /// to the step's end. The sums, and so every peak, are the fold's.
    grad_bytes: Vec<u64>,
    /// How many backward operations ran: they can only run as B^L, …, B^1,
    /// since B^ℓ reads the δ^ℓ that B^{ℓ+1} produced.
    backwards_done: usize,
    compute_free: f64,
    copy_free: f64,
    compute_busy: f64,
    compute_idle: f64,
    offloaded_bytes: u64,
    prefetched_bytes: u64,
    spans: Vec<Span>,
    events: Vec<Event>,
    residency: Vec<Residency>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Act(usize),
    Saved(usize),
    Grad(usize),
}

impl Slot {
    fn id(self) -> TensorId {
        match self {
            Slot::Act(l) => TensorId::Activation(l),
            Slot::Saved(l) => TensorId::Saved(l),
            Slot::Grad(l) => TensorId::Gradient(l),
        }
    }
}

impl<'a> Simulation<'a> {
    pub(super) fn new(chain: &'a Chain, options: SimOptions, n_ops: usize) -> Simulation<'a> {
        let l = chain.len();
        let mut sim = Simulation {
            chain,
            bandwidth: options.bandwidth,
            memory_limit: options.memory_limit,
            known_level: 0,
            last_compute_end: 0.0,
            last_compute_start: 0.0,
            act: vec![Where::Absent { freed_by: None }; l + 1],
            saved: vec![Where::Absent { freed_by: None }; l + 1],
            saved_option: vec![0; l + 1],
            grad: vec![Where::Absent { freed_by: None }; l + 1],
            grad_bytes: (0..=l)
                .map(|k| chain.activation_gradient_bytes(k))
                .collect(),
            backwards_done: 0,
            compute_free: 0.0,
            copy_free: 0.0,
            compute_busy: 0.0,
            compute_idle: 0.0,
            offloaded_bytes: 0,
            prefetched_bytes: 0,
            spans: Vec::with_capacity(n_ops),
            events: Vec::with_capacity(3 * n_ops + 2),
            residency: Vec::with_capacity(2 * n_ops + 2),
        };
        // The step starts with the input batch and the loss gradient seed.
        sim.allocate(Slot::Act(0), 0.0, 0.0, u32::MAX);
        sim.allocate(Slot::Grad(l), 0.0, 0.0, u32::MAX);
        sim
    }

    /// The device and host sets after operation `index` (see [`OpState`]).
    pub(super) fn op_state(&self, index: usize) -> OpState {
        let l = self.chain.len();
        let slots = (0..=l)
            .map(Slot::Act)
            .chain((1..=l).map(Slot::Saved))
            .chain((0..=l).map(Slot::Grad));
        let (mut device, mut host) = (Vec::new(), Vec::new());
        for slot in slots {
            match self.state(slot) {
                Where::Device { .. } => device.push(slot.id()),
                Where::Host { .. } => host.push(slot.id()),
                Where::Absent { .. } => {}
            }
        }
        OpState {
            op: index,
            device,
            host,
        }
    }

    fn bytes(&self, slot: Slot) -> u64 {
        match slot {
            Slot::Act(l) => self.chain.output_bytes(l),
            Slot::Saved(l) => {
                let k = self.saved_option[l] as usize;
                self.chain.stage(l).choice(k).saved_bytes
            }
            Slot::Grad(l) => self.grad_bytes[l],
        }
    }

    fn state(&self, slot: Slot) -> Where {
        match slot {
            Slot::Act(l) => self.act[l],
            Slot::Saved(l) => self.saved[l],
            Slot::Grad(l) => self.grad[l],
        }
    }

    fn state_mut(&mut self, slot: Slot) -> &mut Where {
        match slot {
            Slot::Act(l) => &mut self.act[l],
            Slot::Saved(l) => &mut self.saved[l],
            Slot::Grad(l) => &mut self.grad[l],
        }
    }

    fn set(&mut self, slot: Slot, w: Where) {
        *self.state_mut(slot) = w;
    }

    fn event(&mut self, time: f64, alloc: bool, bytes: u64, op: u32, residency: u32) {
        if bytes > 0 {
            let seq = self.events.len() as u32;
            let e = Event {
                time,
                seq,
                alloc,
                bytes,
                op,
                residency,
            };
            if alloc {
                self.known_level += bytes;
            } else {
                self.known_level -= bytes;
            }
            if self.memory_limit.is_some() {
                // Kept sorted for `fit_start`; seq grows, so equal times stay in order.
                let at = self.events.partition_point(|o| o.time <= time);
                self.events.insert(at, e);
            } else {
                self.events.push(e);
            }
        }
    }

    /// The earliest time ≥ `t0` from which `need` more bytes fit under the
    /// memory limit next to every known allocation, now and later; `t0` when
    /// there is no limit or when they never fit (the op then runs over it).
    fn fit_start(&self, t0: f64, need: u64) -> f64 {
        let Some(limit) = self.memory_limit else {
            return t0;
        };
        let Some(room) = limit.checked_sub(need) else {
            return t0;
        };
        if need == 0 || self.known_level > room {
            return t0;
        }
        // Walk back over groups of equal time; `level` holds from the group's
        // time to the next group's. Levels only matter from t0 on.
        let ev = &self.events;
        let mut level = self.known_level;
        let mut from = t0;
        let mut k = ev.len();
        while k > 0 && ev[k - 1].time > t0 {
            if level > room {
                return from;
            }
            let time = ev[k - 1].time;
            from = time;
            while k > 0 && ev[k - 1].time == time {
                let e = ev[k - 1];
                level = if e.alloc {
                    level - e.bytes
                } else {
                    level + e.bytes
                };
                k -= 1;
            }
        }
        if level <= room {
            t0
        } else {
            from
        }
    }

    /// Puts a tensor on the device from `start`; it can be read from `ready`.
    fn allocate(&mut self, slot: Slot, start: f64, ready: f64, op: u32) {
        let bytes = self.bytes(slot);
        let residency = self.residency.len();
        self.event(start, true, bytes, op, residency as u32);
        self.residency.push(Residency {
            tensor: slot.id(),
            bytes,
            start,
            end: f64::NAN,
        });
        self.set(
            slot,
            Where::Device {
                ready,
                last_use: ready,
                checkpoint: false,
                residency,
            },
        );
    }

    fn free(&mut self, slot: Slot, time: f64, op: usize) {
        if let Where::Device { residency, .. } = self.state(slot) {
            let bytes = self.bytes(slot);
            self.event(time, false, bytes, op as u32, residency as u32);
            self.residency[residency].end = time;
            self.set(slot, Where::Absent { freed_by: Some(op) });
        }
    }

    fn workspace(&mut self, bytes: u64, start: f64, end: f64, op: usize) {
        if bytes > 0 {
            let residency = self.residency.len() as u32;
            self.event(start, true, bytes, op as u32, residency);
            self.event(end, false, bytes, op as u32, residency);
            self.residency.push(Residency {
                tensor: TensorId::Workspace(op),
                bytes,
                start,
                end,
            });
        }
    }

    /// g^ℓ, allocated when B^ℓ starts and held to the step's end (the
    /// optimizer reads it), as `zero_grad(set_to_none=True)` leaves it.
    fn parameter_gradients(&mut self, l: usize, bytes: u64, start: f64, op: usize) {
        if bytes > 0 {
            let residency = self.residency.len() as u32;
            self.event(start, true, bytes, op as u32, residency);
            self.residency.push(Residency {
                tensor: TensorId::ParameterGradient(l),
                bytes,
                start,
                end: f64::NAN,
            });
        }
    }

    fn error(&self, index: usize, op: Op, slot: Option<Slot>, reason: String) -> SimError {
        SimError {
            index,
            op,
            tensor: slot.map(|s| s.id().to_string()).unwrap_or_default(),
            reason,
        }
    }

    /// Explains why `slot` cannot be read now.
    fn missing(&self, index: usize, op: Op, slot: Slot) -> SimError {
        let reason = match self.state(slot) {
            Where::Absent { freed_by: None } => {
                "is not resident: it was never computed".to_string()
            }
            Where::Absent { freed_by: Some(by) } => {
                format!("is not resident: it was freed by op {by}")
            }
            Where::Host { offloaded_by, .. } => {
                format!("is on the host (offloaded by op {offloaded_by}): prefetch it first")
            }
            Where::Device { .. } => "is resident".to_string(),
        };
        self.error(index, op, Some(slot), reason)
    }

    /// Ready time of a tensor that must be on the device.
    fn read(&mut self, index: usize, op: Op, slot: Slot) -> Result<f64, SimError> {
        match self.state(slot) {
            Where::Device { ready, .. } => Ok(ready),
            _ => Err(self.missing(index, op, slot)),
        }
    }

    /// The input of stage ℓ: a^{ℓ-1} or ā^{ℓ-1}, whichever is on the device.
    fn input(&mut self, index: usize, op: Op, l: usize) -> Result<(Slot, f64), SimError> {
        if let Where::Device { ready, .. } = self.act[l - 1] {
            return Ok((Slot::Act(l - 1), ready));
        }
        if l >= 2 {
            if let Where::Device { ready, .. } = self.saved[l - 1] {
                return Ok((Slot::Saved(l - 1), ready));
            }
            if let Where::Host { .. } = self.saved[l - 1] {
                return Err(self.missing(index, op, Slot::Saved(l - 1)));
            }
        }
        Err(self.missing(index, op, Slot::Act(l - 1)))
    }

    fn mark_used(&mut self, slot: Slot, until: f64) {
        if let Where::Device { last_use, .. } = self.state_mut(slot) {
            *last_use = last_use.max(until);
        }
    }

    fn must_be_absent(&self, index: usize, op: Op, slot: Slot) -> Result<(), SimError> {
        let reason = match self.state(slot) {
            Where::Absent { .. } => return Ok(()),
            Where::Device { .. } => "is already resident: this operation would compute it twice",
            Where::Host { .. } => {
                "already has a copy on the host: prefetch it instead of recomputing"
            }
        };
        Err(self.error(index, op, Some(slot), reason.to_string()))
    }

    /// Reserves the compute lane from max(lane free, `ready`) for `seconds`.
    fn compute_lane(&mut self, index: usize, ready: f64, seconds: f64) -> (f64, f64) {
        let start = self.compute_free.max(ready);
        self.compute_idle += start - self.compute_free;
        self.compute_busy += seconds;
        let end = self.span(index, Lane::Compute, start, seconds);
        self.compute_free = end;
        self.last_compute_end = end;
        self.last_compute_start = start;
        (start, end)
    }

    fn copy_lane(&mut self, index: usize, ready: f64, seconds: f64) -> (f64, f64) {
        let start = self.copy_free.max(ready);
        let end = self.span(index, Lane::Copy, start, seconds);
        self.copy_free = end;
        (start, end)
    }

    /// Records operation `index` on `lane` from `start`; returns its end.
    fn span(&mut self, index: usize, lane: Lane, start: f64, seconds: f64) -> f64 {
        let end = start + seconds;
        self.spans.push(Span {
            op: index,
            lane,
            start,
            end,
        });
        end
    }

    pub(super) fn step(&mut self, index: usize, op: Op) -> Result<(), SimError> {
        let n = self.chain.len();
        let l = op.stage();
        let lowest = if op.is_transfer() || matches!(op, Op::Release { .. }) {
            0
        } else {
            1
        };
        if l < lowest || l > n {
            return Err(self.error(
                index,
                op,
                None,
                format!("stage {l} does not exist: stages are numbered {lowest}..={n}"),
            ));
        }
        match op {
            Op::ForwardAll { .. } | Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. } => {
                self.forward(index, op, l)
            }
            Op::Backward { .. } => self.backward(index, op, l),
            Op::Offload { tensor, .. } | Op::Prefetch { tensor, .. } => {
                let slot = self.transferred(index, op, l, tensor)?;
                if matches!(op, Op::Offload { .. }) {
                    self.offload(index, op, slot)
                } else {
                    self.prefetch(index, op, slot)
                }
            }
            Op::Release { tensor, .. } => {
                let slot = self.transferred(index, op, l, tensor)?;
                self.release(index, op, slot)
            }
        }
    }

    fn forward(&mut self, index: usize, op: Op, l: usize) -> Result<(), SimError> {
        let (input, ready) = self.input(index, op, l)?;
        let out = match op {
            Op::ForwardAll { .. } => Slot::Saved(l),
            _ => Slot::Act(l),
        };
        self.must_be_absent(index, op, out)?;
        let stage = self.chain.stage(l);
        // F_ck and F_∅ record no graph: the no-grad time and transient when
        // the chain has them. F_all runs the option it names.
        let records = matches!(op, Op::ForwardAll { .. });
        let seconds = if records {
            stage.forward_seconds
        } else {
            stage.nograd_forward_seconds()
        };
        let overhead = match op {
            Op::ForwardAll { option, .. } => {
                let k = option as usize;
                if k >= stage.option_count() {
                    let reason = match stage.menu.len() {
                        0 => format!(
                            "option {k} does not exist: stage {l} has no menu, only option 0"
                        ),
                        m => format!("option {k} does not exist: stage {l}'s options are 0..={m}"),
                    };
                    return Err(self.error(index, op, None, reason));
                }
                self.saved_option[l] = option;
                stage.choice(k).forward_overhead
            }
            _ => stage.forward_overhead_of(records),
        };
        let ready = self.fit_start(self.compute_free.max(ready), self.bytes(out) + overhead);
        let (start, end) = self.compute_lane(index, ready, seconds);
        self.allocate(out, start, end, index as u32);
        self.workspace(overhead, start, end, index);
        self.mark_used(input, end);
        if let (Slot::Act(_), Where::Device { checkpoint, .. }) = (input, self.state(input)) {
            match op {
                Op::ForwardCheckpoint { .. } => self.set_checkpoint(input),
                Op::ForwardNone { .. } if !checkpoint => self.free(input, end, index),
                _ => {}
            }
        }
        Ok(())
    }

    fn set_checkpoint(&mut self, slot: Slot) {
        if let Where::Device { checkpoint, .. } = self.state_mut(slot) {
            *checkpoint = true;
        }
    }

    fn backward(&mut self, index: usize, op: Op, l: usize) -> Result<(), SimError> {
        let grad_ready = self.read(index, op, Slot::Grad(l))?;
        let saved_ready = self.read(index, op, Slot::Saved(l))?;
        let (_, input_ready) = self.input(index, op, l)?;
        self.must_be_absent(index, op, Slot::Grad(l - 1))?;
        let stage = self.chain.stage(l);
        let ready = grad_ready.max(saved_ready).max(input_ready);
        // B^ℓ allocates δ^{ℓ-1} and its parameter gradients g^ℓ, kept to the
        // step's end. A negative o_b gives back at most that: memory freed
        // from δ^ℓ and ā^ℓ as autograd goes is not free before B^ℓ starts,
        // and counting it at the start would let transfers use room that is
        // not there yet (`Chain::backward_bytes`, the DPs' term).
        let parameter_gradients = stage.parameter_gradient_bytes;
        let allocated = self.bytes(Slot::Grad(l - 1)) + parameter_gradients;
        let choice = stage.choice(self.saved_option[l] as usize);
        let seconds = choice.backward_seconds;
        // o_b counts g^ℓ while B^ℓ runs; what is left is the workspace. The
        // input's ι^ℓ, dropped as B^ℓ starts, is booked as a transient
        // saving, like a negative o_b (the slot of a^{ℓ-1} / ā^{ℓ-1} keeps
        // its size: an over-count from here to B^{ℓ-1}, as the DPs make).
        let overhead = (choice.backward_overhead_bytes
            - parameter_gradients as i64
            - stage.input_freed_bytes as i64)
            .max(-(allocated as i64));
        let need = (allocated as i128 + overhead as i128).max(0) as u64;
        let ready = self.fit_start(self.compute_free.max(ready), need);
        let (start, end) = self.compute_lane(index, ready, seconds);
        if overhead >= 0 {
            self.allocate(Slot::Grad(l - 1), start, end, index as u32);
            self.parameter_gradients(l, parameter_gradients, start, index);
            self.workspace(overhead as u64, start, end, index);
        } else {
            // Validation keeps −o_b ≤ ω_δ^ℓ + ω_ā^ℓ and ι^ℓ ≤ ω_a^{ℓ-1}, all
            // resident now.
            self.event(
                start,
                false,
                overhead.unsigned_abs(),
                index as u32,
                NO_RESIDENCY,
            );
            self.allocate(Slot::Grad(l - 1), start, end, index as u32);
            self.parameter_gradients(l, parameter_gradients, start, index);
        }
        self.free(Slot::Grad(l), end, index);
        self.free(Slot::Saved(l), end, index);
        // A plain a^{ℓ-1} is not needed any more; ā^{ℓ-1} waits for B^{ℓ-1}.
        self.free(Slot::Act(l - 1), end, index);
        if overhead < 0 {
            self.event(
                end,
                true,
                overhead.unsigned_abs(),
                index as u32,
                NO_RESIDENCY,
            );
        }
        self.backwards_done += 1;
        Ok(())
    }

    /// A training step ends with δ^0: every B^ℓ (ℓ = L … 1) must have run.
    /// A schedule that stops earlier would otherwise be judged feasible with
    /// a time that is not a step's (an empty one: makespan 0, overhead −100 %).
    pub(super) fn check_complete(&self, n_ops: usize) -> Result<(), SimError> {
        let n = self.chain.len();
        if self.backwards_done >= n {
            return Ok(());
        }
        let stage = n - self.backwards_done;
        Err(self.error(
            n_ops,
            Op::Backward { stage },
            None,
            format!(
                "missing: the schedule ends after {n_ops} op{} without running B^{stage}; a training step runs every backward B^{n} … B^1 and produces δ^0",
                if n_ops == 1 { "" } else { "s" }
            ),
        ))
    }

    /// The bytes of `slot` and the seconds the link takes to move them.
    fn link_time(&self, index: usize, op: Op, slot: Slot) -> Result<(u64, f64), SimError> {
        let bytes = self.bytes(slot);
        match self.bandwidth {
            Some(bw) if bw > 0.0 => Ok((bytes, bytes as f64 / bw)),
            _ => Err(self.error(
                index,
                op,
                None,
                "needs a host↔device bandwidth: set bandwidth_bytes_per_s in the chain or pass --bandwidth".to_string(),
            )),
        }
    }

    /// The tensor an offload or prefetch moves.
    fn transferred(
        &self,
        index: usize,
        op: Op,
        l: usize,
        kind: TensorKind,
    ) -> Result<Slot, SimError> {
        match kind {
            TensorKind::Output => Ok(Slot::Act(l)),
            TensorKind::Saved if l >= 1 => Ok(Slot::Saved(l)),
            TensorKind::Saved => Err(self.error(index, op, None, "stage 0 has no ā".to_string())),
        }
    }

    fn offload(&mut self, index: usize, op: Op, slot: Slot) -> Result<(), SimError> {
        let Where::Device {
            ready,
            last_use,
            checkpoint,
            ..
        } = self.state(slot)
        else {
            return Err(self.missing(index, op, slot));
        };
        let (bytes, seconds) = self.link_time(index, op, slot)?;
        // Issued at its place in the list: no earlier than the start of the
        // compute operation (or release) listed before it, which it may
        // overlap. Starting as soon as the tensor exists would put its free
        // before operations listed earlier, which a runtime issued without it.
        let (_, end) = self.copy_lane(index, ready.max(self.last_compute_start), seconds);
        // The device copy lives until the copy ends and its last reader is done.
        self.free(slot, end.max(last_use), index);
        self.set(
            slot,
            Where::Host {
                ready: end,
                offloaded_by: index,
                checkpoint,
            },
        );
        self.offloaded_bytes += bytes;
        Ok(())
    }

    fn prefetch(&mut self, index: usize, op: Op, slot: Slot) -> Result<(), SimError> {
        let Where::Host {
            ready, checkpoint, ..
        } = self.state(slot)
        else {
            let reason = match self.state(slot) {
                Where::Device { .. } => "is already on the device".to_string(),
                _ => "has no copy on the host: offload it first".to_string(),
            };
            return Err(self.error(index, op, Some(slot), reason));
        };
        let (bytes, seconds) = self.link_time(index, op, slot)?;
        // Issued after the compute op listed before it, once memory allows.
        let issued = self.copy_free.max(ready).max(self.last_compute_end);
        let (start, end) = self.copy_lane(index, self.fit_start(issued, bytes), seconds);
        self.allocate(slot, start, end, index as u32);
        if checkpoint {
            self.set_checkpoint(slot);
        }
        self.prefetched_bytes += bytes;
        Ok(())
    }

    /// R: a device copy is freed at the end of the compute operation listed
    /// before it (or once its last reader or its prefetch ends, if later);
    /// a host copy is discarded. A zero-length span on the compute lane.
    fn release(&mut self, index: usize, op: Op, slot: Slot) -> Result<(), SimError> {
        let at = match self.state(slot) {
            Where::Device {
                ready, last_use, ..
            } => {
                let at = self.compute_free.max(ready).max(last_use);
                self.free(slot, at, index);
                at
            }
            Where::Host { .. } => {
                self.set(
                    slot,
                    Where::Absent {
                        freed_by: Some(index),
                    },
                );
                self.compute_free
            }
            Where::Absent { .. } => {
                return Err(self.error(
                    index,
                    op,
                    Some(slot),
                    "is neither on the device nor on the host: there is nothing to release"
                        .to_string(),
                ))
            }
        };
        self.span(index, Lane::Compute, at, 0.0);
        self.last_compute_start = self.last_compute_start.max(at);
        Ok(())
    }

    /// Device bytes once every operation issued so far has ended.
    pub(super) fn committed_bytes(&self) -> u64 {
        self.known_level
    }

    /// When the last compute operation issued so far ends.
    pub(super) fn compute_end(&self) -> f64 {
        self.compute_free
    }

    pub(super) fn finish(mut self, ops: &[Op]) -> Trace {
        let makespan = self.compute_free.max(self.copy_free);
        let mut events = std::mem::take(&mut self.events);
        let in_order = events
            .windows(2)
            .all(|w| w[0].time < w[1].time || (w[0].time == w[1].time && w[0].seq < w[1].seq));
        if !in_order {
            events.sort_by(|a, b| a.time.total_cmp(&b.time).then(a.seq.cmp(&b.seq)));
        }
        let mut memory = Vec::with_capacity(events.len());
        let mut current: u64 = 0;
        let (mut peak_bytes, mut peak_time, mut peak_op) = (0u64, 0.0, None);
        let mut peak_event = None;
        for (k, e) in events.iter().enumerate() {
            if e.alloc {
                current += e.bytes;
                if current > peak_bytes {
                    peak_bytes = current;
                    peak_time = e.time;
                    peak_op = (e.op != u32::MAX).then_some(e.op as usize);
                    peak_event = Some(k);
                }
            } else {
                current -= e.bytes;
            }
            memory.push(MemoryStep {
                time: e.time,
                bytes: current,
                op: (e.op != u32::MAX).then_some(e.op as usize),
            });
        }
        for r in &mut self.residency {
            if r.end.is_nan() {
                r.end = makespan;
            }
        }
        let at_peak = peak_event.map_or_else(AtPeak::default, |k| at_peak(&events[..=k]));
        // The one definition, shared with the explorer's marks.
        let recomputations = analysis::recomputations(ops, self.chain.len());
        Trace {
            spans: self.spans,
            memory,
            residency: self.residency,
            peak_bytes,
            peak_time,
            peak_op,
            at_peak,
            makespan_seconds: makespan,
            compute_busy_seconds: self.compute_busy,
            idle_seconds: self.compute_idle + (makespan - self.compute_free),
            recomputations,
            offloaded_bytes: self.offloaded_bytes,
            prefetched_bytes: self.prefetched_bytes,
            sequential_seconds: self.chain.sequential_seconds(),
            final_bytes: current,
        }
    }
}

/// What is on the device right after the last of `events` (the peak's):
/// the residencies opened and not yet closed, and the bytes negative
/// backward overheads have given back meanwhile. Replaying the events in
/// their order, not asking which residencies span the peak's instant: at
/// one instant a free listed after the peak's allocation must not count.
fn at_peak(events: &[Event]) -> AtPeak {
    let mut open = std::collections::BTreeSet::new();
    let mut given_back: u64 = 0;
    for e in events {
        match (e.residency, e.alloc) {
            (NO_RESIDENCY, false) => given_back += e.bytes,
            (NO_RESIDENCY, true) => given_back -= e.bytes,
            (r, true) => {
                open.insert(r as usize);
            }
            (r, false) => {
                open.remove(&(r as usize));
            }
        }
    }
    AtPeak {
        residencies: open.into_iter().collect(),
        given_back_bytes: given_back,
    }
}
