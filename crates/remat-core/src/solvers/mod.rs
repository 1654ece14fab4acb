//! The algorithms that turn a chain and a budget into a schedule, as a thin
//! façade (one module per algorithm family, petgraph's `algo` style):
//!
//! * [`api`] — the vocabulary: [`Algorithm`] (the list of algorithms),
//!   [`Options`], [`Solution`], [`SolveError`], [`Progress`];
//! * [`bounds`] — M_high, the offloading floor, the α → budget rule;
//! * one module per family, each with its paper, complexity and
//!   assumptions: [`store_all`], [`recompute_all`], [`sequential`], [`persistent`] (rotor,
//!   revolve), [`pofo`] (pofo, offload-only's DP), [`offload`] (turning
//!   pofo's plan into transfers; the `opportunist` and `autocapper`
//!   heuristics), [`hong`] (Hong et al.'s least-peak checkpoint selection),
//!   [`dynamic`] (the DTR and DELTA runtimes, simulated),
//!   [`optimal`] (the exact search over every schedule, short chains);
//! * [`parallel`] — a DP layer's independent pieces on the machine's cores;
//! * [`planner`] — [`Planner`] and [`solve`], the only dispatcher: calls go
//!   down from it, never back up.
//!
//! A solver only proposes: the [simulator](crate::simulator) measures every
//! schedule. `docs/architecture.md` says how to add an algorithm.

pub mod api;
pub mod bounds;
pub mod dynamic;
pub mod hong;
pub mod offload;
pub mod optimal;
pub mod parallel;
pub mod persistent;
pub mod planner;
pub mod recompute_all;
pub mod sequential;
mod slots;
pub mod store_all;
pub mod time_floor;

pub use api::{
    no_progress, Algorithm, Candidate, DeltaSettings, LossStep, Options, Problem, Progress,
    Solution, SolveError, DEFAULT_MAX_TABLE_BYTES, DEFAULT_OFFLOAD_SLOTS, DEFAULT_SLOTS,
    MAX_RELOAD_LIMIT,
};
pub use bounds::{budget_at_ratio, max_useful_budget, memory_floor, BelowFloor, Floor};
pub use planner::{floor_certificate, solve, BoundClass, Certificate, Planner};
pub use slots::{Memory, SlotPolicy};
pub use time_floor::time_floor;
