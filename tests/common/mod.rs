//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sha2_free::file_digest;

/// Every shared real export: `real/`, `real-round3/` (older shapes: no NVTX table, no
/// enum tables, OS runtime calls, several syncs per step) and `real-round4/` (CPU samples
/// and OS runtime backtraces).
pub fn real_fixtures() -> Vec<PathBuf> {
    // From the workspace's root (the folder with Cargo.lock), for the core's tests too.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .expect("inside the workspace")
        .join("../shared/fixtures");
    let mut files: Vec<PathBuf> = ["real", "real-round3", "real-round4"]
        .iter()
        .flat_map(|sub| {
            let dir = root.join(sub);
            std::fs::read_dir(&dir)
                .unwrap_or_else(|e| {
                    panic!(
                        "{}: {e} (the real exports live in ../shared/fixtures/{sub})",
                        dir.display()
                    )
                })
                .map(|e| e.unwrap().path())
                .collect::<Vec<_>>()
        })
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 7,
        "expected the real exports in {}",
        root.display()
    );
    files
}

/// A snapshot of a file's bytes and its folder's listing, to prove a load wrote nothing.
#[derive(Debug, PartialEq, Eq)]
pub struct Untouched {
    digest: Option<u64>,
    listing: Vec<String>,
}

pub fn snapshot(path: &Path) -> Untouched {
    let dir = path.parent().unwrap();
    let mut listing: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    listing.sort();
    Untouched {
        digest: file_digest(path),
        listing,
    }
}

mod sha2_free {
    use std::hash::{DefaultHasher, Hasher};
    use std::path::Path;

    /// A content hash (not cryptographic: it only has to notice a change).
    pub fn file_digest(path: &Path) -> Option<u64> {
        if path.is_dir() {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        let mut h = DefaultHasher::new();
        h.write(&bytes);
        h.write_usize(bytes.len());
        Some(h.finish())
    }
}

/// An export that recorded thread scheduling only (as many real ones do): two threads of
/// one process, each scheduled in and out a few times on CPUs 3 and 5.
pub fn scheduling_only_export(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'python3'), (2, 'worker');
         CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
         INSERT INTO ThreadNames VALUES (1, 0, 1677721600 + 100), (2, 0, 1677721600 + 101);
         CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
         INSERT INTO PROCESSES VALUES (1677721600, 100, 'python3');
         CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL, globalTid INTEGER, threadState INTEGER, threadBlock INTEGER);",
    )
    .unwrap();
    let tid = |t: i64| (100 << 24) + t;
    for k in 0..5i64 {
        for (t, cpu) in [(100, 3), (101, 5)] {
            let at = 1_000_000 + k * 10_000_000 + (t - 100) * 2_000_000;
            conn.execute(
                "INSERT INTO SCHED_EVENTS VALUES (?1, ?2, 1, ?3, 0, 0), (?4, ?2, 0, ?3, 0, 0)",
                rusqlite::params![at, cpu, tid(t), at + 4_000_000],
            )
            .unwrap();
        }
    }
}

/// A cache folder's parent (`XDG_CACHE_HOME`) for this test process, under Cargo's
/// scratch folder: tests never write to the user's cache.
pub fn test_cache_home() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cache-home-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The export at `path` opened read-only and immutable, as a plain SQL reader would.
pub fn open_plain(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", path.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap()
}

/// Whether the export has `table`.
pub fn has_table(conn: &rusqlite::Connection, table: &str) -> bool {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}
