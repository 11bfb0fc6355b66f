//! What if: the trace replayed with a change, to predict what the change would save — by
//! its dependencies, not by subtracting idle time.
//!
//! The model, per CPU thread: its API calls in order, the CPU time between them kept. A
//! launch releases its kernel or copy, which starts once both its launch (the call's start
//! plus the latency observed) and its stream's previous op allow (plus the spacing
//! observed, or, where the op waited longer than both — an event on another stream or GPU —
//! that wait). A synchronising call returns once the work its thread launched before it,
//! and that it really waited for, is done, plus its own time. An NCCL collective's kernels
//! end together, their transfer time after the last rank's kernel starts. Replaying the
//! trace unchanged reproduces it exactly; a change moves what depends on it.
//!
//! Events are replayed in the order they were recorded: every dependency above happened
//! before what depends on it, so one pass in time order sees each cause before its effect.

pub mod report;

use regex::Regex;

use crate::analysis::gaps::{
    Cause, CpuIndex, DEFAULT_MIN_GAP_NS, Gap, OpRef, gaps, launch_nvtx_path, sync_call_names,
};
use crate::analysis::intervals::device_window;
use crate::analysis::nccl_wait::{Collectives, collectives};
use crate::analysis::recurring::signature;
use crate::sorted::gallop;
use crate::sorted::median;
use crate::trace::launches::{Launched, launched_by_thread, waited_ops};
use crate::trace::{NONE, OpKind, Stream, Trace};

/// A change to replay.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// Synchronising calls whose name contains one of these no longer wait for the GPU.
    pub remove_sync: Vec<String>,
    /// Kernels whose name matches take `factor` times as long.
    pub scale_kernels: Vec<(Regex, f64)>,
    /// NCCL kernels on a stream of their own. The data dependencies are kept (see
    /// [`NCCL_DEPENDENCIES`]) unless `nccl_no_dependencies`.
    pub nccl_own_stream: bool,
    /// With `nccl_own_stream`: nothing on the compute stream waits for NCCL, nor NCCL for
    /// it, beyond launch order — the upper bound of what a stream of its own can gain.
    pub nccl_no_dependencies: bool,
    /// CPU time between calls inside NVTX ranges whose text contains one of these is
    /// removed (the host work after a sync, say).
    pub remove_cpu: Vec<String>,
    /// Host stalls removed: on the threads with the span's tid, the calls that start in it
    /// take no time (a synchronising one does not wait) and the CPU time between them is
    /// gone (a straggler's `cudaMalloc`, say).
    pub remove_stalls: Vec<HostSpan>,
    /// Host-bound gaps whose signature (`before → after in range [host_bound]`) is one of
    /// these: the launching thread's CPU time during each such gap is cut, so the next
    /// launch comes as early as its launch latency allows.
    pub cut_host_gaps: Vec<String>,
    /// Copies (memcpy, memset) whose name or NVTX range at launch contains one of these
    /// take no GPU time (assumed done off the critical path: asynchronous, pinned memory,
    /// a stream of their own).
    pub drop_copies: Vec<String>,
    /// NVTX ranges whose text contains one of these replayed as CUDA graphs: each
    /// occurrence's kernels released by its first launch (the later launch calls take no
    /// time, the CPU time from the first launch to the range's end is gone). Assumes the
    /// range captures as it is: fixed shapes, no sync or host read inside.
    pub capture_graphs: Vec<String>,
}

/// What `nccl_own_stream` keeps of the dependencies between NCCL and compute, said in the
/// assumptions: a collective waits for the compute launched before it on its stream (its
/// input, as an event recorded before it), and its result is needed by the compute
/// launched after the next collective (one collective in flight beside compute, as an
/// event waited for one collective later). A result needed by the very next kernel leaves
/// nothing to overlap; that bound is the unchanged run.
pub const NCCL_DEPENDENCIES: &str = "each collective waits for the compute launched before it; its result is first needed by the compute launched after the next collective";

/// A span of one thread's time, on the export's clock: `TID:START_NS:END_NS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSpan {
    pub tid: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

impl HostSpan {
    pub fn parse(arg: &str) -> Result<Self, String> {
        let parts: Vec<&str> = arg.split(':').collect();
        let bad = || format!("a host span is TID:START_NS:END_NS, not `{arg}`");
        let [tid, start, end] = parts[..] else {
            return Err(bad());
        };
        let span = HostSpan {
            tid: tid.parse().map_err(|_| bad())?,
            start_ns: start.parse().map_err(|_| bad())?,
            end_ns: end.parse().map_err(|_| bad())?,
        };
        if span.end_ns < span.start_ns {
            return Err(format!("{arg}: the span ends before it starts"));
        }
        Ok(span)
    }
}

impl std::fmt::Display for HostSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.tid, self.start_ns, self.end_ns)
    }
}

/// `--scale-kernel`'s `REGEX=FACTOR`.
pub fn parse_scale_kernel(arg: &str) -> Result<(Regex, f64), String> {
    let (re, factor) = arg
        .rsplit_once('=')
        .ok_or_else(|| format!("--scale-kernel wants REGEX=FACTOR, not `{arg}`"))?;
    let factor: f64 = factor
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f > 0.0)
        .ok_or_else(|| format!("--scale-kernel: `{factor}` is not a positive number"))?;
    let re = Regex::new(re).map_err(|e| format!("--scale-kernel: {e}"))?;
    Ok((re, factor))
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.remove_sync.is_empty()
            && self.scale_kernels.is_empty()
            && !self.nccl_own_stream
            && self.remove_cpu.is_empty()
            && self.remove_stalls.is_empty()
            && self.cut_host_gaps.is_empty()
            && self.drop_copies.is_empty()
            && self.capture_graphs.is_empty()
    }

    /// The `what-if` command-line arguments that make this change.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |flag: &str, value: String| {
            out.push(flag.to_string());
            out.push(value);
        };
        for x in &self.remove_sync {
            add("--remove-sync", x.clone());
        }
        for (re, f) in &self.scale_kernels {
            add("--scale-kernel", format!("{}={f}", re.as_str()));
        }
        for x in &self.remove_cpu {
            add("--remove-cpu", x.clone());
        }
        for x in &self.remove_stalls {
            add("--remove-stall", x.to_string());
        }
        for x in &self.cut_host_gaps {
            add("--cut-host-gaps", x.clone());
        }
        for x in &self.drop_copies {
            add("--drop-copies", x.clone());
        }
        for x in &self.capture_graphs {
            add("--capture-graph", x.clone());
        }
        if self.nccl_own_stream {
            out.push("--nccl-own-stream".into());
            if self.nccl_no_dependencies {
                out.push("--nccl-no-dependencies".into());
            }
        }
        out
    }

    /// The change [`Change::to_args`] wrote (the cache keeps findings' changes so).
    pub fn from_args(args: &[String]) -> Result<Change, String> {
        let mut change = Change::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} wants a value"))
            };
            match flag.as_str() {
                "--remove-sync" => change.remove_sync.push(value()?),
                "--scale-kernel" => change.scale_kernels.push(parse_scale_kernel(&value()?)?),
                "--remove-cpu" => change.remove_cpu.push(value()?),
                "--remove-stall" => change.remove_stalls.push(HostSpan::parse(&value()?)?),
                "--cut-host-gaps" => change.cut_host_gaps.push(value()?),
                "--drop-copies" => change.drop_copies.push(value()?),
                "--capture-graph" => change.capture_graphs.push(value()?),
                "--nccl-own-stream" => change.nccl_own_stream = true,
                "--nccl-no-dependencies" => change.nccl_no_dependencies = true,
                other => return Err(format!("not a change: `{other}`")),
            }
        }
        Ok(change)
    }
}

/// New times of every op and call, indexed like the trace.
struct Times {
    /// Every op's replayed start: kept only when the trace is rebuilt (a replay for spans
    /// alone needs the two below, and two replays at once held 70 MB each of starts on
    /// the realistic large trace).
    op_start: Option<Vec<Vec<Vec<i64>>>>,
    op_end: Vec<Vec<Vec<i64>>>,
    /// Every call's replayed end, [`UNSET`] until the replay reaches it. A call's start is
    /// not kept beside it (35 MB a replay on the realistic large trace): a call that does
    /// not synchronise keeps its duration, a removed stall takes none (see
    /// [`call_start`]); a synchronising call's start is kept in `sync_start`.
    call_end: Vec<Vec<i64>>,
    /// Per thread, the replayed start of each synchronising call, in the order of
    /// [`Prepared::sync_calls`].
    sync_start: Vec<Vec<i64>>,
    /// Per thread, the CPU spans the change removes as stalls.
    stalls: Vec<Vec<(i64, i64)>>,
    /// Per device, the earliest replayed kernel start (`i64::MAX` before any).
    first_kernel_start: Vec<i64>,
    /// Per collective, the latest replayed start of its kernels so far.
    latest_start: Vec<i64>,
}

/// What a replay keeps of every op.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Starts and ends: the trace is rebuilt from them.
    Starts,
    /// Ends only: the spans are all that is wanted.
    Ends,
}

const UNSET: i64 = i64::MIN;
/// Events between two progress reports.
const PROGRESS_EVERY: usize = 1 << 18;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    // At equal times: ops start before a synchronising call waiting for them ends, which
    // ends before its thread's next call starts.
    OpStart { device: u32, stream: u32, op: u32 },
    SyncEnd { thread: u32, call: u32 },
    CallStart { thread: u32, call: u32 },
}

/// What every replay of a trace needs, whatever the change: built once, shared by the
/// replays of several changes (the findings replay theirs in parallel).
pub struct Prepared {
    sync_names: Vec<bool>,
    /// Per thread, its synchronising calls (indices, sorted).
    sync_calls: Vec<Vec<u32>>,
    groups: std::sync::Arc<Collectives>,
    /// Each op's collective (index into `groups`), or [`NONE`].
    member: Vec<Vec<Vec<u32>>>,
    launched: Vec<Launched>,
    /// Every event in recorded order, as the source it came from (see [`PackedOrder`]);
    /// `None` when the trace has more streams and threads than two bytes number (the order
    /// is then merged anew).
    order: Option<PackedOrder>,
}

/// Where the recorded order's events come from, each source's events in an order of their
/// own: a stream's ops by start, a thread's calls by start, its synchronising calls in
/// call order (see [`RecordedOrder`]).
#[derive(Clone, Copy)]
enum Source {
    Ops { device: u32, stream: u32 },
    Calls { thread: u32 },
    SyncEnds { thread: u32 },
}

/// The recorded order as the source of each event, two bytes an event (8.8 M events of the
/// realistic large trace: 18 MB, against 71 MB for the events themselves): a cursor per
/// source gives each event back.
struct PackedOrder {
    sources: Vec<Source>,
    ids: Vec<u16>,
}

impl PackedOrder {
    fn new(trace: &Trace, sync_names: &[bool]) -> Option<Self> {
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
    fn events<'a>(&'a self, sync_calls: &'a [Vec<u32>]) -> impl Iterator<Item = Event> + 'a {
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

    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// The source of every event, in [`RecordedOrder`]'s order: the sources' events merged,
/// each source already in its own order. A heap entry is a source's next event as (time,
/// rank): the rank (the event's kind, then the source) orders equal times as [`Event`]'s
/// order does, since sources are numbered by device and stream, and by thread. A source
/// whose next event is still the earliest stays on top: one sift, not a pop and a push.
fn merged_sources(trace: &Trace, sync_names: &[bool], sources: &[Source]) -> Vec<u16> {
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

impl Prepared {
    /// Where thread `ti`'s call `k` is among its synchronising calls (`Times::sync_start`'s
    /// index), if it is one.
    fn sync_slot(&self, ti: usize, k: usize) -> Option<usize> {
        self.sync_calls[ti].binary_search(&(k as u32)).ok()
    }

    pub fn new(trace: &Trace) -> Self {
        Self::build(trace, None)
    }

    /// Like [`Prepared::new`], with the trace's collectives worked out already (see
    /// [`crate::overview::Overview::collectives`]).
    pub fn with_collectives(trace: &Trace, groups: std::sync::Arc<Collectives>) -> Self {
        Self::build(trace, Some(groups))
    }

    fn build(trace: &Trace, groups: Option<std::sync::Arc<Collectives>>) -> Self {
        // Four independent parts, worked out side by side.
        let collectives_and_launches = || {
            rayon::join(
                || {
                    let groups = groups.unwrap_or_else(|| std::sync::Arc::new(collectives(trace)));
                    let mut member: Vec<Vec<Vec<u32>>> = trace
                        .devices
                        .iter()
                        .map(|d| d.streams.iter().map(|s| vec![NONE; s.ops.len()]).collect())
                        .collect();
                    for (g, c) in groups.iter().enumerate() {
                        for &(d, s, o) in c {
                            member[d][s][o] = g as u32;
                        }
                    }
                    (groups, member)
                },
                || launched_by_thread(trace),
            )
        };
        let syncs_and_order = || {
            let sync_names = sync_call_names(trace);
            let (sync_calls, order) = rayon::join(
                || {
                    trace
                        .threads
                        .iter()
                        .map(|th| {
                            (0..th.api.len() as u32)
                                .filter(|&k| sync_names[th.api.name[k as usize] as usize])
                                .collect()
                        })
                        .collect()
                },
                // The recorded order does not depend on the change: merged once.
                || PackedOrder::new(trace, &sync_names),
            );
            (sync_names, sync_calls, order)
        };
        let (((groups, member), launched), (sync_names, sync_calls, order)) =
            rayon::join(collectives_and_launches, syncs_and_order);
        Self {
            sync_names,
            sync_calls,
            groups,
            member,
            launched,
            order,
        }
    }
}

/// The trace replayed with `change`: a copy with every op's, call's and NVTX range's time
/// moved where the model puts it (NCCL moved to a stream of its own when asked).
pub fn replay(trace: &Trace, change: &Change) -> Trace {
    replay_with_gaps(trace, change, None)
}

/// Like [`replay`], with the trace's gaps when the caller has them (`cut_host_gaps` finds
/// its gaps there; without them it finds them itself).
pub fn replay_with_gaps(trace: &Trace, change: &Change, gaps: Option<&[Gap]>) -> Trace {
    replay_with_progress(trace, change, gaps, &|_| {})
}

/// Like [`replay_with_gaps`], telling `progress` the share of the events replayed (0..=1).
pub fn replay_with_progress(
    trace: &Trace,
    change: &Change,
    gaps: Option<&[Gap]>,
    progress: &dyn Fn(f32),
) -> Trace {
    crate::profile_scope!("what-if replay");
    let prepared = Prepared::new(trace);
    let times = replay_times(trace, &prepared, change, gaps, Keep::Starts, progress);
    rebuild(trace, &prepared, &times, change)
}

/// Each device's span (first kernel start to last kernel end, 0 without kernels) in the
/// trace replayed with `change`: what [`replay`] then `Device::kernel_window` give,
/// without building the replayed trace.
pub fn predicted_spans(trace: &Trace, change: &Change, gaps: Option<&[Gap]>) -> Vec<i64> {
    predicted_spans_with(trace, &Prepared::new(trace), change, gaps)
}

/// Like [`predicted_spans`], with what the replays share built once.
pub fn predicted_spans_with(
    trace: &Trace,
    prepared: &Prepared,
    change: &Change,
    gaps: Option<&[Gap]>,
) -> Vec<i64> {
    crate::profile_scope!("what-if replay (spans)");
    let t = replay_times(trace, prepared, change, gaps, Keep::Ends, &|_| {});
    trace
        .devices
        .iter()
        .enumerate()
        .map(|(d, device)| {
            // A replayed op ends at or after its start; one the replay never reached keeps
            // its recorded times.
            let mut window: Option<(i64, i64)> = None;
            for (s, stream) in device.streams.iter().enumerate() {
                let ops = &stream.ops;
                for i in 0..ops.len() {
                    if !ops.kind[i].is_kernel() {
                        continue;
                    }
                    let (a, b) = match t.op_end[d][s][i] {
                        UNSET => (ops.start[i], ops.end[i]),
                        b => (t.first_kernel_start[d], b),
                    };
                    window = Some(window.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                }
            }
            window.map_or(0, |(a, b)| b - a)
        })
        .collect()
}

pub use crate::trace::measured_spans;

fn replay_times(
    trace: &Trace,
    prep: &Prepared,
    change: &Change,
    gaps: Option<&[Gap]>,
    keep: Keep,
    progress: &dyn Fn(f32),
) -> Times {
    let sync_names = &prep.sync_names;
    let removed = removed_syncs(trace, sync_names, &change.remove_sync);
    let mut stalls = stall_spans(trace, &change.remove_stalls);
    add_spans(&mut stalls, &capture_spans(trace, &change.capture_graphs));
    let dropped = dropped_copies(trace, &change.drop_copies);
    let nccl_deps =
        (change.nccl_own_stream && !change.nccl_no_dependencies).then(|| nccl_dependencies(trace));
    // Kernel names only (a trace has millions of other strings): each tested once. Held
    // only when a kernel is scaled (a factor per string of the trace).
    let mut scale: Vec<f64> = Vec::new();
    if !change.scale_kernels.is_empty() {
        scale = vec![1.0f64; trace.strings.len()];
        let mut seen = vec![false; trace.strings.len()];
        for s in trace.devices.iter().flat_map(|d| &d.streams) {
            for i in 0..s.ops.len() {
                let id = s.ops.name[i] as usize;
                if s.ops.kind[i].is_kernel() && !std::mem::replace(&mut seen[id], true) {
                    let name = trace.strings.get(id as u32);
                    scale[id] = change
                        .scale_kernels
                        .iter()
                        .filter(|(re, _)| re.is_match(&name))
                        .map(|(_, f)| *f)
                        .product();
                }
            }
        }
    }
    let mut t = Times {
        op_start: (keep == Keep::Starts).then(|| shape_of_ops(trace)),
        op_end: shape_of_ops(trace),
        first_kernel_start: vec![i64::MAX; trace.devices.len()],
        latest_start: vec![i64::MIN; prep.groups.len()],
        call_end: trace
            .threads
            .iter()
            .map(|th| vec![UNSET; th.api.len()])
            .collect(),
        sync_start: prep
            .sync_calls
            .iter()
            .map(|calls| vec![UNSET; calls.len()])
            .collect(),
        stalls,
    };
    let (groups, member, launched) = (&prep.groups, &prep.member, &prep.launched);
    let mut arrived = vec![0usize; groups.len()];
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
    let events: Box<dyn Iterator<Item = Event>> = match &prep.order {
        Some(order) => Box::new(order.events(&prep.sync_calls)),
        None => Box::new(RecordedOrder::new(trace, sync_names)),
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
            progress(n as f32 / total as f32);
        }
        match e {
            Event::CallStart { thread, call } => {
                let (ti, k) = (thread as usize, call as usize);
                let api = &trace.threads[ti].api;
                let start = if k == 0 || t.call_end[ti][k - 1] == UNSET {
                    api.start[k]
                } else {
                    // The CPU time between two calls is kept, less what the change removes.
                    let (a, b) = (api.end[k - 1], api.start[k]);
                    t.call_end[ti][k - 1] + (b - a) - overlap(&cut[ti], a, b)
                };
                let sync = sync_names[api.name[k] as usize];
                if sync {
                    t.sync_start[ti][prep.sync_slot(ti, k).expect("a sync call")] = start;
                }
                if in_spans(&t.stalls[ti], api.start[k]) {
                    // A removed stall: the call takes no time, a sync waits for nothing.
                    t.call_end[ti][k] = start;
                } else if !sync {
                    t.call_end[ti][k] = start + (api.end[k] - api.start[k]);
                }
            }
            Event::SyncEnd { thread, call } => {
                let (ti, k) = (thread as usize, call as usize);
                let api = &trace.threads[ti].api;
                let (s, e) = (api.start[k], api.end[k]);
                if in_spans(&t.stalls[ti], s) {
                    continue;
                }
                let (observed, replayed) = waited_for(trace, &t, &launched[ti], call, e);
                // The call's own time: all of it but the wait for the GPU.
                let own = e - observed.max(s);
                let start = t.sync_start[ti][prep.sync_slot(ti, k).expect("a sync call")];
                t.call_end[ti][k] = if removed[ti].binary_search(&call).is_ok() {
                    start + own
                } else {
                    start.max(replayed) + own
                };
            }
            Event::OpStart { device, stream, op } => {
                let (d, s, i) = (device as usize, stream as usize, op as usize);
                let ops = &trace.devices[d].streams[s].ops;
                let mut start = op_start(trace, prep, &t, change, d, s, i);
                if let Some(deps) = &nccl_deps {
                    let j = deps[d][s][i];
                    if j != NONE && t.op_end[d][s][j as usize] != UNSET {
                        start = start.max(t.op_end[d][s][j as usize]);
                    }
                }
                let mut duration = ops.end[i] - ops.start[i];
                if ops.kind[i].is_kernel() {
                    if let Some(&factor) = scale.get(ops.name[i] as usize) {
                        duration = (duration as f64 * factor).round() as i64;
                    }
                } else if dropped.contains(&(d as u32, s as u32, i as u32)) {
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
                    arrived[g] += 1;
                    if arrived[g] == groups.devices.len() {
                        let last = t.latest_start[g];
                        finish_collective(trace, &mut t, groups.get(g), last);
                    }
                }
            }
        }
    }
    t
}

/// Per thread, the synchronising calls (indices, sorted) to make non-blocking: those whose
/// name, or the text of an NVTX range around them, contains one of `texts`.
fn removed_syncs(trace: &Trace, sync_names: &[bool], texts: &[String]) -> Vec<Vec<u32>> {
    let matches = |text: &str| texts.iter().any(|n| text.contains(n.as_str()));
    trace
        .threads
        .iter()
        .map(|th| {
            if texts.is_empty() {
                return Vec::new();
            }
            (0..th.api.len())
                .filter(|&k| sync_names[th.api.name[k] as usize])
                .filter(|&k| {
                    let (s, e) = (th.api.start[k], th.api.end[k]);
                    if matches(&trace.strings.get(th.api.name[k])) {
                        return true;
                    }
                    // The ranges open around the call: nested ranges start before it and
                    // end after it; the innermost are the latest to start.
                    let n = th.nvtx.start.partition_point(|&x| x <= s);
                    (n.saturating_sub(RANGES_LOOKED_AT)..n)
                        .filter(|&r| th.nvtx.end[r] >= e)
                        .any(|r| matches(&trace.strings.get(th.nvtx.text[r])))
                })
                .map(|k| k as u32)
                .collect()
        })
        .collect()
}

/// Per thread, the union of the NVTX ranges whose text contains one of `texts`, sorted.
fn cpu_cuts(trace: &Trace, texts: &[String]) -> Vec<Vec<(i64, i64)>> {
    spans_of_ranges(trace, texts, |th, r| {
        Some((th.nvtx.start[r], th.nvtx.end[r]))
    })
}

/// Per thread, the union of `span(thread, range)` over its NVTX ranges whose text contains
/// one of `texts`.
fn spans_of_ranges(
    trace: &Trace,
    texts: &[String],
    span: impl Fn(&crate::trace::Thread, usize) -> Option<(i64, i64)>,
) -> Vec<Vec<(i64, i64)>> {
    trace
        .threads
        .iter()
        .map(|th| {
            if texts.is_empty() {
                return Vec::new();
            }
            let mut spans: Vec<(i64, i64)> = (0..th.nvtx.len())
                .filter(|&r| {
                    let text = trace.strings.get(th.nvtx.text[r]);
                    texts.iter().any(|n| text.contains(n.as_str()))
                })
                .filter_map(|r| span(th, r))
                .collect();
            spans.sort_unstable();
            union_of(spans)
        })
        .collect()
}

/// How much of `[a, b)` the sorted, disjoint `spans` cover.
fn overlap(spans: &[(i64, i64)], a: i64, b: i64) -> i64 {
    let first = spans.partition_point(|s| s.1 <= a);
    spans[first..]
        .iter()
        .take_while(|s| s.0 < b)
        .map(|s| s.1.min(b) - s.0.max(a))
        .filter(|&x| x > 0)
        .sum()
}

/// Per thread, the sorted spans of `stalls` that fall on it (by tid).
fn stall_spans(trace: &Trace, stalls: &[HostSpan]) -> Vec<Vec<(i64, i64)>> {
    trace
        .threads
        .iter()
        .map(|th| {
            let mut spans: Vec<(i64, i64)> = stalls
                .iter()
                .filter(|s| s.tid == th.tid)
                .map(|s| (s.start_ns, s.end_ns))
                .collect();
            spans.sort_unstable();
            union_of(spans)
        })
        .collect()
}

/// Per thread, what replaying the ranges whose text contains one of `texts` as CUDA graphs
/// removes, as stalls: from the end of each occurrence's first launch call to its end (its
/// later launches take no time: one launch releases them all).
fn capture_spans(trace: &Trace, texts: &[String]) -> Vec<Vec<(i64, i64)>> {
    if texts.is_empty() {
        return vec![Vec::new(); trace.threads.len()];
    }
    let launch_names = trace.api_names_where(|name| name.contains("Launch"));
    let is_launch = |th: &crate::trace::Thread, k: usize| launch_names[th.api.name[k] as usize];
    spans_of_ranges(trace, texts, |th, r| {
        let (s, e) = (th.nvtx.start[r], th.nvtx.end[r]);
        let first = th.api.start.partition_point(|&x| x < s);
        let end = th.api.start.partition_point(|&x| x <= e);
        let mut launches = (first..end).filter(|&k| is_launch(th, k));
        let k = launches.next()?;
        launches.next()?;
        Some((th.api.end[k], e))
    })
}

/// Sorted, overlapping spans merged.
fn union_of(spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    let mut union: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match union.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => union.push((s, e)),
        }
    }
    union
}

/// Each thread's spans in `more` added to `cut`'s, kept sorted and disjoint.
fn add_spans(cut: &mut [Vec<(i64, i64)>], more: &[Vec<(i64, i64)>]) {
    for (c, m) in cut.iter_mut().zip(more) {
        if m.is_empty() {
            continue;
        }
        let mut all = std::mem::take(c);
        all.extend_from_slice(m);
        all.sort_unstable();
        *c = union_of(all);
    }
}

fn in_spans(spans: &[(i64, i64)], t: i64) -> bool {
    let i = spans.partition_point(|s| s.1 < t);
    spans.get(i).is_some_and(|s| s.0 <= t)
}

/// Every gap of every device, as the analyses find them (default minimum).
fn all_gaps(trace: &Trace) -> Vec<Gap> {
    let cpu = CpuIndex::new(trace);
    trace
        .devices
        .iter()
        .filter_map(|d| {
            let w = device_window(d)?;
            Some(gaps(trace, &cpu, d, w, DEFAULT_MIN_GAP_NS))
        })
        .flatten()
        .collect()
}

/// Per thread, the CPU time to cut for the host-bound gaps whose signature is one of
/// `signatures`: the gap itself, moved back by the launch latency the op after it had (so
/// that op's launch reaches the GPU as the op before it ends).
fn host_gap_cuts(trace: &Trace, gaps: &[Gap], signatures: &[String]) -> Vec<Vec<(i64, i64)>> {
    let mut out: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.threads.len()];
    // Signatures are put in words once per distinct pattern, not once per gap.
    let mut wanted: rustc_hash::FxHashMap<(u32, u32, u32), bool> = Default::default();
    let mut matched: rustc_hash::FxHashMap<(u32, u32, u32), Vec<&Gap>> = Default::default();
    for g in gaps.iter().filter(|g| g.cause == Cause::HostBound) {
        let template = g
            .enclosing()
            .map_or(NONE, |id| trace.strings.template_of(id));
        let key = (g.before_name(trace), g.after_name(trace), template);
        let hit = *wanted
            .entry(key)
            .or_insert_with(|| signatures.contains(&signature(trace, g)));
        if hit {
            matched.entry(key).or_default().push(g);
        }
    }
    for members in matched.values() {
        let durations: Vec<i64> = members.iter().map(|g| g.duration_ns).collect();
        let limit = median(&durations).saturating_mul(HOST_GAP_OUTLIER_FACTOR);
        for g in members.iter().filter(|g| g.duration_ns <= limit) {
            let Some(device) = trace.device(g.device_id()) else {
                continue;
            };
            let ops = &device.streams[g.after.stream as usize].ops;
            let i = g.after.op as usize;
            let (th, call) = (ops.launch_thread[i], ops.launch_call[i]);
            if th == NONE || call == NONE {
                continue;
            }
            let latency =
                (ops.start[i] - trace.threads[th as usize].api.start[call as usize]).max(0);
            out[th as usize].push((g.start_ns - latency, g.end_ns() - latency));
        }
    }
    for spans in &mut out {
        spans.sort_unstable();
        *spans = union_of(std::mem::take(spans));
    }
    out
}

/// Gaps of a host-bound pattern longer than this many times its median are one-offs (a
/// JIT compilation after the same kernel as every step's short gap): `cut_host_gaps`
/// leaves them to a change of their own.
pub const HOST_GAP_OUTLIER_FACTOR: i64 = 4;

/// The copies `texts` name (by the op's name or an NVTX range at its launch): (device,
/// stream, op).
fn dropped_copies(trace: &Trace, texts: &[String]) -> rustc_hash::FxHashSet<(u32, u32, u32)> {
    let mut out = rustc_hash::FxHashSet::default();
    if texts.is_empty() {
        return out;
    }
    let matches = |text: &str| texts.iter().any(|n| text.contains(n.as_str()));
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                if ops.kind[i].is_kernel() {
                    continue;
                }
                let op = OpRef {
                    stream: s as u32,
                    op: i as u32,
                };
                let hit = matches(&trace.strings.get(ops.name[i]))
                    || launch_nvtx_path(trace, device, op)
                        .into_iter()
                        .any(|id| matches(&trace.strings.get(id)));
                if hit {
                    out.insert((d as u32, s as u32, i as u32));
                }
            }
        }
    }
    out
}

/// With NCCL on a stream of its own, what each op of a stream that ran NCCL still waits
/// for (an op index on the same stream, or [`NONE`]), as [`NCCL_DEPENDENCIES`] says: a
/// collective, the compute op before it; a compute op, the collective before the latest
/// one launched before it.
fn nccl_dependencies(trace: &Trace) -> Vec<Vec<Vec<u32>>> {
    trace
        .devices
        .iter()
        .map(|d| {
            d.streams
                .iter()
                .map(|s| {
                    let ops = &s.ops;
                    let mut deps = vec![NONE; ops.len()];
                    if !ops.kind.contains(&OpKind::Nccl) {
                        return deps;
                    }
                    let (mut last_compute, mut latest, mut before_latest) = (NONE, NONE, NONE);
                    for (i, dep) in deps.iter_mut().enumerate() {
                        if ops.kind[i] == OpKind::Nccl {
                            *dep = last_compute;
                            before_latest = latest;
                            latest = i as u32;
                        } else {
                            *dep = before_latest;
                            last_compute = i as u32;
                        }
                    }
                    deps
                })
                .collect()
        })
        .collect()
}

/// Ranges starting before a call looked at for the ones around it.
const RANGES_LOOKED_AT: usize = 64;

/// Every event in the order it was recorded: the streams' ops and the threads' calls (and
/// their synchronising calls' ends) are each sorted already, so they are merged, a heap
/// holding the next event of each.
struct RecordedOrder<'a> {
    trace: &'a Trace,
    sync_names: &'a [bool],
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, Event)>>,
}

impl<'a> RecordedOrder<'a> {
    fn new(trace: &'a Trace, sync_names: &'a [bool]) -> Self {
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

    fn push_op(&mut self, device: u32, stream: u32, op: u32) {
        let ops = &self.trace.devices[device as usize].streams[stream as usize].ops;
        if let Some(&t) = ops.start.get(op as usize) {
            let e = Event::OpStart { device, stream, op };
            self.heap.push(std::cmp::Reverse((t, e)));
        }
    }

    fn push_call(&mut self, thread: u32, call: u32) {
        let api = &self.trace.threads[thread as usize].api;
        if let Some(&t) = api.start.get(call as usize) {
            self.heap
                .push(std::cmp::Reverse((t, Event::CallStart { thread, call })));
        }
    }

    /// The end of the thread's next synchronising call from `call` on.
    fn push_sync_end(&mut self, thread: u32, call: u32) {
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

fn shape_of_ops(trace: &Trace) -> Vec<Vec<Vec<i64>>> {
    trace
        .devices
        .iter()
        .map(|d| d.streams.iter().map(|s| vec![UNSET; s.ops.len()]).collect())
        .collect()
}

/// When the work a synchronising call waited for was done, as recorded and as replayed.
fn waited_for(trace: &Trace, t: &Times, launched: &Launched, call: u32, end: i64) -> (i64, i64) {
    let mut observed = i64::MIN;
    let mut replayed = i64::MIN;
    for (d, s, i) in waited_ops(trace, launched, call, end) {
        let recorded = trace.devices[d].streams[s].ops.end[i];
        observed = observed.max(recorded);
        let r = t.op_end[d][s][i];
        replayed = replayed.max(if r == UNSET { recorded } else { r });
    }
    (observed, replayed)
}

/// The op's predecessor on its stream (with NCCL on its own stream: the previous op of the
/// same kind there).
fn previous_op(trace: &Trace, change: &Change, d: usize, s: usize, i: usize) -> Option<usize> {
    let ops = &trace.devices[d].streams[s].ops;
    if !change.nccl_own_stream {
        return i.checked_sub(1);
    }
    let nccl = ops.kind[i] == OpKind::Nccl;
    (0..i)
        .rev()
        .find(|&j| (ops.kind[j] == OpKind::Nccl) == nccl)
}

/// A call's replayed start, or [`UNSET`] before the replay reaches it.
fn call_start(trace: &Trace, prep: &Prepared, t: &Times, ti: usize, k: usize) -> i64 {
    let api = &trace.threads[ti].api;
    if prep.sync_names[api.name[k] as usize] {
        return prep.sync_slot(ti, k).map_or(UNSET, |n| t.sync_start[ti][n]);
    }
    match t.call_end[ti][k] {
        UNSET => UNSET,
        end if in_spans(&t.stalls[ti], api.start[k]) => end,
        end => end - (api.end[k] - api.start[k]),
    }
}

fn op_start(
    trace: &Trace,
    prep: &Prepared,
    t: &Times,
    change: &Change,
    d: usize,
    s: usize,
    i: usize,
) -> i64 {
    let ops = &trace.devices[d].streams[s].ops;
    let start = ops.start[i];
    // Launch: the call's start, replayed, plus the latency observed from it.
    let launch = match (ops.launch_thread[i], ops.launch_call[i]) {
        (th, c) if th != NONE && c != NONE => {
            let (th, c) = (th as usize, c as usize);
            let observed = trace.threads[th].api.start[c];
            let replayed = call_start(trace, prep, t, th, c);
            (replayed != UNSET).then_some((observed, replayed))
        }
        _ => None,
    };
    // The predecessor as recorded (what the op may have waited for) and in the replay
    // (another op when NCCL moves to its own stream: then only the spacing is kept).
    let recorded = i.checked_sub(1).map(|j| ops.end[j]);
    let prev = previous_op(trace, change, d, s, i).and_then(|j| {
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
const MIN_SPACING_NS: i64 = 1_000;
/// A launch reaches the GPU at least this long after its call starts.
const MIN_LAUNCH_LATENCY_NS: i64 = 5_000;

/// Once every rank's kernel of a collective has started: they end together, the transfer
/// time observed after the last start.
fn finish_collective(
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

/// A copy of the trace with the replayed times.
fn rebuild(trace: &Trace, prep: &Prepared, t: &Times, change: &Change) -> Trace {
    let starts = t.op_start.as_ref().expect("a rebuild keeps the starts");
    let mut out = trace.clone();
    for (di, d) in out.devices.iter_mut().enumerate() {
        let mut extra: Vec<Stream> = Vec::new();
        for (si, s) in d.streams.iter_mut().enumerate() {
            let replayed = starts[di][si].iter().zip(&t.op_end[di][si]);
            for (i, (&a, &b)) in replayed.enumerate() {
                if a != UNSET {
                    s.ops.start[i] = a;
                    s.ops.end[i] = b.max(a);
                }
            }
            if change.nccl_own_stream && s.ops.kind.contains(&OpKind::Nccl) {
                let order: Vec<usize> = (0..s.ops.len()).collect();
                let (nccl, other): (Vec<usize>, Vec<usize>) = order
                    .into_iter()
                    .partition(|&i| s.ops.kind[i] == OpKind::Nccl);
                let nccl_ops = s.ops.select(&nccl);
                s.ops = s.ops.select(&other);
                extra.push(Stream::new(
                    s.id + NCCL_STREAM_ID_OFFSET,
                    s.pid,
                    sorted(nccl_ops),
                ));
            }
            let ops = sorted(std::mem::take(&mut s.ops));
            *s = Stream::new(s.id, s.pid, ops);
        }
        d.streams.extend(extra);
    }
    for (ti, th) in out.threads.iter_mut().enumerate() {
        let starts: Vec<i64> = (0..th.api.len())
            .map(|k| call_start(trace, prep, t, ti, k))
            .collect();
        let ends = &t.call_end[ti];
        let observed_start = th.api.start.clone();
        let observed_end = th.api.end.clone();
        // A CPU time on this thread, moved as the calls around it moved; `k` is the last
        // call starting at or before it.
        let moved = |x: i64, k: usize| -> i64 {
            if k == 0 {
                return x;
            }
            let k = k - 1;
            if starts[k] == UNSET || ends[k] == UNSET {
                return x;
            }
            if x < observed_end[k] {
                (x + starts[k] - observed_start[k]).min(ends[k])
            } else {
                x + ends[k] - observed_end[k]
            }
        };
        // Ranges in start order: the call before a start only moves on; an end lies after
        // its start, found by galloping from there.
        let mut cursor = 0;
        for i in 0..th.nvtx.len() {
            let (a, b) = (th.nvtx.start[i], th.nvtx.end[i]);
            cursor = gallop(cursor, observed_start.len(), |c| observed_start[c] <= a);
            let end_call = gallop(cursor, observed_start.len(), |c| observed_start[c] <= b);
            th.nvtx.start[i] = moved(a, cursor);
            th.nvtx.end[i] = moved(b, end_call).max(th.nvtx.start[i]);
        }
        for x in &mut th.marks.time {
            let k = observed_start.partition_point(|&s| s <= *x);
            *x = moved(*x, k);
        }
        // OS runtime calls move with the CPU time around them, as the ranges do.
        let mut cursor = 0;
        for i in 0..th.osrt.len() {
            let (a, b) = (th.osrt.start[i], th.osrt.end[i]);
            cursor = gallop(cursor, observed_start.len(), |c| observed_start[c] <= a);
            let end_call = gallop(cursor, observed_start.len(), |c| observed_start[c] <= b);
            th.osrt.start[i] = moved(a, cursor);
            th.osrt.end[i] = moved(b, end_call).max(th.osrt.start[i]);
        }
        th.osrt.sort_by_start();
        for k in 0..th.api.len() {
            if starts[k] != UNSET && ends[k] != UNSET {
                th.api.start[k] = starts[k];
                th.api.end[k] = ends[k].max(starts[k]);
            }
        }
        th.index_calls();
    }
    out
}

/// Streams NCCL is moved to get the compute stream's id plus this.
const NCCL_STREAM_ID_OFFSET: u32 = 10_000;

/// Ops sorted by start (replayed starts keep each stream's order, except where NCCL left).
fn sorted(mut ops: crate::trace::GpuOps) -> crate::trace::GpuOps {
    ops.sort_by_start();
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packed_order_gives_back_the_recorded_order() {
        let dir = std::env::temp_dir().join(format!("nx-packed-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny.sqlite");
        let options = crate::synth::SynthOptions::new(crate::synth::Preset::Tiny);
        crate::synth::generate(&path, options).unwrap();
        let (trace, _) = crate::load::load(&path).unwrap();
        let merged = packed_is_recorded(&trace);
        assert!(merged.len() > 1000 && merged.iter().any(|e| matches!(e, Event::SyncEnd { .. })));
        std::fs::remove_dir_all(&dir).ok();
        // Real exports too: their equal times (a call and the op it waits for ending
        // together) are where the two orders could part.
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
        let mut real = 0;
        for sub in ["real", "real-round3", "real-round4"] {
            for entry in std::fs::read_dir(fixtures.join(sub)).expect("the shared real exports") {
                let (trace, _) = crate::load::load(&entry.unwrap().path()).unwrap();
                packed_is_recorded(&trace);
                real += 1;
            }
        }
        assert!(real >= 6);
    }

    /// Asserts the packed order gives back the recorded order; returns it.
    fn packed_is_recorded(trace: &Trace) -> Vec<Event> {
        let prep = Prepared::new(trace);
        let packed: Vec<Event> = prep
            .order
            .as_ref()
            .expect("a few streams and threads")
            .events(&prep.sync_calls)
            .collect();
        let merged: Vec<Event> = RecordedOrder::new(trace, &prep.sync_names).collect();
        assert!(packed == merged);
        merged
    }
}
