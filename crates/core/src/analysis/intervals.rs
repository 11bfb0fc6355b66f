//! Interval arithmetic every analysis uses: which ops of a stream touch a window, and a
//! sweep over the sorted endpoints of many intervals.

use crate::trace::{Device, OpKind, Stream};

/// Half-open time window `[start, end)` in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    pub start: i64,
    pub end: i64,
}

impl Window {
    pub fn new(start: i64, end: i64) -> Self {
        Self {
            start,
            end: end.max(start),
        }
    }

    pub fn len(&self) -> i64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// The part of `[s, e)` inside the window, if any.
    pub fn clip(&self, s: i64, e: i64) -> Option<(i64, i64)> {
        let (s, e) = (s.max(self.start), e.min(self.end));
        (e > s).then_some((s, e))
    }
}

/// The device window of analysis-definitions.md: first kernel start to last kernel end.
pub fn device_window(device: &Device) -> Option<Window> {
    device.kernel_window().map(|(s, e)| Window::new(s, e))
}

/// Indices of the ops of `stream` that overlap `window`. Ops are sorted by start; an op
/// that starts before the window can still reach into it, so the search backs up by the
/// stream's longest op.
pub fn ops_touching(stream: &Stream, window: Window) -> std::ops::Range<usize> {
    let ops = &stream.ops;
    let first = ops
        .start
        .partition_point(|&s| s < window.start.saturating_sub(stream.longest_op_ns));
    let last = ops.start.partition_point(|&s| s < window.end);
    first..last.max(first)
}

/// The ops of `stream` in `window` (every op without one), each as (its index, its time
/// inside the window, whether the window's edge cut it): a table of a selection counts what
/// lies in it, as the breakdown does.
pub fn ops_within(
    stream: &Stream,
    window: Option<Window>,
) -> impl Iterator<Item = (usize, i64, bool)> + '_ {
    let ops = &stream.ops;
    let range = match window {
        Some(w) => ops_touching(stream, w),
        None => 0..ops.len(),
    };
    range.filter_map(move |i| {
        let (s, e) = (ops.start[i], ops.end[i]);
        match window {
            None => Some((i, e - s, false)),
            Some(w) if e > w.start && s < w.end => {
                Some((i, e.min(w.end) - s.max(w.start), s < w.start || e > w.end))
            }
            // An op of no length at the window's start is in it.
            Some(w) if s == e && s == w.start => Some((i, 0, false)),
            Some(_) => None,
        }
    })
}

/// Indices of the ops of `stream` that start inside `window` (all of them without one).
pub fn ops_starting_in(
    stream: &Stream,
    window: Option<Window>,
) -> impl Iterator<Item = usize> + '_ {
    let range = match window {
        Some(w) => ops_touching(stream, w),
        None => 0..stream.ops.len(),
    };
    range.filter(move |&i| window.is_none_or(|w| stream.ops.start[i] >= w.start))
}

/// Class of an op for the state sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Compute = 0,
    Nccl = 1,
    Memory = 2,
}

impl From<OpKind> for Class {
    fn from(kind: OpKind) -> Self {
        match kind {
            // A graph execution's kernels are unknown: compute (NCCL inside it cannot be
            // told apart).
            OpKind::Compute | OpKind::Graph => Class::Compute,
            OpKind::Nccl => Class::Nccl,
            OpKind::Memcpy | OpKind::Memset => Class::Memory,
        }
    }
}

/// Boundary events (time, +1 open / -1 close, class) of every op of `device` clipped to
/// `window`, sorted by time.
pub fn boundary_events(device: &Device, window: Window) -> Vec<(i64, i8, Class)> {
    let touching: usize = device
        .streams
        .iter()
        .map(|s| ops_touching(s, window).len())
        .sum();
    let mut events = Vec::with_capacity(2 * touching);
    for stream in &device.streams {
        let ops = &stream.ops;
        for i in ops_touching(stream, window) {
            if let Some((s, e)) = window.clip(ops.start[i], ops.end[i]) {
                let class = Class::from(ops.kind[i]);
                events.push((s, 1, class));
                events.push((e, -1, class));
            }
        }
    }
    // Ops of a stream follow each other, so the events are one sorted run per stream: a
    // stable sort merges the runs in O(n log k).
    events.sort_by_key(|&(t, d, c)| (t, d, c as u8));
    events
}
