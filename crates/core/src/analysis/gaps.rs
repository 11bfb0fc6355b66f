//! Gaps: maximal intervals inside a window with nothing running on the device (no kernel,
//! memcpy or memset on any stream), at least `min_gap_ns` long; each with its neighbours,
//! their NVTX context, and why the GPU waited.

use serde::Serialize;

use rayon::prelude::*;

use super::intervals::{Window, ops_touching};
use crate::trace::{Device, DeviceId, NONE, RangeKind, StrId, Thread, Trace};

/// Default minimum gap (analysis-definitions.md).
pub const DEFAULT_MIN_GAP_NS: i64 = 1_000;

/// A synchronising call that waited for the GPU to drain returns when its last op ends;
/// CPU and GPU timestamps are on clocks converted into one, and real exports show the call
/// returning up to a few µs *before* the op's recorded end (2-4 µs on the shared 2-GPU
/// export). A sync that returned this close before a gap's start is the gap's cause.
pub const SYNC_RETURN_SKEW_NS: i64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The launching thread was in a synchronising call that returned in the gap.
    HostSync,
    /// Launched only after the previous op ended, by a thread that has launched each op
    /// just in time ever since a sync emptied the queue (a host-sync gap began the run of
    /// such gaps, one op apart): without the sync the CPU would have been ahead.
    AfterSync,
    /// The next op was launched only after the previous one ended, with no sync.
    HostBound,
    /// The next op was launched in time, yet the GPU waited.
    Dependency,
    /// The op after the gap has no known launching call.
    Unknown,
}

impl Cause {
    /// What the cause means, for a reader who has not seen the definitions.
    pub fn help(self) -> &'static str {
        match self {
            Cause::HostSync => {
                "host_sync: the CPU thread that launched the next kernel was waiting in a synchronising call (cudaStreamSynchronize, a blocking copy, .item()) that returned only in the gap, so it launched late. Fix: remove or defer the sync."
            }
            Cause::AfterSync => {
                "after_sync: the next kernel was launched only after the GPU had run dry, by a thread that has launched every kernel just in time since a synchronising call emptied the queue: it never got ahead again, so the sync's cost goes on until a long kernel lets the CPU lead. Fix: remove or defer that sync."
            }
            Cause::HostBound => {
                "host_bound: the next kernel was launched only after the GPU had run dry, with no sync in between: the CPU did not keep up (Python overhead, JIT compilation, data loading). Fix: less CPU work per launch, CUDA graphs."
            }
            Cause::Dependency => {
                "dependency: the next kernel had already been launched, yet the GPU waited: a cross-stream event wait, another GPU, or profiler overhead held it back."
            }
            Cause::Unknown => {
                "unknown: the kernel after the gap has no known launching call (no API row with its correlation id)."
            }
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Cause::HostSync => "host_sync",
            Cause::AfterSync => "after_sync",
            Cause::HostBound => "host_bound",
            Cause::Dependency => "dependency",
            Cause::Unknown => "unknown",
        }
    }
}

/// A GPU op by position: stream index in the device, op index in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpRef {
    pub stream: u32,
    pub op: u32,
}

/// A gap, compact: millions of them fit (a real-shaped trace has one at nearly every
/// kernel boundary). Names and NVTX context are ids; [`super::recurring::describe`] puts
/// them in words for the few that are shown.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Gap {
    /// The device's id (nsys `deviceId`; 16 bits, so that a gap takes 48 bytes).
    pub device: u16,
    pub start_ns: i64,
    pub duration_ns: i64,
    /// The ops on either side, by position (internal: JSON names them and their streams).
    #[serde(skip)]
    pub before: OpRef,
    #[serde(skip)]
    pub after: OpRef,
    pub cause: Cause,
    // The names of the ops either side are not kept (8 of 48 bytes a gap, 35 MB of the
    // realistic large trace's 4.4 M gaps): `before_name`/`after_name` read the ops'.
    /// The deepest NVTX range common to both neighbours' launch paths (its text), or
    /// [`NONE`].
    #[serde(skip)]
    pub enclosing: StrId,
}

/// The name of a device's op, [`NONE`] when the trace has no such op.
fn op_name(trace: &Trace, device: DeviceId, op: OpRef) -> StrId {
    trace
        .device(device)
        .and_then(|d| d.streams.get(op.stream as usize))
        .and_then(|s| s.ops.name.get(op.op as usize))
        .copied()
        .unwrap_or(NONE)
}

impl Gap {
    /// A placeholder, overwritten before it is read (see [`gaps_into`]).
    pub const EMPTY: Gap = Gap {
        device: 0,
        start_ns: 0,
        duration_ns: 0,
        before: OpRef { stream: 0, op: 0 },
        after: OpRef { stream: 0, op: 0 },
        cause: Cause::Unknown,
        enclosing: NONE,
    };

    /// The device's id.
    pub fn device_id(&self) -> DeviceId {
        DeviceId(self.device as u32)
    }

    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.duration_ns
    }

    /// The name of the op before it (in the trace it was found in).
    pub fn before_name(&self, trace: &Trace) -> StrId {
        op_name(trace, self.device_id(), self.before)
    }

    /// The name of the op after it.
    pub fn after_name(&self, trace: &Trace) -> StrId {
        op_name(trace, self.device_id(), self.after)
    }

    pub fn enclosing(&self) -> Option<StrId> {
        (self.enclosing != NONE).then_some(self.enclosing)
    }

    /// The index in `Trace::threads` of the thread that launched the op after the gap.
    pub fn launching_thread(&self, trace: &Trace) -> Option<usize> {
        let ops = &trace
            .device(self.device_id())?
            .streams
            .get(self.after.stream as usize)?
            .ops;
        let thread = *ops.launch_thread.get(self.after.op as usize)?;
        (thread != NONE).then_some(thread as usize)
    }
}

/// What finding gaps needs of the CPU side, built once per trace: per thread, the sorted
/// ends of its synchronising calls (a gap's cause is one binary search, however long the
/// thread's calls are), and per API call the innermost NVTX push/pop range open at its
/// start (a neighbour's NVTX path is a walk up from there).
pub struct CpuIndex {
    sync_ends: Vec<Vec<i64>>,
    /// How long each of those calls lasted (beside its end).
    sync_lengths: Vec<Vec<i64>>,
    call_range: Vec<Vec<u32>>,
}

/// Per thread, where the last gap's look among its synchronising calls stood (see
/// [`CpuIndex::sync_position`]); one per walk over a device's gaps.
#[derive(Default)]
struct SyncCursor {
    at: Vec<crate::sorted::Cursor>,
}

impl CpuIndex {
    pub fn new(trace: &Trace) -> Self {
        crate::profile_scope!("analysis: CPU index");
        let sync_names = sync_call_names(trace);
        // Per thread: (its syncs' (ends, lengths) by end, each call's innermost range).
        type ThreadIndex = ((Vec<i64>, Vec<i64>), Vec<u32>);
        let per_thread: Vec<ThreadIndex> = trace
            .threads
            .par_iter()
            .map(|t| {
                let mut syncs: Vec<(i64, i64)> = (0..t.api.len())
                    .filter(|&i| sync_names[t.api.name[i] as usize])
                    .map(|i| (t.api.end[i], t.api.end[i] - t.api.start[i]))
                    .collect();
                syncs.sort_unstable();
                (syncs.into_iter().unzip(), innermost_range_at_calls(t))
            })
            .collect();
        let (syncs, call_range): (Vec<(Vec<i64>, Vec<i64>)>, _) = per_thread.into_iter().unzip();
        let (sync_ends, sync_lengths) = syncs.into_iter().unzip();
        Self {
            sync_ends,
            sync_lengths,
            call_range,
        }
    }

    /// Where `t` falls among `thread`'s synchronising calls' ends: the first that is not
    /// before it. `cursor` keeps, per thread, where the last lookup stood: a device's gaps
    /// come in time order, so the place is mostly the same or a few ends on (a search for
    /// each of 4.4 M gaps was 45 % of working out their causes and ranges).
    fn sync_position(&self, cursor: &mut SyncCursor, thread: usize, t: i64) -> usize {
        let ends = &self.sync_ends[thread];
        if cursor.at.len() != self.sync_ends.len() {
            cursor.at = vec![crate::sorted::Cursor::default(); self.sync_ends.len()];
        }
        cursor.at[thread].seek(ends.len(), |k| ends[k] < t)
    }

    /// The synchronising call of `thread` (its place among the thread's) that returned
    /// inside `[a, b]` (the first), and the latest that returned in the
    /// [`SYNC_RETURN_SKEW_NS`] before `a`.
    fn synced(
        &self,
        cursor: &mut SyncCursor,
        thread: usize,
        a: i64,
        b: i64,
    ) -> (Option<usize>, Option<usize>) {
        let ends = &self.sync_ends[thread];
        let i = self.sync_position(cursor, thread, a);
        let inside = ends.get(i).is_some_and(|&e| e <= b).then_some(i);
        let just_before = i
            .checked_sub(1)
            .filter(|&j| ends[j] >= a - SYNC_RETURN_SKEW_NS);
        (inside, just_before)
    }

    /// The NVTX path (text ids, outermost first) at the launch of `op`, into `path`.
    fn launch_path(&self, trace: &Trace, device: &Device, op: OpRef, path: &mut Vec<StrId>) {
        path.clear();
        let Some((thread, call)) = launch_index(device, op) else {
            return;
        };
        let nvtx = &trace.threads[thread].nvtx;
        let mut r = self.call_range[thread][call];
        while r != NONE {
            path.push(nvtx.text[r as usize]);
            r = nvtx.parent[r as usize];
        }
        path.reverse();
    }
}

/// Per API call of `thread`, the innermost push/pop range containing its start (as
/// [`crate::trace::NvtxRanges::path_at`] finds it), in one sweep over calls and ranges.
fn innermost_range_at_calls(thread: &crate::trace::Thread) -> Vec<u32> {
    let (api, nvtx) = (&thread.api, &thread.nvtx);
    let mut out = Vec::with_capacity(api.len());
    let mut open: Vec<u32> = Vec::new();
    let mut next = 0;
    for &t in &api.start {
        // Ranges are sorted by start, a parent before its children: open every range that
        // starts by `t`, closing those that ended before it.
        while next < nvtx.len() && nvtx.start[next] <= t {
            if nvtx.kind[next] == RangeKind::PushPop {
                while open
                    .last()
                    .is_some_and(|&r| nvtx.end[r as usize] < nvtx.start[next])
                {
                    open.pop();
                }
                open.push(next as u32);
            }
            next += 1;
        }
        while open.last().is_some_and(|&r| nvtx.end[r as usize] < t) {
            open.pop();
        }
        out.push(open.last().copied().unwrap_or(NONE));
    }
    out
}

/// Every gap of `device` in `window`, in time order.
pub fn find_gaps(
    device: &Device,
    window: Window,
    min_gap_ns: i64,
) -> Vec<(i64, i64, OpRef, OpRef)> {
    let mut gaps = Vec::with_capacity(most_gaps(device, window));
    for_each_gap(device, window, min_gap_ns, |s, e, before, after| {
        gaps.push((s, e, before, after))
    });
    gaps
}

/// The ops touching the window, plus each stream's neighbours just outside it (so that
/// idle time at the window's edges is a gap with a known op before and after): per
/// stream, the first and one past the last.
fn ops_around(device: &Device, window: Window) -> Vec<(usize, usize)> {
    device
        .streams
        .iter()
        .map(|stream| {
            let inside = ops_touching(stream, window);
            (
                inside.start.saturating_sub(1),
                (inside.end + 1).min(stream.ops.len()),
            )
        })
        .collect()
}

/// At most a gap per op: a list reserved this large is never grown by copies (a
/// real-shaped trace has a gap at nearly every kernel boundary; pages not written are
/// never touched).
fn most_gaps(device: &Device, window: Window) -> usize {
    ops_around(device, window)
        .iter()
        .map(|(a, b)| b.saturating_sub(*a))
        .sum()
}

/// Calls `found(start, end, op before, op after)` for every gap of `device` in `window`,
/// in time order; the ops are taken in (start, end) order by merging the streams, each
/// sorted: no list of them, or of the gaps, is made.
pub fn for_each_gap(
    device: &Device,
    window: Window,
    min_gap_ns: i64,
    mut found: impl FnMut(i64, i64, OpRef, OpRef),
) {
    let streams = &device.streams;
    let (mut next, stop): (Vec<usize>, Vec<usize>) = ops_around(device, window).into_iter().unzip();
    let merged = std::iter::from_fn(|| {
        let mut best: Option<(i64, i64, usize)> = None;
        for (si, stream) in streams.iter().enumerate() {
            let i = next[si];
            if i < stop[si] {
                let (s, e) = (stream.ops.start[i], stream.ops.end[i]);
                if best.is_none_or(|(bs, be, _)| (s, e) < (bs, be)) {
                    best = Some((s, e, si));
                }
            }
        }
        let (s, e, si) = best?;
        let r = OpRef {
            stream: si as u32,
            op: next[si] as u32,
        };
        next[si] += 1;
        Some((s, e, r))
    });
    let mut last: Option<(i64, OpRef)> = None; // the op that ends latest so far
    for (s, e, r) in merged {
        if let Some((busy_until, before)) = last {
            if let Some((gs, ge)) = window.clip(busy_until, s)
                && ge - gs >= min_gap_ns
            {
                found(gs, ge, before, r);
            }
            if e > busy_until {
                last = Some((e, r));
            }
        } else {
            last = Some((e, r));
        }
    }
}

/// Per string id: is it the name of a synchronising API call? Only the names API calls use
/// are tested (a trace holds millions of other strings: NVTX texts).
pub fn sync_call_names(trace: &Trace) -> Vec<bool> {
    trace.api_names_where(is_synchronizing)
}

/// Per thread, its synchronising calls (indices, in call order), `sync_names` as
/// [`sync_call_names`] gives them.
pub fn sync_calls_by_thread(trace: &Trace, sync_names: &[bool]) -> Vec<Vec<u32>> {
    trace
        .threads
        .iter()
        .map(|th| {
            (0..th.api.len() as u32)
                .filter(|&k| sync_names[th.api.name[k as usize] as usize])
                .collect()
        })
        .collect()
}

/// Is this API call one that makes the CPU wait for the GPU?
pub fn is_synchronizing(name: &str) -> bool {
    name.contains("Synchronize")
        || name.starts_with("cudaMemcpy_")
        || name == "cudaMemcpy"
        || name.starts_with("cuMemcpyDtoH")
        || name.starts_with("cudaEventSynchronize")
}

/// Gaps of one device with their causes and NVTX context.
pub fn gaps(
    trace: &Trace,
    cpu: &CpuIndex,
    device: &Device,
    window: Window,
    min_gap_ns: i64,
) -> Vec<Gap> {
    let mut gaps = Vec::with_capacity(most_gaps(device, window));
    each_gap(trace, cpu, device, window, min_gap_ns, |g| gaps.push(g));
    gaps
}

/// How many gaps of at least `min_gap_ns` `device` has in `window` (no cause, no NVTX:
/// a tenth of [`gaps`]' work).
pub fn count_gaps(device: &Device, window: Window, min_gap_ns: i64) -> usize {
    let mut n = 0;
    for_each_gap(device, window, min_gap_ns, |_, _, _, _| n += 1);
    n
}

/// [`gaps`] written into `out`, which [`count_gaps`] sized: several devices fill one
/// list side by side, each its own part, and no per-device list is copied into it.
pub fn gaps_into(
    trace: &Trace,
    cpu: &CpuIndex,
    device: &Device,
    window: Window,
    min_gap_ns: i64,
    out: &mut [Gap],
) {
    let mut slots = out.iter_mut();
    each_gap(trace, cpu, device, window, min_gap_ns, |g| {
        if let Some(slot) = slots.next() {
            *slot = g;
        }
    });
    debug_assert!(slots.next().is_none(), "a gap count that differs");
}

fn each_gap(
    trace: &Trace,
    cpu: &CpuIndex,
    device: &Device,
    window: Window,
    min_gap_ns: i64,
    mut put: impl FnMut(Gap),
) {
    crate::profile_scope!("analysis: gaps of one GPU");
    // Neighbouring gaps share an op: its path is kept from one gap to the next.
    let (mut before_path, mut after_path) = (Vec::new(), Vec::new());
    let mut after_of_last: Option<OpRef> = None;
    let mut cursor = SyncCursor::default();
    // The thread whose sync emptied the queue, while every gap since is one op from the
    // last and host-bound on it, and the lead the sync cost it not yet spent on them: a
    // run of after-sync gaps. (Without the sync the CPU would have been ahead by as long
    // as it waited; a gap beyond that — a JIT compilation — is the host's own.)
    let mut drained_by: Option<usize> = None;
    let mut lead_left = 0i64;
    for_each_gap(device, window, min_gap_ns, |gs, ge, before, after| {
        let one_op_apart = after_of_last == Some(before);
        if one_op_apart {
            std::mem::swap(&mut before_path, &mut after_path);
        } else {
            cpu.launch_path(trace, device, before, &mut before_path);
        }
        cpu.launch_path(trace, device, after, &mut after_path);
        after_of_last = Some(after);
        let (mut cause, waited) = cause(trace, cpu, &mut cursor, device, before, after, gs, ge);
        let launcher = launch_index(device, after).map(|(t, _)| t);
        match cause {
            Cause::HostSync => (drained_by, lead_left) = (launcher, waited),
            Cause::HostBound
                if one_op_apart
                    && drained_by.is_some()
                    && drained_by == launcher
                    && ge - gs <= lead_left =>
            {
                cause = Cause::AfterSync;
                lead_left -= ge - gs;
            }
            _ => drained_by = None,
        }
        put(Gap {
            device: device.id.0 as u16,
            start_ns: gs,
            duration_ns: ge - gs,
            before,
            after,
            cause,
            enclosing: enclosing(&before_path, &after_path).unwrap_or(NONE),
        });
    });
}

fn launch_index(device: &Device, op: OpRef) -> Option<(usize, usize)> {
    let ops = &device.streams[op.stream as usize].ops;
    let (thread, call) = (
        ops.launch_thread[op.op as usize],
        ops.launch_call[op.op as usize],
    );
    (call != NONE).then_some((thread as usize, call as usize))
}

fn launch_of<'t>(trace: &'t Trace, device: &Device, op: OpRef) -> Option<(&'t Thread, usize)> {
    launch_index(device, op).map(|(t, c)| (&trace.threads[t], c))
}

/// A gap's cause, and for a host-sync gap how long the sync waited (the lead the CPU lost).
#[allow(clippy::too_many_arguments)]
fn cause(
    trace: &Trace,
    cpu: &CpuIndex,
    cursor: &mut SyncCursor,
    device: &Device,
    before: OpRef,
    after: OpRef,
    gap_start: i64,
    gap_end: i64,
) -> (Cause, i64) {
    let Some((thread, call)) = launch_index(device, after) else {
        return (Cause::Unknown, 0);
    };
    // A synchronising call of the launching thread that returned inside the gap (or at its
    // start), or just before it while the op the gap follows was already queued: it waited
    // for that op (the clocks put its return a few µs early).
    let (synced_in, synced_just_before) = cpu.synced(cursor, thread, gap_start, gap_end);
    if let Some(k) = synced_in {
        return (Cause::HostSync, cpu.sync_lengths[thread][k]);
    }
    if let Some(k) = synced_just_before
        && launch_of(trace, device, before)
            .is_some_and(|(t, c)| t.api.start[c] < cpu.sync_ends[thread][k])
    {
        return (Cause::HostSync, cpu.sync_lengths[thread][k]);
    }
    let before_end = device.streams[before.stream as usize].ops.end[before.op as usize];
    if trace.threads[thread].api.start[call] >= before_end {
        (Cause::HostBound, 0)
    } else {
        (Cause::Dependency, 0)
    }
}

/// The synchronising call (thread index, call index) of a host-sync gap's launching thread:
/// the latest that returned in the gap, or up to [`SYNC_RETURN_SKEW_NS`] before it.
pub fn sync_call_of_gap(trace: &Trace, g: &Gap) -> Option<(usize, usize)> {
    sync_call_of_gap_with(trace, &sync_call_names(trace), g)
}

/// [`sync_call_of_gap`], with [`sync_call_names`] worked out once for many gaps.
fn sync_call_of_gap_with(trace: &Trace, sync_names: &[bool], g: &Gap) -> Option<(usize, usize)> {
    let device = trace.device(g.device_id())?;
    let (thread, _) = launch_index(device, g.after)?;
    let th = &trace.threads[thread];
    let from = g.start_ns - SYNC_RETURN_SKEW_NS;
    th.calls_overlapping(from, g.end_ns() + 1)
        .filter(|&k| th.api.end[k] >= from && th.api.end[k] <= g.end_ns())
        .filter(|&k| sync_names.get(th.api.name[k] as usize) == Some(&true))
        .max_by_key(|&k| th.api.end[k])
        .map(|k| (thread, k))
}

/// Every thread's synchronising calls, for [`sync_call_of_gap`] asked of many gaps in turn
/// (hundreds of thousands in a run that synchronises after every collective): the calls
/// ending in a gap are a run of the thread's synchronising calls, found from where the
/// last gap's were, not among all its calls.
pub struct SyncCalls<'t> {
    trace: &'t Trace,
    names: Vec<bool>,
    /// Per thread, its synchronising calls in call order, and where the last gap's run
    /// began; `None` where their ends do not come in that order too (then searched as
    /// [`sync_call_of_gap`] does).
    calls: Vec<Option<(Vec<u32>, crate::sorted::Cursor)>>,
}

impl<'t> SyncCalls<'t> {
    pub fn new(trace: &'t Trace) -> Self {
        let names = sync_call_names(trace);
        let calls = sync_calls_by_thread(trace, &names)
            .into_iter()
            .zip(&trace.threads)
            .map(|(calls, th)| {
                let end = |k: u32| th.api.end[k as usize];
                calls
                    .windows(2)
                    .all(|w| end(w[0]) <= end(w[1]))
                    .then_some((calls, crate::sorted::Cursor::default()))
            })
            .collect();
        Self {
            trace,
            names,
            calls,
        }
    }

    /// What [`sync_call_of_gap`] gives for `g`.
    pub fn of_gap(&mut self, g: &Gap) -> Option<(usize, usize)> {
        let trace = self.trace;
        let device = trace.device(g.device_id())?;
        let (thread, _) = launch_index(device, g.after)?;
        let Some((calls, at)) = &mut self.calls[thread] else {
            return sync_call_of_gap_with(trace, &self.names, g);
        };
        let api = &trace.threads[thread].api;
        let end = |i: usize| api.end[calls[i] as usize];
        let (from, to) = (g.start_ns - SYNC_RETURN_SKEW_NS, g.end_ns());
        // Those ending in (from, to], the latest returned; else one of no length at `from`
        // (what the search by overlap finds too).
        let lo = at.seek(calls.len(), |i| end(i) <= from);
        let hi = crate::sorted::gallop(lo, calls.len(), |i| end(i) <= to);
        let call = if hi > lo {
            Some(calls[hi - 1])
        } else {
            calls[..lo]
                .iter()
                .rev()
                .take_while(|&&k| api.end[k as usize] == from)
                .find(|&&k| api.start[k as usize] == from)
                .copied()
        };
        call.map(|k| (thread, k as usize))
    }
}

/// The NVTX push/pop ranges (text ids, outermost first) around the launch call of `op`.
pub fn launch_nvtx_path(trace: &Trace, device: &Device, op: OpRef) -> Vec<crate::trace::StrId> {
    let Some((thread, call)) = launch_of(trace, device, op) else {
        return Vec::new();
    };
    thread
        .nvtx
        .path_at(thread.api.start[call])
        .into_iter()
        .map(|r| thread.nvtx.text[r as usize])
        .collect()
}

/// The deepest range common to both paths.
pub fn enclosing(
    a: &[crate::trace::StrId],
    b: &[crate::trace::StrId],
) -> Option<crate::trace::StrId> {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| x == y)
        .last()
        .map(|(x, _)| *x)
}

#[cfg(test)]
mod tests;
