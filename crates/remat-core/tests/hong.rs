//! Hong et al.'s checkpoint selection (`solvers::hong`): the fast algorithms
//! against the plain ones and against exhaustive search, the closed-form
//! peaks against the replayed curves, and the paper's VGG-19 comparison
//! (its Table 2).

mod common;

use proptest::prelude::*;
use remat_core::simulator::simulate;
use remat_core::solvers::hong::{self, chen, curve, pytorch, CheckpointError, Model};
use remat_core::solvers::{
    max_useful_budget, no_progress, solve, Algorithm, Memory, Options, Planner, SolveError,
};
use remat_core::{Chain, Stage};

/// A small seeded generator (the same numbers on every run and machine).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// d_0 … d_n with n in 1..=max_n. The value ranges rotate so that many
/// draws tie: all sizes equal, sizes in 0..=2 (zeros included), 1..=10,
/// and wide ones.
fn sizes(rng: &mut Lcg, max_n: usize) -> Vec<u64> {
    let n = 1 + rng.below(max_n as u64) as usize;
    let kind = rng.below(4);
    let equal = 1 + rng.below(9);
    (0..=n)
        .map(|_| match kind {
            0 => equal,
            1 => rng.below(3),
            2 => 1 + rng.below(10),
            _ => 1 + rng.below(1 << 30),
        })
        .collect()
}

/// A random subset of 1..n−1, with n.
fn random_set(rng: &mut Lcg, n: usize) -> Vec<usize> {
    let mut set: Vec<usize> = (1..n).filter(|_| rng.below(3) == 0).collect();
    set.push(n);
    set
}

/// Positive sizes (n in 1..=max_n), a random set on them, and their chain.
fn random_case(rng: &mut Lcg, max_n: usize) -> (Vec<u64>, Vec<usize>, Chain) {
    let d: Vec<u64> = sizes(rng, max_n).iter().map(|x| x + 1).collect();
    let set = random_set(rng, d.len() - 1);
    let chain = chain_of(&d);
    (d, set, chain)
}

/// `count` random cases of up to `max_n` stages from the seed `seed`.
fn random_cases(
    seed: u64,
    count: usize,
    max_n: usize,
) -> impl Iterator<Item = (Vec<u64>, Vec<usize>, Chain)> {
    let mut rng = Lcg(seed);
    (0..count).map(move |_| random_case(&mut rng, max_n))
}

fn assert_valid(set: &[usize], n: usize, what: &str) {
    assert!(
        set.windows(2).all(|w| w[0] < w[1]),
        "{what}: not ascending {set:?}"
    );
    assert_eq!(
        set.last(),
        Some(&n),
        "{what}: must end with n = {n}: {set:?}"
    );
    assert!(set[0] >= 1, "{what}: 0 is not written: {set:?}");
}

/// The least peak over every subset of 1..n−1 (n always kept).
fn exhaustive(d: &[u64], peak: fn(&[u64], &[usize]) -> u64) -> u64 {
    let n = d.len() - 1;
    (0u32..1 << (n - 1))
        .map(|mask| {
            let mut set: Vec<usize> = (1..n).filter(|&i| mask >> (i - 1) & 1 == 1).collect();
            set.push(n);
            peak(d, &set)
        })
        .min()
        .unwrap()
}

/// A chain whose stage outputs are `d[1..]`, input `d[0]`.
fn chain_of(d: &[u64]) -> Chain {
    Chain {
        name: "hong test".into(),
        source: "tests/hong.rs".into(),
        input_bytes: d[0],
        input_gradient_bytes: d[0],
        bandwidth_bytes_per_s: None,
        inputs: None,
        model_fingerprint: None,
        constant_bytes: None,
        peers: Vec::new(),
        stages: d[1..]
            .iter()
            .enumerate()
            .map(|(i, &a)| Stage::new(format!("s{}", i + 1), 1.0, 2.0, a, a))
            .collect(),
    }
}

// Algorithm 6 (O(n)) equals Algorithm 5 (O(n²)) in value on 100 000 seeded
// chains, n = 1 … 40, with ties (equal sizes, sizes in 0..=2); each returned
// set is valid and its Eq. 12 peak is the value returned. How it could fail:
// a pointer that skips the crossing of U and Q, a queue that keeps or drops
// the wrong entries, a set read off the wrong successor. Mutations tried:
// dropping the `falling` candidate (the M(j) side of the paper's line 13)
// and omitting the clamp `cross = cross.min(q.len())` (index out of bounds)
// were both caught; popping Q only on `m[t] > m[i]` instead of `>=`
// survived, as it should (an equal entry is dominated but harmless).
#[test]
fn algorithm6_equals_algorithm5_on_100000_chains() {
    let mut rng = Lcg(14);
    let mut by_n = [0usize; 3];
    for case in 0..100_000 {
        let d = sizes(&mut rng, 40);
        let n = d.len() - 1;
        if n <= 2 {
            by_n[n] += 1;
        }
        let slow = pytorch::algorithm5(&d);
        let fast = pytorch::algorithm6(&d);
        assert_eq!(fast.peak_bytes, slow.peak_bytes, "case {case}: d = {d:?}");
        assert_valid(&fast.checkpoints, n, "algorithm 6");
        assert_valid(&slow.checkpoints, n, "algorithm 5");
        assert_eq!(
            pytorch::peak(&d, &fast.checkpoints),
            fast.peak_bytes,
            "case {case}: algorithm 6's set {:?} on d = {d:?}",
            fast.checkpoints
        );
        assert_eq!(pytorch::peak(&d, &slow.checkpoints), slow.peak_bytes);
    }
    assert!(by_n[1] > 1000 && by_n[2] > 1000, "n = 1, 2 drawn {by_n:?}");
}

// Algorithms 3, 5 and 6 equal exhaustive search over all 2^(n−1) subsets for
// n = 1 … 16 in their own model, and their sets achieve their values. How it
// could fail: a DP whose recursion misses a case (a segment memory left out
// of Algorithm 3's candidates, M(n) or d_0 counted wrongly), or a model that
// is not the one the peak function states. Mutations tried, each caught:
// Algorithm 3 taking segment memories only up to d_{n−2} (`&d[a..n - 1]`),
// Algorithm 3 adding i to Q after reading the head (the paper's literal
// order: Q is empty when d_i > s), Algorithm 5 with the buffer leaving out
// the left checkpoint (`largest` starting at 0, not d_i). Algorithm 5 with
// j < n for i < n − 1 (Eq. 13's literal range) survived, and must: putting a
// checkpoint at n − 1 never raises the peak in this model (the last segment
// empties and the buffer shrinks to d_{n−1}), so some optimum always has it.
#[test]
fn algorithms_3_5_6_equal_exhaustive_search_up_to_16_stages() {
    let mut rng = Lcg(3);
    for n in 1..=16usize {
        let chains = if n <= 10 { 300 } else { 12 };
        for _ in 0..chains {
            let mut d = sizes(&mut rng, 1);
            d.resize(n + 1, 0);
            for x in d.iter_mut().skip(2) {
                *x = 1 + rng.below(if n % 2 == 0 { 6 } else { 1000 });
            }
            let best_chen = exhaustive(&d, chen::peak);
            let best_pytorch = exhaustive(&d, pytorch::peak);
            let a3 = chen::algorithm3(&d);
            assert_eq!(a3.peak_bytes, best_chen, "algorithm 3, d = {d:?}");
            assert_eq!(chen::peak(&d, &a3.checkpoints), best_chen, "d = {d:?}");
            for (name, sel) in [
                ("5", pytorch::algorithm5(&d)),
                ("6", pytorch::algorithm6(&d)),
            ] {
                assert_eq!(sel.peak_bytes, best_pytorch, "algorithm {name}, d = {d:?}");
                assert_eq!(pytorch::peak(&d, &sel.checkpoints), best_pytorch);
            }
        }
    }
}

// The closed-form peaks (Eq. 6, Eq. 12) equal the maximum of the curve that
// replays Algorithm 2 / Algorithm 4, for random sets; and the PyTorch curve
// has the shape of the paper's Figures 5–7: over each segment's backward,
// the memory is highest at its first step (the checkpoint's backward, where
// the segment has just been recomputed) and falls step by step. How it could
// fail: a closed form that drops the buffer or d_0, a replay that frees the
// wrong tensor. Mutations tried, each caught: Eq. 11's buffer over
// `d[h + 1..i]` (the left checkpoint left out), the PyTorch replay keeping
// d_i after its backward (`memory.free(i)` removed), the Chen replay freeing
// checkpoints with their segment.
#[test]
fn curves_peak_where_the_closed_forms_say_and_fall_within_each_segment() {
    for (d, set, chain) in random_cases(9, 5000, 30) {
        let n = d.len() - 1;
        for model in Model::ALL {
            let c = hong::curve(&chain, model, &set).unwrap();
            assert_eq!(c.len(), 2 * n + 2);
            assert_eq!(c[0], d[0]);
            assert_eq!(c[2 * n + 1], d[0]);
            let peak = hong::peak(&chain, model, &set).unwrap();
            assert_eq!(
                c.iter().max(),
                Some(&peak),
                "{model}: d = {d:?} set {set:?}"
            );
        }
        let c = curve::pytorch(&d, &set);
        let index = |i: usize| 2 * n + 1 - i;
        let mut h = 0;
        for &i in &set {
            // Backward of i, then of i−1 … h+1: strictly falling.
            for k in (h + 1..i).rev() {
                assert!(
                    c[index(k)] < c[index(k + 1)],
                    "d = {d:?} set {set:?}: stage {k} not below stage {}",
                    k + 1
                );
            }
            h = i;
        }
    }
}

// Any set becomes a schedule the simulator accepts (valid and complete),
// whose forward pass keeps exactly the set's outputs; segments cover 1..=n
// in order, each ending at a checkpoint, and the exporter reads them back
// from the schedule. How it could fail: a segment off by
// one (a stage run twice or never: the simulator refuses), the last segment
// checkpointed (then F_all^n recomputes a resident a^n: refused). Mutation
// tried: `checkpointed: true` for every segment made the simulator refuse.
#[test]
fn any_set_becomes_a_schedule_the_simulator_accepts() {
    for (d, set, chain) in random_cases(21, 2000, 25) {
        let n = d.len() - 1;
        let segs = hong::segments(n, &set).unwrap();
        assert_eq!(segs.len(), set.len());
        assert_eq!(segs[0].first, 1);
        for (seg, &c) in segs.iter().zip(&set) {
            assert_eq!(seg.last, c);
            assert_eq!(seg.checkpointed, c < n);
        }
        for w in segs.windows(2) {
            assert_eq!(w[1].first, w[0].last + 1);
        }
        let ops = hong::schedule(&chain, &set).unwrap();
        simulate(&chain, &ops).unwrap_or_else(|e| panic!("set {set:?} on n = {n}: {e}"));
        // `remat export --to pytorch-segments` reads the same segments back.
        assert_eq!(remat_core::lowering::pytorch::segments(&ops).unwrap(), segs);
    }
}

// Bad sets are refused with the stage and the reason; n may be left out.
// How it could fail: a set accepted that the algorithms would index out of
// bounds (stage n + 1), a duplicate that double-counts a checkpoint.
// Mutations tried, each caught: the range check `stage > n` loosened to
// `stage > n + 1`; the order check `stage <= previous` to `stage < previous`.
#[test]
fn bad_sets_are_named() {
    let chain = chain_of(&[4, 8, 1, 8, 1, 8]);
    let peak = |set: &[usize]| hong::peak(&chain, Model::PyTorch, set);
    assert_eq!(
        peak(&[2, 6]),
        Err(CheckpointError::StageOutOfRange {
            stage: 6,
            stages: 5
        })
    );
    assert_eq!(
        peak(&[0, 2]),
        Err(CheckpointError::StageOutOfRange {
            stage: 0,
            stages: 5
        })
    );
    assert_eq!(
        peak(&[4, 2]),
        Err(CheckpointError::NotAscending {
            position: 1,
            stage: 2,
            previous: 4
        })
    );
    assert!(matches!(
        peak(&[2, 2]),
        Err(CheckpointError::NotAscending { .. })
    ));
    assert_eq!(peak(&[2, 4]), peak(&[2, 4, 5]));
    let msg = peak(&[2, 9]).unwrap_err().to_string();
    assert!(msg.contains("stage 9") && msg.contains("1..=5"), "{msg}");
    assert_eq!("chen".parse::<Model>(), Ok(Model::Chen));
    assert!("torch"
        .parse::<Model>()
        .unwrap_err()
        .to_string()
        .contains("pytorch or chen"));
    let mut empty = chain.clone();
    empty.stages.clear();
    assert_eq!(
        hong::optimal(&empty, Model::PyTorch),
        Err(CheckpointError::NoStage)
    );
    let huge = chain_of(&[u64::MAX / 2, u64::MAX / 2, 1]);
    assert_eq!(
        hong::optimal(&huge, Model::Chen),
        Err(CheckpointError::TooLarge)
    );
}

#[test]
fn sqrt_sets_are_the_papers_and_checkpoint_sequentials() {
    assert_eq!(hong::sqrt_set(24), vec![5, 10, 15, 20, 24]);
    assert_eq!(hong::sqrt_set(15), vec![4, 8, 12, 15]);
    assert_eq!(hong::sqrt_set(1), vec![1]);
    assert_eq!(hong::sequential_set(24, 5), vec![4, 8, 12, 16, 24]);
    assert_eq!(hong::sequential_set(3, 1), vec![3]);
}

const MIB: u64 = 1 << 20;

/// VGG-19 as the paper's Table 2 runs it: batch 128, 224 px, fp32; 16 convs
/// (each with its in-place ReLU), 5 max-pools as stages of their own, 3 FCs
/// (the average pool, flatten and dropout not separate, Section 5.1.3):
/// n = 24. d_i = 128 × channels × height × width × 4 bytes.
fn vgg19_table2() -> Vec<u64> {
    let b = 128 * 4;
    let mut d = vec![b * 3 * 224 * 224];
    let mut hw = 224;
    for (convs, channels) in [(2, 64), (2, 128), (4, 256), (4, 512), (4, 512)] {
        for _ in 0..convs {
            d.push(b * channels * hw * hw);
        }
        hw /= 2;
        d.push(b * channels * hw * hw);
    }
    d.extend([b * 4096, b * 4096, b * 1000]);
    d
}

// The paper's VGG-19 comparison (Table 2, b = 128), predicted in the PyTorch
// model. The paper measured peaks with torch.cuda.memory_allocated, weights
// and their gradients included, so the absolute values differ by a constant;
// the differences between sets must match its measured ones (Algorithm 3's
// set − Algorithm 6's: 6835 − 6444 = 391 MiB; the √n set's: 8404 − 6444 =
// 1960 MiB) within a few MiB. How it could fail: a model without the
// output-gradient buffer (it picks Chen's {3, 6, 24} and the differences
// vanish), pools not counted as stages, or the wrong √n set. Mutations
// tried, each caught: the buffer term removed from `pytorch::peak`; the
// replayed buffer zeroed for the first segment (the peak leaves index 46).
#[test]
fn vgg19_table2_differences_match_the_paper() {
    let d = vgg19_table2();
    assert_eq!(d.len(), 25);
    let optimal = pytorch::algorithm6(&d);
    let chen_set = chen::algorithm3(&d).checkpoints;
    let sqrt = hong::sqrt_set(24);
    let peak = |set: &[usize]| pytorch::peak(&d, set);
    let mib = |x: u64| x as f64 / MIB as f64;
    println!(
        "VGG-19 b=128 (PyTorch model, MiB): algorithm 6 {:?} {:.1}; algorithm 3 {:?} {:.1}; sqrt {:?} {:.1}; paper's algorithm-6 set {:.1}",
        optimal.checkpoints,
        mib(optimal.peak_bytes),
        chen_set,
        mib(peak(&chen_set)),
        sqrt,
        mib(peak(&sqrt)),
        mib(peak(&[2, 4, 6, 9, 11, 14, 16, 19, 21, 23, 24])),
    );
    assert_eq!(chen_set, vec![3, 6, 24], "Algorithm 3's set is the paper's");
    assert_eq!(optimal.peak_bytes, peak(&optimal.checkpoints));
    let paper_set = [2, 4, 6, 9, 11, 14, 16, 19, 21, 23, 24];
    assert_eq!(
        peak(&paper_set),
        optimal.peak_bytes,
        "the paper's set is optimal too"
    );
    let within = |ours: u64, paper: f64| (mib(ours) - paper).abs() <= 4.0;
    let chen_gap = peak(&chen_set) - optimal.peak_bytes;
    let sqrt_gap = peak(&sqrt) - optimal.peak_bytes;
    assert!(
        within(chen_gap, 391.0),
        "algorithm 3 − algorithm 6: {:.1} MiB, paper 391",
        mib(chen_gap)
    );
    assert!(
        within(sqrt_gap, 1960.0),
        "√n − algorithm 6: {:.1} MiB, paper 1960",
        mib(sqrt_gap)
    );
    // Section 5.4: with {3, 6, 24} the peak "occurs at the start of the last
    // segment in the backward phase": the backward of checkpoint 3, with
    // conv1_1 and conv1_2 (1568 MiB each) just recomputed; training phase
    // index 2 · 24 + 1 − 3 = 46.
    let c = curve::pytorch(&d, &chen_set);
    let argmax = (0..c.len())
        .max_by_key(|&k| (c[k], std::cmp::Reverse(k)))
        .unwrap();
    assert_eq!(argmax, 46, "curve {c:?}");
}

// `remat solve -a hong` / `-a hong-chen`: the planner answers every budget
// with the optimal set's schedule exactly when the simulator's peak of it
// fits (the paper's peak plays no part), predicts the simulated time and
// peak, names the set and the paper-model peak in its detail, and states
// that peak as its exact least budget. How it could fail: feasibility judged
// by the paper's peak (smaller than Remat's on most chains: a schedule over
// the budget is returned), `<` for `<=` (refused at its own least budget),
// the least budget taken from the paper's model. Mutations tried, each
// caught: `self.selection.peak_bytes <= budget_bytes` in `Plan::answer`
// (peak over the budget), `<` instead of `<=` (infeasible at the least
// budget), `min_budget_bytes` returning `plan.selection.peak_bytes`.
proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]
    #[test]
    fn hong_answers_its_sets_schedule_exactly_when_the_simulator_says_it_fits(
        chain in common::integer_chain(14, true),
        frac in 0.0f64..1.3,
    ) {
        let high = max_useful_budget(&chain);
        for (algorithm, model) in [(Algorithm::Hong, Model::PyTorch), (Algorithm::HongChen, Model::Chen)] {
            let best = hong::optimal(&chain, model).unwrap();
            let ops = hong::schedule(&chain, &best.checkpoints).unwrap();
            let trace = simulate(&chain, &ops).unwrap();
            let budget = (high as f64 * frac) as u64;
            let planner = Planner::build(&chain, algorithm, budget, &Options::default(), &mut no_progress()).unwrap();
            prop_assert_eq!(planner.min_budget_bytes(), trace.peak_bytes);
            prop_assert_eq!(planner.memory(budget), Memory::Exact);
            let listed: Vec<String> = best.checkpoints.iter().map(|c| c.to_string()).collect();
            for b in [budget, trace.peak_bytes, trace.peak_bytes.saturating_sub(1)] {
                let sol = planner.plan(&chain, b).unwrap();
                prop_assert_eq!(&sol, &solve(&chain, algorithm, b, &Options::default()).unwrap());
                let detail = format!("checkpoints {}; ", listed.join(", "));
                prop_assert!(sol.detail.starts_with(&detail), "{}", sol.detail);
                let title = match model {
                    Model::PyTorch => "PyTorch-model peak",
                    Model::Chen => "Chen-model peak",
                };
                prop_assert!(sol.detail.contains(title), "{}", sol.detail);
                if trace.peak_bytes <= b {
                    prop_assert_eq!(sol.ops.as_ref(), Some(&ops));
                    prop_assert_eq!(sol.predicted_peak_bytes, Some(trace.peak_bytes));
                    prop_assert_eq!(sol.predicted_seconds, Some(trace.makespan_seconds));
                } else {
                    prop_assert!(sol.ops.is_none());
                    prop_assert!(sol.detail.contains("needs"), "{}", sol.detail);
                }
            }
        }
    }
}

// At M_high store-all fits, but hong's schedule recomputes, so it may not:
// the documented answer is "infeasible, its schedule needs …", never
// store-all in disguise. The chain: a stage with no output but a 3-byte
// forward workspace and a 5-byte gradient. Every set peaks at 0 in the
// paper's model, so Algorithm 6 keeps both outputs; recomputing stage 1
// while δ^1 is resident needs 8 bytes where store-all needs 5. On the
// built-in examples it fits well below M_high. How it could fail: a planner
// that answers a schedule over the budget, or another one in its place
// (mutation tried: `ops: Some(self.ops.clone())` whether or not it fits
// made `ops` Some here).
#[test]
fn hong_at_m_high_may_not_fit_and_says_why() {
    let mut chain = chain_of(&[0, 0, 0]);
    chain.stages[0].gradient_bytes = 5;
    chain.stages[0].forward_overhead_bytes = 3;
    let high = max_useful_budget(&chain);
    assert_eq!(high, 5);
    let sol = solve(&chain, Algorithm::Hong, high, &Options::default()).unwrap();
    assert_eq!(sol.ops, None);
    assert_eq!(
        sol.detail,
        "checkpoints 1, 2; PyTorch-model peak 0 B, but its schedule needs 8 B in Remat's accounting"
    );
    for name in remat_core::examples::names() {
        let chain = remat_core::examples::by_name(name).unwrap();
        let high = max_useful_budget(&chain);
        for algorithm in [Algorithm::Hong, Algorithm::HongChen] {
            let sol = solve(&chain, algorithm, high, &Options::default()).unwrap();
            let peak = sol.predicted_peak_bytes.expect("fits at M_high");
            assert!(peak < high, "{name}: {algorithm} {peak} vs M_high {high}");
        }
    }
}

// Algorithm 3 is O(n³): past MAX_CHEN_STAGES it is refused with the stage
// count and the limit, as an error (not "infeasible"); the PyTorch model
// runs. Mutation tried: the check on `stages >= MAX_CHEN_STAGES` refused a
// chain of exactly the limit.
#[test]
fn chen_past_its_stage_limit_is_refused_naming_the_limit() {
    let at_limit = vec![1; hong::MAX_CHEN_STAGES + 1];
    assert!(hong::optimal_for_sizes(&at_limit, Model::Chen).is_ok());
    let over = vec![1; hong::MAX_CHEN_STAGES + 2];
    let e = hong::optimal_for_sizes(&over, Model::Chen).unwrap_err();
    assert_eq!(
        e,
        CheckpointError::TooLong {
            stages: hong::MAX_CHEN_STAGES + 1,
            limit: hong::MAX_CHEN_STAGES
        }
    );
    assert!(e.to_string().starts_with("stages: "), "{e}");
    assert!(hong::optimal_for_sizes(&over, Model::PyTorch).is_ok());
    let chain = chain_of(&over);
    match solve(&chain, Algorithm::HongChen, u64::MAX, &Options::default()) {
        Err(SolveError::TooLarge(m)) => assert!(m.contains("limit of 500"), "{m}"),
        other => panic!("{other:?}"),
    }
}
