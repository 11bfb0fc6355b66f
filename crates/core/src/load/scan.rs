//! Parallel, cancellable table scans. A big table is cut into parts, each read by a rayon
//! worker in one sequential pass: runs of its leaf pages read straight from the file
//! (`super::pages`), or, where that reader does not apply, rowid ranges read through SQL on
//! a read-only connection of the worker's own (exports have no indexes, but the rowid
//! b-tree makes a range start a cheap seek).
#![expect(
    unsafe_code,
    reason = "SQLite read through its C API: rusqlite's per-value checks were 15 % of a load"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::{Connection, ffi};

use super::error::LoadError;
use super::pages::{DbFile, Layout, PageError, Record};
use super::schema::Schema;
use super::sniff::sqlite_error;
use super::{Phase, Progress};

/// Rows per range. Smaller = finer progress and better balance across cores; larger =
/// fewer connections and merges; a chunk is tens of ms of reading on this project's
/// machines.
pub const ROWS_PER_CHUNK: i64 = 256 * 1024;

/// How often (in rows) a scan checks the cancel flag and reports progress.
const CHECK_EVERY_ROWS: u64 = 4096;

/// Shared state of one load: where to report, and whether to stop.
pub struct ScanContext<'a> {
    pub path: &'a Path,
    /// The file opened for page reads, where the plans read leaves.
    pub db: Option<&'a DbFile>,
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

/// A part of a big table one task reads: a rowid range `[lo, hi]` (inclusive: a rowid
/// may be `i64::MAX`) through SQLite, or leaves `[from, to)` of the table's leaf list read
/// straight from the file.
#[derive(Clone, Copy, Debug)]
pub enum Span {
    Rowids(i64, i64),
    Leaves(usize, usize),
}

/// How one big table is read: its wanted columns, and its leaf pages where the file is
/// read directly (`super::pages`), or else SQL over rowid ranges.
pub struct TablePlan {
    pub table: &'static str,
    select_list: String,
    pages: Option<(Layout, Vec<u32>)>,
    pub spans: Vec<Span>,
    /// An estimate of the rows (from the rowids), for progress.
    pub rows: u64,
}

/// Plans the scan of `table` for the `wanted` columns (names; `rowid`; absent ones read
/// as NULL; those `on_demand` found in a record only when asked for), cut into parts of
/// about `ROWS_PER_CHUNK` rows.
pub fn plan(
    conn: &Connection,
    db: Option<&DbFile>,
    schema: &Schema,
    path: &Path,
    table: &'static str,
    wanted: &[&str],
    on_demand: &[&str],
) -> Result<TablePlan, LoadError> {
    // Two queries: `SELECT min(rowid), max(rowid)` in one would scan the whole table.
    let rowid = |f: &str| -> Result<Option<i64>, LoadError> {
        conn.query_row(&format!("SELECT {f}(rowid) FROM \"{table}\""), [], |r| {
            r.get(0)
        })
        .map_err(|e| sqlite_error(path, table, e))
    };
    let (min, max) = (rowid("min")?, rowid("max")?);
    let select_list = wanted
        .iter()
        .map(|&c| match c {
            "rowid" => "rowid".to_string(),
            c => schema.select_list(table, &[c]),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut plan = TablePlan {
        table,
        select_list,
        pages: None,
        spans: Vec::new(),
        rows: 0,
    };
    let (Some(min), Some(max)) = (min, max) else {
        return Ok(plan);
    };
    // SQLite allows any rowid: a table's span of rowids is no row count (two rows may be
    // 2^63 apart). Counted in full (checked) where it is plausible, else from the table.
    let span = max
        .checked_sub(min)
        .and_then(|d| d.checked_add(1))
        .map(|n| n as u64)
        .filter(|&n| n <= MAX_DENSE_SPAN);
    if let Some(db) = db
        && let Some(layout) = Layout::of(conn, table, wanted, on_demand)
    {
        let leaves = db
            .leaves(layout.root)
            .map_err(|e| page_error(path, table, e))?;
        // A leaf holds at most a cell per 4 bytes of its page.
        let most = leaves.len() as u64 * (db.page_size() as u64 / 4);
        plan.rows = span.unwrap_or(most).min(most);
        let rows_per_leaf = (plan.rows / leaves.len().max(1) as u64).max(1);
        let per_chunk = (ROWS_PER_CHUNK as u64 / rows_per_leaf).max(1) as usize;
        plan.spans = (0..leaves.len())
            .step_by(per_chunk)
            .map(|from| Span::Leaves(from, (from + per_chunk).min(leaves.len())))
            .collect();
        plan.pages = Some((layout, leaves));
        return Ok(plan);
    }
    match span {
        Some(n) => {
            plan.rows = n;
            plan.spans = dense_spans(min, max);
        }
        None => {
            // Sparse or extreme rowids: ranges cut at the real ones.
            let rowids = real_rowids(conn, table).map_err(|e| sqlite_error(path, table, e))?;
            plan.rows = rowids.len() as u64;
            plan.spans = rowids
                .chunks(ROWS_PER_CHUNK as usize)
                .map(|c| Span::Rowids(c[0], c[c.len() - 1]))
                .collect();
        }
    }
    Ok(plan)
}

/// Above this span of rowids a table is not taken to be dense: no nsys table holds four
/// billion rows, and a file whose rowids spread wider is cut at its real rowids.
const MAX_DENSE_SPAN: u64 = u32::MAX as u64;

/// `[min, max]` cut into ranges of `ROWS_PER_CHUNK` rowids, inclusive, with checked
/// arithmetic (a range may end at `i64::MAX`).
fn dense_spans(min: i64, max: i64) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut lo = Some(min);
    while let Some(l) = lo.filter(|&l| l <= max) {
        let hi = l.saturating_add(ROWS_PER_CHUNK - 1).min(max);
        spans.push(Span::Rowids(l, hi));
        lo = hi.checked_add(1);
    }
    spans
}

/// Every rowid of `table`, in order (a sparse table's: few rows).
fn real_rowids(conn: &Connection, table: &str) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare(&format!("SELECT rowid FROM \"{table}\" ORDER BY rowid"))?;
    let rows = stmt.query_map([], |r| r.get::<_, i64>(0))?;
    rows.collect()
}

impl TablePlan {
    /// Whether the table is read from the file's pages.
    pub fn reads_pages(&self) -> bool {
        self.pages.is_some()
    }
}

fn page_error(path: &Path, table: &str, e: PageError) -> LoadError {
    match e {
        PageError::Io(source) => LoadError::Io {
            path: path.to_owned(),
            source,
        },
        PageError::Damaged(detail) => LoadError::Corrupt {
            path: path.to_owned(),
            detail: super::sniff::one_line(&format!("{table}: {detail}")),
        },
    }
}

/// Reads the rows of `span` of `plan`'s table, handing each to `on_row`. Returns the
/// rows read.
pub fn scan_range(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    span: Span,
    mut on_row: impl FnMut(&RawRow) -> Result<(), rusqlite::Error>,
) -> Result<u64, LoadError> {
    let table = plan.table;
    let mut n = 0u64;
    let mut unreported = 0u64;
    let mut counted = |n: &mut u64| -> Result<(), ScanStop> {
        *n += 1;
        unreported += 1;
        if unreported == CHECK_EVERY_ROWS {
            ctx.check_cancel().map_err(|_| ScanStop::Cancelled)?;
            ctx.add_rows(unreported);
            unreported = 0;
        }
        Ok(())
    };
    let result = match (span, &plan.pages, ctx.db) {
        (Span::Leaves(from, to), Some((layout, leaves)), Some(db)) => db.scan(
            &leaves[from..to],
            layout,
            |record| -> Result<(), ScanStop> {
                on_row(&RawRow::Page(record))?;
                counted(&mut n)
            },
        ),
        (Span::Rowids(lo, hi), _, _) => {
            let sql = format!(
                "SELECT {} FROM \"{table}\" WHERE rowid >= {lo} AND rowid <= {hi}",
                plan.select_list
            );
            (|| {
                let mut stmt = RawStatement::prepare(conn, &sql)?;
                while stmt.step()? {
                    on_row(&RawRow::Sqlite(&stmt))?;
                    counted(&mut n)?;
                }
                Ok(())
            })()
        }
        _ => unreachable!("leaves are planned only with the file open for pages"),
    };
    match result {
        Ok(()) => {
            ctx.add_rows(unreported);
            Ok(n)
        }
        Err(ScanStop::Cancelled) => Err(LoadError::Cancelled),
        Err(ScanStop::Sqlite(e)) => Err(sqlite_error(ctx.path, table, e)),
        Err(ScanStop::Page(e)) => Err(page_error(ctx.path, table, e)),
    }
}

enum ScanStop {
    Cancelled,
    Sqlite(rusqlite::Error),
    Page(PageError),
}

impl From<PageError> for ScanStop {
    fn from(e: PageError) -> Self {
        ScanStop::Page(e)
    }
}

impl From<rusqlite::Error> for ScanStop {
    fn from(e: rusqlite::Error) -> Self {
        ScanStop::Sqlite(e)
    }
}

/// What a database in another text encoding than UTF-8 is told.
pub fn utf16_message(encoding: &str) -> String {
    format!(
        "its text is {encoding}; nsys writes its exports in UTF-8: export the report again with `nsys export --type sqlite`"
    )
}

/// A prepared statement driven through SQLite's C API. The scans read ~100M values, and
/// rusqlite's per-value checks (column count, type, `ValueRef`) were ~15 % of load time
/// in `perf`; here a value costs one or two C calls.
///
/// Only a UTF-8 database's statement can be made (`prepare` checks): there SQLite hands
/// out a TEXT or BLOB value's own bytes and never converts them, so a slice of one stays
/// valid until the next step whatever else is asked of the row. (In a UTF-16 database
/// `sqlite3_column_text` converts, and frees what an earlier call returned.)
pub struct RawStatement {
    db: *mut ffi::sqlite3,
    stmt: *mut ffi::sqlite3_stmt,
}

impl RawStatement {
    fn prepare(conn: &Connection, sql: &str) -> Result<Self, rusqlite::Error> {
        let encoding: String = conn.query_row("PRAGMA encoding", [], |r| r.get(0))?;
        if encoding != "UTF-8" {
            return Err(rusqlite::Error::SqliteFailure(
                ffi::Error::new(ffi::SQLITE_MISMATCH),
                Some(utf16_message(&encoding)),
            ));
        }
        // SAFETY: the handle outlives this statement, which borrows nothing else from
        // `conn` and is finalized on drop; the connection is used by one thread at a time.
        let db = unsafe { conn.handle() };
        let sql = std::ffi::CString::new(sql).map_err(|_| rusqlite::Error::InvalidQuery)?;
        let mut stmt = std::ptr::null_mut();
        // SAFETY: valid db handle and NUL-terminated SQL; `stmt` is an out-pointer.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, std::ptr::null_mut())
        };
        let statement = Self { db, stmt };
        statement.check(rc)?;
        Ok(statement)
    }

    /// Advances to the next row; false when there are no more.
    fn step(&mut self) -> Result<bool, rusqlite::Error> {
        // SAFETY: `stmt` is a live prepared statement.
        match unsafe { ffi::sqlite3_step(self.stmt) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            rc => self.check(rc).map(|_| false),
        }
    }

    fn check(&self, rc: std::ffi::c_int) -> Result<(), rusqlite::Error> {
        if rc == ffi::SQLITE_OK {
            return Ok(());
        }
        // SAFETY: errmsg returns a NUL-terminated string owned by the connection.
        let message = unsafe { std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(self.db)) };
        Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(message.to_string_lossy().into_owned()),
        ))
    }
}

impl Drop for RawStatement {
    fn drop(&mut self) {
        // SAFETY: finalizing a statement (or null) once is always allowed.
        unsafe { ffi::sqlite3_finalize(self.stmt) };
    }
}

/// The current row: of a `RawStatement` (it cannot outlive the step that produced it) or
/// a record read from a page.
pub enum RawRow<'s> {
    Sqlite(&'s RawStatement),
    Page(&'s Record<'s>),
}

fn column_type(stmt: &RawStatement, i: usize) -> std::ffi::c_int {
    // SAFETY: the statement has a current row; out-of-range columns read as NULL.
    unsafe { ffi::sqlite3_column_type(stmt.stmt, i as std::ffi::c_int) }
}

/// Column `i` as an integer; NULL (and text or blobs) as `None`.
#[inline]
pub fn int(row: &RawRow, i: usize) -> Option<i64> {
    let stmt = match row {
        RawRow::Page(record) => return record.int(i),
        RawRow::Sqlite(stmt) => stmt,
    };
    // SAFETY: as in `column_type`. NULL reads as 0, so only 0 needs its type checked.
    let value = unsafe { ffi::sqlite3_column_int64(stmt.stmt, i as std::ffi::c_int) };
    if value != 0 {
        return Some(value);
    }
    match column_type(stmt, i) {
        ffi::SQLITE_INTEGER | ffi::SQLITE_FLOAT => Some(0),
        _ => None,
    }
}

/// A BLOB (or TEXT) value's bytes; `None` for NULL and numbers.
#[inline]
pub fn blob<'r>(row: &'r RawRow, i: usize) -> Option<&'r [u8]> {
    let stmt = match row {
        RawRow::Page(record) => return record.blob(i),
        RawRow::Sqlite(stmt) => stmt,
    };
    if !matches!(column_type(stmt, i), ffi::SQLITE_BLOB | ffi::SQLITE_TEXT) {
        return None;
    }
    // SAFETY: as in `text`: the buffer stays valid until the next step.
    unsafe {
        let ptr = ffi::sqlite3_column_blob(stmt.stmt, i as std::ffi::c_int);
        let len = ffi::sqlite3_column_bytes(stmt.stmt, i as std::ffi::c_int);
        if ptr.is_null() || len <= 0 {
            return Some(&[]);
        }
        Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize))
    }
}

/// Column `i` as text, if it is valid UTF-8 text.
#[inline]
pub fn text<'r>(row: &'r RawRow, i: usize) -> Option<&'r str> {
    let stmt = match row {
        RawRow::Page(record) => return record.text(i),
        RawRow::Sqlite(stmt) => stmt,
    };
    if column_type(stmt, i) != ffi::SQLITE_TEXT {
        return None;
    }
    // SAFETY: for a TEXT value, column_text then column_bytes give a buffer that stays
    // valid until the next step, which the `RawRow` borrow rules out.
    let bytes = unsafe {
        let ptr = ffi::sqlite3_column_text(stmt.stmt, i as std::ffi::c_int);
        let len = ffi::sqlite3_column_bytes(stmt.stmt, i as std::ffi::c_int);
        if ptr.is_null() {
            return None;
        }
        std::slice::from_raw_parts(ptr, len as usize)
    };
    std::str::from_utf8(bytes).ok()
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
