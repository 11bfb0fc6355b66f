//! `bench frame` and `bench panels`: the window's work per frame, drawn headless.

use std::path::Path;
use std::time::Instant;

use super::print_peak_rss;
use crate::analysis;
use crate::load;
use crate::overview::Options;

/// One trace's timeline drawn headless in a context of its own (its own text layouts, as
/// in a window of its own).
pub(super) struct FrameBench {
    trace: std::sync::Arc<crate::trace::Trace>,
    timeline: crate::ui::timeline::Timeline,
    ctx: eframe::egui::Context,
}

impl FrameBench {
    fn new(file: &Path) -> Result<Self, String> {
        let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
        let built = Instant::now();
        let timeline = crate::ui::timeline::Timeline::new(&trace);
        let built = built.elapsed().as_secs_f64();
        println!(
            "file: {} ({} kernels); timeline indexes {:.1} MB, built in {built:.2} s",
            file.display(),
            trace.kernel_count(),
            timeline.index_bytes() as f64 / 1e6
        );
        let ctx = eframe::egui::Context::default();
        crate::ui::configure(&ctx);
        Ok(Self {
            trace: std::sync::Arc::new(trace),
            timeline,
            ctx,
        })
    }

    /// The view of each level: the whole trace, a fiftieth of it, 100 µs; all around
    /// the middle.
    fn level(&self, name: &str) -> (f64, f64) {
        let (s, e) = self.timeline.full;
        let mid = (s + e) as f64 / 2.0;
        let half = match name {
            "full" => (e - s) as f64 / 2.0,
            "mid" => (e - s) as f64 / 100.0,
            _ => 50_000.0,
        };
        (mid - half, mid + half)
    }

    /// Milliseconds of one 1600×1000 frame showing `view`: the UI pass and tessellation.
    fn frame(&mut self, view: (f64, f64)) -> f64 {
        use eframe::egui;
        self.timeline.view = view;
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(1600.0, 1000.0),
            )),
            ..Default::default()
        };
        let t = Instant::now();
        let (timeline, trace) = (&mut self.timeline, &self.trace);
        let output = self.ctx.run_ui(input, |ui| {
            egui::CentralPanel::default().show(ui, |ui| timeline.show(ui, trace));
        });
        let primitives = self.ctx.tessellate(output.shapes, output.pixels_per_point);
        std::hint::black_box(primitives);
        // No renderer takes the font atlas's updates here.
        let mut textures = output.textures_delta;
        textures.clear();
        t.elapsed().as_secs_f64() * 1e3
    }
}

/// A drag to and fro about `view`, 3 px a frame, 300 px each way: the view of frame k.
pub(super) fn dragged(view: (f64, f64), k: usize) -> (f64, f64) {
    let d = 3.0 * (view.1 - view.0) / 1400.0 * (k % 200).min(200 - k % 200) as f64;
    (view.0 + d, view.1 + d)
}

/// Wheel steps about `view`: each frame 10 % wider or narrower than the last, so each lays
/// the rows out afresh.
pub(super) fn zoomed(view: (f64, f64), k: usize) -> (f64, f64) {
    let widen = if k.is_multiple_of(2) { 0.05 } else { 0.0 } * (view.1 - view.0);
    (view.0 - widen, view.1 + widen)
}

/// The median frame times of `bench` and of `base`, taking turns a frame each, at level
/// `name` in `motion`.
pub(super) fn time_both(
    bench: &mut FrameBench,
    mut base: Option<&mut FrameBench>,
    name: &str,
    frames: usize,
    motion: fn((f64, f64), usize) -> (f64, f64),
) -> (f64, Option<f64>) {
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for k in 0..frames {
        mine.push(bench.frame(motion(bench.level(name), k)));
        if let Some(base) = base.as_deref_mut() {
            theirs.push(base.frame(motion(base.level(name), k)));
        }
    }
    (median(mine), (!theirs.is_empty()).then(|| median(theirs)))
}

/// The median of the frames after 5 of warm-up.
pub(super) fn median(mut times: Vec<f64>) -> f64 {
    times.drain(..5.min(times.len() - 1));
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Headless frames of the real timeline (egui `run_ui` + tessellation) at full zoom-out, mid
/// zoom and deep zoom: one line per level with the median frame time while the view is
/// dragged, the quads drawn, and the median frame time of a zoom step (rows laid out
/// afresh). With `against`, that trace's frames alternate with FILE's, one for one, and
/// the line adds its medians and FILE's ratios to them: both run in the same moments of a
/// machine whose speed drifts.
pub fn bench_frame(file: &Path, against: Option<&Path>) -> Result<(), String> {
    let mut bench = FrameBench::new(file)?;
    let mut base = against.map(FrameBench::new).transpose()?;
    // One level only on request, for profiling it; more frames on request, too.
    let only = std::env::var("NSYS_BENCH_ZOOM").ok();
    let frames = std::env::var("NSYS_BENCH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25usize)
        .max(6);
    for name in ["full", "mid", "deep"] {
        if only.as_ref().is_some_and(|o| o != name) {
            continue;
        }
        let mut line = format!("zoom={name}");
        let (drag, base_drag) = time_both(&mut bench, base.as_mut(), name, frames, dragged);
        let quads = bench.timeline.frame.last_quads;
        let (step, base_step) = time_both(&mut bench, base.as_mut(), name, frames, zoomed);
        line += &format!(" median_ms={drag:.3} quads={quads} zoom_step_ms={step:.3}");
        if let (Some(d), Some(z)) = (base_drag, base_step) {
            line += &format!(
                " against_median_ms={d:.3} ratio={:.2} against_zoom_step_ms={z:.3} zoom_step_ratio={:.2}",
                drag / d,
                step / z
            );
        }
        println!("{line}");
    }
    print_peak_rss();
    Ok(())
}

/// The panels' work on a click, each timed as the median of 5 runs on the loaded trace
/// with its analyses done: one line per action, `action=<name> ms=<x> rows=<n>`.
pub fn bench_panels(file: &Path) -> Result<(), String> {
    use crate::analysis::breakdown::{State, state_intervals};
    use crate::analysis::gaps::{Cause, DEFAULT_MIN_GAP_NS};
    use crate::ui::gap_table::{Column, Filter, GapOrders, filtered_order_with};
    use crate::ui::timeline::search::{Mode, find};

    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let overview = crate::overview::overview(&trace, &Options::default());
    println!(
        "file: {} ({} kernels, {} gaps, {} iterations)",
        file.display(),
        trace.kernel_count(),
        overview.gaps.len(),
        overview.iterations.count()
    );
    let median_of_5 = |f: &dyn Fn() -> usize| {
        let mut runs: Vec<(f64, usize)> = (0..5)
            .map(|_| {
                let t = Instant::now();
                let rows = f();
                (t.elapsed().as_secs_f64() * 1e3, rows)
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        runs[2]
    };
    let gaps = &overview.gaps;
    let recurring = &overview.recurring;
    // The window sorts every column once on a worker when the analyses are in; a click
    // then keeps the rows of a sorted list.
    let orders = GapOrders::default();
    let t = Instant::now();
    orders.fill(&trace, gaps);
    println!(
        "gap orders (every column sorted once, on a worker): {:.0} ms, {:.1} MB",
        t.elapsed().as_secs_f64() * 1e3,
        orders.heap_bytes() as f64 / 1e6
    );
    let order = |filter: &Filter, column: Column, descending: bool| {
        filtered_order_with(
            &trace,
            gaps,
            recurring,
            filter,
            column,
            descending,
            Some(&orders),
        )
        .len()
    };
    let mut actions: Vec<(String, Box<dyn Fn() -> usize + '_>)> = Vec::new();
    for column in Column::ALL {
        actions.push((
            format!("sort_gaps_by_{}", column.label().replace(' ', "_")),
            Box::new(move || order(&Filter::default(), column, true)),
        ));
    }
    for cause in [
        Cause::HostSync,
        Cause::AfterSync,
        Cause::HostBound,
        Cause::Dependency,
    ] {
        let filter = Filter {
            cause: Some(cause),
            ..Default::default()
        };
        actions.push((
            format!("filter_gaps_cause_{}", cause.label()),
            Box::new(move || order(&filter, Column::Duration, true)),
        ));
    }
    let text = Filter {
        text: "embedding".into(),
        ..Default::default()
    };
    actions.push((
        "filter_gaps_text_embedding".into(),
        Box::new(move || order(&text, Column::Duration, true)),
    ));
    let long = Filter {
        min_duration_ns: 100_000,
        ..Default::default()
    };
    actions.push((
        "filter_gaps_min_100us".into(),
        Box::new(move || order(&long, Column::Start, false)),
    ));
    if let Some(k) = overview.iterations.slowest_index {
        let its = &overview.iterations;
        let trace = &trace;
        actions.push((
            format!("open_drilldown_iter_{k}"),
            Box::new(move || {
                analysis::drilldown::drilldown(trace, &overview.cpu, its, k, DEFAULT_MIN_GAP_NS, 8)
                    .collectives
                    .len()
            }),
        ));
    }
    if let (Some(device), Some(summary)) = (trace.devices.first(), overview.devices.first()) {
        actions.push((
            "summary_idle_overlay_gpu0".into(),
            Box::new(move || state_intervals(device, summary.window, State::Idle).0.len()),
        ));
    }
    if let Some(top) = overview.kernels.first() {
        let (trace, name) = (&trace, top.name.clone());
        actions.push((
            "find_top_kernel".into(),
            Box::new(move || find(trace, &name, Mode::Exact).map_or(0, |m| m.len())),
        ));
    }
    for query in ["aten::linear", "synchronize", "op_id = 4711"] {
        let trace = &trace;
        actions.push((
            format!("find_{}", query.replace([' ', ':', '='], "_")),
            Box::new(move || find(trace, query, Mode::Substring).map_or(0, |m| m.len())),
        ));
    }
    // Where the window runs each: sorts and filters of a table this large, and searches of
    // a trace this large, on a worker (the last view stays meanwhile); the rest in a frame.
    let on_worker = |name: &str| {
        (name.contains("gaps") && gaps.len() > crate::ui::gap_finder::GAPS_SORTED_IN_FRAME)
            || (name.starts_with("find")
                && trace.event_count() >= crate::ui::timeline::search::ITEMS_SEARCHED_IN_FRAME)
    };
    for (name, action) in &actions {
        let (ms, rows) = median_of_5(action.as_ref());
        let place = if on_worker(name) { "worker" } else { "frame" };
        println!("action={name} ms={ms:.1} rows={rows} runs_in={place}");
    }
    print_peak_rss();
    Ok(())
}
