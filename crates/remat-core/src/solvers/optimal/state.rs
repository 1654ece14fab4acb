//! The search's state — what is resident among a^ℓ, ā^ℓ, δ^ℓ and which
//! backward is next — and the operations that lead out of it, with the
//! simulator's accounting (docs/model.md) replayed on bitsets.
//!
//! Only compute operations (F_all, F_ck, F_∅, B) are generated: with one
//! compute lane and no transfer, every operation starts when the previous
//! one ends, so the makespan is the sum of the operation times and the
//! memory during an operation is the level before it plus what it
//! allocates at its start. That is exactly what the simulator measures for
//! such a schedule (no allocation ever waits: nothing frees memory later).

use crate::model::Chain;
use crate::schedule::Op;

/// Which schedules the search may return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Every sequence of compute operations: the true optimum.
    All,
    /// Memory-persistent schedules only (rotor report §4.1): an a^ℓ that a
    /// forward kept stays resident until B^{ℓ+1} uses it. In Remat's op
    /// language F_ck already pins its input until B^{ℓ+1} (F_∅ never drops
    /// a checkpoint), and ā^ℓ is freed by B^ℓ only; the one way to break
    /// persistence is an F_∅^{ℓ+1} dropping an a^ℓ that an F_all^{ℓ+1} kept,
    /// which this class forbids.
    Persistent,
}

/// One bit per stage index ℓ (bit ℓ); chains are at most 62 stages here
/// (the search's own limit is far lower, see `limits`).
type Bits = u64;

fn has(bits: Bits, l: usize) -> bool {
    bits >> l & 1 == 1
}

fn bit(l: usize) -> Bits {
    1 << l
}

/// What is on the device between two operations. δ^ℓ needs no bitset: the
/// gradients are produced in order, so exactly δ^next is resident.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// a^ℓ resident, bit ℓ for ℓ in 0..=L.
    pub act: Bits,
    /// The resident a^ℓ that F_ck^{ℓ+1} marked a checkpoint: F_∅^{ℓ+1} does
    /// not drop them (only B^{ℓ+1} does). A subset of `act`.
    pub checkpoint: Bits,
    /// The resident a^ℓ that F_all^{ℓ+1} kept; tracked in
    /// [`Class::Persistent`] only (always 0 otherwise). A subset of `act`.
    pub kept: Bits,
    /// ā^ℓ resident, bit ℓ for ℓ in 1..=L.
    pub saved: Bits,
    /// The next backward B^next; 0 once δ^0 has been produced.
    pub next: u8,
}

/// The chain's numbers as the search reads them, indexed by ℓ.
pub struct Model {
    pub stages: usize,
    pub class: Class,
    out: Vec<u64>,
    saved: Vec<u64>,
    grad: Vec<u64>,
    /// o_f^ℓ: the transient of F_all^ℓ.
    forward_overhead: Vec<u64>,
    /// o_f∅^ℓ: the transient of F_ck^ℓ and F_∅^ℓ (no graph recorded).
    forward_nograd_overhead: Vec<u64>,
    /// What B^ℓ allocates at its start: max(0, ω_δ^{ℓ−1} + o_b^ℓ).
    backward_alloc: Vec<u64>,
    /// u_f^ℓ: the time of F_all^ℓ.
    pub forward_all_seconds: Vec<f64>,
    /// The time of F_ck^ℓ and F_∅^ℓ (no graph recorded).
    forward_nograd_seconds: Vec<f64>,
    pub backward_seconds: Vec<f64>,
}

/// An operation out of a state: where it leads and what it costs.
#[derive(Clone, Copy, Debug)]
pub struct Move {
    pub op: Op,
    pub to: State,
    /// Device bytes after it ends.
    pub level: u64,
    /// Device bytes while it runs (the level before it plus what it allocates).
    pub peak: u64,
    pub seconds: f64,
}

/// The state an operation starts from: what is resident, the device bytes
/// and the budget its memory must stay within.
struct Here<'a> {
    s: &'a State,
    level: u64,
    budget: u64,
}

impl Here<'_> {
    /// The memory while an operation that allocates `bytes` at its start
    /// runs, if it stays within the budget.
    fn peak_with(&self, bytes: u64) -> Option<u64> {
        let peak = self.level + bytes;
        (peak <= self.budget).then_some(peak)
    }
}

impl Move {
    fn new(op: Op, to: State, level: u64, peak: u64, seconds: f64) -> Move {
        Move {
            op,
            to,
            level,
            peak,
            seconds,
        }
    }
}

/// Where stage ℓ reads its input from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    Plain,
    Saved,
}

impl Model {
    pub fn new(chain: &Chain, class: Class) -> Model {
        let n = chain.len();
        let per_stage = |f: &dyn Fn(usize) -> u64| -> Vec<u64> {
            std::iter::once(0).chain((1..=n).map(f)).collect()
        };
        Model {
            stages: n,
            class,
            out: (0..=n).map(|l| chain.output_bytes(l)).collect(),
            saved: per_stage(&|l| chain.saved_bytes(l)),
            grad: (0..=n).map(|l| chain.gradient_bytes(l)).collect(),
            forward_overhead: per_stage(&|l| chain.stage(l).forward_overhead()),
            forward_nograd_overhead: per_stage(&|l| chain.stage(l).nograd_forward_overhead()),
            backward_alloc: per_stage(&|l| {
                chain.backward_bytes(l) - chain.gradient_bytes(l) - chain.saved_bytes(l)
            }),
            forward_all_seconds: std::iter::once(0.0)
                .chain(chain.stages.iter().map(|s| s.forward_seconds))
                .collect(),
            forward_nograd_seconds: std::iter::once(0.0)
                .chain(chain.stages.iter().map(|s| s.nograd_forward_seconds()))
                .collect(),
            backward_seconds: std::iter::once(0.0)
                .chain(chain.stages.iter().map(|s| s.backward_seconds))
                .collect(),
        }
    }

    /// ω_a^0.
    pub fn input_bytes(&self) -> u64 {
        self.out[0]
    }

    /// ω_a^ℓ.
    pub fn output_bytes(&self, l: usize) -> u64 {
        self.out[l]
    }

    /// ω_ā^ℓ.
    pub fn saved_bytes(&self, l: usize) -> u64 {
        self.saved[l]
    }

    /// What B^j needs on top of a^0 and its input: δ^j, ā^j and what it
    /// allocates.
    pub fn backward_need(&self, j: usize) -> u64 {
        self.grad[j] + self.saved[j] + self.backward_alloc[j]
    }

    /// What F_all^j needs on top of a^0 and its input: ā^j and o_f^j.
    pub fn forward_all_need(&self, j: usize) -> u64 {
        self.saved[j] + self.forward_overhead[j]
    }

    /// At time 0: a^0 and δ^L resident, B^L next.
    pub fn start(&self) -> (State, u64) {
        let state = State {
            act: bit(0),
            checkpoint: 0,
            kept: 0,
            saved: 0,
            next: self.stages as u8,
        };
        (state, self.out[0] + self.grad[self.stages])
    }

    fn input(&self, s: &State, l: usize) -> Option<Input> {
        if has(s.act, l - 1) {
            Some(Input::Plain)
        } else if l >= 2 && has(s.saved, l - 1) {
            Some(Input::Saved)
        } else {
            None
        }
    }

    /// Every operation valid in `s` (device bytes `level`) whose memory
    /// stays within `budget`, appended to `out`.
    pub fn moves(&self, s: &State, level: u64, budget: u64, out: &mut Vec<Move>) {
        out.clear();
        // a^0 cannot be recomputed: without it B^1 never runs.
        if !has(s.act, 0) && s.next > 0 {
            return;
        }
        let here = Here { s, level, budget };
        for l in 1..=self.stages {
            let Some(input) = self.input(s, l) else {
                continue;
            };
            if l > s.next as usize {
                self.collect_garbage(&here, l, input, out);
                continue;
            }
            self.forward_all(&here, l, input, out);
            self.forward_plain(&here, l, input, out);
        }
        self.backward(&here, out);
    }

    /// Stage ℓ > next: its backward has run, so a^{ℓ−1}, ā^{ℓ−1} and
    /// whatever F^ℓ computes are never read by a backward again (garbage).
    /// F_all^ℓ and F_ck^ℓ only add garbage that can never be freed (ā^ℓ
    /// waits for a B^ℓ that has run; F_ck pins its input), and an F_∅^ℓ
    /// that frees nothing likewise; the one forward worth running is an
    /// F_∅^ℓ that frees a plain a^{ℓ−1}, trading it for a^ℓ (a chain of them
    /// can move garbage to a smaller tensor). Leaving the others out loses
    /// no optimum: a state holds no less garbage after them and no more
    /// useful tensors.
    fn collect_garbage(&self, here: &Here, l: usize, input: Input, out: &mut Vec<Move>) {
        if input != Input::Plain || has(here.s.checkpoint, l - 1) {
            return;
        }
        let before = out.len();
        self.forward_plain(here, l, input, out);
        // Keep F_∅ only (the last move pushed, when it was pushed).
        if out.len() == before + 2 {
            out.remove(before);
        } else {
            out.truncate(before);
        }
    }

    /// A forward that computes ā^ℓ (`saved`) or a^ℓ: the state with it
    /// resident, the bytes after and the peak, or None when it is resident
    /// already (no forward computes a tensor twice) or does not fit.
    fn computed(&self, here: &Here, l: usize, saved: bool) -> Option<(State, u64, u64)> {
        let mut to = *here.s;
        // F_all records the graph (o_f); F_ck and F_∅ do not (o_f∅).
        let (bits, bytes, overhead) = if saved {
            (&mut to.saved, self.saved[l], self.forward_overhead[l])
        } else {
            (&mut to.act, self.out[l], self.forward_nograd_overhead[l])
        };
        if has(*bits, l) {
            return None;
        }
        *bits |= bit(l);
        let peak = here.peak_with(bytes + overhead)?;
        Some((to, here.level + bytes, peak))
    }

    fn forward_all(&self, here: &Here, l: usize, input: Input, out: &mut Vec<Move>) {
        let Some((mut to, level, peak)) = self.computed(here, l, true) else {
            return;
        };
        if self.class == Class::Persistent && input == Input::Plain {
            to.kept |= bit(l - 1);
        }
        let op = Op::forward_all(l);
        let seconds = self.forward_all_seconds[l];
        out.push(Move::new(op, to, level, peak, seconds));
    }

    /// F_ck^ℓ and F_∅^ℓ: both compute a^ℓ; they differ in what becomes of a
    /// plain input a^{ℓ−1}.
    fn forward_plain(&self, here: &Here, l: usize, input: Input, out: &mut Vec<Move>) {
        let s = here.s;
        let Some((computed, level, peak)) = self.computed(here, l, false) else {
            return;
        };
        let seconds = self.forward_nograd_seconds[l];
        let mut checkpoint = computed;
        if input == Input::Plain {
            checkpoint.checkpoint |= bit(l - 1);
        }
        let op = Op::ForwardCheckpoint { stage: l };
        out.push(Move::new(op, checkpoint, level, peak, seconds));
        // F_∅^ℓ differs from F_ck^ℓ only when it drops a plain input that is
        // no checkpoint; otherwise both lead to the same state at the same
        // cost, and F_ck stands for both.
        if input != Input::Plain || has(s.checkpoint, l - 1) {
            return;
        }
        if has(s.kept, l - 1) {
            // Dropping a kept a^{ℓ−1} before B^ℓ is what persistence forbids.
            return;
        }
        let mut none = computed;
        none.act &= !bit(l - 1);
        let op = Op::ForwardNone { stage: l };
        let level = level - self.out[l - 1];
        out.push(Move::new(op, none, level, peak, seconds));
    }

    fn backward(&self, here: &Here, out: &mut Vec<Move>) {
        let (s, level) = (here.s, here.level);
        let b = s.next as usize;
        if b == 0 || !has(s.saved, b) || self.input(s, b).is_none() {
            return;
        }
        let Some(peak) = here.peak_with(self.backward_alloc[b]) else {
            return;
        };
        let mut to = *s;
        to.saved &= !bit(b);
        to.next -= 1;
        let mut level = level - self.grad[b] - self.saved[b] + self.grad[b - 1];
        // B^ℓ frees a plain a^{ℓ−1}, checkpoint or not.
        if has(s.act, b - 1) {
            let gone = !bit(b - 1);
            to.act &= gone;
            to.checkpoint &= gone;
            to.kept &= gone;
            level -= self.out[b - 1];
        }
        let op = Op::Backward { stage: b };
        let seconds = self.backward_seconds[b];
        out.push(Move::new(op, to, level, peak, seconds));
    }
}
