//! The timeline driven as a person would, with egui_kittest: load, zoom, click and
//! double-click, measure, fit, search, and a layout that keeps the timeline its room over
//! many frames.

use egui_kittest::kittest::Queryable;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::trace::DeviceIndex;
use nsys_explorer::ui::State;
use nsys_explorer::ui::timeline::Selection;

mod common;
mod gui_support;

use gui_support::*;

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
    // S zooms out again with the pointer over the summary panel, away from the timeline:
    // keys move the view wherever the pointer is, while no text field has the keyboard.
    h.hover_at(eframe::egui::pos2(40.0, 300.0));
    h.run_steps(2);
    h.key_press(eframe::egui::Key::S);
    h.run_steps(2);
    let State::Loaded(loaded) = &h.state().state else {
        unreachable!()
    };
    let (s2, e2) = loaded.timeline.view;
    assert!(
        (e2 - s2) > (e1 - s1) * 1.05,
        "zoomed out: {} → {}",
        e1 - s1,
        e2 - s2
    );
    h.hover_at(timeline_point);
    h.run_steps(2);

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
        let plot = l.timeline.frame.last_plot;
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
        matches!(
            l.timeline.selection,
            Some(Selection::Op {
                device: DeviceIndex(0),
                ..
            })
        ),
        "{:?}",
        l.timeline.selection
    );
    h.get_by_label(&name);
    h.get_by_label(&nsys_explorer::format::format_ns(end - start));

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

#[test]
fn the_timeline_keeps_its_height_while_the_pointer_moves_for_many_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    h.run_steps(3);
    let height = loaded(&h).timeline.frame.last_plot.height();
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
            let now = loaded(&h).timeline.frame.last_plot.height();
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
    let plot = loaded(&h).timeline.frame.last_plot;
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
    let now = loaded(&h).timeline.frame.last_plot.height();
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
    open_tab(&mut h, "Gaps");
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
    let index = l.trace.device_index(device).unwrap();
    assert_eq!(index.0, l.trace.devices.len() - 1);
    assert_eq!(l.timeline.marks.highlight, Some((index, start, end)));
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
        .take_while(|r| **r != nsys_explorer::ui::timeline::RowKind::GpuHeader(index.0))
        .map(|r| r.height())
        .sum();
    assert!(above > 0.0);
    assert_eq!(l.timeline.scroll_y, above);
}

#[test]
fn ctrl_drag_measures_a_span_and_escape_clears_it() {
    use eframe::egui::{Event, Modifiers, PointerButton, pos2};
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.run_steps(2);
    let (plot, view) = {
        let l = loaded(&h);
        (l.timeline.frame.last_plot, l.timeline.view)
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
    let (a, b) = l.timeline.marks.measure.expect("a measured span");
    let px = (view.1 - view.0) / plot.width() as f64;
    assert!(
        (a - t_of(x0)).abs() < 2.0 * px && (b - t_of(x1)).abs() < 2.0 * px,
        "{a}..{b}"
    );
    assert_eq!(l.timeline.view, view, "a measure does not pan");
    h.key_press(eframe::egui::Key::Escape);
    h.run_steps(2);
    assert!(loaded(&h).timeline.marks.measure.is_none());
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
fn a_remembered_split_too_tall_for_the_window_still_leaves_the_timeline_its_room() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let mut h = harness(Some(&path));
    // As if an earlier session had dragged the tabs to the top of a taller screen.
    h.state_mut().split.tabs_height = 5_000.0;
    h.state_mut().split.summary_width = 5_000.0;
    wait_for_load(&mut h);
    let plot = loaded(&h).timeline.frame.last_plot;
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
fn help_developer_profile_lists_the_load_phases_analyses_and_frames_timed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    assert!(
        h.query_by_label("Debug").is_none(),
        "no Debug menu for every user"
    );
    h.get_by_label("Help").click();
    h.run_steps(2);
    // The version and where the cache lives, under Help.
    h.get_by_label_contains(&format!("nsys-explorer {}", env!("CARGO_PKG_VERSION")));
    h.get_by_label_contains("Cache: ");
    h.get_by_label("Developer").click();
    h.run_steps(2);
    h.get_by_label("Profile").click();
    h.run_steps(3);
    for scope in [
        "read events",
        "analyses (all)",
        "analysis: iterations",
        "timeline frame",
    ] {
        h.get_by_label(scope);
    }
}

#[test]
fn os_runtime_calls_get_a_row_and_the_gap_finder_names_them() {
    use nsys_explorer::ui::timeline::RowKind;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    {
        let l = loaded(&h);
        let rows = l.timeline.rows(&l.trace);
        for (t, th) in l.trace.threads.iter().enumerate() {
            if th.api.is_empty() {
                // The event handler (poll all run long) starts folded.
                assert!(l.timeline.folds.threads[t], "{} folded", th.name);
            } else {
                assert!(rows.contains(&RowKind::Osrt { thread: t }), "{}", th.name);
            }
        }
    }
    // The gaps after each step's sync, longest first: their cause names the wait.
    open_tab(&mut h, "Gaps");
    assert!(
        h.query_all_by_label_contains("pthread_cond_wait()")
            .next()
            .is_some(),
        "the cause column names the OS runtime call"
    );
}

/// Zooming out stops at the trace's extent (no time before its first event), and the rows
/// scroll no further than the last one: forty notches down come back with one notch up.
#[test]
fn zooming_out_and_scrolling_stop_at_the_traces_edges() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let (full, zoomed_out) = {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        let full = l.timeline.full;
        let at = full.0 as f64;
        for _ in 0..60 {
            l.timeline.zoom(1.5, at);
        }
        (full, l.timeline.view)
    };
    let extent = (full.1 - full.0) as f64;
    assert!(
        zoomed_out.0 >= full.0 as f64 - 0.021 * extent
            && zoomed_out.1 <= full.1 as f64 + 0.021 * extent,
        "view {zoomed_out:?} against the trace's {full:?}"
    );
    // Scrolled far past the last row: held at the last row once drawn.
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.timeline.scroll_y = 1.0e6;
    }
    h.run_steps(2);
    let State::Loaded(l) = &h.state().state else {
        unreachable!()
    };
    assert!(
        l.timeline.scroll_y < 2_000.0,
        "scrolled to {} px, past the rows",
        l.timeline.scroll_y
    );
}

/// Keys as in Nsight and Perfetto: W zooms a quarter per press, ←/→ pan a tenth of the view,
/// ↓/↑ move a row; held, the view keeps moving (not one step per frame).
#[test]
fn arrow_keys_pan_and_move_rows_and_w_zooms_a_quarter_per_press() {
    use eframe::egui::Key;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.hover_at(eframe::egui::pos2(900.0, 300.0));
    h.run_steps(2);
    // Half the trace in view first, so that panning has room both ways.
    h.key_press(Key::W);
    h.key_press(Key::W);
    h.run_steps(1);
    let (s0, e0) = loaded(&h).timeline.view;
    h.key_press(Key::W);
    h.run_steps(1);
    let (s1, e1) = loaded(&h).timeline.view;
    let ratio = (e1 - s1) / (e0 - s0);
    assert!(
        (ratio - 0.75).abs() < 0.01,
        "one press zooms to {ratio} of the view"
    );
    h.key_press(Key::ArrowRight);
    h.run_steps(1);
    let (s2, e2) = loaded(&h).timeline.view;
    let moved = (s2 - s1) / (e1 - s1);
    assert!((moved - 0.1).abs() < 0.01, "→ pans {moved} of the view");
    assert!(((e2 - s2) - (e1 - s1)).abs() < 1.0);
    h.key_press(Key::ArrowLeft);
    h.run_steps(1);
    let (s3, _) = loaded(&h).timeline.view;
    assert!((s3 - s1).abs() < (e1 - s1) * 0.001, "← pans back");
    let y0 = loaded(&h).timeline.scroll_y;
    h.key_press(Key::ArrowDown);
    h.run_steps(1);
    let y1 = loaded(&h).timeline.scroll_y;
    assert!(y1 > y0, "↓ moves down a row: {y0} → {y1}");
    h.key_press(Key::ArrowUp);
    h.run_steps(1);
    assert_eq!(loaded(&h).timeline.scroll_y, y0, "↑ back");
}

/// In a small window (1024×680) the timeline keeps about half the height by default, and
/// the What-if tab's Replay button stays inside the window.
#[test]
fn a_small_window_keeps_half_for_the_timeline_and_every_control_in_reach() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    nsys_explorer::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    let ctx = eframe::egui::Context::default();
    let app = nsys_explorer::ui::App::new(Some(path.clone()), &ctx, Vec::new());
    let mut h = egui_kittest::Harness::builder()
        .with_size([1024.0, 680.0])
        .build_ui_state(|ui, app: &mut nsys_explorer::ui::App| app.ui(ui), app);
    wait_for_load(&mut h);
    h.run_steps(2);
    let plot = loaded(&h).timeline.frame.last_plot;
    assert!(
        plot.height() >= 0.44 * 680.0,
        "the timeline's plot: {} px of 680",
        plot.height()
    );
    h.get_by_label("What if").click();
    h.run_steps(3);
    let replay = h.get_by_label("Replay");
    let r = replay.rect();
    assert!(
        r.right() <= 1024.0 && r.bottom() <= 680.0,
        "Replay at {r:?}"
    );
}
