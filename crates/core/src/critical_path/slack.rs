//! Slack: how much an op could grow before the iteration would end later.
//!
//! The latest time each event of the iteration (an op's start and end, a call's start and
//! end) could happen without moving the iteration's end, worked out backwards over the
//! dependencies the path follows: an op's end holds its stream's next op and the
//! synchronising calls that waited for it; a collective's kernels end after the last
//! rank's start; a launch holds its op; a call holds the thread's next call (the CPU time
//! between them kept). An op's slack is its end's latest time less its end. Ops on the
//! path have none, beyond the µs of spacing before the next op.

use rustc_hash::FxHashMap;

use super::{Graph, OpAt};
use crate::trace::NONE;

/// A launch reaches the GPU at least this long after its call starts (as the replay
/// assumes), when the op waited for its stream rather than its launch.
const MIN_LAUNCH_LATENCY_NS: i64 = 5_000;
/// Two ops of a stream back to back are at least this far apart (as the replay assumes).
const MIN_SPACING_NS: i64 = 1_000;
/// Latest times are worked out in descending time order; events at the same instant may
/// need another pass.
const PASSES: usize = 3;
const UNBOUNDED: i64 = i64::MAX / 4;

/// The ops of one stream inside the window: `lo..hi`, with latest start and end times.
struct StreamTimes {
    lo: usize,
    latest_start: Vec<i64>,
    latest_end: Vec<i64>,
    /// The least time from each op's end to the next op's start: the spacing seen when
    /// the op held the next, else at most [`MIN_SPACING_NS`].
    spacing_after: Vec<i64>,
}

struct ThreadTimes {
    lo: usize,
    latest_start: Vec<i64>,
    latest_end: Vec<i64>,
}

/// op → (synchronising call's thread, call, the time its return takes after the last op
/// it waited for).
type SyncWaiters = FxHashMap<OpAt, Vec<(usize, usize, i64)>>;
/// op → the ops of other streams that waited for it.
type EventWaiters = FxHashMap<OpAt, Vec<OpAt>>;

/// What each event's latest time depends on, built once per window.
#[derive(Default)]
struct Dependencies {
    /// (thread, call) → the op it launched.
    launched: FxHashMap<(usize, usize), OpAt>,
    waiters: SyncWaiters,
    event_waiters: EventWaiters,
    /// A synchronising call's own time: its return after the last op it waited for (or
    /// all of it, when it waited for none).
    sync_own: FxHashMap<(usize, usize), i64>,
}

#[derive(Clone, Copy)]
enum Event {
    OpStart(usize, usize, usize),
    OpEnd(usize, usize, usize),
    CallStart(usize, usize),
    CallEnd(usize, usize),
}

/// The slack of every op that lies inside `[start, end]`: (device, stream, op) → ns.
pub struct Slack {
    streams: Vec<Vec<StreamTimes>>,
}

impl Slack {
    /// The slack of op `(d, s, i)`, if it lies inside the window.
    pub fn of(&self, graph: &Graph, d: usize, s: usize, i: usize) -> Option<i64> {
        let st = self.streams.get(d)?.get(s)?;
        let j = i.checked_sub(st.lo)?;
        let latest = *st.latest_end.get(j)?;
        let end = graph.trace.devices[d].streams[s].ops.end[i];
        Some((latest - end).max(0))
    }
}

/// Works out the latest times of the window's events.
pub fn slack(graph: &Graph, start: i64, end: i64) -> Slack {
    let trace = graph.trace;
    let mut streams: Vec<Vec<StreamTimes>> = trace
        .devices
        .iter()
        .map(|d| {
            d.streams
                .iter()
                .map(|s| {
                    let ops = &s.ops;
                    let lo = ops.start.partition_point(|&x| x < start);
                    let mut hi = ops.start.partition_point(|&x| x <= end);
                    while hi > lo && ops.end[hi - 1] > end {
                        hi -= 1;
                    }
                    StreamTimes {
                        lo,
                        latest_start: vec![UNBOUNDED; hi - lo],
                        latest_end: vec![UNBOUNDED; hi - lo],
                        spacing_after: vec![0; hi - lo],
                    }
                })
                .collect()
        })
        .collect();
    let mut threads: Vec<ThreadTimes> = trace
        .threads
        .iter()
        .map(|th| {
            let lo = th.api.start.partition_point(|&x| x < start);
            let hi = th.api.start.partition_point(|&x| x <= end);
            ThreadTimes {
                lo,
                latest_start: vec![UNBOUNDED; hi - lo],
                latest_end: vec![UNBOUNDED; hi - lo],
            }
        })
        .collect();
    // What each call launched, and what each synchronising call waited for, inside.
    let mut deps = Dependencies::default();
    let mut events: Vec<(i64, Event)> = Vec::new();
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let st = &streams[d][s];
            let ops = &stream.ops;
            for i in st.lo..st.lo + st.latest_end.len() {
                events.push((ops.start[i], Event::OpStart(d, s, i)));
                events.push((ops.end[i], Event::OpEnd(d, s, i)));
                let (th, k) = (ops.launch_thread[i], ops.launch_call[i]);
                if th != NONE && k != NONE {
                    deps.launched.insert((th as usize, k as usize), (d, s, i));
                }
            }
        }
    }
    // op → the ops of other streams that waited for it (an event, as the path takes it);
    // and the spacing each op keeps before the next of its stream.
    for &(_, e) in &events {
        let Event::OpStart(d, s, i) = e else {
            continue;
        };
        let hold = graph.hold_of(d, s, i);
        if let super::Hold::Event(s2, j, _) = hold {
            deps.event_waiters
                .entry((d, s2, j))
                .or_default()
                .push((d, s, i));
        }
        let st = &mut streams[d][s];
        if i > st.lo {
            let ops = &trace.devices[d].streams[s].ops;
            let gap = (ops.start[i] - ops.end[i - 1]).max(0);
            st.spacing_after[i - 1 - st.lo] = match hold {
                super::Hold::Previous(..) => gap,
                _ => gap.min(MIN_SPACING_NS),
            };
        }
    }
    // op → (sync thread, call, the time its return takes after the last op it waited for)
    for (t, th) in trace.threads.iter().enumerate() {
        let tt = &threads[t];
        for k in tt.lo..tt.lo + tt.latest_end.len() {
            events.push((th.api.start[k], Event::CallStart(t, k)));
            events.push((th.api.end[k], Event::CallEnd(t, k)));
            if graph.is_sync(th.api.name[k]) {
                let waited: Vec<(usize, usize, usize)> = crate::trace::launches::waited_ops(
                    trace,
                    &graph.launched[t],
                    k as u32,
                    th.api.end[k],
                )
                .collect();
                let observed = waited
                    .iter()
                    .map(|&(d, s, i)| trace.devices[d].streams[s].ops.end[i])
                    .max()
                    .unwrap_or(i64::MIN)
                    .max(th.api.start[k]);
                let own = th.api.end[k] - observed;
                deps.sync_own.insert((t, k), own);
                for op in waited {
                    deps.waiters.entry(op).or_default().push((t, k, own));
                }
            }
        }
    }
    events.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
    for _ in 0..PASSES {
        let mut changed = false;
        for &(_, e) in &events {
            changed |= relax(graph, &mut streams, &mut threads, &deps, end, e);
        }
        if !changed {
            break;
        }
    }
    Slack { streams }
}

fn op_times(streams: &[Vec<StreamTimes>], d: usize, s: usize, i: usize) -> Option<(i64, i64)> {
    let st = &streams[d][s];
    let j = i.checked_sub(st.lo)?;
    Some((*st.latest_start.get(j)?, st.latest_end[j]))
}

fn call_times(threads: &[ThreadTimes], t: usize, k: usize) -> Option<(i64, i64)> {
    let tt = &threads[t];
    let j = k.checked_sub(tt.lo)?;
    Some((*tt.latest_start.get(j)?, tt.latest_end[j]))
}

/// Sets an event's latest time from those of what depends on it; says if it changed.
fn relax(
    graph: &Graph,
    streams: &mut [Vec<StreamTimes>],
    threads: &mut [ThreadTimes],
    deps: &Dependencies,
    end: i64,
    e: Event,
) -> bool {
    let trace = graph.trace;
    match e {
        Event::OpEnd(d, s, i) => {
            let mut latest = end;
            if let Some((next_start, _)) = op_times(streams, d, s, i + 1) {
                let spacing = streams[d][s].spacing_after[i - streams[d][s].lo];
                latest = latest.min(next_start.saturating_sub(spacing));
            }
            for &(d2, s2, i2) in deps.event_waiters.get(&(d, s, i)).into_iter().flatten() {
                if let Some((waiter_start, _)) = op_times(streams, d2, s2, i2) {
                    latest = latest.min(waiter_start);
                }
            }
            for &(t, k, ret) in deps.waiters.get(&(d, s, i)).into_iter().flatten() {
                if let Some((_, call_end)) = call_times(threads, t, k) {
                    latest = latest.min(call_end.saturating_sub(ret));
                }
            }
            let lo = streams[d][s].lo;
            set(&mut streams[d][s].latest_end, i - lo, latest)
        }
        Event::OpStart(d, s, i) => {
            let ops = &trace.devices[d].streams[s].ops;
            let latest = match graph.collective_of(d, s, i) {
                Some(group) => {
                    let last = group
                        .iter()
                        .map(|&(d, s, i)| trace.devices[d].streams[s].ops.start[i])
                        .max()
                        .unwrap_or(ops.start[i]);
                    // Every kernel of the collective ends its transfer after the last start.
                    group
                        .iter()
                        .filter_map(|&(d2, s2, i2)| {
                            let (_, le) = op_times(streams, d2, s2, i2)?;
                            let transfer = trace.devices[d2].streams[s2].ops.end[i2] - last;
                            Some(le.saturating_sub(transfer.max(0)))
                        })
                        .min()
                        .unwrap_or(UNBOUNDED)
                }
                None => {
                    let (_, le) = op_times(streams, d, s, i).expect("inside");
                    le.saturating_sub(ops.end[i] - ops.start[i])
                }
            };
            let lo = streams[d][s].lo;
            set(&mut streams[d][s].latest_start, i - lo, latest)
        }
        Event::CallStart(t, k) => {
            let api = &trace.threads[t].api;
            let (_, call_end) = call_times(threads, t, k).expect("inside");
            let own = deps
                .sync_own
                .get(&(t, k))
                .copied()
                .unwrap_or(api.end[k] - api.start[k]);
            let mut latest = call_end.saturating_sub(own);
            if let Some(&(d, s, i)) = deps.launched.get(&(t, k)) {
                let ops = &trace.devices[d].streams[s].ops;
                let observed = ops.start[i] - api.start[k];
                let launch_held = i == 0 || api.start[k] >= ops.end[i - 1];
                let lag = if launch_held {
                    observed
                } else {
                    observed.min(MIN_LAUNCH_LATENCY_NS)
                };
                if let Some((op_start, _)) = op_times(streams, d, s, i) {
                    latest = latest.min(op_start.saturating_sub(lag.max(0)));
                }
            }
            let lo = threads[t].lo;
            set(&mut threads[t].latest_start, k - lo, latest)
        }
        Event::CallEnd(t, k) => {
            let api = &trace.threads[t].api;
            let latest = match call_times(threads, t, k + 1) {
                // The CPU time between the two calls is work: it moves with them.
                Some((next_start, _)) => next_start.saturating_sub(api.start[k + 1] - api.end[k]),
                None => UNBOUNDED,
            };
            let lo = threads[t].lo;
            set(&mut threads[t].latest_end, k - lo, latest)
        }
    }
}

fn set(slot: &mut [i64], j: usize, value: i64) -> bool {
    let value = value.min(UNBOUNDED);
    let changed = slot[j] != value;
    slot[j] = value;
    changed
}
