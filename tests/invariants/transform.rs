//! Copies of an export changed in what must not matter: pids and tids renumbered (or made
//! the same across a job's files), every table's rows in another order, the clock's origin
//! moved. Each works on any export, generated or real, by column names nsys uses; the
//! original is never opened for writing.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Columns holding a `globalTid`/`globalPid` (pid in bits 24–47, tid in 0–23).
const GLOBAL_ID_COLUMNS: [&str; 3] = ["globalTid", "globalPid", "endGlobalTid"];
/// Columns holding a plain pid.
const PID_COLUMNS: [&str; 1] = ["pid"];
/// Columns holding a time on the capture's clock.
const TIME_COLUMNS: [&str; 7] = [
    "start",
    "end",
    "startTime",
    "stopTime",
    "timestamp",
    "startedAt",
    "endedAt",
];

/// `from` copied to `to` (its folder made), opened for writing.
pub fn copy(from: &Path, to: &Path) -> Connection {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::copy(from, to).unwrap();
    let conn = Connection::open(to).unwrap();
    // nsys's DDL names tables it may not write (`REFERENCES CUDA_CALLCHAINS`).
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn
}

/// Every user table and its columns.
fn tables(conn: &Connection) -> Vec<(String, Vec<String>)> {
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names
        .into_iter()
        .map(|t| {
            let columns = conn
                .prepare(&format!("PRAGMA table_info(\"{t}\")"))
                .unwrap()
                .query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            (t, columns)
        })
        .collect()
}

/// The pids and tids the export uses, from its global ids.
fn ids_used(conn: &Connection) -> (Vec<i64>, Vec<(i64, i64)>) {
    let mut pids = std::collections::BTreeSet::new();
    let mut tids = std::collections::BTreeSet::new();
    for (table, columns) in tables(conn) {
        for c in columns
            .iter()
            .filter(|c| GLOBAL_ID_COLUMNS.contains(&c.as_str()))
        {
            let mut q = conn
                .prepare(&format!(
                    "SELECT DISTINCT \"{c}\" FROM \"{table}\" WHERE \"{c}\" IS NOT NULL"
                ))
                .unwrap();
            for g in q.query_map([], |r| r.get::<_, i64>(0)).unwrap() {
                let g = g.unwrap();
                let (pid, tid) = ((g >> 24) & 0xFF_FFFF, g & 0xFF_FFFF);
                pids.insert(pid);
                if tid != 0 {
                    tids.insert((pid, tid));
                }
            }
        }
        for c in columns.iter().filter(|c| PID_COLUMNS.contains(&c.as_str())) {
            let mut q = conn
                .prepare(&format!(
                    "SELECT DISTINCT \"{c}\" FROM \"{table}\" WHERE \"{c}\" IS NOT NULL"
                ))
                .unwrap();
            for p in q.query_map([], |r| r.get::<_, i64>(0)).unwrap() {
                pids.insert(p.unwrap());
            }
        }
    }
    (pids.into_iter().collect(), tids.into_iter().collect())
}

/// Every pid and tid replaced as `pid_of` and `tid_of` say (a main thread, whose tid is its
/// pid, keeps that relation when the maps agree on it).
fn renumber(conn: &Connection, pid_of: &dyn Fn(i64) -> i64, tid_of: &dyn Fn(i64, i64) -> i64) {
    let (pids, tids) = ids_used(conn);
    // Through a table of old → new ids, in one UPDATE a column.
    conn.execute_batch(
        "CREATE TEMP TABLE pid_map (old INTEGER PRIMARY KEY, new INTEGER);
         CREATE TEMP TABLE gid_map (old INTEGER PRIMARY KEY, new INTEGER);",
    )
    .unwrap();
    for &p in &pids {
        conn.execute("INSERT INTO pid_map VALUES (?1, ?2)", [p, pid_of(p)])
            .unwrap();
    }
    for (table, columns) in tables(conn) {
        for c in columns
            .iter()
            .filter(|c| GLOBAL_ID_COLUMNS.contains(&c.as_str()))
        {
            let olds: Vec<i64> = conn
                .prepare(&format!(
                    "SELECT DISTINCT \"{c}\" FROM \"{table}\" WHERE \"{c}\" IS NOT NULL"
                ))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for g in olds {
                let (high, pid, tid) =
                    (g & !0xFFFF_FFFF_FFFF, (g >> 24) & 0xFF_FFFF, g & 0xFF_FFFF);
                let new_tid = if tid == 0 { 0 } else { tid_of(pid, tid) };
                let new = high | (pid_of(pid) << 24) | new_tid;
                conn.execute("INSERT OR IGNORE INTO gid_map VALUES (?1, ?2)", [g, new])
                    .unwrap();
            }
            conn.execute(
                &format!(
                    "UPDATE \"{table}\" SET \"{c}\" = (SELECT new FROM gid_map WHERE old = \"{table}\".\"{c}\") WHERE \"{c}\" IS NOT NULL"
                ),
                [],
            )
            .unwrap();
        }
        for c in columns.iter().filter(|c| PID_COLUMNS.contains(&c.as_str())) {
            conn.execute(
                &format!(
                    "UPDATE \"{table}\" SET \"{c}\" = (SELECT new FROM pid_map WHERE old = \"{table}\".\"{c}\") WHERE \"{c}\" IN (SELECT old FROM pid_map)"
                ),
                [],
            )
            .unwrap();
        }
    }
    let _ = tids;
    conn.execute_batch("DROP TABLE pid_map; DROP TABLE gid_map;")
        .unwrap();
}

/// A copy of `from` at `to` whose pids and tids are all others, in the reverse order
/// (`salt` picks them): an answer that follows the numbers' order changes too.
pub fn renumbered(from: &Path, to: &Path, salt: i64) -> PathBuf {
    let conn = copy(from, to);
    let (pids, tids) = ids_used(&conn);
    let pid_new =
        |p: i64| 200_000 + salt * 1_000 - pids.iter().position(|&x| x == p).unwrap() as i64 * 7;
    let tid_new = |p: i64, t: i64| {
        if t == p {
            pid_new(p)
        } else {
            900_000 + salt * 5_000 - tids.iter().position(|&x| x == (p, t)).unwrap_or(0) as i64 * 3
        }
    };
    renumber(&conn, &pid_new, &tid_new);
    to.to_path_buf()
}

/// A copy of one rank's file at `to` whose pids and tids are those every other rank's copy
/// gets: its processes numbered 1, 2, … and their threads 1, 2, … in the order of their
/// ids (containers: each node's training process is pid 1).
pub fn with_common_ids(from: &Path, to: &Path) -> PathBuf {
    let conn = copy(from, to);
    let (pids, tids) = ids_used(&conn);
    let pid_new = |p: i64| 1 + pids.iter().position(|&x| x == p).unwrap() as i64;
    let tid_new = |p: i64, t: i64| {
        if t == p {
            pid_new(p)
        } else {
            // A process's other threads after its pid, in their order.
            let mine: Vec<i64> = tids
                .iter()
                .filter(|x| x.0 == p && x.1 != p)
                .map(|x| x.1)
                .collect();
            1_000 + pid_new(p) * 100 + mine.iter().position(|&x| x == t).unwrap() as i64
        }
    };
    renumber(&conn, &pid_new, &tid_new);
    to.to_path_buf()
}

/// A copy of `from` at `to` with every table's rows in another order (a fixed permutation
/// by `salt`): Nsight ≥ 2025.6 does not promise any order. A table keyed by an integer
/// (`StringIds`) keeps its keys, so its order with them.
pub fn shuffled(from: &Path, to: &Path, salt: i64) -> PathBuf {
    let conn = copy(from, to);
    for (table, _) in tables(&conn) {
        conn.execute(
            &format!(
                "CREATE TEMP TABLE shuffled_rows AS SELECT * FROM \"{table}\" ORDER BY (rowid * 2654435761 + ?1) % 4294967291"
            ),
            [salt],
        )
        .unwrap();
        conn.execute_batch(&format!(
            "DELETE FROM \"{table}\"; INSERT INTO \"{table}\" SELECT * FROM shuffled_rows; DROP TABLE shuffled_rows;"
        ))
        .unwrap();
    }
    conn.execute_batch("VACUUM").unwrap();
    to.to_path_buf()
}

/// A copy of `from` at `to` whose every time is `by` ns later (the capture's clock started
/// elsewhere; its UTC start unchanged).
pub fn shifted(from: &Path, to: &Path, by: i64) -> PathBuf {
    let conn = copy(from, to);
    for (table, columns) in tables(&conn) {
        for c in columns
            .iter()
            .filter(|c| TIME_COLUMNS.contains(&c.as_str()))
        {
            conn.execute(
                &format!("UPDATE \"{table}\" SET \"{c}\" = \"{c}\" + ?1 WHERE \"{c}\" IS NOT NULL"),
                [by],
            )
            .unwrap();
        }
    }
    to.to_path_buf()
}
