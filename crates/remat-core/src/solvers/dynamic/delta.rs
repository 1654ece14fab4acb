//! DELTA's decision logic (Tang et al., *DELTA: Dynamically Optimizing GPU
//! Memory beyond Tensor Recomputation*, 2022, Section 4): the **Filter**
//! (Algorithm 2: the resident tensor of least heuristic score), the
//! **Director** (Algorithm 3: evict or offload it, by F_decision = h_r / h_o
//! and the pinned rules) and the **Prefetcher**'s settings (Algorithm 4:
//! reload offloaded tensors ahead, at most a few at a time). The runtime
//! loop that calls them is `runtime.rs`.

use super::release::{Action, Candidate};
use crate::solvers::api::DeltaSettings;

// The settings (link share, trigger, reload limit) and their defaults, the
// paper's where it gives one, are `api::DeltaSettings`.

/// The Filter's heuristic (Section 4.1, Eq. 1–3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heuristic {
    /// h_base = 1 / (m · s): large and stale first (DELTA's default).
    Base,
    /// h_LRU = 1 / s: least recently used first.
    Lru,
    /// h_GREEDY = 1 / m: largest first.
    Greedy,
}

/// DELTA's settings for one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Delta {
    pub heuristic: Heuristic,
    /// b in Eq. 6: the link's bandwidth × the link share, in bytes per
    /// second; None (or 0) when there is no link: nothing is offloaded
    /// (every tensor is `offload_pinned`).
    pub effective_bandwidth: Option<f64>,
    pub reload_limit: usize,
    /// The share of the budget in use at which releasing starts.
    pub trigger_share: f64,
}

impl Delta {
    /// DELTA with `heuristic` on a link of `link` bytes per second (the
    /// chain's, or `--bandwidth`), with `settings` (the paper's by default).
    pub fn new(heuristic: Heuristic, link: Option<f64>, settings: &DeltaSettings) -> Delta {
        Delta {
            heuristic,
            effective_bandwidth: link.map(|b| b * settings.link_share),
            reload_limit: settings.reload_limit,
            trigger_share: settings.trigger,
        }
    }

    /// The memory in use at which releasing starts (rounded down; exact for
    /// the default 3/4 on any budget below 2^53 bytes).
    pub fn trigger(&self, budget: u64) -> u64 {
        (budget as f64 * self.trigger_share) as u64
    }

    pub fn can_offload(&self) -> bool {
        self.effective_bandwidth.is_some_and(|b| b > 0.0)
    }

    /// c_s = m / b at the effective bandwidth (Eq. 6); None with no link.
    pub fn transfer_seconds(&self, bytes: u64) -> Option<f64> {
        self.effective_bandwidth
            .filter(|&b| b > 0.0)
            .map(|b| bytes as f64 / b)
    }

    /// The Filter's score (least released first). s = 0 (used this
    /// instant) scores +∞ under h_base and h_LRU.
    pub fn filter(&self, c: &Candidate) -> f64 {
        let inverse = |x: f64| if x == 0.0 { f64::INFINITY } else { 1.0 / x };
        match self.heuristic {
            Heuristic::Base => inverse(c.bytes as f64 * c.staleness),
            Heuristic::Lru => inverse(c.staleness),
            Heuristic::Greedy => inverse(c.bytes as f64),
        }
    }

    /// The Director (Algorithm 3): an uncomputable tensor (a^0,
    /// `evict_pinned`) is offloaded; with no link every tensor is
    /// `offload_pinned` and evicted; otherwise F_decision = h_r / h_o =
    /// c_r · b / m (Eq. 4–6: recomputation time over transfer time) decides:
    /// evict when F ≤ 1, offload when recomputing costs more than moving.
    pub fn director(&self, c: &Candidate) -> Action {
        if c.tensor.uncomputable() {
            return Action::Offload;
        }
        match self.transfer_seconds(c.bytes) {
            None => Action::Evict,
            Some(swap) if c.recompute_seconds <= swap => Action::Evict,
            Some(_) => Action::Offload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::dynamic::tensors::Tensor;

    fn candidate(stage: usize, bytes: u64, staleness: f64, recompute_seconds: f64) -> Candidate {
        Candidate {
            tensor: Tensor::saved(stage),
            bytes,
            staleness,
            recompute_seconds,
        }
    }

    /// Fails if a heuristic reads the wrong quantity (mutation tried: h_LRU
    /// as 1/m: the stale small tensor stopped winning) or the ordering is
    /// reversed.
    #[test]
    fn the_three_heuristics_rank_as_the_paper_says() {
        let small_stale = candidate(1, 10, 9.0, 1.0);
        let large_fresh = candidate(2, 100, 1.0, 1.0);
        let d = |h| Delta::new(h, Some(1e9), &DeltaSettings::default());
        assert!(d(Heuristic::Lru).filter(&small_stale) < d(Heuristic::Lru).filter(&large_fresh));
        assert!(
            d(Heuristic::Greedy).filter(&large_fresh) < d(Heuristic::Greedy).filter(&small_stale)
        );
        // m·s: 90 vs 100.
        assert!(d(Heuristic::Base).filter(&large_fresh) < d(Heuristic::Base).filter(&small_stale));
    }

    /// Fails if the Director ignores the effective bandwidth (mutation
    /// tried: b = the full link: the 1 s tensor was evicted instead of
    /// offloaded) or the pinned rules.
    #[test]
    fn the_director_compares_recomputation_with_the_transfer_at_35_percent() {
        // 1000 bytes over 1000 B/s × 0.35: 2.86 s to move.
        let d = Delta::new(Heuristic::Base, Some(1000.0), &DeltaSettings::default());
        assert_eq!(d.director(&candidate(3, 1000, 1.0, 2.0)), Action::Evict);
        assert_eq!(d.director(&candidate(3, 1000, 1.0, 2.9)), Action::Offload);
        let input = Candidate {
            tensor: Tensor::output(0),
            ..candidate(0, 1000, 1.0, 0.0)
        };
        assert_eq!(d.director(&input), Action::Offload);
        let no_link = Delta::new(Heuristic::Base, None, &DeltaSettings::default());
        assert_eq!(
            no_link.director(&candidate(3, 1000, 1.0, 1e9)),
            Action::Evict
        );
        assert!(!Delta::new(Heuristic::Base, Some(0.0), &DeltaSettings::default()).can_offload());
        assert_eq!(d.trigger(1000), 750);
        // Another machine's share: at 50 % the tensor moves in 2.0 s, so a
        // 2.1 s recomputation is offloaded instead (evicted at 35 %).
        assert_eq!(d.director(&candidate(3, 1000, 1.0, 2.1)), Action::Evict);
        let half = DeltaSettings {
            link_share: 0.5,
            ..DeltaSettings::default()
        };
        let d = Delta::new(Heuristic::Base, Some(1000.0), &half);
        assert_eq!(d.director(&candidate(3, 1000, 1.0, 2.1)), Action::Offload);
    }
}
