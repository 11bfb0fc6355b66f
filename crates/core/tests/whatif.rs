//! What-if replays against the truth: `synth` writes the same run with the change really
//! made (same seed), and the prediction from the unchanged run must match what the changed
//! run measured; replaying unchanged must reproduce every trace, real exports included.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::Path;

use nsys_explorer_core::load;
use nsys_explorer_core::overview::{Options, overview};
use nsys_explorer_core::synth::{self, Preset, SynthOptions};
use nsys_explorer_core::trace::Trace;
use nsys_explorer_core::whatif::Change;
use nsys_explorer_core::whatif::report::{Outcome, max_error, what_if};

fn generated(dir: &Path, name: &str, options: SynthOptions) -> Trace {
    let path = dir.join(name);
    synth::generate(&path, options).unwrap();
    load::load(&path).unwrap().0
}

/// The changed run as measured, GPU by GPU.
fn measured(trace: &Trace) -> Vec<Outcome> {
    let o = overview(trace, &Options::default());
    let w = what_if(trace, &o, &Change::default(), &Options::default());
    w.measured
}

fn predicted(trace: &Trace, change: &Change) -> (Vec<Outcome>, f64) {
    let o = overview(trace, &Options::default());
    let w = what_if(trace, &o, change, &Options::default());
    let error = max_error(&w);
    (w.predicted, error)
}

fn pct(a: i64, b: i64) -> f64 {
    100.0 * (a - b).abs() as f64 / b as f64
}

#[test]
fn a_kernel_made_twice_as_fast_is_predicted_within_one_percent() {
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
    let change = Change {
        scale_kernels: vec![(regex::Regex::new("flash_fwd").unwrap(), 0.5)],
        ..Default::default()
    };
    let (prediction, error) = predicted(&before, &change);
    assert!(
        error < 1e-9,
        "the unchanged replay reproduces the trace ({error} %)"
    );
    let real = measured(&after);
    let was = measured(&before);
    for ((p, r), w) in prediction.iter().zip(&real).zip(&was) {
        let (pi, ri) = (
            p.iteration_median_ns.unwrap(),
            r.iteration_median_ns.unwrap(),
        );
        assert!(
            pct(pi, ri) < 1.0,
            "GPU {}: iteration {pi} predicted, {ri} measured",
            p.device
        );
        assert!(pct(p.total_ns, r.total_ns) < 1.0, "GPU {} span", p.device);
        // And it is a prediction: the unchanged run was 10 % slower.
        assert!(pct(w.iteration_median_ns.unwrap(), ri) > 5.0);
    }
}

#[test]
fn removing_the_step_sync_is_predicted_within_a_few_ms_a_step() {
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
    // The scheduler's sync, named by the NVTX range around it (`.item()`); the warm-up's
    // cudaStreamSynchronize stays.
    let change = Change {
        remove_sync: vec!["aten::item".into()],
        ..Default::default()
    };
    let (prediction, _) = predicted(&before, &change);
    let real = measured(&after);
    let was = measured(&before);
    let steps = overview(&before, &Options::default()).iterations.count() as i64;
    for ((p, r), w) in prediction.iter().zip(&real).zip(&was) {
        let saving = w.total_ns - r.total_ns;
        assert!(
            saving > 40_000_000 * steps,
            "the change saves something: {saving}"
        );
        let off = (p.total_ns - r.total_ns).abs();
        assert!(
            off <= 3_000_000 * steps,
            "GPU {}: span off by {off} ns",
            p.device
        );
        let (pi, ri) = (
            p.iteration_median_ns.unwrap(),
            r.iteration_median_ns.unwrap(),
        );
        assert!(
            pct(pi, ri) < 1.0,
            "GPU {}: iteration {pi} vs {ri}",
            p.device
        );
        // The idle it removes is host_sync idle.
        assert!(p.idle.host_sync < w.idle.host_sync);
    }
}

#[test]
fn replaying_unchanged_reproduces_every_real_export() {
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let o = overview(&trace, &Options::default());
        let w = what_if(&trace, &o, &Change::default(), &Options::default());
        assert!(
            max_error(&w) < 0.01,
            "{}: {} %",
            path.display(),
            max_error(&w)
        );
        for (m, p) in w.measured.iter().zip(&w.predicted) {
            assert_eq!(m.total_ns, p.total_ns, "{}", path.display());
        }
    }
}

#[test]
fn nccl_on_its_own_stream_overlaps_and_says_what_it_assumed() {
    let dir = tempfile::tempdir().unwrap();
    let before = generated(dir.path(), "before.sqlite", SynthOptions::new(Preset::Tiny));
    let o = overview(&before, &Options::default());
    let change = Change {
        nccl_own_stream: true,
        ..Default::default()
    };
    let w = what_if(&before, &o, &change, &Options::default());
    assert!(
        w.assumptions
            .iter()
            .any(|a| a.contains("NCCL on its own stream"))
    );
    for (m, p) in w.measured.iter().zip(&w.predicted) {
        assert!(p.iteration_median_ns.unwrap() < m.iteration_median_ns.unwrap());
    }
}

#[test]
fn removing_the_host_work_after_the_step_sync_saves_about_that_much_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let before = generated(dir.path(), "before.sqlite", SynthOptions::new(Preset::Tiny));
    // The scheduler's 60 ms of Python after its sync, while the GPU has drained.
    let change = Change {
        remove_cpu: vec!["scheduler_step".into()],
        ..Default::default()
    };
    let (prediction, _) = predicted(&before, &change);
    let was = measured(&before);
    let steps = overview(&before, &Options::default()).iterations.count() as i64;
    for (p, w) in prediction.iter().zip(&was) {
        let saving = w.total_ns - p.total_ns;
        // One step's host work is saved between each two steps.
        let expected = 60_000_000 * (steps - 1);
        assert!(
            (saving - expected).abs() < expected / 10,
            "GPU {}: saved {saving}, expected about {expected}",
            p.device
        );
    }
}

#[test]
fn a_replay_tells_how_far_it_is() {
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), "t.sqlite", SynthOptions::new(Preset::Tiny));
    let o = overview(&trace, &Options::default());
    let seen = Mutex::new(Vec::new());
    let change = Change {
        remove_sync: vec!["aten::item".into()],
        ..Default::default()
    };
    nsys_explorer_core::whatif::report::what_if_progress(
        &trace,
        &o,
        &change,
        &Options::default(),
        |_| {},
        &|f| seen.lock().unwrap().push(f),
    );
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() >= 4, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&1.0));
}
