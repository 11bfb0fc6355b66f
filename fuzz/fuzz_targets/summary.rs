//! A rank summary as bytes → its decoder, then the job's reduce of it beside a copy of
//! itself a little later, and the job's text.
//! (The body lives in `nsys_explorer_core::fuzzing`, where the regression tests replay
//! every input a campaign found, on stable.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| nsys_explorer_core::fuzzing::summary(bytes));
