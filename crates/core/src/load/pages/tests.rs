use super::*;

/// Every value as SQLite gives it: (int, text, blob) per wanted column.
type Row = Vec<(Option<i64>, Option<String>, Option<Vec<u8>>)>;

fn through_pages(path: &Path, table: &str, wanted: &[&str]) -> Vec<Row> {
    let conn = Connection::open(path).unwrap();
    let layout = Layout::of(&conn, table, wanted, &["d", "e"]).expect("read by pages");
    let db = DbFile::open(path).unwrap().expect("a page-readable file");
    let leaves = db.leaves(layout.root).unwrap();
    let mut rows = Vec::new();
    db.scan(&leaves, &layout, |r| -> Result<(), PageError> {
        rows.push(
            (0..wanted.len())
                .map(|i| {
                    (
                        r.int(i),
                        r.text(i).map(str::to_owned),
                        r.blob(i).map(<[u8]>::to_vec),
                    )
                })
                .collect(),
        );
        Ok(())
    })
    .unwrap();
    rows
}

fn through_sql(path: &Path, table: &str, wanted: &[&str]) -> Vec<Row> {
    let conn = Connection::open(path).unwrap();
    let columns: Vec<String> = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // Absent columns read as NULL, as the loader's select lists have them.
    let list: Vec<String> = wanted
        .iter()
        .map(|&c| match c {
            "rowid" => c.to_string(),
            c if columns.iter().any(|n| n == c) => format!("\"{c}\""),
            _ => "NULL".to_string(),
        })
        .collect();
    let sql = format!("SELECT {} FROM \"{table}\" ORDER BY rowid", list.join(", "));
    let mut stmt = conn.prepare(&sql).unwrap();
    let mut out = Vec::new();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        use rusqlite::types::ValueRef;
        out.push(
            (0..wanted.len())
                .map(|i| match r.get_ref(i).unwrap() {
                    ValueRef::Null => (None, None, None),
                    ValueRef::Integer(v) => (Some(v), None, None),
                    ValueRef::Real(v) => (Some(v as i64), None, None),
                    ValueRef::Text(t) => (
                        None,
                        std::str::from_utf8(t).ok().map(str::to_owned),
                        Some(t.to_vec()),
                    ),
                    ValueRef::Blob(b) => (None, None, Some(b.to_vec())),
                })
                .collect(),
        );
    }
    out
}

#[test]
fn rows_read_from_the_pages_are_the_rows_sqlite_gives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB);
         CREATE TABLE k (id INTEGER PRIMARY KEY, v INTEGER);",
    )
    .unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    // Every integer width (1, 2, 3, 4, 6, 8 bytes; 0 and 1 have their own types),
    // negative too; texts short and long enough to spill onto overflow pages.
    let ints = [
        0i64,
        1,
        -1,
        127,
        -128,
        300,
        -40_000,
        8_000_000,
        -2_000_000_000,
        1 << 40,
        -(1 << 40),
        i64::MAX,
        i64::MIN,
    ];
    let tx = conn.unchecked_transaction().unwrap();
    for i in 0..20_000i64 {
        let a = if i % 17 == 0 {
            None
        } else {
            Some(ints[i as usize % ints.len()] ^ (rng.i64(0..4)))
        };
        let b: Option<String> = match i % 5 {
            0 => None,
            1 => Some("ü".repeat(rng.usize(0..40))),
            2 if i % 1000 == 2 => Some("long text ".repeat(rng.usize(400..3000))),
            _ => Some(format!("op {i}")),
        };
        let c = (i % 3 == 0).then(|| i as f64 * -1.25);
        let d = (i % 7 == 0).then(|| vec![i as u8; rng.usize(0..5000)]);
        tx.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![a, b, c, d],
        )
        .unwrap();
    }
    for i in 0..3000i64 {
        tx.execute("INSERT INTO k (id, v) VALUES (?1, ?2)", [i * 3 + 5, -i])
            .unwrap();
    }
    tx.commit().unwrap();
    // Rows written before a column was added lack it in their records.
    conn.execute_batch(
        "ALTER TABLE t ADD COLUMN e INTEGER; UPDATE t SET e = 9 WHERE rowid % 2 = 0;",
    )
    .unwrap();
    drop(conn);
    for wanted in [
        &["a", "b", "c", "d", "e", "rowid"][..],
        &["e", "a", "NULL", "missing", "d"][..],
        &["d"][..],
    ] {
        let pages = through_pages(&path, "t", wanted);
        assert_eq!(pages.len(), 20_000);
        assert_eq!(pages, through_sql(&path, "t", wanted), "{wanted:?}");
    }
    // `INTEGER PRIMARY KEY` reads as the rowid it is.
    let wanted = &["id", "v"][..];
    assert_eq!(
        through_pages(&path, "k", wanted),
        through_sql(&path, "k", wanted)
    );
}

#[test]
fn what_the_reader_leaves_to_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE w (a INTEGER PRIMARY KEY, b) WITHOUT ROWID;
         CREATE TABLE d (a INTEGER);
         INSERT INTO d VALUES (1);
         ALTER TABLE d ADD COLUMN b INTEGER DEFAULT 5;",
    )
    .unwrap();
    assert!(Layout::of(&conn, "w", &["b"], &[]).is_none());
    assert!(
        Layout::of(&conn, "d", &["b"], &[]).is_none(),
        "a column with a default"
    );
    assert!(Layout::of(&conn, "d", &["a"], &[]).is_some());
    assert!(Layout::of(&conn, "absent", &["a"], &[]).is_none());
    conn.execute_batch("PRAGMA journal_mode = WAL; INSERT INTO d (a) VALUES (2);")
        .unwrap();
    drop(conn);
    assert!(DbFile::open(&path).unwrap().is_none(), "a WAL-mode file");
    let text = dir.path().join("not.sqlite");
    std::fs::write(&text, "hello").unwrap();
    assert!(DbFile::open(&text).unwrap().is_none());
}

/// An overflow chain that loops back on itself is damage, said at once: not followed
/// until the record outgrows the file.
#[test]
fn a_looping_overflow_chain_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA page_size = 4096; CREATE TABLE t (a TEXT);")
        .unwrap();
    conn.execute("INSERT INTO t VALUES (?1)", ["y".repeat(40_000)])
        .unwrap();
    let layout = Layout::of(&conn, "t", &["a"], &[]).unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&path).unwrap();
    // Page 1 is the schema, page 2 the table's leaf, pages 3… the record's overflow:
    // page 3 made to point at itself.
    bytes[2 * 4096..2 * 4096 + 4].copy_from_slice(&3u32.to_be_bytes());
    let clean = bytes.clone();
    std::fs::write(&path, &bytes).unwrap();
    let db = DbFile::open(&path).unwrap().unwrap();
    let leaves = db.leaves(layout.root).unwrap();
    let read = db.scan(&leaves, &layout, |r| -> Result<(), PageError> {
        let _ = r.text(0);
        Ok(())
    });
    assert!(read.is_ok(), "a loop as long as the record: read, bounded");
    // The record then declared larger than the file (its 3-byte size varint at the
    // cell's start made 2^21 - 1): damage, said before any overflow page is read.
    let mut bytes = clean;
    let cell = 4096 + u16::from_be_bytes([bytes[4096 + 8], bytes[4096 + 9]]) as usize;
    assert!(bytes[cell] & 0x80 != 0 && bytes[cell + 1] & 0x80 != 0 && bytes[cell + 2] & 0x80 == 0);
    bytes[cell..cell + 3].copy_from_slice(&[0xFF, 0xFF, 0x7F]);
    std::fs::write(&path, &bytes).unwrap();
    let db = DbFile::open(&path).unwrap().unwrap();
    let leaves = db.leaves(layout.root).unwrap();
    let read = db.scan(&leaves, &layout, |r| -> Result<(), PageError> {
        let _ = r.text(0);
        Ok(())
    });
    assert!(
        matches!(read, Err(PageError::Damaged(ref d)) if d.contains("declares")),
        "{:?}",
        read.err()
    );
}

#[test]
fn a_damaged_page_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE t (a INTEGER, b TEXT);")
        .unwrap();
    for i in 0..5000i64 {
        let text = "x".repeat(i as usize % 300);
        conn.execute("INSERT INTO t VALUES (?1, ?2)", rusqlite::params![i, text])
            .unwrap();
    }
    let layout = Layout::of(&conn, "t", &["a", "b"], &["b"]).unwrap();
    drop(conn);
    let clean = std::fs::read(&path).unwrap();
    let mut rng = fastrand::Rng::with_seed(3);
    for _ in 0..200 {
        let mut bytes = clean.clone();
        // Scribble over a few bytes past the file header.
        for _ in 0..rng.usize(1..20) {
            let at = rng.usize(100..bytes.len());
            bytes[at] = rng.u8(..);
        }
        std::fs::write(&path, &bytes).unwrap();
        let db = DbFile::open(&path).unwrap().unwrap();
        if let Ok(leaves) = db.leaves(layout.root) {
            let _ = db.scan(&leaves, &layout, |r| -> Result<(), PageError> {
                let _ = (r.int(0), r.text(1));
                Ok(())
            });
        }
    }
}
