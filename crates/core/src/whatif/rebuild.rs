//! A copy of the trace with the replayed times.

use super::Prepared;
use super::change::Change;
use super::engine::{Times, UNSET, call_end, call_start};
use crate::sorted::gallop;
use crate::trace::{OpKind, Stream, Thread, Trace};

/// A copy of the trace with the replayed times.
pub(super) fn rebuild(trace: &Trace, prep: &Prepared, t: &Times, change: &Change) -> Trace {
    let starts = t.op_start.as_ref().expect("a rebuild keeps the starts");
    let mut out = unreplayed_left_out(trace);
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
                let nccl_ops = s.ops.select_rows(&nccl);
                s.ops = s.ops.select_rows(&other);
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
        let mut starts: Vec<i64> = (0..th.api.len())
            .map(|k| call_start(trace, t, ti, k))
            .collect();
        // Calls a change made take no time start at one instant: a nanosecond apart in the
        // copy, so that every range and launch keeps its place among them (an iteration's
        // launches stay in its range, not the last range at that instant).
        let mut last = i64::MIN;
        for s in starts.iter_mut().filter(|s| **s != UNSET) {
            *s = (*s).max(last.saturating_add(1));
            last = *s;
        }
        let ends: Vec<i64> = (0..th.api.len())
            .map(|k| call_end(trace, prep, t, ti, k).max(starts[k]))
            .collect();
        let observed_start = th.api.start.clone();
        let observed_end = th.api.end.clone();
        // A CPU time on this thread, moved as the calls around it moved; `k` is the number
        // of calls starting at or before it. Between two calls it keeps its distance from
        // the one before, but never passes the one after: where the change cut CPU time
        // there, a range's edge would otherwise land after calls it came before.
        let moved = |x: i64, k: usize| -> i64 {
            let next_start = starts.get(k).copied().filter(|&s| s != UNSET);
            let limit = |y: i64| next_start.map_or(y, |s| y.min(s));
            if k == 0 {
                return limit(x);
            }
            let k = k - 1;
            if starts[k] == UNSET || ends[k] == UNSET {
                return x;
            }
            if x < observed_end[k] {
                (x + starts[k] - observed_start[k]).min(ends[k])
            } else {
                limit(x + ends[k] - observed_end[k])
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

/// A copy of `trace` without what the replay does not move: the threads' NCCL calls (with
/// their payloads' tally), the GPUs' sampled counters and device memory events, which would
/// keep their recorded times in the replayed run. The copy is held beside the trace (a fifth
/// of the model is NCCL calls on a run whose NCCL annotates its calls).
fn unreplayed_left_out(trace: &Trace) -> Trace {
    // Every field named, so that one added to either struct is decided on here.
    let Trace {
        info,
        strings,
        devices,
        threads,
        processes,
        sources,
        nvtx_domains,
        capture_window,
        nccl_payloads: _,
        call_stacks,
        memory_usage: _,
        gpu_metrics: _,
    } = trace;
    let threads = threads
        .iter()
        .map(|t| {
            let Thread {
                global_tid,
                pid,
                tid,
                source,
                name,
                api,
                nvtx,
                marks,
                osrt,
                nccl: _,
                scheduling,
                longest_call_ns,
                api_reach,
                longest_osrt_ns,
                osrt_reach,
            } = t;
            Thread {
                global_tid: *global_tid,
                pid: *pid,
                tid: *tid,
                source: *source,
                name: name.clone(),
                api: api.clone(),
                nvtx: nvtx.clone(),
                marks: marks.clone(),
                osrt: osrt.clone(),
                nccl: Default::default(),
                scheduling: scheduling.clone(),
                longest_call_ns: *longest_call_ns,
                api_reach: api_reach.clone(),
                longest_osrt_ns: *longest_osrt_ns,
                osrt_reach: osrt_reach.clone(),
            }
        })
        .collect();
    Trace {
        info: info.clone(),
        strings: strings.clone(),
        devices: devices.clone(),
        threads,
        processes: processes.clone(),
        sources: sources.clone(),
        nvtx_domains: nvtx_domains.clone(),
        capture_window: *capture_window,
        nccl_payloads: Default::default(),
        call_stacks: call_stacks.clone(),
        memory_usage: Vec::new(),
        gpu_metrics: Vec::new(),
    }
}

/// Streams NCCL is moved to get the compute stream's id plus this.
pub(super) const NCCL_STREAM_ID_OFFSET: u32 = 10_000;

/// Ops sorted by start (replayed starts keep each stream's order, except where NCCL left).
pub(super) fn sorted(mut ops: crate::trace::GpuOps) -> crate::trace::GpuOps {
    ops.sort_by_start();
    ops
}
