//! The memory curve of a checkpoint set over the paper's *training phase
//! index* (Section 5.1.1): 0 before training, k = 1 … n the forward pass of
//! stage k, n + 1 … 2n the backward pass of stages n … 1 (index 2n + 1 − i
//! is stage i's backward), 2n + 1 after training.
//!
//! Each model's curve replays its pseudo-code allocation by allocation
//! (Algorithm 4 for PyTorch, Algorithm 2 for Chen) rather than evaluating
//! the closed forms, so that the tests can hold the closed-form peaks
//! (Eq. 6, Eq. 12) against an independent account. A forward value is the
//! memory at the end of the stage (its input freed if not a checkpoint); a
//! backward value is the memory while the stage runs, before Algorithm 4
//! releases d_i — Eq. 9 and 10, which include d_i. Before and after
//! training only d_0, the caller's input, is resident (the paper's figures
//! start and end near zero; it leaves the end state open).

/// The PyTorch model's curve (Algorithm 4): 2n + 2 values.
pub fn pytorch(d: &[u64], set: &[usize]) -> Vec<u64> {
    let n = d.len() - 1;
    let checkpoint = flags(n, set);
    let mut memory = Ledger::new(d);
    let mut curve = forward(&mut memory, &checkpoint);
    let mut buffer = 0;
    for i in (1..=n).rev() {
        if checkpoint[i] {
            let h = previous(&checkpoint, i);
            memory.allocate_range(h + 1, i);
            // The previous segment's output-gradient buffer is released and
            // one of this segment's largest tensor allocated.
            buffer = d[h..i].iter().copied().max().unwrap_or(0);
        }
        curve.push(memory.total + buffer);
        memory.free(i);
    }
    curve.push(d[0]);
    curve
}

/// The Chen model's curve (Algorithm 2): 2n + 2 values.
pub fn chen(d: &[u64], set: &[usize]) -> Vec<u64> {
    let n = d.len() - 1;
    let checkpoint = flags(n, set);
    let mut memory = Ledger::new(d);
    let mut curve = forward(&mut memory, &checkpoint);
    let mut after = n;
    for i in (1..=n).rev() {
        if checkpoint[i] {
            // Free the segment after d_i, then recompute the one before it;
            // checkpoints stay until the end.
            for k in i + 1..after {
                memory.free(k);
            }
            let h = previous(&checkpoint, i);
            memory.allocate_range(h + 1, i);
            after = i;
        }
        curve.push(memory.total);
    }
    curve.push(d[0]);
    curve
}

/// Index 0 and the forward pass, the same in both models: stage k allocates
/// d_k, then frees d_{k−1} unless it is a checkpoint.
fn forward(memory: &mut Ledger, checkpoint: &[bool]) -> Vec<u64> {
    let n = checkpoint.len() - 1;
    let mut curve = Vec::with_capacity(2 * n + 2);
    memory.allocate(0);
    curve.push(memory.total);
    for k in 1..=n {
        memory.allocate(k);
        if !checkpoint[k - 1] {
            memory.free(k - 1);
        }
        curve.push(memory.total);
    }
    curve
}

/// Which of d_0 … d_n are checkpoints (d_0 and d_n always).
fn flags(n: usize, set: &[usize]) -> Vec<bool> {
    let mut checkpoint = vec![false; n + 1];
    checkpoint[0] = true;
    checkpoint[n] = true;
    for &c in set {
        checkpoint[c] = true;
    }
    checkpoint
}

fn previous(checkpoint: &[bool], i: usize) -> usize {
    (0..i).rev().find(|&h| checkpoint[h]).unwrap_or(0)
}

/// The tensors d_k resident, and their total.
struct Ledger<'a> {
    d: &'a [u64],
    resident: Vec<bool>,
    total: u64,
}

impl<'a> Ledger<'a> {
    fn new(d: &'a [u64]) -> Ledger<'a> {
        Ledger {
            d,
            resident: vec![false; d.len()],
            total: 0,
        }
    }

    fn allocate(&mut self, k: usize) {
        if !self.resident[k] {
            self.resident[k] = true;
            self.total += self.d[k];
        }
    }

    fn allocate_range(&mut self, first: usize, end: usize) {
        for k in first..end {
            self.allocate(k);
        }
    }

    fn free(&mut self, k: usize) {
        if self.resident[k] {
            self.resident[k] = false;
            self.total -= self.d[k];
        }
    }
}
