//! The rows a simulated rank writes, as the export's tables hold them, and the truth
//! kept beside them.

use super::*;

/// Why a GPU op started later than its stream allowed (ground truth for gap causes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    None,
    HostSync,
    /// Waited for its launch, every op since a sync emptied the queue having waited too.
    AfterSync,
    HostBound,
    Dependency,
}

impl Wait {
    pub fn label(self) -> &'static str {
        match self {
            Wait::None => "none",
            Wait::HostSync => "host_sync",
            Wait::AfterSync => "after_sync",
            Wait::HostBound => "host_bound",
            Wait::Dependency => "dependency",
        }
    }
}

/// Op "names" for the truth list: kernel index, or one of these.
pub const OP_MEMCPY_HTOD: u16 = 100;
pub const OP_MEMCPY_DTOH: u16 = 101;
pub const OP_MEMSET: u16 = 102;

/// One GPU op as the generator knows it.
#[derive(Debug, Clone, Copy)]
pub struct TruthOp {
    pub start: i64,
    pub end: i64,
    pub op: u16,
    pub stream: u32,
    pub wait: Wait,
    /// NVTX path at launch: `path_arena[path.0 .. path.0 + path.1]`.
    pub path: (u32, u8),
    pub step: u32,
}

impl TruthOp {
    pub fn is_kernel(&self) -> bool {
        (self.op as usize) < KERNELS.len()
    }
    pub fn is_nccl(&self) -> bool {
        self.is_kernel() && KERNELS[self.op as usize].nccl
    }
}

pub struct KernelRow {
    pub start: i64,
    pub end: i64,
    pub stream: u32,
    pub correlation_id: u32,
    pub kernel: usize,
    /// A node of a replayed CUDA graph: (the executable graph's node id, graph id).
    pub graph_node: Option<(u32, u32)>,
}

/// How CUDA graph replays are recorded (`nsys --cuda-graph-trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum GraphTrace {
    /// nsys's default: one `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row per launch, its kernels
    /// not recorded.
    Graph,
    /// Every node's kernel in the kernel table with its `graphNodeId`, all of one launch
    /// sharing the launch's correlation id.
    Node,
}

/// One graph launch's execution (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`).
pub struct GraphExecRow {
    pub start: i64,
    pub end: i64,
    pub stream: u32,
    pub correlation_id: u32,
    pub graph: u32,
    pub exec: u32,
}

/// A graph's creation (`exec` `None`) or instantiation (`CUDA_GRAPH_EVENTS`).
pub struct GraphEventRow {
    pub start: i64,
    pub end: i64,
    pub graph: u32,
    pub exec: Option<u32>,
}

/// A node's creation at capture (`original` `None`) or its clone at instantiation
/// (`CUDA_GRAPH_NODE_EVENTS`).
pub struct NodeEventRow {
    pub start: i64,
    pub end: i64,
    pub node: u32,
    pub original: Option<u32>,
}

/// Node ids: as captured, and their clones in the executable graph.
pub fn captured_node(graph: u32, index: usize) -> u32 {
    graph * 100 + index as u32 + 1
}
pub fn exec_node(graph: u32, index: usize) -> u32 {
    10_000 + captured_node(graph, index)
}
pub fn exec_of(graph: u32) -> u32 {
    1_000 + graph
}

pub struct MemRow {
    pub start: i64,
    pub end: i64,
    pub stream: u32,
    pub correlation_id: u32,
    pub bytes: u64,
    /// ENUM_CUDA_MEMCPY_OPER id (memcpy) or memKind (memset).
    pub kind: u8,
}

pub struct ApiRow {
    pub start: i64,
    pub end: i64,
    pub correlation_id: u32,
    pub name: &'static str,
}

/// An OS runtime call (`OSRT_API`) of the rank's main thread (`tid_offset` 0) or of its
/// polling thread (the CUDA event handler, `tid_offset` 2).
pub struct OsrtRow {
    pub start: i64,
    pub end: i64,
    pub name: &'static str,
    pub tid_offset: u32,
    pub return_value: i64,
}

pub struct NvtxRow {
    pub start: i64,
    pub end: i64,
    pub text: String,
    pub color: Option<u32>,
    /// NCCL's calls: their payload (see [`nccl_payload`]); `None` for the program's ranges.
    pub nccl: Option<Vec<u8>>,
}

/// NCCL's NVTX domain in generated exports, its communicator, and the schemas of its calls
/// (ids as NCCL declares them: the static start 1 << 24 plus NCCL's schema number).
pub const NCCL_DOMAIN: u32 = 7;
pub const NCCL_COMM: u64 = 0x5EED_C0FF_EE00_0001;
pub const SCHEMA_COMM_INIT: u32 = (1 << 24) + 11;
pub const SCHEMA_SEND: u32 = (1 << 24) + 9;
pub const SCHEMA_RECV: u32 = (1 << 24) + 10;
/// The two message sizes of the run's all-to-alls (per peer), alternating.
pub const MESSAGE_BYTES: [u64; 2] = [13_819_904, 41_472_000];

/// A payload of NCCL's (comm, u64, u32) shape: send/recv (size, peer) or init (ranks, rank,
/// device as three u32 after the comm).
pub fn nccl_payload(schema: u32, comm: u64, a: u64, b: u32, c: u32) -> Vec<u8> {
    let mut p = Vec::with_capacity(24);
    p.extend_from_slice(&comm.to_le_bytes());
    if schema == SCHEMA_COMM_INIT {
        p.extend_from_slice(&(a as u32).to_le_bytes());
        p.extend_from_slice(&b.to_le_bytes());
        p.extend_from_slice(&c.to_le_bytes());
        p.extend_from_slice(&[0; 4]);
    } else {
        p.extend_from_slice(&a.to_le_bytes());
        p.extend_from_slice(&b.to_le_bytes());
        p.extend_from_slice(&[0; 4]);
    }
    crate::load::payload::encode_blob(NCCL_DOMAIN, schema, &p)
}
