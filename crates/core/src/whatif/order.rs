//! The recorded order of events: the streams' ops and the threads' calls merged, and kept
//! packed so that every replay of a trace walks it again for two bytes an event.

use crate::trace::Trace;
use rayon::prelude::*;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    // At equal times: ops start before a synchronising call waiting for them ends, which
    // ends before its thread's next call starts.
    OpStart { device: u32, stream: u32, op: u32 },
    SyncEnd { thread: u32, call: u32 },
    CallStart { thread: u32, call: u32 },
}

/// Where the recorded order's events come from, each source's events in an order of their
/// own: a stream's ops by start, a thread's calls by start, its synchronising calls in
/// call order (see [`RecordedOrder`]).
#[derive(Clone, Copy)]
pub(super) enum Source {
    Ops { device: u32, stream: u32 },
    Calls { thread: u32 },
    SyncEnds { thread: u32 },
}

/// The recorded order as the source of each event, two bytes an event (a quarter of what
/// the events' own indices would take): a cursor per source gives each event back.
pub(super) struct PackedOrder {
    pub(super) sources: Vec<Source>,
    pub(super) ids: Vec<u16>,
}

impl PackedOrder {
    /// `sync_calls` as in [`Prepared`]: each thread's synchronising calls.
    pub(super) fn new(trace: &Trace, sync_calls: &[Vec<u32>]) -> Option<Self> {
        let mut sources = Vec::new();
        for (d, device) in trace.devices.iter().enumerate() {
            for s in 0..device.streams.len() {
                sources.push(Source::Ops {
                    device: d as u32,
                    stream: s as u32,
                });
            }
        }
        for t in 0..trace.threads.len() as u32 {
            sources.push(Source::Calls { thread: t });
            sources.push(Source::SyncEnds { thread: t });
        }
        if sources.len() > usize::from(u16::MAX) + 1 {
            return None;
        }
        let ids = merged_sources(trace, sync_calls, &sources);
        Some(Self { sources, ids })
    }

    /// The events again, in recorded order; `sync_calls` as in [`Prepared`].
    pub(super) fn events<'a>(
        &'a self,
        sync_calls: &'a [Vec<u32>],
    ) -> impl Iterator<Item = Event> + 'a {
        let mut cursors = vec![0u32; self.sources.len()];
        self.ids.iter().map(move |&id| {
            let next = &mut cursors[id as usize];
            let n = *next;
            *next += 1;
            match self.sources[id as usize] {
                Source::Ops { device, stream } => Event::OpStart {
                    device,
                    stream,
                    op: n,
                },
                Source::Calls { thread } => Event::CallStart { thread, call: n },
                Source::SyncEnds { thread } => Event::SyncEnd {
                    thread,
                    call: sync_calls[thread as usize][n as usize],
                },
            }
        })
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// The source of every event, in [`RecordedOrder`]'s order: the sources' events merged,
/// each source already in its own order. A heap entry is a source's next event as (time,
/// rank): the rank (the event's kind, then the source) orders equal times as [`Event`]'s
/// order does, since sources are numbered by device and stream, and by thread. A source
/// whose next event is still the earliest stays on top: one sift, not a pop and a push.
///
/// Where every source's times come in order (always, but for a thread whose
/// synchronising calls end out of call order), the run is cut at a few times and the
/// pieces merged side by side: what comes before a time comes before in the merge too.
pub(super) fn merged_sources(
    trace: &Trace,
    sync_calls: &[Vec<u32>],
    sources: &[Source],
) -> Vec<u16> {
    let events = trace.gpu_op_count() + trace.api_call_count();
    let pieces = if events >= MERGED_APART_PAST {
        rayon::current_num_threads() * 2
    } else {
        1
    };
    merged_in_pieces(trace, sync_calls, sources, pieces)
}

/// [`merged_sources`], cut in at most `pieces` pieces.
pub(super) fn merged_in_pieces(
    trace: &Trace,
    sync_calls: &[Vec<u32>],
    sources: &[Source],
    pieces: usize,
) -> Vec<u16> {
    let times = |i: usize| -> SourceTimes {
        match sources[i] {
            Source::Ops { device, stream } => SourceTimes::Plain(
                &trace.devices[device as usize].streams[stream as usize]
                    .ops
                    .start,
            ),
            Source::Calls { thread } => {
                SourceTimes::Plain(&trace.threads[thread as usize].api.start)
            }
            Source::SyncEnds { thread } => SourceTimes::Picked(
                &trace.threads[thread as usize].api.end,
                &sync_calls[thread as usize],
            ),
        }
    };
    let all: Vec<SourceTimes> = (0..sources.len()).map(times).collect();
    let events: usize = all.iter().map(SourceTimes::len).sum();
    // Cut at the times that split the busiest source evenly.
    let pieces = if all.iter().all(SourceTimes::is_sorted) {
        pieces.max(1)
    } else {
        1
    };
    let busiest = (0..all.len()).max_by_key(|&i| all[i].len());
    let cuts: Vec<i64> = busiest
        .map(|b| {
            let n = all[b].len();
            (1..pieces).map(|j| all[b].at(n * j / pieces)).collect()
        })
        .unwrap_or_default();
    // Per piece, each source's first event in it; the last piece ends at each's end.
    let mut bounds: Vec<Vec<usize>> = vec![vec![0; all.len()]];
    for &t in &cuts {
        bounds.push(all.iter().map(|s| s.before(t)).collect());
    }
    bounds.push(all.iter().map(SourceTimes::len).collect());
    let mut ids = vec![0u16; events];
    let mut rest = &mut ids[..];
    let mut outs = Vec::new();
    for w in bounds.windows(2) {
        let n: usize = w[1].iter().zip(&w[0]).map(|(b, a)| b - a).sum();
        let (piece, after) = rest.split_at_mut(n);
        outs.push((piece, &w[0], &w[1]));
        rest = after;
    }
    // The rank orders equal times: the event's kind, then its source.
    let rank: Vec<u32> = (0..sources.len())
        .map(|i| {
            let kind = match sources[i] {
                Source::Ops { .. } => 0,
                Source::SyncEnds { .. } => 1,
                Source::Calls { .. } => 2,
            };
            (kind << 16) | i as u32
        })
        .collect();
    outs.into_par_iter()
        .for_each(|(out, from, to)| merge_piece(&all, &rank, from, to, out));
    ids
}

/// Events merged apart in pieces past this many (below, one heap is quicker than the cuts).
const MERGED_APART_PAST: usize = 1 << 20;

/// One source's event times, by position.
enum SourceTimes<'a> {
    Plain(&'a [i64]),
    /// `times[k]` for each `k` of the list.
    Picked(&'a [i64], &'a [u32]),
}

impl SourceTimes<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Plain(t) => t.len(),
            Self::Picked(_, k) => k.len(),
        }
    }

    fn at(&self, n: usize) -> i64 {
        match self {
            Self::Plain(t) => t[n],
            Self::Picked(t, k) => t[k[n] as usize],
        }
    }

    fn is_sorted(&self) -> bool {
        match self {
            Self::Plain(t) => t.is_sorted(),
            Self::Picked(t, k) => k.windows(2).all(|w| t[w[0] as usize] <= t[w[1] as usize]),
        }
    }

    /// How many events come before time `t` (the times sorted).
    fn before(&self, t: i64) -> usize {
        match self {
            Self::Plain(times) => times.partition_point(|&x| x < t),
            Self::Picked(times, k) => k.partition_point(|&i| times[i as usize] < t),
        }
    }
}

/// Each source's events `from[i]..to[i]` merged into `out` (which holds exactly them),
/// equal times in the order of `rank`.
fn merge_piece(all: &[SourceTimes], rank: &[u32], from: &[usize], to: &[usize], out: &mut [u16]) {
    use std::cmp::Reverse;
    use std::collections::binary_heap::{BinaryHeap, PeekMut};
    let mut cursor = from.to_vec();
    let mut heap: BinaryHeap<Reverse<(i64, u32)>> = (0..all.len())
        .filter(|&i| cursor[i] < to[i])
        .map(|i| Reverse((all[i].at(cursor[i]), rank[i])))
        .collect();
    let mut written = 0;
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((_, r)) = *top;
        let i = (r & 0xFFFF) as usize;
        out[written] = i as u16;
        written += 1;
        cursor[i] += 1;
        if cursor[i] < to[i] {
            *top = Reverse((all[i].at(cursor[i]), r));
        } else {
            PeekMut::pop(top);
        }
    }
    debug_assert_eq!(written, out.len());
}

/// Every event in the order it was recorded: the streams' ops and the threads' calls (and
/// their synchronising calls' ends) are each sorted already, so they are merged, a heap
/// holding the next event of each.
pub(super) struct RecordedOrder<'a> {
    pub(super) trace: &'a Trace,
    pub(super) sync_names: &'a [bool],
    pub(super) heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, Event)>>,
}

impl<'a> RecordedOrder<'a> {
    pub(super) fn new(trace: &'a Trace, sync_names: &'a [bool]) -> Self {
        let mut order = Self {
            trace,
            sync_names,
            heap: Default::default(),
        };
        for (d, dev) in trace.devices.iter().enumerate() {
            for s in 0..dev.streams.len() {
                order.push_op(d as u32, s as u32, 0);
            }
        }
        for t in 0..trace.threads.len() {
            order.push_call(t as u32, 0);
            order.push_sync_end(t as u32, 0);
        }
        order
    }

    pub(super) fn push_op(&mut self, device: u32, stream: u32, op: u32) {
        let ops = &self.trace.devices[device as usize].streams[stream as usize].ops;
        if let Some(&t) = ops.start.get(op as usize) {
            let e = Event::OpStart { device, stream, op };
            self.heap.push(std::cmp::Reverse((t, e)));
        }
    }

    pub(super) fn push_call(&mut self, thread: u32, call: u32) {
        let api = &self.trace.threads[thread as usize].api;
        if let Some(&t) = api.start.get(call as usize) {
            self.heap
                .push(std::cmp::Reverse((t, Event::CallStart { thread, call })));
        }
    }

    /// The end of the thread's next synchronising call from `call` on.
    pub(super) fn push_sync_end(&mut self, thread: u32, call: u32) {
        let api = &self.trace.threads[thread as usize].api;
        if let Some(k) = (call as usize..api.len()).find(|&k| self.sync_names[api.name[k] as usize])
        {
            let e = Event::SyncEnd {
                thread,
                call: k as u32,
            };
            self.heap.push(std::cmp::Reverse((api.end[k], e)));
        }
    }
}

impl Iterator for RecordedOrder<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let std::cmp::Reverse((_, e)) = self.heap.pop()?;
        match e {
            Event::OpStart { device, stream, op } => self.push_op(device, stream, op + 1),
            Event::CallStart { thread, call } => self.push_call(thread, call + 1),
            Event::SyncEnd { thread, call } => self.push_sync_end(thread, call + 1),
        }
        Some(e)
    }
}
