//! The replay itself: every event in recorded order, each op's and call's new time from
//! what it waits for.

use super::Prepared;
use super::change::Change;
use super::cuts::{
    add_spans, all_gaps, capture_spans, cpu_cuts, dropped_copies, host_gap_cuts, in_spans,
    removed_syncs, stall_spans,
};
use super::order::{Event, PackedOrder, RecordedOrder};
use super::replayed::{KernelScale, NcclOrder, ThreadCalls};
use crate::analysis::gaps::Gap;
use crate::sorted::Cursor;
use crate::trace::launches::WaitedCursor;
use crate::trace::{NONE, OpKind, Trace};

/// New times of every op and call, indexed like the trace.
pub(super) struct Times {
    /// Every op's replayed start: kept only when the trace is rebuilt (a replay for spans
    /// alone needs the two below, and replays run side by side: each would hold a start
    /// per op).
    pub(super) op_start: Option<Vec<Vec<Vec<i64>>>>,
    pub(super) op_end: Vec<Vec<Vec<i64>>>,
    /// Per thread, its calls' replayed times, kept as how far they moved (see
    /// [`ThreadCalls`]).
    pub(super) calls: Vec<ThreadCalls>,
    /// Per thread, the replayed end of each synchronising call, in the order of
    /// [`Prepared::sync_calls`]: kept only when the trace is rebuilt (a run that
    /// synchronises after every collective has 800 k of them).
    pub(super) sync_end: Option<Vec<Vec<i64>>>,
    /// Per thread, the CPU spans the change removes as stalls.
    pub(super) stalls: Vec<Vec<(i64, i64)>>,
    /// Per device, the earliest replayed kernel start (`i64::MAX` before any).
    pub(super) first_kernel_start: Vec<i64>,
    /// Per collective, the latest replayed start of its kernels so far.
    pub(super) latest_start: Vec<i64>,
}

/// What a replay keeps of every op.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// Starts and ends: the trace is rebuilt from them.
    Starts,
    /// Ends only: the spans are all that is wanted.
    Ends,
}

pub(super) const UNSET: i64 = i64::MIN;
/// Events between two progress reports.
pub(super) const PROGRESS_EVERY: usize = 1 << 18;

/// Per thread, the synchronising calls a change removes (see [`removed_syncs`]).
type RemovedSyncs = std::rc::Rc<Vec<Vec<u32>>>;

/// One change's replay: what the change touches, worked out before the walk, and the
/// times so far. Several are stepped through one walk (see [`replay_times_of`]).
struct Replay<'a> {
    change: &'a Change,
    /// Per thread, the synchronising calls the change removes (shared by the changes of a
    /// walk that remove the same).
    removed: RemovedSyncs,
    dropped: rustc_hash::FxHashSet<(u32, u32, u32)>,
    /// With NCCL on a stream of its own, per stream, where its kinds of op were last
    /// (see [`NcclOrder`]).
    nccl_order: Option<Vec<Vec<NcclOrder>>>,
    scale: KernelScale,
    /// Per thread, the CPU time the change removes.
    cut: Vec<Vec<(i64, i64)>>,
    /// Per thread, the first span of `cut` that may still overlap the calls to come: a
    /// thread's calls come in order, so its spans are passed once (a launch-bound run's
    /// host-gap cuts are millions of spans, searched anew at every call before).
    cut_from: Vec<Cursor>,
    /// Per collective, how many of its kernels have started.
    arrived: Vec<usize>,
    /// Per thread, its place in its launches as its synchronising calls come in order.
    waited: Vec<WaitedCursor>,
    /// Per thread, where the next synchronising call likely is in its list of them, and
    /// in its list of removed ones.
    sync_hint: Vec<Cursor>,
    removed_from: Vec<Cursor>,
    t: Times,
}

impl<'a> Replay<'a> {
    fn new(
        trace: &Trace,
        prep: &Prepared,
        change: &'a Change,
        removed: RemovedSyncs,
        gaps: Option<&[Gap]>,
        keep: Keep,
    ) -> Replay<'a> {
        let mut stalls = stall_spans(trace, &change.remove_stalls);
        add_spans(&mut stalls, &capture_spans(trace, &change.capture_graphs));
        let dropped = dropped_copies(trace, &change.drop_copies);
        let nccl_order = change.nccl_own_stream.then(|| {
            trace
                .devices
                .iter()
                .map(|d| vec![NcclOrder::default(); d.streams.len()])
                .collect()
        });
        let t = Times {
            op_start: (keep == Keep::Starts).then(|| shape_of_ops(trace)),
            op_end: shape_of_ops(trace),
            first_kernel_start: vec![i64::MAX; trace.devices.len()],
            latest_start: vec![i64::MIN; prep.groups.len()],
            calls: trace.threads.iter().map(|_| ThreadCalls::new()).collect(),
            sync_end: (keep == Keep::Starts).then(|| {
                prep.sync_calls
                    .iter()
                    .map(|calls| vec![UNSET; calls.len()])
                    .collect()
            }),
            stalls,
        };
        let mut cut = cpu_cuts(trace, &change.remove_cpu);
        add_spans(&mut cut, &t.stalls);
        if !change.cut_host_gaps.is_empty() {
            let own;
            let gaps = match gaps {
                Some(g) => g,
                None => {
                    own = all_gaps(trace);
                    &own[..]
                }
            };
            add_spans(&mut cut, &host_gap_cuts(trace, gaps, &change.cut_host_gaps));
        }
        Replay {
            change,
            removed,
            dropped,
            nccl_order,
            scale: KernelScale::new(trace, change),
            cut_from: vec![Cursor::default(); cut.len()],
            cut,
            arrived: vec![0usize; prep.groups.len()],
            waited: prep.launched.iter().map(WaitedCursor::new).collect(),
            sync_hint: vec![Cursor::default(); trace.threads.len()],
            removed_from: vec![Cursor::default(); trace.threads.len()],
            t,
        }
    }

    /// The new times `e` gives.
    fn step(&mut self, trace: &Trace, prep: &Prepared, e: Event) {
        let (sync_names, groups, member, launched) =
            (&prep.sync_names, &prep.groups, &prep.member, &prep.launched);
        let t = &mut self.t;
        match e {
            Event::CallStart { thread, call } => {
                let (ti, k) = (thread as usize, call as usize);
                let api = &trace.threads[ti].api;
                let calls = &mut t.calls[ti];
                let start = if k == 0 || calls.last_end == UNSET {
                    api.start[k]
                } else {
                    // The CPU time between two calls is kept, less what the change removes.
                    let (a, b) = (api.end[k - 1], api.start[k]);
                    let removed = cut_overlap(&self.cut[ti], &mut self.cut_from[ti], a, b);
                    calls.last_end + (b - a) - removed
                };
                calls.reach(call, start - api.start[k]);
                // A removed stall: the call takes no time, a sync waits for nothing.
                let stall = in_spans(&t.stalls[ti], api.start[k]);
                if sync_names[api.name[k] as usize] {
                    let end = if stall {
                        start
                    } else {
                        // Its end once replayed (already, when it ended as it started).
                        let early = calls.ended_early.iter().position(|e| e.0 == call);
                        early.map_or(UNSET, |i| calls.ended_early.swap_remove(i).1)
                    };
                    calls.last_end = end;
                    if let Some(ends) = &mut t.sync_end
                        && stall
                    {
                        let slot = prep.sync_slot_from(ti, k, &mut self.sync_hint[ti]);
                        ends[ti][slot.expect("a sync call")] = end;
                    }
                } else {
                    calls.last_end = if stall {
                        start
                    } else {
                        start + (api.end[k] - api.start[k])
                    };
                }
            }
            Event::SyncEnd { thread, call } => {
                let (ti, k) = (thread as usize, call as usize);
                let api = &trace.threads[ti].api;
                let (s, e) = (api.start[k], api.end[k]);
                if in_spans(&t.stalls[ti], s) {
                    return;
                }
                let waited = self.waited[ti].waited(trace, &launched[ti], call, e);
                let (observed, replayed) = waited_for(trace, t, waited);
                // The call's own time: all of it but the wait for the GPU.
                let own = e - observed.max(s);
                let calls = &mut t.calls[ti];
                // A call ending as it starts ends before its start is replayed: recorded.
                let start = if calls.reached > call {
                    s + calls.shift_of(call)
                } else {
                    s
                };
                let end = if is_removed(&self.removed[ti], &mut self.removed_from[ti], call) {
                    start + own
                } else {
                    start.max(replayed) + own
                };
                if calls.reached == call + 1 {
                    calls.last_end = end;
                } else if calls.reached <= call {
                    calls.ended_early.push((call, end));
                }
                if let Some(ends) = &mut t.sync_end {
                    let slot = prep.sync_slot_from(ti, k, &mut self.sync_hint[ti]);
                    ends[ti][slot.expect("a sync call")] = end;
                }
            }
            Event::OpStart { device, stream, op } => {
                let (d, s, i) = (device as usize, stream as usize, op as usize);
                let ops = &trace.devices[d].streams[s].ops;
                prefetch(&t.op_end[d][s], i + AHEAD);
                // The op's predecessor on its stream, and with NCCL on a stream of its own
                // the op it still waits for.
                let (previous, dependency) = match &mut self.nccl_order {
                    Some(order) => order[d][s].next(
                        ops.kind[i] == OpKind::Nccl,
                        op,
                        self.change.nccl_dependencies,
                    ),
                    None => (i.checked_sub(1), NONE),
                };
                let mut start = op_start(trace, t, self.change, d, s, i, previous);
                if dependency != NONE {
                    let j = dependency as usize;
                    if t.op_end[d][s][j] != UNSET {
                        start = start.max(t.op_end[d][s][j]);
                    }
                }
                let mut duration = ops.end[i] - ops.start[i];
                if ops.kind[i].is_kernel() {
                    if let Some(factor) = self.scale.of(ops.name[i]) {
                        duration = (duration as f64 * factor).round() as i64;
                    }
                } else if self.dropped.contains(&(d as u32, s as u32, i as u32)) {
                    duration = 0;
                }
                if let Some(starts) = &mut t.op_start {
                    starts[d][s][i] = start;
                }
                t.op_end[d][s][i] = start + duration;
                if ops.kind[i].is_kernel() {
                    t.first_kernel_start[d] = t.first_kernel_start[d].min(start);
                }
                let g = member[d][s][i];
                if g != NONE {
                    let g = g as usize;
                    t.latest_start[g] = t.latest_start[g].max(start);
                    self.arrived[g] += 1;
                    if self.arrived[g] == groups.devices.len() {
                        let last = t.latest_start[g];
                        finish_collective(trace, t, groups.get(g), last);
                    }
                }
            }
        }
    }
}

/// Whether `call` is in `removed` (sorted), found from `from`: a thread's calls come in
/// order, so its list is passed once (searched anew if a call comes back).
fn is_removed(removed: &[u32], from: &mut Cursor, call: u32) -> bool {
    from.find(removed, &call).is_some()
}

/// How much of `[a, b)` `spans` (sorted, disjoint) cover, the first span that may overlap
/// found from `from` (forward while `a` does not go back, searched anew when it does).
fn cut_overlap(spans: &[(i64, i64)], from: &mut Cursor, a: i64, b: i64) -> i64 {
    let i = from.seek(spans.len(), |k| spans[k].1 <= a);
    spans[i..]
        .iter()
        .take_while(|s| s.0 < b)
        .map(|s| s.1.min(b) - s.0.max(a))
        .filter(|&x| x > 0)
        .sum()
}

/// The trace replayed with `change`: every op's and call's new time, event by event in
/// recorded order.
pub(super) fn replay_times(
    trace: &Trace,
    prep: &Prepared,
    change: &Change,
    gaps: Option<&[Gap]>,
    keep: Keep,
    progress: &dyn Fn(f32),
) -> Times {
    let never = std::sync::atomic::AtomicBool::new(false);
    replay_times_of(trace, prep, &[change], gaps, keep, progress, &never)
        .and_then(|mut times| times.pop())
        .expect("a replay nobody cancels")
}

/// The trace replayed with each of `changes`, in one walk of the recorded order: each
/// event's rows are read once for all the changes (the walk is bound by those reads, in an
/// order that jumps between streams and threads), each change keeping times of its own.
/// `None` once `cancel` is set.
pub(super) fn replay_times_of(
    trace: &Trace,
    prep: &Prepared,
    changes: &[&Change],
    gaps: Option<&[Gap]>,
    keep: Keep,
    progress: &dyn Fn(f32),
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<Vec<Times>> {
    // The syncs a change removes, worked out once for the changes that remove the same (a
    // finding's change and its upper bound's, say).
    let mut removed: Vec<(&[String], RemovedSyncs)> = Vec::new();
    let mut replays: Vec<Replay> = Vec::new();
    for change in changes {
        let texts = &change.remove_sync[..];
        let syncs = match removed.iter().find(|(t, _)| *t == texts) {
            Some((_, syncs)) => syncs.clone(),
            None => {
                let syncs = std::rc::Rc::new(removed_syncs(trace, &prep.sync_names, texts));
                removed.push((texts, syncs.clone()));
                syncs
            }
        };
        replays.push(Replay::new(trace, prep, change, syncs, gaps, keep));
    }
    let events: Box<dyn Iterator<Item = Event>> = match &prep.order {
        Some(order) => Box::new(order.events(&prep.sync_calls)),
        None => Box::new(RecordedOrder::new(trace, &prep.sync_names)),
    };
    let total = prep
        .order
        .as_ref()
        .map_or(
            trace.gpu_op_count() + trace.api_call_count(),
            PackedOrder::len,
        )
        .max(1);
    for (n, e) in events.enumerate() {
        if n % PROGRESS_EVERY == 0 {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            progress(n as f32 / total as f32);
        }
        prefetch_ahead(trace, prep, e);
        for replay in &mut replays {
            replay.step(trace, prep, e);
        }
    }
    Some(replays.into_iter().map(|r| r.t).collect())
}

/// How far ahead of an event its source's rows are fetched into the cache.
const AHEAD: usize = 16;

/// Asks the cache for the rows the event's source will want a few events on. The walk
/// reads some sixty columns, each in order but all interleaved: more sequential streams
/// than the hardware follows, so each new cache line was a miss.
#[inline]
fn prefetch_ahead(trace: &Trace, prep: &Prepared, e: Event) {
    match e {
        Event::OpStart { device, stream, op } => {
            let (d, s, i) = (device as usize, stream as usize, op as usize + AHEAD);
            let ops = &trace.devices[d].streams[s].ops;
            prefetch(&ops.start, i);
            prefetch(&ops.end, i);
            prefetch(&ops.kind, i);
            prefetch(&ops.name, i);
            prefetch(&ops.launch_thread, i);
            prefetch(&ops.launch_call, i);
            prefetch(&prep.member[d][s], i);
        }
        Event::CallStart { thread, call } => {
            let api = &trace.threads[thread as usize].api;
            let k = call as usize + AHEAD;
            prefetch(&api.start, k);
            prefetch(&api.end, k);
            prefetch(&api.name, k);
        }
        Event::SyncEnd { .. } => {}
    }
}

/// Asks the cache for `column[i]`, if there is one.
#[inline]
fn prefetch<T>(column: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = column.get(i) {
        // SAFETY: a prefetch changes nothing the program sees, and `x` is in `column`.
        #[allow(unsafe_code)]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (x as *const T).cast(),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (column, i);
}

pub(super) fn shape_of_ops(trace: &Trace) -> Vec<Vec<Vec<i64>>> {
    trace
        .devices
        .iter()
        .map(|d| d.streams.iter().map(|s| vec![UNSET; s.ops.len()]).collect())
        .collect()
}

/// When the work a synchronising call waited for was done, as recorded and as replayed.
pub(super) fn waited_for(
    trace: &Trace,
    t: &Times,
    waited: impl Iterator<Item = (usize, usize, usize)>,
) -> (i64, i64) {
    let mut observed = i64::MIN;
    let mut replayed = i64::MIN;
    for (d, s, i) in waited {
        let recorded = trace.devices[d].streams[s].ops.end[i];
        observed = observed.max(recorded);
        let r = t.op_end[d][s][i];
        replayed = replayed.max(if r == UNSET { recorded } else { r });
    }
    (observed, replayed)
}

/// A call's replayed start, or [`UNSET`] before the replay reaches it.
pub(super) fn call_start(trace: &Trace, t: &Times, ti: usize, k: usize) -> i64 {
    let calls = &t.calls[ti];
    if k as u32 >= calls.reached {
        return UNSET;
    }
    trace.threads[ti].api.start[k] + calls.shift_of(k as u32)
}

/// A call's replayed end, or [`UNSET`] before the replay knows it: a removed stall takes no
/// time, another call keeps its duration, a synchronising one ends as replayed.
pub(super) fn call_end(trace: &Trace, prep: &Prepared, t: &Times, ti: usize, k: usize) -> i64 {
    let api = &trace.threads[ti].api;
    if k as u32 >= t.calls[ti].reached {
        return UNSET;
    }
    if prep.sync_names[api.name[k] as usize] {
        let ends = t
            .sync_end
            .as_ref()
            .expect("a rebuild keeps the syncs' ends");
        return prep.sync_slot(ti, k).map_or(UNSET, |n| ends[ti][n]);
    }
    let start = call_start(trace, t, ti, k);
    if in_spans(&t.stalls[ti], api.start[k]) {
        start
    } else {
        start + (api.end[k] - api.start[k])
    }
}

/// Op `i`'s replayed start, `previous` its predecessor on its stream (another op than
/// `i - 1` when NCCL moves to a stream of its own).
pub(super) fn op_start(
    trace: &Trace,
    t: &Times,
    change: &Change,
    d: usize,
    s: usize,
    i: usize,
    previous: Option<usize>,
) -> i64 {
    let ops = &trace.devices[d].streams[s].ops;
    let start = ops.start[i];
    // Launch: the call's start, replayed, plus the latency observed from it.
    let launch = match (ops.launch_thread[i], ops.launch_call[i]) {
        (th, c) if th != NONE && c != NONE => {
            let (th, c) = (th as usize, c as usize);
            let observed = trace.threads[th].api.start[c];
            let replayed = call_start(trace, t, th, c);
            (replayed != UNSET).then_some((observed, replayed))
        }
        _ => None,
    };
    // The predecessor as recorded (what the op may have waited for) and in the replay
    // (another op when NCCL moves to its own stream: then only the spacing is kept).
    let recorded = i.checked_sub(1).map(|j| ops.end[j]);
    let prev = previous.and_then(|j| {
        let replayed = t.op_end[d][s][j];
        (replayed != UNSET).then_some((j, replayed))
    });
    let distance = |po: i64, same: bool| {
        if same {
            start - po
        } else {
            (start - po).min(MIN_SPACING_NS)
        }
    };
    match (launch, recorded, prev) {
        (None, _, None) => start,
        (Some((lo, lr)), _, None) => {
            lr + (start - lo).min(match recorded {
                // Its recorded predecessor is gone from its stream: it waited for it, not
                // for the launch, so only the launch latency's minimum is kept.
                Some(po) if po > lo && change.nccl_own_stream => MIN_LAUNCH_LATENCY_NS,
                _ => i64::MAX,
            })
        }
        (None, po, Some((j, pr))) => {
            let po = po.unwrap_or(ops.end[j]);
            pr + distance(po, j + 1 == i)
        }
        (Some((lo, lr)), po, Some((j, pr))) => {
            let same = j + 1 == i;
            let po = po.unwrap_or(ops.end[j]);
            // The later of the two held the op: it keeps its observed distance; the other
            // only its minimum (launch latency, back-to-back spacing).
            if lo >= po {
                (lr + (start - lo)).max(pr + (start - po).clamp(0, MIN_SPACING_NS))
            } else {
                (pr + distance(po, same)).max(lr + (start - lo).min(MIN_LAUNCH_LATENCY_NS))
            }
        }
    }
}

/// Two ops of a stream back to back are at least this far apart.
pub(super) const MIN_SPACING_NS: i64 = 1_000;
/// A launch reaches the GPU at least this long after its call starts.
pub(super) const MIN_LAUNCH_LATENCY_NS: i64 = 5_000;

/// Once every rank's kernel of a collective has started: they end together, the transfer
/// time observed after the last start.
pub(super) fn finish_collective(
    trace: &Trace,
    t: &mut Times,
    group: &[(usize, usize, usize)],
    replayed_last: i64,
) {
    let observed_last = group
        .iter()
        .map(|&(d, s, i)| trace.devices[d].streams[s].ops.start[i])
        .max()
        .unwrap_or(0);
    for &(d, s, i) in group {
        let transfer = trace.devices[d].streams[s].ops.end[i] - observed_last;
        t.op_end[d][s][i] = replayed_last + transfer.max(0);
    }
}

#[cfg(test)]
mod tests {
    use super::{cut_overlap, is_removed};
    use crate::sorted::Cursor;

    #[test]
    fn the_removed_cursor_answers_as_a_search_in_order_and_back() {
        let removed: Vec<u32> = vec![3, 4, 9, 20, 21, 40];
        let mut from = Cursor::default();
        let calls: Vec<u32> = (0..45).chain([5, 21, 2, 40, 44]).collect();
        for call in calls {
            assert_eq!(
                is_removed(&removed, &mut from, call),
                removed.binary_search(&call).is_ok(),
                "call {call}"
            );
        }
        assert!(!is_removed(&[], &mut Cursor::default(), 7));
    }

    /// How much of `[a, b)` `spans` cover, searched anew.
    fn overlap(spans: &[(i64, i64)], a: i64, b: i64) -> i64 {
        let first = spans.partition_point(|s| s.1 <= a);
        spans[first..]
            .iter()
            .take_while(|s| s.0 < b)
            .map(|s| s.1.min(b) - s.0.max(a))
            .filter(|&x| x > 0)
            .sum()
    }

    #[test]
    fn the_cursor_gives_what_a_search_gives_forward_and_back() {
        let spans: Vec<(i64, i64)> = (0..200).map(|i| (i * 10, i * 10 + 4)).collect();
        let mut from = Cursor::default();
        // Calls in order, overlapping calls, a step back, a jump far ahead and back.
        let asks = [
            (0, 3),
            (2, 25),
            (25, 26),
            (24, 60),
            (61, 62),
            (5, 500),
            (1500, 1512),
            (1999, 2100),
            (100, 1000),
            (-50, 5),
        ];
        for (a, b) in asks {
            assert_eq!(
                cut_overlap(&spans, &mut from, a, b),
                overlap(&spans, a, b),
                "[{a}, {b})"
            );
        }
        assert_eq!(cut_overlap(&[], &mut Cursor::default(), 0, 100), 0);
    }
}
