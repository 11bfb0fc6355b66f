//! The trace model: everything the analyses and the UI read, and nothing about SQLite or
//! egui. Built once by `load`, then immutable.
//!
//! Layout: devices → streams → ops (struct of arrays, sorted by start); threads → API calls
//! and NVTX ranges. Times are `i64` nanoseconds on the capture's clock.

pub mod builder;
mod columns;
mod cpu;
mod device_id;
mod gpu_metrics;
pub mod launches;
mod memory_usage;
mod nccl_calls;
mod ops;
mod reach;
pub mod stacks;
mod strings;

pub(crate) use columns::columns;
pub use columns::start_order;
pub use cpu::{
    ApiCalls, ApiClass, NvtxMarks, NvtxRanges, OsCalls, RangeKind, Scheduling, is_blocking_os_call,
};
pub use device_id::{DeviceId, DeviceIndex};
pub use gpu_metrics::{DeviceMetrics, MetricValues, NO_SAMPLE, clock_mhz};
pub use memory_usage::MemoryEvents;
pub use nccl_calls::{CommCreation, NO_VALUE, NcclCalls, NcclFields, PayloadStats};
pub use ops::{GpuOps, LaunchConfig, MemInfo, NONE, OpKind, is_nccl_name, permute};
pub use reach::ReachIndex;

/// The furthest a time may be from the clock's zero, either way: 2^61 ns, 73 years. The
/// loader drops rows past it (and a rank summary holding one is refused), so that any sum,
/// difference or span of the times a trace holds fits in an `i64` — a legal export with a
/// forged or garbled time cannot overflow an analysis.
pub const TIME_LIMIT: i64 = 1 << 61;

/// Whether `t` is within [`TIME_LIMIT`].
pub fn time_in_range(t: i64) -> bool {
    (-TIME_LIMIT..=TIME_LIMIT).contains(&t)
}
pub use stacks::{
    CallStacks, CpuSamples, SampledThread, Stacks, StacksBuilder, StacksRead, StacksSlot,
};
pub use strings::{DigitRun, StrId, StringTable, TemplateId};

/// `globalTid`/`globalPid` → process id (bits 24..48).
pub fn pid_of_global_id(global_id: i64) -> u32 {
    ((global_id >> 24) & 0xFF_FFFF) as u32
}

/// `globalTid` → thread id (bits 0..24).
pub fn tid_of_global_id(global_id: i64) -> u32 {
    (global_id & 0xFF_FFFF) as u32
}

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct ExportInfo {
    pub nsys_version: Option<String>,
    pub schema_version: Option<String>,
    /// NVTX text lives in `StringIds` (`textId`, 2023 files) rather than inline `text`.
    pub nvtx_text_in_string_ids: bool,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`: the wall clock at the session's time 0.
    pub utc_start_ns: Option<i64>,
    /// How nsys traced CUDA graphs (`Graph` or `Node`, `META_DATA_CAPTURE`), when recorded.
    #[serde(default)]
    pub graph_trace: Option<String>,
}

#[derive(Debug, Default, Clone)]
pub struct Stream {
    /// nsys `streamId`.
    pub id: u32,
    /// Process that owns the stream (stream ids repeat across processes).
    pub pid: u32,
    pub ops: GpuOps,
    /// Duration of its longest op: lets a search by start find ops that began before a
    /// time yet still run then. Set by [`Stream::new`].
    pub longest_op_ns: i64,
}

impl Stream {
    pub fn new(id: u32, pid: u32, ops: GpuOps) -> Self {
        debug_assert!(ops.start.is_sorted(), "a stream's ops are sorted by start");
        debug_assert!(
            (0..ops.len()).all(|i| ops.end[i] >= ops.start[i]),
            "an op ends after it starts"
        );
        let longest_op_ns = (0..ops.len()).map(|i| ops.duration(i)).max().unwrap_or(0);
        Self {
            id,
            pid,
            ops,
            longest_op_ns,
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Device {
    /// nsys `deviceId`.
    pub id: DeviceId,
    /// From `TARGET_INFO_GPU` when the export has it, else "GPU <id>".
    pub name: String,
    /// Sorted by (pid, stream id).
    pub streams: Vec<Stream>,
    pub mem_info: Vec<MemInfo>,
    /// In a trace of several files: `FILE:ID` (the file's base name and the device's id in
    /// it), how every view and report names the device.
    pub key: Option<String>,
    /// Index into `Trace::sources` of the export the device was read from.
    pub source: u32,
    /// Kernels that ran as nodes of CUDA graphs (`--cuda-graph-trace=node`), by the rowid
    /// their `GpuOps::detail` holds: empty for a run without them.
    pub graph_nodes: Vec<GraphNode>,
}

/// A kernel that ran as a node of a CUDA graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphNode {
    /// The kernel's rowid in its export (its `GpuOps::detail`).
    pub rowid: u32,
    /// Its node in the executable graph (`graphNodeId`).
    pub node: u32,
    /// Its graph (`graphId`, newer exports), or [`NONE`].
    pub graph: u32,
}

impl Device {
    /// The graph node kernel `i` of `ops` (one of this device's streams' ops) ran as.
    pub fn graph_node(&self, ops: &GpuOps, i: usize) -> Option<&GraphNode> {
        if self.graph_nodes.is_empty() || !ops.kind[i].is_kernel() {
            return None;
        }
        let rowid = ops.detail[i];
        self.graph_nodes
            .binary_search_by_key(&rowid, |g| g.rowid)
            .ok()
            .map(|k| &self.graph_nodes[k])
    }

    /// "GPU 0 · NVIDIA H100 80GB HBM3", or "GPU 0" when the export names no model.
    pub fn label(&self) -> String {
        let plain = match &self.key {
            Some(key) => key.clone(),
            None => format!("GPU {}", self.id),
        };
        if self.name.is_empty() || self.name == plain {
            plain
        } else {
            format!("{plain} · {}", self.name)
        }
    }

    pub fn op_count(&self) -> usize {
        self.streams.iter().map(|s| s.ops.len()).sum()
    }

    /// Its ops of `kind`, as (stream index, op index), stream by stream.
    pub fn ops_of(&self, kind: OpKind) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.streams
            .iter()
            .enumerate()
            .flat_map(move |(s, stream)| {
                let ops = &stream.ops;
                (0..ops.len())
                    .filter(move |&i| ops.kind[i] == kind)
                    .map(move |i| (s, i))
            })
    }

    pub fn count_of(&self, kind: OpKind) -> usize {
        self.streams
            .iter()
            .map(|s| s.ops.kind.iter().filter(|&&k| k == kind).count())
            .sum()
    }

    /// First kernel start to last kernel end, if the device ran any kernel.
    pub fn kernel_window(&self) -> Option<(i64, i64)> {
        let mut window: Option<(i64, i64)> = None;
        for stream in &self.streams {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                if !ops.kind[i].is_kernel() {
                    continue;
                }
                let (s, e) = (ops.start[i], ops.end[i]);
                window = Some(window.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
            }
        }
        window
    }
}

#[derive(Debug, Default, Clone)]
pub struct Thread {
    pub global_tid: i64,
    pub pid: u32,
    pub tid: u32,
    /// Index into `Trace::sources` of the export the thread was read from: files of one
    /// job may repeat pids and tids (every node's process pid 1 in containers), so a
    /// thread is named by its file and tid.
    pub source: u32,
    pub name: String,
    pub api: ApiCalls,
    pub nvtx: NvtxRanges,
    pub marks: NvtxMarks,
    /// OS runtime calls (empty unless the capture traced `osrt`).
    pub osrt: OsCalls,
    /// NCCL calls with their payloads (empty unless exported with blobs).
    pub nccl: NcclCalls,
    /// When the thread ran on a CPU, from `SCHED_EVENTS` (read only from exports that hold
    /// nothing else of the thread: otherwise millions of rows for a picture CUDA rows give).
    pub scheduling: Scheduling,
    /// Duration of its longest API call (set when the trace is built), for searches by start.
    pub longest_call_ns: i64,
    /// Latest end per block of calls (set when the trace is built): see [`ReachIndex`].
    pub api_reach: ReachIndex,
    /// The same two for its OS runtime calls.
    pub longest_osrt_ns: i64,
    pub osrt_reach: ReachIndex,
}

impl Thread {
    /// The API calls that overlap `[a, b)`, in start order.
    pub fn calls_overlapping(&self, a: i64, b: i64) -> impl Iterator<Item = usize> + '_ {
        self.api_reach
            .overlapping(&self.api.start, &self.api.end, self.longest_call_ns, a, b)
    }

    /// The OS runtime calls that overlap `[a, b)`, in start order.
    pub fn osrt_overlapping(&self, a: i64, b: i64) -> impl Iterator<Item = usize> + '_ {
        self.osrt_reach
            .overlapping(&self.osrt.start, &self.osrt.end, self.longest_osrt_ns, a, b)
    }

    /// Sets what searches by time need, once the calls are sorted.
    pub fn index_calls(&mut self) {
        debug_assert!(
            self.api.start.is_sorted(),
            "a thread's calls are sorted by start"
        );
        self.longest_call_ns = (0..self.api.len())
            .map(|i| self.api.end[i] - self.api.start[i])
            .max()
            .unwrap_or(0);
        self.api_reach = ReachIndex::new(&self.api.end);
        debug_assert!(self.osrt.start.is_sorted(), "OS runtime calls are sorted");
        self.longest_osrt_ns = (0..self.osrt.len())
            .map(|i| self.osrt.end[i] - self.osrt.start[i])
            .max()
            .unwrap_or(0);
        self.osrt_reach = ReachIndex::new(&self.osrt.end);
    }
}

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Process {
    pub pid: u32,
    pub name: String,
}

#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub info: ExportInfo,
    /// Shared, not copied, by a what-if's replayed trace: the names do not change, and a
    /// trace's distinct NVTX texts run to millions.
    pub strings: std::sync::Arc<StringTable>,
    /// Devices that ran at least one op, sorted by id.
    pub devices: Vec<Device>,
    /// Threads that made API calls or NVTX events, sorted by (pid, tid).
    pub threads: Vec<Thread>,
    pub processes: Vec<Process>,
    /// The exports the trace was read from (one, or one per file of a merged job); a
    /// device's `source` indexes it. Kernels' launch configurations are read there.
    pub sources: Vec<std::path::PathBuf>,
    /// NVTX domain id → name (domain 0, the default, is absent).
    pub nvtx_domains: Vec<(u32, String)>,
    /// `ANALYSIS_DETAILS` start/stop, when present.
    pub capture_window: Option<(i64, i64)>,
    /// How NCCL's NVTX payloads read (see [`Thread::nccl`]).
    pub nccl_payloads: PayloadStats,
    /// Every call stack recorded (CPU samples and OS runtime calls' backtraces), perhaps
    /// still being read: see [`Trace::call_stacks`].
    pub call_stacks: StacksSlot,
    /// Device memory allocated and freed, per GPU that has events (empty unless the
    /// capture recorded them: `--cuda-memory-usage=true`).
    pub memory_usage: Vec<MemoryEvents>,
    /// The GPUs' sampled counters (empty unless the capture recorded them:
    /// `--gpu-metrics-devices`).
    pub gpu_metrics: Vec<DeviceMetrics>,
}

impl Trace {
    pub fn device(&self, id: DeviceId) -> Option<&Device> {
        self.devices.iter().find(|d| d.id == id)
    }

    pub fn thread_index(&self, global_tid: i64) -> Option<usize> {
        self.threads
            .binary_search_by_key(&global_tid_sort_key(global_tid), |t| {
                global_tid_sort_key(t.global_tid)
            })
            .ok()
    }

    /// Per string id: whether it is the name of an API call and passes `wanted`. Only the
    /// names calls use are tested (a trace holds millions of other strings: NVTX texts).
    pub fn api_names_where(&self, wanted: impl Fn(&str) -> bool) -> Vec<bool> {
        let mut used = vec![false; self.strings.len()];
        for t in &self.threads {
            for &name in &t.api.name {
                used[name as usize] = true;
            }
        }
        used.iter()
            .enumerate()
            .map(|(id, &u)| u && wanted(&self.strings.get(id as StrId)))
            .collect()
    }

    pub fn kernel_count(&self) -> usize {
        self.devices
            .iter()
            .map(|d| d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl))
            .sum()
    }

    pub fn gpu_op_count(&self) -> usize {
        self.devices.iter().map(Device::op_count).sum()
    }

    pub fn api_call_count(&self) -> usize {
        self.threads.iter().map(|t| t.api.len()).sum()
    }

    pub fn nvtx_range_count(&self) -> usize {
        self.threads.iter().map(|t| t.nvtx.len()).sum()
    }

    pub fn event_count(&self) -> usize {
        self.gpu_op_count()
            + self.api_call_count()
            + self.nvtx_range_count()
            + self
                .threads
                .iter()
                .map(|t| t.marks.time.len())
                .sum::<usize>()
    }

    /// How a GPU is named in words: `GPU 3`, or `rank2.sqlite:0` in a trace of several files.
    pub fn gpu_name(&self, id: DeviceId) -> String {
        match self.device(id).and_then(|d| d.key.as_ref()) {
            Some(key) => key.clone(),
            None => format!("GPU {id}"),
        }
    }

    /// The index in `devices` of the GPU nsys calls `id`.
    pub fn device_index(&self, id: DeviceId) -> Option<DeviceIndex> {
        self.devices
            .iter()
            .position(|d| d.id == id)
            .map(DeviceIndex)
    }

    /// The first instant of anything recorded (GPU ops, API calls, NVTX ranges, marks):
    /// time 0 of every view, table, tooltip and report, so that no time shown is negative.
    /// Every list is sorted by start, so this reads one value per stream and thread.
    pub fn time_origin(&self) -> Option<i64> {
        let gpu = self
            .devices
            .iter()
            .flat_map(|d| &d.streams)
            .filter_map(|s| s.ops.start.first());
        let cpu = self.threads.iter().flat_map(|t| {
            [
                t.api.start.first(),
                t.nvtx.start.first(),
                t.marks.time.first(),
                t.osrt.start.first(),
                t.scheduling.start.first(),
            ]
            .into_iter()
            .flatten()
        });
        gpu.chain(cpu).copied().min()
    }

    /// From [`Trace::time_origin`] to the last end of anything recorded.
    pub fn time_span(&self) -> Option<(i64, i64)> {
        let origin = self.time_origin()?;
        let gpu = self
            .devices
            .iter()
            .flat_map(|d| &d.streams)
            .filter_map(|s| s.ops.end.iter().max());
        let cpu = self.threads.iter().flat_map(|t| {
            [
                t.api.end.iter().max(),
                t.nvtx.end.iter().max(),
                t.marks.time.last(),
                t.osrt.end.iter().max(),
                t.scheduling.end.last(),
            ]
            .into_iter()
            .flatten()
        });
        let end = gpu.chain(cpu).copied().max()?;
        Some((origin, end.max(origin + 1)))
    }

    /// GPU `id`'s sampled metrics, if the capture has them.
    pub fn device_metrics(&self, id: DeviceId) -> Option<&DeviceMetrics> {
        self.gpu_metrics.iter().find(|m| m.device == id)
    }

    /// The call stacks and CPU samples, waiting for their read if it is still going on
    /// (the load reads them last, on a thread of its own; frames drawn must use
    /// `call_stacks.get()` instead).
    pub fn stacks(&self) -> &CallStacks {
        self.call_stacks.wait()
    }

    /// Approximate heap bytes of the model, for the bytes-per-event figure.
    pub fn heap_bytes(&self) -> usize {
        let ops = self.gpu_op_count() * GpuOps::ROW_BYTES;
        let api = self.api_call_count() * ApiCalls::ROW_BYTES;
        let nvtx = self.nvtx_range_count() * NvtxRanges::ROW_BYTES;
        let marks: usize = self.threads.iter().map(|t| t.marks.time.len() * 12).sum();
        let osrt: usize = self.threads.iter().map(|t| t.osrt.column_bytes()).sum();
        let stacks = self.call_stacks.get().map_or(0, CallStacks::bytes);
        let nccl: usize = self.threads.iter().map(|t| t.nccl.heap_bytes()).sum();
        let mem: usize = self.devices.iter().map(|d| d.mem_info.len() * 16).sum();
        ops + api + nvtx + marks + osrt + nccl + mem + stacks + self.strings.heap_bytes()
    }
}

/// Threads are ordered by (pid, tid), which is not the order of the raw global id.
pub fn global_tid_sort_key(global_tid: i64) -> (u32, u32, i64) {
    (
        pid_of_global_id(global_tid),
        tid_of_global_id(global_tid),
        global_tid,
    )
}

/// The device's `FILE:ID` in a trace of several files, else its id.
pub fn device_name(trace: &Trace, id: DeviceId) -> serde_json::Value {
    match trace.device(id).and_then(|d| d.key.as_ref()) {
        Some(key) => serde_json::json!(key),
        None => serde_json::json!(id),
    }
}

/// Each device's span as recorded (first kernel start to last kernel end).
pub fn measured_spans(trace: &Trace) -> Vec<i64> {
    trace
        .devices
        .iter()
        .map(|d| d.kernel_window().map_or(0, |(a, b)| b - a))
        .collect()
}

/// The run's span: the longest GPU span (first kernel start to last kernel end).
pub fn run_span(trace: &Trace) -> i64 {
    measured_spans(trace).into_iter().max().unwrap_or(0)
}
