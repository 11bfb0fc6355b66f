//! What a replay keeps as it walks, each in the form that costs least: a thread's calls
//! as the shifts that change, a stream's NCCL order as the last op of each kind, the
//! kernels a change scales as a bit per string.

use super::change::Change;
use super::engine::UNSET;
use crate::trace::{NONE, Trace};

/// One thread's calls as replayed, kept as the shift of their starts. A call that does
/// not synchronise keeps its duration and the CPU time before it (less what the change
/// cuts), so it moves as the call before it did: the shift changes only at a
/// synchronising call, a removed stall or a cut, and only those changes are kept — not a
/// time for every call, which every launch would write and read back (tens of MB a
/// replay on a large trace).
pub(super) struct ThreadCalls {
    /// How many of the thread's calls the replay has reached (their starts replayed).
    pub(super) reached: u32,
    /// The replayed end of the last call reached, [`UNSET`] while not known (a
    /// synchronising call before its end).
    pub(super) last_end: i64,
    /// Synchronising calls that ended before the replay reached their start (a call of no
    /// length ends as it starts, and ends are met first): (call, replayed end).
    pub(super) ended_early: Vec<(u32, i64)>,
    /// From which call on each shift holds (ascending; the first is call 0), and the shift.
    from: Vec<u32>,
    shift: Vec<i64>,
    /// Where the last lookup found its shift: launches look their calls up nearly in order.
    at: std::cell::Cell<crate::sorted::Cursor>,
}

impl ThreadCalls {
    pub(super) fn new() -> Self {
        Self {
            reached: 0,
            last_end: UNSET,
            ended_early: Vec::new(),
            from: Vec::new(),
            shift: Vec::new(),
            at: std::cell::Cell::new(crate::sorted::Cursor::default()),
        }
    }

    /// Call `k`, the next one, starts `shift` after its recorded start.
    pub(super) fn reach(&mut self, k: u32, shift: i64) {
        debug_assert_eq!(k, self.reached, "a thread's calls are reached in order");
        if self.shift.last() != Some(&shift) {
            self.from.push(k);
            self.shift.push(shift);
        }
        self.reached = k + 1;
    }

    /// How far call `k` (reached) moved: launches look their calls up nearly in order, so
    /// the place found last, or a few after it, mostly holds it; else a search.
    pub(super) fn shift_of(&self, k: u32) -> i64 {
        let from = &self.from;
        // The first shift holds from call 0: the one found is at 1 or later.
        let mut at = self.at.get();
        let i = at.seek(from.len(), |j| from[j] <= k) - 1;
        self.at.set(at);
        self.shift[i]
    }
}

/// With NCCL moved to a stream of its own, where one stream's kinds of op were last, met
/// in stream order: an op's predecessor is the previous op of its kind, and it still waits
/// for what the change's [`super::NcclDependencies`] says — a collective, the compute op
/// before it; a compute op, the latest collective launched before it or the one before
/// that.
#[derive(Clone, Copy)]
pub(super) struct NcclOrder {
    last_compute: u32,
    latest: u32,
    before_latest: u32,
}

impl Default for NcclOrder {
    fn default() -> Self {
        Self {
            last_compute: NONE,
            latest: NONE,
            before_latest: NONE,
        }
    }
}

impl NcclOrder {
    /// The next op of the stream, `op`, an NCCL one or not: (its predecessor, the op it
    /// waits for as `model` says, or [`NONE`]).
    pub(super) fn next(
        &mut self,
        nccl: bool,
        op: u32,
        model: super::NcclDependencies,
    ) -> (Option<usize>, u32) {
        use super::NcclDependencies::*;
        let some = |i: u32| (i != NONE).then_some(i as usize);
        if nccl {
            let waits = match model {
                Unbounded => NONE,
                NextKernel | AfterNextCollective => self.last_compute,
            };
            let found = (some(self.latest), waits);
            self.before_latest = self.latest;
            self.latest = op;
            found
        } else {
            let waits = match model {
                Unbounded => NONE,
                NextKernel => self.latest,
                AfterNextCollective => self.before_latest,
            };
            let found = (some(self.last_compute), waits);
            self.last_compute = op;
            found
        }
    }
}

/// The kernels a change makes faster or slower, by name: a bit per string says whether
/// its kernels are scaled (a trace has millions of strings: a factor each would take
/// 8 bytes a string a replay), the factor kept for those only. Kernel names only are matched, each once.
pub(super) struct KernelScale {
    scaled: Vec<u64>,
    factor: rustc_hash::FxHashMap<u32, f64>,
}

impl KernelScale {
    pub(super) fn new(trace: &Trace, change: &Change) -> Self {
        let mut out = Self {
            scaled: Vec::new(),
            factor: Default::default(),
        };
        if change.scale_kernels.is_empty() {
            return out;
        }
        let words = trace.strings.len().div_ceil(64);
        out.scaled = vec![0; words];
        let mut seen = vec![0u64; words];
        for s in trace.devices.iter().flat_map(|d| &d.streams) {
            for i in 0..s.ops.len() {
                let id = s.ops.name[i];
                let (w, bit) = (id as usize / 64, 1u64 << (id % 64));
                if !s.ops.kind[i].is_kernel() || seen[w] & bit != 0 {
                    continue;
                }
                seen[w] |= bit;
                let name = trace.strings.get(id);
                let matched: Vec<f64> = change
                    .scale_kernels
                    .iter()
                    .filter(|(re, _)| re.is_match(&name))
                    .map(|(_, f)| *f)
                    .collect();
                if !matched.is_empty() {
                    out.scaled[w] |= bit;
                    out.factor.insert(id, matched.iter().product());
                }
            }
        }
        out
    }

    /// The factor kernels named `name` are scaled by, if any.
    pub(super) fn of(&self, name: u32) -> Option<f64> {
        let w = self.scaled.get(name as usize / 64)?;
        if w & (1u64 << (name % 64)) == 0 {
            return None;
        }
        self.factor.get(&name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::ThreadCalls;

    #[test]
    fn a_calls_shift_is_found_wherever_the_launches_look_it_up() {
        let mut calls = ThreadCalls::new();
        let mut expected = Vec::new();
        let mut shift = 0i64;
        for k in 0..1000u32 {
            // Runs of calls that move alike, changed at irregular calls.
            if k % 7 == 0 || k % 11 == 3 {
                shift += k as i64 - 300;
            }
            calls.reach(k, shift);
            expected.push(shift);
        }
        assert!(calls.from.len() < 300, "only the changes are kept");
        // In order, a step back, far back, far ahead, backwards.
        let asks = (0..1000u32)
            .chain([5, 999, 0, 500, 499, 498, 10, 900, 3])
            .chain((0..1000).rev())
            .chain((0..1000).step_by(13));
        for k in asks {
            assert_eq!(calls.shift_of(k), expected[k as usize], "call {k}");
        }
    }
}
