//! The fast DP against [`reference`](super::reference) entry by entry: every
//! C_Δ(i, j, m, Δ) and every OC state the reference computed, value (as
//! bits) and choice, on thousands of small pseudo-random chains, both modes,
//! both loss steps, with and without a link, on coarse and exact grids.
//!
//! How it can fail: a re-associated float sum or a hoisted term computed in
//! another order (a last-bit difference in some entry), a tie broken the
//! other way (another choice code), a pruning test that cuts a candidate the
//! reference took, a square or row read at a wrong index. Mutation tried:
//! `v < cur` made `v <= cur` in the C_Δ fill (`fill_splits`): fails at once,
//! "C_Δ(1,4,12,5): (61.12…, 3) vs (61.12…, 2)" (the same value, a later
//! split chosen), which the plan-level cross-check in
//! `crates/remat-core/tests/pofo_reference.rs` does not see.
//! Mutation tried: the cut's test dropped from Case 2's cell loop
//! (`Loops::try_option`): fails at once, "OC_1(5,0,5,5) below the
//! reference" (a C_Δ above its cut, larger than its optimum, left less to
//! prefetch and made a lower candidate).
//! Every other chain fills each layer on three threads
//! ([`Workers::exactly`]); mutation tried: each spawned thread skips the
//! first piece of its share (`parallel.rs`): fails at once (an OC state
//! left unfilled).
//!
//! Every third chain is filled with the portable loops, the others with
//! this CPU's (`kernel::Loops`: the recursion is compiled once for each);
//! mutation tried: the portable option loop's `<` made `<=`: fails at
//! once on a portable chain, "OC_0(1,0,0,0): (0.0536…, 5) vs (0.0536…, 4)".
//!
//! OC states above the bottom-up cut (`Pofo::find_cut`) are off every
//! optimal path and are only checked to be no lower than the reference's.

use super::kernel::Kernel;
use super::reference;
use super::{Filling, LossStep, Mode, Pofo};
use crate::model::{Chain, Stage};
use crate::solvers::no_progress;
use crate::solvers::parallel::Workers;

/// A small deterministic generator (the tests need no seed from outside;
/// `kernel`'s tests use it too).
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(super) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A chain of 1..=7 stages: integer or real times, sizes of a few bytes
/// (so one byte a slot is an exact grid) scaled by `unit`, overheads of
/// both signs, no-grad times and transients apart from the recording ones.
fn chain(rng: &mut Rng, unit: u64) -> Chain {
    let len = 1 + rng.below(7) as usize;
    let real = rng.below(2) == 0;
    let stages = (0..len)
        .map(|_| {
            let time = |rng: &mut Rng, most: u64| {
                if real {
                    1e-3 * (0.1 + rng.unit() * most as f64)
                } else {
                    (1 + rng.below(most)) as f64
                }
            };
            let f = time(rng, 10);
            let b = time(rng, 20);
            let out = rng.below(9) * unit;
            let saved = out + rng.below(7) * unit;
            let grad = rng.below(9) * unit;
            let freed = (grad + saved) as i64;
            Stage {
                name: String::new(),
                forward_seconds: f,
                backward_seconds: b,
                output_bytes: out,
                saved_bytes: saved,
                gradient_bytes: grad,
                parameter_gradient_bytes: 0,
                input_freed_bytes: 0,
                forward_overhead_bytes: (rng.below(4) * unit) as i64,
                backward_overhead_bytes: (rng.below(16) as i64 - 12).max(-freed) * unit as i64,
                forward_nograd_seconds: (rng.below(2) == 0).then(|| f * rng.unit()),
                forward_nograd_overhead_bytes: (rng.below(2) == 0)
                    .then(|| (rng.below(7) * unit) as i64),
                module: None,
                parameters: Vec::new(),
                menu: Vec::new(),
            }
        })
        .collect();
    Chain {
        name: "random".into(),
        source: "pofo::tests".into(),
        input_bytes: rng.below(9) * unit,
        input_gradient_bytes: rng.below(9) * unit,
        bandwidth_bytes_per_s: None,
        stages,
        ..Chain::default()
    }
}

/// Compares both DPs' tables, the fast one filled on `workers` threads;
/// returns the number of OC states compared.
#[allow(clippy::too_many_arguments)]
fn compare(
    chain: &Chain,
    mode: Mode,
    loss: LossStep,
    budget: u64,
    slots: usize,
    bw: Option<f64>,
    workers: Workers,
    kernel: Kernel,
) -> usize {
    let big = 1 << 40;
    let what = format!(
        "{mode:?} {loss:?} budget {budget} slots {slots} bw {bw:?} {workers:?} {kernel:?} chain {chain:?}"
    );
    let filling = Filling {
        workers,
        kernel,
        with_cut: true,
    };
    let mut fast = Pofo::build(
        chain,
        mode,
        budget,
        slots,
        bw,
        big,
        filling,
        &mut no_progress(),
    )
    .unwrap()
    .with_loss_step(loss);
    let mut slow = reference::Pofo::build(chain, mode, budget, slots, bw, big, &mut no_progress())
        .unwrap()
        .with_loss_step(loss);
    let (n_slots, md) = slow.dims();
    let n = chain.len();
    if mode == Mode::Full {
        for i in 1..n {
            for j in i..n {
                for m in 0..=n_slots {
                    for delta in 0..=m.min(md) {
                        // Past D_i no path reads C_Δ(i, ·) (`Grid::reached`):
                        // not stored, read as ∞. The OC states the reference
                        // reached, all compared below, are what shows no
                        // path goes there.
                        if delta > fast.reached_at(i) {
                            let a = fast.c(i, j, m, delta);
                            assert!(a == f64::INFINITY, "C_Δ({i},{j},{m},{delta}) past D_i: {a}");
                            continue;
                        }
                        let (a, b) = (fast.c_entry(i, j, m, delta), slow.c_entry(i, j, m, delta));
                        if b.0 > fast.c_cut(i, j) {
                            assert!(a.0 >= b.0 * (1.0 - 1e-12), "C_Δ({i},{j},{m},{delta}) below the reference: {a:?} vs {b:?}: {what}");
                            continue;
                        }
                        assert!(
                            a.0.to_bits() == b.0.to_bits() && a.1 == b.1,
                            "C_Δ({i},{j},{m},{delta}): {a:?} vs {b:?}: {what}"
                        );
                    }
                }
            }
        }
    }
    let v = fast.best_seconds(&mut no_progress()).unwrap();
    let w = slow.best_seconds(&mut no_progress()).unwrap();
    assert_eq!(v.map(f64::to_bits), w.map(f64::to_bits), "{what}");
    let mut compared = 0;
    for i in 1..=n {
        for x in 0..2 {
            for a in 0..=n_slots {
                for df in 0..=md {
                    for db in 0..=md {
                        let Some(s) = slow.oc_entry(i, x, a, df, db) else {
                            continue;
                        };
                        if s.0.is_nan() {
                            continue;
                        }
                        let f = fast.oc_entry(i, x, a, df, db).expect("the same memo");
                        // Above the cut a state is off every optimal path:
                        // the fast DP keeps only a value no lower than it.
                        if s.0 > fast.cut_at(i) {
                            assert!(f.0 >= s.0 * (1.0 - 1e-12), "OC_{x}({i},{a},{df},{db}) below the reference: {f:?} vs {s:?}: {what}");
                            continue;
                        }
                        assert!(
                            f.0.to_bits() == s.0.to_bits() && f.1 == s.1,
                            "OC_{x}({i},{a},{df},{db}): {f:?} vs {s:?}: {what}"
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(
        fast.plan(&mut no_progress()).unwrap(),
        slow.plan(&mut no_progress()).unwrap(),
        "{what}"
    );
    compared
}

#[test]
fn the_tables_equal_the_reference_entry_by_entry() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut chains, mut states) = (0, 0);
    for _ in 0..2000 {
        let unit = [1, 1, 3, 1 << 20][rng.below(4) as usize];
        let chain = chain(&mut rng, unit);
        if chain.validate().is_err() {
            continue;
        }
        let high = crate::solvers::max_useful_budget(&chain).max(1);
        let budget = (high as f64 * (0.3 + 0.8 * rng.unit())) as u64;
        let slots = match rng.below(3) {
            0 => (budget / unit).clamp(1, 40) as usize,
            _ => 1 + rng.below(16) as usize,
        };
        // Rates that make the link matter: a few bytes (units) a second
        // against integer times, a few thousand against milliseconds.
        let real = chain.stages[0].forward_seconds.fract() != 0.0;
        let scale = unit as f64 * if real { 1000.0 } else { 1.0 };
        let bw = [None, Some(0.5), Some(2.0), Some(12e9)][rng.below(4) as usize].map(|b| {
            if b > 100.0 {
                b
            } else {
                b * scale
            }
        });
        // Every layer of every other chain is filled on three threads, each
        // piece (an OC square, a C_Δ pair) by one of them: a piece that
        // read an unfinished one, or a deal that dropped or repeated one,
        // would differ from the reference here.
        let workers = if chains % 2 == 0 {
            Workers::ONE
        } else {
            Workers::exactly(3)
        };
        // Every third chain with the portable loops (what wasm runs), the
        // others with this CPU's (AVX2 where it has it): the recursion is
        // compiled once for each (`kernel::Loops`).
        let kernel = if chains % 3 == 0 {
            Kernel::Portable
        } else {
            Kernel::detect()
        };
        for mode in [Mode::Full, Mode::OffloadOnly] {
            for loss in [LossStep::Paper, LossStep::Overlap] {
                states += compare(
                    &chain,
                    mode,
                    loss,
                    budget.max(1),
                    slots,
                    bw,
                    workers,
                    kernel,
                );
            }
        }
        chains += 1;
    }
    // Most random chains are valid (1587 of 2000 with this seed, 60953 OC
    // states the reference computed compared, besides every C_Δ entry).
    assert!(
        chains > 1000 && states > 50_000,
        "{chains} chains, {states} states"
    );
}

/// C_Δ's compact layout (`PairLayout`: triangles Δ ≤ m, cut at D_i) puts
/// every stored cell (i, j, m, Δ) at its own index, and uses every index of
/// the table once: a row or pair offset off by one would map two cells to
/// one index (which the entry-by-entry test sees only where the two differ)
/// or leave a hole. Mutation tried: each row one cell short (m.min(cap)
/// without + 1) in `PairLayout::new`: fails at once (a cell past the
/// table).
#[test]
// (i, j, m, Δ) index the layout and `reached` at once.
#[allow(clippy::needless_range_loop)]
fn the_pair_layout_is_a_bijection_onto_the_table() {
    for (n, slots, max_delta) in [(1, 0, 0), (3, 4, 4), (5, 7, 0), (6, 9, 9), (8, 5, 5)] {
        // D_i growing by 0..3 a stage, capped at N, as `Grid::reached` is.
        let reached: Vec<usize> = (0..=n).map(|i| (i * i / 3).min(slots)).collect();
        let layout = super::PairLayout::new(n, slots, max_delta, &reached);
        let mut seen = vec![false; layout.entries()];
        for i in 1..=n {
            for j in i..=n {
                for m in 0..=slots {
                    for delta in 0..=m {
                        let stored = layout.stored(i, m, delta);
                        assert_eq!(
                            stored,
                            delta <= max_delta.min(reached[i]),
                            "({i},{j},{m},{delta})"
                        );
                        if stored {
                            let at = layout.index(i, j, m, delta);
                            assert!(!seen[at], "({i},{j},{m},{delta}) at {at} twice");
                            seen[at] = true;
                        }
                    }
                }
            }
        }
        assert!(
            seen.iter().all(|s| *s),
            "a hole in the table: n {n} N {slots}"
        );
    }
}
