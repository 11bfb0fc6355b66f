//! A legal SQLite export with odd contents, described by the bytes (structure-aware: times
//! near each other or anything, unsorted, overlapping, dangling ids, ranges never closed,
//! empty texts, up to four GPUs and streams) → the load, every analysis, the findings and
//! their replays, the critical path and `report --json`. Bytes mutated at random rarely
//! get past SQLite's checks; this reaches the analyses.
//! (The body lives in `nsys_explorer_core::fuzzing`, where the regression tests replay
//! every input a campaign found, on stable.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| nsys_explorer_core::fuzzing::odd_export(bytes));
