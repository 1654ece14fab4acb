//! Independent pieces of one DP layer, run on the machine's cores.
//!
//! A DP layer (one stage of pofo's OC, one segment length of its C_Δ)
//! reads only finished layers and writes cells no other piece writes, so
//! its pieces can run at once: each piece is computed by one thread, in the
//! same order as one thread would, and the tables are the same to the bit
//! whatever the number of threads. The pieces own their output (disjoint
//! `&mut` slices carved from the table), so this needs no locking and no
//! `unsafe`.
//!
//! Pieces are dealt longest first to the least loaded thread (LPT, within
//! 4/3 of the best split), by a cost the caller estimates. On
//! `wasm32-unknown-unknown` there are no threads: [`Workers::available`]
//! is 1 there and everything runs in the caller's thread.

/// How many threads a DP may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workers {
    threads: usize,
    /// The least estimated work worth a thread of its own (0: any).
    min_cost: u64,
}

impl Workers {
    /// One thread: the caller's.
    pub const ONE: Workers = Workers {
        threads: 1,
        min_cost: 0,
    };

    /// The cores this process may use (1 in wasm, or where it cannot be
    /// told), and no more of them than a layer has [`MIN_PARALLEL_COST`]s
    /// of work: a thread's start would cost more than it saves, and a
    /// machine of 64 cores would otherwise start 64 threads for each of
    /// the hundreds of small layers of a DP.
    pub fn available() -> Workers {
        if cfg!(target_arch = "wasm32") {
            return Workers::ONE;
        }
        Workers {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            min_cost: MIN_PARALLEL_COST,
        }
    }

    /// `n` threads (at least one) for every layer, however small: what the
    /// tests use to check that a parallel fill equals a sequential one.
    pub fn exactly(n: usize) -> Workers {
        Workers {
            threads: n.max(1),
            min_cost: 0,
        }
    }

    pub fn count(self) -> usize {
        self.threads
    }

    /// Runs `work(scratch, piece)` on every piece, each thread with its own
    /// `scratch()`. `cost` estimates a piece's work.
    pub fn run<T, S>(
        self,
        pieces: Vec<T>,
        cost: impl Fn(&T) -> u64,
        scratch: impl Fn() -> S + Sync,
        work: impl Fn(&mut S, T) + Sync,
    ) where
        T: Send,
    {
        let costs: Vec<u64> = pieces.iter().map(&cost).collect();
        let total: u64 = costs.iter().sum();
        let worth = match self.min_cost {
            0 => usize::MAX,
            c => usize::try_from(total / c).unwrap_or(usize::MAX),
        };
        let threads = self.threads.min(pieces.len()).min(worth);
        // One thread's share, in order, with a scratch of its own.
        let run_share = |share: Vec<T>| {
            let mut s = scratch();
            for p in share {
                work(&mut s, p);
            }
        };
        if threads <= 1 {
            run_share(pieces);
            return;
        }
        let mut order: Vec<(u64, T)> = costs.into_iter().zip(pieces).collect();
        order.sort_by_key(|p| std::cmp::Reverse(p.0));
        let mut shares: Vec<(u64, Vec<T>)> = (0..threads).map(|_| (0, Vec::new())).collect();
        for (c, p) in order {
            let least = shares
                .iter_mut()
                .min_by_key(|s| s.0)
                .expect("at least two threads");
            least.0 += c;
            least.1.push(p);
        }
        let run_share = &run_share;
        std::thread::scope(|scope| {
            let mut shares = shares.into_iter();
            // The caller's thread takes the first share itself.
            let own = shares.next().expect("at least two threads").1;
            for (_, share) in shares {
                scope.spawn(move || run_share(share));
            }
            run_share(own);
        });
    }
}

/// The estimated work (about one candidate a unit, a few nanoseconds) worth
/// a thread of its own: well above a thread's start (tens of µs).
pub const MIN_PARALLEL_COST: u64 = 50_000;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Every piece is run exactly once, whatever the thread count: a piece
    /// dealt twice or dropped (a bug in the LPT deal) changes the sum.
    /// Mutation tried: each spawned thread skips its share's first piece:
    /// fails.
    #[test]
    fn every_piece_runs_once() {
        for threads in 1..=5 {
            let sum = AtomicU64::new(0);
            let mut out = vec![0u64; 1000];
            let pieces: Vec<(u64, &mut u64)> = (1..=1000u64).zip(out.iter_mut()).collect();
            Workers::exactly(threads).run(
                pieces,
                |p| p.0 * 100,
                || (),
                |_, (k, slot)| {
                    *slot += k;
                    sum.fetch_add(k, Ordering::Relaxed);
                },
            );
            assert_eq!(sum.load(Ordering::Relaxed), 500_500);
            assert!(out.iter().enumerate().all(|(i, v)| *v == i as u64 + 1));
        }
    }
}
