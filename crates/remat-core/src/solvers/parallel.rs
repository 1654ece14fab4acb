//! Pieces of a DP, run on the machine's cores.
//!
//! A DP layer (one stage of pofo's OC) reads only finished layers and
//! writes cells no other piece writes, so its pieces can run at once; a
//! wavefront (the rows of pofo's C_Δ) reads earlier pieces as they are
//! published. Either way each piece is computed by one thread, in the
//! same order as one thread would, and the tables are the same to the
//! bit whatever the number of threads. The pieces own their output
//! (disjoint `&mut` slices carved from the table), so this needs no
//! `unsafe`.
//!
//! [`Workers::run`] deals a layer's pieces longest first to the least
//! loaded thread (LPT, within 4/3 of the best split), by a cost the caller
//! estimates. [`Workers::pull`] is for a wavefront instead: pieces that
//! wait on earlier pieces' results (published through a `OnceLock` each)
//! are handed out in order to whichever thread is free. On
//! `wasm32-unknown-unknown` there are no threads: [`Workers::available`]
//! is 1 there and everything runs in the caller's thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

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

    /// Threads for `pieces` pieces of `total` estimated work: no more than
    /// pieces, nor than the work has [`MIN_PARALLEL_COST`]s.
    fn threads_for(self, pieces: usize, total: u64) -> usize {
        let worth = match self.min_cost {
            0 => usize::MAX,
            c => usize::try_from(total / c).unwrap_or(usize::MAX),
        };
        self.threads.min(pieces).min(worth)
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
        let threads = self.threads_for(pieces.len(), costs.iter().sum());
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

    /// Runs `work(scratch, piece)` on every piece, handed out in the
    /// order given to whichever thread is free, each thread with its own
    /// `scratch()`. A piece may wait on the results of pieces before it:
    /// those were all taken, by threads that are running, so the wait ends
    /// as long as they, in turn, wait only on pieces before them. (A piece
    /// that panics publishes nothing, so a piece waiting on it would wait
    /// for ever: a panic here is a bug, as everywhere in the DP, but it
    /// shows as a hang, not a message.)
    ///
    /// `done(k)` is called on the caller's thread each time a piece ends,
    /// k the number ended so far (progress); when it returns false no
    /// further piece is taken, the ones taken finish, and `pull` returns
    /// false (cancelled). `cost` estimates a piece's work, as for
    /// [`Workers::run`].
    pub fn pull<T, S>(
        self,
        pieces: Vec<T>,
        cost: impl Fn(&T) -> u64,
        scratch: impl Fn() -> S + Sync,
        work: impl Fn(&mut S, T) + Sync,
        done: &mut dyn FnMut(usize) -> bool,
    ) -> bool
    where
        T: Send,
    {
        let threads = self.threads_for(pieces.len(), pieces.iter().map(&cost).sum());
        if threads <= 1 {
            let mut s = scratch();
            for (k, p) in pieces.into_iter().enumerate() {
                work(&mut s, p);
                if !done(k + 1) {
                    return false;
                }
            }
            return true;
        }
        let queue = Mutex::new(pieces.into_iter());
        let stop = AtomicBool::new(false);
        // The next piece, unless stopped. Taking it is the only thing done
        // under the lock, so the lock is never poisoned.
        let take = || {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            queue.lock().expect("not poisoned").next()
        };
        let (ended, ends) = mpsc::channel::<()>();
        let (work, scratch, take) = (&work, &scratch, &take);
        let mut go_on = true;
        std::thread::scope(|scope| {
            for _ in 1..threads {
                let ended = ended.clone();
                scope.spawn(move || {
                    let mut s = scratch();
                    while let Some(p) = take() {
                        work(&mut s, p);
                        // The caller's thread receives until every sender
                        // is gone, so this cannot fail.
                        let _ = ended.send(());
                    }
                });
            }
            drop(ended);
            // The caller's thread works too, and hears of the other
            // threads' ends between its own pieces, then waits for the
            // rest.
            let mut k = 0;
            let mut count = |ended: usize| {
                for _ in 0..ended {
                    k += 1;
                    if go_on && !done(k) {
                        go_on = false;
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            };
            let mut s = scratch();
            while let Some(p) = take() {
                work(&mut s, p);
                count(1 + ends.try_iter().count());
            }
            count(ends.iter().count());
        });
        go_on
    }
}

/// The estimated work (about one candidate a unit, a few nanoseconds) worth
/// a thread of its own: well above a thread's start (tens of µs).
pub const MIN_PARALLEL_COST: u64 = 50_000;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::OnceLock;

    /// A chain of pieces, each waiting on the one before it (the hardest
    /// wavefront): every piece runs once, in any thread count, with no
    /// deadlock, and each sees its predecessor's result. A deadlock fails
    /// the test after a minute rather than hanging it. Mutation tried: the
    /// queue handed out in reverse (`next_back`): the first pieces taken
    /// wait on ones nobody will take (a deadlock; `pull`'s doc states the
    /// order it relies on).
    #[test]
    fn pulled_pieces_may_wait_on_earlier_ones() {
        for threads in 1..=4 {
            let (sent, got) = mpsc::channel();
            std::thread::spawn(move || {
                let results: Vec<OnceLock<u64>> = (0..500).map(|_| OnceLock::new()).collect();
                let mut ends = 0;
                let finished = Workers::exactly(threads).pull(
                    (0..500usize).collect(),
                    |_| 1,
                    || (),
                    |_, k| {
                        let before = if k == 0 { 0 } else { *results[k - 1].wait() };
                        results[k].set(before + k as u64).expect("set once");
                    },
                    &mut |k| {
                        ends = k;
                        true
                    },
                );
                let _ = sent.send((finished, ends, results[499].get().copied()));
            });
            let outcome = got.recv_timeout(std::time::Duration::from_secs(60));
            assert_eq!(
                outcome,
                Ok((true, 500, Some(499 * 500 / 2))),
                "{threads} threads (a timeout is a deadlock)"
            );
        }
    }

    /// A `done` that says stop ends the run early and reports it. The
    /// workers learn of it a little late (the caller's thread hears of each
    /// end through a channel), so a few more pieces may run: each piece
    /// here takes a millisecond, and far fewer than all may run. Mutation
    /// tried: `stop` never stored: all 2000 run, and the count check fails.
    #[test]
    fn pulling_stops_when_done_says_so() {
        for threads in 1..=3 {
            let ran = AtomicU64::new(0);
            let finished = Workers::exactly(threads).pull(
                (0..2000u64).collect(),
                |_| 1,
                || (),
                |_, _| {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    ran.fetch_add(1, Ordering::Relaxed);
                },
                &mut |k| k < 10,
            );
            assert!(!finished);
            let ran = ran.load(Ordering::Relaxed);
            assert!((10..500).contains(&ran), "{ran} ran");
        }
    }

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
