//! Remat core: plan how a training step fits in a memory budget.
//!
//! Data flows one way, and the modules follow it:
//!
//! * [`model`] — the chain of stages (sizes, times) and the units people type;
//! * [`format`] — reading and writing `remat-chain/1`, rotor's chain layout,
//!   `remat-schedule/1` and `remat-run/1`, with errors that name the offending field;
//! * [`schedule`] — the operations a schedule is made of (`F_all`, `F_ck`,
//!   `F_∅`, `B`, offload, prefetch) and what they do to each stage;
//! * [`simulator`] — runs any schedule on a chain (a compute lane and a copy
//!   lane) and is the single judge of its time, peak memory and validity;
//! * [`solvers`] — the algorithms that produce schedules, behind one
//!   dispatcher ([`solvers::Planner`], [`solvers::solve`]);
//! * [`sweep`] — overhead over the memory ratio α and the bandwidth β, for
//!   the CLI's `sweep` and the explorer;
//! * [`pipeline`] — one plan per rank of a pipeline (GPipe, 1F1B), judged
//!   with its micro-batches in flight, for the CLI's `pipeline`;
//! * [`maxbatch`] — the largest batch each method runs within a device's
//!   memory, for the CLI's `maxbatch`;
//! * [`measured`] — a measured step (`remat-run/1`) held op by op against
//!   the simulator's prediction of its schedule;
//! * [`examples`] — built-in chains with their provenance.
//!
//! No web and no torch dependencies: this crate builds for native targets and
//! for `wasm32-unknown-unknown`.

pub mod examples;
pub mod format;
pub mod lowering;
pub mod maxbatch;
pub mod measured;
pub mod model;
pub mod pipeline;
pub mod schedule;
pub mod simulator;
pub mod solvers;
pub mod sweep;

pub use model::{Chain, MenuOption, Stage};
pub use schedule::{Op, TensorKind};
pub use simulator::{simulate, SimError, Trace};
