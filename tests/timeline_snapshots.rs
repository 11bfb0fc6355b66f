//! Image snapshots of the timeline: the whole trace, one iteration marked, a kernel
//! selected, each rendered by egui_kittest through wgpu (a software rasteriser: lavapipe,
//! `apt-get install mesa-vulkan-drivers`, or Mesa's llvmpipe through GL) and compared with
//! the PNG under `tests/snapshots/` within the tolerance of `kittest.toml`.
//!
//! After a deliberate change to the drawing, `UPDATE_SNAPSHOTS=true cargo test --test
//! timeline_snapshots` rewrites the PNGs (look at them before committing); a failing test
//! leaves `NAME.new.png` and `NAME.diff.png` beside the old one.

use std::sync::Arc;

use egui_kittest::Harness;
use nsys_explorer::analysis::gaps::OpRef;
use nsys_explorer::analysis::iterations::iterations;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::trace::{DeviceIndex, Trace};
use nsys_explorer::ui::timeline::{Selection, Timeline};

struct Shown {
    trace: Arc<Trace>,
    timeline: Timeline,
}

/// The generated tiny trace (the generator is seeded: the same trace every run), loaded.
fn tiny(dir: &std::path::Path) -> Arc<Trace> {
    let path = dir.join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = nsys_explorer::load::load(&path).unwrap();
    Arc::new(trace)
}

/// The timeline alone in a 1200×700 window, rendered through wgpu, after a few frames
/// (the first lays out the labels the next ones reuse).
fn render(
    trace: Arc<Trace>,
    set_up: impl FnOnce(&Trace, &mut Timeline),
) -> Harness<'static, Shown> {
    let mut timeline = Timeline::new(&trace);
    set_up(&trace, &mut timeline);
    let mut h = Harness::builder()
        .with_size([1200.0, 700.0])
        .wgpu()
        .build_ui_state(
            |ui, shown: &mut Shown| {
                shown.timeline.show(ui, &shown.trace);
            },
            Shown { trace, timeline },
        );
    h.run_steps(4);
    h
}

#[test]
fn the_whole_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = render(tiny(dir.path()), |_, t| t.fit());
    h.snapshot("timeline_whole_trace");
}

#[test]
fn one_iteration_zoomed_and_marked_on_every_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let trace = tiny(dir.path());
    let its = iterations(&trace, None);
    // The fourth step: past the warm-up, as the drill-down opens a steady one.
    let k = 3;
    let marks = its.spans_of(&trace, k);
    assert_eq!(marks.len(), trace.devices.len(), "step {k} on every GPU");
    let start = marks.iter().map(|m| m.1).min().unwrap();
    let end = marks.iter().map(|m| m.2).max().unwrap();
    let mut h = render(trace, |_, t| {
        t.zoom_to(start, end, 0.05);
        t.marks.iteration_mark = marks;
    });
    h.snapshot("timeline_one_iteration");
}

#[test]
fn a_selected_kernel_and_its_neighbours() {
    let dir = tempfile::tempdir().unwrap();
    let trace = tiny(dir.path());
    let mut h = render(trace, |trace, t| {
        let ops = &trace.devices[0].streams[0].ops;
        let i = ops.len() / 2;
        // Wide enough to show the kernels around it, each with its label.
        let (start, end) = (ops.start[i], ops.end[i]);
        let span = (end - start).max(1_000);
        t.zoom_to(start - 4 * span, end + 4 * span, 0.0);
        t.selection = Some(Selection::Op {
            device: DeviceIndex(0),
            op: OpRef {
                stream: 0,
                op: i as u32,
            },
        });
    });
    h.snapshot("timeline_selected_kernel");
}
