//! CUDA graphs as nsys records them by default (`--cuda-graph-trace=graph`): one row per
//! launch in `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`, the graph's execution on its stream, and
//! none of its kernels in the kernel table. Each row becomes a GPU op of its own kind,
//! linked to its `cudaGraphLaunch` call by correlationId like a kernel. (At node level the
//! kernels are in the kernel table already, each sharing its launch's correlationId.)

use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::big_tables::GpuChunk;
use super::error::LoadError;
use super::scan::Skips;
use super::schema::Schema;
use super::small_tables::int;
use super::sniff::sqlite_error;
use crate::trace::{GraphNode, NONE, OpKind, StringTable, Trace, pid_of_global_id, time_in_range};

pub const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
/// CUPTI writes `start = end = 0` where it could not time a launch.
const NOT_TIMED: &str = "timing not collected (start = end = 0)";
const BAD_TIMES: &str = "NULL start or end, end < start, or a time beyond ±2^61 ns";

/// The graph executions of the export (none without the table), and their rows.
pub fn read_graph_execs(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    strings: &mut StringTable,
    skips: &mut Skips,
) -> Result<Option<GpuChunk>, LoadError> {
    if !schema.has(GRAPH_TRACE) {
        return Ok(None);
    }
    let cols = schema.select_list(
        GRAPH_TRACE,
        &[
            "start",
            "end",
            "deviceId",
            "streamId",
            "correlationId",
            "globalPid",
            "graphId",
            "graphExecId",
        ],
    );
    let mut chunk = GpuChunk::default();
    let mut read = || -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {GRAPH_TRACE}"))?;
        let mut rows = stmt.query([])?;
        let mut names: Vec<(i64, u32)> = Vec::new();
        while let Some(r) = rows.next()? {
            chunk.rows += 1;
            let int = |i: usize| int(r, i);
            let (start, end) = match (int(0), int(1)) {
                (Some(0), Some(0)) => {
                    skips.add(GRAPH_TRACE, NOT_TIMED);
                    continue;
                }
                (Some(s), Some(e)) if e >= s && time_in_range(s) && time_in_range(e) => (s, e),
                _ => {
                    skips.add(GRAPH_TRACE, BAD_TIMES);
                    continue;
                }
            };
            let graph = int(6).unwrap_or(-1);
            // A few graphs, launched again and again: their names looked up, not formatted.
            let name = match names.iter().find(|n| n.0 == graph) {
                Some(&(_, id)) => id,
                None => {
                    let id = strings.intern(&graph_name(graph));
                    names.push((graph, id));
                    id
                }
            };
            let key = (
                int(2).unwrap_or(0) as u32,
                int(5).map_or(0, pid_of_global_id),
                int(3).unwrap_or(0) as u32,
            );
            let exec = int(7).filter(|&x| (0..u32::MAX as i64).contains(&x));
            chunk.push_op(
                key,
                (start, end),
                OpKind::Graph,
                name,
                int(4),
                exec.map_or(u32::MAX, |x| x as u32),
            );
        }
        Ok(())
    };
    read().map_err(|e| sqlite_error(path, GRAPH_TRACE, e))?;
    Ok(Some(chunk))
}

/// Per string id: whether it names a graph launch call (`cudaGraphLaunch`,
/// `cuGraphLaunch`).
pub fn graph_launch_names(trace: &Trace) -> Vec<bool> {
    trace.api_names_where(|name| name.contains("GraphLaunch"))
}

/// How a graph execution is named: `CUDA graph 12` (its `graphId`).
pub fn graph_name(graph: i64) -> String {
    if graph < 0 {
        "CUDA graph".to_string()
    } else {
        format!("CUDA graph {graph}")
    }
}

/// The graph id in a graph execution's name.
pub fn graph_id_of(name: &str) -> Option<i64> {
    name.strip_prefix("CUDA graph ")?.parse().ok()
}

/// `--cuda-graph-trace`'s granularity as `META_DATA_CAPTURE` records it (`Graph` or
/// `Node`; keys matched by suffix: some versions prefix them with `PROCESS_0:`).
pub fn trace_mode(conn: &Connection, schema: &Schema) -> Option<String> {
    if !schema.has("META_DATA_CAPTURE") {
        return None;
    }
    let mut stmt = conn
        .prepare("SELECT name, value FROM META_DATA_CAPTURE")
        .ok()?;
    let mut rows = stmt.query([]).ok()?;
    while let Ok(Some(r)) = rows.next() {
        let (Ok(ValueRef::Text(name)), Ok(ValueRef::Text(value))) = (r.get_ref(0), r.get_ref(1))
        else {
            continue;
        };
        if name.ends_with(b"CUDA_GRAPH_TRACE_OPTIONS:MODE") {
            return std::str::from_utf8(value).ok().map(str::to_owned);
        }
    }
    None
}

/// Each kernel that ran as a graph node (`--cuda-graph-trace=node`: its `graphNodeId`, and
/// `graphId` where the export has the column), on its device. Read only for a trace whose
/// kernels were launched by graph launches: a run without graphs pays nothing.
pub fn read_graph_nodes(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    trace: &mut Trace,
) -> Result<(), LoadError> {
    // A run that launched no graph (no such call) pays one pass over its call names.
    let graph_launch = graph_launch_names(trace);
    let launched_by_graphs = graph_launch.contains(&true)
        && trace.devices.iter().flat_map(|d| &d.streams).any(|s| {
            (0..s.ops.len()).any(|i| {
                s.ops.kind[i] != OpKind::Graph
                    && s.ops.kind[i].is_kernel()
                    && s.ops.launch_call[i] != NONE
                    && graph_launch[trace.threads[s.ops.launch_thread[i] as usize].api.name
                        [s.ops.launch_call[i] as usize]
                        as usize]
            })
        });
    let kernel = super::schema::KERNEL;
    if !launched_by_graphs || !schema.has(kernel) {
        return Ok(());
    }
    let cols = schema.select_list(kernel, &["deviceId", "graphNodeId", "graphId"]);
    let mut read = || -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(&format!(
            "SELECT rowid, {cols} FROM \"{kernel}\" WHERE graphNodeId IS NOT NULL"
        ))?;
        let mut rows = stmt.query([])?;
        let in_u32 = |v: Option<i64>| {
            v.filter(|&x| (0..NONE as i64).contains(&x))
                .map(|x| x as u32)
        };
        while let Some(r) = rows.next()? {
            let int = |i: usize| int(r, i);
            let (Some(rowid), Some(device), Some(node)) =
                (in_u32(int(0)), in_u32(int(1)), in_u32(int(2)))
            else {
                continue;
            };
            if let Some(d) = trace.devices.iter_mut().find(|d| d.id.0 == device) {
                d.graph_nodes.push(GraphNode {
                    rowid,
                    node,
                    graph: in_u32(int(3)).unwrap_or(NONE),
                });
            }
        }
        Ok(())
    };
    read().map_err(|e| sqlite_error(path, kernel, e))?;
    for d in &mut trace.devices {
        d.graph_nodes.sort_unstable_by_key(|g| g.rowid);
    }
    Ok(())
}
