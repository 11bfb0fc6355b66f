//! What happened on one CPU thread: CUDA API calls and NVTX ranges and marks.
//!
//! Invariants: every list is sorted by start; `end >= start`. Push/pop ranges carry their
//! nesting (`depth`, `parent`), computed once at load.

use super::columns::columns;
use super::ops::NONE;
use super::strings::StrId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[repr(u8)]
pub enum ApiClass {
    Runtime = 0,
    Driver = 1,
}

columns! {
    /// CUDA runtime and driver calls of one thread.
    #[derive(Debug, Default, Clone)]
    pub struct ApiCalls {
        pub start: Vec<i64>,
        pub end: Vec<i64>,
        pub name: Vec<StrId>,
        pub correlation_id: Vec<u32>,
        pub class: Vec<ApiClass>,
    }
}

impl ApiCalls {
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

columns! {
    /// OS runtime calls of one thread (`OSRT_API`: `read`, `pthread_cond_wait`, `futex`,
    /// `poll`, …), traced by `nsys profile -t osrt`: where a launching thread sat when it did
    /// not launch.
    #[derive(Debug, Default, Clone)]
    pub struct OsCalls {
        pub start: Vec<i64>,
        pub end: Vec<i64>,
        pub name: Vec<StrId>,
        pub return_value: Vec<i64>,
        /// Each call's backtrace (its innermost frame's node in [`crate::trace::Stacks`]), or
        /// `NONE`; empty when the export has no backtraces.
        pub stack: Vec<u32>,
    }
}

/// A thread's time on a CPU: scheduled in at `start`, out at `end`, on core `cpu`; sorted,
/// disjoint.
#[derive(Debug, Default, Clone)]
pub struct Scheduling {
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    pub cpu: Vec<u16>,
}

impl Scheduling {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The longest time on a CPU, for searches by start.
    pub fn longest_ns(&self) -> i64 {
        (0..self.len())
            .map(|i| self.end[i] - self.start[i])
            .max()
            .unwrap_or(0)
    }
}

/// Whether an OS runtime call blocks its thread until something happens elsewhere (I/O,
/// another thread, a timer): what a launching thread sits in when it does not launch.
pub fn is_blocking_os_call(name: &str) -> bool {
    const BLOCKING: &[&str] = &[
        "read",
        "pread",
        "readv",
        "fread",
        "getc",
        "fgets",
        "write",
        "pwrite",
        "fwrite",
        "poll",
        "ppoll",
        "select",
        "pselect",
        "epoll_wait",
        "epoll_pwait",
        "futex",
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "pthread_join",
        "pthread_mutex_lock",
        "pthread_rwlock_rdlock",
        "pthread_rwlock_wrlock",
        "sem_wait",
        "sem_timedwait",
        "nanosleep",
        "clock_nanosleep",
        "usleep",
        "sleep",
        "recv",
        "recvfrom",
        "recvmsg",
        "accept",
        "accept4",
        "connect",
        "wait",
        "waitpid",
        "open",
        "open64",
        "fsync",
    ];
    BLOCKING.contains(&name)
}

impl OsCalls {
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Call `i`'s backtrace, if it has one.
    pub fn stack_of(&self, i: usize) -> Option<u32> {
        self.stack.get(i).copied().filter(|&s| s != super::NONE)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[repr(u8)]
pub enum RangeKind {
    /// nvtxRangePush/Pop: properly nested on its thread.
    PushPop = 0,
    /// nvtxRangeStart/End: may overlap others and end on another thread; `depth` is a lane.
    StartEnd = 1,
}

columns! {
    /// NVTX ranges of one thread (the thread that opened them).
    #[derive(Debug, Default, Clone)]
    pub struct NvtxRanges {
        pub start: Vec<i64>,
        pub end: Vec<i64>,
        pub text: Vec<StrId>,
        pub kind: Vec<RangeKind>,
        /// Nesting depth (0 = outermost) for push/pop; a free lane for start/end ranges.
        pub depth: Vec<u16>,
        /// Index of the enclosing push/pop range, or [`NONE`].
        pub parent: Vec<u32>,
        /// The colour given, as an index into `palette` (0: none): a byte a range, not the
        /// ARGB's four, over tens of millions of ranges (docs/benchmarks.md, "Figures behind the code").
        pub color: Vec<u8>,
        // A range's NVTX domain is not kept (4 bytes a range that nothing read, over tens of
        // millions of ranges); the loader reads it to find NCCL's payloads, and
        // `Trace::nvtx_domains` names the domains.
    }
    others {
        /// The ARGB colours the ranges use, `palette[0]` = 0 (none) once any is given; at most
        /// 256 (a further colour takes the nearest one kept: colours only tell ranges apart).
        pub palette: Vec<u32>,
    }
}

impl NvtxRanges {
    /// Range `i`'s ARGB colour, 0 when none was given.
    pub fn argb(&self, i: usize) -> u32 {
        self.palette
            .get(self.color[i] as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Appends a range's colour (ARGB, 0 for none).
    pub fn push_color(&mut self, argb: u32) {
        let index = self.palette_index(argb);
        self.color.push(index);
    }

    /// Appends the colours of another set of ranges, with their palette.
    pub fn extend_colors(&mut self, color: &[u8], palette: &[u32]) {
        if palette.len() <= 1 {
            self.color.extend(std::iter::repeat_n(0, color.len()));
            return;
        }
        let map: Vec<u8> = palette.iter().map(|&c| self.palette_index(c)).collect();
        self.color.extend(
            color
                .iter()
                .map(|&c| map.get(c as usize).copied().unwrap_or(0)),
        );
    }

    fn palette_index(&mut self, argb: u32) -> u8 {
        if argb == 0 {
            return 0;
        }
        if self.palette.is_empty() {
            self.palette.push(0);
        }
        if let Some(i) = self.palette.iter().position(|&c| c == argb) {
            return i as u8;
        }
        if self.palette.len() <= usize::from(u8::MAX) {
            self.palette.push(argb);
            return (self.palette.len() - 1) as u8;
        }
        let distance = |c: u32| {
            let (a, b) = (c.to_be_bytes(), argb.to_be_bytes());
            (1..4)
                .map(|k| (a[k] as i32 - b[k] as i32).pow(2))
                .sum::<i32>()
        };
        (1..self.palette.len())
            .min_by_key(|&i| distance(self.palette[i]))
            .unwrap_or(0) as u8
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Sorts by (start, longest first) so that a parent precedes its children, then
    /// computes `depth` and `parent` with a stack (push/pop) or greedy lanes (start/end).
    pub fn sort_and_nest(&mut self) {
        // Sorted as (start, -end, index) keys, not indices compared through the columns: an
        // export that lists a range when it ends has millions out of order, and a comparison
        // that reads two columns at random misses the cache every time. (The shared real
        // exports list them by start: no sort.)
        // Worked out again below: not reordered with the rows.
        self.depth.clear();
        self.parent.clear();
        let in_order = (1..self.len())
            .all(|i| (self.start[i - 1], -self.end[i - 1]) <= (self.start[i], -self.end[i]));
        if !in_order {
            let mut keys: Vec<(i64, i64, u32)> = (0..self.len())
                .map(|i| (self.start[i], -self.end[i], i as u32))
                .collect();
            keys.sort_unstable();
            let order: Vec<u32> = keys.into_iter().map(|k| k.2).collect();
            self.permute_rows(&order);
        }
        self.depth = vec![0; self.len()];
        self.parent = vec![NONE; self.len()];
        let mut open: Vec<u32> = Vec::new(); // push/pop stack
        let mut lanes_free_at: Vec<i64> = Vec::new(); // start/end lanes
        for i in 0..self.len() {
            let (start, end) = (self.start[i], self.end[i]);
            match self.kind[i] {
                RangeKind::PushPop => {
                    while let Some(&top) = open.last() {
                        if self.end[top as usize] > start
                            || (self.end[top as usize] == start
                                && self.start[top as usize] == start)
                        {
                            break;
                        }
                        open.pop();
                    }
                    // A child that outlives its parent (clock jitter) is still nested under it.
                    self.parent[i] = open.last().copied().unwrap_or(NONE);
                    self.depth[i] = open.len().min(u16::MAX as usize) as u16;
                    open.push(i as u32);
                }
                RangeKind::StartEnd => {
                    let lane = match lanes_free_at.iter().position(|&free| free <= start) {
                        Some(lane) => lane,
                        None => {
                            lanes_free_at.push(start);
                            lanes_free_at.len() - 1
                        }
                    };
                    lanes_free_at[lane] = end;
                    self.depth[i] = lane.min(u16::MAX as usize) as u16;
                }
            }
        }
        debug_assert!(
            (1..self.len())
                .all(|i| (self.start[i - 1], -self.end[i - 1]) <= (self.start[i], -self.end[i])),
            "ranges sorted by start, the longer first"
        );
        debug_assert!(
            (0..self.len()).all(|i| self.parent[i] == NONE || self.parent[i] < i as u32),
            "a parent comes before its children"
        );
    }

    /// The push/pop ranges that contain time `t`, outermost first.
    pub fn path_at(&self, t: i64) -> Vec<u32> {
        let mut r = self.innermost_at_index(self.start.partition_point(|&s| s <= t), t);
        let mut path = Vec::new();
        while r != NONE {
            path.push(r);
            r = self.parent[r as usize];
        }
        path.reverse();
        path
    }

    /// The innermost push/pop range that contains time `t` ([`NONE`] if none), for times
    /// asked in order: `from` is where the last time asked was found, the next found from
    /// there (a search of millions of ranges missed the cache at every probe). Its
    /// ancestors are up its `parent`s.
    pub fn innermost_at_from(&self, t: i64, from: &mut usize) -> u32 {
        *from = crate::sorted::partition_near(*from, self.start.len(), |r| self.start[r] <= t);
        self.innermost_at_index(*from, t)
    }

    /// The innermost push/pop range around all of `[a, b]` ([`NONE`] if none): every
    /// range around it is up its `parent`s, at any depth.
    pub fn enclosing(&self, a: i64, b: i64) -> u32 {
        let i = self.start.partition_point(|&s| s <= a);
        self.up_to_end(self.innermost_at_index(i, a), b)
    }

    /// [`Self::enclosing`] for spans asked in order of `a`, `from` kept between them (as
    /// [`Self::innermost_at_from`]'s).
    pub fn enclosing_from(&self, a: i64, b: i64, from: &mut usize) -> u32 {
        let r = self.innermost_at_from(a, from);
        self.up_to_end(r, b)
    }

    /// `r` or its first ancestor that lasts until `b`.
    fn up_to_end(&self, mut r: u32, b: i64) -> u32 {
        while r != NONE && self.end[r as usize] < b {
            r = self.parent[r as usize];
        }
        r
    }

    /// The ranges open at `t` (started before it, ending after), by start: the push/pop
    /// ones around it through their nesting, the start/end ones (not nested: they may
    /// overlap anything) by a pass over the ranges started before `t`, a byte each.
    pub fn open_at(&self, t: i64) -> Vec<usize> {
        let before = self.start.partition_point(|&x| x < t);
        let mut open: Vec<usize> = self
            .ancestors(self.enclosing(t, t))
            .map(|r| r as usize)
            .filter(|&i| self.start[i] < t && self.end[i] > t)
            .collect();
        open.extend(
            (0..before).filter(|&i| self.kind[i] == RangeKind::StartEnd && self.end[i] > t),
        );
        open.sort_unstable();
        open.dedup();
        open
    }

    /// `r` and every push/pop range around it, innermost first.
    pub fn ancestors(&self, r: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((r != NONE).then_some(r), |&r| {
            let p = self.parent[r as usize];
            (p != NONE).then_some(p)
        })
    }

    /// The innermost push/pop range containing `t`, `i` the number of ranges starting at
    /// or before it.
    fn innermost_at_index(&self, mut i: usize, t: i64) -> u32 {
        // The innermost candidate is the last push/pop range starting at or before t.
        while i > 0 {
            i -= 1;
            if self.kind[i] != RangeKind::PushPop {
                continue;
            }
            // Walk up from this range to the first ancestor that contains t.
            let mut r = i as u32;
            while r != NONE && self.end[r as usize] < t {
                r = self.parent[r as usize];
            }
            return r;
        }
        NONE
    }
}

/// Instantaneous NVTX marks of one thread.
#[derive(Debug, Default, Clone)]
pub struct NvtxMarks {
    pub time: Vec<i64>,
    pub text: Vec<StrId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(spans: &[(i64, i64)]) -> NvtxRanges {
        let mut r = NvtxRanges::default();
        // Written as nsys does, when each range ends: children before their parents.
        for &(s, e) in spans {
            r.start.push(s);
            r.end.push(e);
            r.text.push(0);
            r.kind.push(RangeKind::PushPop);
            r.push_color(0);
        }
        r
    }

    #[test]
    fn the_ranges_open_at_a_time_include_start_end_ones_opened_long_before() {
        let mut r = ranges(&[(10, 20), (30, 40), (0, 100), (120, 150), (110, 200)]);
        // A start/end range opened first and ended last, and one over by then.
        for (s, e) in [(5, 300), (6, 8)] {
            r.start.push(s);
            r.end.push(e);
            r.text.push(0);
            r.kind.push(RangeKind::StartEnd);
            r.push_color(0);
        }
        r.sort_and_nest();
        let spans = |open: Vec<usize>| -> Vec<(i64, i64)> {
            open.into_iter().map(|i| (r.start[i], r.end[i])).collect()
        };
        assert_eq!(spans(r.open_at(35)), [(0, 100), (5, 300), (30, 40)]);
        assert_eq!(spans(r.open_at(130)), [(5, 300), (110, 200), (120, 150)]);
        assert_eq!(spans(r.open_at(250)), [(5, 300)]);
        assert_eq!(spans(r.open_at(0)), []);
    }

    #[test]
    fn colours_are_kept_as_palette_bytes_and_merged() {
        let mut a = NvtxRanges::default();
        for argb in [0, 0xFF00_FF00, 0, 0xFF00_FF00, 0xFFFF_0000] {
            a.push_color(argb);
        }
        assert_eq!(
            (0..5).map(|i| a.argb(i)).collect::<Vec<_>>(),
            [0, 0xFF00_FF00, 0, 0xFF00_FF00, 0xFFFF_0000]
        );
        assert_eq!(a.palette.len(), 3);
        // Another set with its own palette, in another order.
        let mut b = NvtxRanges::default();
        for argb in [0xFF00_00FF, 0xFFFF_0000, 0] {
            b.push_color(argb);
        }
        a.extend_colors(&b.color, &b.palette);
        assert_eq!(
            (5..8).map(|i| a.argb(i)).collect::<Vec<_>>(),
            [0xFF00_00FF, 0xFFFF_0000, 0]
        );
        // Past 256 colours a new one takes the nearest kept.
        let mut many = NvtxRanges::default();
        for red in 1..=255u32 {
            many.push_color(0xFF00_0000 | red << 16);
        }
        many.push_color(0xFFFE_0001);
        assert_eq!(many.palette.len(), 256);
        assert_eq!(many.argb(0), 0xFF01_0000);
        assert_eq!(many.argb(255), 0xFFFE_0000);
    }

    #[test]
    fn ranges_written_when_they_end_are_sorted_and_nested() {
        let mut r = ranges(&[(10, 20), (30, 40), (0, 100), (120, 150), (110, 200)]);
        r.sort_and_nest();
        assert_eq!(r.start, vec![0, 10, 30, 110, 120]);
        assert_eq!(r.depth, vec![0, 1, 1, 0, 1]);
        assert_eq!(r.parent, vec![NONE, 0, 0, NONE, 3]);
    }

    #[test]
    fn the_path_at_a_time_is_its_ranges_outermost_first() {
        let mut r = ranges(&[(10, 20), (30, 40), (0, 100)]);
        r.sort_and_nest();
        assert_eq!(r.path_at(15), vec![0, 1]);
        assert_eq!(r.path_at(25), vec![0]);
        assert_eq!(r.path_at(100), vec![0], "an end is inside");
        assert!(r.path_at(101).is_empty());
    }
}
