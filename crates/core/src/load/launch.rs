//! A kernel's launch configuration, read from its export when a kernel is shown.
//!
//! The first open reads only what the analyses need; grid, block, registers, shared memory
//! and the demangled name are nine columns of the widest table (nearly half of its scan),
//! wanted for the one kernel under the pointer. Each kernel keeps its row's rowid
//! (`GpuOps::detail`), so the row is a b-tree seek away. Answers are kept per file version
//! (path, size, modification time), and a row whose duration is not the kernel's says the
//! file changed rather than describing another kernel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rusqlite::Connection;

use super::schema::{KERNEL, Schema};
use super::sniff;
use crate::trace::{Device, GpuOps, LaunchConfig, NONE, OpKind, Trace};

/// One version of one file: a replaced file is another one.
#[derive(Clone, PartialEq, Eq, Hash)]
struct FileVersion {
    path: PathBuf,
    size: u64,
    modified: Option<SystemTime>,
}

impl FileVersion {
    fn of(path: &Path) -> Result<Self, String> {
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("{} cannot be read again: {e}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            size: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

type Answer = Result<Arc<LaunchConfig>, String>;

#[derive(Default)]
struct Lookups {
    open: HashMap<FileVersion, (Connection, Schema)>,
    answers: HashMap<(FileVersion, u32), Answer>,
}

/// Connections and answers, shared by every view: a tooltip asks on every frame.
static LOOKUPS: Mutex<Option<Lookups>> = Mutex::new(None);

/// Kept answers before the memo is emptied (a hover session touches a few hundred).
const MAX_ANSWERS: usize = 4096;
/// Open files kept (one per rank of a merged job, in practice).
const MAX_OPEN: usize = 16;

/// The launch configuration of kernel `i` of `ops` on `device`, read from the device's
/// export; `None` for an op that has none (not a kernel, or a trace built in memory). An
/// error says why it cannot be shown (the file gone or changed).
pub fn launch_config(trace: &Trace, device: &Device, ops: &GpuOps, i: usize) -> Option<Answer> {
    let path = trace.sources.get(device.source as usize)?;
    if !ops.kind[i].is_kernel() || ops.kind[i] == OpKind::Graph || ops.detail[i] == NONE {
        return None;
    }
    Some(lookup(path, ops.detail[i], ops.duration(i)))
}

fn lookup(path: &Path, rowid: u32, duration: i64) -> Answer {
    let version = FileVersion::of(path)?;
    let key = (version, rowid);
    let mut guard = LOOKUPS.lock().unwrap_or_else(|e| e.into_inner());
    let lookups = guard.get_or_insert_with(Lookups::default);
    if let Some(answer) = lookups.answers.get(&key) {
        return answer.clone();
    }
    let answer = read_row(lookups, &key.0, rowid, duration);
    if lookups.answers.len() >= MAX_ANSWERS {
        lookups.answers.clear();
    }
    lookups.answers.insert(key, answer.clone());
    answer
}

fn read_row(lookups: &mut Lookups, version: &FileVersion, rowid: u32, duration: i64) -> Answer {
    if !lookups.open.contains_key(version) {
        if lookups.open.len() >= MAX_OPEN {
            lookups.open.clear();
        }
        let conn = sniff::open_read_only(&version.path).map_err(|e| e.to_string())?;
        let schema = Schema::read(&conn, &version.path).map_err(|e| e.to_string())?;
        lookups.open.insert(version.clone(), (conn, schema));
    }
    let (conn, schema) = &lookups.open[version];
    let columns = schema.select_list(
        KERNEL,
        &[
            "start",
            "end",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "demangledName",
            "graphNodeId",
        ],
    );
    let names = if schema.has("StringIds") {
        "(SELECT value FROM StringIds WHERE id = k.\"demangledName\")"
    } else {
        "NULL"
    };
    let sql = format!("SELECT {columns}, {names} FROM \"{KERNEL}\" AS k WHERE k.rowid = ?1");
    let row = conn.query_row(&sql, [rowid], |r| {
        let u = |i: usize| -> rusqlite::Result<u32> {
            Ok(r.get::<_, Option<i64>>(i)?
                .unwrap_or(0)
                .clamp(0, u32::MAX as i64) as u32)
        };
        let times = (r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?);
        let config = LaunchConfig {
            demangled_name: r.get::<_, Option<String>>(13)?.unwrap_or_default(),
            graph_node: r.get::<_, Option<i64>>(12)?,
            captured_at: None,
            grid: [u(2)?, u(3)?, u(4)?],
            block: [u(5)?, u(6)?, u(7)?],
            registers_per_thread: u(8)?,
            static_shared_bytes: u(9)?,
            dynamic_shared_bytes: u(10)?,
        };
        Ok((times, config))
    });
    let changed = || {
        format!(
            "{} changed since it was read: its launch configurations no longer match",
            version.path.display()
        )
    };
    match row {
        Ok(((Some(start), Some(end)), mut config)) if end - start == duration => {
            config.captured_at = config
                .graph_node
                .and_then(|node| captured_at(conn, schema, node));
            Ok(Arc::new(config))
        }
        Ok(_) | Err(rusqlite::Error::QueryReturnedNoRows) => Err(changed()),
        Err(e) => Err(format!("{}: {e}", version.path.display())),
    }
}

/// Where graph node `node` was made at capture: its clones followed back through
/// `originalGraphNodeId` to the row without one, (globalTid, start). Graphs captured before
/// the profile began have no such row.
fn captured_at(conn: &Connection, schema: &Schema, node: i64) -> Option<(i64, i64)> {
    const NODE_EVENTS: &str = "CUDA_GRAPH_NODE_EVENTS";
    if !schema.has(NODE_EVENTS) {
        return None;
    }
    let sql = format!(
        "SELECT {} FROM {NODE_EVENTS} WHERE graphNodeId = ?1 ORDER BY originalGraphNodeId IS NULL DESC LIMIT 1",
        schema.select_list(NODE_EVENTS, &["originalGraphNodeId", "globalTid", "start"])
    );
    let mut stmt = conn.prepare(&sql).ok()?;
    let mut node = node;
    // A clone of a clone…; a chain longer than this loops.
    for _ in 0..64 {
        let (original, tid, start) = stmt
            .query_row([node], |r| {
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            })
            .ok()?;
        match original {
            Some(o) if o != node => node = o,
            _ => return Some((tid?, start?)),
        }
    }
    None
}

/// The NVTX ranges (outermost first) around where a graph kernel's node was captured: the
/// op it was captured in (`aten::linear`), which its replays no longer show.
pub fn captured_nvtx(trace: &Trace, config: &LaunchConfig) -> Vec<String> {
    let Some((tid, at)) = config.captured_at else {
        return Vec::new();
    };
    let Some(t) = trace.thread_index(tid).map(|i| &trace.threads[i]) else {
        return Vec::new();
    };
    t.nvtx
        .path_at(at)
        .into_iter()
        .map(|r| trace.strings.get(t.nvtx.text[r as usize]).into_owned())
        .collect()
}
