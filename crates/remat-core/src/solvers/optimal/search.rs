//! The best-first searches over [`State`]s: A* on time within a budget
//! ([`fastest`]) and a bottleneck Dijkstra on peak memory ([`least_peak`]),
//! both with every state stored once (memoised) and closed the first time
//! it leaves the queue.

use super::bound::{remaining_peak, remaining_seconds};
use super::limits::{LimitError, Limits};
use super::state::{Model, Move, State};
use crate::schedule::Op;
use crate::solvers::api::{Progress, SolveError};
use std::cmp::Reverse;
use std::collections::hash_map::{Entry, HashMap};
use std::collections::BinaryHeap;
use std::hash::{BuildHasherDefault, Hasher};

/// The schedule a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub ops: Vec<Op>,
    /// The sum of the operation times, added in schedule order (as the
    /// simulator adds them).
    pub seconds: f64,
    /// The highest device memory along it, the initial a^0 + δ^L included.
    pub peak_bytes: u64,
    /// How many states the search stored.
    pub states: usize,
}

/// A multiply-rotate hasher (FxHash's): the states are a few machine words
/// and SipHash would dominate the search's time.
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u8(&mut self, b: u8) {
        self.write_u64(b as u64);
    }
}

type StateMap = HashMap<State, u32, BuildHasherDefault<WordHasher>>;

struct Node<C> {
    state: State,
    /// Device bytes in this state (a function of the state).
    level: u64,
    /// The best cost found so far: seconds for A*, the path's peak for the
    /// bottleneck search.
    cost: C,
    parent: u32,
    op: Option<Op>,
    closed: bool,
}

/// Every state met, once, with the best way found to reach it.
struct Store<C> {
    nodes: Vec<Node<C>>,
    index: StateMap,
    limits: Limits,
}

/// How often (in states taken from the queue) progress is reported.
const REPORT_EVERY: usize = 1 << 12;

impl<C: Copy + PartialOrd> Store<C> {
    fn new(limits: Limits, start: State, level: u64, cost: C) -> Store<C> {
        let mut store = Store {
            nodes: Vec::new(),
            index: StateMap::default(),
            limits,
        };
        store.index.insert(start, 0);
        store.nodes.push(Node {
            state: start,
            level,
            cost,
            parent: u32::MAX,
            op: None,
            closed: false,
        });
        store
    }

    /// Records that `m` reaches its state from `from` at `cost`; the index
    /// to (re)queue when it is new or cheaper than before.
    fn relax(&mut self, from: u32, m: &Move, cost: C) -> Result<Option<u32>, LimitError> {
        match self.index.entry(m.to) {
            Entry::Occupied(e) => {
                let node = &mut self.nodes[*e.get() as usize];
                if node.closed || node.cost <= cost {
                    return Ok(None);
                }
                node.cost = cost;
                node.parent = from;
                node.op = Some(m.op);
                Ok(Some(*e.get()))
            }
            Entry::Vacant(e) => {
                if self.nodes.len() >= self.limits.max_states {
                    return Err(LimitError::TooManyStates {
                        limit: self.limits.max_states,
                    });
                }
                let i = self.nodes.len() as u32;
                e.insert(i);
                self.nodes.push(Node {
                    state: m.to,
                    level: m.level,
                    cost,
                    parent: from,
                    op: Some(m.op),
                    closed: false,
                });
                Ok(Some(i))
            }
        }
    }

    fn path(&self, goal: u32) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut i = goal;
        while let Some(op) = self.nodes[i as usize].op {
            ops.push(op);
            i = self.nodes[i as usize].parent;
        }
        ops.reverse();
        ops
    }

    /// Closes the next open state of `queue` (entries: a priority, then
    /// the node's index; stale entries of closed nodes are skipped): its
    /// index, state, bytes and cost; None when the queue is empty.
    fn take<K: Ord>(
        &mut self,
        queue: &mut BinaryHeap<Reverse<(K, u32)>>,
    ) -> Option<(u32, State, u64, C)> {
        while let Some(Reverse((_, i))) = queue.pop() {
            let node = &mut self.nodes[i as usize];
            if !node.closed {
                node.closed = true;
                return Some((i, node.state, node.level, node.cost));
            }
        }
        None
    }

    /// Counts one more state expanded and, every [`REPORT_EVERY`], reports
    /// the share of the state limit used; `Cancelled` when told to stop.
    fn expand(&self, taken: &mut usize, progress: &mut Progress<'_>) -> Result<(), SolveError> {
        *taken += 1;
        let go_on = !taken.is_multiple_of(REPORT_EVERY)
            || progress(self.nodes.len() as f64 / self.limits.max_states as f64);
        if go_on {
            Ok(())
        } else {
            Err(SolveError::Cancelled)
        }
    }
}

/// Replays `ops` on the model: the time (summed in order) and the peak.
fn replay(model: &Model, ops: &[Op]) -> (f64, u64) {
    let (mut state, mut level) = model.start();
    let (mut seconds, mut peak) = (0.0, level);
    let mut moves = Vec::new();
    for op in ops {
        model.moves(&state, level, u64::MAX, &mut moves);
        let m = moves
            .iter()
            .find(|m| m.op == *op)
            .expect("a searched path replays");
        seconds += m.seconds;
        peak = peak.max(m.peak);
        state = m.to;
        level = m.level;
    }
    (seconds, peak)
}

fn found<C: Copy + PartialOrd>(model: &Model, store: &Store<C>, goal: u32) -> Found {
    let ops = store.path(goal);
    let (seconds, peak_bytes) = replay(model, &ops);
    Found {
        ops,
        seconds,
        peak_bytes,
        states: store.nodes.len(),
    }
}

/// A total order on non-negative times (their bit patterns sort like them).
fn key(seconds: f64) -> u64 {
    seconds.max(0.0).to_bits()
}

/// The fastest complete training step whose memory never exceeds
/// `budget`: A* with the bound of [`remaining_seconds`]. `Ok(None)` when
/// no schedule fits.
pub fn fastest(
    model: &Model,
    budget: u64,
    limits: Limits,
    progress: &mut Progress<'_>,
) -> Result<Option<Found>, SolveError> {
    limits.check_stages(model.stages)?;
    let (start, level) = model.start();
    if level > budget {
        return Ok(None);
    }
    let mut store = Store::new(limits, start, level, 0.0);
    // (f = g + h, then the larger g first, then the fewest backwards left:
    // among equal f the states nearer the end finish sooner; with
    // zero-time operations g alone does not tell them apart).
    let mut queue = BinaryHeap::new();
    let first = key(remaining_seconds(model, &start));
    queue.push(Reverse(((first, 0u64, start.next), 0u32)));
    let mut moves = Vec::new();
    let mut taken = 0;
    while let Some((i, state, level, g)) = store.take(&mut queue) {
        if state.next == 0 {
            return Ok(Some(found(model, &store, i)));
        }
        store.expand(&mut taken, progress)?;
        model.moves(&state, level, budget, &mut moves);
        for m in &moves {
            // What stays resident already rules out finishing within the budget.
            if remaining_peak(model, &m.to) > budget {
                continue;
            }
            let cost = g + m.seconds;
            if let Some(j) = store.relax(i, m, cost)? {
                let f = cost + remaining_seconds(model, &m.to);
                queue.push(Reverse(((key(f), u64::MAX - key(cost), m.to.next), j)));
            }
        }
    }
    Ok(None)
}

/// The least peak memory of any complete training step (the least budget
/// `optimal` meets): Dijkstra where a path costs the highest memory along it.
pub fn least_peak(
    model: &Model,
    limits: Limits,
    progress: &mut Progress<'_>,
) -> Result<Found, SolveError> {
    limits.check_stages(model.stages)?;
    let (start, level) = model.start();
    let mut store = Store::new(limits, start, level, level);
    // (the bound on the peak, then the fewest backwards left, then the path's peak).
    let mut queue = BinaryHeap::new();
    let first = level.max(remaining_peak(model, &start));
    queue.push(Reverse(((first, start.next, level), 0u32)));
    let mut moves = Vec::new();
    let mut taken = 0;
    while let Some((i, state, level, peak)) = store.take(&mut queue) {
        if state.next == 0 {
            return Ok(found(model, &store, i));
        }
        store.expand(&mut taken, progress)?;
        model.moves(&state, level, u64::MAX, &mut moves);
        for m in &moves {
            let path_peak = peak.max(m.peak);
            if let Some(j) = store.relax(i, m, path_peak)? {
                let f = path_peak.max(remaining_peak(model, &m.to));
                queue.push(Reverse(((f, m.to.next, path_peak), j)));
            }
        }
    }
    unreachable!("store-all is always a complete schedule")
}
