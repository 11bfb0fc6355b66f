//! What a load did: versions, rows read per table, tables absent and what that disables,
//! rows skipped and why, and how long each phase took.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::scan::Skips;
use crate::trace::Trace;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkippedRows {
    pub table: String,
    pub reason: String,
    pub rows: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadReport {
    pub file: PathBuf,
    pub file_bytes: u64,
    pub seconds: f64,
    /// Rows read per table (big tables: rows scanned, including skipped ones).
    pub tables: BTreeMap<String, u64>,
    pub missing_tables: Vec<String>,
    /// Missing table → what its absence disables.
    pub missing_effects: BTreeMap<String, String>,
    pub skipped_rows: Vec<SkippedRows>,
    /// Plain-language remarks, e.g. "no GPU activity".
    pub notes: Vec<String>,
    /// (phase, seconds), in order.
    pub phases: Vec<(String, f64)>,
    /// For a report opened directly (`.nsys-rep`): which SQLite export was read, and how
    /// it came to be (`crate::export`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// The big tables read straight from the file's pages (`load::pages`); the others
    /// went through SQL.
    #[serde(default)]
    pub read_from_pages: Vec<String>,
    #[serde(skip)]
    pub(super) skips: Skips,
}

impl LoadReport {
    pub(super) fn new(path: &Path) -> Self {
        Self {
            file: path.to_owned(),
            ..Default::default()
        }
    }

    /// The reports of several files as one: rows and bytes summed, the longest load's
    /// seconds (they ran in parallel), every file's notes, prefixed with its name.
    pub fn combined(reports: &[LoadReport]) -> LoadReport {
        let mut out = LoadReport {
            file: PathBuf::from(format!("{} files", reports.len())),
            ..Default::default()
        };
        for r in reports {
            let name = r.file.file_name().map_or_else(
                || r.file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            out.file_bytes += r.file_bytes;
            out.seconds = out.seconds.max(r.seconds);
            for (table, n) in &r.tables {
                *out.tables.entry(table.clone()).or_default() += n;
            }
            for t in &r.missing_tables {
                if !out.missing_tables.contains(t) {
                    out.missing_tables.push(t.clone());
                }
            }
            out.missing_effects.extend(
                r.missing_effects
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            out.skipped_rows.extend(r.skipped_rows.iter().cloned());
            out.notes
                .extend(r.notes.iter().map(|n| format!("{name}: {n}")));
        }
        out
    }

    /// The call stacks' read (after the load) in the report: its rows, its skipped rows,
    /// its time as a phase of its own, and its failure as a note. Once only: the rows
    /// already there say it was done.
    pub fn add_stacks_read(&mut self, read: &crate::trace::StacksRead) {
        if read
            .tables
            .iter()
            .any(|(t, _)| self.tables.contains_key(*t))
        {
            return;
        }
        for &(table, rows) in &read.tables {
            self.tables.insert(table.to_string(), rows);
        }
        for &((table, reason), rows) in &read.skips {
            self.skipped_rows.push(SkippedRows {
                table: table.to_string(),
                reason: reason.to_string(),
                rows,
            });
        }
        if let Some(error) = &read.error {
            self.notes
                .push(format!("the call stacks could not be read: {error}"));
        } else if !read.tables.is_empty() {
            self.phases
                .push(("call stacks (after the load)".to_string(), read.seconds));
        }
    }

    pub(super) fn phase_done(&mut self, name: &'static str, since: Instant) {
        let elapsed = since.elapsed();
        crate::profile::record(name, elapsed.as_nanos() as u64);
        crate::profile::trace_line('-', name);
        self.phases.push((name.to_string(), elapsed.as_secs_f64()));
    }

    pub(super) fn finish(&mut self, trace: &Trace, t0: Instant) {
        self.skipped_rows = self
            .skips
            .0
            .iter()
            .map(|(&(table, reason), &rows)| SkippedRows {
                table: table.to_string(),
                reason: reason.to_string(),
                rows,
            })
            .collect();
        let scheduled = trace
            .threads
            .iter()
            .filter(|t| !t.scheduling.is_empty())
            .count();
        if scheduled > 0 {
            self.notes.push(format!(
                "the export holds thread scheduling only (SCHED_EVENTS): when each of {scheduled} threads ran on a CPU; no CUDA, NVTX or OS runtime rows (profile with `nsys profile -t cuda,nvtx,osrt …` to see the GPU)"
            ));
        } else if trace.gpu_op_count() == 0
            && trace.api_call_count() == 0
            && trace.nvtx_range_count() == 0
        {
            self.notes.push(
                "the capture recorded no activity: no CUDA, NVTX or OS runtime rows (profile with `nsys profile -t cuda,nvtx,osrt …`)"
                    .to_string(),
            );
        } else if trace.gpu_op_count() == 0 {
            self.notes.push(
                "no GPU activity: the export has no kernel, memcpy or memset rows (was CUDA tracing on? `nsys profile --trace=cuda,nvtx`)"
                    .to_string(),
            );
        }
        let unlinked: usize = trace
            .devices
            .iter()
            .flat_map(|d| &d.streams)
            .map(|s| {
                s.ops
                    .launch_call
                    .iter()
                    .filter(|&&c| c == crate::trace::NONE)
                    .count()
            })
            .sum();
        if unlinked > 0 && trace.api_call_count() > 0 {
            self.notes.push(format!(
                "{unlinked} GPU ops have no launching API call in the export"
            ));
        }
        self.seconds = t0.elapsed().as_secs_f64();
    }
}
