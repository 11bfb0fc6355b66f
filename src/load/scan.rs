//! Parallel, cancellable table scans. A big table is cut into rowid ranges; each range is
//! read on its own read-only connection by a rayon worker, in one sequential pass.
//! (Exports have no indexes, but the rowid b-tree makes a range start a cheap seek.)

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::error::LoadError;
use super::sniff::sqlite_error;
use super::{Phase, Progress};

/// Rows per range. Smaller = finer progress and better balance across cores; larger =
/// fewer connections and merges. 256k rows is ~20 ms of reading.
pub const ROWS_PER_CHUNK: i64 = 256 * 1024;

/// How often (in rows) a scan checks the cancel flag and reports progress.
const CHECK_EVERY_ROWS: u64 = 4096;

/// Shared state of one load: where to report, and whether to stop.
pub struct ScanContext<'a> {
    pub path: &'a Path,
    pub cancel: &'a AtomicBool,
    pub rows_read: AtomicU64,
    pub rows_expected: u64,
    pub progress: &'a (dyn Fn(Progress) + Sync),
}

impl ScanContext<'_> {
    pub fn check_cancel(&self) -> Result<(), LoadError> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(LoadError::Cancelled)
        } else {
            Ok(())
        }
    }

    fn add_rows(&self, n: u64) {
        let done = self.rows_read.fetch_add(n, Ordering::Relaxed) + n;
        let fraction = done as f32 / self.rows_expected.max(1) as f32;
        (self.progress)(Progress {
            phase: Phase::ReadingTables,
            fraction: fraction.min(1.0),
            rows_read: done,
        });
    }
}

/// The rowid ranges `[lo, hi)` that cover `table`, and an estimate of its row count.
pub fn plan_ranges(
    conn: &Connection,
    path: &Path,
    table: &str,
) -> Result<(Vec<(i64, i64)>, u64), LoadError> {
    let (min, max): (Option<i64>, Option<i64>) = conn
        .query_row(
            &format!("SELECT min(rowid), max(rowid) FROM \"{table}\""),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| sqlite_error(path, table, e))?;
    let (Some(min), Some(max)) = (min, max) else {
        return Ok((Vec::new(), 0));
    };
    let mut ranges = Vec::new();
    let mut lo = min;
    while lo <= max {
        let hi = lo.saturating_add(ROWS_PER_CHUNK);
        ranges.push((lo, hi));
        lo = hi;
    }
    Ok((ranges, (max - min + 1) as u64))
}

/// Reads rows `[lo, hi)` of `table`, handing each to `on_row`. Returns the rows read.
pub fn scan_range(
    ctx: &ScanContext,
    conn: &Connection,
    table: &str,
    select_list: &str,
    (lo, hi): (i64, i64),
    mut on_row: impl FnMut(&rusqlite::Row) -> Result<(), rusqlite::Error>,
) -> Result<u64, LoadError> {
    let sql = format!("SELECT {select_list} FROM \"{table}\" WHERE rowid >= ?1 AND rowid < ?2");
    let mut run = || -> Result<u64, ScanStop> {
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([lo, hi])?;
        let mut n = 0u64;
        let mut unreported = 0u64;
        while let Some(row) = rows.next()? {
            on_row(row)?;
            n += 1;
            unreported += 1;
            if unreported == CHECK_EVERY_ROWS {
                ctx.check_cancel().map_err(|_| ScanStop::Cancelled)?;
                ctx.add_rows(unreported);
                unreported = 0;
            }
        }
        ctx.add_rows(unreported);
        Ok(n)
    };
    match run() {
        Ok(n) => Ok(n),
        Err(ScanStop::Cancelled) => Err(LoadError::Cancelled),
        Err(ScanStop::Sqlite(e)) => Err(sqlite_error(ctx.path, table, e)),
    }
}

enum ScanStop {
    Cancelled,
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for ScanStop {
    fn from(e: rusqlite::Error) -> Self {
        ScanStop::Sqlite(e)
    }
}

/// Column `i` as an integer; NULL (and non-integers) as `None`.
pub fn int(row: &rusqlite::Row, i: usize) -> Option<i64> {
    match row.get_ref(i) {
        Ok(ValueRef::Integer(v)) => Some(v),
        Ok(ValueRef::Real(v)) => Some(v as i64),
        _ => None,
    }
}

/// Column `i` as text, if it is text.
pub fn text<'r>(row: &'r rusqlite::Row, i: usize) -> Option<&'r str> {
    match row.get_ref(i) {
        Ok(ValueRef::Text(bytes)) => std::str::from_utf8(bytes).ok(),
        _ => None,
    }
}

/// Rows dropped while reading, by (table, reason).
#[derive(Debug, Default, Clone)]
pub struct Skips(pub BTreeMap<(&'static str, &'static str), u64>);

impl Skips {
    pub fn add(&mut self, table: &'static str, reason: &'static str) {
        *self.0.entry((table, reason)).or_default() += 1;
    }

    pub fn merge(&mut self, other: Skips) {
        for (key, n) in other.0 {
            *self.0.entry(key).or_default() += n;
        }
    }
}
