//! Every bad input gets a clear message, never a panic, and the file and its folder are
//! left exactly as they were.

mod common;

use std::path::{Path, PathBuf};

use nsys_explorer::load::{self, LoadError};

/// Loads `path`, expects an error whose message contains every one of `needles`, and checks
/// that the file and its folder did not change.
fn expect_error(path: &Path, needles: &[&str]) -> LoadError {
    let before = common::snapshot(path);
    let err = match load::load(path) {
        Ok(_) => panic!("{} loaded, expected an error", path.display()),
        Err(e) => e,
    };
    let message = err.to_string();
    for needle in needles {
        assert!(
            message.contains(needle),
            "message {message:?} lacks {needle:?}"
        );
    }
    assert_eq!(
        common::snapshot(path),
        before,
        "{} or its folder changed",
        path.display()
    );
    err
}

fn real_export() -> PathBuf {
    common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("h100"))
        .unwrap()
}

#[test]
fn missing_path_says_no_such_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = expect_error(
        &dir.path().join("nope.sqlite"),
        &["nope.sqlite", "no such file"],
    );
    assert!(matches!(err, LoadError::NotFound(_)));
}

#[test]
fn directory_says_it_is_a_directory() {
    // Inside a private folder: the shared temp folder's listing changes under parallel tests.
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("a-folder.sqlite");
    std::fs::create_dir(&inner).unwrap();
    let err = expect_error(&inner, &["is a directory"]);
    assert!(matches!(err, LoadError::IsDirectory(_)));
}

#[test]
fn empty_file_says_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.sqlite");
    std::fs::write(&path, b"").unwrap();
    expect_error(&path, &["is empty"]);
}

#[test]
fn random_bytes_say_not_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.sqlite");
    let mut rng = fastrand::Rng::with_seed(7);
    let bytes: Vec<u8> = (0..100_000).map(|_| rng.u8(..)).collect();
    std::fs::write(&path, bytes).unwrap();
    let err = expect_error(
        &path,
        &["not an SQLite database", "nsys export --type sqlite"],
    );
    assert!(matches!(err, LoadError::NotSqlite(_)));
}

#[test]
fn nsys_rep_report_names_the_export_command() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["run.nsys-rep", "old.qdrep"] {
        let path = dir.path().join(name);
        std::fs::write(&path, b"\x00\x01NSYS-REPORT-ish binary content").unwrap();
        let err = expect_error(
            &path,
            &["Nsight Systems report", "nsys export --type sqlite", name],
        );
        assert!(matches!(err, LoadError::NsysReport(..)));
    }
}

#[test]
fn a_rank_summary_given_for_an_export_says_what_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let export = real_export();
    let summary = nsys_explorer::session::summarize_export(
        &export,
        &nsys_explorer::overview::Options::default(),
        false,
    )
    .unwrap();
    let path = dir.path().join("rank0.summary");
    nsys_explorer::job::write_summary(&summary, &path).unwrap();
    let err = expect_error(
        &path,
        &["rank summary", "nsys-explorer report", "rank0.summary"],
    );
    assert!(matches!(err, LoadError::RankSummary(..)));
}

#[test]
fn truncated_sqlite_says_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated.sqlite");
    let bytes = std::fs::read(real_export()).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = expect_error(&path, &["truncated", "export it again"]);
    assert!(matches!(err, LoadError::Corrupt { .. }));
}

#[test]
fn corrupt_sqlite_says_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.sqlite");
    let mut bytes = std::fs::read(real_export()).unwrap();
    let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    // Scribble over every b-tree page header (page 1's starts after the 100-byte header).
    for page_start in (0..bytes.len()).step_by(page_size) {
        let at = if page_start == 0 { 100 } else { page_start };
        bytes[at..at + 12].copy_from_slice(&[0xEE; 12]);
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = expect_error(&path, &["damaged"]);
    assert!(matches!(err, LoadError::Corrupt { .. }), "{err:?}");
}

#[test]
fn sqlite_that_is_not_an_export_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE users (id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');",
    )
    .unwrap();
    drop(conn);
    let err = expect_error(&path, &["not an Nsight Systems export", "users"]);
    assert!(matches!(err, LoadError::NotNsysExport { .. }));
}

#[test]
fn nvprof_database_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.nvvp.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringTable (_id_ INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (_id_ INTEGER PRIMARY KEY, start INT, end INT, name INT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (_id_ INTEGER PRIMARY KEY, start INT, end INT, cbid INT);",
    )
    .unwrap();
    drop(conn);
    let err = expect_error(&path, &["nvprof", "nsys profile"]);
    assert!(matches!(err, LoadError::NvprofDatabase(_)));
}

#[test]
fn export_without_gpu_activity_loads_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cpu-only.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
         INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.6.2'), ('EXPORT_SCHEMA_VERSION', '3.16.1');
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER);
         INSERT INTO NVTX_EVENTS VALUES (100, 200, 59, 'outer', 281474993487873, NULL);
         INSERT INTO NVTX_EVENTS VALUES (120, 150, 59, 'inner', 281474993487873, NULL);
         INSERT INTO NVTX_EVENTS VALUES (300, 250, 59, 'backwards', 281474993487873, NULL);
         INSERT INTO NVTX_EVENTS VALUES (400, NULL, 59, 'still open', 281474993487873, NULL);",
    )
    .unwrap();
    drop(conn);
    let before = common::snapshot(&path);
    let (trace, report) = load::load(&path).unwrap();
    assert_eq!(common::snapshot(&path), before);
    assert!(trace.devices.is_empty());
    assert!(
        report.notes.iter().any(|n| n.contains("no GPU activity")),
        "{:?}",
        report.notes
    );
    assert!(report.missing_tables.iter().any(|t| t == load::KERNEL));
    assert_eq!(trace.nvtx_range_count(), 2);
    let nvtx = &trace.threads[0].nvtx;
    assert_eq!(nvtx.depth, vec![0, 1]);
    let reasons: Vec<(&str, u64)> = report
        .skipped_rows
        .iter()
        .map(|s| (s.reason.as_str(), s.rows))
        .collect();
    assert_eq!(
        reasons,
        vec![("end < start", 1), ("range never ended (end NULL)", 1)]
    );
}

#[test]
fn unreadable_file_says_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.sqlite");
    std::fs::copy(real_export(), &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&path).is_err() {
        let err = expect_error(&path, &["permission denied"]);
        assert!(matches!(err, LoadError::PermissionDenied(_)));
        return;
    }
    // Root reads anything: run the CLI as `nobody` instead, where the system allows it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = env!("CARGO_BIN_EXE_nsys-explorer");
    let out = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--", bin, "report", "--no-cache"])
        .arg(&path)
        .output();
    match out {
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("permission denied") => {
            assert!(!out.status.success());
        }
        other => {
            eprintln!(
                "running as root without runuser access to the binary ({other:?}); checked the mapping only"
            );
            let err = load::io_error_for_test(&path, std::io::ErrorKind::PermissionDenied);
            assert!(err.to_string().contains("permission denied"));
        }
    }
}

#[test]
fn an_export_that_recorded_nothing_opens_and_says_how_to_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO StringIds VALUES (1, 'python3');
             CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
             CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
             CREATE TABLE ProcessStreams (globalPid INTEGER, filenameId INTEGER, contentId INTEGER);",
        )
        .unwrap();
    }
    let (trace, report) = nsys_explorer::load::load(&path).expect("opens like other empty exports");
    assert_eq!(trace.event_count(), 0);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("recorded no activity") && n.contains("-t cuda,nvtx")),
        "{:?}",
        report.notes
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_export_with_thread_scheduling_only_shows_when_its_threads_ran() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sched.sqlite");
    common::scheduling_only_export(&path);
    let (trace, report) = nsys_explorer::load::load(&path).unwrap();
    assert_eq!(trace.threads.len(), 2);
    for t in &trace.threads {
        assert_eq!(t.scheduling.len(), 5, "{}", t.name);
        assert!(
            t.scheduling
                .start
                .iter()
                .zip(&t.scheduling.end)
                .all(|(a, b)| b - a == 4_000_000)
        );
    }
    assert_eq!(trace.threads[0].name, "python3");
    assert_eq!(trace.threads[1].scheduling.cpu[0], 5);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("thread scheduling only") && n.contains("-t cuda,nvtx")),
        "{:?}",
        report.notes
    );
    assert!(
        trace.time_span().is_some(),
        "the timeline has a span to show"
    );
}

/// SQLite allows any rowid. A generated export whose kernel rows are pushed to the
/// extremes (2^63 − 1, 10^15, negative) loads through both readers (the file's pages and
/// SQL over rowid ranges), every row read, without reserving for rowids that do not exist.
#[test]
fn extreme_rowids_load_through_both_readers() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.sqlite");
    nsys_explorer::synth::generate(
        &clean,
        nsys_explorer::synth::SynthOptions::new(nsys_explorer::synth::Preset::Tiny),
    )
    .unwrap();
    let (trace, _) = load::load(&clean).unwrap();
    let kernels = |t: &nsys_explorer::trace::Trace| -> usize {
        t.devices
            .iter()
            .flat_map(|d| &d.streams)
            .map(|s| s.ops.len())
            .sum()
    };
    let want = kernels(&trace);
    for (name, moves) in [
        ("max", vec![i64::MAX]),
        ("sparse", vec![1_000_000_000_000_000]),
        ("negative", vec![-5, i64::MIN + 1]),
        ("both_ends", vec![i64::MIN + 1, i64::MAX]),
    ] {
        let path = dir.path().join(format!("{name}.sqlite"));
        std::fs::copy(&clean, &path).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        for (k, rowid) in moves.iter().enumerate() {
            conn.execute(
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = ?1 WHERE rowid = ?2",
                [*rowid, k as i64 + 1],
            )
            .unwrap();
        }
        drop(conn);
        for (reader, loaded) in [
            ("pages", load::load(&path)),
            ("sql", load::load_through_sqlite(&path)),
        ] {
            let (t, _) = loaded.unwrap_or_else(|e| panic!("{name} through {reader}: {e}"));
            assert_eq!(kernels(&t), want, "{name} through {reader}: every op read");
        }
    }
}

/// A UTF-16 SQLite database (nsys writes UTF-8) is refused with a clear message, by both
/// readers, and left untouched: the raw scan reads text only where SQLite never converts it.
#[test]
fn a_utf16_database_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.sqlite");
    nsys_explorer::synth::generate(
        &clean,
        nsys_explorer::synth::SynthOptions::new(nsys_explorer::synth::Preset::Tiny),
    )
    .unwrap();
    let path = dir.path().join("utf16.sqlite");
    {
        // Attached databases must share the main one's encoding: the rows are copied over.
        let src = rusqlite::Connection::open(&clean).unwrap();
        let dst = rusqlite::Connection::open(&path).unwrap();
        dst.execute_batch("PRAGMA encoding = 'UTF-16le'; BEGIN;")
            .unwrap();
        let tables: Vec<(String, String)> = src
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (t, sql) in tables {
            dst.execute_batch(&sql).unwrap();
            let mut read = src.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
            let n = read.column_count();
            let marks = vec!["?"; n].join(", ");
            let mut write = dst
                .prepare(&format!("INSERT INTO \"{t}\" VALUES ({marks})"))
                .unwrap();
            let mut rows = read.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                let values: Vec<rusqlite::types::Value> =
                    (0..n).map(|i| r.get(i).unwrap()).collect();
                write.execute(rusqlite::params_from_iter(values)).unwrap();
            }
        }
        dst.execute_batch("COMMIT;").unwrap();
    }
    expect_error(&path, &["UTF-16", "UTF-8"]);
    let err = load::load_through_sqlite(&path).unwrap_err().to_string();
    assert!(err.contains("UTF-16"), "{err}");
}
