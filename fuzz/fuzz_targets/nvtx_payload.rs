//! NVTX payload schemas (rows of nsys's two schema tables) and a blob, described by the
//! bytes → the NCCL payload decoder.
//! (The body lives in `nsys_explorer_core::fuzzing`, where the regression tests replay
//! every input a campaign found, on stable.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| nsys_explorer_core::fuzzing::nvtx_payload(bytes));
