//! Row readers for the big tables (kernels, memcpys, memsets, CUDA API calls, NVTX). Each
//! reads one part of a table into compact per-stream or per-thread columns; `build` merges the
//! ranges in order.

use std::collections::HashMap;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use rusqlite::Connection;

use super::error::LoadError;
use super::payload::PayloadSchemas;
use super::scan::{RawRow, ScanContext, Skips, Span, TablePlan, blob, int, scan_range, text};
use super::schema::{KERNEL, MEMCPY, MEMSET, NVTX, OSRT, RUNTIME};
use super::small_tables::Names;
use crate::trace::{
    ApiCalls, ApiClass, GpuOps, MemInfo, NONE, NcclCalls, NvtxMarks, NvtxRanges, OpKind, OsCalls,
    PayloadStats, RangeKind, StrId, StringTable, pid_of_global_id, time_in_range,
};

/// Values grouped by key, in first-seen order. Rows come in runs of one key (one thread,
/// one stream), so the last key is checked before the hash map.
pub struct Grouped<K, V> {
    pub groups: Vec<(K, V)>,
    index: FxHashMap<K, usize>,
    last: usize,
}

impl<K, V> Default for Grouped<K, V> {
    fn default() -> Self {
        Self {
            groups: Vec::new(),
            index: FxHashMap::default(),
            last: 0,
        }
    }
}

impl<K: Copy + Eq + Hash, V: Default> Grouped<K, V> {
    pub fn get_mut(&mut self, key: K) -> &mut V {
        if self.groups.get(self.last).is_none_or(|(k, _)| *k != key) {
            self.last = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    self.groups.push((key, V::default()));
                    self.index.insert(key, self.groups.len() - 1);
                    self.groups.len() - 1
                }
            };
        }
        &mut self.groups[self.last].1
    }
}

/// (deviceId, pid, streamId): stream ids repeat across processes.
pub type StreamKey = (u32, u32, u32);

const END_BEFORE_START: &str = "end < start";
const BEYOND_TIME_LIMIT: &str = "a time beyond ±2^61 ns (73 years)";
/// `ENUM_CUDA_MEM_KIND` of pageable host memory (CUDA_MEMOPR_MEMORY_KIND_PAGEABLE).
const PAGEABLE_MEMORY: i64 = 0;
const NULL_TIME: &str = "NULL start or end";

/// GPU ops of one part of one table.
#[derive(Default)]
pub struct GpuChunk {
    pub streams: Grouped<StreamKey, GpuOps>,
    /// Memory ops: per device, indexed by `GpuOps::detail` (local to this chunk).
    pub mem_info: HashMap<u32, Vec<MemInfo>>,
    pub skips: Skips,
    pub rows: u64,
}

impl GpuChunk {
    pub fn push_op(
        &mut self,
        key: StreamKey,
        times: (i64, i64),
        kind: OpKind,
        name: StrId,
        corr: Option<i64>,
        detail: u32,
    ) {
        self.push(key, times, kind, name, corr, detail);
    }

    fn push(
        &mut self,
        key: StreamKey,
        (start, end): (i64, i64),
        kind: OpKind,
        name: StrId,
        corr: Option<i64>,
        detail: u32,
    ) {
        let ops = self.streams.get_mut(key);
        ops.start.push(start);
        ops.end.push(end);
        ops.kind.push(kind);
        ops.name.push(name);
        ops.correlation_id.push(corr.unwrap_or(0) as u32);
        ops.launch_thread.push(NONE);
        ops.launch_call.push(NONE);
        ops.detail.push(detail);
    }
}

/// Checks the times of a row; counts and drops bad ones.
fn valid_times(
    start: Option<i64>,
    end: Option<i64>,
    table: &'static str,
    skips: &mut Skips,
) -> Option<(i64, i64)> {
    match (start, end) {
        (Some(s), Some(e)) if !time_in_range(s) || !time_in_range(e) => {
            skips.add(table, BEYOND_TIME_LIMIT);
            None
        }
        (Some(s), Some(e)) if e >= s => Some((s, e)),
        (Some(_), Some(_)) => {
            skips.add(table, END_BEFORE_START);
            None
        }
        _ => {
            skips.add(table, NULL_TIME);
            None
        }
    }
}

fn key_of(device: Option<i64>, global_pid: Option<i64>, stream: Option<i64>) -> StreamKey {
    (
        device.unwrap_or(0) as u32,
        global_pid.map_or(0, pid_of_global_id),
        stream.unwrap_or(0) as u32,
    )
}

/// Columns few rows need, read from a record only when asked for: NCCL's payloads lie at
/// the far end of an NVTX row, and most rows are not NCCL's.
pub const ON_DEMAND: &[&str] = &["binaryData"];

/// The columns each table's reader reads, by position (`rowid`; `NULL` for none).
pub fn columns(table: &str, payloads: &PayloadSchemas) -> &'static [&'static str] {
    match table {
        // Launch configurations are left in the file (`super::launch`): the rowid finds them.
        KERNEL => &[
            "start",
            "end",
            "deviceId",
            "streamId",
            "correlationId",
            "globalPid",
            "shortName",
            "demangledName",
            "rowid",
        ],
        MEMCPY => &[
            "start",
            "end",
            "deviceId",
            "streamId",
            "correlationId",
            "globalPid",
            "bytes",
            "copyKind",
            "srcKind",
            "dstKind",
        ],
        MEMSET => &[
            "start",
            "end",
            "deviceId",
            "streamId",
            "correlationId",
            "globalPid",
            "bytes",
            "memKind",
            "NULL",
            "NULL",
        ],
        RUNTIME => &[
            "start",
            "end",
            "eventClass",
            "globalTid",
            "correlationId",
            "nameId",
        ],
        OSRT => &[
            "start",
            "end",
            "eventClass",
            "globalTid",
            "nameId",
            "returnValue",
            "callchainId",
        ],
        // Blobs only when some domain declared NCCL's schemas: a trace without pays nothing.
        NVTX if payloads.is_empty() => &[
            "start",
            "end",
            "eventType",
            "text",
            "textId",
            "globalTid",
            "color",
            "domainId",
            "NULL",
        ],
        NVTX => &[
            "start",
            "end",
            "eventType",
            "text",
            "textId",
            "globalTid",
            "color",
            "domainId",
            "binaryData",
        ],
        _ => &[],
    }
}

pub fn read_kernels(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    names: &Names,
    span: Span,
) -> Result<GpuChunk, LoadError> {
    let mut chunk = GpuChunk::default();
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let Some((start, end)) = valid_times(int(r, 0), int(r, 1), KERNEL, &mut chunk.skips) else {
            return Ok(());
        };
        let short = names.ids.get(int(r, 6));
        // The demangled name only where the short one is missing (SQLite decodes a
        // column when asked).
        let (name, nccl) = if short != 0 {
            (short, names.is_nccl(short))
        } else {
            let demangled = names.ids.get(int(r, 7));
            (demangled, names.is_nccl(demangled))
        };
        let kind = if nccl { OpKind::Nccl } else { OpKind::Compute };
        let rowid = int(r, 8).filter(|&id| (0..NONE as i64).contains(&id));
        let key = key_of(int(r, 2), int(r, 5), int(r, 3));
        let detail = rowid.map_or(NONE, |id| id as u32);
        chunk.push(key, (start, end), kind, name, int(r, 4), detail);
        Ok(())
    })?;
    Ok(chunk)
}

/// Memcpys (`is_memset` false) or memsets.
pub fn read_memory_ops(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    names: &Names,
    is_memset: bool,
    span: Span,
) -> Result<GpuChunk, LoadError> {
    let (table, op_kind) = if is_memset {
        (MEMSET, OpKind::Memset)
    } else {
        (MEMCPY, OpKind::Memcpy)
    };
    let mut chunk = GpuChunk::default();
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let Some((start, end)) = valid_times(int(r, 0), int(r, 1), table, &mut chunk.skips) else {
            return Ok(());
        };
        let key = key_of(int(r, 2), int(r, 5), int(r, 3));
        let kind_id = int(r, 7);
        let name = if is_memset {
            names.memset_name
        } else {
            names.memcpy(kind_id)
        };
        let infos = chunk.mem_info.entry(key.0).or_default();
        infos.push(MemInfo {
            bytes: int(r, 6).unwrap_or(0).max(0) as u64,
            kind: kind_id.unwrap_or(0).clamp(0, 255) as u8,
            pageable: [int(r, 8), int(r, 9)].contains(&Some(PAGEABLE_MEMORY)),
        });
        let detail = infos.len() as u32 - 1;
        chunk.push(key, (start, end), op_kind, name, int(r, 4), detail);
        Ok(())
    })?;
    Ok(chunk)
}

/// API calls of one part of the table, per `globalTid`.
#[derive(Default)]
pub struct ApiChunk {
    pub threads: Grouped<i64, ApiCalls>,
    pub skips: Skips,
    pub rows: u64,
}

pub fn read_api_calls(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    names: &Names,
    span: Span,
) -> Result<ApiChunk, LoadError> {
    let mut chunk = ApiChunk::default();
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let Some((start, end)) = valid_times(int(r, 0), int(r, 1), RUNTIME, &mut chunk.skips)
        else {
            return Ok(());
        };
        let calls = chunk.threads.get_mut(int(r, 3).unwrap_or(0));
        calls.start.push(start);
        calls.end.push(end);
        calls.class.push(if int(r, 2) == Some(1) {
            ApiClass::Driver
        } else {
            ApiClass::Runtime
        });
        calls.correlation_id.push(int(r, 4).unwrap_or(0) as u32);
        calls.name.push(names.ids.get(int(r, 5)));
        Ok(())
    })?;
    Ok(chunk)
}

/// OS runtime calls of one part of the table, per `globalTid`.
#[derive(Default)]
pub struct OsrtChunk {
    pub threads: Grouped<i64, OsCalls>,
    pub skips: Skips,
    pub rows: u64,
}

/// `OSRT_API.eventClass` of a call (ENUM_NSYS_EVENT_CLASS); others mark the profiler's
/// own events ("profiling started").
const OSRT_CALL: i64 = 27;

pub fn read_osrt_calls(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    names: &Names,
    span: Span,
) -> Result<OsrtChunk, LoadError> {
    let mut chunk = OsrtChunk::default();
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        if int(r, 2) != Some(OSRT_CALL) {
            return Ok(());
        }
        let Some((start, end)) = valid_times(int(r, 0), int(r, 1), OSRT, &mut chunk.skips) else {
            return Ok(());
        };
        let calls = chunk.threads.get_mut(int(r, 3).unwrap_or(0));
        calls.start.push(start);
        calls.end.push(end);
        calls.name.push(names.ids.get(int(r, 4)));
        calls.return_value.push(int(r, 5).unwrap_or(0));
        // The raw callchain id, made a stack's node once the chains are read (0: none).
        let chain = int(r, 6).filter(|&c| c > 0 && c < NONE as i64);
        calls.stack.push(chain.map_or(NONE, |c| c as u32));
        Ok(())
    })?;
    Ok(chunk)
}

/// NVTX `eventType` values (ENUM_NSYS_EVENT_TYPE).
const NVTX_MARK: i64 = 34;
const NVTX_PUSH_POP: i64 = 59;
const NVTX_START_END: i64 = 60;
const NVTX_DOMAIN_CREATE: i64 = 75;

/// Texts first seen in this chunk get ids with this bit set, resolved at merge.
pub const LOCAL_TEXT: u32 = 1 << 31;

/// NVTX events of one part of the table, per `globalTid`.
#[derive(Default)]
pub struct NvtxChunk {
    pub ranges: Grouped<i64, NvtxRanges>,
    pub marks: HashMap<i64, NvtxMarks>,
    pub domains: Vec<(u32, String)>,
    /// Inline texts of this chunk; `LOCAL_TEXT | i` refers to text `i` here.
    pub texts: StringTable,
    /// NCCL's calls with a decoded payload, per `globalTid`.
    pub nccl: Grouped<i64, NcclCalls>,
    pub payloads: PayloadStats,
    pub skips: Skips,
    pub rows: u64,
}

pub fn read_nvtx(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    names: &Names,
    payloads: &PayloadSchemas,
    span: Span,
) -> Result<NvtxChunk, LoadError> {
    let mut chunk = NvtxChunk::default();
    // Room for a distinct text every row (PyTorch's `emit_nvtx` with shapes comes close), so
    // the index does not grow: a growing index rehashes every text it holds, and room for
    // one text every other row made nearly every chunk of the seed-shaped export grow at
    // its end. Room not filled is never touched.
    let rows = super::scan::ROWS_PER_CHUNK as usize;
    chunk.texts.reserve(rows, 0);
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let event_type = int(r, 2).unwrap_or(-1);
        let kind = match event_type {
            NVTX_PUSH_POP => RangeKind::PushPop,
            NVTX_START_END => RangeKind::StartEnd,
            NVTX_DOMAIN_CREATE => {
                if let (Some(id), Some(name)) = (int(r, 7), text(r, 3)) {
                    chunk.domains.push((id as u32, name.to_owned()));
                }
                return Ok(());
            }
            NVTX_MARK => {
                let marks = chunk.marks.entry(int(r, 5).unwrap_or(0)).or_default();
                marks.time.push(int(r, 0).unwrap_or(0));
                let id = text_id(r, names, &mut chunk.texts);
                marks.text.push(id);
                return Ok(());
            }
            _ => {
                chunk
                    .skips
                    .add(NVTX, "not a range or mark (other NVTX event type)");
                return Ok(());
            }
        };
        let (start, end) = match (int(r, 0), int(r, 1)) {
            (Some(s), e) if !time_in_range(s) || e.is_some_and(|e| !time_in_range(e)) => {
                chunk.skips.add(NVTX, BEYOND_TIME_LIMIT);
                return Ok(());
            }
            (Some(s), Some(e)) if e >= s => (s, e),
            (Some(_), None) => {
                chunk.skips.add(NVTX, "range never ended (end NULL)");
                return Ok(());
            }
            (Some(_), Some(_)) => {
                chunk.skips.add(NVTX, END_BEFORE_START);
                return Ok(());
            }
            _ => {
                chunk.skips.add(NVTX, NULL_TIME);
                return Ok(());
            }
        };
        let id = text_id(r, names, &mut chunk.texts);
        let domain = int(r, 7).unwrap_or(0) as u32;
        if domain != 0 && payloads.is_nccl_domain(domain) {
            chunk.payloads.nccl_ranges += 1;
            if let Some(bytes) = blob(r, 8) {
                chunk.payloads.blobs += 1;
                match payloads.decode(domain, bytes) {
                    Ok(fields) => chunk
                        .nccl
                        .get_mut(int(r, 5).unwrap_or(0))
                        .push(start, id, fields),
                    Err(_) => chunk.payloads.skipped_blobs += 1,
                }
            }
        }
        let ranges = chunk.ranges.get_mut(int(r, 5).unwrap_or(0));
        ranges.start.push(start);
        ranges.end.push(end);
        ranges.text.push(id);
        ranges.kind.push(kind);
        ranges.push_color(int(r, 6).unwrap_or(0) as u32);
        Ok(())
    })?;
    Ok(chunk)
}

/// The text of an NVTX row: inline `text` (2024+) or `textId` into `StringIds` (2023).
fn text_id(r: &RawRow, names: &Names, texts: &mut StringTable) -> StrId {
    match text(r, 3) {
        Some(t) => LOCAL_TEXT | texts.intern(t),
        None => names.ids.get(int(r, 4)),
    }
}
