//! Iterations: per-GPU durations as a plot and a histogram, warm-up and slow iterations
//! marked, the slowest named; a marker selector; clicking an iteration zooms the timeline
//! to it on all GPUs and opens its drill-down (vs the median iteration, the kernels that
//! grew, its gaps, and per NCCL collective the rank that started last and why).

use std::sync::Arc;

use eframe::egui::{self, Color32, RichText};
use egui_plot::{Bar, BarChart, Line, Plot, PlotPoints, Points, VLine};

use super::figures_window::save_menu;
use super::iteration_drilldown::show_drilldown;
use super::task::{Task, take_answer};
use super::theme::{self, device_color};
use super::timeline::{Margin, Nav, PathMark, Timeline};
use crate::analysis::breakdown::pct;
use crate::analysis::drilldown::{Drilldown, drilldown};
use crate::analysis::gaps::DEFAULT_MIN_GAP_NS;
use crate::analysis::iterations::{HEURISTIC_MARKER, Iterations, Source, iterations};
use crate::critical_path::Graph;
use crate::critical_path::report::{PathSummary, summarise};
use crate::figures;
use crate::format::format_ns;
use crate::overview::Overview;
use crate::trace::Trace;

#[derive(Default)]
pub struct IterationsPanel {
    marker_text: String,
    /// Iterations by a typed marker, replacing the overview's.
    custom: Option<Iterations>,
    pending: Option<Task<(), Iterations>>,
    pub selected: Option<usize>,
    pub drilldown: Option<Drilldown>,
    /// The selected iteration's critical path, summed up.
    pub path: Option<PathSummary>,
    /// The selected iteration's drill-down and critical path, worked out on a worker (tens
    /// of ms on a large trace: not a click's frame).
    pending_drilldown: Option<Task<usize, (Drilldown, Option<PathSummary>)>>,
}

pub(super) const TOP: usize = 8;

impl IterationsPanel {
    pub fn iterations<'a>(&'a self, overview: &'a Overview) -> &'a Iterations {
        self.custom.as_ref().unwrap_or(&overview.iterations)
    }

    /// Takes a drill-down worked out, or asks for another frame while one is (whatever tab
    /// is open: the job was started without a context to wake).
    pub fn poll(&mut self, ctx: &egui::Context, nav: &mut Vec<Nav>) {
        if let Some((k, (d, path))) = take_answer(&mut self.pending_drilldown) {
            if self.selected == Some(k) {
                self.drilldown = Some(d);
                let marks = path
                    .as_ref()
                    .map_or_else(Vec::new, |p| PathMark::of(&p.path));
                nav.push(Nav::MarkPath(Arc::new(marks)));
                self.path = path;
            }
        } else if self.pending_drilldown.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(30));
        }
    }

    /// Whether a drill-down is being worked out.
    pub fn busy(&self) -> bool {
        self.pending_drilldown.is_some()
    }

    /// Zooms the timeline to iteration `k` on all GPUs (the union of their spans) and
    /// starts its drill-down on a worker.
    pub fn open(
        &mut self,
        k: usize,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        nav: &mut Vec<Nav>,
    ) {
        let its = self.iterations(overview);
        let marks = its.spans_of(trace, k);
        let (lo, hi) = marks
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &(_, a, b)| {
                (lo.min(a), hi.max(b))
            });
        if lo < hi {
            nav.push(Nav::ZoomTo {
                start: lo,
                end: hi,
                margin: Margin::Tight,
            });
        }
        nav.push(Nav::MarkIteration(marks));
        nav.push(Nav::MarkPath(Arc::default()));
        let (trace, overview, custom) = (trace.clone(), overview.clone(), self.custom.clone());
        // Without a context: `poll`, called every frame, asks for frames while it waits.
        self.pending_drilldown = Some(Task::compute(k, None, move |_| {
            let its = custom.as_ref().unwrap_or(&overview.iterations);
            let drill = drilldown(&trace, &overview.cpu, its, k, DEFAULT_MIN_GAP_NS, TOP);
            let path = summarise(&Graph::new(&trace), its, k);
            (drill, path)
        }));
        self.drilldown = None;
        self.path = None;
        self.selected = Some(k);
    }

    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        timeline: &Timeline,
        nav: &mut Vec<Nav>,
        compared: Option<&Iterations>,
    ) {
        if let Some(((), its)) = take_answer(&mut self.pending) {
            self.custom = Some(its);
            self.selected = None;
            self.drilldown = None;
            self.pending_drilldown = None;
        }
        self.marker_bar(ui, trace, overview);
        let its = self.iterations(overview);
        if its.count() == 0 {
            ui.label(no_iterations_text(trace, overview));
            if !trace.devices.is_empty()
                && its.source != Source::Heuristic
                && ui
                    .button("Use the synchronising-call heuristic")
                    .on_hover_text("Iterations from one synchronising call's end to the next one's, on each GPU's launching thread")
                    .clicked()
            {
                self.recompute(trace, ui.ctx(), Some(HEURISTIC_MARKER.to_string()));
            }
            return;
        }
        let mut open = None;
        let (longest, steady) = its.across_gpus();
        if let Some(k) = its.slowest_index
            && let Some(&ns) = longest.get(k)
        {
            let median = steady.median_ns;
            let text = format!(
                "Slowest: iter {k}: {}, {:+.0} % over the median across GPUs ({})",
                format_ns(ns),
                pct(ns - median, median),
                format_ns(median)
            );
            if ui.button(RichText::new(text).strong()).clicked() {
                open = Some(k);
            }
        }
        if let Some(k) = slow_and_legend(ui, trace, its, compared, steady.median_ns) {
            open = Some(k);
        }
        // Plots on the left, the drill-down beside them.
        let height = ((ui.available_height() - 30.0) / 2.0).clamp(80.0, 220.0);
        let plots_width = (ui.available_width() * 0.42).max(260.0);
        ui.horizontal_top(|ui| {
            ui.allocate_ui(egui::vec2(plots_width, 2.0 * height + 10.0), |ui| {
                ui.vertical(|ui| {
                    if let Some(k) = duration_plot(ui, trace, its, compared, self.selected, height) {
                        open = Some(k);
                    }
                    histogram(ui, its, height);
                });
            });
            ui.separator();
            ui.vertical(|ui| match &self.drilldown {
                Some(d) => {
                    egui::ScrollArea::both()
                        .id_salt("drilldown")
                        .show(ui, |ui| {
                            show_drilldown(ui, trace, d, self.path.as_ref(), timeline, nav)
                        });
                }
                None if self.pending_drilldown.is_some() => {
                    ui.horizontal(|ui| {
                        crate::ui::busy(ui);
                        ui.label("Comparing the iteration with the median one…");
                    });
                }
                None => {
                    ui.label("Click an iteration (in the plot, or a button above) to zoom to it and see what made it differ.");
                }
            });
        });
        if let Some(k) = open {
            self.open(k, trace, overview, nav);
        }
    }

    fn marker_bar(&mut self, ui: &mut egui::Ui, trace: &Arc<Trace>, overview: &Overview) {
        let its = self.iterations(overview);
        let source = match its.source {
            Source::Detected => "auto-detected",
            Source::Given => "given",
            Source::Heuristic => "synchronising-call heuristic",
            Source::None => "none",
        };
        let summary = format!(
            "{} iterations · marker: {} ({source})",
            its.count(),
            its.marker.as_deref().unwrap_or("-")
        );
        ui.horizontal_wrapped(|ui| {
            ui.label(summary);
            ui.separator();
            let label = ui.label("marker");
            let edit = ui
                .add(
                    egui::TextEdit::singleline(&mut self.marker_text)
                        .hint_text("NVTX text, e.g. step_#")
                        .desired_width(180.0),
                )
                .labelled_by(label.id);
            let typed = !self.marker_text.trim().is_empty();
            let entered = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if ui
                .add_enabled(typed, egui::Button::new("Use marker"))
                .clicked()
                || (typed && entered)
            {
                self.recompute(trace, ui.ctx(), Some(self.marker_text.trim().to_string()));
            }
            if ui
                .add_enabled(self.custom.is_some(), egui::Button::new("Auto-detect"))
                .clicked()
            {
                self.custom = None;
                self.selected = None;
                self.drilldown = None;
            }
            if self.pending.is_some() {
                crate::ui::busy(ui);
            }
        });
    }

    /// Finds the iterations of `marker` on a worker thread.
    fn recompute(&mut self, trace: &Arc<Trace>, ctx: &egui::Context, marker: Option<String>) {
        let trace = trace.clone();
        self.pending = Some(Task::compute((), Some(ctx), move |_| {
            iterations(&trace, marker.as_deref())
        }));
    }
}

/// The unit plots show iteration times in: the one that reads the median best.
fn time_unit(its: &Iterations) -> (f64, &'static str) {
    let mut medians: Vec<i64> = its.per_device.iter().map(|d| d.median_ns).collect();
    medians.sort_unstable();
    match medians.get(medians.len() / 2).copied().unwrap_or(0) {
        m if m >= 10_000_000_000 => (1e9, "s"),
        m if m >= 1_000_000 => (1e6, "ms"),
        m if m >= 1_000 => (1e3, "µs"),
        _ => (1.0, "ns"),
    }
}

/// Durations by iteration, one line per GPU (with a legend); slow ones as red points,
/// warm-up as a dashed line. Both axes start at 0. Returns the iteration clicked.
fn duration_plot(
    ui: &mut egui::Ui,
    trace: &Trace,
    its: &Iterations,
    compared: Option<&Iterations>,
    selected: Option<usize>,
    height: f32,
) -> Option<usize> {
    let (per, unit) = time_unit(its);
    let weak = ui.visuals().weak_text_color();
    let response = Plot::new("iteration durations")
        .height(height)
        .x_axis_label("iteration")
        .y_axis_label(format!("GPU time ({unit})"))
        .y_axis_min_width(44.0)
        .include_x(0.0)
        .include_x(its.count().saturating_sub(1) as f64)
        .include_y(0.0)
        .x_grid_spacer(|input| round_marks(input, 6.0))
        .y_grid_spacer(|input| round_marks(input, 2.5))
        .allow_scroll(false)
        .show(ui, |plot| {
            // The median named (across GPUs, as every place says it), so a line far from 0
            // still reads against a value.
            let median = its.across_gpus().1.median_ns;
            if median > 0 {
                let m = median as f64 / per;
                plot.hline(
                    egui_plot::HLine::new(format!("median across GPUs {m:.3} {unit}"), m)
                        .style(egui_plot::LineStyle::dashed_loose())
                        .color(weak),
                );
            }
            for (i, d) in its.per_device.iter().enumerate() {
                let points: Vec<[f64; 2]> = d
                    .durations_ns
                    .iter()
                    .enumerate()
                    .map(|(k, ns)| [k as f64, *ns as f64 / per])
                    .collect();
                plot.line(
                    Line::new(trace.gpu_name(d.device), PlotPoints::new(points))
                        .color(device_color(i)),
                );
                let slow: Vec<[f64; 2]> = d
                    .slow_indices
                    .iter()
                    .filter_map(|&k| Some([k as f64, *d.durations_ns.get(k)? as f64 / per]))
                    .collect();
                plot.points(
                    Points::new("slow", PlotPoints::new(slow))
                        .radius(4.0)
                        .color(Color32::RED),
                );
            }
            // The compared run, GPU by GPU in the same colours, dashed.
            for (i, d) in compared
                .iter()
                .flat_map(|c| c.per_device.iter())
                .enumerate()
            {
                let points: Vec<[f64; 2]> = d
                    .durations_ns
                    .iter()
                    .enumerate()
                    .map(|(k, ns)| [k as f64, *ns as f64 / per])
                    .collect();
                plot.line(
                    Line::new(
                        format!("compared {}", trace.gpu_name(d.device)),
                        PlotPoints::new(points),
                    )
                    .color(device_color(i))
                    .style(egui_plot::LineStyle::dashed_dense()),
                );
            }
            if let Some(w) = its
                .per_device
                .iter()
                .map(|d| d.warmup)
                .max()
                .filter(|w| *w > 0)
            {
                plot.vline(
                    // Unnamed: no legend entry (the dashed line explains itself).
                    VLine::new("", w as f64 - 0.5)
                        .color(Color32::GRAY)
                        .style(egui_plot::LineStyle::dashed_loose()),
                );
            }
            if let Some(k) = selected {
                plot.vline(VLine::new("", k as f64).color(theme::SELECTION));
            }
        });
    save_menu(&response.response, figures::data::OVER_TIME);
    if response.response.clicked()
        && let Some(pos) = response.response.interact_pointer_pos()
    {
        let k = response.transform.value_from_position(pos).x.round();
        if k >= 0.0 && (k as usize) < its.count() {
            return Some(k as usize);
        }
    }
    None
}

/// Where a log-count axis puts its marks: at counts 0, 1, 10, 100, … (bars are
/// `log10(count + 1)` high, so each mark reads as a round count).
/// Grid marks at round values (1-2-5 steps), about `count` over the visible range (a
/// short plot gets few, so that each keeps its label), with finer unlabelled ones between:
/// every axis gets labelled ticks, however far from 0 the data.
fn round_marks(input: egui_plot::GridInput, count: f64) -> Vec<egui_plot::GridMark> {
    let (lo, hi) = input.bounds;
    let span = (hi - lo).abs().max(f64::MIN_POSITIVE);
    let raw = span / count;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|f| f * power)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * power);
    let mut marks = Vec::new();
    for (size, every) in [(step, step), (step / 5.0, step / 5.0)] {
        let first = (lo / every).ceil() as i64;
        let last = (hi / every).floor() as i64;
        if last - first > 200 {
            continue;
        }
        marks.extend((first..=last).map(|k| egui_plot::GridMark {
            value: k as f64 * every,
            step_size: size,
        }));
    }
    marks
}

fn log_count_marks(input: egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    let top = input.bounds.1.max(1.0);
    let mut marks = vec![egui_plot::GridMark {
        value: 0.0,
        step_size: 1.0,
    }];
    let mut count = 1.0f64;
    while (count + 1.0).log10() <= top {
        marks.push(egui_plot::GridMark {
            value: (count + 1.0).log10(),
            step_size: 1.0,
        });
        count *= 10.0;
    }
    marks
}

/// Histogram of the steady-state durations of every GPU, counts on a log scale so that the
/// few slow iterations show beside the thousands of normal ones; their bars are red.
fn histogram(ui: &mut egui::Ui, its: &Iterations, height: f32) {
    let (per, unit) = time_unit(its);
    let mut values: Vec<(f64, bool)> = Vec::new();
    for d in &its.per_device {
        for (k, ns) in d.durations_ns.iter().enumerate().skip(d.warmup) {
            values.push((*ns as f64 / per, d.slow_indices.contains(&k)));
        }
    }
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), (v, _)| {
            (lo.min(*v), hi.max(*v))
        });
    if values.is_empty() || hi <= lo {
        ui.label("(all iterations take the same time)");
        return;
    }
    let bins = 40;
    let width = (hi - lo) / bins as f64;
    // Per bin: iterations, and how many of them are slow (red when most are).
    let mut counts = vec![(0usize, 0usize); bins];
    for (v, slow) in &values {
        let bin = &mut counts[(((v - lo) / width) as usize).min(bins - 1)];
        bin.0 += 1;
        bin.1 += *slow as usize;
    }
    let bars: Vec<Bar> = counts
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| *c > 0)
        .map(|(i, &(c, slow))| {
            let color = if 2 * slow > c {
                Color32::RED
            } else {
                theme::COMPUTE
            };
            Bar::new(lo + (i as f64 + 0.5) * width, (c as f64 + 1.0).log10())
                .width(width * 0.9)
                .fill(color)
                .name(format!("{c} iterations"))
        })
        .collect();
    let response = Plot::new("iteration histogram")
        .height(height)
        .x_axis_label(format!("steady-state iteration time ({unit})"))
        .y_axis_label("iterations (log)")
        .y_axis_min_width(44.0)
        .include_y(0.0)
        .y_grid_spacer(log_count_marks)
        .y_axis_formatter(|mark, _| format!("{:.0}", 10f64.powf(mark.value) - 1.0))
        .allow_scroll(false)
        .show(ui, |plot| plot.bar_chart(BarChart::new("durations", bars)));
    save_menu(&response.response, figures::data::HISTOGRAM);
}

/// The slow iterations' buttons and the plot's legend, on one wrapped row; the iteration
/// whose button was clicked.
fn slow_and_legend(
    ui: &mut egui::Ui,
    trace: &Trace,
    its: &Iterations,
    compared: Option<&Iterations>,
    steady_median_ns: i64,
) -> Option<usize> {
    let mut open = None;
    ui.horizontal_wrapped(|ui| {
        let slow: Vec<usize> = {
            let mut all: Vec<usize> = its
                .per_device
                .iter()
                .flat_map(|d| d.slow_indices.clone())
                .collect();
            all.sort_unstable();
            all.dedup();
            all
        };
        if !slow.is_empty() {
            ui.label("slow:");
            for &k in slow.iter().take(12) {
                if ui.small_button(format!("iter {k}")).clicked() {
                    open = Some(k);
                }
            }
            if slow.len() > 12 {
                ui.label(format!("and {} more", slow.len() - 12));
            }
            ui.separator();
        }
        // The plot's legend, in this row: inside a plot this short it hid the lines.
        for (i, d) in its.per_device.iter().enumerate() {
            ui.label(
                RichText::new(format!("— {}", trace.gpu_name(d.device))).color(device_color(i)),
            );
        }
        if compared.is_some() {
            ui.label(RichText::new("- - compared run").color(Color32::GRAY));
        }
        ui.label(RichText::new("• slow").color(Color32::RED));
        let median = if steady_median_ns > 0 {
            format!(
                ", across: the median across GPUs ({}; an iteration as long as its slowest GPU)",
                format_ns(steady_median_ns)
            )
        } else {
            String::new()
        };
        ui.label(RichText::new(format!("dashed: end of warm-up{median}")).color(Color32::GRAY));
    });
    open
}

/// Why there are no iterations, in terms of what the trace holds.
fn no_iterations_text(trace: &Trace, overview: &Overview) -> String {
    if trace.devices.is_empty() {
        let waiting = overview.cpu_sync.first().map_or(String::new(), |t| {
            format!(
                " Its busiest thread spent {:.0} % of its time in synchronising calls (see the summary).",
                t.share_pct()
            )
        });
        return format!(
            "No GPU activity recorded, so no iteration can be measured (an iteration is the GPU span of the kernels it launched).{waiting}"
        );
    }
    let syncs = overview
        .cpu_sync
        .iter()
        .map(|t| t.sync_calls)
        .sum::<usize>();
    let nvtx = trace.nvtx_range_count();
    format!(
        "No iteration marker found: none of the {nvtx} NVTX ranges repeats around the kernels as a step does (op-level ranges such as aten::… are not markers). Type a marker above (digits match any number), or split the run at its {syncs} synchronising calls:"
    )
}
