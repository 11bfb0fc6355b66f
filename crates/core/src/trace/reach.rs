//! What runs at a time, for items sorted by start that may last long: per block of
//! `BLOCK` items, the latest end in it. A search steps over whole blocks that end before
//! the time asked about, instead of reading every item since "the longest one could still
//! run" (one 2.5 s synchronize made every search on its thread read thousands of calls).

/// Items per block: a block is skipped with one read when it ends too early.
const BLOCK: usize = 64;

#[derive(Debug, Default, Clone)]
pub struct ReachIndex {
    block_end: Vec<i64>,
}

impl ReachIndex {
    pub fn new(end: &[i64]) -> Self {
        Self {
            block_end: end
                .chunks(BLOCK)
                .map(|c| c.iter().copied().max().unwrap_or(i64::MIN))
                .collect(),
        }
    }

    /// Indices of the items overlapping `[a, b)` (`start < b`, `end > a`; an instant item
    /// at `a` counts), in index order. `longest` bounds how far back an item can start.
    pub fn overlapping<'a>(
        &'a self,
        start: &'a [i64],
        end: &'a [i64],
        longest: i64,
        a: i64,
        b: i64,
    ) -> impl Iterator<Item = usize> + 'a {
        let lo = start.partition_point(|&s| s < a.saturating_sub(longest));
        let hi = start.partition_point(|&s| s < b.max(a + 1));
        let blocks = lo / BLOCK..hi.div_ceil(BLOCK);
        blocks
            .filter(move |&k| self.block_end.get(k).is_none_or(|&e| e >= a))
            .flat_map(move |k| (k * BLOCK).max(lo)..((k + 1) * BLOCK).min(hi))
            .filter(move |&i| end[i] > a || (end[i] == a && start[i] == a))
    }

    /// The latest end of each block, for the cache.
    pub(crate) fn block_ends(&self) -> &[i64] {
        &self.block_end
    }

    pub(crate) fn from_block_ends(block_end: Vec<i64>) -> Self {
        Self { block_end }
    }

    pub fn heap_bytes(&self) -> usize {
        self.block_end.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_overlaps_a_window_however_long_one_item_is() {
        let mut rng = fastrand::Rng::with_seed(5);
        let (mut start, mut end) = (Vec::new(), Vec::new());
        let mut t = 0;
        for i in 0..20_000 {
            let len = if i == 700 {
                3_000_000_000
            } else {
                rng.i64(0..3_000)
            };
            start.push(t);
            end.push(t + len);
            t += rng.i64(500..2_500);
        }
        let longest = (0..start.len()).map(|i| end[i] - start[i]).max().unwrap();
        let index = ReachIndex::new(&end);
        for _ in 0..500 {
            let a = rng.i64(0..t);
            let b = a + rng.i64(0..50_000);
            let found: Vec<usize> = index.overlapping(&start, &end, longest, a, b).collect();
            let want: Vec<usize> = (0..start.len())
                .filter(|&i| {
                    start[i] < b.max(a + 1) && (end[i] > a || (end[i] == a && start[i] == a))
                })
                .collect();
            assert_eq!(found, want, "window {a}..{b}");
        }
    }
}
