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

impl Controls {
    /// The host link the planner and the simulator get (untracked). Never
    /// None: None would let the solvers fall back on the chain's own
    /// bandwidth; `Some(0.0)` is "no host link" to them and the simulator.
    pub fn link(self) -> Option<f64> {
        Some(self.bandwidth.get_untracked())
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
