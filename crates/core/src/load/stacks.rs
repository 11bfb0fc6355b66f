//! Call stacks, read after the model is built (they hang off its threads and OS runtime
//! calls): CPU samples (`COMPOSITE_EVENTS`, their stacks in `SAMPLING_CALLCHAINS`) and the
//! backtraces of OS runtime calls (`OSRT_API.callchainId` → `OSRT_CALLCHAINS`). nsys
//! records both by default when it launches the program. Frames are kept as nsys wrote
//! them, innermost first; a chain with a hole in its `stackDepth`s keeps the frames it has,
//! and each oddity is counted in the load report, never a failure.

use std::path::Path;

use rusqlite::Connection;
use rustc_hash::FxHashMap as HashMap;

use super::error::LoadError;
use super::report::LoadReport;
use super::schema::Schema;
use super::small_tables::int;
use super::sniff::sqlite_error;
use crate::trace::{CpuSamples, NONE, SampledThread, StacksBuilder, StringTable, Trace};

pub const SAMPLES: &str = "COMPOSITE_EVENTS";
pub const SAMPLING_CALLCHAINS: &str = "SAMPLING_CALLCHAINS";
pub const OSRT_CALLCHAINS: &str = "OSRT_CALLCHAINS";

const NO_FRAMES: &str = "callchain id with no frames";
const DEPTH_HOLE: &str = "stackDepth not contiguous (frames kept as they are)";
const NO_THREAD: &str = "sample with no thread (NULL globalTid)";
const BAD_TIME: &str = "NULL start";

/// Reads the samples and the OS runtime backtraces into `trace` (nothing when the export
/// has neither).
pub fn read_call_stacks(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    trace: &mut Trace,
    report: &mut LoadReport,
) -> Result<(), LoadError> {
    let wants_osrt = schema.has(OSRT_CALLCHAINS)
        && trace
            .threads
            .iter()
            .any(|t| t.osrt.stack.iter().any(|&s| s != NONE));
    let wants_samples = schema.has(SAMPLES) && schema.has(SAMPLING_CALLCHAINS);
    if !wants_osrt && !wants_samples {
        for t in &mut trace.threads {
            t.osrt.stack.clear();
        }
        return Ok(());
    }
    let mut texts = StringIds::new(conn);
    let mut builder = StacksBuilder::from(std::mem::take(&mut trace.stacks));
    if wants_osrt {
        let chains = read_chains(
            conn,
            path,
            OSRT_CALLCHAINS,
            &mut builder,
            &mut texts,
            &mut trace.strings,
            report,
        )?;
        let mut missing = 0u64;
        for t in &mut trace.threads {
            for s in &mut t.osrt.stack {
                if *s == NONE {
                    continue;
                }
                *s = match chains.get(&(*s as i64)) {
                    Some(&node) => node,
                    None => {
                        missing += 1;
                        NONE
                    }
                };
            }
        }
        for _ in 0..missing {
            report.skips.add(OSRT_CALLCHAINS, NO_FRAMES);
        }
    } else {
        for t in &mut trace.threads {
            t.osrt.stack.clear();
        }
    }
    if wants_samples {
        let chains = read_chains(
            conn,
            path,
            SAMPLING_CALLCHAINS,
            &mut builder,
            &mut texts,
            &mut trace.strings,
            report,
        )?;
        trace.samples = read_samples(conn, path, schema, &chains, trace, report)?;
    }
    trace.stacks = builder.stacks;
    Ok(())
}

/// `StringIds` texts, looked up one id at a time (a capture's frames are a few thousand
/// distinct ids, where the table can hold millions of NVTX texts).
struct StringIds<'c> {
    conn: &'c Connection,
    ids: HashMap<i64, u32>,
}

impl<'c> StringIds<'c> {
    fn new(conn: &'c Connection) -> Self {
        StringIds {
            conn,
            ids: HashMap::default(),
        }
    }

    fn get(&mut self, id: i64, strings: &mut StringTable) -> rusqlite::Result<u32> {
        if let Some(&s) = self.ids.get(&id) {
            return Ok(s);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM StringIds WHERE id = ?1")?;
        let text: Option<String> = stmt
            .query_row([id], |r| r.get::<_, Option<String>>(0))
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        let s = strings.intern(text.as_deref().unwrap_or("[unknown]"));
        self.ids.insert(id, s);
        Ok(s)
    }
}

/// Every chain of `table`, as callchain id → the node of its innermost frame.
fn read_chains(
    conn: &Connection,
    path: &Path,
    table: &'static str,
    builder: &mut StacksBuilder,
    texts: &mut StringIds,
    strings: &mut StringTable,
    report: &mut LoadReport,
) -> Result<HashMap<i64, u32>, LoadError> {
    let mut chains: HashMap<i64, u32> = HashMap::default();
    let mut rows_read = 0u64;
    let mut read = || -> rusqlite::Result<()> {
        // The primary key's order: each chain's frames together, innermost first.
        let mut stmt = conn.prepare(&format!(
            "SELECT id, stackDepth, symbol, module, unresolved FROM {table} ORDER BY id, stackDepth"
        ))?;
        let mut rows = stmt.query([])?;
        let mut current: Option<i64> = None;
        let mut frames: Vec<u32> = Vec::new();
        let mut expected_depth = 0i64;
        let mut finish = |id: Option<i64>, frames: &mut Vec<u32>, builder: &mut StacksBuilder| {
            if let Some(id) = id
                && !frames.is_empty()
            {
                chains.insert(id, builder.stack(frames));
            }
            frames.clear();
        };
        while let Some(r) = rows.next()? {
            rows_read += 1;
            let (Some(id), Some(depth)) = (int(r, 0), int(r, 1)) else {
                continue;
            };
            if current != Some(id) {
                finish(current, &mut frames, builder);
                current = Some(id);
                expected_depth = 0;
            }
            if depth != expected_depth {
                report.skips.add(table, DEPTH_HOLE);
            }
            expected_depth = depth + 1;
            let symbol = texts.get(int(r, 2).unwrap_or(-1), strings)?;
            let module = texts.get(int(r, 3).unwrap_or(-1), strings)?;
            let unresolved = int(r, 4).is_some_and(|u| u != 0);
            frames.push(builder.frame(symbol, module, unresolved));
        }
        finish(current, &mut frames, builder);
        Ok(())
    };
    read().map_err(|e| sqlite_error(path, table, e))?;
    report.tables.insert(table.to_string(), rows_read);
    Ok(chains)
}

/// The samples, grouped by thread and sorted by time.
fn read_samples(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    chains: &HashMap<i64, u32>,
    trace: &Trace,
    report: &mut LoadReport,
) -> Result<CpuSamples, LoadError> {
    let cols = schema.select_list(SAMPLES, &["id", "start", "threadState", "globalTid"]);
    let mut rows_read = 0u64;
    // (globalTid, time, node, state)
    let mut all: Vec<(i64, i64, u32, u8)> = Vec::new();
    let mut read = || -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {SAMPLES}"))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            rows_read += 1;
            let Some(time) = int(r, 1) else {
                report.skips.add(SAMPLES, BAD_TIME);
                continue;
            };
            let Some(tid) = int(r, 3) else {
                report.skips.add(SAMPLES, NO_THREAD);
                continue;
            };
            let node = int(r, 0)
                .and_then(|id| chains.get(&id).copied())
                .unwrap_or(NONE);
            let state = int(r, 2).map_or(0, |s| s.clamp(0, 255) as u8);
            all.push((tid, time, node, state));
        }
        Ok(())
    };
    read().map_err(|e| sqlite_error(path, SAMPLES, e))?;
    report.tables.insert(SAMPLES.to_string(), rows_read);
    all.sort_unstable_by_key(|s| (s.0, s.1));
    let names = thread_names(conn, trace);
    let mut out = CpuSamples {
        time: Vec::with_capacity(all.len()),
        node: Vec::with_capacity(all.len()),
        state: Vec::with_capacity(all.len()),
        threads: Vec::new(),
    };
    for run in all.chunk_by(|a, b| a.0 == b.0) {
        let global_tid = run[0].0;
        let name = match trace.thread_index(global_tid) {
            Some(i) => trace.threads[i].name.clone(),
            None => names.get(&global_tid).cloned().unwrap_or_default(),
        };
        out.threads.push(SampledThread {
            global_tid,
            name,
            first: out.time.len(),
            count: run.len(),
        });
        for &(_, time, node, state) in run {
            out.time.push(time);
            out.node.push(node);
            out.state.push(state);
        }
    }
    Ok(out)
}

/// Thread names of threads the model has no row for (a sampled thread that made no CUDA
/// call); none when the export has no `ThreadNames`.
fn thread_names(conn: &Connection, _trace: &Trace) -> HashMap<i64, String> {
    let mut out = HashMap::default();
    let Ok(mut stmt) = conn.prepare(
        "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId",
    ) else {
        return out;
    };
    let Ok(mut rows) = stmt.query([]) else {
        return out;
    };
    while let Ok(Some(r)) = rows.next() {
        if let (Some(tid), Ok(Some(name))) = (int(r, 0), r.get::<_, Option<String>>(1)) {
            out.insert(tid, name);
        }
    }
    out
}
