//! The window driven as a person would, with egui_kittest: open a generated trace, wait for
//! the load, see one row group per GPU, zoom, click a kernel, open a bad file, and use the
//! start page's "Open sample trace".

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::ui::timeline::Selection;
use nsys_explorer::ui::{App, State};

fn harness(file: Option<&Path>) -> Harness<'static, App> {
    let ctx = eframe::egui::Context::default();
    let app = App::new(file.map(Path::to_path_buf), &ctx, Vec::new());
    Harness::builder()
        .with_size([1400.0, 900.0])
        .build_ui_state(|ui, app: &mut App| app.ui(ui), app)
}

/// Steps the UI until the load in flight has ended (or 30 s pass).
fn wait_for_load(h: &mut Harness<'static, App>) {
    let start = Instant::now();
    while matches!(h.state().state, State::Loading { .. })
        && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(3);
}

#[test]
fn a_generated_trace_loads_and_shows_one_group_per_gpu_zooms_and_selects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    let State::Loaded(loaded) = &h.state().state else {
        panic!("not loaded")
    };
    assert_eq!(loaded.trace.devices.len(), 4);
    let rows = loaded.timeline.rows(&loaded.trace);
    let groups = rows
        .iter()
        .filter(|r| matches!(r, nsys_explorer::ui::timeline::RowKind::GpuHeader(_)))
        .count();
    assert_eq!(groups, 4, "one row group per GPU");

    // W zooms in around the middle: the visible range shrinks by 10 % and keeps its centre.
    let (s0, e0) = loaded.timeline.view;
    let timeline_point = eframe::egui::pos2(800.0, 300.0);
    h.hover_at(timeline_point);
    h.run_steps(2);
    h.key_press(eframe::egui::Key::W);
    h.run_steps(2);
    let State::Loaded(loaded) = &h.state().state else {
        unreachable!()
    };
    let (s1, e1) = loaded.timeline.view;
    assert!(
        (e1 - s1) < (e0 - s0) * 0.95,
        "zoomed in: {} → {}",
        e0 - s0,
        e1 - s1
    );
    assert!(
        ((s1 + e1) / 2.0 - (s0 + e0) / 2.0).abs() < (e0 - s0) * 0.01,
        "centred"
    );

    // Zoom to one kernel of GPU 0's first stream, then click its middle: the details panel
    // names it with its duration.
    let (name, start, end) = {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        let ops = &l.trace.devices[0].streams[0].ops;
        let i = ops.len() / 2;
        l.timeline.zoom_to(ops.start[i], ops.end[i], 0.2);
        (
            l.trace.strings.get(ops.name[i]).to_string(),
            ops.start[i],
            ops.end[i],
        )
    };
    h.run_steps(2);
    // Plot area: right of the 190 px labels, below the menu bar and the 24 px ruler; GPU 0's
    // header is the first row (20 px), its first stream the next (18 px).
    let plot_left = 190.0;
    let details_width = 340.0;
    let width = 1400.0 - plot_left - details_width;
    let _ = width;
    let click_y = h.get_by_label("Fit (F)").rect().bottom() + 8.0 + 24.0 + 20.0 + 9.0;
    let x = {
        let State::Loaded(l) = &h.state().state else {
            unreachable!()
        };
        let (v0, v1) = l.timeline.view;
        let frac = (((start + end) / 2) as f64 - v0) / (v1 - v0);
        // The central panel spans from the left edge to the details panel.
        let plot_w = h.get_by_label("Details").rect().left() - 16.0 - plot_left - 8.0;
        8.0 + plot_left + frac as f32 * plot_w
    };
    h.hover_at(eframe::egui::pos2(x, click_y));
    h.run_steps(1);
    h.event(eframe::egui::Event::PointerButton {
        pos: eframe::egui::pos2(x, click_y),
        button: eframe::egui::PointerButton::Primary,
        pressed: true,
        modifiers: Default::default(),
    });
    h.event(eframe::egui::Event::PointerButton {
        pos: eframe::egui::pos2(x, click_y),
        button: eframe::egui::PointerButton::Primary,
        pressed: false,
        modifiers: Default::default(),
    });
    h.run_steps(2);
    let State::Loaded(l) = &h.state().state else {
        unreachable!()
    };
    assert!(
        matches!(l.timeline.selection, Some(Selection::Op { device: 0, .. })),
        "{:?}",
        l.timeline.selection
    );
    h.get_by_label(&name);
    h.get_by_label(&nsys_explorer::report::format_ns(end - start));
}

#[test]
fn a_bad_file_shows_the_error_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.sqlite");
    std::fs::write(&path, b"this is not a database, just some bytes").unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    assert!(matches!(h.state().state, State::Failed { .. }));
    h.get_by_label_contains("not an SQLite database");
    h.get_by_label("Back to the start page").click();
    h.run_steps(2);
    assert!(matches!(h.state().state, State::Start));
}

#[test]
fn the_start_page_opens_the_sample_trace() {
    let mut h = harness(None);
    h.run_steps(2);
    h.get_by_label("Open sample trace").click();
    h.run_steps(1);
    wait_for_load(&mut h);
    let State::Loaded(l) = &h.state().state else {
        panic!("sample not loaded")
    };
    assert_eq!(l.trace.devices.len(), 4);
    assert!(l.trace.kernel_count() > 1000);
}
