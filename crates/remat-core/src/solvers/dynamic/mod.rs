//! Dynamic runtimes, simulated: DTR and DELTA decide while the step runs,
//! tensor by tensor, instead of planning before it.
//!
//! **Papers.** Kirisame, Lyubomirsky, Haan, Brennan, He, Roesch, Chen,
//! Tatlock, *Dynamic Tensor Rematerialization*, ICLR 2021 (`dtr`); Tang,
//! Wang, Zhang, Liu, Zhang, Lai, Qiao, Li, *DELTA: Dynamically Optimizing
//! GPU Memory beyond Tensor Recomputation*, arXiv 2203.15980, 2022
//! (`delta`, `delta-lru`, `delta-greedy`; see `docs/algorithms.md`).
//!
//! **What runs.** [`runtime::run`] executes the training step op by op —
//! F_all^1 … F_all^L (PyTorch's default, everything saved), then
//! B^L … B^1 — and keeps every a^ℓ and ā^ℓ's state ([`tensors`]: on the
//! device, evicted, offloaded, reloading, consumed; a^0 uncomputable, δ^ℓ
//! pinned). Before each allocation, while the memory held (the judge's own
//! count, every operation issued so far ended) plus the allocation is over
//! the policy's trigger, it releases the tensor the policy picks; an
//! operation whose inputs were released first brings them back, by
//! recomputation from the nearest ancestor on the device (each
//! intermediate kept, a candidate like any other) or by reload. The
//! schedule it issues — with `R` (release) for evictions — and its trace
//! are the output; judged afresh by [`crate::simulator::judge`] it gives
//! the same time and peak (tests/dynamic.rs). A step that cannot continue
//! is out of memory at a named operation ([`runtime::OutOfMemory`]): an
//! infeasible [`Solution`] whose `detail` says where, never a panic.
//!
//! * `dtr` ([`dtr`]): evict the tensor of least h = c_r / (m · s) when the
//!   next allocation does not fit; recompute only.
//! * `delta` ([`delta`]): from 3/4 of the budget on, the Filter picks by
//!   h_base = 1/(m·s) (`delta-lru`: 1/s, `delta-greedy`: 1/m), the Director
//!   evicts it when recomputing costs no more than moving it at 35 % of
//!   the link (F_decision = h_r / h_o ≤ 1) and offloads it otherwise; a^0
//!   is only offloaded, and with no link nothing is; a tensor B^ℓ reads
//!   from the host is recomputed instead when that is cheaper; after each
//!   backward the Prefetcher reloads the next tensors read, two at most
//!   ahead, while they fit under the trigger. Transfers run on the copy lane
//!   and overlap computation; an operation that needs the memory an
//!   offload frees waits for it (the simulator's at-once transfers).
//!
//! **Complexity.** Each release decision scores every resident tensor with
//! one O(L) pass for c_r, so a run is O((n + r) · L) for n operations and r
//! releases, plus the simulator's cost per operation. n is 2L at roomy
//! budgets and grows towards O(L²) at tight ones (each backward recomputes
//! from far back). Measured: `cargo bench --bench solvers -- dynamic`.
//!
//! **Assumptions and departures from the papers' implementations** (DTR
//! in PyTorch, DELTA in Parrots, both over a graph of operators):
//!
//! * The unit is a stage's tensor: a^ℓ, or ā^ℓ (everything B^ℓ saves) as
//!   one block — a framework runtime sees many tensors per layer and can
//!   release part of ā^ℓ. Gradients are never released.
//! * c_r counts the evicted *ancestors* (DTR's e* towards the inputs), not
//!   evicted descendants whose cost would grow.
//! * Costs are the chain's times, known in advance (the runtimes measure
//!   them as they go); staleness is simulated time since the last use.
//! * Memory is the simulator's exact accounting: no fragmentation, which
//!   DELTA's paper blames for DTR's low memory use (Table III).
//! * DELTA's Assumption 2 (no release in the backward pass) is not kept:
//!   the backward's recomputations need room, and the Filter and Director
//!   run there too.
//! * The Director's 35 % is its *estimate*; transfers themselves run at the
//!   link's bandwidth in the simulator. The reload limit (2) is not given by
//!   the paper. All three settings (35 %, 3/4, 2) are
//!   [`DeltaSettings`](super::api::DeltaSettings) (`remat solve --link-share
//!   --trigger --reload-limit`).

pub mod delta;
pub mod dtr;
pub mod policy;
pub mod release;
pub mod runtime;
pub mod tensors;

pub use delta::{Delta, Heuristic};
pub use policy::Policy;
pub use runtime::{run, OutOfMemory, Run, RunError};

use super::api::{Algorithm, DeltaSettings, Problem, Progress, Solution, SolveError};
use crate::model::units::format_bytes;

/// The policy an algorithm of this family runs, on a link of `link` bytes
/// per second, with DELTA's `settings`.
pub fn policy(
    algorithm: Algorithm,
    link: Option<f64>,
    settings: &DeltaSettings,
) -> Result<Policy, SolveError> {
    settings.validate()?;
    let delta = |h| Ok(Policy::Delta(Delta::new(h, link, settings)));
    match algorithm {
        Algorithm::Dtr => Ok(Policy::Dtr),
        Algorithm::Delta => delta(Heuristic::Base),
        Algorithm::DeltaLru => delta(Heuristic::Lru),
        Algorithm::DeltaGreedy => delta(Heuristic::Greedy),
        other => Err(SolveError::BadOption(format!(
            "algorithm: {other} is not a dynamic runtime"
        ))),
    }
}

/// Any dynamic runtime for one budget: the function the planner's
/// per-budget dispatch (`solvers/planner.rs`) gives them. The link is `options.bandwidth_bytes_per_s`, else
/// the chain's.
pub fn solve(problem: &Problem<'_>, progress: &mut Progress<'_>) -> Result<Solution, SolveError> {
    let (chain, budget) = (problem.chain, problem.budget);
    let (algorithm, options) = (problem.algorithm, problem.options);
    let link = options
        .bandwidth_bytes_per_s
        .or(chain.bandwidth_bytes_per_s);
    let policy = policy(algorithm, link, &options.delta)?;
    let answer = |ops, seconds, peak, detail| Solution {
        algorithm,
        budget_bytes: budget,
        ops,
        predicted_seconds: seconds,
        predicted_peak_bytes: peak,
        detail,
    };
    match run(chain, &policy, budget, link, progress) {
        Ok(done) => {
            let detail = describe(&done);
            Ok(answer(
                Some(done.ops),
                Some(done.trace.makespan_seconds),
                Some(done.trace.peak_bytes),
                detail,
            ))
        }
        Err(RunError::OutOfMemory(oom)) => Ok(answer(None, None, None, oom.to_string())),
        Err(RunError::Cancelled) => Err(SolveError::Cancelled),
        Err(RunError::Invalid(e)) => Err(SolveError::BadOption(format!(
            "{algorithm}: the runtime issued an invalid operation (a bug in Remat): {e}"
        ))),
        Err(RunError::Lost(e)) => Err(SolveError::BadOption(format!(
            "{algorithm}: the runtime lost track of a tensor (a bug in Remat): {e}"
        ))),
    }
}

/// "3 evictions, 5 recomputations, 2 offloads (1.2 GiB), 2 reloads".
fn describe(done: &Run) -> String {
    let c = done.counts;
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut parts = vec![
        plural(c.evictions, "eviction"),
        plural(done.trace.recomputations, "recomputation"),
    ];
    if c.offloads > 0 || c.reloads > 0 {
        parts.push(format!(
            "{} ({})",
            plural(c.offloads, "offload"),
            format_bytes(done.trace.offloaded_bytes)
        ));
        parts.push(plural(c.reloads, "reload"));
    }
    if c.recomputed_instead_of_reloaded > 0 {
        parts.push(format!(
            "{} recomputed instead of reloaded",
            c.recomputed_instead_of_reloaded
        ));
    }
    parts.join(", ")
}
