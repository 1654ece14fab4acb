//! DTR's eviction heuristic (Kirisame et al., *Dynamic Tensor
//! Rematerialization*, ICLR 2021): evict the resident tensor of least
//! h_DTR = c_r / (m · s) — cheap to recompute, large, long unused — and only
//! ever evict (no offloading). DELTA's Eq. 5 h_r is the same quantity.

use super::release::Candidate;

/// h_DTR(t) = c_r(t) / (m(t) · s(t)). A tensor free to recompute scores 0
/// (evicted first); one used this instant (s = 0) scores +∞ (evicted last).
pub fn score(c: &Candidate) -> f64 {
    if c.recompute_seconds == 0.0 {
        return 0.0;
    }
    let denominator = c.bytes as f64 * c.staleness;
    if denominator == 0.0 {
        f64::INFINITY
    } else {
        c.recompute_seconds / denominator
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::dynamic::tensors::Tensor;

    fn candidate(bytes: u64, staleness: f64, recompute_seconds: f64) -> Candidate {
        Candidate {
            tensor: Tensor::saved(1),
            bytes,
            staleness,
            recompute_seconds,
        }
    }

    /// Fails if the heuristic is not c/(m·s) (mutation tried: c/m without
    /// staleness: the stale tensor stopped winning) or divides 0 by 0.
    #[test]
    fn prefers_cheap_large_and_stale() {
        let fresh = score(&candidate(100, 1.0, 2.0));
        let stale = score(&candidate(100, 4.0, 2.0));
        let large = score(&candidate(400, 1.0, 2.0));
        assert!(stale < fresh && large < fresh);
        assert_eq!(stale, large);
        assert_eq!(score(&candidate(100, 0.0, 0.0)), 0.0);
        assert_eq!(score(&candidate(100, 0.0, 1.0)), f64::INFINITY);
    }
}
