//! Level of detail for the timeline's rows: each row's items summed into time buckets at a
//! few resolutions, 4× apart, so a zoomed-out frame reads a few small blocks per pixel
//! instead of searching millions of items spread over hundreds of MB. Zoomed in past the
//! finest level, a row draws its items themselves.

use crate::sorted::{gallop, partition};

/// Items of one row that started in one bucket.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub start: i64,
    /// Latest end of its items.
    pub end: i64,
    /// Summed duration of its items.
    pub busy: i64,
    pub count: u32,
    /// Summed duration of its NCCL items and of its memory ops.
    pub nccl: i64,
    pub memory: i64,
    /// Index of its first item (the item itself when `count` is 1).
    pub first: u32,
}

pub struct Level {
    /// Buckets start at `origin + k × bucket_ns`.
    pub origin: i64,
    pub bucket_ns: i64,
    pub blocks: Vec<Block>,
    pub longest: i64,
}

pub struct RowLod {
    /// Finest first.
    levels: Vec<Level>,
    /// For rows of many items: per bucket of the finest level, the first block of the
    /// finest level whose items (or an earlier block's) reach into that bucket. Where a
    /// view's items start is then two reads, where a binary search back by the row's
    /// longest item scanned every item of that span (one long NCCL kernel or NVTX range
    /// made a deep-zoom frame on `large` read thousands) and missed the cache at each probe.
    first_block_reaching: Vec<u32>,
    /// No item starts before the one before it ends (one stream's kernels, one thread's
    /// calls, its ranges at one depth): only the last item to start before a time can
    /// reach it. Where one long item (a 500 ms synchronize) made the table point far back,
    /// a deep-zoom frame then skips the thousands of items between instead of reading them.
    disjoint: bool,
}

/// Rows with fewer items are searched directly: their arrays stay in cache.
const ITEMS_FOR_BUCKET_TABLE: usize = 4096;

/// Buckets across the trace at the finest level: ~3.5 MB of blocks per row at most, and
/// views down to ~1/50 of the trace read blocks, not items.
const FINEST_BUCKETS: i64 = 65_536;
const STEP: i64 = 4;
/// Stop coarsening below this many blocks: a full-width frame reads no more than that.
const COARSEST_BLOCKS: usize = 512;

impl RowLod {
    /// `class(i)` says whether item `i` is NCCL and whether it is a memory op.
    pub fn new(
        n: usize,
        start: impl Fn(usize) -> i64,
        end: impl Fn(usize) -> i64,
        class: impl Fn(usize) -> (bool, bool),
        full: (i64, i64),
    ) -> Self {
        let origin = full.0;
        let mut bucket_ns = ((full.1 - full.0) / FINEST_BUCKETS).max(1);
        let mut blocks: Vec<Block> = Vec::new();
        let mut disjoint = true;
        let mut last_end = i64::MIN;
        for i in 0..n {
            let (s, e) = (start(i), end(i));
            disjoint &= last_end <= s;
            last_end = e;
            let (nccl, memory) = class(i);
            let item = Block {
                start: s,
                end: e,
                busy: e - s,
                count: 1,
                nccl: if nccl { e - s } else { 0 },
                memory: if memory { e - s } else { 0 },
                first: i as u32,
            };
            match blocks.last_mut() {
                Some(last) if same_bucket(last.start, s, origin, bucket_ns) => merge(last, &item),
                _ => blocks.push(item),
            }
        }
        let first_block_reaching = if n >= ITEMS_FOR_BUCKET_TABLE {
            reach_table(&blocks, origin, bucket_ns)
        } else {
            Vec::new()
        };
        let mut levels = Vec::new();
        loop {
            let longest = blocks.iter().map(|b| b.end - b.start).max().unwrap_or(0);
            let done = blocks.len() <= COARSEST_BLOCKS;
            levels.push(Level {
                origin,
                bucket_ns,
                blocks,
                longest,
            });
            if done {
                break;
            }
            bucket_ns *= STEP;
            let finer = &levels.last().unwrap().blocks;
            let mut coarser: Vec<Block> = Vec::with_capacity(finer.len() / 2);
            for b in finer {
                match coarser.last_mut() {
                    Some(last) if same_bucket(last.start, b.start, origin, bucket_ns) => {
                        merge(last, b)
                    }
                    _ => coarser.push(*b),
                }
            }
            blocks = coarser;
        }
        Self {
            levels,
            first_block_reaching,
            disjoint,
        }
    }

    /// The first of the row's `n` items that could reach time `t` (ends at or after it):
    /// every item before it ends earlier. Without a table, the first that starts at or
    /// after `t - longest`.
    pub fn first_reaching(
        &self,
        t: i64,
        n: usize,
        longest: i64,
        start: impl Fn(usize) -> i64,
    ) -> usize {
        let table = &self.first_block_reaching;
        let first = if table.is_empty() {
            partition(n, |k| start(k) < t.saturating_sub(longest))
        } else {
            let finest = &self.levels[0];
            let bucket = (t - finest.origin).div_euclid(finest.bucket_ns);
            if bucket < 0 {
                return 0;
            }
            let block = table
                .get(bucket as usize)
                .map_or(finest.blocks.len(), |&b| b as usize);
            finest.blocks.get(block).map_or(n, |b| b.first as usize)
        };
        if self.disjoint {
            // The last item to start before `t`, found near `first`.
            return gallop(first, n, |k| start(k) < t)
                .saturating_sub(1)
                .max(first);
        }
        first
    }

    /// The coarsest level whose buckets are no wider than `fold_ns` (the time a folded
    /// block spans on screen), or `None` when the view is finer than every level.
    pub fn level_for(&self, fold_ns: f64) -> Option<&Level> {
        self.levels
            .iter()
            .rev()
            .find(|l| l.bucket_ns as f64 <= fold_ns)
    }

    pub fn heap_bytes(&self) -> usize {
        let blocks: usize = self
            .levels
            .iter()
            .map(|l| l.blocks.capacity() * std::mem::size_of::<Block>())
            .sum();
        blocks + self.first_block_reaching.capacity() * std::mem::size_of::<u32>()
    }
}

/// Per bucket up to the one of the latest end, the first block whose items, or an earlier
/// block's, end in that bucket or later.
fn reach_table(blocks: &[Block], origin: i64, bucket_ns: i64) -> Vec<u32> {
    let buckets = blocks.iter().map(|b| b.end).max().map_or(0, |end| {
        (end - origin).div_euclid(bucket_ns).max(0) as usize + 1
    });
    let mut table = Vec::with_capacity(buckets);
    let (mut block, mut reach) = (0, i64::MIN);
    for bucket in 0..buckets {
        let bucket_start = origin + bucket as i64 * bucket_ns;
        // `reach` is the latest end of blocks [0, block): once a block gets it to this
        // bucket, no later bucket needs an earlier block.
        while block < blocks.len() && reach.max(blocks[block].end) < bucket_start {
            reach = reach.max(blocks[block].end);
            block += 1;
        }
        table.push(block as u32);
    }
    table
}

fn same_bucket(a: i64, b: i64, origin: i64, bucket_ns: i64) -> bool {
    (a - origin).div_euclid(bucket_ns) == (b - origin).div_euclid(bucket_ns)
}

fn merge(into: &mut Block, b: &Block) {
    into.end = into.end.max(b.end);
    into.busy += b.busy;
    into.count += b.count;
    into.nccl += b.nccl;
    into.memory += b.memory;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums of blocks: (busy ns, items, NCCL ns, memory ns).
    fn sum(blocks: &[Block]) -> (i64, u32, i64, i64) {
        blocks.iter().fold((0, 0, 0, 0), |acc, b| {
            (
                acc.0 + b.busy,
                acc.1 + b.count,
                acc.2 + b.nccl,
                acc.3 + b.memory,
            )
        })
    }

    #[test]
    fn levels_keep_every_item_and_its_time() {
        let n = 100_000;
        let starts: Vec<i64> = (0..n as i64).map(|i| i * 1_000).collect();
        let lod = RowLod::new(
            n,
            |i| starts[i],
            |i| starts[i] + 400,
            |i| (i % 3 == 0, i % 7 == 0),
            (0, n as i64 * 1_000),
        );
        assert!(lod.levels.len() > 2);
        for level in &lod.levels {
            let (busy, count, nccl, memory) = sum(&level.blocks);
            assert_eq!(count as usize, n);
            assert_eq!(busy, 400 * n as i64);
            assert_eq!(nccl, 400 * n.div_ceil(3) as i64);
            assert_eq!(memory, 400 * n.div_ceil(7) as i64);
        }
        assert!(lod.levels.last().unwrap().blocks.len() <= COARSEST_BLOCKS);
        assert!(lod.level_for(1.0).is_none());
        assert!(lod.level_for(1e12).is_some());
    }

    /// Items one after another, 0–2 µs apart; with `long_and_overlapping`, one in 500 runs
    /// on up to 5 ms over the next ones.
    /// A row of ~1 µs items 0–2 µs apart; with `long`, one in 500 is up to 5 ms long, and
    /// with `overlapping` the items after it start while it runs.
    fn row(
        rng: &mut fastrand::Rng,
        n: usize,
        long: bool,
        overlapping: bool,
    ) -> (Vec<i64>, Vec<i64>) {
        let (mut starts, mut ends) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut t = 0;
        for _ in 0..n {
            let is_long = long && rng.u32(0..500) == 0;
            let len = if is_long {
                rng.i64(0..5_000_000)
            } else {
                rng.i64(1..1_000)
            };
            starts.push(t);
            ends.push(t + len);
            t += if is_long && overlapping { 1_000 } else { len } + rng.i64(0..2_000);
        }
        (starts, ends)
    }

    #[test]
    fn the_first_item_reaching_a_time_is_found_through_the_bucket_table() {
        let mut rng = fastrand::Rng::with_seed(7);
        for (n, long, overlapping) in [
            (50_000, false, false),
            (50_000, true, false),
            (50_000, true, true),
            (3_000, true, false),
        ] {
            let (starts, ends) = row(&mut rng, n, long, overlapping);
            let full = (0, *ends.iter().max().unwrap());
            let lod = RowLod::new(n, |i| starts[i], |i| ends[i], |_| (false, false), full);
            assert_eq!(
                lod.first_block_reaching.is_empty(),
                n < ITEMS_FOR_BUCKET_TABLE
            );
            assert_eq!(lod.disjoint, !overlapping);
            let longest = (0..n).map(|i| ends[i] - starts[i]).max().unwrap();
            for _ in 0..2_000 {
                let t = rng.i64(-1_000..full.1 + 1_000);
                let found = lod.first_reaching(t, n, longest, |i| starts[i]);
                let first = (0..n).find(|&i| ends[i] >= t).unwrap_or(n);
                assert!(
                    found <= first,
                    "t {t}: found {found}, but item {first} reaches it"
                );
                if !overlapping {
                    // The first that reaches it, or the one before (which ended earlier),
                    // however long an item before them.
                    assert!(first - found <= 1, "t {t}: found {found}, first {first}");
                }
            }
        }
    }
}
