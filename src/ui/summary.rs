//! The summary panel: per GPU, where time goes (compute only, NCCL only, overlap, memory
//! only, idle) as a stacked bar and clickable numbers, for the whole trace or the current
//! window. A click on a category overlays its intervals on that GPU's rows and lists them.

use std::sync::Arc;

use eframe::egui::{self, Sense};
use rayon::prelude::*;

use super::figures_window::save_menu;
use super::task::{Task, take_answer};
use super::theme::state_color;
use super::timeline::{Margin, Nav, Overlay, Timeline};
use crate::analysis::breakdown::{
    Breakdown, SameStream, State, breakdown, pct, same_stream, state_intervals,
};
use crate::analysis::gpu_metrics::activity_means;
use crate::analysis::intervals::Window;
use crate::format::format_ns;
use crate::overview::Overview;
use crate::trace::{Device, DeviceIndex, Trace};

#[derive(Default)]
pub struct SummaryPanel {
    /// Breakdowns of the current window (it changes rarely; recomputed when it does).
    window_rows: Option<((i64, i64), Vec<DeviceRow>)>,
    /// The breakdowns of a new window, computed on a worker thread (a window over the whole
    /// of a large trace takes a few hundred ms).
    pending: Option<PendingWindow>,
    /// Graph launches recorded whole: their time is counted, their kernels unknown (said
    /// above the breakdowns).
    pub graphs_note: Option<String>,
    /// The GPU used for a sliver of the capture: said first.
    pub capture_note: Option<String>,
    /// Per GPU, SMs and Tensor Active over its whole analysed window: worked out once, on
    /// a worker (a pass over every sample).
    whole_activity: Option<Arc<WholeActivity>>,
    whole_activity_job: Option<Task<(), Arc<WholeActivity>>>,
}

type WholeActivity = std::collections::HashMap<crate::trace::DeviceId, [Option<f64>; 2]>;

/// A window and the worker's answer for it.
type PendingWindow = Task<(i64, i64), Vec<DeviceRow>>;

#[derive(Clone)]
struct DeviceRow {
    window: Window,
    breakdown: Breakdown,
    same_stream: Option<SameStream>,
    /// SMs and Tensor Active over the window (a capture with GPU metrics).
    activity: [Option<f64>; 2],
}

impl SummaryPanel {
    /// SMs and Tensor Active of each GPU over its whole analysed window, asked of a worker
    /// the first time (none meanwhile, or without metrics).
    fn whole_activity(
        &mut self,
        trace: &Arc<Trace>,
        overview: &Overview,
        ctx: &egui::Context,
    ) -> Option<Arc<WholeActivity>> {
        if trace.gpu_metrics.is_empty() {
            return None;
        }
        if let Some(((), a)) = take_answer(&mut self.whole_activity_job) {
            self.whole_activity = Some(a);
        }
        if self.whole_activity.is_none() && self.whole_activity_job.is_none() {
            let trace = trace.clone();
            let windows: Vec<_> = overview
                .devices
                .iter()
                .map(|s| (s.device, s.window))
                .collect();
            self.whole_activity_job = Some(Task::compute((), Some(ctx), move |_| {
                Arc::new(
                    windows
                        .into_iter()
                        .map(|(d, w)| (d, activity_means(&trace, d, (w.start, w.end))))
                        .collect(),
                )
            }));
        }
        self.whole_activity.clone()
    }

    /// Starts (or collects) the breakdowns of window `w` on a worker; true once they are in.
    fn window_ready(&mut self, trace: &Arc<Trace>, w: (i64, i64), ctx: &egui::Context) -> bool {
        if let Some(answer) = take_answer(&mut self.pending) {
            self.window_rows = Some(answer);
        }
        if self.window_rows.as_ref().is_some_and(|r| r.0 == w) {
            return true;
        }
        if self.pending.as_ref().map(|p| p.key) != Some(w) {
            let trace = trace.clone();
            // A newer window replaces (and so cancels) the one in flight.
            self.pending = Some(Task::compute(w, Some(ctx), move |_| {
                let window = Window::new(w.0, w.1);
                trace
                    .devices
                    .par_iter()
                    .map(|d| {
                        let b = breakdown(d, window);
                        DeviceRow {
                            window,
                            breakdown: b,
                            same_stream: same_stream(d, window).map(|s| s.with_hidden(&b)),
                            activity: activity_means(&trace, d.id, w),
                        }
                    })
                    .collect()
            }));
        }
        false
    }

    #[allow(clippy::too_many_arguments)]
    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        overview: Option<&Overview>,
        selected: Option<&Overview>,
        timeline: &Timeline,
        nav: &mut Vec<Nav>,
        no_kernel_table: bool,
    ) {
        ui.heading("Where time goes");
        if let Some(note) = &self.capture_note {
            ui.label(
                egui::RichText::new(note)
                    .small()
                    .color(super::theme::STRAGGLER),
            );
        }
        if let Some(note) = &self.graphs_note {
            // Graph launches recorded whole: their time is counted, their kernels unknown.
            ui.label(
                egui::RichText::new(note)
                    .small()
                    .color(super::theme::STRAGGLER),
            );
        }
        let Some(rows) = self.rows(ui, trace, overview, timeline, nav) else {
            return;
        };
        if trace.devices.is_empty() {
            ui.add_space(8.0);
            ui.label(egui::RichText::new("No GPU activity recorded").strong());
            ui.label(if no_kernel_table {
                "The export has no kernel table: it was captured without CUDA tracing of the GPU, or nothing ran on one."
            } else {
                "The export holds no kernel, memcpy or memset."
            });
        }
        for (index, (device, row)) in trace.devices.iter().zip(rows).enumerate() {
            let index = DeviceIndex(index);
            ui.add_space(8.0);
            ui.strong(device.label());
            let Some(row) = row else {
                ui.label("no GPU activity");
                continue;
            };
            device_rows(ui, device, index, &row, timeline, nav);
        }
        // The selected range's when there is one (and it is worked out), else the run's.
        match (timeline.window, selected) {
            (Some(_), Some(s)) => cpu_sync(ui, s, true),
            (Some(_), None) => {}
            (None, _) => {
                if let Some(overview) = overview {
                    cpu_sync(ui, overview, false);
                }
            }
        }
    }

    /// Each device's row for the picked window or the whole trace; `None`, with a line
    /// saying so, while it is worked out.
    fn rows(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        overview: Option<&Overview>,
        timeline: &Timeline,
        nav: &mut Vec<Nav>,
    ) -> Option<Vec<Option<DeviceRow>>> {
        match timeline.window {
            Some(w) => {
                let ready = self.window_ready(trace, w, ui.ctx());
                ui.horizontal(|ui| {
                    ui.label(format!("Current window: {}", format_ns(w.1 - w.0)));
                    if ui.small_button("whole trace").clicked() {
                        nav.push(Nav::Window(None));
                    }
                });
                if !ready {
                    ui.horizontal(|ui| {
                        crate::ui::busy(ui);
                        ui.label("Analysing the window…");
                    });
                    return None;
                }
                Some(
                    self.window_rows
                        .as_ref()
                        .unwrap()
                        .1
                        .iter()
                        .cloned()
                        .map(Some)
                        .collect(),
                )
            }
            None => {
                let Some(overview) = overview else {
                    ui.label("Analysing…");
                    return None;
                };
                ui.label("Whole trace (Shift+drag on the timeline to pick a window).");
                let activity = self.whole_activity(trace, overview, ui.ctx());
                let rows = trace
                    .devices
                    .iter()
                    .map(|d| {
                        overview
                            .devices
                            .iter()
                            .find(|s| s.device == d.id)
                            .map(|s| DeviceRow {
                                window: s.window,
                                breakdown: s.breakdown,
                                same_stream: s.same_stream,
                                activity: activity
                                    .as_ref()
                                    .and_then(|a| a.get(&d.id).copied())
                                    .unwrap_or_default(),
                            })
                    })
                    .collect();
                Some(rows)
            }
        }
    }
}

/// A device's states (a click shows a state's intervals on the timeline and lists them),
/// its same-stream sentence and its GPU metrics.
fn device_rows(
    ui: &mut egui::Ui,
    device: &Device,
    index: DeviceIndex,
    row: &DeviceRow,
    timeline: &Timeline,
    nav: &mut Vec<Nav>,
) {
    stacked_bar(ui, &row.breakdown);
    let total = row.breakdown.total();
    for state in State::ALL {
        let ns = state.of(&row.breakdown);
        let active = timeline
            .marks
            .overlay
            .as_ref()
            .is_some_and(|o| o.device == index && o.state == state && !o.predicted);
        ui.horizontal(|ui| {
            let (r, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, state_color(state));
            let text = format!(
                "{}  {:.1} %  {}",
                state.label(),
                pct(ns, total),
                format_ns(ns)
            );
            if ui
                .selectable_label(active, text)
                .on_hover_text("Show these intervals on the timeline")
                .clicked()
            {
                let overlay = (!active).then(|| overlay_of(device, index, row.window, state));
                nav.push(Nav::Overlay(overlay));
            }
        });
    }
    if let Some(s) = &row.same_stream {
        ui.label(egui::RichText::new(s.sentence()).small());
    }
    if let [Some(sm), tensor] = row.activity {
        let tensor = tensor.map_or(String::new(), |t| format!(", Tensor active {t:.0} %"));
        ui.label(egui::RichText::new(format!("GPU metrics: SMs active {sm:.0} %{tensor}")).small())
            .on_hover_text("Means of the sampled GPU metrics over the window (device-wide): busy is not useful work");
    }
    // The clicked category's intervals, right under it: longest first.
    if let Some(o) = timeline
        .marks
        .overlay
        .as_ref()
        .filter(|o| o.device == index && !o.predicted)
        && let Some((a, b)) = interval_list(ui, o, timeline.full.0)
    {
        nav.push(Nav::ZoomTo {
            start: a,
            end: b,
            margin: Margin::Context,
        });
        nav.push(Nav::RevealDevice(index));
    }
}

fn overlay_of(device: &Device, index: DeviceIndex, window: Window, state: State) -> Overlay {
    let (starts, ends) = state_intervals(device, window, state);
    Overlay::new(index, state, starts, ends)
}

/// The overlay a click on `state` of device `index` adds, over the whole trace.
pub fn overlay(
    trace: &Trace,
    overview: &Overview,
    index: DeviceIndex,
    state: State,
) -> Option<Overlay> {
    let device = trace.devices.get(index.0)?;
    let summary = overview.devices.iter().find(|s| s.device == device.id)?;
    Some(overlay_of(device, index, summary.window, state))
}

/// One bar split by state, widths by share of the window.
fn stacked_bar(ui: &mut egui::Ui, b: &Breakdown) {
    let width = ui.available_width().min(300.0);
    let (rect, response) = ui.allocate_exact_size(egui::vec2(width, 14.0), Sense::click());
    save_menu(&response, crate::figures::data::WALLTIME);
    let total = b.total().max(1) as f32;
    let mut x = rect.left();
    for state in State::ALL {
        let w = state.of(b) as f32 / total * rect.width();
        let r =
            egui::Rect::from_min_max(egui::pos2(x, rect.top()), egui::pos2(x + w, rect.bottom()));
        ui.painter().rect_filled(r, 0.0, state_color(state));
        x += w;
    }
}

/// The CPU threads that waited longest in synchronising calls.
fn cpu_sync(ui: &mut egui::Ui, overview: &Overview, in_window: bool) {
    if overview.cpu_sync.is_empty() {
        return;
    }
    ui.add_space(10.0);
    ui.strong(if in_window {
        "CPU time in synchronising calls (in the window)"
    } else {
        "CPU time in synchronising calls"
    })
        .on_hover_text("Calls that make the CPU wait for the GPU: *Synchronize*, blocking copies. Each thread's share of its own span.");
    for t in overview.cpu_sync.iter().take(4) {
        let name = if t.name.is_empty() { "thread" } else { &t.name };
        ui.label(format!(
            "{name} (tid {}): {:.1} % of {} ({} calls)",
            t.tid,
            t.share_pct(),
            format_ns(t.span_ns),
            t.sync_calls
        ));
        for c in t.by_name.iter().take(2) {
            ui.label(
                egui::RichText::new(format!(
                    "    {}: {}, {} in all",
                    c.name,
                    crate::format::plural(c.count, "call"),
                    format_ns(c.total_ns)
                ))
                .small(),
            );
        }
    }
}

/// The overlay's longest intervals as links; returns the one clicked.
fn interval_list(ui: &mut egui::Ui, o: &Overlay, origin: i64) -> Option<(i64, i64)> {
    ui.add_space(4.0);
    let listed = o.longest_first.len();
    ui.label(
        egui::RichText::new(if listed < o.starts.len() {
            format!(
                "{} intervals, the {listed} longest (click one to zoom to it):",
                o.starts.len()
            )
        } else {
            format!(
                "{} intervals, longest first (click one to zoom to it):",
                listed
            )
        })
        .small(),
    );
    let mut go = None;
    egui::ScrollArea::vertical()
        .id_salt("overlay list")
        .max_height(160.0)
        .show_rows(ui, 18.0, listed, |ui, range| {
            for &i in &o.longest_first[range] {
                let i = i as usize;
                let text = format!(
                    "{} at {}",
                    format_ns(o.ends[i] - o.starts[i]),
                    format_ns(o.starts[i] - origin)
                );
                if ui.link(text).clicked() {
                    go = Some((o.starts[i], o.ends[i]));
                }
            }
        });
    go
}
