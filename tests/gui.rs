//! The window driven as a person would, with egui_kittest: open a generated trace, wait for
//! the load, see one row group per GPU, zoom, click a kernel (and double-click it to zoom to
//! it), open a bad file, and use the start page's "Open sample trace".

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::ui::timeline::Selection;
use nsys_explorer::ui::{App, State};

mod common;

fn harness(file: Option<&Path>) -> Harness<'static, App> {
    let ctx = eframe::egui::Context::default();
    let app = App::new(file.map(Path::to_path_buf), &ctx, Vec::new());
    Harness::builder()
        .with_size([1400.0, 900.0])
        .build_ui_state(|ui, app: &mut App| app.ui(ui), app)
}

/// Steps the UI until the load and the analyses in flight have ended (or 60 s pass).
fn wait_for_load(h: &mut Harness<'static, App>) {
    let start = Instant::now();
    let busy = |state: &State| match state {
        State::Loading { .. } => true,
        State::Loaded(l) => l.job.is_some(),
        _ => false,
    };
    while busy(&h.state().state) && start.elapsed() < Duration::from_secs(60) {
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
    // GPU 0's header is the first row (20 px), its first stream the next (18 px).
    let (x, click_y) = {
        let State::Loaded(l) = &h.state().state else {
            unreachable!()
        };
        let plot = l.timeline.last_plot;
        let (v0, v1) = l.timeline.view;
        let frac = (((start + end) / 2) as f64 - v0) / (v1 - v0);
        (
            plot.left() + frac as f32 * plot.width(),
            plot.top() + 20.0 + 9.0,
        )
    };
    let kernel = eframe::egui::pos2(x, click_y);
    h.hover_at(kernel);
    h.run_steps(1);
    click_at(&mut h, kernel);
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

    // A double click zooms to the kernel, 5 % of its length on each side (the view had
    // 20 %).
    h.run_steps(2);
    double_click_at(&mut h, kernel);
    h.run_steps(2);
    let State::Loaded(l) = &h.state().state else {
        unreachable!()
    };
    let (v0, v1) = l.timeline.view;
    let len = (end - start) as f64;
    let want = (start as f64 - 0.05 * len, end as f64 + 0.05 * len);
    assert!(
        (v0 - want.0).abs() < len * 1e-3 && (v1 - want.1).abs() < len * 1e-3,
        "view {:?}, want {want:?}",
        (v0, v1)
    );
}

/// The primary button pressed and released at `pos`.
fn button_events(pos: eframe::egui::Pos2) -> [eframe::egui::Event; 2] {
    [true, false].map(|pressed| eframe::egui::Event::PointerButton {
        pos,
        button: eframe::egui::PointerButton::Primary,
        pressed,
        modifiers: Default::default(),
    })
}

/// Clicks at `pos` (a frame per event).
fn click_at(h: &mut Harness<'static, App>, pos: eframe::egui::Pos2) {
    button_events(pos).into_iter().for_each(|e| h.event(e));
}

/// Clicks twice at `pos` within one frame: the harness gives each queued event a frame of
/// its own, a quarter second apart, too slow for a double click.
fn double_click_at(h: &mut Harness<'static, App>, pos: eframe::egui::Pos2) {
    let clicks = [button_events(pos), button_events(pos)];
    h.input_mut().events.extend(clicks.into_iter().flatten());
    h.step();
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
    assert!(
        h.state().recent.is_empty(),
        "the sample is not a recent file"
    );
    h.get_by_label("SAMPLE TRACE");
}

/// A generated tiny trace, loaded and analysed, with its ground truth.
fn loaded_tiny(dir: &Path) -> (Harness<'static, App>, synth::GroundTruth) {
    let path = dir.join("tiny.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    assert!(loaded(&h).overview.is_some(), "analysed");
    (h, truth)
}

fn loaded<'a>(h: &'a Harness<'static, App>) -> &'a nsys_explorer::ui::Loaded {
    match &h.state().state {
        State::Loaded(l) => l,
        _ => panic!("not loaded"),
    }
}

#[test]
fn clicking_idle_of_gpu_0_overlays_its_idle_intervals_and_a_second_click_clears_it() {
    use nsys_explorer::analysis::breakdown::{State as DeviceState, state_intervals};
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    // GPU 0's block comes first in the summary panel.
    h.query_all_by_label_contains("idle  ")
        .next()
        .unwrap()
        .click();
    h.run_steps(2);
    let l = loaded(&h);
    let o = l.timeline.overlay.as_ref().expect("overlay added");
    assert_eq!((o.device, o.state), (0, DeviceState::Idle));
    let window = l.overview.as_ref().unwrap().devices[0].window;
    let expected = state_intervals(&l.trace.devices[0], window, DeviceState::Idle);
    assert!(!expected.0.is_empty());
    assert_eq!((&o.starts, &o.ends), (&expected.0, &expected.1));
    let idle: i64 = o.starts.iter().zip(&o.ends).map(|(s, e)| e - s).sum();
    assert_eq!(idle, l.overview.as_ref().unwrap().devices[0].breakdown.idle);
    // Listed under GPU 0's numbers, longest first.
    h.get_by_label_contains(&format!(
        "{} intervals, the {} longest",
        o.starts.len(),
        o.longest_first.len()
    ));
    let lengths: Vec<i64> = o
        .longest_first
        .iter()
        .map(|&i| o.ends[i as usize] - o.starts[i as usize])
        .collect();
    assert!(lengths.windows(2).all(|w| w[0] >= w[1]), "{lengths:?}");
    assert_eq!(lengths[0], o.longest);

    h.query_all_by_label_contains("idle  ")
        .next()
        .unwrap()
        .click();
    h.run_steps(2);
    assert!(loaded(&h).timeline.overlay.is_none(), "second click clears");
}

#[test]
fn clicking_the_longest_gap_brings_it_into_view_and_highlights_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let (start, end, label) = {
        let l = loaded(&h);
        let o = l.overview.as_ref().unwrap();
        let g = &o.gaps[o.longest_gaps(1)[0]];
        let label = nsys_explorer::report::format_ns(g.start_ns - l.timeline.full.0);
        (g.start_ns, g.start_ns + g.duration_ns, label)
    };
    // The table is sorted longest first: the first row's start cell.
    h.query_all_by_label(&label).next().unwrap().click();
    h.run_steps(2);
    let l = loaded(&h);
    let (v0, v1) = l.timeline.view;
    assert!(
        v0 <= start as f64 && v1 >= end as f64,
        "{v0}..{v1} holds {start}..{end}"
    );
    assert!(
        v1 - v0 < (end - start).max(100) as f64 * 10.0,
        "zoomed to it: {} for a {} gap",
        v1 - v0,
        end - start
    );
    assert_eq!(l.timeline.highlight.map(|h| (h.1, h.2)), Some((start, end)));

    // N steps to the next gap in the order (the second longest).
    h.key_press(eframe::egui::Key::N);
    h.run_steps(2);
    let l = loaded(&h);
    let o = l.overview.as_ref().unwrap();
    let second = &o.gaps[o.longest_gaps(2)[1]];
    assert_eq!(l.timeline.highlight.map(|h| h.1), Some(second.start_ns));
}

#[test]
fn filtering_the_gap_table_by_cause_shows_the_analysis_count() {
    use nsys_explorer::analysis::gaps::Cause;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let (total, counts) = {
        let o = loaded(&h).overview.as_ref().unwrap();
        let count = |c: Cause| o.gaps.iter().filter(|g| g.cause == c).count();
        (
            o.gaps.len(),
            [Cause::HostSync, Cause::HostBound].map(|c| (c, count(c))),
        )
    };
    h.get_by_label(&format!("{total} gaps shown of {total}"));
    for (cause, n) in counts {
        assert!(n > 0 && n < total, "{cause:?}: {n} of {total}");
        h.get_by_label(&format!("{} ({n})", cause.label())).click();
        h.run_steps(2);
        h.get_by_label(&format!("{n} gaps shown of {total}"));
        assert_eq!(loaded(&h).gaps.order.len(), n);
    }
}

#[test]
fn the_slowest_iteration_zooms_to_its_span_and_names_the_true_straggler() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    h.get_by_label("Iterations").click();
    h.run_steps(2);
    h.get_by_label_contains(&format!(
        "Slowest: iter {}:",
        truth.iterations.slowest_index
    ))
    .click();
    h.run_steps(2);
    let l = loaded(&h);
    let k = truth.iterations.slowest_index;
    let its = &l.overview.as_ref().unwrap().iterations;
    let spans = its.per_device.iter().filter_map(|d| d.spans[k]);
    let start = spans.clone().map(|w| w.start).min().unwrap();
    let end = spans.map(|w| w.end).max().unwrap();
    let (v0, v1) = l.timeline.view;
    let margin = (end - start) as f64 * 0.02;
    assert!(
        (v0 - (start as f64 - margin)).abs() < 1.0 && (v1 - (end as f64 + margin)).abs() < 1.0,
        "view {v0}..{v1}, span {start}..{end}"
    );
    assert_eq!(l.iterations.selected, Some(k));
    // The iteration's span is outlined on every GPU.
    let marks: Vec<(i64, i64)> = l
        .timeline
        .iteration_mark
        .iter()
        .map(|m| (m.1, m.2))
        .collect();
    let want: Vec<(i64, i64)> = its
        .per_device
        .iter()
        .filter_map(|d| d.spans[k])
        .map(|w| (w.start, w.end))
        .collect();
    assert_eq!(marks, want);
    assert_eq!(marks.len(), l.trace.devices.len());
    h.get_by_label_contains(&format!(
        "Straggler: GPU {} — its CPU thread was in {}",
        truth.iterations.straggler_device, truth.iterations.straggler_activity
    ));
}

#[test]
fn ctrl_f_finds_kernels_by_name_and_steps_through_them() {
    use eframe::egui::{Key, Modifiers};
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.hover_at(eframe::egui::pos2(900.0, 200.0));
    h.key_press_modifiers(Modifiers::COMMAND, Key::F);
    h.run_steps(2);
    // Ctrl+F focused the query field: type into it.
    h.event(eframe::egui::Event::Text("sendrecv".into()));
    h.run_steps(2);
    h.key_press(Key::Enter);
    h.run_steps(2);
    let l = loaded(&h);
    let n = l.timeline.search.matches.len();
    assert!(n > 0, "matches");
    let m = l.timeline.search.matches[0];
    assert_eq!(l.timeline.selection, Some(m.selection));
    let Some(Selection::Op { device, op }) = l.timeline.selection else {
        panic!("an op")
    };
    let ops = &l.trace.devices[device].streams[op.stream as usize].ops;
    let name = l.trace.strings.get(ops.name[op.op as usize]).to_lowercase();
    assert!(name.contains("sendrecv"), "{name}");
    let (v0, v1) = l.timeline.view;
    assert!(v0 <= m.start as f64 && v1 >= m.end as f64);
    h.get_by_label(&format!("1 of {n} matches"));
    h.get_by_label("Next").click();
    h.run_steps(2);
    h.get_by_label(&format!("2 of {n} matches"));
}

#[test]
fn an_nsys_rep_shows_the_export_command_and_opens_the_export_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("run.nsys-rep");
    std::fs::write(&report, b"not an export").unwrap();
    let mut h = harness(Some(&report));
    h.run_steps(2);
    h.get_by_label_contains("is an Nsight Systems report");
    h.get_by_label_contains("nsys export --type sqlite --output");
    h.get_by_label_contains("There is no run.sqlite beside it yet");

    synth::generate(
        &dir.path().join("run.sqlite"),
        SynthOptions::new(Preset::Tiny),
    )
    .unwrap();
    let mut h = harness(Some(&report));
    h.run_steps(2);
    h.get_by_label("Open run.sqlite").click();
    h.run_steps(1);
    wait_for_load(&mut h);
    assert_eq!(loaded(&h).path, dir.path().join("run.sqlite"));
}

#[test]
fn the_current_window_is_summarised_on_a_worker_and_shown() {
    use nsys_explorer::analysis::breakdown::{breakdown, pct};
    use nsys_explorer::analysis::{Window, intervals::device_window};
    use nsys_explorer::report::format_ns;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let window = {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        let w = device_window(&l.trace.devices[0]).unwrap();
        let half = Window::new(w.start, w.start + w.len() / 2);
        l.timeline.window = Some((half.start, half.end)); // as Shift+drag sets it
        half
    };
    let start = Instant::now();
    h.run_steps(1);
    while h.query_by_label("Analysing the window…").is_some()
        && start.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
    h.get_by_label_contains("Current window:");
    let b = breakdown(&loaded(&h).trace.devices[0], window);
    let expected = format!(
        "idle  {:.1} %  {}",
        pct(b.idle, b.total()),
        format_ns(b.idle)
    );
    assert!(
        h.query_all_by_label(&expected).next().is_some(),
        "summary of the window shows {expected}"
    );
}

#[test]
fn a_window_too_narrow_for_the_plot_draws_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    // Narrower than the side panel and the row labels: the plot has no width left.
    for width in [300.0, 120.0, 1400.0] {
        h.set_size(eframe::egui::vec2(width, 400.0));
        h.run_steps(3);
    }
    assert!(matches!(h.state().state, State::Loaded(_)));
}

/// Which tab of the bottom panel to click, by its label.
const TABS: [&str; 5] = ["Gaps", "Iterations", "Kernels", "NCCL", "Details"];

#[test]
fn the_timeline_keeps_its_height_while_the_pointer_moves_for_many_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    h.run_steps(3);
    let height = loaded(&h).timeline.last_plot.height();
    assert!(height > 200.0, "timeline {height} px of 900");
    // Every tab, the slowest iteration's drill-down open, the pointer over the timeline,
    // the panels and the plots: the plot may not lose a pixel.
    for tab in TABS {
        h.get_by_label(tab).click();
        h.run_steps(2);
        if tab == "Iterations" {
            h.get_by_label_contains(&format!(
                "Slowest: iter {}:",
                truth.iterations.slowest_index
            ))
            .click();
            h.run_steps(2);
        }
        for k in 0..60 {
            let x = 100.0 + (k * 97 % 1200) as f32;
            let y = 60.0 + (k * 53 % 820) as f32;
            h.hover_at(eframe::egui::pos2(x, y));
            h.step();
            let now = loaded(&h).timeline.last_plot.height();
            assert!(
                (now - height).abs() < 0.5,
                "tab {tab}, frame {k}: the timeline went from {height} to {now} px"
            );
        }
    }
}

#[test]
fn the_tab_panel_dragged_to_the_top_leaves_the_timeline_most_of_the_window() {
    use eframe::egui::{Event, PointerButton, pos2};
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.run_steps(2);
    let plot = loaded(&h).timeline.last_plot;
    // The panel's top edge lies a few px below the timeline's bottom.
    let edge = pos2(900.0, plot.bottom() + 8.0);
    h.hover_at(edge);
    h.run_steps(1);
    let press = |pressed| Event::PointerButton {
        pos: edge,
        button: PointerButton::Primary,
        pressed,
        modifiers: Default::default(),
    };
    h.event(press(true));
    for y in [400.0, 200.0, 60.0, 30.0] {
        h.event(Event::PointerMoved(pos2(900.0, y)));
    }
    h.event(Event::PointerButton {
        pos: pos2(900.0, 30.0),
        button: PointerButton::Primary,
        pressed: false,
        modifiers: Default::default(),
    });
    h.run_steps(3);
    let now = loaded(&h).timeline.last_plot.height();
    assert!(now >= 0.3 * 900.0, "the timeline kept {now} px of 900");
}

#[test]
fn fit_shows_the_whole_trace_cpu_side_included_and_the_ruler_counts_from_its_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.hover_at(eframe::egui::pos2(900.0, 300.0));
    h.key_press(eframe::egui::Key::W);
    h.key_press(eframe::egui::Key::F);
    h.run_steps(2);
    let l = loaded(&h);
    let (first, last) = l.trace.time_span().unwrap();
    let first_kernel = l
        .trace
        .devices
        .iter()
        .filter_map(|d| d.kernel_window())
        .map(|w| w.0)
        .min()
        .unwrap();
    assert!(
        first < first_kernel,
        "the CPU side starts before the first kernel"
    );
    assert_eq!(l.timeline.view, (first as f64, last as f64));
    assert_eq!(l.timeline.full.0, first, "time 0 is the first event");
}

#[test]
fn zooming_to_a_gap_stays_inside_the_trace_and_scrolls_its_gpu_into_view() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    // Sort by GPU, descending: the first row is a gap of the last GPU, whose rows are below
    // the fold of a 900 px window.
    h.get_by_label("GPU").click();
    h.run_steps(2);
    h.get_by_label("GPU ^").click();
    h.run_steps(2);
    let (start, end, device) = {
        let l = loaded(&h);
        let o = l.overview.as_ref().unwrap();
        let g = &o.gaps[l.gaps.order[0] as usize];
        (g.start_ns, g.start_ns + g.duration_ns, g.device_id())
    };
    // The rows scrolled down to the CPU threads: the GPUs are out of view.
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.timeline.scroll_y = 600.0;
    }
    h.run_steps(1);
    h.key_press(eframe::egui::Key::N);
    h.run_steps(2);
    let l = loaded(&h);
    let index = l.trace.devices.iter().position(|d| d.id == device).unwrap();
    assert_eq!(index, l.trace.devices.len() - 1);
    assert_eq!(l.timeline.highlight, Some((index, start, end)));
    let (v0, v1) = l.timeline.view;
    let (lo, hi) = l.timeline.full;
    assert!(
        v0 >= lo as f64 && v1 <= hi as f64,
        "view {v0}..{v1} inside {lo}..{hi}"
    );
    // Its rows are scrolled to the top of the plot.
    let rows = l.timeline.rows(&l.trace);
    let above: f32 = rows
        .iter()
        .take_while(|r| **r != nsys_explorer::ui::timeline::RowKind::GpuHeader(index))
        .map(|r| r.height())
        .sum();
    assert!(above > 0.0);
    assert_eq!(l.timeline.scroll_y, above);
}

/// A copy of a real export with its GPU tables dropped: what an export of a run captured
/// without CUDA GPU tracing looks like (API calls, NVTX, no kernels).
fn api_only_export(dir: &Path) -> std::path::PathBuf {
    let real = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("2gpu-nccl-flashattn"))
        .unwrap();
    let path = dir.join("api-only.sqlite");
    std::fs::copy(&real, &path).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    for t in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        db.execute(&format!("DROP TABLE {t}"), []).unwrap();
    }
    path
}

#[test]
fn an_api_only_export_opens_on_the_whole_trace_and_says_what_it_has() {
    use eframe::egui::{Key, Modifiers};
    let dir = tempfile::tempdir().unwrap();
    let path = api_only_export(dir.path());
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    let l = loaded(&h);
    assert!(l.trace.devices.is_empty());
    let (first, last) = l.trace.time_span().unwrap();
    assert_eq!(
        l.timeline.view,
        (first as f64, last as f64),
        "the first view is the whole trace"
    );
    h.get_by_label("No GPU activity recorded");
    h.get_by_label_contains("The export has no kernel table");
    h.get_by_label("CPU time in synchronising calls");
    h.get_by_label("Iterations").click();
    h.run_steps(2);
    h.get_by_label_contains("No GPU activity recorded, so no iteration can be measured");
    assert!(
        h.query_by_label_contains("no synchronising calls")
            .is_none()
    );
    // Ctrl+F finds API calls.
    h.hover_at(eframe::egui::pos2(900.0, 200.0));
    h.key_press_modifiers(Modifiers::COMMAND, Key::F);
    h.run_steps(2);
    h.event(eframe::egui::Event::Text("cudaLaunchKernel".into()));
    h.run_steps(2);
    h.key_press(Key::Enter);
    h.run_steps(2);
    let l = loaded(&h);
    assert!(!l.timeline.search.matches.is_empty());
    assert!(
        matches!(l.timeline.selection, Some(Selection::Call { .. })),
        "{:?}",
        l.timeline.selection
    );
    // Escape closes Find.
    h.key_press(Key::Escape);
    h.run_steps(2);
    assert!(!loaded(&h).timeline.search.open);
}

#[test]
fn ctrl_drag_measures_a_span_and_escape_clears_it() {
    use eframe::egui::{Event, Modifiers, PointerButton, pos2};
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.run_steps(2);
    let (plot, view) = {
        let l = loaded(&h);
        (l.timeline.last_plot, l.timeline.view)
    };
    let y = plot.top() + 200.0;
    let (x0, x1) = (plot.left() + 100.0, plot.left() + 400.0);
    let t_of = |x: f32| view.0 + ((x - plot.left()) / plot.width()) as f64 * (view.1 - view.0);
    h.hover_at(pos2(x0, y));
    h.run_steps(1);
    let ctrl = Modifiers::COMMAND;
    h.event(Event::ModifiersChanged(ctrl));
    h.event(Event::PointerButton {
        pos: pos2(x0, y),
        button: PointerButton::Primary,
        pressed: true,
        modifiers: ctrl,
    });
    for x in [x0 + 50.0, x0 + 150.0, x1] {
        h.event(Event::PointerMoved(pos2(x, y)));
    }
    h.event(Event::PointerButton {
        pos: pos2(x1, y),
        button: PointerButton::Primary,
        pressed: false,
        modifiers: ctrl,
    });
    h.event(Event::ModifiersChanged(Modifiers::NONE));
    h.run_steps(2);
    let l = loaded(&h);
    let (a, b) = l.timeline.measure.expect("a measured span");
    let px = (view.1 - view.0) / plot.width() as f64;
    assert!(
        (a - t_of(x0)).abs() < 2.0 * px && (b - t_of(x1)).abs() < 2.0 * px,
        "{a}..{b}"
    );
    assert_eq!(l.timeline.view, view, "a measure does not pan");
    h.key_press(eframe::egui::Key::Escape);
    h.run_steps(2);
    assert!(loaded(&h).timeline.measure.is_none());
}

#[test]
fn f1_opens_the_keyboard_help() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    assert!(h.query_by_label("Keys and mouse").is_none());
    h.key_press(eframe::egui::Key::F1);
    h.run_steps(2);
    h.get_by_label("Keys and mouse");
    h.get_by_label("Ctrl + drag");
    h.key_press(eframe::egui::Key::F1);
    h.run_steps(2);
    assert!(!h.state().help_open);
}

#[test]
fn the_gap_table_follows_the_current_window() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let (window, inside, total) = {
        let l = loaded(&h);
        let o = l.overview.as_ref().unwrap();
        let (a, b) = l.timeline.full;
        let w = (a, a + (b - a) / 3);
        let inside = o
            .gaps
            .iter()
            .filter(|g| g.start_ns < w.1 && g.end_ns() > w.0)
            .count();
        (w, inside, o.gaps.len())
    };
    assert!(inside > 0 && inside < total);
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.timeline.window = Some(window); // as Shift+drag sets it
    }
    h.run_steps(3);
    h.get_by_label(&format!(
        "{inside} gaps shown of {total} (in the current window)"
    ));
}

#[test]
fn enter_in_the_marker_field_applies_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.get_by_label("Iterations").click();
    h.run_steps(2);
    h.get_by_label("marker").click();
    h.run_steps(1);
    h.event(eframe::egui::Event::Text("cfg_cond".into()));
    h.run_steps(1);
    h.key_press(eframe::egui::Key::Enter);
    let start = Instant::now();
    while h
        .query_by_label_contains("marker: cfg_cond (given)")
        .is_none()
        && start.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
    h.get_by_label_contains("marker: cfg_cond (given)");
}

#[test]
fn a_remembered_split_too_tall_for_the_window_still_leaves_the_timeline_its_room() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let mut h = harness(Some(&path));
    // As if an earlier session had dragged the tabs to the top of a taller screen.
    h.state_mut().split.tabs_height = 5_000.0;
    h.state_mut().split.summary_width = 5_000.0;
    wait_for_load(&mut h);
    let plot = loaded(&h).timeline.last_plot;
    assert!(
        plot.height() >= 0.3 * 900.0,
        "timeline {} px of 900",
        plot.height()
    );
    assert!(
        plot.width() >= 0.4 * 1400.0,
        "timeline {} px of 1400",
        plot.width()
    );
    assert_eq!(h.state().split.tabs_height, 5_000.0, "the choice is kept");
}

#[test]
fn the_memory_and_nvtx_tabs_list_what_the_analyses_found_and_nvtx_rows_mark_instances() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    // The longest gaps are the JIT compilations: the table names them.
    assert_eq!(
        h.query_all_by_label_contains(
            "host_bound: in KernelExecutor::compileFusion > nvrtc_compile"
        )
        .count(),
        4,
        "one per rank"
    );
    h.get_by_label("Memory").click();
    h.run_steps(2);
    assert_eq!(h.query_all_by_label("HtoD").count(), 4, "a row per GPU");
    h.get_by_label("NVTX").click();
    h.run_steps(2);
    h.get_by_label("denoising_step_#").click();
    h.run_steps(3);
    let l = loaded(&h);
    let steps = truth.iterations.count * l.trace.devices.len();
    assert_eq!(
        l.timeline.search.matches.len(),
        steps,
        "every step range marked"
    );
    assert!(matches!(
        l.timeline.selection,
        Some(Selection::Range { .. })
    ));
}
