//! A cache entry's payload → the model's decoders (they run before the checksum at the
//! entry's end is checked).
//! (The body lives in `nsys_explorer_core::fuzzing`, where the regression tests replay
//! every input a campaign found, on stable.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| nsys_explorer_core::fuzzing::cache_entry(bytes));
