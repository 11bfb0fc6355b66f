//! A whole export as bytes → the page reader and the load; a model that loads is analysed.
//! (The body lives in `nsys_explorer_core::fuzzing`, where the regression tests replay
//! every input a campaign found, on stable.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| nsys_explorer_core::fuzzing::export_bytes(bytes));
