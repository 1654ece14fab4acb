//! Executes a schedule on a chain and reports what happens: the single judge
//! of every solver's time, peak memory and validity.
//!
//! Two lanes run side by side (POFO, Section 3): a compute lane (forward and
//! backward operations, in list order) and a copy lane (offload and prefetch,
//! in list order, at the chain's bandwidth β). An operation starts when its
//! lane is free and the tensors it reads are ready; the gap is idle time.
//!
//! The list order is the order in which a runtime issues the operations. An
//! offload starts as soon as its tensor exists and the copy lane is free; a
//! prefetch is issued at its place in the list: it starts no earlier than the
//! end of the compute operation listed before it (the runtime records an
//! event there and the copy stream waits on it), which is how a schedule says
//! "bring it back once this memory is free".
//!
//! Memory accounting is `docs/model.md`'s table: an operation allocates its output
//! and its overhead when it starts, and frees its overhead and the tensors it
//! consumes when it ends. A negative backward overhead (autograd frees δ^ℓ
//! and parts of ā^ℓ before B^ℓ ends) is given back when B^ℓ starts, before
//! δ^{ℓ-1} is allocated, and taken again when it ends, after B^ℓ's inputs are
//! freed, so the level during B^ℓ is the chain's
//! [`backward_bytes`](Chain::backward_bytes) above its input and never peaks
//! at the sum without the overhead. At the same instant, events keep the order of the
//! operations that caused them, so a zero-length operation still counts.
//! B^ℓ also allocates its parameter gradients g^ℓ at its start, kept to the
//! step's end (o_b^ℓ counts them, so its workspace is o_b^ℓ − g^ℓ): the
//! planners fold them into δ (`Chain::gradient_bytes`), the trace names them
//! apart, and the levels are the same.
//!
//! **Memory limit.** Given one ([`SimOptions::memory_limit`], the budget), an
//! operation that allocates also waits until its allocation fits next to
//! everything the operations listed before it hold, now and later: a compute
//! operation waits for an offload to free its tensor, a prefetch for a
//! backward to free its inputs (the at-once transfers of POFO Section 5). An
//! allocation that cannot fit even when everything listed before it is done
//! runs at once, over the limit, and the peak shows it.
//!
//! Cost: O(n) for n operations plus a sort of the memory events when the copy
//! lane makes them interleave (O(n log n)). With a memory limit each
//! allocation also walks back over the events still in the future of its
//! start (the transfers in flight), and events are kept sorted as they come.

//!
//! Files: `mod.rs` (this façade: [`simulate`], [`simulate_with`],
//! [`states`], [`judge`], [`Stepper`] for one operation at a time), `engine.rs` (the state machine), `trace.rs`
//! (what a run reports; [`Trace::fits`] is the one "fits the budget"),
//! `judge.rs` (the budget as memory limit), `chrome.rs` (export).

mod chrome;
mod engine;
mod judge;
mod trace;

pub use chrome::chrome_trace_json;
pub use judge::judge;

pub use trace::{
    AtPeak, Lane, MemoryStep, OffloadFree, OpMemory, Residency, Span, TensorId, Trace,
};

use crate::model::Chain;
use crate::schedule::Op;
use engine::Simulation;
use std::fmt;

/// Why a schedule cannot run: which operation, which tensor, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct SimError {
    /// Index of the failing operation in the schedule (0-based).
    pub index: usize,
    pub op: Op,
    /// The tensor involved (`a^3`, `ā^3`, `δ^3`), empty when none is.
    pub tensor: String,
    pub reason: String,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tensor.is_empty() {
            write!(f, "op {} ({}): {}", self.index, self.op, self.reason)
        } else {
            write!(
                f,
                "op {} ({}): {} {}",
                self.index, self.op, self.tensor, self.reason
            )
        }
    }
}

/// How to run a schedule: the link's speed and, optionally, the device memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimOptions {
    /// β in bytes per second for offload and prefetch; None: no link.
    pub bandwidth: Option<f64>,
    /// Device memory for activations (the budget): allocations wait until
    /// they fit. None: nothing waits for memory.
    pub memory_limit: Option<u64>,
}

/// Runs `ops` on `chain` with the chain's own bandwidth and no memory
/// limit: what happens, not whether it fits a budget (that is [`judge`]).
///
/// ```
/// use remat_core::examples::teaching;
/// use remat_core::simulator::simulate;
/// use remat_core::solvers::store_all;
///
/// let chain = teaching();
/// let trace = simulate(&chain, &store_all::schedule(&chain)).unwrap();
/// // Keeping everything costs no time: the makespan is Σ u_f + u_b.
/// assert_eq!(trace.overhead(), 0.0);
/// assert_eq!(trace.recomputations, 0);
/// ```
pub fn simulate(chain: &Chain, ops: &[Op]) -> Result<Trace, SimError> {
    let no_limit = SimOptions {
        bandwidth: chain.bandwidth_bytes_per_s,
        ..SimOptions::default()
    };
    simulate_with(chain, ops, no_limit)
}

/// Where the tensors are after one operation, in list order: the logical
/// state a runtime that issues the operations one by one (and waits for
/// each transfer) holds. A runtime can compare its own bookkeeping with it
/// op by op (`remat simulate --json --states`; the PyTorch wrapper's tests).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OpState {
    /// Index of the operation in the schedule.
    pub op: usize,
    /// On the device: a^ℓ, ā^ℓ (which contains a^ℓ, not listed apart) and
    /// δ^ℓ, in that order of kind, each by stage. Workspaces are transient
    /// within an operation and never listed.
    pub device: Vec<TensorId>,
    /// Offloaded copies on the host, in the same order.
    pub host: Vec<TensorId>,
}

/// Runs `ops` on `chain` like [`simulate_with`] and records, after each
/// operation, which tensors are on the device and which on the host. The
/// same state machine as the trace's, so the two cannot disagree on
/// validity. O(n · L) for n operations on L stages.
pub fn states(chain: &Chain, ops: &[Op], options: SimOptions) -> Result<Vec<OpState>, SimError> {
    let mut sim = Simulation::new(chain, options, ops.len());
    let mut out = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        sim.step(index, *op)?;
        out.push(sim.op_state(index));
    }
    sim.check_complete(ops.len())?;
    Ok(out)
}

/// A simulation fed one operation at a time, for a runtime that decides as
/// it goes (the dynamic runtimes, `solvers::dynamic`): it reads the memory
/// and the clock it decides on from the judge's own state machine, so the
/// schedule it emits, judged afresh, gives the time and peak it saw.
pub struct Stepper<'a> {
    sim: Simulation<'a>,
    ops: Vec<Op>,
}

impl<'a> Stepper<'a> {
    pub fn new(chain: &'a Chain, options: SimOptions) -> Stepper<'a> {
        Stepper {
            sim: Simulation::new(chain, options, 0),
            ops: Vec::new(),
        }
    }

    /// Issues `op` after the ones pushed so far; refused (and not issued)
    /// when it is invalid there.
    pub fn push(&mut self, op: Op) -> Result<(), SimError> {
        self.sim.step(self.ops.len(), op)?;
        self.ops.push(op);
        Ok(())
    }

    /// Device bytes once every operation pushed so far has ended (offloads
    /// in flight counted as done): what an allocation must fit next to.
    pub fn committed_bytes(&self) -> u64 {
        self.sim.committed_bytes()
    }

    /// When the last compute operation pushed so far ends: the runtime's now.
    pub fn now(&self) -> f64 {
        self.sim.compute_end()
    }

    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The operations and their trace; refused if they do not complete a
    /// training step.
    pub fn finish(self) -> Result<(Vec<Op>, Trace), SimError> {
        self.sim.check_complete(self.ops.len())?;
        let trace = self.sim.finish(&self.ops);
        Ok((self.ops, trace))
    }
}

/// Runs `ops` on `chain` with explicit options.
pub fn simulate_with(chain: &Chain, ops: &[Op], options: SimOptions) -> Result<Trace, SimError> {
    let mut sim = Simulation::new(chain, options, ops.len());
    for (index, op) in ops.iter().enumerate() {
        sim.step(index, *op)?;
    }
    sim.check_complete(ops.len())?;
    Ok(sim.finish(ops))
}

#[cfg(test)]
mod tests;
