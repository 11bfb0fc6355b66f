//! Looks at a file before SQLite does: what it is, and whether it is whole. Then opens it
//! read-only and immutable, so that SQLite writes nothing beside it (no journal, WAL or lock).

use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::error::LoadError;

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// The first bytes of a rank summary (`crate::job::file`).
pub const SUMMARY_MAGIC: &[u8; 8] = b"NSXSUMRY";

/// Checks that `path` is a readable, whole SQLite file; returns its size in bytes.
pub fn check_file(path: &Path) -> Result<u64, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    if meta.is_dir() {
        return Err(LoadError::IsDirectory(path.to_owned()));
    }
    let mut file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let size = meta.len();
    if size == 0 {
        return Err(LoadError::Empty(path.to_owned()));
    }
    let mut header = [0u8; 100];
    let n = read_up_to(&mut file, &mut header).map_err(|e| io_error(path, e))?;
    if n < 16 || &header[..16] != SQLITE_MAGIC {
        if is_nsys_report_name(path) {
            return Err(LoadError::NsysReport(path.to_owned(), export_name(path)));
        }
        if n >= 8 && &header[..8] == SUMMARY_MAGIC {
            return Err(LoadError::RankSummary(path.to_owned()));
        }
        return Err(LoadError::NotSqlite(path.to_owned()));
    }
    if n < 100 {
        return Err(corrupt(
            path,
            format!("only {n} bytes, shorter than the SQLite header"),
        ));
    }
    // Header bytes 16..18: page size (1 means 65536); 28..32: size in pages, valid when the
    // change counter (24..28) equals "version-valid-for" (92..96).
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536u64,
        p => p as u64,
    };
    let pages = u32::from_be_bytes(header[28..32].try_into().unwrap()) as u64;
    let counter_valid = header[24..28] == header[92..96];
    if counter_valid && pages > 0 && page_size >= 512 && size < pages * page_size {
        return Err(corrupt(
            path,
            format!(
                "truncated: {size} bytes of the {} its header announces",
                pages * page_size
            ),
        ));
    }
    Ok(size)
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

pub fn io_error(path: &Path, e: std::io::Error) -> LoadError {
    match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::NotFound(path.to_owned()),
        std::io::ErrorKind::PermissionDenied => LoadError::PermissionDenied(path.to_owned()),
        std::io::ErrorKind::IsADirectory => LoadError::IsDirectory(path.to_owned()),
        _ => LoadError::Io {
            path: path.to_owned(),
            source: e,
        },
    }
}

pub fn corrupt(path: &Path, detail: String) -> LoadError {
    LoadError::Corrupt {
        path: path.to_owned(),
        detail: one_line(&detail),
    }
}

/// SQLite's message on one line, and not a page long: a damaged schema's message quotes
/// the schema's text, newlines and all.
pub fn one_line(detail: &str) -> String {
    const MOST: usize = 240;
    let flat = detail.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MOST) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// Whether `path` names an Nsight Systems report rather than its SQLite export.
pub fn is_report(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("nsys-rep") || e.eq_ignore_ascii_case("qdrep"))
}

fn is_nsys_report_name(path: &Path) -> bool {
    // A raw `.qdstrm` stream is a report too, though `nsys export` cannot read it.
    is_report(path)
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("qdstrm"))
}

/// `run.nsys-rep` → `run.sqlite`, for the export command we suggest.
fn export_name(path: &Path) -> PathBuf {
    path.with_extension("sqlite")
}

/// Opens the export read-only. `immutable=1` tells SQLite that nothing changes the file,
/// so it takes no locks and never creates a journal or WAL file next to it.
pub fn open_read_only(path: &Path) -> Result<Connection, LoadError> {
    let uri = format!("file:{}?mode=ro&immutable=1", percent_encode_path(path));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn =
        Connection::open_with_flags(uri, flags).map_err(|e| sqlite_error(path, "the file", e))?;
    // No mmap: mapped pages of a multi-GB file would count as this process's memory.
    Ok(conn)
}

/// URI paths must escape `?`, `#` and `%` (and we escape anything unusual to be safe).
fn percent_encode_path(path: &Path) -> String {
    let mut out = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Maps an SQLite error to a user-facing one: damage is "corrupt", the rest says where.
pub fn sqlite_error(path: &Path, table: &str, e: rusqlite::Error) -> LoadError {
    use rusqlite::ErrorCode::*;
    if let rusqlite::Error::SqliteFailure(failure, _) = &e {
        match failure.code {
            DatabaseCorrupt | NotADatabase => return corrupt(path, e.to_string()),
            OperationInterrupted => return LoadError::Cancelled,
            PermissionDenied => return LoadError::PermissionDenied(path.to_owned()),
            _ => {}
        }
    }
    LoadError::Sqlite {
        path: path.to_owned(),
        table: table.to_owned(),
        detail: one_line(&e.to_string()),
    }
}
