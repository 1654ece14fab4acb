//! Where each algorithm's table stands.

use crate::protocol::CurvePoint;
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
