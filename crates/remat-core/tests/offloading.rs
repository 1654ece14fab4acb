#![cfg(not(target_arch = "wasm32"))]
//! POFO and the offloading heuristics on random chains.
//!
//! Chains here are "exact": integer sizes with one byte per slot, integer
//! times and an integer bandwidth, so every Δ of the DP is a whole number of
//! slots and no rounding hides a difference.

mod common;

use common::{integer_chain, pofo_dp, real_chain};
use proptest::prelude::*;
use remat_core::simulator::judge;
use remat_core::simulator::Trace;
use remat_core::solvers::offload::pofo::{LossStep, Mode};
use remat_core::solvers::offload::{self, with_prefetches};
use remat_core::solvers::persistent::{min_budget, PersistentTable, Variant};
use remat_core::solvers::{
    max_useful_budget, memory_floor, no_progress, Algorithm, Options, Problem, Solution, SolveError,
};
use remat_core::{Chain, Op};

const BIG: u64 = 1 << 40;

/// One budget of an offloading algorithm, as the planner asks it.
fn solve_offloading(chain: &Chain, algorithm: Algorithm, budget: u64, options: &Options) -> R {
    let problem = Problem {
        chain,
        algorithm,
        budget,
        options,
    };
    offload::solve(&problem, &mut no_progress())
}

type R = Result<Solution, SolveError>;

fn with_bandwidth(mut chain: Chain, bw: Option<f64>) -> Chain {
    chain.bandwidth_bytes_per_s = bw;
    chain
}

/// Times scaled so that u·β is a whole number of bytes for β < 1: what the
/// link moves during any operation is then exact, and Δ needs no rounding.
fn whole_transfers(mut chain: Chain, bw: f64) -> Chain {
    let scale = (1.0 / bw).max(1.0);
    for s in &mut chain.stages {
        s.forward_seconds *= scale;
        s.backward_seconds *= scale;
    }
    with_bandwidth(chain, Some(bw))
}

/// A budget from the least any schedule needs to M_high.
fn budget_at(chain: &Chain, frac: f64) -> u64 {
    // The floor already counts a^0 and δ^L, resident when the step starts.
    let low = memory_floor(chain).bytes;
    let high = max_useful_budget(chain).max(low);
    low + ((high - low) as f64 * frac) as u64
}

fn dp(chain: &Chain, mode: Mode, budget: u64, bw: Option<f64>) -> Option<f64> {
    dp_with(chain, mode, budget, bw, LossStep::Paper)
}

fn dp_with(chain: &Chain, mode: Mode, budget: u64, bw: Option<f64>, loss: LossStep) -> Option<f64> {
    let slots = budget.max(1) as usize;
    pofo_dp(chain, mode, budget, slots, bw, loss)
        .best_seconds(&mut no_progress())
        .unwrap()
}

/// Appendix B transcribed as plain recursion: every first operation, every
/// split and every offload decision is tried, nothing is memoized. On chains
/// of ≤ 5 stages this is the exhaustive search over the schedules that obey
/// assumptions (i)–(iii), each timed by the paper's model.
struct Naive {
    n: usize,
    slots: usize,
    beta: f64,
    full: bool,
    loss: LossStep,
    a: Vec<usize>,
    abar: Vec<usize>,
    d: Vec<usize>,
    of: Vec<usize>,
    /// o_f∅: the no-grad transient of the F_ck / F_∅ chains.
    ofn: Vec<usize>,
    /// ω_δ^ℓ + ω_ā^ℓ + ω_δ^{ℓ-1} + o_b^ℓ: o_b may be negative.
    b: Vec<usize>,
    uf: Vec<f64>,
    ub: Vec<f64>,
    /// No-grad forward times: the F_ck / F_∅ chains.
    ufn: Vec<f64>,
}

impl Naive {
    fn new(chain: &Chain, budget: u64, bw: Option<f64>, full: bool, loss: LossStep) -> Naive {
        let n = chain.len();
        let st = |l: usize, f: &dyn Fn(&remat_core::Stage) -> u64| {
            if l == 0 {
                0
            } else {
                f(chain.stage(l)) as usize
            }
        };
        // Per stage 0..=L; stage 0 (the input) takes no time.
        let times = |f: &dyn Fn(&remat_core::Stage) -> f64| -> Vec<f64> {
            (0..=n)
                .map(|l| if l == 0 { 0.0 } else { f(chain.stage(l)) })
                .collect()
        };
        Naive {
            n,
            slots: budget as usize,
            beta: bw.unwrap_or(0.0),
            full,
            loss,
            a: (0..=n).map(|l| chain.output_bytes(l) as usize).collect(),
            abar: (0..=n).map(|l| st(l, &|s| s.saved_bytes)).collect(),
            d: (0..=n).map(|l| chain.gradient_bytes(l) as usize).collect(),
            of: (0..=n).map(|l| st(l, &|s| s.forward_overhead())).collect(),
            ofn: (0..=n)
                .map(|l| st(l, &|s| s.nograd_forward_overhead()))
                .collect(),
            b: (0..=n)
                .map(|l| {
                    if l == 0 {
                        0
                    } else {
                        chain.backward_bytes(l) as usize
                    }
                })
                .collect(),
            ufn: times(&|s| s.nograd_forward_seconds()),
            uf: times(&|s| s.forward_seconds),
            ub: times(&|s| s.backward_seconds),
        }
    }
    fn idle(&self, excess: f64) -> f64 {
        if excess <= 0.0 {
            0.0
        } else if self.beta > 0.0 {
            excess / self.beta
        } else {
            f64::INFINITY
        }
    }
    fn up(&self, x: f64) -> usize {
        if x <= 1e-9 {
            0
        } else {
            (x - 1e-9).ceil() as usize
        }
    }
    fn mf_all(&self, i: usize, j: usize) -> usize {
        self.d[j] + self.abar[i] + self.of[i]
    }
    fn mf_none(&self, i: usize, k: usize, j: usize) -> usize {
        self.d[j] + if k == i { 0 } else { self.a[k - 1] } + self.a[k] + self.ofn[k]
    }
    fn mb(&self, i: usize) -> usize {
        self.b[i]
    }

    /// C_Δ(i, j, m, Δ) (B.3).
    fn c(&self, i: usize, j: usize, m: usize, delta: usize) -> f64 {
        if delta > m {
            return f64::INFINITY;
        }
        let dl = delta as f64;
        let (mf, mb) = (self.mf_all(i, j), self.mb(i));
        if i == j {
            if mf > m || mb > m {
                return f64::INFINITY;
            }
            let eps = self
                .idle(mf as f64 - self.beta * self.ub[i] + dl - m as f64)
                .max(self.idle(mb as f64 + dl - m as f64));
            return self.uf[i] + self.ub[i] + eps;
        }
        let mut best = f64::INFINITY;
        if mf <= m && mb <= m && self.abar[i] <= m {
            let eps_b = self.idle(mb as f64 + dl - m as f64);
            let d1 = self.up(dl - (self.ub[i] + eps_b) * self.beta);
            let sub = self.c(i + 1, j, m - self.abar[i], d1);
            let d2 = (d1 as f64 - sub * self.beta).max(0.0);
            let eps_f = self.idle(mf as f64 + d2 - m as f64);
            best = best.min(self.uf[i] + self.ub[i] + sub + eps_f + eps_b);
        }
        for last in i..j {
            // The F_ck^i / F_∅ chain runs stages i..=last only.
            if self.a[last] > m || (i..=last).any(|k| self.mf_none(i, k, j) > m) {
                continue;
            }
            let f: f64 = (i..=last).map(|k| self.ufn[k]).sum();
            let left = self.c(i, last, m, delta);
            let d2 = self.up(dl - left * self.beta);
            let right = self.c(last + 1, j, m - self.a[last], d2);
            let d3 = (d2 as f64 - right * self.beta).max(0.0);
            let term = (i..=last)
                .map(|k| {
                    let after: f64 = (k + 1..=last).map(|h| self.ufn[h]).sum();
                    self.mf_none(i, k, j) as f64 - self.beta * after
                })
                .fold(f64::NEG_INFINITY, f64::max);
            let eps = self.idle(term + d3 - m as f64);
            best = best.min(f + right + left + eps);
        }
        best
    }

    /// OC_x(i, A, Δ_F, Δ_B) (B.1, B.2 with the loss at stage L).
    fn oc(&self, i: usize, x: usize, a: usize, df: usize, db: usize) -> f64 {
        let n = self.n;
        let big = self.slots;
        let input = if x == 1 {
            self.abar[i - 1]
        } else {
            self.a[i - 1]
        };
        if a + input + df > big || a + input + db > big {
            return f64::INFINITY;
        }
        let free = big - a - input;
        let (mfx, mbx) = ((a + df + input) as f64, (a + db + input) as f64);
        if i == n {
            let (mf, mb) = (self.mf_all(n, n), self.mb(n));
            if mf > free || mb > free {
                return f64::INFINITY;
            }
            let eps_f = self.idle(mf as f64 + mfx - big as f64);
            let eps_b = self.idle(mb as f64 + mbx - big as f64);
            if df == 0 && db == 0 {
                return self.uf[n] + self.ub[n] + eps_f + eps_b;
            }
            return match self.loss {
                // B.2: ε_G = (Δ_F(L+2) + Δ_B(L+2)) / β, the Δ after Table 2's
                // D_F = (u_F + ε_F) β and D_B = (u_B + ε_B) β.
                LossStep::Paper => {
                    let left_f = (df as f64 - (self.uf[n] + eps_f) * self.beta).max(0.0);
                    let left_b = (db as f64 - (self.ub[n] + eps_b) * self.beta).max(0.0);
                    let eps_g = (left_f + left_b) / self.beta;
                    self.uf[n] + self.ub[n] + eps_f + eps_b + eps_g
                }
                LossStep::Overlap => {
                    let compute = eps_f + self.uf[n] + self.ub[n] + eps_b;
                    let copy =
                        (df as f64 / self.beta).max(eps_f + self.uf[n]) + db as f64 / self.beta;
                    compute.max(copy)
                }
            };
        }
        let next = |offload: bool, sent: f64, fetched: f64| {
            let lb = self.up(db as f64 - fetched);
            if offload {
                (a, self.up((df + input) as f64 - sent), lb + input)
            } else {
                (a + input, self.up(df as f64 - sent), lb)
            }
        };
        let offloads: &[bool] = if self.beta > 0.0 {
            &[false, true]
        } else {
            &[false]
        };
        let mut best = f64::INFINITY;
        let (mf, mb) = (self.mf_all(i, n), self.mb(i));
        if mf <= free && mb <= free {
            let eps_f = self.idle(mf as f64 + mfx - big as f64);
            let eps_b = self.idle(mb as f64 + mbx - big as f64);
            for &off in offloads {
                let (na, ndf, ndb) = next(
                    off,
                    (self.uf[i] + eps_f) * self.beta,
                    (self.ub[i] + eps_b) * self.beta,
                );
                let v = self.uf[i] + self.ub[i] + self.oc(i + 1, 1, na, ndf, ndb) + eps_f + eps_b;
                best = best.min(v);
            }
        }
        if !self.full {
            return best;
        }
        for last in i..n {
            let f: f64 = (i..=last).map(|k| self.ufn[k]).sum();
            let term = (i..=last)
                .map(|k| {
                    let before: f64 = (i..k).map(|h| self.ufn[h]).sum();
                    self.mf_none(i, k, n) as f64 - self.beta * before
                })
                .fold(f64::NEG_INFINITY, f64::max);
            let eps_f = self.idle(term - big as f64 + mfx);
            let back = self.c(i, last, free, db);
            for &off in offloads {
                let fits = (i..=last).all(|k| {
                    let mk = self.mf_none(i, k, n);
                    if off && k > i {
                        mk <= free + input
                    } else {
                        mk <= free
                    }
                });
                if !fits || !back.is_finite() {
                    continue;
                }
                let (na, ndf, ndb) = next(off, (f + eps_f) * self.beta, back * self.beta);
                best = best.min(f + self.oc(last + 1, 0, na, ndf, ndb) + back + eps_f);
            }
        }
        best
    }
}

/// An integer chain of up to 8 stages, a budget fraction and a link speed
/// β from a quarter to twice the chain's bytes per time unit.
fn linked_case() -> impl Strategy<Value = (Chain, f64, f64)> {
    (
        integer_chain(8, true),
        0.0f64..1.0,
        prop_oneof![Just(0.25), Just(0.5), Just(1.0), Just(2.0)],
    )
}

fn trace_of(chain: &Chain, ops: &[Op], budget: u64, bw: Option<f64>) -> Trace {
    judge(chain, ops, budget, bw).unwrap_or_else(|e| panic!("invalid schedule: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// The DP (dense C_Δ table, memoized OC, branch and bound) equals the
    /// exhaustive search over Appendix B's decisions, with and without
    /// recomputation, for both loss steps (B.2 is the default).
    ///
    /// Could fail if: the DP prunes a split that was better, reads a stale
    /// memo entry, or times the loss step otherwise than B.2 says. Mutations
    /// tried: the DP's `ε_G` without Δ_B' (fails: offload-only DP 73 vs
    /// exhaustive 116); the branch-and-bound test `beaten` made to prune at
    /// `bound > best * 0.9` (fails: DP 29.5 vs exhaustive 28).
    #[test]
    fn pofo_equals_exhaustive_search_on_tiny_chains(
        chain in integer_chain(5, true),
        frac in 0.0f64..1.0,
        bw in prop_oneof![Just(None), Just(Some(0.25)), Just(Some(0.5)), Just(Some(1.0)), Just(Some(2.0))],
    ) {
        let budget = budget_at(&chain, frac);
        for loss in [LossStep::Paper, LossStep::Overlap] {
            for (mode, full) in [(Mode::Full, true), (Mode::OffloadOnly, false)] {
                let fast = dp_with(&chain, mode, budget, bw, loss).unwrap_or(f64::INFINITY);
                let naive = Naive::new(&chain, budget, bw, full, loss).oc(1, 0, 0, 0, 0);
                prop_assert!(
                    fast == naive || (fast - naive).abs() < 1e-9,
                    "{mode:?} {loss:?}: DP {fast} vs exhaustive {naive} at budget {budget}, β {bw:?}"
                );
            }
        }
    }

    /// With no link, every Δ is 0 and pofo is rotor: the same value, bit
    /// for bit, on the same grid.
    #[test]
    fn pofo_without_bandwidth_equals_rotor(
        chain in integer_chain(9, true),
        frac in 0.0f64..1.05,
    ) {
        let budget = budget_at(&chain, frac);
        let slots = budget.max(1) as usize;
        let pofo = dp(&chain, Mode::Full, budget, None);
        let rotor = PersistentTable::build(&chain, Variant::Rotor, budget, slots, BIG, &mut no_progress())
            .unwrap()
            .best_seconds(budget);
        prop_assert_eq!(pofo, rotor);
    }

    /// With a link, pofo's DP value (its own optimum, before the solver's
    /// fallback to rotor's schedule) is never above its value with no link,
    /// which is rotor's (see `pofo_without_bandwidth_equals_rotor`): every
    /// schedule without transfers is still in its class and costs the same.
    ///
    /// Could fail if: a link made a state without offloads cost more (idle
    /// time charged for nothing to move) or removed the "keep the input"
    /// choice. Mutation tried: in `oc_compute`, skip `offload == false`
    /// whenever there is a link (fails: DP with a link above rotor's value).
    #[test]
    fn pofo_with_a_link_is_never_slower_than_without(
        (chain, frac, bw) in linked_case(),
    ) {
        let budget = budget_at(&chain, frac);
        let inf = f64::INFINITY;
        let with = dp(&chain, Mode::Full, budget, Some(bw)).unwrap_or(inf);
        let without = dp(&chain, Mode::Full, budget, None).unwrap_or(inf);
        prop_assert!(with <= without, "with β = {bw}: {with} > without: {without}");
    }

    /// The DPs' own schedules, as the simulator runs them with at-once
    /// transfers (prefetches placed, no fallback, no filtering by the
    /// solver): valid, complete and within the budget, doing all its
    /// compute. The DP's time is not a lower bound of the at-once run (see
    /// below).
    ///
    /// Could fail if: the read-out disagrees with the recursion (a wrong
    /// Δ passed down, an F_∅ too many), the DP's memory accounting forgets a
    /// tensor, or `place_prefetches` puts a prefetch where it overflows.
    /// Mutations tried: `m_fall` without δ^j (fails: peak over the budget);
    /// `place_prefetches` scoring by time only, not fit first (fails: peak
    /// over the budget).
    #[test]
    fn the_dps_raw_schedules_run_within_the_budget(
        (chain, frac, bw) in linked_case(),
    ) {
        let budget = budget_at(&chain, frac);
        let chain = whole_transfers(chain, bw);
        for mode in [Mode::Full, Mode::OffloadOnly] {
            for loss in [LossStep::Paper, LossStep::Overlap] {
                let Some((ops, predicted)) = raw_plan(&chain, mode, budget, budget.max(1) as usize, bw, loss) else { continue };
                let t = trace_of(&chain, &ops, budget, Some(bw));
                prop_assert!(t.peak_bytes <= budget, "{mode:?} {loss:?}: peak {} > {budget}", t.peak_bytes);
                // The DP's time is not a lower bound of the at-once run: B.2
                // charges ε_G serially after the loss, and Lemma 1's idle
                // times under continuous transfers can exceed what the
                // simulator's at-once transfers cost (seen on 2-stage chains:
                // simulated 28 < DP 29 with B.2, 24 < 25 with the overlapping
                // step; the cases are kept in the regressions file). What
                // must hold is that the run does all the compute, Σ u.
                let compute: f64 = chain.sequential_seconds();
                prop_assert!(t.makespan_seconds >= compute - 1e-9);
                prop_assert!(predicted.is_finite());
            }
        }
    }

    /// The same on chains with real-valued times and large sizes, at PCIe
    /// speed, on the paper's 50-slot grid (sizes round up).
    ///
    /// Could fail if: rounding sizes to slots ever rounds one down, the
    /// budget's slots exceed the budget, or a prefetch is placed where it
    /// overflows. Mutation tried: `place_prefetches` scoring by time only,
    /// not fit first (fails here too: peak over the budget).
    #[test]
    fn the_dps_raw_schedules_fit_on_real_valued_chains(
        chain in real_chain(16),
        frac in 0.0f64..1.0,
    ) {
        let low = min_budget(&chain, Variant::Rotor);
        let high = max_useful_budget(&chain);
        let budget = low + ((high - low) as f64 * frac) as u64;
        let chain = with_bandwidth(chain, Some(12e9));
        for mode in [Mode::Full, Mode::OffloadOnly] {
            let Some((ops, _)) = raw_plan(&chain, mode, budget, 50, 12e9, LossStep::Paper) else { continue };
            let t = judge(&chain, &ops, budget, Some(12e9)).expect("runs");
            prop_assert!(t.peak_bytes <= budget, "{mode:?}: {} > {budget}", t.peak_bytes);
            // With transfers too, the tensors named at the peak add up to it
            // (a prefetched copy is a residency of its own).
            let named: u64 = t.peak_tensors().iter().map(|r| r.bytes).sum();
            prop_assert_eq!(named - t.at_peak.given_back_bytes, t.peak_bytes);
        }
    }
}

/// The DP's schedule with its prefetches placed, as `pofo` builds it before
/// comparing with rotor's: None when the DP finds nothing.
fn raw_plan(
    chain: &Chain,
    mode: Mode,
    budget: u64,
    slots: usize,
    bw: f64,
    loss: LossStep,
) -> Option<(Vec<Op>, f64)> {
    let mut dp = pofo_dp(chain, mode, budget, slots, Some(bw), loss);
    let plan = dp.plan(&mut no_progress()).unwrap()?;
    let ops = with_prefetches(chain, &plan, budget, Some(bw));
    Some((ops, plan.predicted_seconds))
}

#[test]
fn with_no_bandwidth_the_offloading_algorithms_degrade_gracefully() {
    let chain = remat_core::examples::by_name("vgg19").unwrap();
    let chain = with_bandwidth(chain, None);
    let budget = (min_budget(&chain, Variant::Rotor) + max_useful_budget(&chain)) / 2;
    let opts = Options::default();
    let rotor = remat_core::solvers::solve(&chain, Algorithm::Rotor, budget, &opts).unwrap();
    let pofo = solve_offloading(&chain, Algorithm::Pofo, budget, &opts).unwrap();
    let ops = pofo.ops.expect("pofo without a link is rotor");
    assert!(!ops.iter().any(|op| op.is_transfer()));
    let t = trace_of(&chain, &ops, budget, None);
    let rt = trace_of(&chain, rotor.ops.as_ref().unwrap(), budget, None);
    // 50 slots instead of rotor's 500: within a few percent.
    assert!(t.makespan_seconds <= rt.makespan_seconds * 1.05);
    let only = solve_offloading(&chain, Algorithm::OffloadOnly, budget, &opts).unwrap();
    assert!(
        only.ops.is_none(),
        "offload-only cannot fit below M_high with no link"
    );
    let opp = solve_offloading(&chain, Algorithm::Opportunist, budget, &opts).unwrap();
    assert!(
        opp.ops.is_none() && opp.detail.contains("bandwidth"),
        "{}",
        opp.detail
    );
    let auto = solve_offloading(&chain, Algorithm::Autocapper, budget, &opts).unwrap();
    let a = trace_of(&chain, auto.ops.as_ref().unwrap(), budget, None);
    assert!(a.peak_bytes <= budget);
}

/// Errors are errors: a bad option or a table over the limit is `Err`, never
/// an infeasible answer, even where store-all would fit — but only where the
/// slots were asked for (`offload_slots_explicit`, the CLI's `--slots`):
/// otherwise tables over the limit make the DP run on the most slots that
/// fit, and the answer says so.
///
/// Could fail if: `solve_dp` answered store-all before checking its options,
/// a size check turned into `feasible: false`, or the default grid were
/// refused instead of made coarser. Mutations tried: removing the
/// `pofo::validate` call from `solve_dp` (fails at budget = M_high: Ok);
/// `resolution` ignoring `explicit` (fails: the explicit case answers).
/// Removing `check_heuristic_size` makes the next test run for hours.
#[test]
fn pofo_options_out_of_range_are_errors() {
    let chain = remat_core::examples::vgg19();
    let high = max_useful_budget(&chain);
    for budget in [high / 2, high] {
        let opts = Options {
            offload_slots: 70000,
            bandwidth_bytes_per_s: Some(12e9),
            ..Options::default()
        };
        let r = solve_offloading(&chain, Algorithm::Pofo, budget, &opts);
        assert!(
            matches!(&r, Err(SolveError::BadOption(m)) if m.starts_with("slots:")),
            "{r:?}"
        );
    }
    let small = Options {
        bandwidth_bytes_per_s: Some(12e9),
        max_table_bytes: 1 << 20,
        offload_slots_explicit: true,
        ..Options::default()
    };
    for algorithm in [Algorithm::Pofo, Algorithm::OffloadOnly] {
        let r = solve_offloading(&chain, algorithm, high / 2, &small);
        assert!(
            matches!(&r, Err(SolveError::TooLarge(m)) if m.contains("max_table_bytes") && m.contains("--slots")),
            "{algorithm}: {r:?}"
        );
        // The default grid, not asked for: the most slots that fit (8 MiB:
        // room for rotor's table, which pofo also judges, not for pofo's
        // 30 MB at 50 slots).
        let chosen = Options {
            offload_slots_explicit: false,
            max_table_bytes: 8 << 20,
            ..small.clone()
        };
        let s = solve_offloading(&chain, algorithm, high / 2, &chosen).unwrap();
        let grid = remat_core::solvers::offload::grid_for(
            &chain,
            if algorithm == Algorithm::Pofo {
                Mode::Full
            } else {
                Mode::OffloadOnly
            },
            &chosen,
            Some(12e9),
        )
        .unwrap();
        assert!(
            grid.reduced() && grid.slots >= 1 && grid.slots < 50,
            "{grid:?}"
        );
        assert!(grid.table_bytes <= 8 << 20 && grid.requested_bytes > 8 << 20);
        let one_more = remat_core::solvers::offload::pofo::table_bytes(
            chain.len(),
            grid.slots + 1,
            true,
            if algorithm == Algorithm::Pofo {
                Mode::Full
            } else {
                Mode::OffloadOnly
            },
        );
        assert!(one_more > 8 << 20, "the most slots that fit");
        assert!(
            s.detail
                .contains(&format!("{} slots, not the 50 asked", grid.slots)),
            "{}",
            s.detail
        );
    }
}

/// A valid 5000-stage chain: the heuristics refuse at once, naming the
/// stage count. Could fail (by taking minutes) if: pofo's DP ran at a
/// coarse grid; it did, for 191 s, until `pofo::MAX_SPLIT_STEPS` (checked
/// by removing that check: 191 s, then rotor's refusal).
#[test]
fn the_heuristics_refuse_a_5000_stage_chain_at_once() {
    let chain = remat_core::examples::synthetic(5000);
    let budget = max_useful_budget(&chain) / 2;
    let opts = Options::default();
    for algorithm in [
        Algorithm::Opportunist,
        Algorithm::Autocapper,
        Algorithm::Pofo,
    ] {
        let r = solve_offloading(&chain, algorithm, budget, &opts);
        assert!(
            matches!(&r, Err(SolveError::TooLarge(m)) if m.contains("5000")),
            "{algorithm}: {r:?}"
        );
    }
}

/// A chain where only the F_∅ a split runs may count (found by
/// `pofo_without_bandwidth_equals_rotor` with pofo's C_Δ threshold in the
/// report's form, shrunk): F_∅^3 needs a no-grad transient of 5 bytes that
/// F_all^3 does not, so a split of C_Δ(i, j) whose F_∅ chain stops before
/// stage 3 must not be charged for F_∅^3, which it never runs (the
/// sub-problem after it runs F_all^3).
///
/// Could fail if: pofo or rotor counted an F_∅ its split does not run.
/// Mutation tried: pofo's C_Δ threshold over every k in i..j, as in the
/// paper (fails: pofo None where rotor meets 23 bytes, as the simulator
/// confirms). The proptests above catch o_f charged to F_ck/F_∅ in
/// `m_fnone` (all three failed with that mutation).
#[test]
fn the_dps_count_only_the_forwards_a_split_runs() {
    let stage = |out: u64, saved: u64, grad: u64, ob: i64, nograd: Option<i64>| remat_core::Stage {
        gradient_bytes: grad,
        backward_overhead_bytes: ob,
        forward_nograd_overhead_bytes: nograd,
        ..remat_core::Stage::new("", 1.0, 1.0, out, saved)
    };
    let chain = Chain {
        name: "split".into(),
        source: "hand-made".into(),
        input_bytes: 4,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: None,
        inputs: None,
        model_fingerprint: None,
        constant_bytes: None,
        peers: Vec::new(),
        stages: vec![
            stage(6, 7, 0, 0, None),
            stage(2, 2, 0, 0, None),
            stage(8, 8, 0, 0, Some(5)),
            stage(0, 0, 7, 0, None),
            stage(3, 7, 0, 0, None),
            stage(4, 10, 5, 0, None),
            stage(2, 4, 3, 2, None),
        ],
    };
    chain.validate().unwrap();
    let budget = 23;
    let rotor = PersistentTable::build(
        &chain,
        Variant::Rotor,
        budget,
        budget as usize,
        BIG,
        &mut no_progress(),
    )
    .unwrap();
    let plan = rotor.plan(&chain, budget).expect("rotor meets the budget");
    let t = trace_of(&chain, &plan.ops, budget, None);
    assert!(t.peak_bytes <= budget);
    assert_eq!(plan.predicted_peak_bytes, t.peak_bytes);
    assert_eq!(t.makespan_seconds, plan.predicted_seconds);
    assert_eq!(
        dp(&chain, Mode::Full, budget, None),
        Some(plan.predicted_seconds)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Where a runtime frees each offload's device copy
    /// (`Trace::offload_frees`, written to schedule files as
    /// `offload_frees`): right after the last compute operation listed
    /// after the offload that starts before its copy ends (the offload
    /// itself when none does), one entry per offload. So every compute
    /// operation a runtime starts sees what the simulator holds then.
    ///
    /// Could fail if: the search stopped at a compute operation before the
    /// one running when the copy ends (the runtime would free early: the
    /// measured peak below the prediction, what issue 42 saw), or went on
    /// to the one that waited for this very copy under the memory limit
    /// and starts at its end (freed one operation late: above the
    /// prediction). Mutation run: `start < s.end` → `start <= s.end` in the
    /// bisection → fails ("op 5 starts at 6.94122736, at or after the
    /// copy's end 6.94122736, yet the copy is freed after it").
    #[test]
    fn each_offload_frees_after_the_compute_op_its_copy_ends_in(
        chain in real_chain(9),
        frac in 0.0f64..0.8,
        bw in prop_oneof![Just(1e8), Just(1e9), Just(1e10)],
        algorithm in prop_oneof![Just(Algorithm::Pofo), Just(Algorithm::OffloadOnly), Just(Algorithm::Delta)],
    ) {
        let chain = with_bandwidth(chain, Some(bw));
        let budget = budget_at(&chain, frac);
        let options = Options { bandwidth_bytes_per_s: Some(bw), ..Options::default() };
        let Ok(solution) = remat_core::solvers::solve(&chain, algorithm, budget, &options) else {
            return Ok(());
        };
        let Some(ops) = solution.ops else { return Ok(()) };
        let trace = judge(&chain, &ops, budget, Some(bw)).unwrap();
        let frees = trace.offload_frees(&ops);
        let offloads: Vec<usize> = (0..ops.len()).filter(|&i| matches!(ops[i], Op::Offload { .. })).collect();
        prop_assert_eq!(frees.iter().map(|f| f.offload).collect::<Vec<_>>(), offloads);
        let is_compute = |op: &Op| op.is_forward() || matches!(op, Op::Backward { .. });
        for f in &frees {
            let end = trace.spans[f.offload].end;
            prop_assert!(f.after == f.offload || is_compute(&ops[f.after]));
            if f.after > f.offload {
                prop_assert!(
                    trace.spans[f.after].start < end,
                    "op {} starts at {}, at or after the copy's end {}, yet the copy is freed after it",
                    f.after, trace.spans[f.after].start, end
                );
            }
            for (j, op) in ops.iter().enumerate().skip(f.after + 1) {
                prop_assert!(
                    !is_compute(op) || trace.spans[j].start >= end,
                    "op {} starts at {}, before the copy's end {}, yet the copy is freed after op {}",
                    j, trace.spans[j].start, end, f.after
                );
            }
        }
    }
}
