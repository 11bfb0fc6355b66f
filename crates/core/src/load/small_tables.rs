//! The small tables, read once on one connection before the big scans: strings, version
//! metadata, processes, thread names, GPUs, the capture window and the memcpy enum.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::error::LoadError;
use super::schema::{STRING_IDS, Schema};
use super::sniff::sqlite_error;
use crate::trace::{ExportInfo, Process, StrId, StringTable, is_nccl_name};

/// nsys `StringIds.id` → our `StrId`.
pub enum IdMap {
    /// Ids are (nearly) dense: a vector indexed by nsys id.
    Dense(Vec<StrId>),
    Sparse(HashMap<i64, StrId>),
}

impl IdMap {
    pub fn get(&self, nsys_id: Option<i64>) -> StrId {
        let Some(id) = nsys_id else { return 0 };
        match self {
            IdMap::Dense(v) => usize::try_from(id)
                .ok()
                .and_then(|i| v.get(i))
                .copied()
                .unwrap_or(0),
            IdMap::Sparse(m) => m.get(&id).copied().unwrap_or(0),
        }
    }
}

/// Everything the row readers need to turn ids into names and classes.
pub struct Names {
    pub ids: IdMap,
    /// By `StrId`: is this a NCCL kernel name? Covers the `StringIds` strings.
    pub nccl: Vec<bool>,
    /// By memcpy `copyKind`: "Memcpy HtoD" and so on.
    pub memcpy_name: Vec<StrId>,
    pub memset_name: StrId,
}

impl Names {
    pub fn memcpy(&self, copy_kind: Option<i64>) -> StrId {
        let k = copy_kind
            .unwrap_or(0)
            .clamp(0, self.memcpy_name.len() as i64 - 1) as usize;
        self.memcpy_name[k]
    }

    pub fn is_nccl(&self, id: StrId) -> bool {
        self.nccl.get(id as usize).copied().unwrap_or(false)
    }
}

fn query<T>(
    conn: &Connection,
    path: &Path,
    table: &str,
    sql: &str,
    mut map: impl FnMut(&rusqlite::Row) -> T,
) -> Result<Vec<T>, LoadError> {
    let mut run = || -> rusqlite::Result<Vec<T>> {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(map(row));
        }
        Ok(out)
    };
    run().map_err(|e| sqlite_error(path, table, e))
}

/// Reads `StringIds` into `strings` and prepares the name lookups.
pub fn read_names(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    strings: &mut StringTable,
) -> Result<Names, LoadError> {
    let mut pairs: Vec<(i64, StrId)> = Vec::new();
    if schema.has(STRING_IDS) {
        let rows = query(
            conn,
            path,
            STRING_IDS,
            "SELECT id, value FROM StringIds",
            |r| (int(r, 0), text(r, 1).map(str::to_owned)),
        )?;
        for (id, value) in rows {
            if let (Some(id), Some(value)) = (id, value) {
                pairs.push((id, strings.intern(&value)));
            }
        }
    }
    let max_id = pairs.iter().map(|p| p.0).max().unwrap_or(0);
    let dense = pairs.iter().all(|p| p.0 >= 0) && (max_id as usize) < pairs.len() * 4 + 1024;
    let ids = if dense {
        let mut v = vec![0; max_id as usize + 1];
        for (id, s) in pairs {
            v[id as usize] = s;
        }
        IdMap::Dense(v)
    } else {
        IdMap::Sparse(pairs.into_iter().collect())
    };

    let mut memcpy_label: HashMap<i64, String> = HashMap::new();
    if schema.has(super::schema::MEMCPY_KINDS) {
        let rows = query(
            conn,
            path,
            "ENUM_CUDA_MEMCPY_OPER",
            "SELECT id, name, label FROM ENUM_CUDA_MEMCPY_OPER",
            |r| {
                // Short names as the nsys GUI shows them: CUDA_MEMCPY_KIND_DTOH → "DtoH".
                let short = text(r, 1)
                    .and_then(|n| n.strip_prefix("CUDA_MEMCPY_KIND_"))
                    .filter(|n| n.contains("TO"))
                    .map(|n| n.replace("TO", "to").replace('_', " "));
                (int(r, 0), short.or_else(|| text(r, 2).map(str::to_owned)))
            },
        )?;
        for (id, label) in rows {
            if let (Some(id), Some(label)) = (id, label) {
                memcpy_label.insert(id, label);
            }
        }
    }
    // Fallback labels: the values nsys has used in every version we have seen (the shared
    // schema files list them), named as the table's names are shortened above.
    let default_label = |k: i64| match k {
        0 => "Unknown",
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        11 => "UVM HtoD",
        12 => "UVM DtoH",
        13 => "UVM DtoD",
        _ => "unknown",
    };
    let memcpy_name = (0..32)
        .map(|k| {
            let label = memcpy_label
                .get(&k)
                .map(String::as_str)
                .unwrap_or_else(|| default_label(k));
            let label = label.strip_prefix("CUDA memcpy ").unwrap_or(label);
            strings.intern(&format!("Memcpy {label}"))
        })
        .collect();
    let memset_name = strings.intern("Memset");
    let nccl = (0..strings.len() as StrId)
        .map(|id| is_nccl_name(&strings.get(id)))
        .collect();
    Ok(Names {
        ids,
        nccl,
        memcpy_name,
        memset_name,
    })
}

pub fn read_export_info(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
) -> Result<ExportInfo, LoadError> {
    let mut info = ExportInfo {
        nvtx_text_in_string_ids: schema.has("EXPORT_META_DATA"),
        ..Default::default()
    };
    if let Some(table) = schema.meta_table() {
        let rows = query(
            conn,
            path,
            table,
            &format!("SELECT name, value FROM {table}"),
            |r| (text(r, 0).map(str::to_owned), text(r, 1).map(str::to_owned)),
        )?;
        for (name, value) in rows {
            match name.as_deref() {
                Some("EXPORT_PRODUCT_VERSION") => info.nsys_version = value,
                Some("EXPORT_SCHEMA_VERSION") => info.schema_version = value,
                _ => {}
            }
        }
    }
    // The session's wall-clock start: where each file's time 0 lies, when several
    // per-rank files are opened as one.
    if schema.has("TARGET_INFO_SESSION_START_TIME") {
        let starts = query(
            conn,
            path,
            "TARGET_INFO_SESSION_START_TIME",
            "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
            |r| int(r, 0),
        )
        .unwrap_or_default();
        info.utc_start_ns = starts.into_iter().flatten().next();
    }
    Ok(info)
}

pub fn read_processes(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
) -> Result<Vec<Process>, LoadError> {
    if !schema.has("PROCESSES") {
        return Ok(Vec::new());
    }
    let cols = schema.select_list("PROCESSES", &["pid", "name"]);
    let mut processes: Vec<Process> = query(
        conn,
        path,
        "PROCESSES",
        &format!("SELECT {cols} FROM PROCESSES"),
        |r| Process {
            pid: int(r, 0).unwrap_or(0) as u32,
            name: text(r, 1).unwrap_or("").to_owned(),
        },
    )?;
    processes.sort_by_key(|p| p.pid);
    processes.dedup_by_key(|p| p.pid);
    Ok(processes)
}

/// `globalTid` → thread name.
pub fn read_thread_names(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    names: &Names,
    strings: &StringTable,
) -> Result<HashMap<i64, String>, LoadError> {
    if !schema.has("ThreadNames") {
        return Ok(HashMap::new());
    }
    let cols = schema.select_list("ThreadNames", &["globalTid", "nameId"]);
    let rows = query(
        conn,
        path,
        "ThreadNames",
        &format!("SELECT {cols} FROM ThreadNames"),
        |r| (int(r, 0), int(r, 1)),
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|(tid, name)| Some((tid?, strings.get(names.ids.get(name)).into_owned())))
        .collect())
}

/// Device id → GPU name, from `TARGET_INFO_GPU` (absent in some exports).
pub fn read_gpu_names(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
) -> Result<HashMap<u32, String>, LoadError> {
    if !schema.has("TARGET_INFO_GPU") {
        return Ok(HashMap::new());
    }
    let cols = schema.select_list("TARGET_INFO_GPU", &["id", "name"]);
    let rows = query(
        conn,
        path,
        "TARGET_INFO_GPU",
        &format!("SELECT {cols} FROM TARGET_INFO_GPU"),
        |r| (int(r, 0), text(r, 1).map(str::to_owned)),
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, name)| Some((id? as u32, name?)))
        .collect())
}

pub fn read_capture_window(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
) -> Result<Option<(i64, i64)>, LoadError> {
    if !schema.has("ANALYSIS_DETAILS") {
        return Ok(None);
    }
    let cols = schema.select_list("ANALYSIS_DETAILS", &["startTime", "stopTime"]);
    let rows = query(
        conn,
        path,
        "ANALYSIS_DETAILS",
        &format!("SELECT {cols} FROM ANALYSIS_DETAILS"),
        |r| (int(r, 0), int(r, 1)),
    )?;
    Ok(rows
        .into_iter()
        .find_map(|(s, e)| Some((s?, e?)))
        .filter(|(s, e)| e >= s))
}

/// Rows in a small table (for the load report).
pub fn count_rows(conn: &Connection, path: &Path, table: &str) -> Result<u64, LoadError> {
    conn.query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n as u64)
    .map_err(|e| sqlite_error(path, table, e))
}

/// Column `i` as an integer; NULL (and non-integers) as `None`.
pub(super) fn int(row: &rusqlite::Row, i: usize) -> Option<i64> {
    match row.get_ref(i) {
        Ok(ValueRef::Integer(v)) => Some(v),
        Ok(ValueRef::Real(v)) => Some(v as i64),
        _ => None,
    }
}

/// Column `i` as text, if it is text.
fn text<'r>(row: &'r rusqlite::Row, i: usize) -> Option<&'r str> {
    match row.get_ref(i) {
        Ok(ValueRef::Text(bytes)) => std::str::from_utf8(bytes).ok(),
        _ => None,
    }
}

/// Thread scheduling (`SCHED_EVENTS`) as each thread's times on a CPU: read only for an
/// export that holds nothing else of its threads (no CUDA, NVTX or OS runtime tables).
pub fn read_scheduling(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
) -> Result<Vec<(i64, crate::trace::Scheduling)>, LoadError> {
    const SCHED: &str = "SCHED_EVENTS";
    if !schema.has(SCHED) {
        return Ok(Vec::new());
    }
    let rows = query(
        conn,
        path,
        SCHED,
        "SELECT globalTid, start, isSchedIn, cpu FROM SCHED_EVENTS ORDER BY globalTid, start",
        |r| (int(r, 0), int(r, 1), int(r, 2), int(r, 3)),
    )?;
    let mut out: Vec<(i64, crate::trace::Scheduling)> = Vec::new();
    let mut open: Option<(i64, u16)> = None;
    for (gtid, start, is_in, cpu) in rows {
        let (Some(gtid), Some(t)) = (gtid, start) else {
            continue;
        };
        if out.last().is_none_or(|l| l.0 != gtid) {
            out.push((gtid, Default::default()));
            open = None;
        }
        if is_in.unwrap_or(0) != 0 {
            open = Some((t, cpu.unwrap_or(0).clamp(0, u16::MAX as i64) as u16));
        } else if let Some((s, core)) = open.take() {
            let sched = &mut out.last_mut().expect("pushed").1;
            sched.start.push(s);
            sched.end.push(t.max(s));
            sched.cpu.push(core);
        }
    }
    out.retain(|(_, s)| !s.is_empty());
    Ok(out)
}
