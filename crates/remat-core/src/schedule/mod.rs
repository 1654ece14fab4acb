//! Schedules: the operations they are made of and what they do to each
//! stage, read from the list alone (no times, no memory: that is the
//! [simulator](crate::simulator)'s).
//!
//! * [`op`] — [`Op`] and [`TensorKind`] with the papers' notation
//!   (`F_all^3`, `O(ā^3)`), [`Op::explain`] and [`format_ops`];
//! * [`analysis`] — per-stage [`Fate`]s and the one definition of a
//!   recomputation ([`recompute_flags`], [`recomputations`]);
//! * [`captions`] — each operation said in its context: a recomputation's
//!   count ("recomputed (2nd time)") and the backward it is for;
//! * [`segments`] — [`Segment`]s of `torch.utils.checkpoint` and the
//!   schedule PyTorch runs for them.

pub mod analysis;
pub mod captions;
pub mod op;
pub mod segments;

pub use analysis::{fates, recomputations, recompute_flags, Fate};
pub use captions::{captions, ordinal};
pub use op::{format_ops, menu_choices, tensor_symbol, Op, TensorKind};
pub use segments::Segment;
