//! Where each algorithm's table stands.

use crate::planning::protocol::{CurvePoint, GridNote};
use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// Where the table of one algorithm stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Build {
    Idle,
    Building(f64),
    Ready {
        min_budget: u64,
        build_ms: f64,
        curve: Vec<CurvePoint>,
        /// Rotor/revolve on a grid (the breakpoints given up): what the
        /// page says of it. None: exact in bytes.
        grid: Option<GridNote>,
    },
    Failed(String),
    Cancelled,
}

#[derive(Clone, Copy)]
pub struct Tables {
    /// One entry per `Algorithm::ALL`, same order.
    pub builds: RwSignal<Vec<Build>>,
    /// Whether the tables live in the worker.
    pub remote: RwSignal<bool>,
}

fn index_of(alg: Algorithm) -> usize {
    Algorithm::ALL
        .iter()
        .position(|a| *a == alg)
        .unwrap_or_default()
}

impl Tables {
    pub(super) fn new() -> Tables {
        Tables {
            builds: RwSignal::new(vec![Build::Idle; Algorithm::ALL.len()]),
            remote: RwSignal::new(false),
        }
    }

    pub fn build_of(self, alg: Algorithm) -> Build {
        self.builds.with(|b| b[index_of(alg)].clone())
    }

    /// Whether `alg`'s table is built (tracked, without copying its curve).
    pub fn is_ready(self, alg: Algorithm) -> bool {
        self.builds
            .with(|b| matches!(b[index_of(alg)], Build::Ready { .. }))
    }

    /// The least budget `alg`'s table has a plan for, when it is built and
    /// is rotor's or revolve's: its own M_low (revolve's may be above
    /// rotor's), or on a grid the least budget the rounded sizes meet.
    /// Tracked.
    pub fn least_met(self, alg: Algorithm) -> Option<u64> {
        if !alg.uses_slots() {
            return None;
        }
        self.builds.with(|b| match &b[index_of(alg)] {
            Build::Ready { grid: Some(g), .. } => Some(g.least_met),
            Build::Ready { min_budget, .. } => Some(*min_budget),
            _ => None,
        })
    }

    /// The grid of `alg`'s table, where it is on one (tracked).
    pub fn grid_of(self, alg: Algorithm) -> Option<GridNote> {
        self.builds.with(|b| match &b[index_of(alg)] {
            Build::Ready { grid, .. } => *grid,
            _ => None,
        })
    }

    pub fn build_of_untracked(self, alg: Algorithm) -> Build {
        self.builds.with_untracked(|b| b[index_of(alg)].clone())
    }

    pub(super) fn set(self, alg: Algorithm, build: Build) {
        self.builds.update(|b| b[index_of(alg)] = build);
    }

    /// Forgets every table (a new chain).
    pub(super) fn reset(self, remote: bool) {
        self.builds.set(vec![Build::Idle; Algorithm::ALL.len()]);
        self.remote.set(remote);
    }

    /// Marks the builds in progress as cancelled.
    pub(super) fn cancel(self) {
        self.builds.update(|b| {
            for build in b.iter_mut() {
                if matches!(build, Build::Building(_)) {
                    *build = Build::Cancelled;
                }
            }
        });
    }

    /// Whether a table is missing (not built, or cancelled).
    pub fn missing(self) -> bool {
        self.builds.with(|b| {
            b.iter()
                .any(|x| matches!(x, Build::Idle | Build::Cancelled))
        })
    }
}
