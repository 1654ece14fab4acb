//! The runtime's view of every activation tensor (DELTA's `DELTATensor`,
//! Section 4.3): where it is, when it was last used, and what recomputing it
//! would cost. Gradients δ^ℓ are not listed: they are pinned (never
//! released), as a framework's gradient buffers are.

use crate::model::Chain;
use crate::schedule::TensorKind;

/// a^ℓ (`Output`) or ā^ℓ (`Saved`) of one stage: the tensors a runtime may
/// release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub stage: usize,
    pub kind: TensorKind,
}

impl Tensor {
    pub fn output(stage: usize) -> Tensor {
        Tensor {
            stage,
            kind: TensorKind::Output,
        }
    }

    pub fn saved(stage: usize) -> Tensor {
        Tensor {
            stage,
            kind: TensorKind::Saved,
        }
    }

    pub fn bytes(self, chain: &Chain) -> u64 {
        match self.kind {
            TensorKind::Output => chain.output_bytes(self.stage),
            TensorKind::Saved => chain.saved_bytes(self.stage),
        }
    }

    /// a^0, the input batch, cannot be recomputed (DELTA's `uncomputable`,
    /// hence `evict_pinned`: it may only be offloaded).
    pub fn uncomputable(self) -> bool {
        self.stage == 0
    }
}

/// Where a tensor is, as the runtime sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Never computed in this step (or not yet).
    Absent,
    /// On the device, readable.
    OnDevice,
    /// Reloaded by the Prefetcher and not read yet: pinned until its first
    /// read, so that it is not released again before it is used (the
    /// ping-pong DELTA's reload limit is there to avoid).
    InTransfer,
    /// Released from the device; recomputable from its parents.
    Evicted,
    /// Offloaded: a copy on the host (maybe still being copied).
    Offloaded,
    /// Its backward ran: never needed again in this step.
    Consumed,
}

impl State {
    /// On the device (a prefetch in flight counts: readers wait for it).
    pub fn on_device(self) -> bool {
        matches!(self, State::OnDevice | State::InTransfer)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub state: State,
    /// When an operation last produced or read it (the staleness clock).
    pub last_access: f64,
}

/// Every a^ℓ (ℓ = 0 … L) and ā^ℓ (ℓ = 1 … L).
pub struct Tensors {
    outputs: Vec<Entry>,
    saved: Vec<Entry>,
}

impl Tensors {
    /// The start of a step: a^0 on the device, nothing else.
    pub fn new(stages: usize) -> Tensors {
        let absent = Entry {
            state: State::Absent,
            last_access: 0.0,
        };
        let mut outputs = vec![absent; stages + 1];
        outputs[0].state = State::OnDevice;
        Tensors {
            outputs,
            saved: vec![absent; stages + 1],
        }
    }

    pub fn stages(&self) -> usize {
        self.outputs.len() - 1
    }

    pub fn get(&self, t: Tensor) -> Entry {
        match t.kind {
            TensorKind::Output => self.outputs[t.stage],
            TensorKind::Saved => self.saved[t.stage],
        }
    }

    pub fn state(&self, t: Tensor) -> State {
        self.get(t).state
    }

    fn entry_mut(&mut self, t: Tensor) -> &mut Entry {
        match t.kind {
            TensorKind::Output => &mut self.outputs[t.stage],
            TensorKind::Saved => &mut self.saved[t.stage],
        }
    }

    pub fn set(&mut self, t: Tensor, state: State) {
        self.entry_mut(t).state = state;
    }

    /// Produced or read at `now`: its staleness restarts, and a reloaded
    /// tensor's first read unpins it.
    pub fn touch(&mut self, t: Tensor, now: f64) {
        let e = self.entry_mut(t);
        e.last_access = now;
        if e.state == State::InTransfer {
            e.state = State::OnDevice;
        }
    }

    /// The tensor that serves as the input of stage ℓ + 1 on the device: a^ℓ
    /// if it is there, else ā^ℓ (which contains it), as the simulator reads.
    pub fn input_on_device(&self, l: usize) -> Option<Tensor> {
        [Tensor::output(l), Tensor::saved(l)]
            .into_iter()
            .filter(|t| t.kind == TensorKind::Output || l >= 1)
            .find(|&t| self.state(t).on_device())
    }

    /// Every tensor, ā^ℓ by stage then a^ℓ by stage: the fixed order that
    /// breaks ties between equal scores (results are deterministic).
    pub fn all(&self) -> impl Iterator<Item = Tensor> + '_ {
        let n = self.stages();
        (1..=n)
            .map(Tensor::saved)
            .chain((0..=n).map(Tensor::output))
    }

    /// c_r of every tensor (DTR's projected cost, DELTA Eq. 5's c_r): the
    /// compute time to bring it back from what is on the device now —
    /// its own forward plus the no-grad forwards of the evicted ancestors
    /// back to the nearest one on the device (or reloadable, at
    /// `reload_seconds`). Indexed by stage: `(output, saved)`. One pass, O(L).
    pub fn recompute_costs(
        &self,
        chain: &Chain,
        reload_seconds: impl Fn(u64) -> Option<f64>,
    ) -> Vec<(f64, f64)> {
        let n = self.stages();
        let mut out = Vec::with_capacity(n + 1);
        // cost[ℓ]: time to have the input of stage ℓ + 1 on the device.
        let mut input = match self.state(Tensor::output(0)) {
            s if s.on_device() => 0.0,
            State::Offloaded => reload_seconds(chain.output_bytes(0)).unwrap_or(f64::INFINITY),
            _ => f64::INFINITY,
        };
        out.push((input, input));
        for l in 1..=n {
            let stage = chain.stage(l);
            let output = input + stage.nograd_forward_seconds();
            let saved = input + stage.forward_seconds;
            out.push((output, saved));
            input = if self.input_on_device(l).is_some() {
                0.0
            } else {
                let reload = [Tensor::output(l), Tensor::saved(l)]
                    .into_iter()
                    .filter(|&t| self.state(t) == State::Offloaded)
                    .filter_map(|t| reload_seconds(t.bytes(chain)))
                    .fold(f64::INFINITY, f64::min);
                output.min(reload)
            };
        }
        out
    }
}
