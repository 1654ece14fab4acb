//! Compare: every algorithm at the budget (the table, the overhead curves
//! against the budget with the chain's measured peers, how far each is
//! from the optimum) and POFO's offloading sweep.

mod sweep;
mod table;

pub use sweep::SweepView;
pub use table::Compare;
