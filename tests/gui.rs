//! The window's panels driven as a person would, with egui_kittest: the start page, bad
//! files, the gap table, iterations, the current window's summary, the Memory and NVTX tabs.

use std::time::{Duration, Instant};

use egui_kittest::kittest::Queryable;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::trace::DeviceIndex;
use nsys_explorer::ui::State;
use nsys_explorer::ui::timeline::Selection;

mod common;
mod gui_support;

use gui_support::*;

#[test]
fn a_bad_file_shows_the_error_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.sqlite");
    std::fs::write(&path, b"this is not a database, just some bytes").unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    assert!(matches!(h.state().state, State::Failed { .. }));
    assert!(
        !h.state().recent.contains(&path),
        "a file that failed to open is no recent file"
    );
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
    // Written to a folder of its own that goes with the window.
    let folder = l.path.parent().unwrap().to_path_buf();
    assert!(folder.is_dir());
    drop(h);
    assert!(!folder.exists(), "{} left behind", folder.display());
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
    let o = l.timeline.marks.overlay.as_ref().expect("overlay added");
    assert_eq!((o.device, o.state), (DeviceIndex(0), DeviceState::Idle));
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
    assert!(
        loaded(&h).timeline.marks.overlay.is_none(),
        "second click clears"
    );
    // Escape clears whatever the panels marked, all at once.
    h.query_all_by_label_contains("idle  ")
        .next()
        .unwrap()
        .click();
    h.run_steps(2);
    assert!(loaded(&h).timeline.marks.overlay.is_some());
    h.key_press(eframe::egui::Key::Escape);
    h.run_steps(2);
    assert!(
        loaded(&h).timeline.marks.overlay.is_none(),
        "Escape clears the overlay"
    );
}

#[test]
fn clicking_the_longest_gap_brings_it_into_view_and_highlights_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    open_tab(&mut h, "Gaps");
    let (start, end, label) = {
        let l = loaded(&h);
        let o = l.overview.as_ref().unwrap();
        let g = &o.gaps[o.longest_gaps(1)[0]];
        let label = nsys_explorer::format::format_ns(g.start_ns - l.timeline.full.0);
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
    assert_eq!(
        l.timeline.marks.highlight.map(|h| (h.1, h.2)),
        Some((start, end))
    );

    // N steps to the next gap in the order (the second longest).
    h.key_press(eframe::egui::Key::N);
    h.run_steps(2);
    let l = loaded(&h);
    let o = l.overview.as_ref().unwrap();
    let second = &o.gaps[o.longest_gaps(2)[1]];
    assert_eq!(
        l.timeline.marks.highlight.map(|h| h.1),
        Some(second.start_ns)
    );
}

#[test]
fn filtering_the_gap_table_by_cause_shows_the_analysis_count() {
    use nsys_explorer::analysis::gaps::Cause;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    open_tab(&mut h, "Gaps");
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

/// The cause counts follow the other filters (here one GPU and a minimum), and the
/// Recurring view counts each pattern over its gaps that pass them, counted here apart.
#[test]
fn cause_counts_and_recurring_patterns_follow_the_gpu_and_minimum_filters() {
    use nsys_explorer::analysis::gaps::Cause;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    open_tab(&mut h, "Gaps");
    let (device, min) = {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        let device = l.trace.devices[1].id;
        l.gaps.filter.device = Some(device);
        l.gaps.filter.min_duration_ns = 20_000;
        (device, 20_000)
    };
    h.run_steps(3);
    let l = loaded(&h);
    let o = l.overview.as_ref().unwrap();
    let kept =
        |g: &&nsys_explorer::analysis::gaps::Gap| g.device_id() == device && g.duration_ns >= min;
    let host_sync = o
        .gaps
        .iter()
        .filter(kept)
        .filter(|g| g.cause == Cause::HostSync)
        .count();
    let all = o.gaps.iter().filter(kept).count();
    assert!(all > 0 && all < o.gaps.len());
    assert_eq!(l.gaps.counts.any_cause, all);
    assert_eq!(l.gaps.counts.causes[0], host_sync);
    h.get_by_label(&format!("any cause ({all})"));
    h.get_by_label(&format!("{} ({host_sync})", Cause::HostSync.label()));
    for &(p, count, total, _) in &l.gaps.counts.patterns {
        let members: Vec<_> = o.recurring[p]
            .members
            .iter()
            .map(|&i| &o.gaps[i as usize])
            .filter(kept)
            .collect();
        assert_eq!(count, members.len());
        assert_eq!(total, members.iter().map(|g| g.duration_ns).sum::<i64>());
    }
    assert!(!l.gaps.counts.patterns.is_empty());
    // The Recurring view lists the filtered patterns' counts.
    h.get_by_label("Recurring").click();
    h.run_steps(2);
    let (_, count, _, _) = loaded(&h)
        .gaps
        .counts
        .patterns
        .iter()
        .max_by_key(|p| p.2)
        .copied()
        .unwrap();
    assert!(h.query_all_by_label(&count.to_string()).next().is_some());
}

/// The Iterations tab, then its "Slowest: iter K" button, as a person clicks them.
fn open_the_slowest_iteration(
    h: &mut egui_kittest::Harness<'static, nsys_explorer::ui::App>,
    k: usize,
) {
    h.get_by_label("Iterations").click();
    h.run_steps(2);
    h.get_by_label_contains(&format!("Slowest: iter {k}:"))
        .click();
    h.run_steps(2);
}

#[test]
fn the_slowest_iteration_zooms_to_its_span_and_names_the_true_straggler() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    open_the_slowest_iteration(&mut h, truth.iterations.slowest_index);
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
        .marks
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
    // The drill-down comes from a worker, a few frames later.
    wait_for_load(&mut h);
    h.get_by_label_contains(&format!(
        "Straggler: GPU {} — its CPU thread was in {}",
        truth.iterations.straggler_device, truth.iterations.straggler_activity
    ));
}

#[test]
fn an_opened_iteration_draws_its_critical_path_and_an_item_on_it_goes_there() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    open_the_slowest_iteration(&mut h, truth.iterations.slowest_index);
    wait_for_load(&mut h);
    h.run_steps(2);
    h.get_by_label_contains("Critical path:");
    let l = loaded(&h);
    let path = l
        .iterations
        .path
        .as_ref()
        .expect("the path is worked out with the drill-down");
    // The line over the timeline is the path's segments, in time order.
    let marks = &l.timeline.marks.critical_path;
    assert!(!marks.is_empty());
    assert!(marks.windows(2).all(|w| w[0].end <= w[1].start));
    assert_eq!(marks.first().unwrap().start, path.path.start_ns);
    // The straggler's stall is the CPU time on the path, in its branch's range: a click
    // goes to it on the straggler's GPU.
    let stall = path.top_cpu[0].clone();
    assert_eq!(stall.name, "cfg_uncond");
    let (device, start, end) = stall.first.unwrap();
    // Below the fold of the drill-down: clicked as a screen reader does.
    h.get_by_label_contains("CPU in cfg_uncond ×")
        .click_accesskit();
    h.run_steps(2);
    let l = loaded(&h);
    assert_eq!(l.timeline.marks.highlight, Some((device, start, end)));
    assert_eq!(
        l.trace.devices[device.0].id.0,
        truth.iterations.straggler_device
    );
    let (v0, v1) = l.timeline.view;
    assert!(
        v0 <= start as f64 && v1 >= end as f64,
        "the view {v0}..{v1} shows it"
    );
}

#[test]
fn an_nsys_rep_without_nsys_shows_the_export_command_and_a_newer_export_beside_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    // No nsys here, whatever the machine has installed.
    let no_nsys = dir.path().join("no-such-nsys");
    nsys_explorer::export::use_nsys(&no_nsys);
    let report = dir.path().join("run.nsys-rep");
    std::fs::write(&report, b"not an export").unwrap();
    let mut h = harness(Some(&report));
    h.run_steps(2);
    h.get_by_label_contains("is an Nsight Systems report");
    h.get_by_label_contains("nsys export --type sqlite --include-blobs=true --output");
    h.get_by_label_contains("No `nsys` was found");
    h.get_by_label_contains(&no_nsys.display().to_string());
    h.get_by_label_contains("There is no run.sqlite beside it yet");

    // An export older than the report: offered, not opened on its own.
    let sqlite = dir.path().join("run.sqlite");
    synth::generate(&sqlite, SynthOptions::new(Preset::Tiny)).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .append(true)
        .open(&sqlite)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let mut h = harness(Some(&report));
    h.run_steps(2);
    h.get_by_label("Open run.sqlite").click();
    h.run_steps(1);
    wait_for_load(&mut h);
    assert_eq!(loaded(&h).path, sqlite);

    // A newer one: opened at once, and the window says which file it reads.
    std::fs::File::options()
        .append(true)
        .open(&sqlite)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    let mut h = harness(Some(&report));
    wait_for_load(&mut h);
    assert_eq!(loaded(&h).path, report);
    h.get_by_label_contains("Read as SQLite: the export beside the report");
}

#[test]
fn the_current_window_is_summarised_on_a_worker_and_shown() {
    use nsys_explorer::analysis::breakdown::{breakdown, pct};
    use nsys_explorer::analysis::{Window, intervals::device_window};
    use nsys_explorer::format::format_ns;
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
        && start.elapsed() < Duration::from_secs(120)
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
fn the_gap_table_follows_the_current_window() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    open_tab(&mut h, "Gaps");
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
        && start.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
    h.get_by_label_contains("marker: cfg_cond (given)");
}

#[test]
fn the_memory_and_nvtx_tabs_list_what_the_analyses_found_and_nvtx_rows_mark_instances() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    open_tab(&mut h, "Gaps");
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

#[test]
fn comparing_two_runs_shows_both_timelines_a_diff_tab_and_marks_a_kernel_in_both() {
    use nsys_explorer::ui::Tab;
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.sqlite"),
        dir.path().join("after.sqlite"),
    );
    synth::generate(&before, SynthOptions::new(Preset::Tiny)).unwrap();
    let flash = synth::kernel_index("flash_fwd_kernel").unwrap();
    synth::generate(
        &after,
        SynthOptions {
            scale_kernel: Some((flash, 0.5)),
            ..SynthOptions::new(Preset::Tiny)
        },
    )
    .unwrap();
    let mut h = harness(Some(&before));
    // As `--compare` does: asked before the first run is in.
    h.state_mut().compare_with(after.clone());
    wait_for_load(&mut h);
    wait_for_load(&mut h);
    assert_eq!(loaded(&h).tab, Tab::Diff);
    h.get_by_label_contains("before: before.sqlite");
    h.get_by_label_contains("after: after.sqlite (its clock shifted");
    h.get_by_label_contains("The median iteration is");
    h.get_by_label_contains("faster after");
    // The same step of both runs lines up: the second view is the first shifted by the
    // offset between their median iterations.
    let (first_view, second_view, offset) = {
        let l = loaded(&h);
        let c = l.compare.as_ref().unwrap();
        let other = c.ready().unwrap();
        (l.timeline.view, other.timeline.view, c.offset_ns)
    };
    assert_eq!(second_view.0 - first_view.0, offset as f64);
    assert_eq!(second_view.1 - first_view.1, offset as f64);
    // A kernel clicked in the Diff tab is searched in both timelines.
    h.get_by_label("flash_fwd_kernel").click();
    h.run_steps(4);
    let l = loaded(&h);
    let other = l.compare.as_ref().unwrap().ready().unwrap();
    for (which, search) in [
        ("first", &l.timeline.search),
        ("second", &other.timeline.search),
    ] {
        assert_eq!(search.query, "flash_fwd_kernel", "{which}");
        assert_eq!(
            search.matches.len(),
            128,
            "{which}: every flash kernel of 4 GPUs"
        );
    }
    // The iteration plot overlays the compared run.
    h.get_by_label("Iterations").click();
    h.run_steps(3);
    h.get_by_label_contains("compared run");
    // And comparing stops on request: one timeline, no Diff tab.
    h.get_by_label("Stop comparing").click();
    h.run_steps(3);
    assert!(loaded(&h).compare.is_none());
    assert!(h.query_by_label("Diff").is_none());
}

#[test]
fn several_rank_files_open_as_one_trace_and_the_ranks_heatmap_opens_an_iteration() {
    use nsys_explorer::ui::Tab;
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    let mut h = harness(None);
    let ctx = h.ctx.clone();
    // As `nsys-explorer DIR` or dropping the folder does.
    h.state_mut()
        .open_paths(vec![dir.path().to_path_buf()], &ctx);
    wait_for_load(&mut h);
    {
        let l = loaded(&h);
        assert_eq!(l.files.len(), 4);
        assert_eq!(l.trace.devices.len(), 4);
        for (f, t) in l.files.iter().zip(&truth.files) {
            assert!((f.offset_ns - t.offset_ns).abs() <= 50_000, "{}", f.name);
        }
    }
    h.get_by_label_contains("4 files, on the first one's clock");
    h.get_by_label("rank02.sqlite");
    h.get_by_label_contains("rank03.sqlite:0 · NVIDIA");
    // The Memory table names each GPU by its file, as every other view does.
    h.get_by_label("Memory").click();
    h.run_steps(3);
    assert!(
        h.query_all_by_label("rank01.sqlite:0").next().is_some(),
        "FILE:ID in the Memory table"
    );
    assert!(h.query_all_by_label("GPU 0").next().is_none());
    // The heatmap: one row per rank; a click on a cell opens that iteration.
    h.get_by_label("Ranks").click();
    h.run_steps(3);
    let text = h.get_by_label_contains("Iteration time of each GPU");
    let r = text.rect();
    let y = r.bottom() + 8.0 + 18.0 * 1.5; // the second rank's row
    let x = r.left() + 170.0 + 40.0;
    click_at(&mut h, eframe::egui::pos2(x, y));
    h.run_steps(3);
    let l = loaded(&h);
    assert_eq!(l.tab, Tab::Iterations);
    assert!(l.iterations.selected.is_some());
    assert_eq!(
        l.timeline.marks.iteration_mark.len(),
        4,
        "the iteration outlined on every rank"
    );
    // The iteration plot's legend names the GPUs by their files too.
    h.get_by_label("— rank01.sqlite:0");
}

#[test]
fn the_what_if_tab_replays_a_change_and_draws_the_predicted_idle_over_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.get_by_label("What if").click();
    h.run_steps(2);
    // Replay with nothing picked: told to pick a change.
    h.get_by_label("Replay").click();
    h.run_steps(2);
    h.get_by_label_contains("Pick a change first");
    if let State::Loaded(l) = &mut h.state_mut().state {
        l.what_if.remove_sync = "aten::item".into();
    }
    h.get_by_label("Replay").click();
    h.run_steps(2);
    wait_for_load(&mut h);
    h.get_by_label_contains("the model reproduces this trace to 0.000 %");
    {
        let l = loaded(&h);
        let a = l.what_if.answer.as_ref().unwrap();
        for (m, p) in a.what_if.measured.iter().zip(&a.what_if.predicted) {
            assert!(
                p.total_ns < m.total_ns,
                "removing the step sync shortens the run"
            );
        }
    }
    h.get_all_by_label("predicted idle").next().unwrap().click();
    h.run_steps(2);
    let l = loaded(&h);
    let overlay = l
        .timeline
        .marks
        .overlay
        .as_ref()
        .expect("the ghost is drawn");
    assert_eq!(overlay.device, DeviceIndex(0));
    assert!(!overlay.starts.is_empty());
}

#[test]
fn per_rank_report_summaries_open_side_by_side_and_a_row_opens_its_export() {
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    // As a Slurm array would: one `report --json` per rank file.
    let mut summaries = Vec::new();
    for f in &truth.files {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
            .env("XDG_CACHE_HOME", common::test_cache_home())
            .arg("report")
            .arg(&f.path)
            .arg("--json")
            .output()
            .unwrap();
        assert!(out.status.success());
        let json = f.path.with_extension("json");
        std::fs::write(&json, out.stdout).unwrap();
        summaries.push(json);
    }
    let mut h = harness(None);
    let ctx = h.ctx.clone();
    h.state_mut().open_paths(summaries, &ctx);
    h.run_steps(3);
    h.get_by_label("4 GPUs in 4 summaries");
    let State::Summaries(rows) = &h.state().state else {
        panic!("the summaries page")
    };
    // The straggler's rank holds the slowest iteration on every rank (they wait for it),
    // and each row knows its export.
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter()
            .all(|r| r.slowest.map(|s| s.0) == Some(truth.run.iterations.slowest_index))
    );
    assert!(
        rows.iter()
            .all(|r| r.export.is_file() && r.nccl_wait_pct.is_none())
    );
    h.get_all_by_label("Open").next().unwrap().click();
    h.run_steps(2);
    wait_for_load(&mut h);
    assert!(matches!(h.state().state, State::Loaded(_)));
}

/// Rank summaries (`summarize`) open as a job: the straggler's finding, the ranks ×
/// iterations heatmap (its cell the hottest), each GPU's wait, and Open loads a rank's
/// export in full.
#[test]
fn rank_summaries_open_as_a_job_with_its_straggler_and_a_rank_opens_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    let options = SynthOptions {
        ranks: Some(6),
        straggler_rank: Some(4),
        ..SynthOptions::new(Preset::Tiny)
    };
    synth::generate_split(&ranks, options).unwrap();
    let summaries = dir.path().join("summaries");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
        .env("XDG_CACHE_HOME", common::test_cache_home())
        .arg("summarize")
        .arg(&ranks)
        .arg("--out")
        .arg(&summaries)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut h = harness(None);
    let ctx = h.ctx.clone();
    h.state_mut().open_paths(vec![summaries], &ctx);
    let start = Instant::now();
    while matches!(&h.state().state, State::Job(p) if p.job.is_none() && p.error.is_none())
        && start.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(3);
    h.get_by_label_contains("Job of 6 ranks (6 GPUs)");
    h.get_by_label_contains("rank04.sqlite:0 holds the others back");
    let State::Job(page) = &h.state().state else {
        panic!("the job page")
    };
    let job = page.job.as_ref().unwrap();
    let held = &job.heatmap.held_back_ns;
    let hottest = (0..held.len())
        .max_by_key(|&r| held[r].iter().max().copied().unwrap_or(0))
        .unwrap();
    assert_eq!(job.heatmap.devices[hottest], "rank04.sqlite:0");
    // Cells by iteration time instead.
    h.get_by_label("iteration time").click();
    h.run_steps(2);
    let State::Job(page) = &h.state().state else {
        panic!("the job page")
    };
    assert_eq!(page.cells, nsys_explorer::ui::job_page::CellValue::Duration);
    h.get_all_by_label("Open").next().unwrap().click();
    h.run_steps(2);
    wait_for_load(&mut h);
    assert!(matches!(h.state().state, State::Loaded(_)));
}

/// A straggler whose stall is plain Python: the window's critical path puts the stall, and
/// most of the path, on the straggler's GPU (not on the GPU whose collective the walk
/// began from), and the drill-down says what its thread was doing.
#[test]
fn a_plain_cpu_stragglers_critical_path_is_on_its_own_gpu_in_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cpu.sqlite");
    let options = SynthOptions {
        straggler_stall: synth::StragglerStall::Cpu,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    open_the_slowest_iteration(&mut h, truth.iterations.slowest_index);
    wait_for_load(&mut h);
    h.run_steps(2);
    let straggler = format!("GPU {}", truth.iterations.straggler_device);
    h.get_by_label_contains(&format!(
        "Straggler: {straggler} — its CPU thread was computing (no CUDA or OS call)"
    ));
    let l = loaded(&h);
    let p = l.iterations.path.as_ref().expect("the path");
    let (d, _, kinds) = p.by_device.iter().max_by_key(|x| x.1).unwrap();
    assert_eq!(l.trace.gpu_name(l.trace.devices[d.0].id), straggler);
    let cpu = kinds
        .get(&nsys_explorer::critical_path::SegmentKind::Cpu)
        .copied()
        .unwrap_or(0);
    assert!(
        cpu * 10 >= truth.iterations.straggler_pause_ns * 9,
        "the stall's CPU time is on {straggler}: {cpu} ns"
    );
}

/// A run recorded at graph level (nsys's default): the Graphs tab lists its graphs and
/// says their kernels were not recorded and how to record them; the summary says so too.
#[test]
fn a_graph_level_run_shows_its_graphs_and_says_their_kernels_were_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graphs.sqlite");
    let options = SynthOptions {
        cuda_graphs: Some(synth::GraphTrace::Graph),
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    let launches = truth.cuda_graphs.unwrap().launches;
    {
        let l = loaded(&h);
        let g = l.graphs.as_ref().expect("the graphs counted");
        assert_eq!(g.launches, launches);
        // Busy, not idle: the GPUs' compute includes the graph executions.
        let o = l.overview.as_ref().unwrap();
        assert!(o.devices.iter().all(|d| d.breakdown.compute_only > 0));
    }
    // The summary's note, before the tab is opened.
    h.get_all_by_label_contains("their kernels were not recorded")
        .next()
        .expect("the note in the summary");
    h.get_by_label("Graphs").click();
    h.run_steps(2);
    assert_eq!(loaded(&h).tab, nsys_explorer::ui::loaded::Tab::Graphs);
    h.get_by_label_contains(&format!("{launches} launches"));
    assert!(
        h.get_all_by_label("not recorded").count() >= 4,
        "kernels per launch, per graph"
    );
    h.get_all_by_label("ffn")
        .next()
        .expect("the NVTX range around a graph's launches");
}

#[test]
fn the_findings_tab_comes_first_ranks_by_saving_and_a_finding_is_shown_and_tried() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    wait_for_load(&mut h);
    {
        let l = loaded(&h);
        assert_eq!(
            l.tab,
            nsys_explorer::ui::loaded::Tab::Findings,
            "shown first once analysed"
        );
        assert!(l.findings.ranked);
        // Faults by saving; the opportunities after them.
        let savings: Vec<i64> = l
            .findings
            .findings
            .iter()
            .filter(|f| f.group == nsys_explorer::findings::Group::Fault)
            .filter_map(|f| f.saving_ns)
            .collect();
        assert!(savings.len() >= 3 && savings.windows(2).all(|w| w[0] >= w[1]));
        let groups: Vec<_> = l.findings.findings.iter().map(|f| f.group).collect();
        assert!(groups.windows(2).all(|w| w[0] <= w[1]), "{groups:?}");
    }
    let (title, first) = {
        let f = &loaded(&h).findings.findings[0];
        (f.title.clone(), f.first.unwrap())
    };
    h.get_by_label("What to fix first");
    h.get_by_label(&title.replace('→', "->")).click();
    h.run_steps(3);
    {
        let l = loaded(&h);
        assert_eq!(l.findings.selected, Some(0));
        assert!(
            !l.timeline.marks.iteration_mark.is_empty(),
            "its occurrences outlined"
        );
        let (a, b) = l.timeline.view;
        assert!(
            a <= first.start_ns as f64 && first.end_ns as f64 <= b,
            "its first occurrence in view"
        );
    }
    // Try the sync finding: the What-if tab opens with its change, replayed.
    let sync = loaded(&h)
        .findings
        .findings
        .iter()
        .position(|f| f.kind == nsys_explorer::findings::Kind::HostSync)
        .unwrap();
    let expected = loaded(&h).findings.findings[sync].saving_ns.unwrap();
    let buttons = h.get_all_by_label("Try it").count();
    assert!(buttons > sync, "{buttons} Try it buttons");
    h.get_all_by_label("Try it").nth(sync).unwrap().click();
    h.run_steps(2);
    wait_for_load(&mut h);
    let l = loaded(&h);
    assert_eq!(l.tab, nsys_explorer::ui::loaded::Tab::WhatIf);
    assert!(l.what_if.preset.is_some());
    let a = l.what_if.answer.as_ref().expect("replayed");
    assert_eq!(
        nsys_explorer::whatif::report::saving_ns(&a.what_if),
        expected,
        "the tab's replay gives the finding's saving"
    );
}

#[test]
fn an_export_with_scheduling_only_shows_its_threads_on_their_cpus() {
    use nsys_explorer::ui::timeline::RowKind;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sched.sqlite");
    common::scheduling_only_export(&path);
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    let l = loaded(&h);
    let rows = l.timeline.rows(&l.trace);
    for t in 0..l.trace.threads.len() {
        assert!(!l.timeline.folds.threads[t], "shown unfolded");
        assert!(rows.contains(&RowKind::Sched { thread: t }));
    }
    let (first, last) = l.trace.time_span().unwrap();
    assert_eq!(
        l.timeline.view,
        (first as f64, last as f64),
        "the whole run in view"
    );
    h.get_by_label("No GPU activity recorded");
}

#[test]
fn a_trace_opened_again_comes_from_the_cache_whole_with_its_panels() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = gui_support::loaded_tiny(dir.path());
    let first = gui_support::loaded(&first);
    let (kernels, findings) = (first.trace.kernel_count(), first.findings.findings.len());
    let first_overview = first.overview.as_ref().expect("analysed");
    let (gaps, patterns) = (first_overview.gaps.len(), first_overview.recurring.len());
    // The model and the gap findings are written once the load and the analyses are done,
    // on threads of their own: wait for them.
    let key = nsys_explorer::cache::TraceKey::of(&dir.path().join("tiny.sqlite")).unwrap();
    let start = std::time::Instant::now();
    let options = nsys_explorer::overview::Options::default();
    while nsys_explorer::cache::read_model(&key).is_none()
        || nsys_explorer::cache::read_gap_findings(&key, &options).is_none()
    {
        assert!(start.elapsed().as_secs() < 120, "the model was never kept");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut h = gui_support::harness(Some(&dir.path().join("tiny.sqlite")));
    gui_support::wait_for_load(&mut h);
    let again = gui_support::loaded(&h);
    let report = again.report.as_ref().expect("loaded");
    assert_eq!(report.phases.len(), 1, "{:?}", report.phases);
    assert_eq!(report.phases[0].0, "read cache");
    assert_eq!(again.trace.kernel_count(), kernels);
    let overview = again.overview.as_ref().expect("analysed");
    assert_eq!(
        (overview.gaps.len(), overview.recurring.len()),
        (gaps, patterns)
    );
    assert_eq!(again.findings.findings.len(), findings);
    h.get_by_label("What to fix first");
}

#[test]
fn the_nccl_tab_shows_bytes_and_bus_bandwidth_splits_by_size_and_details_name_the_transfer() {
    use nsys_explorer::format::format_bytes;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    let payload = truth.nccl_payload.expect("tiny writes NCCL's payloads");
    let devices = loaded(&h).trace.devices.len();
    open_tab(&mut h, "NCCL");
    wait_for_load(&mut h);
    // One row per GPU (one collective type), each with both bandwidths and its bytes.
    let bandwidths = |h: &egui_kittest::Harness<_>| h.query_all_by_label_contains(" GB/s").count();
    assert_eq!(bandwidths(&h), 2 * devices, "algbw and busbw per row");
    let bytes: u64 = payload
        .collectives_by_bytes
        .iter()
        .map(|(b, n)| b * *n as u64)
        .sum();
    assert_eq!(
        h.query_all_by_label(&format_bytes(bytes)).count(),
        devices,
        "each GPU's bytes, as the generator wrote them"
    );
    // Split: a row per power-of-two size class.
    let classes: std::collections::BTreeSet<u32> = payload
        .collectives_by_bytes
        .keys()
        .map(|b| 63 - b.leading_zeros())
        .collect();
    assert!(classes.len() >= 2, "the generator writes several sizes");
    h.get_by_label("split by message size").click();
    h.run_steps(2);
    assert_eq!(bandwidths(&h), 2 * devices * classes.len());
    // A collective clicked: its first kernel selected; Details tell what it moved.
    h.query_all_by_label("SendRecv")
        .next()
        .expect("a row")
        .click();
    h.run_steps(3);
    assert!(matches!(
        loaded(&h).timeline.selection,
        Some(Selection::Op { .. })
    ));
    open_tab(&mut h, "Details");
    assert!(
        h.query_by_label_contains("GB/s bus").is_some(),
        "the bandwidth"
    );
    assert!(
        h.query_by_label_contains("ranks)").is_some(),
        "the communicator"
    );
}

#[test]
fn file_export_figures_writes_the_five_figures_from_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.get_by_label("File").click();
    h.run_steps(2);
    h.get_by_label("Export figures…").click();
    h.run_steps(2);
    assert!(loaded(&h).figures.open, "the window opened");
    let out = dir.path().join("figures");
    if let State::Loaded(l) = &mut h.state_mut().state {
        // What a person types into the Folder field.
        l.figures.folder = out.display().to_string();
    }
    h.run_steps(1);
    h.get_by_label("Write").click();
    h.run_steps(1);
    wait_for_load(&mut h);
    assert!(
        h.query_by_label_contains("Wrote 11 files").is_some(),
        "{:?}",
        loaded(&h).figures.outcome
    );
    for name in nsys_explorer::figures::NAMES {
        assert!(out.join(format!("{name}.png")).exists(), "{name}");
    }
}

/// A run with CPU samples: the CPU tab profiles the window chosen on the timeline (here
/// the JIT stall's gap), its bottom-up table names the compiler first, and a click on that
/// frame marks its samples on the launching thread's row.
#[test]
fn the_cpu_tab_profiles_the_chosen_window_and_a_frame_marks_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples.sqlite");
    let options = SynthOptions {
        cpu_samples: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    // The longest gap the generator sampled: the JIT compile.
    let jit = truth
        .gaps
        .iter()
        .filter(|g| g.cpu_samples.unwrap_or(0) > 0)
        .max_by_key(|g| g.duration_ns)
        .unwrap();
    assert_eq!(jit.cpu_top_frame.as_deref(), Some("nvrtcCompileProgram"));
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.timeline.window = Some((jit.start_ns, jit.start_ns + jit.duration_ns)); // as Shift+drag sets it
    }
    h.get_by_label("CPU").click();
    let start = Instant::now();
    loop {
        h.run_steps(1);
        let ready = loaded(&h)
            .cpu
            .profile
            .as_ref()
            .is_some_and(|(s, _)| s.start == jit.start_ns);
        if ready || start.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    h.run_steps(2);
    assert_eq!(loaded(&h).tab, nsys_explorer::ui::loaded::Tab::Cpu);
    let samples = loaded(&h).cpu.profile.as_ref().unwrap().1.flame.count;
    // Every rank's main thread sampled once a millisecond over the gap.
    assert!(
        samples as i64 >= jit.duration_ns / 1_000_000,
        "{samples} samples"
    );
    h.get_by_label_contains(&format!("{samples} samples"));
    // The bottom-up table's first row is the compiler; clicked, its samples are marked.
    h.get_all_by_label("nvrtcCompileProgram")
        .next()
        .expect("the compiler in the bottom-up table")
        .click();
    h.run_steps(2);
    let l = loaded(&h);
    assert_eq!(
        l.cpu
            .chosen
            .map(|f| l.trace.stacks().stacks.frame_symbol[f as usize])
            .map(|s| l.trace.strings.get(s).into_owned())
            .as_deref(),
        Some("nvrtcCompileProgram")
    );
    let marked: usize = l
        .timeline
        .marks
        .samples
        .iter()
        .map(|m| m.starts.len())
        .sum();
    assert!(
        marked > 0 && marked <= samples as usize,
        "{marked} of {samples}"
    );
    assert!(l.timeline.marks.samples.iter().all(|m| {
        m.starts
            .iter()
            .all(|&t| t >= jit.start_ns && t < jit.start_ns + jit.duration_ns)
    }));
}

/// A selected range drives the tables: the Kernels tab of a Shift+drag selection equals the
/// whole trace's kernels restricted to the range, counted here independently (every
/// kernel starting in it, by name); the banner says so and clears it.
#[test]
fn a_selected_range_drives_the_kernel_table_and_the_banner_clears_it() {
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    wait_for_load(&mut h);
    let (a, b) = {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        let (s, e) = l.trace.devices[0].kernel_window().unwrap();
        // Steps of kernels (the tiny run's checkpoint copy holds its middle third).
        let w = (s + (e - s) / 10, s + (e - s) / 4);
        l.timeline.window = Some(w); // as Shift+drag sets it
        w
    };
    h.get_by_label("Kernels").click();
    let start = Instant::now();
    while loaded(&h)
        .selection
        .ready
        .as_ref()
        .is_none_or(|(k, _)| *k != (a, b))
        && start.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
    h.get_by_label_contains("Selection:");
    h.get_by_label_contains("this tab is of the selection");
    // Over a tab of the whole run's, the banner says so.
    h.get_by_label("Findings").click();
    h.run_steps(2);
    h.get_by_label_contains("this tab is the whole run's");
    h.get_by_label("Kernels").click();
    h.run_steps(2);
    // The summary's CPU time in syncs is the selection's too.
    h.get_by_label("CPU time in synchronising calls (in the window)");
    // "save as figure" opens the figures window on the timeline over the selection.
    h.get_by_label("save as figure").click();
    h.run_steps(3);
    assert_eq!(
        loaded(&h).figures.view,
        Some(((a, b), nsys_explorer::ui::figures_window::Range::Selection))
    );
    assert!(loaded(&h).figures.open);
    // Named as what it saves.
    h.get_by_label("Save selection");
    let l = loaded(&h);
    let selected = &l.selection.ready.as_ref().unwrap().1.kernels;
    // Every kernel in the selection, its time inside it (the edges cut the ones across).
    let mut expected: BTreeMap<String, (usize, i64)> = BTreeMap::new();
    for d in &l.trace.devices {
        for s in &d.streams {
            for i in 0..s.ops.len() {
                let (start, end) = (s.ops.start[i], s.ops.end[i]);
                if s.ops.kind[i].is_kernel() && end > a && start < b {
                    let e = expected
                        .entry(l.trace.strings.get(s.ops.name[i]).into_owned())
                        .or_default();
                    e.0 += 1;
                    e.1 += end.min(b) - start.max(a);
                }
            }
        }
    }
    let got: BTreeMap<String, (usize, i64)> = selected
        .iter()
        .map(|k| (k.name.clone(), (k.count, k.total_ns)))
        .collect();
    assert!(
        expected.len() >= 3,
        "kernels in the selection: {expected:?}"
    );
    assert_eq!(got, expected);
    // The Memory tab's copies too: those in the range.
    let copies: usize = l
        .trace
        .devices
        .iter()
        .flat_map(|d| &d.streams)
        .map(|s| {
            (0..s.ops.len())
                .filter(|&i| !s.ops.kind[i].is_kernel() && s.ops.end[i] > a && s.ops.start[i] < b)
                .count()
        })
        .sum();
    let memory = &l.selection.ready.as_ref().unwrap().1.memory;
    assert!(copies > 0, "copies in the selection");
    assert_eq!(memory.iter().map(|m| m.count).sum::<usize>(), copies);
    let whole: usize = l
        .overview
        .as_ref()
        .unwrap()
        .kernels
        .iter()
        .map(|k| k.count)
        .sum();
    assert!(got.values().map(|v| v.0).sum::<usize>() < whole);
    // Its summary copied as text: the span, each GPU's breakdown, the top kernels.
    h.get_by_label("copy summary").click();
    h.run_steps(2);
    let copied = loaded(&h)
        .selection
        .copied
        .clone()
        .expect("a summary copied");
    assert!(copied.starts_with("Selection: "), "{copied}");
    assert_eq!(
        copied.matches("idle").count(),
        loaded(&h).trace.devices.len(),
        "{copied}"
    );
    let top = &loaded(&h).selection.ready.as_ref().unwrap().1.kernels[0];
    assert!(copied.contains(&top.name), "{copied}");
    // The banner's clear: the whole trace again.
    h.get_by_label("clear: whole trace").click();
    h.run_steps(2);
    assert_eq!(loaded(&h).timeline.window, None);
    assert!(h.query_by_label_contains("Selection:").is_none());
}

#[test]
fn gpu_metric_rows_and_the_memory_row_show_under_each_gpu_and_the_view_menu_chooses_them() {
    use nsys_explorer::ui::timeline::RowKind;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.sqlite");
    let options = SynthOptions {
        gpu_metrics: true,
        memory_usage: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    let count = |h: &egui_kittest::Harness<'static, nsys_explorer::ui::App>| {
        let l = loaded(h);
        let rows = l.timeline.rows(&l.trace);
        let metrics = rows
            .iter()
            .filter(|r| matches!(r, RowKind::Metric { .. }))
            .count();
        let memory = rows
            .iter()
            .filter(|r| matches!(r, RowKind::Memory { .. }))
            .count();
        (metrics, memory, l.trace.devices.len())
    };
    // By default: SMs Active, Tensor Active, DRAM Read and Write under each GPU (of its 20
    // metrics; the clocks are not among them), and its device memory.
    let (metrics, memory, gpus) = count(&h);
    assert_eq!((metrics, memory), (4 * gpus, gpus));
    // The summary says how busy each GPU's SMs were, beside where its time went (worked
    // out on a worker).
    let start = Instant::now();
    while h
        .query_all_by_label_contains("GPU metrics: SMs active")
        .count()
        < gpus
        && start.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(20));
        h.run_steps(1);
    }
    assert_eq!(
        h.query_all_by_label_contains("GPU metrics: SMs active")
            .count(),
        gpus
    );
    h.get_by_label("View").click();
    h.run_steps(2);
    h.get_by_label("SMs Active [Throughput %]").click();
    h.run_steps(2);
    assert_eq!(count(&h).0, 3 * gpus);
    // A click closes the menu: opened again for each.
    for label in ["GPC Clock Frequency [MHz]", "Device memory row"] {
        if h.query_by_label(label).is_none() {
            h.get_by_label("View").click();
            h.run_steps(2);
        }
        h.get_by_label(label).click();
        h.run_steps(2);
    }
    assert_eq!(count(&h).0, 4 * gpus);
    assert_eq!(count(&h).1, 0);
    // Drawn frame after frame, the rows hold their chart (no panic, a mesh each frame).
    h.run_steps(5);
    assert!(loaded(&h).timeline.frame.last_quads > 0);
    // The kernel table gains how busy each kernel kept the SMs and tensor cores.
    h.get_by_label("Kernels").click();
    let start = Instant::now();
    while h.query_by_label("95 %").is_none() && start.elapsed() < Duration::from_secs(120) {
        h.run_steps(1);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(h.query_by_label("SMs active").is_some());
    assert!(
        h.query_by_label("95 %").is_some(),
        "flash_fwd_kernel at its generated 95 % SMs Active"
    );
    // The slowest iteration's drill-down says how busy each GPU was against the median one.
    open_the_slowest_iteration(&mut h, truth.iterations.slowest_index);
    let start = Instant::now();
    while loaded(&h).iterations.drilldown.is_none() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
    h.get_by_label("GPU metrics vs the median iteration, largest change first");
}

#[test]
fn what_if_on_a_selected_stall_replays_the_run_without_that_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, truth) = loaded_tiny(dir.path());
    wait_for_load(&mut h);
    // The longest gap of GPU 0: the first step's JIT compile, the CPU busy, the GPUs idle.
    let stall = truth
        .gaps
        .iter()
        .filter(|g| g.device == 0)
        .max_by_key(|g| g.duration_ns)
        .unwrap();
    let (a, b) = (stall.start_ns, stall.start_ns + stall.duration_ns);
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.timeline.window = Some((a, b)); // as Shift+drag sets it
    }
    h.run_steps(2);
    h.get_by_label("what if the CPU had not spent it").click();
    let start = Instant::now();
    while loaded(&h).what_if.answer.is_none() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    let l = loaded(&h);
    let answer = l.what_if.answer.as_ref().expect("the replay's answer");
    let (measured, predicted) = (
        answer.what_if.measured[0].total_ns,
        answer.what_if.predicted[0].total_ns,
    );
    // Most of the stall is saved (the GPU still runs what was launched before it).
    let saved = measured - predicted;
    assert!(
        saved > stall.duration_ns / 2 && saved <= stall.duration_ns + 1_000_000,
        "saved {saved} of a {} ns stall",
        stall.duration_ns
    );
    // The range's critical path, asked for in the banner: drawn on the timeline.
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.timeline.window = Some((a - stall.duration_ns, b)); // the step before and the stall
    }
    h.run_steps(2);
    // Asked by a right-click on the timeline, as the banner's button does it.
    let on_timeline = eframe::egui::pos2(900.0, 200.0);
    h.hover_at(on_timeline);
    h.run_steps(1);
    for pressed in [true, false] {
        h.event(eframe::egui::Event::PointerButton {
            pos: on_timeline,
            button: eframe::egui::PointerButton::Secondary,
            pressed,
            modifiers: Default::default(),
        });
    }
    h.run_steps(2);
    h.get_by_label("Critical path of the selection").click();
    let start = Instant::now();
    while loaded(&h).selection.path.is_none() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
    h.get_by_label_contains("critical path: ");
    assert!(!loaded(&h).timeline.marks.critical_path.is_empty());
}
