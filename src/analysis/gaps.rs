//! Gaps: maximal intervals inside a window with nothing running on the device (no kernel,
//! memcpy or memset on any stream), at least `min_gap_ns` long; each with its neighbours,
//! their NVTX context, and why the GPU waited.

use serde::Serialize;

use super::intervals::{Window, ops_touching};
use crate::trace::{Device, NONE, Thread, Trace};

/// Default minimum gap (analysis-definitions.md).
pub const DEFAULT_MIN_GAP_NS: i64 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The launching thread was in a synchronising call that returned in the gap.
    HostSync,
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

#[derive(Debug, Clone, Serialize)]
pub struct Gap {
    pub device: u32,
    pub start_ns: i64,
    pub duration_ns: i64,
    pub before: OpRef,
    pub after: OpRef,
    pub cause: Cause,
}

/// Every gap of `device` in `window`, in time order.
pub fn find_gaps(
    device: &Device,
    window: Window,
    min_gap_ns: i64,
) -> Vec<(i64, i64, OpRef, OpRef)> {
    // All ops touching the window, ordered by start (streams are each sorted: merge them),
    // plus each stream's neighbours just outside it, so that idle time at the window's
    // edges is a gap with a known op before and after.
    let mut ops: Vec<(i64, i64, OpRef)> = Vec::new();
    for (si, stream) in device.streams.iter().enumerate() {
        let o = &stream.ops;
        let inside = ops_touching(stream, window);
        for i in inside.start.saturating_sub(1)..(inside.end + 1).min(o.len()) {
            ops.push((
                o.start[i],
                o.end[i],
                OpRef {
                    stream: si as u32,
                    op: i as u32,
                },
            ));
        }
    }
    // Stable sort: the list is one sorted run per stream, which it merges in O(n log k).
    ops.sort_by_key(|&(s, e, _)| (s, e));
    let mut gaps = Vec::new();
    let mut last: Option<(i64, OpRef)> = None; // the op that ends latest so far
    for (s, e, r) in ops {
        if let Some((busy_until, before)) = last {
            if let Some((gs, ge)) = window.clip(busy_until, s)
                && ge - gs >= min_gap_ns
            {
                gaps.push((gs, ge, before, r));
            }
            if e > busy_until {
                last = Some((e, r));
            }
        } else {
            last = Some((e, r));
        }
    }
    gaps
}

/// Is this API call one that makes the CPU wait for the GPU?
pub fn is_synchronizing(name: &str) -> bool {
    name.contains("Synchronize")
        || name.starts_with("cudaMemcpy_")
        || name == "cudaMemcpy"
        || name.starts_with("cuMemcpyDtoH")
        || name.starts_with("cudaEventSynchronize")
}

/// Gaps of one device with their causes.
pub fn gaps(trace: &Trace, device: &Device, window: Window, min_gap_ns: i64) -> Vec<Gap> {
    find_gaps(device, window, min_gap_ns)
        .into_iter()
        .map(|(gs, ge, before, after)| Gap {
            device: device.id,
            start_ns: gs,
            duration_ns: ge - gs,
            before,
            after,
            cause: cause(trace, device, before, after, gs, ge),
        })
        .collect()
}

fn launch_of<'t>(trace: &'t Trace, device: &Device, op: OpRef) -> Option<(&'t Thread, usize)> {
    let ops = &device.streams[op.stream as usize].ops;
    let (thread, call) = (
        ops.launch_thread[op.op as usize],
        ops.launch_call[op.op as usize],
    );
    (call != NONE).then(|| (&trace.threads[thread as usize], call as usize))
}

fn cause(
    trace: &Trace,
    device: &Device,
    before: OpRef,
    after: OpRef,
    gap_start: i64,
    gap_end: i64,
) -> Cause {
    let Some((thread, call)) = launch_of(trace, device, after) else {
        return Cause::Unknown;
    };
    let api = &thread.api;
    // A synchronising call of the launching thread that returned inside the gap (or at its start).
    let synced = (thread.first_call_running_at(gap_start)..api.len())
        .take_while(|&i| api.start[i] <= gap_end)
        .any(|i| {
            api.end[i] >= gap_start
                && api.end[i] <= gap_end
                && is_synchronizing(&trace.strings.get(api.name[i]))
        });
    if synced {
        return Cause::HostSync;
    }
    let before_end = device.streams[before.stream as usize].ops.end[before.op as usize];
    if api.start[call] >= before_end {
        Cause::HostBound
    } else {
        Cause::Dependency
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
