//! What the user chose: the algorithm, the budget, the host link.

use leptos::prelude::*;
use remat_core::solvers::Algorithm;

/// PCIe 3.0 ×16 in practice, used when a chain states no bandwidth.
pub const DEFAULT_BANDWIDTH: f64 = 12e9;

#[derive(Clone, Copy)]
pub struct Controls {
    pub algorithm: RwSignal<Algorithm>,
    pub budget: RwSignal<u64>,
    pub bandwidth: RwSignal<f64>,
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
