//! The critical path of an iteration, across ranks: the chain of work, followed back from
//! the iteration's end to its start, in which each piece could not start earlier because
//! of the one before it.
//!
//! - A kernel or copy waits for its stream's previous op, for its launch, or — when it
//!   started well after both — for an op of another stream of its GPU (an event wait): the
//!   later of these held it. A back-to-back op's 1–3 µs of spacing counts with the op.
//! - A launch (the call's start to the op's start) waits for the CPU work before it on its
//!   thread: the calls before it and the CPU time between them.
//! - A synchronising call returns when the GPU work it waited for ends: the path moves to
//!   that op.
//! - A collective's kernels end together, their transfer after the last rank's kernel
//!   started: the path moves to that rank.
//!
//! Segments tile the iteration (from the earliest start of its kernels on any GPU to the
//! latest end) without overlaps; each is clipped to it. The walk reads the recorded trace
//! only: it predicts nothing (the what-if replay does).

pub mod report;
pub mod slack;

use rustc_hash::FxHashMap;

use crate::analysis::iterations::Iterations;
use crate::analysis::nccl_wait::{Collectives, collectives};
use crate::analysis::{gaps::sync_call_names, nccl_wait::Collective};
use crate::trace::launches::{Launched, launched_by_thread, waited_ops};
use crate::trace::{DeviceIndex, NONE, OpKind, StrId, Trace};

/// An op's place: (device index, stream index, op index).
pub type OpAt = (usize, usize, usize);

/// What a piece of the path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// A compute kernel running (with the spacing before it when its predecessor held it).
    Kernel,
    /// A memcpy or memset running.
    Memory,
    /// An NCCL kernel after the last rank's kernel started.
    NcclTransfer,
    /// From a launch call's start to its op's start.
    Launch,
    /// A CUDA API call (a synchronising one from the end of what it waited for).
    Api,
    /// CPU time between two calls of a thread.
    Cpu,
}

impl SegmentKind {
    pub const ALL: [SegmentKind; 6] = [
        SegmentKind::Kernel,
        SegmentKind::Memory,
        SegmentKind::NcclTransfer,
        SegmentKind::Launch,
        SegmentKind::Api,
        SegmentKind::Cpu,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SegmentKind::Kernel => "kernel",
            SegmentKind::Memory => "memory",
            SegmentKind::NcclTransfer => "nccl_transfer",
            SegmentKind::Launch => "launch",
            SegmentKind::Api => "api",
            SegmentKind::Cpu => "cpu",
        }
    }

    /// GPU work (as opposed to the CPU's part of the path).
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            SegmentKind::Kernel | SegmentKind::Memory | SegmentKind::NcclTransfer
        )
    }
}

/// Where a segment lies in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// An op: device index, stream index, op index.
    Op(usize, usize, usize),
    /// An API call: thread index, call index.
    Call(usize, usize),
    /// CPU time of a thread (thread index).
    Cpu(usize),
}

/// One piece of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub kind: SegmentKind,
    /// The GPU: the op's, or for CPU segments the GPU their thread was launching to.
    pub device: DeviceIndex,
    /// Kernel or copy name, API call name, or for CPU time the innermost NVTX range around
    /// it ([`NONE`] outside any range).
    pub name: StrId,
    pub start_ns: i64,
    pub end_ns: i64,
    pub place: Place,
}

impl Segment {
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// An iteration's critical path (or the whole run's): its segments in time order.
#[derive(Debug, Clone)]
pub struct CriticalPath {
    /// The iteration; `None` for the whole run (a trace without iterations).
    pub iteration: Option<usize>,
    pub start_ns: i64,
    pub end_ns: i64,
    pub segments: Vec<Segment>,
}

impl CriticalPath {
    pub fn wall_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// An op started this much later than both its launch and its stream's previous op before
/// an op of another stream ending meanwhile is taken to have held it (an event wait).
/// Lower finds waits where there were none (launch latency is a few µs); higher misses
/// short cross-stream waits.
const EVENT_WAIT_NS: i64 = 20_000;

/// What every walk over a trace needs, built once (the collectives and each thread's
/// launches per stream).
pub struct Graph<'a> {
    pub trace: &'a Trace,
    sync_names: Vec<bool>,
    groups: std::sync::Arc<Collectives>,
    /// Each NCCL op's collective: (device, stream, op) → index into `groups`.
    member: FxHashMap<(u32, u32, u32), u32>,
    launched: Vec<Launched>,
}

impl<'a> Graph<'a> {
    pub fn new(trace: &'a Trace) -> Self {
        Self::with_collectives(trace, std::sync::Arc::new(collectives(trace)))
    }

    /// Like [`Graph::new`], with the trace's collectives worked out already (see
    /// [`crate::overview::Overview::collectives`]).
    pub fn with_collectives(trace: &'a Trace, groups: std::sync::Arc<Collectives>) -> Self {
        crate::profile_scope!("critical path: graph");
        let mut member = FxHashMap::default();
        for (g, c) in groups.iter().enumerate() {
            for &(d, s, o) in c {
                member.insert((d as u32, s as u32, o as u32), g as u32);
            }
        }
        Self {
            trace,
            sync_names: sync_call_names(trace),
            groups,
            member,
            launched: launched_by_thread(trace),
        }
    }

    /// The collective's kernel that started last, if `op` is part of one.
    fn last_arrival(&self, d: usize, s: usize, i: usize) -> Option<(usize, usize, usize)> {
        let g = *self.member.get(&(d as u32, s as u32, i as u32))?;
        let start =
            |&(d, s, i): &(usize, usize, usize)| self.trace.devices[d].streams[s].ops.start[i];
        self.groups
            .get(g as usize)
            .iter()
            .copied()
            .max_by_key(start)
    }

    pub(crate) fn collective_of(&self, d: usize, s: usize, i: usize) -> Option<&Collective> {
        let g = *self.member.get(&(d as u32, s as u32, i as u32))?;
        Some(self.groups.get(g as usize))
    }

    pub(crate) fn is_sync(&self, name: StrId) -> bool {
        self.sync_names.get(name as usize).copied().unwrap_or(false)
    }

    /// The op a synchronising call waited for (the last of them to end), if it ended
    /// while the call ran.
    pub(crate) fn waited_op(&self, thread: usize, call: usize) -> Option<(usize, usize, usize)> {
        let api = &self.trace.threads[thread].api;
        let (start, end) = (api.start[call], api.end[call]);
        let op_end =
            |&(d, s, i): &(usize, usize, usize)| self.trace.devices[d].streams[s].ops.end[i];
        waited_ops(self.trace, &self.launched[thread], call as u32, end)
            .max_by_key(op_end)
            .filter(|x| op_end(x) >= start)
    }

    /// The iteration window `[start, end]` of iteration `k`: from the earliest start of its
    /// kernels on any GPU to the latest end.
    pub fn iteration_window(&self, iterations: &Iterations, k: usize) -> Option<(i64, i64)> {
        let spans = iterations.spans_of(self.trace, k);
        let start = spans.iter().map(|s| s.1).min()?;
        let end = spans.iter().map(|s| s.2).max()?;
        Some((start, end))
    }

    /// The critical path of iteration `k` (None when no GPU ran it).
    pub fn path(&self, iterations: &Iterations, k: usize) -> Option<CriticalPath> {
        let (start, end) = self.iteration_window(iterations, k)?;
        let (d, _, _) = iterations
            .spans_of(self.trace, k)
            .into_iter()
            .max_by_key(|s| s.2)?;
        let last = self.kernel_ending_by(d.0, end)?;
        Some(CriticalPath {
            iteration: Some(k),
            start_ns: start,
            end_ns: end,
            segments: self.path_to(last, start),
        })
    }

    /// The whole run's critical path, from its first kernel's start on any GPU to its last
    /// kernel's end: what a trace without iterations is given.
    pub fn run_path(&self) -> Option<CriticalPath> {
        let windows = self
            .trace
            .devices
            .iter()
            .enumerate()
            .filter_map(|(d, dev)| Some((d, dev.kernel_window()?)));
        let start = windows.clone().map(|w| w.1.0).min()?;
        let (d, (_, end)) = windows.max_by_key(|w| w.1.1)?;
        let last = self.kernel_ending_by(d, end)?;
        Some(CriticalPath {
            iteration: None,
            start_ns: start,
            end_ns: end,
            segments: self.path_to(last, start),
        })
    }

    /// The critical path of a chosen range `[a, b]`: back from the last kernel to end by
    /// `b` on any GPU, to `a` (None when no kernel ends in the range).
    pub fn window_path(&self, (a, b): (i64, i64)) -> Option<CriticalPath> {
        let last = (0..self.trace.devices.len())
            .filter_map(|d| self.kernel_ending_by(d, b))
            .max_by_key(|&(d, s, i)| self.trace.devices[d].streams[s].ops.end[i])?;
        let end = self.trace.devices[last.0].streams[last.1].ops.end[last.2];
        (end > a).then(|| CriticalPath {
            iteration: None,
            start_ns: a,
            end_ns: end,
            segments: self.path_to(last, a),
        })
    }

    /// The path back from the end of op `(device, stream, op)` to `start`, in time order.
    pub fn path_to(&self, last: (usize, usize, usize), start: i64) -> Vec<Segment> {
        let end = self.trace.devices[last.0].streams[last.1].ops.end[last.2];
        let mut segments = Walk::new(self, start).walk_back_from(last, end);
        segments.reverse();
        segments
    }

    /// What held the start of op `(d, s, i)`: the later of its stream's previous op and
    /// its launch, or an op of another stream when it started well after both.
    pub(crate) fn hold_of(&self, d: usize, s: usize, i: usize) -> Hold {
        let trace = self.trace;
        let ops = &trace.devices[d].streams[s].ops;
        let start = ops.start[i];
        let previous = i.checked_sub(1).map(|j| (j, ops.end[j]));
        let launch = match (ops.launch_thread[i], ops.launch_call[i]) {
            (th, k) if th != NONE && k != NONE => {
                let (th, k) = (th as usize, k as usize);
                Some((th, k, trace.threads[th].api.start[k]))
            }
            _ => None,
        };
        let ready = previous
            .map(|p| p.1)
            .into_iter()
            .chain(launch.map(|l| l.2))
            .max();
        if ready.is_none_or(|r| start - r > EVENT_WAIT_NS)
            && let Some((s2, j, end)) = self.latest_end_on_other_streams(d, s, ready, start)
        {
            return Hold::Event(s2, j, end);
        }
        match (previous, launch) {
            (Some((j, po)), Some((th, k, lo))) => {
                if lo >= po {
                    Hold::Launch(th, k, lo)
                } else {
                    Hold::Previous(j, po)
                }
            }
            (Some((j, po)), None) => Hold::Previous(j, po),
            (None, Some((th, k, lo))) => Hold::Launch(th, k, lo),
            (None, None) => Hold::Nothing,
        }
    }

    /// The op of another stream of GPU `d` that ended last in `(after, by]`.
    fn latest_end_on_other_streams(
        &self,
        d: usize,
        s: usize,
        after: Option<i64>,
        by: i64,
    ) -> Option<(usize, usize, i64)> {
        let device = &self.trace.devices[d];
        let mut best: Option<(usize, usize, i64)> = None;
        for (s2, stream) in device.streams.iter().enumerate() {
            if s2 == s {
                continue;
            }
            let ops = &stream.ops;
            // Ops of a stream follow each other: among those starting before `by`, the
            // last few are the candidates to end latest by then.
            let n = ops.start.partition_point(|&x| x < by);
            for j in (n.saturating_sub(4)..n).rev() {
                let e = ops.end[j];
                if e <= by && after.is_none_or(|a| e > a) && best.is_none_or(|b| e > b.2) {
                    best = Some((s2, j, e));
                }
            }
        }
        best
    }

    /// The kernel of GPU `d` that ends last by `end`.
    fn kernel_ending_by(&self, d: usize, end: i64) -> Option<OpAt> {
        let device = &self.trace.devices[d];
        let mut best: Option<(i64, OpAt)> = None;
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            // Ops of a stream follow each other: the last to start by `end` is the one
            // that can end there.
            let n = ops.start.partition_point(|&x| x < end);
            for i in (n.saturating_sub(4)..n).rev() {
                if ops.kind[i].is_kernel()
                    && ops.end[i] <= end
                    && best.is_none_or(|b| ops.end[i] > b.0)
                {
                    best = Some((ops.end[i], (d, s, i)));
                }
            }
        }
        best.map(|b| b.1)
    }
}

/// Where the walk stands: just before `t`, at the end of an op or at a call's start or end.
#[derive(Clone, Copy)]
enum At {
    OpEnd(usize, usize, usize),
    CallStart(usize, usize),
    CallEnd(usize, usize),
}

/// What held an op's start.
pub(crate) enum Hold {
    /// Its stream's previous op (index), ending at the time.
    Previous(usize, i64),
    /// Its launch call (thread, call), starting at the time.
    Launch(usize, usize, i64),
    /// An op of another stream of its GPU (stream, op), ending at the time.
    Event(usize, usize, i64),
    Nothing,
}

struct Walk<'g, 'a> {
    graph: &'g Graph<'a>,
    /// The iteration's start: nothing before it is followed.
    floor: i64,
    out: Vec<Segment>,
}

/// Steps a walk may take before it is cut (a guard against a malformed trace whose times
/// do not move back; real walks take a few per op on the path).
const MAX_STEPS: usize = 50_000_000;

impl<'g, 'a> Walk<'g, 'a> {
    fn new(graph: &'g Graph<'a>, floor: i64) -> Self {
        Self {
            graph,
            floor,
            out: Vec::new(),
        }
    }

    /// Pushes `[start, end)` clipped to the floor; says whether the walk goes on.
    fn push(
        &mut self,
        kind: SegmentKind,
        device: usize,
        name: StrId,
        start: i64,
        end: i64,
        place: Place,
    ) -> bool {
        let start = start.max(self.floor).min(end);
        if end > start {
            self.out.push(Segment {
                kind,
                device: DeviceIndex(device),
                name,
                start_ns: start,
                end_ns: end,
                place,
            });
        }
        start > self.floor
    }

    /// Walks back from the end of op `(d, s, i)`, which the path reaches at `t`.
    fn walk_back_from(mut self, op: (usize, usize, usize), t: i64) -> Vec<Segment> {
        let mut at = At::OpEnd(op.0, op.1, op.2);
        let mut t = t;
        let mut device = op.0;
        for _ in 0..MAX_STEPS {
            if t <= self.floor {
                break;
            }
            let next = match at {
                At::OpEnd(d, s, i) => {
                    // After a collective's wait edge the path is on the last rank's GPU.
                    let (next, dev) = self.op(d, s, i, t);
                    device = dev;
                    next
                }
                At::CallStart(th, k) => self.call_start(th, k, t, device),
                At::CallEnd(th, k) => {
                    let (next, dev) = self.call_end(th, k, t, device);
                    device = dev;
                    next
                }
            };
            match next {
                Some((a, time)) => {
                    at = a;
                    t = time.min(t);
                }
                None => break,
            }
        }
        // A walk cut short (no known cause before a point) leaves the rest unexplained:
        // it is CPU time of no known call, so that the segments still tile the iteration.
        let reached = self.out.last().map_or(t, |s| s.start_ns.min(t));
        if reached > self.floor {
            self.push(
                SegmentKind::Cpu,
                device,
                NONE,
                self.floor,
                reached,
                Place::Cpu(usize::MAX),
            );
        }
        self.out
    }

    /// An op reached at `t` (its end, or the start of what it held): its segment, where
    /// the walk goes next, and the GPU it is on then (the last rank's, after a collective
    /// that waited for it).
    fn op(&mut self, d: usize, s: usize, i: usize, t: i64) -> (Option<(At, i64)>, usize) {
        let trace = self.graph.trace;
        let ops = &trace.devices[d].streams[s].ops;
        let mut own = (d, s, i);
        let mut start = ops.start[i].min(t);
        let mut t = t;
        if let Some(last) = self.graph.last_arrival(d, s, i) {
            let last_start = trace.devices[last.0].streams[last.1].ops.start[last.2].min(t);
            if last != own && last_start > start {
                // This kernel waited for the last rank: the transfer is on the path, and
                // before it whatever held that rank's kernel.
                if !self.push(
                    SegmentKind::NcclTransfer,
                    d,
                    ops.name[i],
                    last_start,
                    t,
                    Place::Op(d, s, i),
                ) {
                    return (None, d);
                }
                own = last;
                start = last_start;
                t = last_start;
            }
        }
        let (d, s, i) = own;
        let ops = &trace.devices[d].streams[s].ops;
        let kind = match ops.kind[i] {
            OpKind::Compute | OpKind::Graph => SegmentKind::Kernel,
            OpKind::Nccl => SegmentKind::NcclTransfer,
            _ => SegmentKind::Memory,
        };
        let place = Place::Op(d, s, i);
        let next = match self.graph.hold_of(d, s, i) {
            Hold::Previous(j, end) => {
                let from = end.min(start);
                self.push(kind, d, ops.name[i], from, t, place)
                    .then_some((At::OpEnd(d, s, j), from))
            }
            Hold::Event(s2, j, end) => {
                let from = end.min(start);
                self.push(kind, d, ops.name[i], from, t, place)
                    .then_some((At::OpEnd(d, s2, j), from))
            }
            Hold::Launch(th, k, call_start) => {
                if !self.push(kind, d, ops.name[i], start, t, place) {
                    return (None, d);
                }
                let from = call_start.min(start);
                let name = trace.threads[th].api.name[k];
                self.push(
                    SegmentKind::Launch,
                    d,
                    name,
                    from,
                    start,
                    Place::Call(th, k),
                )
                .then_some((At::CallStart(th, k), from))
            }
            Hold::Nothing => {
                self.push(kind, d, ops.name[i], start, t, place);
                None
            }
        };
        (next, d)
    }

    /// At call `k`'s start: the CPU time since the call before it.
    fn call_start(&mut self, th: usize, k: usize, t: i64, device: usize) -> Option<(At, i64)> {
        let thread = &self.graph.trace.threads[th];
        let api = &thread.api;
        let Some(p) = k.checked_sub(1) else {
            self.push_cpu(th, device, self.floor, t);
            return None;
        };
        if api.end[p] > t {
            // The call before is still running (a runtime call around a driver call).
            return self
                .push(
                    SegmentKind::Api,
                    device,
                    api.name[p],
                    api.start[p],
                    t,
                    Place::Call(th, p),
                )
                .then_some((At::CallStart(th, p), api.start[p]));
        }
        self.push_cpu(th, device, api.end[p], t)
            .then_some((At::CallEnd(th, p), api.end[p]))
    }

    /// CPU time `[a, b)` of thread `th`, cut where the NVTX ranges open at either end begin
    /// or finish inside it, each piece named by the innermost range around all of it (a
    /// stall before a branch's first launch is the branch's, not the step's).
    fn push_cpu(&mut self, th: usize, device: usize, a: i64, b: i64) -> bool {
        let nvtx = &self.graph.trace.threads[th].nvtx;
        let inside = |x: i64| x > a && x < b;
        let mut cuts: Vec<i64> = nvtx
            .path_at(a)
            .into_iter()
            .map(|r| nvtx.end[r as usize])
            .chain(nvtx.path_at(b).into_iter().map(|r| nvtx.start[r as usize]))
            .filter(|&x| inside(x))
            .collect();
        cuts.push(a);
        cuts.sort_unstable();
        cuts.dedup();
        // Pushed latest first: the walk goes back in time.
        let mut hi = b;
        for &lo in cuts.iter().rev() {
            // Just inside the piece, so that a range ending or starting at its edge is
            // not taken for one around it.
            let (x, y) = if hi - lo > 2 {
                (lo + 1, hi - 1)
            } else {
                (lo, hi)
            };
            let name = enclosing_range(nvtx, x, y);
            if !self.push(SegmentKind::Cpu, device, name, lo, hi, Place::Cpu(th)) {
                return false;
            }
            hi = lo;
        }
        true
    }

    /// At call `k`'s end: a synchronising call that waited returns after the op it waited
    /// for; any other call ran from its start.
    fn call_end(
        &mut self,
        th: usize,
        k: usize,
        t: i64,
        device: usize,
    ) -> (Option<(At, i64)>, usize) {
        let api = &self.graph.trace.threads[th].api;
        let name = api.name[k];
        if self.graph.is_sync(name)
            && let Some((d, s, i)) = self.graph.waited_op(th, k)
        {
            let op_end = self.graph.trace.devices[d].streams[s].ops.end[i].min(t);
            let go = self.push(
                SegmentKind::Api,
                device,
                name,
                op_end,
                t,
                Place::Call(th, k),
            );
            return (go.then_some((At::OpEnd(d, s, i), op_end)), d);
        }
        let start = api.start[k].min(t);
        let go = self.push(SegmentKind::Api, device, name, start, t, Place::Call(th, k));
        (go.then_some((At::CallStart(th, k), start)), device)
    }
}

/// The text of the innermost push/pop range of `thread` around all of `[a, b]`, or
/// [`NONE`].
fn enclosing_range(nvtx: &crate::trace::NvtxRanges, a: i64, b: i64) -> StrId {
    match nvtx.enclosing(a, b) {
        NONE => NONE,
        r => nvtx.text[r as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    fn kinds(trace: &Trace, segments: &[Segment]) -> Vec<(SegmentKind, String, i64, i64)> {
        segments
            .iter()
            .map(|s| {
                let name = if s.name == NONE {
                    "-".to_string()
                } else {
                    trace.strings.get(s.name).into_owned()
                };
                (s.kind, name, s.start_ns, s.end_ns)
            })
            .collect()
    }

    #[test]
    fn a_sync_then_a_late_launch_put_the_cpu_on_the_path() {
        use SegmentKind::*;
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        b.range(t, "step", 0, 5_000);
        let c0 = b.call(t, "cudaLaunchKernel", 10, 20);
        b.kernel(0, 7, "a", (100, 1_000), Some(c0));
        // The CPU waits for "a" (returns at 1_050), works until 1_100, launches "b".
        b.call(t, "cudaStreamSynchronize", 30, 1_050);
        let c1 = b.call(t, "cudaLaunchKernel", 1_100, 1_110);
        b.kernel(0, 7, "b", (1_200, 2_000), Some(c1));
        // Launched early: "c" waits for "b" on the stream, 2 µs apart.
        let c2 = b.call(t, "cudaLaunchKernel", 1_120, 1_130);
        b.kernel(0, 7, "c", (2_002, 3_000), Some(c2));
        let trace = b.build();
        let graph = Graph::new(&trace);
        let path = graph.path_to((0, 0, 2), 100);
        assert_eq!(
            kinds(&trace, &path),
            vec![
                (Kernel, "a".into(), 100, 1_000),
                (Api, "cudaStreamSynchronize".into(), 1_000, 1_050),
                (Cpu, "step".into(), 1_050, 1_100),
                (Launch, "cudaLaunchKernel".into(), 1_100, 1_200),
                (Kernel, "b".into(), 1_200, 2_000),
                (Kernel, "c".into(), 2_000, 3_000),
            ]
        );
    }

    #[test]
    fn a_kernel_that_waited_for_another_stream_follows_that_stream() {
        use SegmentKind::*;
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let c0 = b.call(t, "cudaLaunchKernel", 0, 10);
        b.kernel(0, 7, "producer", (50, 90_000), Some(c0));
        let c1 = b.call(t, "cudaLaunchKernel", 20, 30);
        // Launched at 20, its stream idle, yet it starts when "producer" ends: an event.
        b.kernel(0, 8, "consumer", (90_500, 150_000), Some(c1));
        let trace = b.build();
        let graph = Graph::new(&trace);
        let path = graph.path_to((0, 1, 0), 50);
        assert_eq!(
            kinds(&trace, &path),
            vec![
                (Kernel, "producer".into(), 50, 90_000),
                (Kernel, "consumer".into(), 90_000, 150_000),
            ]
        );
    }

    #[test]
    fn a_kernel_off_the_path_has_the_slack_of_its_stream() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let c0 = b.call(t, "cudaLaunchKernel", 0, 10);
        b.kernel(0, 7, "long", (100, 10_000), Some(c0));
        let c1 = b.call(t, "cudaLaunchKernel", 20, 30);
        b.kernel(0, 8, "short", (120, 2_000), Some(c1));
        // The thread waits for both, then nothing: "short" may grow to 10_000.
        b.call(t, "cudaDeviceSynchronize", 40, 10_050);
        let trace = b.build();
        let graph = Graph::new(&trace);
        let latest = slack::slack(&graph, 100, 10_000);
        assert_eq!(latest.of(&graph, 0, 1, 0), Some(8_000));
        assert_eq!(latest.of(&graph, 0, 0, 0), Some(0));
    }
}
