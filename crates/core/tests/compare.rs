//! Comparing two runs (`compare`, `diff`) against the generator's truth: pairs written with
//! the same seed and one thing changed — a kernel made faster, the per-step sync removed,
//! NCCL moved to its own stream — where the truth knows every iteration's length, every
//! kernel's total and every gap's cause.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use nsys_explorer_core::analysis::iterations::steady_state;
use nsys_explorer_core::compare::{Comparison, Run, compare};
use nsys_explorer_core::load;
use nsys_explorer_core::overview::{Options, Overview, overview};
use nsys_explorer_core::synth::{self, GroundTruth, NcclStream, Preset, SynthOptions};
use nsys_explorer_core::trace::{DeviceId, Trace};

struct Side {
    path: PathBuf,
    trace: Trace,
    overview: Overview,
    truth: Option<GroundTruth>,
}

fn side(path: &Path, truth: Option<GroundTruth>) -> Side {
    let (trace, _) = load::load(path).unwrap();
    let overview = overview(&trace, &Options::default());
    Side {
        path: path.to_path_buf(),
        trace,
        overview,
        truth,
    }
}

fn generated(dir: &Path, name: &str, options: SynthOptions) -> Side {
    let path = dir.join(name);
    let truth = synth::generate(&path, options).unwrap();
    side(&path, Some(truth))
}

fn run(s: &Side) -> Run<'_> {
    Run {
        path: &s.path,
        trace: &s.trace,
        overview: &s.overview,
    }
}

fn compared(before: &Side, after: &Side) -> Comparison {
    compare(&run(before), &run(after))
}

/// The parts of each GPU's deltas add up: the breakdown to the iteration's delta, idle by
/// cause to the idle part; the same for the whole run.
fn assert_parts_add_up(c: &Comparison) {
    for d in &c.devices {
        if let (Some(parts), Some(delta), Some(idle)) =
            (d.breakdown_delta(), d.delta_ns(), d.idle_delta())
        {
            assert_eq!(
                parts.iter().map(|p| p.1).sum::<i64>(),
                delta,
                "GPU {}",
                d.device
            );
            assert_eq!(idle.total(), parts[4].1, "GPU {} idle", d.device);
        }
        let (parts, delta, idle) = (
            d.run_breakdown_delta().unwrap(),
            d.run_delta_ns().unwrap(),
            d.run_idle_delta().unwrap(),
        );
        assert_eq!(
            parts.iter().map(|p| p.1).sum::<i64>(),
            delta,
            "GPU {} run",
            d.device
        );
        assert_eq!(idle.total(), parts[4].1, "GPU {} run idle", d.device);
    }
}

/// The truth's steady-state median iteration of `device`.
fn true_median(truth: &GroundTruth, device: DeviceId) -> i64 {
    let d = truth
        .iterations
        .per_device
        .iter()
        .find(|d| d.device == device.0)
        .unwrap();
    steady_state(&d.durations_ns).median_ns
}

fn true_kernel_total(truth: &GroundTruth, short: &str) -> i64 {
    truth
        .kernels
        .iter()
        .find(|k| k.name == short)
        .unwrap()
        .total_ns
}

#[test]
fn a_kernel_made_twice_as_fast_leads_the_kernels_with_its_true_delta() {
    let dir = tempfile::tempdir().unwrap();
    let before = generated(dir.path(), "before.sqlite", SynthOptions::new(Preset::Tiny));
    let flash = synth::kernel_index("flash_fwd_kernel").unwrap();
    let after = generated(
        dir.path(),
        "after.sqlite",
        SynthOptions {
            scale_kernel: Some((flash, 0.5)),
            ..SynthOptions::new(Preset::Tiny)
        },
    );
    let c = compared(&before, &after);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.devices.len(), 4);
    let (bt, at) = (
        before.truth.as_ref().unwrap(),
        after.truth.as_ref().unwrap(),
    );
    for d in &c.devices {
        // Each GPU's delta is the difference of the true medians, to the nanosecond.
        assert_eq!(
            d.delta_ns().unwrap(),
            true_median(at, d.device) - true_median(bt, d.device),
            "GPU {}",
            d.device
        );
        // The saving is compute time, not idle moved around.
        let parts = d.breakdown_delta().unwrap();
        assert!(parts[0].1 < -1_000_000, "compute only {:?}", parts);
    }
    assert_parts_add_up(&c);
    let first = &c.kernels[0];
    assert!(first.name.contains("flash_fwd_kernel"), "{}", first.name);
    assert_eq!(
        first.delta_ns(),
        true_kernel_total(at, "flash_fwd_kernel") - true_kernel_total(bt, "flash_fwd_kernel")
    );
    assert_eq!(first.before_count, first.after_count);
    let v = nsys_explorer_core::compare::report::verdict(&c);
    assert!(
        v.contains("faster") && v.contains("flash_fwd_kernel"),
        "{v}"
    );
}

#[test]
fn removing_the_step_sync_shows_host_sync_idle_gone_and_where_the_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let before = generated(dir.path(), "before.sqlite", SynthOptions::new(Preset::Tiny));
    let after = generated(
        dir.path(),
        "after.sqlite",
        SynthOptions {
            no_step_sync: true,
            ..SynthOptions::new(Preset::Tiny)
        },
    );
    let c = compared(&before, &after);
    assert_parts_add_up(&c);
    let (bt, at) = (
        before.truth.as_ref().unwrap(),
        after.truth.as_ref().unwrap(),
    );
    let true_total = |t: &GroundTruth, device: DeviceId, cause: &str| {
        let s = t.gap_summary.iter().find(|s| s.device == device.0).unwrap();
        s.by_cause.get(cause).map_or(0, |c| c.1)
    };
    for d in &c.devices {
        let idle = d.run_idle_delta().unwrap();
        // Every cause's change over the run is the truth's, cause by cause.
        for (cause, got) in idle.parts() {
            if cause == "under_min_gap" {
                continue;
            }
            assert_eq!(
                got,
                true_total(at, d.device, cause) - true_total(bt, d.device, cause),
                "GPU {} {cause}",
                d.device
            );
        }
        assert!(
            idle.host_sync < -100_000_000,
            "GPU {}: {:?}",
            d.device,
            idle
        );
        assert!(d.run_delta_ns().unwrap() < 0);
        assert_eq!(
            d.delta_ns().unwrap(),
            true_median(at, d.device) - true_median(bt, d.device)
        );
    }
    let v = nsys_explorer_core::compare::report::verdict(&c);
    assert!(v.contains("host sync -"), "{v}");
    // The pattern that went away is the sync's.
    assert!(
        c.patterns[0].signature.contains("[host_sync]"),
        "{:?}",
        c.patterns[0]
    );
    assert!(c.patterns[0].delta_ns() < 0);
}

#[test]
fn nccl_on_its_own_stream_turns_nccl_only_time_into_overlap() {
    let dir = tempfile::tempdir().unwrap();
    // Gradient all-reduces, whose results are read late: on a stream of their own they
    // overlap compute (an all-to-all's would not).
    let gradient = SynthOptions {
        gradient_all_reduce: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let before = generated(dir.path(), "before.sqlite", gradient);
    let after = generated(
        dir.path(),
        "after.sqlite",
        SynthOptions {
            nccl_stream: NcclStream::Separate,
            ..gradient
        },
    );
    let c = compared(&before, &after);
    assert_parts_add_up(&c);
    for d in &c.devices {
        let parts = d.breakdown_delta().unwrap();
        assert!(parts[2].1 > 0, "overlap {:?}", parts);
        assert!(parts[1].1 < 0, "nccl only {:?}", parts);
        assert_eq!(
            d.delta_ns().unwrap(),
            true_median(after.truth.as_ref().unwrap(), d.device)
                - true_median(before.truth.as_ref().unwrap(), d.device)
        );
    }
}

#[test]
fn real_exports_compare_end_to_end_and_say_what_cannot_be() {
    let real = common::real_fixtures();
    let find = |part: &str| {
        real.iter()
            .find(|p| p.to_string_lossy().contains(part))
            .unwrap()
    };
    let two_gpu = side(find("2gpu-nccl-flashattn"), None);
    let other_two = side(find("h100-2gpu"), None);
    let one_gpu = side(find("2024.6-fuser"), None);
    let c = compared(&two_gpu, &other_two);
    assert_eq!(c.devices.len(), 2);
    assert_parts_add_up(&c);
    assert!(
        c.kernels
            .iter()
            .any(|k| k.name.contains("flash_fwd_kernel") && k.before_count > 0),
        "the before run's flash attention kernels are listed"
    );
    // A run compared with itself changes nothing.
    let same = compared(&two_gpu, &two_gpu);
    assert!(same.kernels.iter().all(|k| k.delta_ns() == 0));
    assert!(same.devices.iter().all(|d| d.run_delta_ns() == Some(0)));
    // Different GPU counts: said, and the GPUs in common still compared.
    let c = compared(&two_gpu, &one_gpu);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("different GPU counts")),
        "{:?}",
        c.warnings
    );
    assert!(!c.kernels.is_empty());
}
