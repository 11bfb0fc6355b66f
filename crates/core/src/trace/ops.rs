//! GPU operations of one stream, as a struct of arrays.
//!
//! Invariant: sorted by `start`; `end >= start` for every op (the loader drops the rest
//! and counts them in the load report).

use super::columns::columns;
use super::strings::StrId;

/// Marks "no such thing" in `u32` index columns.
pub const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[repr(u8)]
pub enum OpKind {
    Compute = 0,
    Nccl = 1,
    Memcpy = 2,
    Memset = 3,
    /// A CUDA graph's execution recorded whole (`--cuda-graph-trace=graph`, nsys's
    /// default): GPU work whose kernels are unknown, counted as compute.
    Graph = 4,
}

impl OpKind {
    /// Kernels, and graph executions (made of kernels): GPU compute launched by a call.
    pub fn is_kernel(self) -> bool {
        matches!(self, OpKind::Compute | OpKind::Nccl | OpKind::Graph)
    }
    pub fn label(self) -> &'static str {
        match self {
            OpKind::Compute => "compute",
            OpKind::Nccl => "NCCL",
            OpKind::Memcpy => "memcpy",
            OpKind::Memset => "memset",
            OpKind::Graph => "CUDA graph",
        }
    }
}

/// A kernel is NCCL work when its name contains "nccl" in any case (analysis-definitions.md).
pub fn is_nccl_name(name: &str) -> bool {
    name.as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"nccl"))
}

/// Launch configuration of a kernel, read when the kernel is shown
/// (`crate::load::launch_config`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct LaunchConfig {
    /// Full (demangled) kernel name; `GpuOps::name` holds the short one.
    pub demangled_name: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers_per_thread: u32,
    pub static_shared_bytes: u32,
    pub dynamic_shared_bytes: u32,
    /// A node of a CUDA graph (`--cuda-graph-trace=node`): its node in the executable
    /// graph (`graphNodeId`).
    pub graph_node: Option<i64>,
    /// Where that node was made at capture (following `originalGraphNodeId` through
    /// `CUDA_GRAPH_NODE_EVENTS`): the capturing thread's `globalTid` and the time, whose
    /// NVTX ranges name the op the kernel was captured in.
    pub captured_at: Option<(i64, i64)>,
}

/// What a memcpy or memset moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct MemInfo {
    pub bytes: u64,
    /// `copyKind` of a memcpy (id into the file's `ENUM_CUDA_MEMCPY_OPER`); memset: `memKind`.
    pub kind: u8,
    /// A memcpy from or to pageable host memory (`srcKind`/`dstKind` pageable): staged
    /// through a bounce buffer, synchronous, and slower than from pinned memory.
    pub pageable: bool,
}

columns! {
    #[derive(Debug, Default, Clone)]
    pub struct GpuOps {
        pub start: Vec<i64>,
        pub end: Vec<i64>,
        pub kind: Vec<OpKind>,
        /// Short name for kernels; "Memcpy HtoD" style names for memory ops.
        pub name: Vec<StrId>,
        pub correlation_id: Vec<u32>,
        /// Index of the launching thread in `Trace::threads`, or [`NONE`].
        pub launch_thread: Vec<u32>,
        /// Index of the launching API call in that thread's `api`, or [`NONE`].
        pub launch_call: Vec<u32>,
        /// Kernels: the row's rowid in its export's kernel table (`Trace::sources`), where the
        /// launch configuration is read when shown; memory ops: index into `Device::mem_info`;
        /// graph executions: the executable graph's id (`graphExecId`).
        pub detail: Vec<u32>,
    }
}

impl GpuOps {
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    pub fn duration(&self, i: usize) -> i64 {
        self.end[i] - self.start[i]
    }

    /// Index of the first op whose start is >= `t`.
    pub fn first_starting_at_or_after(&self, t: i64) -> usize {
        self.start.partition_point(|&s| s < t)
    }
}

/// `column[i] = old[order[i]]`, `order` as long as the column.
///
/// Gathered into a block of this thread's, then copied back into the column's own pages.
/// Replacing the column with the gathered block gave every column fresh pages: the old
/// block went back to the heap of the thread that had read it, not to this one's, so the
/// next column's could not reuse it (docs/benchmarks.md, "Figures behind the code": a
/// stream that mixes kernels and copies, read from two tables, is reordered whole).
pub fn permute<T: Copy>(column: &mut [T], order: &[u32]) {
    let reordered: Vec<T> = order.iter().map(|&i| column[i as usize]).collect();
    column.copy_from_slice(&reordered);
}
