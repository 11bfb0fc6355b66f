//! Level of detail for the timeline's rows: each row's items summed into time buckets at a
//! few resolutions, 4× apart, so a zoomed-out frame reads a few small blocks per pixel
//! instead of searching millions of items spread over hundreds of MB. Zoomed in past the
//! finest level, a row draws its items themselves.

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
}

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
        for i in 0..n {
            let (s, e) = (start(i), end(i));
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
        Self { levels }
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
        self.levels
            .iter()
            .map(|l| l.blocks.capacity() * std::mem::size_of::<Block>())
            .sum()
    }
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
}
