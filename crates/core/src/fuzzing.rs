//! What each fuzz target runs on its input (`fuzz/fuzz_targets/`, nightly), here on stable
//! so that the regression tests replay every input a campaign found
//! (`tests/fuzz_findings.rs`). Each reader must give an answer or an error for any input:
//! a panic, an abort, a hang or an unbounded allocation is a finding.

use std::path::{Path, PathBuf};

use arbitrary::{Result, Unstructured};
use rusqlite::params;

/// The folder of this process's own for the files the targets write (kept for the whole
/// campaign: the targets rewrite the same two files input after input).
pub fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("nx-fuzz-{}", std::process::id()))
}

fn scratch(name: &str) -> PathBuf {
    let dir = scratch_dir();
    let _ = std::fs::create_dir_all(&dir);
    dir.join(name)
}

/// Removes the scratch folder: a replay of kept inputs leaves nothing in the temp folder.
pub fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch_dir());
}

/// A whole export as bytes → the page reader and the load; a model that loads is analysed.
pub fn export_bytes(bytes: &[u8]) {
    let path = scratch("input.sqlite");
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    if let Ok((trace, _)) = crate::load::load(&path) {
        let _ = crate::overview::overview(&trace, &Default::default());
    }
}

/// A rank summary as bytes → its decoder, then the job's reduce of it beside a copy of
/// itself a little later, and the job's text.
pub fn summary(bytes: &[u8]) {
    let Ok(summary) = crate::job::file::decode(bytes, "fuzz.summary") else {
        return;
    };
    let mut other = summary.clone();
    other.utc_start_ns = other.utc_start_ns.map(|t| t.wrapping_add(1_000));
    let ranks = vec![
        (PathBuf::from("a.summary"), summary),
        (PathBuf::from("b.summary"), other),
    ];
    let job = crate::job::reduce(&ranks, 10);
    let _ = crate::job::text(&job, 10);
}

/// A cache entry's payload → the model's decoders (they run before the checksum at the
/// entry's end is checked).
pub fn cache_entry(bytes: &[u8]) {
    let _ = crate::cache::decode_model_payload(bytes);
}

/// NVTX payload schemas (rows of nsys's two schema tables) and a blob, described by the
/// bytes → the NCCL payload decoder.
pub fn nvtx_payload(bytes: &[u8]) {
    let mut u = Unstructured::new(bytes);
    let _ = nvtx_payload_of(&mut u);
}

fn nvtx_payload_of(u: &mut Unstructured) -> Result<()> {
    let Ok(conn) = rusqlite::Connection::open_in_memory() else {
        return Ok(());
    };
    let made = conn.execute_batch(
        "CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER, flags INTEGER, numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER);
         CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER, schemaId INTEGER, idx INTEGER, flags INTEGER, type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER, offset INTEGER);",
    );
    if made.is_err() {
        return Ok(());
    }
    for _ in 0..u.int_in_range(0..=8)? {
        let row: (i64, i64, Option<i64>) = (u.arbitrary()?, u.arbitrary()?, u.arbitrary()?);
        let _ = conn.execute(
            "INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (?1, ?2, NULL, 1, NULL, NULL, ?3, NULL)",
            params![row.0, row.1, row.2],
        );
    }
    for _ in 0..u.int_in_range(0..=16)? {
        let row: (i64, i64, i64, i64, Option<String>, i64) = (
            u.arbitrary()?,
            u.arbitrary()?,
            u.arbitrary()?,
            u.arbitrary()?,
            u.arbitrary()?,
            u.arbitrary()?,
        );
        let _ = conn.execute(
            "INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (?1, ?2, ?3, NULL, ?4, ?5, NULL, NULL, ?6)",
            params![row.0, row.1, row.2, row.3, row.4, row.5],
        );
    }
    let schemas = crate::load::payload::PayloadSchemas::read(&conn);
    let domain: u32 = u.arbitrary()?;
    let blob: Vec<u8> = u.arbitrary()?;
    let _ = schemas.is_nccl_domain(domain);
    let _ = schemas.decode(domain, &blob);
    Ok(())
}

/// A legal SQLite export with odd contents, described by the bytes (structure-aware: times
/// near each other or anything, unsorted, overlapping, dangling ids, ranges never closed,
/// empty texts, up to four GPUs and streams) → the load, every analysis, the findings and
/// their replays, the critical path and `report --json`. Bytes mutated at random rarely
/// get past SQLite's checks; this reaches the analyses.
pub fn odd_export(bytes: &[u8]) {
    let path = scratch("odd.sqlite");
    let mut u = Unstructured::new(bytes);
    if write_odd(&path, &mut u).is_err() {
        return;
    }
    let Ok((trace, load_report)) = crate::load::load(&path) else {
        return;
    };
    let options = crate::overview::Options::default();
    let o = crate::overview::overview(&trace, &options);
    let found = crate::findings::findings(&trace, &o);
    let graph = crate::critical_path::Graph::new(&trace);
    if let Some(k) = o.iterations.slowest_index
        && let Some(p) = graph.path(&o.iterations, k)
    {
        let _ = crate::critical_path::report::summarise_path(&graph, p);
    }
    let _ = graph.run_path();
    let _ = crate::report::report_json(&trace, &load_report, &o, &found, &options);
}

/// A time: mostly near the others (so that ops meet, nest and wait), sometimes anything.
fn time(u: &mut Unstructured) -> Result<i64> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 | 1 => 1_000_000 + u.int_in_range(0i64..=65_535)? * 100,
        2 => 1_000_000 + u.arbitrary::<u32>()? as i64 * 1_000,
        _ => u.arbitrary()?,
    })
}

/// nsys's `globalTid` of one of a few threads of one of a few processes.
fn global_tid(u: &mut Unstructured) -> Result<i64> {
    let (pid, tid) = (u.int_in_range(0i64..=3)?, u.int_in_range(0i64..=7)?);
    Ok(((pid + 100) << 24) | tid)
}

/// The rows the bytes describe, written into nsys 2024's tables.
fn write_odd(
    path: &Path,
    u: &mut Unstructured,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let conn = crate::synth::empty_export(path, crate::synth::Flavour::Nsys2024)?;
    conn.execute_batch("BEGIN")?;
    for i in 0..u.int_in_range(0..=64)? {
        let text: String = u.arbitrary()?;
        conn.execute("INSERT INTO StringIds VALUES (?1, ?2)", params![i, text])?;
    }
    for _ in 0..u.int_in_range(0..=256)? {
        let (start, end) = (time(u)?, time(u)?);
        let (device, stream, correlation) = (
            u.int_in_range(0i64..=3)?,
            u.int_in_range(0i64..=3)?,
            u.int_in_range(0i64..=255)?,
        );
        let (pid, name) = (u.int_in_range(0i64..=3)?, u.int_in_range(0i64..=70)?);
        let graph_node: Option<u8> = u.arbitrary()?;
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, graphNodeId) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?7, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 0, ?8)",
            params![start, end, device, stream, correlation, (pid + 100) << 24, name, graph_node],
        )?;
    }
    for _ in 0..u.int_in_range(0..=256)? {
        let (start, end, tid) = (time(u)?, time(u)?, global_tid(u)?);
        let (correlation, name) = (u.int_in_range(0i64..=255)?, u.int_in_range(0i64..=70)?);
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?1, ?2, 1, ?3, ?4, ?5, 0)",
            params![start, end, tid, correlation, name],
        )?;
    }
    for _ in 0..u.int_in_range(0..=256)? {
        let start = time(u)?;
        let end = if u.arbitrary()? { Some(time(u)?) } else { None };
        // Push/pop, start/end, a mark, or anything.
        let kind: i64 = match u.int_in_range(0u8..=3)? {
            0 => 59,
            1 => 60,
            2 => 34,
            _ => u.arbitrary::<u8>()? as i64,
        };
        let text: Option<String> = u.arbitrary()?;
        let tid = global_tid(u)?;
        let text_id: Option<u8> = u.arbitrary()?;
        let domain: Option<u8> = u.arbitrary()?;
        conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![start, end, kind, text, tid, text_id, domain],
        )?;
    }
    for _ in 0..u.int_in_range(0..=64)? {
        let (start, end) = (time(u)?, time(u)?);
        let (device, stream, correlation) = (
            u.int_in_range(0i64..=3)?,
            u.int_in_range(0i64..=3)?,
            u.int_in_range(0i64..=255)?,
        );
        let bytes: i64 = u.arbitrary()?;
        if u.arbitrary()? {
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, memKind) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, 0, ?7, 2)",
                params![start, end, device, stream, correlation, 100i64 << 24, bytes],
            )?;
        } else {
            let kind = u.int_in_range(0i64..=11)?;
            conn.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, 1, 2)",
                params![start, end, device, stream, correlation, 100i64 << 24, bytes, kind],
            )?;
        }
    }
    conn.execute_batch("COMMIT")?;
    Ok(())
}
