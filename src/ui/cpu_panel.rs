//! The CPU tab: what the CPU was running, from nsys's CPU samples, over the time the user
//! chose — the window Shift+drag set on the timeline, else the gap a panel chose, else the
//! whole run — for one sampled thread or all. A flame graph (callers above callees, width
//! the samples) and a bottom-up table (the frames most sampled innermost first). A click on
//! a frame marks its samples on the timeline.

use std::sync::Arc;

use eframe::egui::{self, Color32, Rect, RichText, Sense, Vec2};

use super::task::{Task, take_answer};
use super::timeline::search::RowMatches;
use super::timeline::{Nav, RowKind, Timeline};
use crate::analysis::cpu_samples::{Flame, FrameName, samples_of};
use crate::format::format_ns;
use crate::trace::Trace;

/// What a profile is of: threads (empty: all) and the time span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub threads: Vec<i64>,
    pub start: i64,
    pub end: i64,
}

/// A profile worked out for a scope.
pub struct Profile {
    pub flame: Flame,
    pub bottom_up: Vec<(u32, u64, u64)>,
    /// The samples in the scope (indices into the trace's columns), for marking a frame's.
    pub samples: Vec<usize>,
}

#[derive(Default)]
pub struct CpuPanel {
    /// The chosen thread (global id); `None`: every sampled thread.
    pub thread: Option<i64>,
    pub profile: Option<(Scope, Arc<Profile>)>,
    job: Option<Task<Scope, Arc<Profile>>>,
    /// The frame clicked, whose samples are marked.
    pub chosen: Option<u32>,
    /// The flame graph's share of the panel's height (the split dragged), `None` until
    /// dragged: half.
    pub flame_share: Option<f32>,
}

const ROW_H: f32 = 18.0;
/// The most of the panel's height the flame graph takes: the table keeps a third at least.
const FLAME_MOST: f32 = 2.0 / 3.0;

impl CpuPanel {
    /// The scope the panel shows now.
    pub fn scope(&self, trace: &Trace, timeline: &Timeline) -> Scope {
        let (start, end) = timeline
            .window
            .or_else(|| {
                timeline
                    .marks
                    .selected_gap
                    .map(|g| (g.start_ns, g.end_ns()))
            })
            .unwrap_or((i64::MIN, i64::MAX));
        let _ = trace;
        Scope {
            threads: self.thread.into_iter().collect(),
            start,
            end,
        }
    }

    /// The profile of `scope`, working it out on a thread of its own when it changed.
    fn profile_for(&mut self, trace: &Arc<Trace>, scope: &Scope, ctx: &egui::Context) {
        if let Some((key, p)) = take_answer(&mut self.job) {
            self.profile = Some((key, p));
        }
        let current = self.profile.as_ref().is_some_and(|(s, _)| s == scope);
        let running = self.job.as_ref().is_some_and(|j| &j.key == scope);
        if !current && !running {
            let (trace, s) = (trace.clone(), scope.clone());
            self.job = Some(Task::compute(scope.clone(), Some(ctx), move |_| {
                Arc::new(profile(&trace, &s))
            }));
        }
    }

    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        timeline: &Timeline,
        nav: &mut Vec<Nav>,
    ) {
        // Read after the load: a frame never waits for them.
        let Some(stacks) = trace.call_stacks.get() else {
            ui.label("Reading the call stacks… (they come after the timeline)");
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(200));
            return;
        };
        if let Some(error) = &stacks.read.error {
            ui.label(format!("The call stacks could not be read: {error}"));
            return;
        }
        if stacks.samples.is_empty() {
            ui.label("The capture has no CPU samples (nsys samples the CPU when it launches the program: `nsys profile --sample=process-tree`, its default).");
            return;
        }
        let scope = self.scope(trace, timeline);
        self.profile_for(trace, &scope, ui.ctx());
        ui.horizontal(|ui| {
            ui.strong("CPU samples");
            let label = |t: Option<i64>| match t {
                None => "all sampled threads".to_string(),
                Some(g) => thread_label(trace, g),
            };
            egui::ComboBox::from_id_salt("cpu thread")
                .selected_text(label(self.thread))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.thread, None, label(None));
                    for t in &stacks.samples.threads {
                        let text = format!("{} ({} samples)", label(Some(t.global_tid)), t.count);
                        ui.selectable_value(&mut self.thread, Some(t.global_tid), text);
                    }
                });
            let span = if scope.start == i64::MIN {
                "the whole run (Shift+drag on the timeline to choose a window)".to_string()
            } else {
                format!(
                    "{} from {}",
                    format_ns(scope.end - scope.start),
                    format_ns(scope.start - timeline.full.0)
                )
            };
            ui.label(span);
        });
        let Some((shown, p)) = self.profile.clone() else {
            ui.label("Counting samples…");
            return;
        };
        if shown != scope {
            ui.label(RichText::new("updating…").weak());
        }
        if p.flame.count == 0 {
            ui.label("No samples of this thread in this span.");
            return;
        }
        ui.label(format!(
            "{} samples; click a frame to mark its samples on the timeline",
            p.flame.count
        ));
        // The flame graph above, the table below, the split between them dragged.
        let total = ui.available_height().max(4.0 * ROW_H);
        let share = self.flame_share.unwrap_or(0.5).clamp(0.1, FLAME_MOST);
        let flame_height = (total * share).max(2.0 * ROW_H);
        if let Some(frame) = self.flame_graph(ui, trace, &p, flame_height) {
            self.choose(frame, trace, &p, nav);
        }
        let (handle, dragged) =
            ui.allocate_exact_size(Vec2::new(ui.available_width(), 8.0), Sense::drag());
        let line = if dragged.hovered() || dragged.dragged() {
            ui.visuals().widgets.active.fg_stroke
        } else {
            ui.visuals().widgets.noninteractive.bg_stroke
        };
        ui.painter()
            .hline(handle.x_range(), handle.center().y, line);
        let dragged = dragged.on_hover_cursor(egui::CursorIcon::ResizeVertical);
        if dragged.dragged() {
            let to = flame_height + dragged.drag_delta().y;
            self.flame_share = Some((to / total).clamp(0.1, FLAME_MOST));
        }
        if let Some(frame) = bottom_up_table(ui, trace, &p, self.chosen) {
            self.choose(frame, trace, &p, nav);
        }
    }

    /// Marks the samples of `frame` (or clears the marks when it was chosen already).
    fn choose(&mut self, frame: u32, trace: &Trace, p: &Profile, nav: &mut Vec<Nav>) {
        if self.chosen == Some(frame) {
            self.chosen = None;
            nav.push(Nav::MarkSamples(Vec::new()));
            return;
        }
        self.chosen = Some(frame);
        nav.push(Nav::MarkSamples(samples_marks(trace, p, frame)));
    }

    /// The flame graph, callers on top; the frame clicked, if any.
    fn flame_graph(
        &self,
        ui: &mut egui::Ui,
        trace: &Trace,
        p: &Profile,
        height: f32,
    ) -> Option<u32> {
        let depth = p
            .flame
            .nodes
            .iter()
            .map(|n| n.depth as usize + 1)
            .max()
            .unwrap_or(0);
        let mut clicked = None;
        egui::ScrollArea::vertical()
            .id_salt("flame")
            .max_height(height)
            .min_scrolled_height(height)
            .show(ui, |ui| {
                let width = ui.available_width();
                let (rect, response) =
                    ui.allocate_exact_size(Vec2::new(width, ROW_H * depth as f32), Sense::click());
                let painter = ui.painter_at(rect);
                let scale = width as f64 / p.flame.count.max(1) as f64;
                let hover = response.hover_pos();
                let mut hovered: Option<(usize, Rect)> = None;
                // Each node at its callers' x plus the widths of its elder siblings.
                let mut stack: Vec<(usize, f64)> = Vec::new();
                let mut x = 0.0;
                for &r in &p.flame.roots {
                    stack.push((r, x));
                    x += p.flame.nodes[r].total as f64 * scale;
                }
                while let Some((at, x0)) = stack.pop() {
                    let n = &p.flame.nodes[at];
                    let w = n.total as f64 * scale;
                    if w < 1.0 {
                        continue;
                    }
                    let cell = Rect::from_min_size(
                        rect.min + Vec2::new(x0 as f32, n.depth as f32 * ROW_H),
                        Vec2::new(w as f32 - 1.0, ROW_H - 1.0),
                    );
                    let name = FrameName::of(trace, n.frame);
                    let chosen = self.chosen == Some(n.frame);
                    painter.rect_filled(cell, 2.0, frame_color(&name, chosen));
                    if cell.width() > 30.0 {
                        painter.with_clip_rect(cell).text(
                            cell.left_center() + Vec2::new(3.0, 0.0),
                            egui::Align2::LEFT_CENTER,
                            fit(&name.symbol, cell.width() - 6.0),
                            egui::FontId::monospace(11.0),
                            Color32::BLACK,
                        );
                    }
                    if hover.is_some_and(|h| cell.contains(h)) {
                        hovered = Some((at, cell));
                    }
                    let mut cx = x0;
                    for &c in &n.children {
                        stack.push((c, cx));
                        cx += p.flame.nodes[c].total as f64 * scale;
                    }
                }
                if let Some((at, _)) = hovered {
                    let n = &p.flame.nodes[at];
                    let name = FrameName::of(trace, n.frame);
                    let text = format!(
                        "{}\n{}\n{} samples ({:.1} %), {} innermost",
                        name.symbol,
                        name.module,
                        n.total,
                        100.0 * n.total as f64 / p.flame.count.max(1) as f64,
                        n.own
                    );
                    let response = response.clone().on_hover_text(text);
                    if response.clicked() {
                        clicked = Some(n.frame);
                    }
                }
            });
        clicked
    }
}

/// The bottom-up table: frames by samples they are innermost in; the frame clicked.
fn bottom_up_table(
    ui: &mut egui::Ui,
    trace: &Trace,
    p: &Profile,
    chosen: Option<u32>,
) -> Option<u32> {
    let mut clicked = None;
    // Long names scroll sideways too: the module column stays reachable.
    egui::ScrollArea::both()
        .id_salt("bottom up")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            egui::Grid::new("cpu bottom up")
                .striped(true)
                .show(ui, |ui| {
                    for h in ["self", "total", "function", "module"] {
                        ui.strong(h);
                    }
                    ui.end_row();
                    let pct = |n: u64| 100.0 * n as f64 / p.flame.count.max(1) as f64;
                    for &(frame, own, total) in p.bottom_up.iter().take(200) {
                        let name = FrameName::of(trace, frame);
                        ui.label(format!("{own} ({:.1} %)", pct(own)));
                        ui.label(format!("{total} ({:.1} %)", pct(total)));
                        let text = RichText::new(&name.symbol).monospace();
                        if ui
                            .selectable_label(chosen == Some(frame), text)
                            .on_hover_text("mark its samples on the timeline")
                            .clicked()
                        {
                            clicked = Some(frame);
                        }
                        let module = name.module.rsplit('/').next().unwrap_or(&name.module);
                        ui.label(module.to_string()).on_hover_text(&name.module);
                        ui.end_row();
                    }
                });
        });
    clicked
}

fn thread_label(trace: &Trace, global_tid: i64) -> String {
    let t = trace.stacks().samples.thread(global_tid);
    let tid = crate::trace::tid_of_global_id(global_tid);
    match t.map(|t| t.name.as_str()).filter(|n| !n.is_empty()) {
        Some(name) => format!("{name} ({tid})"),
        None => format!("thread {tid}"),
    }
}

/// Python frames green, unresolved grey, native orange; the chosen frame bright.
fn frame_color(name: &FrameName, chosen: bool) -> Color32 {
    let base = if name.python {
        Color32::from_rgb(120, 190, 110)
    } else if name.unresolved {
        Color32::from_gray(150)
    } else {
        Color32::from_rgb(230, 150, 70)
    };
    if chosen {
        Color32::from_rgb(255, 230, 80)
    } else {
        base
    }
}

/// The profile of `scope`: its samples, their flame graph and bottom-up table.
pub fn profile(trace: &Trace, scope: &Scope) -> Profile {
    let samples = samples_of(trace, &scope.threads, scope.start, scope.end);
    let flame = Flame::of(trace, samples.iter().copied());
    let bottom_up = flame.bottom_up();
    Profile {
        flame,
        bottom_up,
        samples,
    }
}

/// The samples whose stack holds `frame`, one mark a sampling period long each, on the
/// API row of each thread the timeline shows.
fn samples_marks(trace: &Trace, p: &Profile, frame: u32) -> Vec<RowMatches> {
    use nsys_explorer_core::analysis::cpu_samples::{sample_period, samples_holding};
    let period = sample_period(trace);
    samples_holding(trace, &p.samples, frame)
        .into_iter()
        .map(|(thread, starts)| {
            let ends = starts.iter().map(|&s| s + period).collect();
            RowMatches {
                row: RowKind::Api { thread },
                starts,
                ends,
                longest: period,
            }
        })
        .collect()
}

/// `text` cut to `width` px of 11 px monospace, with "…" where it was cut.
fn fit(text: &str, width: f32) -> String {
    // A glyph of 11 px monospace is about 6.6 px wide.
    let room = (width / 6.6).floor().max(1.0) as usize;
    if text.chars().count() <= room {
        return text.to_string();
    }
    let kept: String = text.chars().take(room.saturating_sub(1)).collect();
    format!("{kept}…")
}
