//! What pofo's tables may hold before anything is allocated: the encodable
//! sizes, the tables' bytes, and the most slots that fit a limit
//! ([`resolution`]).

use super::backward::{PairCells, PairOut};
use super::forward::Forward;
use super::Mode;
use crate::solvers::api::SolveError;
use std::sync::OnceLock;

/// Checks what pofo's tables can encode, before anything is allocated:
/// choices are two bytes, so N ≤ 65533 slots and L ≤ 32765 stages (a choice
/// encodes the next checkpoint's distance). Sizes within these are then
/// checked against `max_table_bytes` by [`table_bytes`].
pub fn validate(stages: usize, slots: usize) -> Result<(), SolveError> {
    if slots == 0 {
        return Err(SolveError::BadOption("slots: must be at least 1".into()));
    }
    if slots > u16::MAX as usize - 2 {
        return Err(SolveError::BadOption(format!(
            "slots: {slots} is more than pofo's DP allows ({}); use fewer --slots (the paper uses 50)",
            u16::MAX - 2
        )));
    }
    let most = (u16::MAX as usize - 5) / 2;
    if stages > most {
        return Err(SolveError::TooLarge(format!(
            "stages: pofo's DP handles at most {most} stages, the chain has {stages}; use rotor"
        )));
    }
    Ok(())
}

/// Bytes of pofo's tables: C_Δ (value and choice per entry) for `Full`, and
/// OC's dense memo — an upper bound. It counts C_Δ's pairs as whole
/// (N + 1)² squares, as the resolution has always been chosen; the DP
/// stores them as triangles Δ ≤ m cut at D_i (`PairLayout`), half of that
/// or less. The bound stays the square on purpose: it keeps the DP off
/// chains too long to solve in reasonable time at a coarse grid (those
/// with the triangle counted would fit a few slots, and take hours); a
/// chain too long at any grid is refused by [`MAX_SPLIT_STEPS`].
pub fn table_bytes(n: usize, slots: usize, with_bandwidth: bool, mode: Mode) -> u128 {
    let pairs = (n as u128) * (n as u128 + 1) / 2;
    let deltas = if with_bandwidth { slots as u128 + 1 } else { 1 };
    // C_Δ's value and choice per entry, and each row's least value; while
    // it is filled, each pair's slice and its published view
    // (`Pofo::fill_backward`): more than the pair's cells at one slot.
    let fill = (std::mem::size_of::<PairOut<'_>>() + std::mem::size_of::<OnceLock<PairCells<'_>>>())
        as u128;
    let backward = if mode == Mode::Full {
        pairs * ((slots as u128 + 1) * (deltas * 10 + 8) + fill)
    } else {
        0
    };
    let max_delta = if with_bandwidth { slots } else { 0 };
    let rows: u128 = (0..=slots)
        .map(|a| Forward::side(slots, max_delta, a) as u128)
        .sum();
    backward + Forward::entries(n, slots, max_delta) * 10 + (n as u128 + 1) * 2 * rows * 8
}

/// The grid one pofo (or offload-only) solve runs on: the slots asked for
/// where their tables fit `max_table_bytes`, else — unless the slots were
/// asked for explicitly — the most slots whose tables fit (a coarser grid,
/// said in the solution's detail and by the CLI), rather than a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// Slots asked for (`Options::offload_slots`).
    pub requested: usize,
    /// Slots the DP runs on: `requested`, or fewer where its tables would
    /// pass the limit.
    pub slots: usize,
    /// Bytes of the tables at `requested` slots ([`table_bytes`]).
    pub requested_bytes: u128,
    /// Bytes of the tables at `slots`.
    pub table_bytes: u128,
    /// The limit they are held to.
    pub limit_bytes: u64,
}

impl Resolution {
    /// Whether the grid is coarser than asked.
    pub fn reduced(&self) -> bool {
        self.slots < self.requested
    }

    /// "37 slots, not the 50 asked: their tables would need 1.35 GiB, over
    /// the limit of 1 GiB", or "" when the grid is the one asked for.
    pub fn note(&self) -> String {
        use crate::model::units::format_bytes;
        if !self.reduced() {
            return String::new();
        }
        format!(
            "{} slots, not the {} asked: their tables would need {}, over the limit of {}",
            self.slots,
            self.requested,
            format_bytes(self.requested_bytes.min(u64::MAX as u128) as u64),
            format_bytes(self.limit_bytes)
        )
    }
}

/// The [`Resolution`] for a chain of `stages` with `requested` slots. With
/// `explicit` (the user named the slots: `--slots`), tables over the limit
/// are an error naming the flag, as [`Pofo::build`] gives; otherwise the
/// most slots that fit are chosen (tables grow with the slots), and only a
/// chain whose tables pass the limit even at one slot is an error.
pub fn resolution(
    stages: usize,
    requested: usize,
    with_bandwidth: bool,
    mode: Mode,
    max_table_bytes: u64,
    explicit: bool,
) -> Result<Resolution, SolveError> {
    validate(stages, requested)?;
    let bytes = |slots| table_bytes(stages, slots, with_bandwidth, mode);
    let limit = max_table_bytes as u128;
    let requested_bytes = bytes(requested);
    let fits = |slots| bytes(slots) <= limit;
    let slots = if fits(requested) {
        requested
    } else if explicit || !fits(1) {
        return Err(too_large(
            stages,
            requested,
            requested_bytes,
            max_table_bytes,
        ));
    } else {
        // The largest slots in 1..requested whose tables fit.
        let (mut lo, mut hi) = (1, requested);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    };
    Ok(Resolution {
        requested,
        slots,
        requested_bytes,
        table_bytes: bytes(slots),
        limit_bytes: max_table_bytes,
    })
}

/// The most (pair, split) steps C_Δ's fill may take: L(L − 1)(L + 1) / 6,
/// whatever the slots (each step costs a few ns even with no cell to
/// try). A 5000-stage chain takes 2.1 × 10¹⁰ and ran for 191 s at one slot
/// (this machine, before this limit); the limit is about 20 s of that.
pub const MAX_SPLIT_STEPS: u128 = 2_000_000_000;

/// C_Δ's (pair, split) steps for `n` stages.
pub(super) fn split_steps(n: usize) -> u128 {
    let n = n as u128;
    n * (n * n).saturating_sub(1) / 6
}

/// A chain too long for pofo's DP at any resolution: refused at once.
pub(super) fn within_split_limit(stages: usize) -> Result<(), SolveError> {
    let steps = split_steps(stages);
    if steps <= MAX_SPLIT_STEPS {
        return Ok(());
    }
    Err(SolveError::TooLarge(format!(
        "stages: pofo's C_Δ for {stages} stages takes {steps} (pair, split) steps whatever the slots, over the limit of {MAX_SPLIT_STEPS}; split the network into fewer, larger stages"
    )))
}

/// The error for tables over the limit: names the limit and `--slots`.
pub(super) fn too_large(
    stages: usize,
    slots: usize,
    need: u128,
    max_table_bytes: u64,
) -> SolveError {
    SolveError::TooLarge(format!(
        "max_table_bytes: pofo's tables (C_Δ and OC's memo) for {stages} stages × {slots} slots need {}, over the limit of {}; use fewer --slots",
        crate::model::units::format_bytes(need.min(u64::MAX as u128) as u64),
        crate::model::units::format_bytes(max_table_bytes)
    ))
}
