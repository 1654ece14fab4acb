//! One rank's host link under `--offload` (`offload.rs`): which waiting
//! micro-batches the policy sends to host memory, and when each copy runs
//! on the link's two FIFO channels. Apart from `offload.rs` so that the
//! pipeline's makespan (`judge.rs`) and the rank judge (`offload.rs`)
//! share it without importing each other.

use super::order::{Phase, Slot};

/// Per micro-batch of `order` (one chunk): whether the policy offloads it,
/// i.e. whether another phase runs between its F phase and its B phase.
pub fn offloaded(order: &[Slot]) -> Vec<bool> {
    let m = order.len() / 2;
    let mut forward_at = vec![usize::MAX; m];
    let mut out = vec![false; m];
    for (i, slot) in order.iter().enumerate() {
        match slot.phase {
            Phase::Forward => forward_at[slot.microbatch] = i,
            Phase::Backward => out[slot.microbatch] = i >= forward_at[slot.microbatch] + 2,
        }
    }
    out
}

/// One rank's host link: the two FIFO channels and, per micro-batch, when
/// its copies ran. Shared by the rank judge (phases back to back) and the
/// pipeline's makespan (phases at their real starts).
#[derive(Clone, Debug)]
pub(super) struct HostLink {
    /// h / β: one copy's time.
    copy_seconds: f64,
    /// When each channel is free again.
    d2h_free: f64,
    h2d_free: f64,
    /// Per micro-batch: when its offload ends, when its prefetch starts
    /// and ends (NaN: not yet).
    pub offload_end: Vec<f64>,
    pub prefetch_start: Vec<f64>,
    pub prefetch_end: Vec<f64>,
    pub offloads: Vec<bool>,
}

impl HostLink {
    pub fn new(order: &[Slot], held_bytes: u64, bytes_per_s: f64) -> HostLink {
        let offloads = offloaded(order);
        let m = offloads.len();
        HostLink {
            copy_seconds: held_bytes as f64 / bytes_per_s,
            d2h_free: 0.0,
            h2d_free: 0.0,
            offload_end: vec![f64::NAN; m],
            prefetch_start: vec![f64::NAN; m],
            prefetch_end: vec![f64::NAN; m],
            offloads,
        }
    }

    /// The earliest start of `slot`'s phase, `ready` otherwise: a B phase
    /// of an offloaded micro-batch waits for its prefetch.
    pub fn earliest_start(&self, slot: &Slot, ready: f64) -> f64 {
        match slot.phase {
            Phase::Backward if self.offloads[slot.microbatch] => {
                ready.max(self.prefetch_end[slot.microbatch])
            }
            _ => ready,
        }
    }

    /// The phase before `next` starts at `start`: issues `next`'s prefetch
    /// when `next` is the B phase of an offloaded micro-batch.
    pub fn phase_started(&mut self, next: Option<&Slot>, start: f64) {
        let Some(next) = next.filter(|s| s.phase == Phase::Backward) else {
            return;
        };
        let j = next.microbatch;
        if !self.offloads[j] {
            return;
        }
        let at = start.max(self.offload_end[j]).max(self.h2d_free);
        self.prefetch_start[j] = at;
        self.prefetch_end[j] = at + self.copy_seconds;
        self.h2d_free = self.prefetch_end[j];
    }

    /// `slot`'s phase ended at `end`: an offloaded micro-batch's F phase
    /// sends its h out.
    pub fn phase_ended(&mut self, slot: &Slot, end: f64) {
        let j = slot.microbatch;
        if slot.phase == Phase::Forward && self.offloads[j] {
            let at = end.max(self.d2h_free);
            self.offload_end[j] = at + self.copy_seconds;
            self.d2h_free = self.offload_end[j];
        }
    }
}
