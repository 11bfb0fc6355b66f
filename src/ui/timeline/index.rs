//! The timeline's drawing indexes that are not levels of detail: per-stream prefix sums of
//! busy, NCCL and memory time, kept every `PREFIX_BLOCK`-th op.

use crate::trace::GpuOps;
use crate::trace::OpKind;

/// Per stream: the busy time and the mix of any run of ops, from sums at every
/// `PREFIX_BLOCK`-th op and the few ops between (a sum per op cost 24 bytes an op: a
/// hundred MB on a real-shaped trace).
pub(super) struct StreamPrefix {
    /// Busy, NCCL and memory time of ops `[0, k × PREFIX_BLOCK)`.
    pub(super) blocks: Vec<[i64; 3]>,
}

impl StreamPrefix {
    pub(super) fn new(ops: &GpuOps) -> Self {
        let mut blocks = Vec::with_capacity(ops.len() / PREFIX_BLOCK + 1);
        let mut sum = [0i64; 3];
        for i in 0..ops.len() {
            if i % PREFIX_BLOCK == 0 {
                blocks.push(sum);
            }
            add_op(&mut sum, ops, i);
        }
        blocks.push(sum);
        Self { blocks }
    }

    /// Busy, NCCL and memory time of ops `[a, b)`.
    pub(super) fn sums(&self, ops: &GpuOps, a: usize, b: usize) -> [i64; 3] {
        let mut out = [0i64; 3];
        if b - a < 2 * PREFIX_BLOCK {
            (a..b).for_each(|i| add_op(&mut out, ops, i));
            return out;
        }
        // Whole blocks from the block table, the ops at either end one by one.
        let (first_block, last_block) = (a.div_ceil(PREFIX_BLOCK), b / PREFIX_BLOCK);
        (a..first_block * PREFIX_BLOCK).for_each(|i| add_op(&mut out, ops, i));
        (last_block * PREFIX_BLOCK..b).for_each(|i| add_op(&mut out, ops, i));
        let (to, from) = (self.blocks[last_block], self.blocks[first_block]);
        for (k, sum) in out.iter_mut().enumerate() {
            *sum += to[k] - from[k];
        }
        out
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * 24
    }
}

pub(super) fn add_op(sum: &mut [i64; 3], ops: &GpuOps, i: usize) {
    let d = ops.duration(i);
    sum[0] += d;
    if ops.kind[i] == OpKind::Nccl {
        sum[1] += d;
    }
    if !ops.kind[i].is_kernel() {
        sum[2] += d;
    }
}

/// Ops per block of a stream's prefix sums.
pub(super) const PREFIX_BLOCK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_runs_sums_from_blocks_equal_its_ops_summed() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut ops = GpuOps::default();
        let mut t = 0;
        for _ in 0..5_000 {
            let d = rng.i64(1..5_000);
            ops.start.push(t);
            ops.end.push(t + d);
            ops.kind
                .push([OpKind::Compute, OpKind::Nccl, OpKind::Memcpy][rng.usize(0..3)]);
            t += d + rng.i64(0..3_000);
        }
        let prefix = StreamPrefix::new(&ops);
        for _ in 0..2_000 {
            let a = rng.usize(0..ops.len());
            let b = rng.usize(a..=ops.len());
            let mut want = [0; 3];
            (a..b).for_each(|i| add_op(&mut want, &ops, i));
            assert_eq!(prefix.sums(&ops, a, b), want, "ops {a}..{b}");
        }
    }
}
