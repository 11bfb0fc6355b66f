//! Device memory over the run against the generator's truth: each GPU's peak and when, the
//! bytes left at the end, what was allocated before the capture, the growth per iteration
//! (one rank leaks), host memory left out; and the same through the cache.

#[path = "../../../tests/common/mod.rs"]
mod common;

use nsys_explorer_core::analysis::memory_usage::memory_usage;
use nsys_explorer_core::overview::overview;
use nsys_explorer_core::synth::{self, Preset, SynthOptions};

#[test]
fn each_gpus_peak_end_and_growth_equal_the_truth_and_host_memory_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.sqlite");
    let options = SynthOptions {
        memory_usage: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let (trace, report) = nsys_explorer_core::load::load(&path).unwrap();
    let o = overview(&trace, &Default::default());
    let got = memory_usage(&trace, &o.iterations);
    let want = truth.memory_usage.expect("the truth of the memory");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.device.0, w.device);
        assert_eq!(g.peak_bytes, w.peak_bytes, "GPU {}", w.device);
        assert_eq!(g.peak_at_ns, w.peak_at_ns, "GPU {}", w.device);
        assert_eq!(g.end_bytes, w.end_bytes, "GPU {}", w.device);
        assert_eq!(g.before_capture_bytes, w.before_capture_bytes);
        assert_eq!(
            g.growth_per_iteration_bytes,
            Some(w.growth_per_iteration_bytes)
        );
    }
    // What was live at each peak adds up to it; the weights (10 GiB, one cudaMalloc in the
    // first step) lead, named by their call; on the leaky GPU the leaked blocks are there.
    for (g, w) in got.iter().zip(&want) {
        let live: i64 = g.live_at_peak.iter().map(|l| l.bytes).sum();
        assert_eq!(live, g.peak_bytes, "GPU {}: {:?}", w.device, g.live_at_peak);
        let first = &g.live_at_peak[0];
        assert_eq!(first.bytes, 10 << 30, "{:?}", g.live_at_peak);
        assert_eq!(first.call.as_deref(), Some("cudaMalloc"));
        assert!(first.nvtx.is_some(), "{first:?}");
        let blocks: usize = g.live_at_peak.iter().map(|l| l.blocks).sum();
        let leaky = g.growth_per_iteration_bytes > Some(0);
        // Weights, a step's activations and its workspace; the leak's blocks besides on
        // the leaky GPU.
        assert_eq!(blocks > 3, leaky, "GPU {}: {:?}", w.device, g.live_at_peak);
    }
    // The leak is a fact of its own, on that GPU only.
    let findings = nsys_explorer_core::findings::detect(&trace, &o);
    let growth: Vec<_> = findings
        .iter()
        .filter(|f| f.kind == nsys_explorer_core::findings::Kind::MemoryGrowth)
        .collect();
    assert_eq!(growth.len(), 1, "{growth:?}");
    assert!(
        growth[0].title.contains("64.0 MiB every iteration"),
        "{}",
        growth[0].title
    );
    assert_eq!(growth[0].group, nsys_explorer_core::findings::Group::Fact);
    // Where it went: the blocks leaked from the second iteration to the start of the
    // last (the iterations measured), by their call.
    let measured = truth.iterations.count as i64 - 2;
    assert!(
        growth[0].detail.contains(&format!(
            "{}.0 MiB in {measured} blocks by cudaMalloc",
            64 * measured
        )),
        "{}",
        growth[0].detail
    );
    assert!(growth[0].saving_ns.is_none());
    // One GPU leaks, the others do not.
    assert_eq!(
        got.iter()
            .filter(|g| g.growth_per_iteration_bytes > Some(0))
            .count(),
        1
    );
    let host: u64 = want.iter().map(|w| w.host_events).sum();
    let skipped: u64 = report
        .skipped_rows
        .iter()
        .filter(|s| s.table == "CUDA_GPU_MEMORY_USAGE_EVENTS")
        .map(|s| s.rows)
        .sum();
    assert_eq!(skipped, host, "host memory counted and left out");
    // Through the cache, the same answers.
    nsys_explorer_core::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    let _ = nsys_explorer_core::session::open_path(&path).unwrap();
    let (cached, r) = nsys_explorer_core::session::open_path(&path).unwrap();
    assert_eq!(r.phases[0].0, "read cache");
    assert_eq!(memory_usage(&cached, &o.iterations), got);
}

#[test]
fn a_capture_without_memory_events_has_no_memory_usage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = nsys_explorer_core::load::load(&path).unwrap();
    let o = overview(&trace, &Default::default());
    assert!(memory_usage(&trace, &o.iterations).is_empty());
}
