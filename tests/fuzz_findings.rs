//! Every input a fuzzing campaign found (a crash, a panic, a hang, an allocation past its
//! limit), kept under `tests/fuzz-findings/TARGET/` once fixed, replayed on stable through
//! the same code the fuzz target runs (`nsys_explorer_core::fuzzing`): a finding fixed
//! stays fixed. The seeds of `fuzz/seeds/` run too, so the targets' code is exercised in
//! every test run, not only where a nightly toolchain is.

use std::path::Path;

use nsys_explorer_core::fuzzing;

fn replay(dir: &Path, run: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_file() {
            run(&std::fs::read(&path).unwrap());
            n += 1;
        }
    }
    n
}

/// A fuzz target's name and its body in `nsys_explorer_core::fuzzing`.
type Target = (&'static str, fn(&[u8]));

#[test]
fn every_kept_fuzz_input_gives_an_answer_or_an_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let targets: [Target; 5] = [
        ("export_bytes", fuzzing::export_bytes),
        ("odd_export", fuzzing::odd_export),
        ("summary", fuzzing::summary),
        ("cache_entry", fuzzing::cache_entry),
        ("nvtx_payload", fuzzing::nvtx_payload),
    ];
    let mut replayed = 0;
    for (target, run) in targets {
        for dir in ["tests/fuzz-findings", "fuzz/seeds"] {
            replayed += replay(&root.join(dir).join(target), run);
        }
    }
    fuzzing::remove_scratch();
    assert!(
        replayed >= 10,
        "the seeds are there ({replayed} inputs replayed)"
    );
    assert!(
        !fuzzing::scratch_dir().exists(),
        "the replay leaves nothing in the temp folder"
    );
}
