//! The window, round 3 (issue 69), clicked through headless: a selection means the same
//! thing in every table, its what-if is the command line's, one median everywhere, Escape
//! clears every mark, panning stops at the trace, the gap filter reads the cause, a
//! finding's command is a command, and at 1024×680 every column and title is reachable.

use std::time::{Duration, Instant};

use egui_kittest::kittest::Queryable;
use nsys_explorer::format::format_ns;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::ui::State;

mod common;
mod gui_support;

use gui_support::*;

/// Steps until `done` holds (or two minutes pass: a loaded 2-core machine is slow).
fn step_until(
    h: &mut egui_kittest::Harness<'static, nsys_explorer::ui::App>,
    done: impl Fn(&nsys_explorer::ui::Loaded) -> bool,
) {
    let start = Instant::now();
    while !done(loaded(h)) && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(2);
}

fn set_window(h: &mut egui_kittest::Harness<'static, nsys_explorer::ui::App>, w: (i64, i64)) {
    let State::Loaded(l) = &mut h.state_mut().state else {
        unreachable!()
    };
    l.timeline.window = Some(w); // as Shift+drag sets it
}

/// A range of the tiny run that cuts through kernels, copies and collectives.
fn a_range(l: &nsys_explorer::ui::Loaded) -> (i64, i64) {
    let (s, e) = l.trace.devices[0].kernel_window().unwrap();
    (s + (e - s) / 7, s + (e - s) * 3 / 5)
}

#[test]
fn a_selection_drives_the_nccl_and_memory_tables_clipped_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let (a, b) = a_range(loaded(&h));
    set_window(&mut h, (a, b));
    open_tab(&mut h, "NCCL");
    step_until(&mut h, |l| {
        l.selection.ready.as_ref().is_some_and(|r| r.0 == (a, b))
            && l.selection.nccl_groups().is_some_and(|g| g.0 == (a, b))
    });
    let l = loaded(&h);
    // Per GPU, the collectives in the range and their time inside it.
    for d in &l.trace.devices {
        let (mut count, mut inside, mut cut) = (0usize, 0i64, 0usize);
        for s in &d.streams {
            for i in 0..s.ops.len() {
                let (start, end) = (s.ops.start[i], s.ops.end[i]);
                if s.ops.kind[i] == nsys_explorer::trace::OpKind::Nccl && end > a && start < b {
                    count += 1;
                    inside += end.min(b) - start.max(a);
                    cut += usize::from(start < a || end > b);
                }
            }
        }
        let groups = &l.selection.nccl_groups().unwrap().1;
        let all = groups
            .iter()
            .find(|g| {
                g.device == d.id && g.class == nsys_explorer::analysis::nccl_sizes::SizeClass::All
            })
            .expect("the GPU's collectives");
        assert_eq!(
            (all.count, all.total_ns, all.cut),
            (count, inside, cut),
            "{:?}",
            d.id
        );
        let whole: usize = l
            .overview
            .as_ref()
            .unwrap()
            .nccl
            .iter()
            .filter(|n| n.device == d.id)
            .map(|n| n.count)
            .sum();
        assert!(count < whole, "the selection's, not the run's");
    }
    // The Memory tab: each copy clipped, its bytes in proportion.
    open_tab(&mut h, "Memory");
    let l = loaded(&h);
    let memory = &l.selection.ready.as_ref().unwrap().1.memory;
    let (mut count, mut inside, mut cut) = (0usize, 0i64, 0usize);
    for d in &l.trace.devices {
        for s in &d.streams {
            for i in 0..s.ops.len() {
                let (start, end) = (s.ops.start[i], s.ops.end[i]);
                if !s.ops.kind[i].is_kernel() && end > a && start < b {
                    count += 1;
                    inside += end.min(b) - start.max(a);
                    cut += usize::from(start < a || end > b);
                }
            }
        }
    }
    assert_eq!(memory.iter().map(|m| m.count).sum::<usize>(), count);
    assert_eq!(memory.iter().map(|m| m.total_ns).sum::<i64>(), inside);
    assert_eq!(memory.iter().map(|m| m.cut).sum::<usize>(), cut);
    if cut > 0 {
        h.get_by_label_contains("cut by the selection's edges");
    }
}

/// The selection's "what if the CPU had not spent it" replays the change the command line
/// takes (every launching thread's CPU time in the range removed): the same figures, and
/// no iteration longer than it was.
#[test]
fn the_selections_what_if_is_the_command_lines_and_makes_no_iteration_longer() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    let (a, b) = a_range(loaded(&h));
    set_window(&mut h, (a, b));
    h.run_steps(2);
    h.get_by_label("what if the CPU had not spent it").click();
    step_until(&mut h, |l| l.what_if.answer.is_some());
    let l = loaded(&h);
    let answer = &l.what_if.answer.as_ref().unwrap().what_if;
    let change = nsys_explorer::whatif::Change {
        remove_stalls: l
            .trace
            .threads
            .iter()
            .filter(|t| !t.api.is_empty())
            .map(|t| nsys_explorer::whatif::HostSpan::of(&l.trace, t, a, b))
            .collect(),
        ..Default::default()
    };
    let args = change.to_args();
    let typed = nsys_explorer::whatif::Change::from_args(&args).unwrap();
    let overview = l.overview.as_ref().unwrap();
    let cli = nsys_explorer::whatif::report::what_if(
        &l.trace,
        overview,
        &typed,
        &nsys_explorer::overview::Options::default(),
    );
    assert_eq!(
        nsys_explorer::whatif::report::saving_ns(answer),
        nsys_explorer::whatif::report::saving_ns(&cli)
    );
    for (m, p) in answer.measured.iter().zip(&answer.predicted) {
        let (Some(before), Some(after)) = (m.iteration_median_ns, p.iteration_median_ns) else {
            panic!("{:?}: an iteration median lost", m.device);
        };
        assert!(
            after <= before + before / 20,
            "{:?}: {before} → {after}",
            m.device
        );
    }
}

/// One median everywhere: the Iterations tab, its plot and the straggler finding all set
/// the slowest iteration against the median across GPUs.
#[test]
fn the_slowest_iteration_is_set_against_one_median_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    step_until(&mut h, |l| l.findings.ranked);
    let (median, straggler) = {
        let l = loaded(&h);
        let o = l.overview.as_ref().unwrap();
        let median = o.iterations.across_gpus().1.median_ns;
        let straggler = l
            .findings
            .findings
            .iter()
            .find(|f| f.kind == nsys_explorer::findings::Kind::Straggler)
            .expect("a straggler finding")
            .detail
            .clone();
        (median, straggler)
    };
    let words = format!("median across GPUs ({})", format_ns(median));
    assert!(
        straggler.contains(&format!(
            "against a median of {} across GPUs",
            format_ns(median)
        )),
        "{straggler}"
    );
    open_tab(&mut h, "Iterations");
    h.get_by_label_contains(&format!("over the {words}"));
}

/// Escape closes Find, then drops the selected range, then clears every mark at once: the
/// panels' marks, Find's matches and the selected item with its launch arrow.
#[test]
fn escape_clears_finds_matches_and_the_selected_item() {
    use eframe::egui::{Key, Modifiers};
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.hover_at(eframe::egui::pos2(900.0, 200.0));
    h.key_press_modifiers(Modifiers::COMMAND, Key::F);
    h.run_steps(2);
    h.event(eframe::egui::Event::Text("flash".into()));
    h.run_steps(2);
    h.key_press(Key::Enter);
    step_until(&mut h, |l| !l.timeline.search.matches.is_empty());
    assert!(loaded(&h).timeline.selection.is_some(), "a match selected");
    let full = loaded(&h).timeline.full;
    set_window(&mut h, full);
    for _ in 0..4 {
        h.key_press(Key::Escape);
        h.run_steps(1);
    }
    let t = &loaded(&h).timeline;
    assert!(!t.search.open && t.window.is_none());
    assert!(t.search.matches.is_empty() && t.search.by_row.is_empty());
    assert!(t.selection.is_none());
}

/// Panning stops where zooming out does: a little past the trace's ends.
#[test]
fn panning_stops_at_the_traces_ends() {
    use eframe::egui::Key;
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.hover_at(eframe::egui::pos2(900.0, 200.0));
    h.key_press(Key::W);
    h.key_press(Key::W);
    for _ in 0..60 {
        h.key_press(Key::A);
    }
    h.run_steps(2);
    let t = &loaded(&h).timeline;
    let extent = (t.full.1 - t.full.0) as f64;
    assert!(
        t.view.0 >= t.full.0 as f64 - extent * 0.021,
        "{:?} {:?}",
        t.view,
        t.full
    );
    for _ in 0..60 {
        h.key_press(Key::D);
    }
    h.run_steps(2);
    let t = &loaded(&h).timeline;
    assert!(
        t.view.1 <= t.full.1 as f64 + extent * 0.021,
        "{:?} {:?}",
        t.view,
        t.full
    );
}

/// The gap table's filter finds what the cause column says (the JIT compilation the CPU
/// was in), not only the kernels' and ranges' names.
#[test]
fn the_gap_filter_matches_the_cause_text() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    open_tab(&mut h, "Gaps");
    {
        let State::Loaded(l) = &mut h.state_mut().state else {
            unreachable!()
        };
        l.gaps.filter.text = "compileFusion".into();
    }
    h.run_steps(5);
    let l = loaded(&h);
    let gaps = &l.overview.as_ref().unwrap().gaps;
    assert!(
        !l.gaps.order.is_empty(),
        "no gap with compileFusion in its cause"
    );
    for &i in &l.gaps.order {
        let text = nsys_explorer::analysis::recurring::cause_text(&l.trace, &gaps[i as usize]);
        assert!(text.contains("compileFusion"), "{text}");
    }
}

/// A finding's what-if is shown as the command line prints it (quoted, every glyph of
/// it), and Copy puts that on the clipboard.
#[test]
fn a_findings_command_is_quoted_shown_whole_and_copied() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    step_until(&mut h, |l| l.findings.ranked);
    let (i, title, command) = {
        let l = loaded(&h);
        let (i, f) = l
            .findings
            .findings
            .iter()
            .enumerate()
            .find(|(_, f)| {
                nsys_explorer::findings::text::what_if_command(&f.what_if).contains('\'')
            })
            .expect("a finding whose command needs quoting");
        (
            i,
            f.title.clone(),
            nsys_explorer::findings::text::what_if_command(&f.what_if),
        )
    };
    // Every glyph a pattern's signature uses is drawn, in either family.
    for family in [
        eframe::egui::FontId::proportional(14.0),
        eframe::egui::FontId::monospace(14.0),
    ] {
        assert!(h.ctx.fonts_mut(|f| f.has_glyph(&family, '→')), "{family:?}");
    }
    h.get_by_label(&title).click();
    h.run_steps(2);
    assert_eq!(loaded(&h).findings.selected, Some(i));
    h.get_by_label(&command);
    h.get_by_label("Copy").click();
    h.run_steps(2);
    assert_eq!(
        loaded(&h).findings.copied.as_deref(),
        Some(command.as_str())
    );
}

/// At 1024×680 the gap table's last column is reachable (the table scrolls sideways,
/// Shift+wheel included) and every finding's title is read whole, wrapped.
#[test]
fn at_1024_by_680_every_column_and_title_is_reachable() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = loaded_tiny(dir.path());
    h.set_size(eframe::egui::vec2(1024.0, 680.0));
    step_until(&mut h, |l| l.findings.ranked);
    let titles: Vec<String> = loaded(&h)
        .findings
        .findings
        .iter()
        .map(|f| f.title.clone())
        .collect();
    for title in &titles {
        let rect = h.get_by_label(title).rect();
        assert!(rect.right() <= 1024.0, "{title}: {rect:?}");
    }
    open_tab(&mut h, "Gaps");
    step_until(&mut h, |l| !l.gaps.sorting());
    let cause = h.get_by_label("cause").rect();
    if cause.right() > 1024.0 {
        // Shift+wheel over the table scrolls it sideways.
        let over = eframe::egui::pos2(500.0, cause.bottom() + 40.0);
        h.hover_at(over);
        for _ in 0..10 {
            h.event(eframe::egui::Event::MouseWheel {
                unit: eframe::egui::MouseWheelUnit::Point,
                delta: eframe::egui::vec2(0.0, -80.0),
                phase: eframe::egui::TouchPhase::Move,
                source: eframe::egui::MouseWheelSource::Unknown,
                modifiers: eframe::egui::Modifiers::SHIFT,
            });
            h.run_steps(1);
        }
        h.run_steps(4);
        let moved = h.get_by_label("cause").rect();
        assert!(
            moved.left() < 1024.0 && moved.left() < cause.left(),
            "{cause:?} → {moved:?}"
        );
    }
}

/// The CPU tab gives the bottom-up table a third of its height at least: rows to read
/// under the flame graph.
#[test]
fn the_cpu_tab_splits_its_height_between_the_flame_graph_and_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples.sqlite");
    synth::generate(
        &path,
        SynthOptions {
            cpu_samples: true,
            ..SynthOptions::new(Preset::Tiny)
        },
    )
    .unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    h.set_size(eframe::egui::vec2(1400.0, 900.0));
    open_tab(&mut h, "CPU");
    step_until(&mut h, |l| l.cpu.profile.is_some());
    let l = loaded(&h);
    let p = &l.cpu.profile.as_ref().unwrap().1;
    let window = 900.0;
    // The functions of the table's first rows are on screen.
    let shown = p
        .bottom_up
        .iter()
        .take(8)
        .filter(|&&(frame, _, _)| {
            let name = nsys_explorer::analysis::cpu_samples::FrameName::of(&l.trace, frame);
            h.query_all_by_label(&name.symbol)
                .any(|n| n.rect().top() >= 0.0 && n.rect().bottom() <= window)
        })
        .count();
    assert!(
        shown >= 5.min(p.bottom_up.len()),
        "{shown} rows of the table on screen"
    );
}
