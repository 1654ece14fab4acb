//! What the user chose: the algorithm, the budget, the host link.

use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// PCIe 3.0 ×16 in practice, used when a chain states no bandwidth.
pub const DEFAULT_BANDWIDTH: f64 = 12e9;

#[derive(Clone, Copy)]
pub struct Controls {
    pub algorithm: RwSignal<Algorithm>,
    pub budget: RwSignal<u64>,
    /// Bytes/s of the host link; 0: no host link (the offloading
    /// algorithms then say they need one, as `remat solve` does).
    pub bandwidth: RwSignal<f64>,
}

/// The host link a rate stands for: None for 0 ("none").
pub fn link_of(bandwidth: f64) -> Option<f64> {
    (bandwidth > 0.0).then_some(bandwidth)
}

impl Controls {
    /// The host link the planner and the simulator get (untracked).
    pub fn link(self) -> Option<f64> {
        link_of(self.bandwidth.get_untracked())
    }
}

impl Controls {
    pub(super) fn new() -> Controls {
        Controls {
            algorithm: RwSignal::new(Algorithm::Rotor),
            budget: RwSignal::new(0),
            bandwidth: RwSignal::new(DEFAULT_BANDWIDTH),
        }
    }
}
