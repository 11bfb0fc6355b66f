//! What the export contains: its tables and their columns, which kind of database it is,
//! and the version metadata. Columns are always chosen by name (nsys inserts new ones
//! mid-table between versions) and any table may be absent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::Connection;

use super::error::LoadError;
use super::sniff::sqlite_error;

pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const NVTX: &str = "NVTX_EVENTS";
pub const STRING_IDS: &str = "StringIds";

/// Tables the loader reads, and what their absence disables (shown in the load report).
pub const READ_TABLES: &[(&str, &str)] = &[
    (
        KERNEL,
        "no kernels: no compute/NCCL timeline, breakdown or gaps",
    ),
    (MEMCPY, "no memory copies"),
    (MEMSET, "no memsets"),
    (
        RUNTIME,
        "no CUDA API rows, kernel→launch links, gap causes or NVTX context of kernels",
    ),
    (
        NVTX,
        "no NVTX ranges: no iterations or NVTX context of gaps",
    ),
    (STRING_IDS, "no names of kernels and API calls"),
    ("ThreadNames", "no thread names"),
    ("PROCESSES", "no process names"),
    (
        "TARGET_INFO_GPU",
        "no GPU names (devices are shown as \"GPU <id>\")",
    ),
    (
        "ANALYSIS_DETAILS",
        "no capture window (the trace's extent is used)",
    ),
    (
        MEMCPY_KINDS,
        "copy kinds named by the values nsys uses (HtoD, DtoH, UVM HtoD, …)",
    ),
];

/// OS runtime calls (`nsys profile -t osrt`, on by default).
pub const OSRT: &str = "OSRT_API";

/// The memcpy copy-kind enum, absent before nsys 2021 and in 2022.2 exports.
pub const MEMCPY_KINDS: &str = "ENUM_CUDA_MEMCPY_OPER";

/// The tables of the file, each with its column names.
pub struct Schema {
    pub tables: BTreeMap<String, BTreeSet<String>>,
}

impl Schema {
    pub fn read(conn: &Connection, path: &Path) -> Result<Self, LoadError> {
        let names: Vec<String> = (|| {
            let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<Result<Vec<_>, _>>()
        })()
        .map_err(|e| sqlite_error(path, "sqlite_master", e))?;
        let mut tables = BTreeMap::new();
        for name in names {
            let columns: BTreeSet<String> = (|| {
                let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{name}\")"))?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(1))?;
                rows.collect::<Result<BTreeSet<_>, _>>()
            })()
            .map_err(|e| sqlite_error(path, &name, e))?;
            tables.insert(name, columns);
        }
        Ok(Self { tables })
    }

    pub fn has(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    /// `SELECT` list for `wanted` columns, with `NULL` standing in for absent ones.
    pub fn select_list(&self, table: &str, wanted: &[&str]) -> String {
        let columns = self.tables.get(table);
        wanted
            .iter()
            .map(|c| match columns {
                Some(cols) if cols.contains(*c) => format!("\"{c}\""),
                _ => "NULL".to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Rejects databases that are not nsys exports, naming what they are when we know.
    pub fn check_is_nsys_export(&self, path: &Path) -> Result<(), LoadError> {
        let has_cupti = self
            .tables
            .keys()
            .any(|t| t.starts_with("CUPTI_ACTIVITY_KIND_"));
        if self.has("StringTable") && !self.has(STRING_IDS) && has_cupti {
            return Err(LoadError::NvprofDatabase(path.to_owned()));
        }
        let nsys_marker = self.has(STRING_IDS)
            && (has_cupti
                || self.has(NVTX)
                || self.has("META_DATA_EXPORT")
                || self.has("EXPORT_META_DATA")
                || self.has("TARGET_INFO_SESSION_START_TIME")
                // A capture that recorded nothing still has these beside StringIds.
                || self.has("ThreadNames")
                || self.has("TARGET_INFO_GPU")
                || self.has("ProcessStreams")
                || self.has("PROCESSES"));
        if nsys_marker {
            return Ok(());
        }
        let mut found: Vec<&str> = self.tables.keys().map(String::as_str).take(5).collect();
        if self.tables.len() > 5 {
            found.push("…");
        }
        let found = if found.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables {}", found.join(", "))
        };
        Err(LoadError::NotNsysExport {
            path: path.to_owned(),
            found,
        })
    }

    pub fn meta_table(&self) -> Option<&'static str> {
        ["META_DATA_EXPORT", "EXPORT_META_DATA"]
            .into_iter()
            .find(|t| self.has(t))
    }
}
