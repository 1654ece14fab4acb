//! Compare: every algorithm at the budget (the table, the overhead curves
//! against the budget with the chain's measured peers, how far each is
//! from the optimum) and POFO's offloading sweep. Pure, on the host too:
//! the overhead axis that clips a far curve (`overhead_axis`) and the
//! measured peers' rows (`peers`).

pub mod overhead_axis;
pub mod peers;

#[cfg(target_arch = "wasm32")]
mod sweep;
#[cfg(target_arch = "wasm32")]
mod table;

#[cfg(target_arch = "wasm32")]
pub use sweep::SweepView;
#[cfg(target_arch = "wasm32")]
pub use table::Compare;
