//! A trace built by hand, in memory: what the analyses' unit tests are written against,
//! beside their code, with answers that can be worked out on paper. It builds the trace
//! the way the loader does (ranges sorted and nested, calls indexed, devices and threads
//! in order), so the invariants the model promises hold.
//!
//! Calls are added in start order per thread (a kernel names the call that launched it
//! by the index `call` returned); ops in start order per stream.

use super::DeviceId;
use super::{
    ApiClass, Device, GpuOps, MemInfo, NONE, OpKind, RangeKind, Stream, Thread, Trace, is_nccl_name,
};

#[derive(Default)]
pub struct TraceBuilder {
    trace: Trace,
}

/// A call made with [`TraceBuilder::call`]: the thread and call indices a kernel's launch
/// refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRef {
    pub thread: usize,
    pub call: usize,
}

impl TraceBuilder {
    pub fn new() -> Self {
        let mut b = Self::default();
        b.trace.strings = super::StringTable::new().into();
        b
    }

    /// A CPU thread of process `pid`; returns its index.
    pub fn thread(&mut self, pid: u32, tid: u32) -> usize {
        self.trace.threads.push(Thread {
            global_tid: ((pid as i64) << 24) | tid as i64,
            pid,
            tid,
            name: format!("thread {tid}"),
            ..Default::default()
        });
        self.trace.threads.len() - 1
    }

    /// An API call on `thread`, after the ones before it.
    pub fn call(&mut self, thread: usize, name: &str, start: i64, end: i64) -> CallRef {
        let name = std::sync::Arc::make_mut(&mut self.trace.strings).intern(name);
        let api = &mut self.trace.threads[thread].api;
        debug_assert!(
            api.start.last().is_none_or(|&s| s <= start),
            "calls in start order"
        );
        api.start.push(start);
        api.end.push(end);
        api.name.push(name);
        api.correlation_id.push(api.len() as u32 + 1);
        api.class.push(ApiClass::Runtime);
        CallRef {
            thread,
            call: api.len() - 1,
        }
    }

    /// A push/pop NVTX range on `thread` (any order: nested when built).
    pub fn range(&mut self, thread: usize, text: &str, start: i64, end: i64) {
        let text = std::sync::Arc::make_mut(&mut self.trace.strings).intern(text);
        let nvtx = &mut self.trace.threads[thread].nvtx;
        nvtx.start.push(start);
        nvtx.end.push(end);
        nvtx.text.push(text);
        nvtx.kind.push(RangeKind::PushPop);
        nvtx.push_color(0);
    }

    fn stream_ops(&mut self, device: u32, stream: u32) -> (&mut GpuOps, &mut Vec<MemInfo>) {
        let devices = &mut self.trace.devices;
        let d = match devices.iter().position(|d| d.id == DeviceId(device)) {
            Some(d) => d,
            None => {
                devices.push(Device {
                    id: DeviceId(device),
                    name: format!("GPU {device}"),
                    ..Default::default()
                });
                devices.len() - 1
            }
        };
        let dev = &mut devices[d];
        let s = match dev.streams.iter().position(|s| s.id == stream) {
            Some(s) => s,
            None => {
                dev.streams.push(Stream::new(stream, 0, GpuOps::default()));
                dev.streams.len() - 1
            }
        };
        (&mut dev.streams[s].ops, &mut dev.mem_info)
    }

    /// A kernel on `device`'s `stream` (NCCL when its name says so), launched by `launch`.
    pub fn kernel(
        &mut self,
        device: u32,
        stream: u32,
        name: &str,
        (start, end): (i64, i64),
        launch: Option<CallRef>,
    ) {
        let kind = if is_nccl_name(name) {
            OpKind::Nccl
        } else {
            OpKind::Compute
        };
        let name = std::sync::Arc::make_mut(&mut self.trace.strings).intern(name);
        let (ops, _) = self.stream_ops(device, stream);
        push_op(ops, kind, name, start, end, launch, 0);
    }

    /// A memcpy of `kind` (`HtoD`, …) moving `bytes`.
    #[expect(
        clippy::too_many_arguments,
        reason = "one op's every field, named at the call"
    )]
    pub fn memcpy(
        &mut self,
        device: u32,
        stream: u32,
        kind: &str,
        bytes: u64,
        (start, end): (i64, i64),
        pageable: bool,
        launch: Option<CallRef>,
    ) {
        let name =
            std::sync::Arc::make_mut(&mut self.trace.strings).intern(&format!("Memcpy {kind}"));
        let (ops, mem_info) = self.stream_ops(device, stream);
        mem_info.push(MemInfo {
            bytes,
            kind: 0,
            pageable,
        });
        let detail = mem_info.len() as u32 - 1;
        push_op(ops, OpKind::Memcpy, name, start, end, launch, detail);
    }

    /// The trace, indexed as the loader leaves it.
    pub fn build(mut self) -> Trace {
        let t = &mut self.trace;
        t.devices.sort_by_key(|d| d.id);
        for d in &mut t.devices {
            d.streams.sort_by_key(|s| s.id);
            for s in &mut d.streams {
                debug_assert!(s.ops.start.is_sorted(), "ops in start order");
                *s = Stream::new(s.id, s.pid, std::mem::take(&mut s.ops));
            }
        }
        for th in &mut t.threads {
            th.index_calls();
            th.nvtx.sort_and_nest();
        }
        self.trace
    }
}

fn push_op(
    ops: &mut GpuOps,
    kind: OpKind,
    name: u32,
    start: i64,
    end: i64,
    launch: Option<CallRef>,
    detail: u32,
) {
    ops.start.push(start);
    ops.end.push(end);
    ops.kind.push(kind);
    ops.name.push(name);
    ops.correlation_id.push(0);
    ops.launch_thread
        .push(launch.map_or(NONE, |l| l.thread as u32));
    ops.launch_call.push(launch.map_or(NONE, |l| l.call as u32));
    ops.detail.push(detail);
}
