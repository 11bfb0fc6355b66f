//! The critical path against the generator's truth: the straggler step's path passes
//! through the stalled rank's CPU for (nearly) all of its stall, in one file of 4 GPUs and
//! in per-rank files on their own clocks; segments tile every iteration; a GPU-bound
//! step's path is mostly GPU work; ops on the path have no slack; and the what-if replay
//! never predicts that removing a segment's cause saves more than the segment.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::Path;

use nsys_explorer_core::analysis::iterations::{Iterations, iterations};
use nsys_explorer_core::critical_path::report::{run_table, summarise};
use nsys_explorer_core::critical_path::{Graph, Place, SegmentKind, slack::slack};
use nsys_explorer_core::load;
use nsys_explorer_core::synth::{self, GroundTruth, Preset, SynthOptions};
use nsys_explorer_core::trace::Trace;
use nsys_explorer_core::whatif::{Change, HostSpan, replay};

fn tiny(dir: &Path) -> (Trace, GroundTruth) {
    let path = dir.join("tiny.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    (load::load(&path).unwrap().0, truth)
}

/// The straggler's stall: the blocking `read()` of the pause's length on some thread
/// (thread index, start, end).
fn stall(trace: &Trace, pause_ns: i64) -> (usize, i64, i64) {
    trace
        .threads
        .iter()
        .enumerate()
        .find_map(|(t, th)| {
            (0..th.osrt.len()).find_map(|i| {
                let (s, e) = (th.osrt.start[i], th.osrt.end[i]);
                let name = trace.strings.get(th.osrt.name[i]);
                (name.contains("read") && (e - s - pause_ns).abs() < 1_000).then_some((t, s, e))
            })
        })
        .expect("the straggler's read() is in the trace")
}

/// How much of `[a, b)` the path's CPU-side segments on `thread` cover.
fn cpu_cover(
    segments: &[nsys_explorer_core::critical_path::Segment],
    thread: usize,
    a: i64,
    b: i64,
) -> i64 {
    segments
        .iter()
        .filter(|s| match s.place {
            Place::Cpu(t) | Place::Call(t, _) => t == thread,
            Place::Op(..) => false,
        })
        .map(|s| (s.end_ns.min(b) - s.start_ns.max(a)).max(0))
        .sum()
}

fn assert_tiles(path: &nsys_explorer_core::critical_path::CriticalPath) {
    let mut at = path.start_ns;
    for s in &path.segments {
        assert!(
            s.start_ns >= at,
            "segments overlap at {} (iteration {:?})",
            s.start_ns,
            path.iteration
        );
        assert!(s.end_ns > s.start_ns, "an empty segment");
        at = s.end_ns;
    }
    let sum: i64 = path.segments.iter().map(|s| s.duration_ns()).sum();
    let wall = path.wall_ns();
    assert!(
        (sum - wall).abs() * 100 <= wall,
        "iteration {:?}: segments sum to {sum}, the iteration is {wall}",
        path.iteration
    );
    assert_eq!(
        path.segments.first().map(|s| s.start_ns),
        Some(path.start_ns)
    );
    assert_eq!(path.segments.last().map(|s| s.end_ns), Some(path.end_ns));
}

/// A straggler's stall of plain CPU time: the stretch of the pause's length between two
/// CUDA calls of a thread, with no OS runtime call in it (thread index, start, end).
fn cpu_stall(trace: &Trace, pause_ns: i64) -> (usize, i64, i64) {
    trace
        .threads
        .iter()
        .enumerate()
        .find_map(|(t, th)| {
            (1..th.api.len()).find_map(|k| {
                let (a, b) = (th.api.end[k - 1], th.api.start[k]);
                let quiet = th
                    .osrt
                    .start
                    .iter()
                    .zip(&th.osrt.end)
                    .all(|(&s, &e)| e <= a || s >= b);
                (b - a >= pause_ns && b - a < pause_ns + 100_000 && quiet).then_some((t, a, b))
            })
        })
        .expect("the straggler's CPU stall is in the trace")
}

fn straggler_step_goes_through_the_stall(trace: &Trace, its: &Iterations, truth: &GroundTruth) {
    let k = truth.iterations.slowest_index;
    let graph = Graph::new(trace);
    let path = graph.path(its, k).unwrap();
    assert_tiles(&path);
    let pause = truth.iterations.straggler_pause_ns;
    let (thread, a, b) = if truth.iterations.straggler_activity == "read()" {
        stall(trace, pause)
    } else {
        cpu_stall(trace, pause)
    };
    let covered = cpu_cover(&path.segments, thread, a, b);
    assert!(
        covered * 10 >= pause * 9,
        "the path covers {covered} ns of the {pause} ns stall"
    );
    // Those segments are said to be on the straggler's GPU.
    let on_stall: Vec<_> = path
        .segments
        .iter()
        .filter(|s| {
            matches!(s.place, Place::Cpu(t) if t == thread) && s.end_ns > a && s.start_ns < b
        })
        .collect();
    let straggler = truth.iterations.straggler_device;
    let is_straggler = |d: nsys_explorer_core::trace::DeviceIndex| {
        let device = &trace.devices[d.0];
        match &device.key {
            Some(key) => key.starts_with(&format!("rank{straggler:02}")),
            None => device.id.0 == straggler,
        }
    };
    for s in &on_stall {
        assert!(
            is_straggler(s.device),
            "a stall segment on another GPU: {s:?}"
        );
    }
    // And the summary puts the stall's time on that GPU, not on the one the walk began at.
    let summary = summarise(&graph, its, k).expect("a path");
    let (d, total, _) = summary
        .by_device
        .iter()
        .max_by_key(|x| x.1)
        .expect("segments");
    assert!(
        is_straggler(*d) && *total * 10 >= pause * 9,
        "most of the path is on the straggler's GPU: {:?}",
        summary.by_device
    );
}

#[test]
fn a_straggler_stalling_in_plain_python_is_on_its_own_gpus_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cpu.sqlite");
    let options = SynthOptions {
        straggler_stall: synth::StragglerStall::Cpu,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let trace = load::load(&path).unwrap().0;
    let its = iterations(&trace, None);
    assert_eq!(its.slowest_index, Some(truth.iterations.slowest_index));
    straggler_step_goes_through_the_stall(&trace, &its, &truth);
}

#[test]
fn the_straggler_steps_path_runs_through_the_stalled_ranks_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, truth) = tiny(dir.path());
    let its = iterations(&trace, None);
    assert_eq!(its.slowest_index, Some(truth.iterations.slowest_index));
    straggler_step_goes_through_the_stall(&trace, &its, &truth);
}

#[test]
fn the_straggler_is_found_across_per_rank_files_on_their_own_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let split = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    let paths: Vec<_> = split.files.iter().map(|f| f.path.clone()).collect();
    let (trace, _, _) = nsys_explorer_core::session::load_many(&paths).unwrap();
    let its = iterations(&trace, None);
    straggler_step_goes_through_the_stall(&trace, &its, &split.run);
}

#[test]
fn segments_tile_every_iteration_and_a_gpu_bound_step_is_mostly_gpu_work() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, _) = tiny(dir.path());
    let its = iterations(&trace, None);
    let graph = Graph::new(&trace);
    for k in 0..its.count() {
        assert_tiles(&graph.path(&its, k).unwrap());
    }
    let median = its.per_device[0].median_index.unwrap();
    let summary = summarise(&graph, &its, median).unwrap();
    let gpu: i64 = summary
        .by_kind
        .iter()
        .filter(|(k, _)| k.is_gpu())
        .map(|(_, ns)| ns)
        .sum();
    let wall = summary.path.wall_ns();
    assert!(
        gpu * 10 >= wall * 8,
        "GPU work is {gpu} of {wall} ns on the median step's path"
    );
    // The whole run's table adds up to the iterations' walls.
    let table = run_table(&graph, &its, 20);
    assert_eq!(table.iterations, its.count());
    let by_kind: i64 = table.by_kind.values().sum();
    assert!((by_kind - table.wall_ns).abs() * 100 <= table.wall_ns);
    assert!(table.by_kernel.windows(2).all(|w| w[0].ns >= w[1].ns));
}

#[test]
fn ops_on_the_path_have_no_slack_and_none_is_negative() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, _) = tiny(dir.path());
    let its = iterations(&trace, None);
    let graph = Graph::new(&trace);
    let median = its.per_device[0].median_index.unwrap();
    let path = graph.path(&its, median).unwrap();
    let latest = slack(&graph, path.start_ns, path.end_ns);
    let mut checked = 0;
    for s in &path.segments {
        // Ops whose end is on the path (not a collective's last rank, whose start is).
        if let Place::Op(d, st, i) = s.place
            && s.end_ns == trace.devices[d].streams[st].ops.end[i]
            && let Some(x) = latest.of(&graph, d, st, i)
        {
            assert!(x <= 1_000, "{s:?} on the path has {x} ns of slack");
            checked += 1;
        }
    }
    assert!(checked > 10);
    let summary = summarise(&graph, &its, median).unwrap();
    assert!(!summary.slack.is_empty());
    assert!(summary.slack.iter().all(|k| k.slack_ns >= 0));
}

/// The iteration's wall in a trace (replayed or not).
fn wall(trace: &Trace, k: usize) -> i64 {
    let its = iterations(trace, None);
    let graph = Graph::new(trace);
    let (a, b) = graph.iteration_window(&its, k).unwrap();
    b - a
}

#[test]
fn removing_a_segments_cause_never_saves_more_than_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, truth) = tiny(dir.path());
    let its = iterations(&trace, None);
    let k = truth.iterations.slowest_index;
    let graph = Graph::new(&trace);
    let path = graph.path(&its, k).unwrap();
    let before = wall(&trace, k);
    // The longest CPU stretch on the path (the straggler's stall), removed.
    let cpu = path
        .segments
        .iter()
        .filter(|s| s.kind == SegmentKind::Cpu)
        .max_by_key(|s| s.duration_ns())
        .unwrap();
    let Place::Cpu(th) = cpu.place else {
        unreachable!()
    };
    let change = Change {
        remove_stalls: vec![HostSpan::of(
            &trace,
            &trace.threads[th],
            cpu.start_ns,
            cpu.end_ns,
        )],
        ..Change::default()
    };
    let saved = before - wall(&replay(&trace, &change), k);
    assert!(saved > 0, "removing the stall saves something");
    assert!(
        saved <= cpu.duration_ns() + cpu.duration_ns() / 100,
        "saved {saved} ns by removing a {} ns segment",
        cpu.duration_ns()
    );
    // The kernel with the most time on the path, twice as fast.
    let top = summarise(&graph, &its, k).unwrap().top_kernels[0].clone();
    let change = Change {
        scale_kernels: vec![(
            regex::Regex::new(&format!("^{}$", regex::escape(&top.name))).unwrap(),
            0.5,
        )],
        ..Change::default()
    };
    let saved = before - wall(&replay(&trace, &change), k);
    assert!(
        saved <= top.ns / 2 + top.ns / 100,
        "halving {} saved {saved} ns, its time on the path is {} ns",
        top.name,
        top.ns
    );
}

#[test]
fn a_trace_without_iterations_gets_the_whole_runs_path() {
    // The real exports whose NVTX marks no step (nvFuser benchmarks, FSDP): the run's path.
    let mut tried = 0;
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let its = iterations(&trace, None);
        if its.count() > 0 {
            continue;
        }
        let graph = Graph::new(&trace);
        let run = graph.run_path().unwrap();
        assert_eq!(run.iteration, None);
        assert_tiles(&run);
        let first = trace
            .devices
            .iter()
            .filter_map(|d| d.kernel_window())
            .map(|w| w.0)
            .min();
        assert_eq!(Some(run.start_ns), first, "{}", path.display());
        // The table over "every iteration" is that one path.
        let table = run_table(&graph, &its, 5);
        assert_eq!((table.iterations, table.wall_ns), (1, run.wall_ns()));
        tried += 1;
    }
    assert!(tried > 0 || common::real_fixtures().is_empty());
}

/// A chosen range's path: over an iteration's window it is that iteration's path; over a
/// range where no kernel ends, none.
#[test]
fn a_ranges_path_over_an_iterations_window_is_the_iterations_path() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, truth) = tiny(dir.path());
    let its = iterations(&trace, None);
    let graph = Graph::new(&trace);
    let k = truth.iterations.slowest_index;
    let window = graph.iteration_window(&its, k).unwrap();
    let by_iteration = graph.path(&its, k).unwrap();
    let by_range = graph.window_path(window).unwrap();
    assert_eq!(by_range.segments.len(), by_iteration.segments.len());
    assert_eq!(
        (by_range.start_ns, by_range.end_ns),
        (by_iteration.start_ns, by_iteration.end_ns)
    );
    assert_tiles(&by_range);
    let before_any = trace
        .devices
        .iter()
        .filter_map(|d| d.kernel_window())
        .map(|w| w.0)
        .min()
        .unwrap();
    assert!(
        graph
            .window_path((before_any - 2_000, before_any - 1_000))
            .is_none()
    );
}
