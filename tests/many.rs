//! Several per-rank exports opened as one trace, against the generator's truth: `synth
//! --split-ranks` writes one file per rank with its own clock, a UTC start a few ms off and
//! its GPU as device 0, and knows the true offsets, kernels, slowest iteration, straggler
//! and each rank's NCCL waiting and transfer time.

mod common;

use std::process::Command;

use nsys_explorer::load::many::{Alignment, expand_paths};
use nsys_explorer::overview::{Options, overview};
use nsys_explorer::session::load_many;
use nsys_explorer::synth::{self, Preset, SynthOptions};

#[test]
fn split_ranks_are_aligned_by_their_collectives_and_analysed_as_one_job() {
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    let paths = expand_paths(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(
        paths.len(),
        4,
        "the folder's rank files, truth.json left out"
    );
    nsys_explorer::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    let (trace, reports, files) = nsys_explorer::session::load_many(&paths).unwrap();
    assert_eq!(reports.len(), 4);
    let mut utc_worst = 0;
    for (f, t) in files.iter().zip(&truth.files) {
        assert_eq!(f.path, t.path);
        let error = (f.offset_ns - t.offset_ns).abs();
        assert!(
            error <= 50_000,
            "{}: offset {} vs true {}",
            f.name,
            f.offset_ns,
            t.offset_ns
        );
        utc_worst = utc_worst.max((f.utc_offset_ns.unwrap() - t.offset_ns).abs());
        if f.path != truth.files[0].path {
            assert_eq!(f.alignment, Alignment::Collectives);
            assert!(f.residual_ns.unwrap() < 10_000);
        }
    }
    assert!(
        utc_worst > 500_000,
        "UTC alone is milliseconds off ({utc_worst} ns)"
    );
    // Every kernel kept, each rank's GPU named by its file.
    assert_eq!(trace.devices.len(), 4);
    let kernels: u64 = truth.run.devices.iter().map(|d| d.kernels).sum();
    assert_eq!(trace.kernel_count() as u64, kernels);
    let keys: Vec<&str> = trace
        .devices
        .iter()
        .map(|d| d.key.as_deref().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "rank00.sqlite:0",
            "rank01.sqlite:0",
            "rank02.sqlite:0",
            "rank03.sqlite:0"
        ]
    );
    // Each rank's kernels read their launch configuration from their own file.
    for d in &trace.devices {
        let source = &trace.sources[d.source as usize];
        let file = d.key.as_deref().unwrap().split(':').next().unwrap();
        assert_eq!(source.file_name().unwrap(), file);
        let ops = &d.streams[0].ops;
        let i = (0..ops.len()).find(|&i| ops.kind[i].is_kernel()).unwrap();
        let config = nsys_explorer::load::launch_config(&trace, d, ops, i).unwrap();
        assert!(config.is_ok(), "{file}: {config:?}");
    }
    // The slowest iteration and the rank that held it back.
    let o = overview(&trace, &Options::default());
    assert_eq!(
        o.iterations.slowest_index,
        Some(truth.run.iterations.slowest_index)
    );
    let drill = o.drilldown.as_ref().unwrap();
    let straggler = trace.device(drill.straggler_device.unwrap()).unwrap();
    assert_eq!(
        straggler.key.as_deref().unwrap(),
        format!("rank{:02}.sqlite:0", truth.run.iterations.straggler_device)
    );
    // Each rank's NCCL time: waiting for the last rank and transfer, as the truth says
    // (within the clocks' residual, a few µs per collective).
    for (w, t) in o.nccl_wait.per_device.iter().zip(&truth.run.nccl_wait) {
        assert_eq!(w.collectives, t.collectives);
        let slack = 5_000 * t.collectives as i64;
        assert!((w.wait_ns - t.wait_ns).abs() <= slack, "{w:?} vs {t:?}");
        assert!(
            (w.transfer_ns - t.transfer_ns).abs() <= slack,
            "{w:?} vs {t:?}"
        );
        assert_eq!(w.last_arrivals, t.last_arrivals, "{w:?} vs {t:?}");
    }
    let late = &o.nccl_wait.late[0];
    assert_eq!(trace.device(late.last_device).unwrap().key, straggler.key);
    assert_eq!(
        late.last_thread_call.as_deref(),
        Some(truth.run.iterations.straggler_activity.as_str())
    );
}

#[test]
fn report_of_a_folder_names_devices_by_file_and_says_how_each_file_was_aligned() {
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .arg("report")
        .arg(dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    for (f, t) in files.iter().zip(&truth.files) {
        for key in ["path", "offset_ns", "alignment", "residual_ns"] {
            assert!(f.get(key).is_some(), "files.{key}");
        }
        assert!((f["offset_ns"].as_i64().unwrap() - t.offset_ns).abs() <= 50_000);
    }
    assert_eq!(files[0]["alignment"], "reference");
    assert_eq!(files[1]["alignment"], "collectives");
    // Every device field is FILE:ID.
    assert_eq!(v["devices"][2]["id"], "rank02.sqlite:0");
    assert_eq!(
        v["iterations"]["per_device"][1]["device"],
        "rank01.sqlite:0"
    );
    assert_eq!(v["nccl_wait"]["per_device"][3]["device"], "rank03.sqlite:0");
    let straggler = format!("rank{:02}.sqlite:0", truth.run.iterations.straggler_device);
    assert_eq!(v["drilldown"]["straggler_device"], straggler.as_str());
    // The same files named one by one give the same.
    let named = Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .arg("report")
        .args(truth.files.iter().map(|f| &f.path))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&named.stdout);
    assert!(text.contains("4 files opened as one trace"), "{text}");
    assert!(text.contains("by 64 collectives"), "{text}");
}

#[test]
fn a_folder_without_exports_and_a_bad_file_among_good_ones_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = expand_paths(&[dir.path().to_path_buf()]).unwrap_err();
    assert!(err.contains("no .sqlite files"), "{err}");
    let real = common::real_fixtures();
    let bad = dir.path().join("bad.sqlite");
    std::fs::write(&bad, b"not a database").unwrap();
    nsys_explorer::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    let e = load_many(&[real[0].clone(), bad.clone()])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("bad.sqlite"), "{e}");
}
