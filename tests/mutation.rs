//! Legal-looking damage: the shared real exports and a generated one, mutated (bytes
//! flipped in page headers and cells, truncated, pages swapped, overflow pointers looped, a
//! table's root page pointed elsewhere, rowids pushed to the extremes), each through
//! `report --json` with a time and a memory limit, through the page reader and through
//! SQL. Every one exits 0 or 2 with a one-line reason: never a panic, an abort or a hang.
//! A short seeded round here; `MUTANTS=N` for a longer one.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A mutant's time limit, and its memory (address space) limit.
const TIME_LIMIT: Duration = Duration::from_secs(60);
const MEMORY_LIMIT_KB: u64 = 8 * 1024 * 1024;

fn sources(dir: &Path) -> Vec<PathBuf> {
    let generated = dir.join("generated.sqlite");
    nsys_explorer::synth::generate(
        &generated,
        nsys_explorer::synth::SynthOptions::new(nsys_explorer::synth::Preset::Tiny),
    )
    .unwrap();
    let mut files = vec![generated];
    files.extend(common::real_fixtures());
    files
}

/// One mutation of `bytes` (a SQLite file of `page` bytes a page), named.
fn mutate(bytes: &mut Vec<u8>, page: usize, rng: &mut fastrand::Rng) -> &'static str {
    let pages = bytes.len() / page;
    let page_at = |rng: &mut fastrand::Rng| rng.usize(1..pages.max(2)) * page;
    match rng.u8(0..6) {
        0 => {
            // A page's header: its type, cell count, first freeblock or cell area.
            let at = page_at(rng);
            for _ in 0..rng.usize(1..4) {
                let i = at + rng.usize(0..12);
                if i < bytes.len() {
                    bytes[i] = rng.u8(..);
                }
            }
            "page header"
        }
        1 => {
            // Bytes inside a page's cells.
            for _ in 0..rng.usize(1..16) {
                let i = page_at(rng) + rng.usize(12..page);
                if i < bytes.len() {
                    bytes[i] = rng.u8(..);
                }
            }
            "cells"
        }
        2 => {
            let keep = rng.usize(100..bytes.len());
            bytes.truncate(keep);
            "truncated"
        }
        3 => {
            let (a, b) = (page_at(rng), page_at(rng));
            if a != b && a + page <= bytes.len() && b + page <= bytes.len() {
                let tmp = bytes[a..a + page].to_vec();
                bytes.copy_within(b..b + page, a);
                bytes[b..b + page].copy_from_slice(&tmp);
            }
            "pages swapped"
        }
        4 => {
            // A 4-byte page number somewhere (an overflow pointer, a child pointer, a root
            // page in the schema) made to point at a page of the file, or past its end.
            let at = page_at(rng) + rng.usize(0..page - 4);
            let to = if rng.bool() {
                rng.u32(1..pages as u32 + 1)
            } else {
                rng.u32(..)
            };
            if at + 4 <= bytes.len() {
                bytes[at..at + 4].copy_from_slice(&to.to_be_bytes());
            }
            "page pointer"
        }
        _ => {
            // A varint in a cell (a rowid, a record size) pushed to its largest.
            let at = page_at(rng) + rng.usize(12..page - 9);
            if at + 9 <= bytes.len() {
                bytes[at..at + 8].fill(0xFF);
            }
            "varint maxed"
        }
    }
}

/// `report --json` on `path` under the limits: exit code, stderr, how long.
fn report(path: &Path, sql_scan: bool) -> (Option<i32>, String, Duration) {
    let bin = env!("CARGO_BIN_EXE_nsys-explorer");
    let t = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_LIMIT_KB}; exec timeout -s KILL {} \"$0\" report \"$1\" --json --no-cache",
            TIME_LIMIT.as_secs()
        ))
        .arg(bin)
        .arg(path)
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .stdout(std::process::Stdio::null());
    if sql_scan {
        cmd.env("NSYS_EXPLORER_SQL_SCAN", "1");
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        t.elapsed(),
    )
}

#[test]
fn mutated_exports_exit_cleanly_within_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let mutants: usize = std::env::var("MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = fastrand::Rng::with_seed(
        std::env::var("MUTANT_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(52),
    );
    let sources = sources(dir.path());
    let mut failures = Vec::new();
    let mut outcomes = [0usize; 2];
    for n in 0..mutants {
        let source = &sources[n % sources.len()];
        let mut bytes = std::fs::read(source).unwrap();
        let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
        let page = if page == 1 { 65536 } else { page.max(512) };
        let what: Vec<&str> = (0..rng.usize(1..4))
            .map(|_| mutate(&mut bytes, page, &mut rng))
            .collect();
        let path = dir.path().join(format!("mutant{n}.sqlite"));
        std::fs::write(&path, &bytes).unwrap();
        let sql_scan = n % 2 == 1;
        let (code, stderr, took) = report(&path, sql_scan);
        let lines = stderr.lines().filter(|l| !l.trim().is_empty()).count();
        let ok = match code {
            Some(0) => true,
            Some(2) => lines == 1 && !stderr.contains("panicked"),
            _ => false,
        };
        if ok {
            outcomes[(code == Some(2)) as usize] += 1;
        } else {
            failures.push(format!(
                "mutant {n} of {} ({}, {}): exit {code:?} after {took:?}: {}",
                source.file_name().unwrap().to_string_lossy(),
                what.join(" + "),
                if sql_scan { "SQL" } else { "pages" },
                stderr.lines().take(3).collect::<Vec<_>>().join(" | ")
            ));
            // Kept for a look: the seed and number say how to make it again.
            let _ = std::fs::copy(
                &path,
                std::env::temp_dir().join(format!("nsys-explorer-mutant{n}.sqlite")),
            );
        }
        std::fs::remove_file(&path).ok();
    }
    eprintln!(
        "{mutants} mutants: {} read, {} refused with a reason",
        outcomes[0], outcomes[1]
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
