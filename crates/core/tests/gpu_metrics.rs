//! GPU metrics against the generator's truth: each GPU's mean of each metric over its
//! kernel window, a long kernel's means while it runs near its class's levels, clocks in Hz
//! or wrapped past 2^31 read as MHz, metric ids that differ per GPU resolved by name; and
//! the same through the cache.

#[path = "../../../tests/common/mod.rs"]
mod common;

use nsys_explorer_core::analysis::gpu_metrics::gpu_metrics;
use nsys_explorer_core::overview::overview;
use nsys_explorer_core::synth::metrics::{FLASH_LEVELS, SM_ACTIVE, TENSOR_ACTIVE};
use nsys_explorer_core::synth::{self, Preset, SynthOptions};

#[test]
fn each_gpus_means_and_a_long_kernels_equal_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.sqlite");
    let options = SynthOptions {
        gpu_metrics: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    // The same metric has another id on every GPU: resolved by (typeId, metricId).
    let conn = rusqlite::Connection::open(&path).unwrap();
    let ids: i64 = conn
        .query_row(
            "SELECT count(DISTINCT metricId) FROM TARGET_INFO_GPU_METRICS WHERE metricName = ?1",
            [SM_ACTIVE],
            |r| r.get(0),
        )
        .unwrap();
    assert!(ids >= 4, "{ids} ids for one metric");
    let (trace, _) = nsys_explorer_core::load::load(&path).unwrap();
    let o = overview(&trace, &Default::default());
    let window = |id| {
        o.devices
            .iter()
            .find(|d| d.device == id)
            .map(|d| (d.window.start, d.window.end))
    };
    let got = gpu_metrics(&trace, &window, 20).expect("metrics");
    assert_eq!(got.sample_hz.round(), 10_000.0);
    let want = truth.gpu_metrics.unwrap();
    assert_eq!(got.per_device.len(), want.len());
    for (g, w) in got.per_device.iter().zip(&want) {
        assert_eq!(g.device.0, w.device);
        assert_eq!(g.samples, w.samples);
        for (name, mean) in &w.means {
            let m = g.metrics[name].mean;
            assert!(
                (m - mean).abs() < 0.01,
                "GPU {} {name}: {m} vs {mean}",
                w.device
            );
        }
    }
    // Clocks: GPU 2 wrote Hz, GPU 3 a value wrapped past 2^31.
    let clock = |d: usize| got.per_device[d].metrics["GPC Clock Frequency [MHz]"].mean;
    assert_eq!((clock(0), clock(2), clock(3)), (1755.0, 1755.0, 2900.0));
    // flash_fwd_kernel runs 3.5 ms: its means while it runs are its levels within 2 points.
    for k in got.kernels.iter().filter(|k| k.name == "flash_fwd_kernel") {
        let (sm, tensor) = (k.metrics[SM_ACTIVE], k.metrics[TENSOR_ACTIVE]);
        assert!((sm - FLASH_LEVELS[0]).abs() < 2.0, "{sm}");
        assert!((tensor - FLASH_LEVELS[1]).abs() < 2.0, "{tensor}");
    }
    assert_eq!(
        got.kernels
            .iter()
            .filter(|k| k.name == "flash_fwd_kernel")
            .count(),
        4
    );
    // The kernel table's activity, one pass over every kernel: flash_fwd_kernel at its
    // levels, and each kernel name's the time-weighted mean of its GPUs' means (weights:
    // its time on each).
    let activity = nsys_explorer_core::analysis::gpu_metrics::kernel_activity(&trace);
    let flash = activity["flash_fwd_kernel"];
    assert!(
        (flash[0].unwrap() - FLASH_LEVELS[0]).abs() < 2.0,
        "{flash:?}"
    );
    assert!(
        (flash[1].unwrap() - FLASH_LEVELS[1]).abs() < 2.0,
        "{flash:?}"
    );
    for (name, means) in activity.iter().take(12) {
        let per_gpu = nsys_explorer_core::analysis::gpu_metrics::kernel_metrics(&trace, name);
        let weight: i64 = per_gpu.iter().map(|k| k.gpu_ns).sum();
        let weighted: f64 = per_gpu
            .iter()
            .map(|k| k.metrics[SM_ACTIVE] * k.gpu_ns as f64)
            .sum::<f64>()
            / weight as f64;
        assert!(
            (means[0].unwrap() - weighted).abs() < 0.5,
            "{name}: {means:?} vs {weighted}"
        );
    }
    // The slowest iteration (the straggler's stall: the others wait) kept every GPU's SMs
    // less busy than the median iteration did, and the drill-down says so.
    let drill = o
        .drilldown
        .as_ref()
        .expect("a drill-down of the slowest iteration");
    for d in &drill.devices {
        let sm = d
            .metrics
            .iter()
            .find(|m| m.name == SM_ACTIVE)
            .unwrap_or_else(|| panic!("{:?}", d.metrics));
        assert!(sm.mean < sm.reference_mean - 5.0, "{sm:?}");
    }
    // The hot kernel's finding says what it ran at: busy is not useful work.
    let findings = nsys_explorer_core::findings::detect(&trace, &o);
    let hot = findings
        .iter()
        .find(|f| f.kind == nsys_explorer_core::findings::Kind::HotKernel)
        .expect("flash_fwd_kernel is the hot kernel");
    assert!(hot.title.starts_with("flash_fwd_kernel"), "{}", hot.title);
    let said = |metric: &str| -> f64 {
        let at = hot
            .detail
            .find(metric)
            .unwrap_or_else(|| panic!("{metric}: {}", hot.detail));
        let rest = &hot.detail[at + metric.len()..];
        rest.trim_start()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        hot.detail.contains("While it ran (device-wide samples)"),
        "{}",
        hot.detail
    );
    assert!(
        (said("SMs Active") - FLASH_LEVELS[0]).abs() <= 2.0,
        "{}",
        hot.detail
    );
    assert!(
        (said("Tensor Active") - FLASH_LEVELS[1]).abs() <= 2.0,
        "{}",
        hot.detail
    );
    // Through the cache: the same.
    nsys_explorer_core::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    let _ = nsys_explorer_core::session::open_path(&path).unwrap();
    let (cached, r) = nsys_explorer_core::session::open_path(&path).unwrap();
    assert_eq!(r.phases[0].0, "read cache");
    assert_eq!(cached.gpu_metrics, trace.gpu_metrics);
}

#[test]
fn the_metrics_and_memory_tables_hold_every_sample_and_device_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("both.sqlite");
    let options = SynthOptions {
        gpu_metrics: true,
        memory_usage: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    synth::generate(&path, options).unwrap();
    let (trace, _) = nsys_explorer_core::load::load(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as usize;
    let metrics = nsys_explorer_core::tables::gpu_metrics(&trace);
    assert_eq!(metrics.rows(), count("SELECT count(*) FROM GPU_METRICS"));
    let memory = nsys_explorer_core::tables::memory_events(&trace);
    assert_eq!(
        memory.rows(),
        count("SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memKind NOT IN (0, 1)")
    );
}
