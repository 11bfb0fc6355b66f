//! The recorded order of events: the streams' ops and the threads' calls merged, and kept
//! packed so that every replay of a trace walks it again for two bytes an event.

use super::*;

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

/// The recorded order as the source of each event, two bytes an event (8.8 M events of the
/// realistic large trace: 18 MB, against 71 MB for the events themselves): a cursor per
/// source gives each event back.
pub(super) struct PackedOrder {
    pub(super) sources: Vec<Source>,
    pub(super) ids: Vec<u16>,
}

impl PackedOrder {
    pub(super) fn new(trace: &Trace, sync_names: &[bool]) -> Option<Self> {
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
        let ids = merged_sources(trace, sync_names, &sources);
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
pub(super) fn merged_sources(trace: &Trace, sync_names: &[bool], sources: &[Source]) -> Vec<u16> {
    use std::cmp::Reverse;
    use std::collections::binary_heap::{BinaryHeap, PeekMut};
    // Per source: the index of its next event (for synchronising ends, the next call
    // looked at).
    let mut cursor = vec![0u32; sources.len()];
    // The time of source `i`'s event at `cursor[i]` on, moving `cursor[i]` to it.
    let next_time = |i: usize, cursor: &mut [u32]| -> Option<i64> {
        let k = cursor[i] as usize;
        match sources[i] {
            Source::Ops { device, stream } => trace.devices[device as usize].streams
                [stream as usize]
                .ops
                .start
                .get(k)
                .copied(),
            Source::Calls { thread } => trace.threads[thread as usize].api.start.get(k).copied(),
            Source::SyncEnds { thread } => {
                let api = &trace.threads[thread as usize].api;
                let k = (k..api.len()).find(|&k| sync_names[api.name[k] as usize])?;
                cursor[i] = k as u32;
                Some(api.end[k])
            }
        }
    };
    let rank = |i: usize| -> u32 {
        let kind = match sources[i] {
            Source::Ops { .. } => 0,
            Source::SyncEnds { .. } => 1,
            Source::Calls { .. } => 2,
        };
        (kind << 16) | i as u32
    };
    let mut heap: BinaryHeap<Reverse<(i64, u32)>> = (0..sources.len())
        .filter_map(|i| Some(Reverse((next_time(i, &mut cursor)?, rank(i)))))
        .collect();
    let events = trace.devices.iter().map(|d| d.op_count()).sum::<usize>()
        + trace.threads.iter().map(|t| t.api.len()).sum::<usize>();
    let mut ids = Vec::with_capacity(events);
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((_, r)) = *top;
        let i = (r & 0xFFFF) as usize;
        ids.push(i as u16);
        cursor[i] += 1;
        match next_time(i, &mut cursor) {
            Some(t) => *top = Reverse((t, r)),
            None => {
                PeekMut::pop(top);
            }
        }
    }
    ids
}

/// Ranges starting before a call looked at for the ones around it.
pub(super) const RANGES_LOOKED_AT: usize = 64;

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
