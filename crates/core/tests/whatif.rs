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
    assert_eq!((prediction.len(), real.len()), (was.len(), was.len()));
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
    assert_eq!((prediction.len(), real.len()), (was.len(), was.len()));
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
        assert_eq!(w.measured.len(), w.predicted.len());
        assert_eq!(w.measured.len(), w.predicted.len());
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
    assert_eq!(w.measured.len(), w.predicted.len());
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
    assert_eq!(prediction.len(), was.len());
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

/// The changes to replay on `trace`: its findings' (and their upper bounds'), and one of
/// each kind besides — syncs removed, a kernel made faster, NCCL on its own stream with and
/// without its dependencies, host work and a stall removed, copies dropped, blocks
/// captured as graphs.
fn changes_of(trace: &Trace) -> Vec<Change> {
    let o = overview(trace, &Options::default());
    let found = nsys_explorer_core::findings::detect(trace, &o);
    let mut changes: Vec<Change> = found
        .iter()
        .flat_map(|f| [f.change.clone(), f.upper_change.clone()])
        .flatten()
        .collect();
    let top = o.kernels.first().map(|k| regex::escape(&k.name));
    let busiest = trace.threads.iter().max_by_key(|t| t.api.len());
    changes.extend([
        Change::default(),
        Change {
            remove_sync: vec!["Synchronize".into()],
            ..Default::default()
        },
        Change {
            scale_kernels: top
                .map(|t| (regex::Regex::new(&t).unwrap(), 0.5))
                .into_iter()
                .collect(),
            ..Default::default()
        },
        Change {
            nccl_own_stream: true,
            ..Default::default()
        },
        Change {
            nccl_own_stream: true,
            nccl_dependencies: nsys_explorer_core::whatif::NcclDependencies::Unbounded,
            ..Default::default()
        },
        Change {
            remove_cpu: vec!["aten".into()],
            ..Default::default()
        },
        Change {
            drop_copies: vec!["Memcpy".into(), "memcpy".into()],
            ..Default::default()
        },
        Change {
            capture_graphs: vec!["attention".into(), "ffn".into(), "block".into()],
            ..Default::default()
        },
        Change {
            remove_stalls: busiest
                .filter(|t| t.api.len() > 10)
                .map(|t| {
                    let n = t.api.len();
                    nsys_explorer_core::whatif::HostSpan::of(
                        trace,
                        t,
                        t.api.start[n / 4],
                        t.api.end[n / 2],
                    )
                })
                .into_iter()
                .collect(),
            ..Default::default()
        },
    ]);
    changes
}

/// Several changes replayed in one walk of the trace give each change what its own replay
/// gives, to the nanosecond, and the findings' savings (their changes a few to a walk) are
/// the single replays' — on runs of every shape the generator makes and the real exports.
#[test]
fn changes_walked_together_give_what_each_replay_alone_gives() {
    use nsys_explorer_core::whatif::{Prepared, predicted_spans_of, predicted_spans_with};
    use std::sync::atomic::AtomicBool;
    let dir = tempfile::tempdir().unwrap();
    let tiny = || SynthOptions::new(Preset::Tiny);
    let shapes = [
        ("plain", tiny()),
        (
            "sync after each collective",
            SynthOptions {
                sync_after_collective: true,
                ..tiny()
            },
        ),
        (
            "launch-bound",
            SynthOptions {
                host_per_op_ns: Some(2_000_000),
                ..tiny()
            },
        ),
        (
            "CUDA graphs",
            SynthOptions {
                cuda_graphs: Some(synth::GraphTrace::Node),
                ..tiny()
            },
        ),
    ];
    let mut traces: Vec<(String, Trace)> = shapes
        .into_iter()
        .map(|(name, options)| {
            let file = format!("{}.sqlite", name.replace(' ', "-"));
            (name.to_string(), generated(dir.path(), &file, options))
        })
        .collect();
    for path in common::real_fixtures() {
        traces.push((path.display().to_string(), load::load(&path).unwrap().0));
    }
    let never = AtomicBool::new(false);
    let mut compared = 0;
    for (name, trace) in &traces {
        let changes = changes_of(trace);
        let prepared = Prepared::new(trace);
        let all: Vec<&Change> = changes.iter().collect();
        let together = predicted_spans_of(trace, &prepared, &all, None, &never).unwrap();
        assert_eq!(changes.len(), together.len());
        for (change, spans) in changes.iter().zip(&together) {
            let alone = predicted_spans_with(trace, &prepared, change, None);
            assert_eq!(spans, &alone, "{name}: {:?}", change.to_args());
            compared += 1;
        }
        // The findings' savings, replayed a few to a walk in parallel.
        let o = overview(trace, &Options::default());
        let found = nsys_explorer_core::findings::detect(trace, &o);
        let savings =
            nsys_explorer_core::findings::replay_savings(trace, &o, &found, &never, |_, _| {})
                .unwrap();
        // Each against the what-if command's own replay and measure of the saving.
        let saving_of = |c: &Change| {
            let w = nsys_explorer_core::whatif::report::what_if(trace, &o, c, &Options::default());
            nsys_explorer_core::whatif::report::saving_ns(&w)
        };
        assert_eq!(found.len(), savings.len());
        // An upper bound only where the change gains: a finding that gains nothing is
        // dropped, its upper bound not replayed.
        let span = nsys_explorer_core::findings::run_span(trace);
        let gains = |saving: i64| {
            100.0 * saving.max(0) as f64 / span as f64 >= nsys_explorer_core::findings::NO_GAIN_PCT
        };
        for (f, s) in found.iter().zip(&savings) {
            let alone = f.change.as_ref().map(|c| {
                let saving = saving_of(c);
                (
                    saving,
                    f.upper_change
                        .as_ref()
                        .filter(|_| gains(saving))
                        .map(|u| saving_of(u).max(saving)),
                )
            });
            assert_eq!(*s, alone, "{name}: {}", f.title);
        }
    }
    assert!(compared > 100, "{compared} changes compared");
    // A cancelled walk gives nothing.
    let (_, trace) = &traces[0];
    let prepared = Prepared::new(trace);
    let change = Change::default();
    let cancelled = AtomicBool::new(true);
    assert!(predicted_spans_of(trace, &prepared, &[&change], None, &cancelled).is_none());
}

/// Issue 69, item 3: CPU time removed from every launching thread over a stretch of the run
/// (the window's "What if the CPU had not spent it") shortens the run and no iteration: the
/// calls it makes take no time still keep their places among the ranges, so each
/// iteration's launches stay in it (they were all put in the last range at that instant,
/// and one iteration held a third of the run). The change made on the command line gives
/// the same figures.
#[test]
fn cpu_time_removed_over_a_stretch_makes_no_iteration_longer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let trace = load::load(&path).unwrap().0;
    let o = overview(&trace, &Options::default());
    let (first, last) = trace.time_span().unwrap();
    let (a, b) = (first + (last - first) / 9, first + (last - first) * 4 / 10);
    let change = Change {
        remove_stalls: trace
            .threads
            .iter()
            .filter(|t| !t.api.is_empty())
            .map(|t| nsys_explorer_core::whatif::HostSpan::of(&trace, t, a, b))
            .collect(),
        ..Change::default()
    };
    let w = nsys_explorer_core::whatif::report::what_if(&trace, &o, &change, &Options::default());
    assert_eq!(w.measured.len(), w.predicted.len());
    for (m, p) in w.measured.iter().zip(&w.predicted) {
        let (Some(before), Some(after)) = (m.iteration_median_ns, p.iteration_median_ns) else {
            panic!("{:?}: an iteration median lost in the replay", m.device);
        };
        assert!(
            after <= before + before / 20,
            "{:?}: {before} → {after} ns",
            m.device
        );
        assert!(
            p.total_ns < m.total_ns,
            "{:?}: the run is shorter",
            m.device
        );
    }
    // The same change as arguments gives the same prediction.
    let again = Change::from_args(&change.to_args()).unwrap();
    let w2 = nsys_explorer_core::whatif::report::what_if(&trace, &o, &again, &Options::default());
    assert_eq!(
        nsys_explorer_core::whatif::report::saving_ns(&w),
        nsys_explorer_core::whatif::report::saving_ns(&w2)
    );
}
