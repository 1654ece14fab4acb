//! Range maximum in O(1) per query after O(n) preparation, for the term
//! max_{h≤k<i} d_k of s(h, i) (Eq. 11) that Algorithm 6 evaluates at pairs
//! (i, j) whose right end moves both ways.
//!
//! The array is cut into blocks of 64. Inside a block, `stack[r]` is a bit
//! mask of the positions b..=r (b the block's start) that are larger than
//! everything after them up to r — the stack of a left-to-right scan for the
//! maximum. The maximum of [l, r] in one block is the first such position at
//! or after l: one shift and one trailing-zero count. Whole blocks between
//! the ends are answered by a sparse table over the n/64 block maxima
//! (O((n/64) log n) ≤ O(n) words).

const BLOCK: usize = 64;

pub(crate) struct RangeMax<'a> {
    values: &'a [u64],
    /// For each position r, the in-block stack of maxima over [block start, r].
    stack: Vec<u64>,
    /// sparse[k][b] = max of blocks b .. b + 2^k − 1.
    sparse: Vec<Vec<u64>>,
}

impl<'a> RangeMax<'a> {
    pub(crate) fn new(values: &'a [u64]) -> RangeMax<'a> {
        let mut stack = vec![0u64; values.len()];
        let mut block_max = Vec::with_capacity(values.len().div_ceil(BLOCK));
        for (b, chunk) in values.chunks(BLOCK).enumerate() {
            let mut bits = 0u64;
            for (r, &v) in chunk.iter().enumerate() {
                // Positions not larger than v can never again be a maximum
                // of a range ending at or after r.
                while bits != 0 {
                    let top = 63 - bits.leading_zeros() as usize;
                    if chunk[top] > v {
                        break;
                    }
                    bits ^= 1 << top;
                }
                bits |= 1 << r;
                stack[b * BLOCK + r] = bits;
            }
            block_max.push(chunk.iter().copied().max().unwrap_or(0));
        }
        let mut sparse = vec![block_max];
        let mut width = 1;
        while 2 * width <= sparse[0].len() {
            let prev = sparse.last().expect("level 0 exists");
            let next: Vec<u64> = (0..prev.len() - width)
                .map(|b| prev[b].max(prev[b + width]))
                .collect();
            sparse.push(next);
            width *= 2;
        }
        RangeMax {
            values,
            stack,
            sparse,
        }
    }

    /// max(values[l..=r]); requires l ≤ r < len.
    pub(crate) fn max(&self, l: usize, r: usize) -> u64 {
        let (bl, br) = (l / BLOCK, r / BLOCK);
        if bl == br {
            return self.in_block(l, r);
        }
        let mut m = self
            .in_block(l, bl * BLOCK + BLOCK - 1)
            .max(self.in_block(br * BLOCK, r));
        if bl + 1 < br {
            m = m.max(self.blocks(bl + 1, br - 1));
        }
        m
    }

    fn in_block(&self, l: usize, r: usize) -> u64 {
        let start = l - l % BLOCK;
        let bits = self.stack[r] & (u64::MAX << (l - start));
        self.values[start + bits.trailing_zeros() as usize]
    }

    fn blocks(&self, a: usize, b: usize) -> u64 {
        let level = (usize::BITS - 1 - (b - a + 1).leading_zeros()) as usize;
        let row = &self.sparse[level];
        row[a].max(row[b + 1 - (1 << level)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Fails if a query misses part of its range (an off-by-one at a block
    // edge, the wrong sparse-table level); mutation tried: the in-block mask
    // `u64::MAX << (l - start)` shifted one further (`(l - start + 1) % 64`)
    // made it fail.
    #[test]
    fn equals_a_plain_scan_on_every_range() {
        let mut seed = 7u64;
        for len in [1usize, 2, 63, 64, 65, 130, 300] {
            let values: Vec<u64> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % 50
                })
                .collect();
            let rm = RangeMax::new(&values);
            for l in 0..len {
                for r in l..len {
                    let plain = values[l..=r].iter().copied().max().unwrap();
                    assert_eq!(rm.max(l, r), plain, "len {len} range [{l}, {r}]");
                }
            }
        }
    }
}
