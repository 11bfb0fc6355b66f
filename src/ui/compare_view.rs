//! A second run beside the loaded one (File ▸ Compare with…, `--compare AFTER`): its
//! timeline under the first on a shared axis, aligned at an iteration (the median one by
//! default) so the same step of both runs lines up; the Diff tab's tables; clicks on a
//! kernel or a gap pattern mark it in both timelines.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eframe::egui::{self, RichText};
use egui_extras::{Column, TableBuilder};

use super::task::Task;
use super::timeline::search::Mode;
use super::timeline::{Nav, Timeline};
use crate::compare::{self, Comparison, Run};
use crate::format::{format_ns, shorten_middle, signed_ns};
use crate::overview::{self, Overview};
use crate::trace::{DeviceId, Trace};

/// The run compared with, once loaded and analysed, and the comparison of the two.
pub struct Other {
    pub trace: Arc<Trace>,
    pub overview: Arc<Overview>,
    pub timeline: Timeline,
    pub comparison: Comparison,
}

type Loaded = Result<Box<Other>, String>;

pub enum CompareState {
    /// Waiting for the first run's analyses before starting.
    Waiting,
    Loading(Task<(), Loaded>),
    Ready(Box<Other>),
    Failed(String),
}

pub struct Compare {
    pub path: PathBuf,
    pub state: CompareState,
    /// The iteration both runs are aligned at (`None`: each run's median iteration).
    pub align_at: Option<usize>,
    /// Added to the first run's times to get the second's at the same point of the step.
    pub offset_ns: i64,
    /// The first run's iteration last opened: opening one aligns both runs at it.
    followed: Option<usize>,
}

impl Compare {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            state: CompareState::Waiting,
            align_at: None,
            offset_ns: 0,
            followed: None,
        }
    }

    pub fn ready(&self) -> Option<&Other> {
        match &self.state {
            CompareState::Ready(o) => Some(o),
            _ => None,
        }
    }

    pub fn busy(&self) -> bool {
        matches!(self.state, CompareState::Waiting | CompareState::Loading(_))
    }

    /// Starts the load once the first run is analysed; collects it when done.
    pub fn poll(
        &mut self,
        first: &Arc<Trace>,
        first_overview: Option<&Arc<Overview>>,
        ctx: &egui::Context,
    ) {
        match &self.state {
            CompareState::Waiting => {
                if let Some(o) = first_overview {
                    let job = start(&self.path, first.clone(), o.clone(), ctx);
                    self.state = CompareState::Loading(job);
                }
            }
            CompareState::Loading(job) => {
                if let Some(answer) = job.poll() {
                    self.state = match answer {
                        Ok(other) => CompareState::Ready(other),
                        Err(e) => CompareState::Failed(e),
                    };
                    self.realign(first, first_overview);
                }
            }
            _ => {}
        }
    }

    /// Aligns the runs at iteration `k` when it is newly opened in the first run (so the
    /// step being looked at is the one lined up).
    pub fn follow_iteration(
        &mut self,
        k: Option<usize>,
        first: &Trace,
        first_overview: Option<&Arc<Overview>>,
    ) {
        if k.is_some() && k != self.followed {
            self.followed = k;
            self.align_at = k;
            self.realign(first, first_overview);
            // The same iteration outlined in the second run.
            if let (Some(k), Some(other)) = (k, self.ready_mut()) {
                let trace = other.trace.clone();
                let marks = other.overview.iterations.spans_of(&trace, k);
                other.timeline.apply(&trace, Nav::MarkIteration(marks));
            }
        }
    }

    fn ready_mut(&mut self) -> Option<&mut Other> {
        match &mut self.state {
            CompareState::Ready(o) => Some(o),
            _ => None,
        }
    }

    /// Sets the offset from the chosen iteration (or each run's median one) of the first
    /// GPU both runs have.
    pub fn realign(&mut self, first: &Trace, first_overview: Option<&Arc<Overview>>) {
        let (Some(other), Some(fo)) = (self.ready(), first_overview) else {
            return;
        };
        let Some(pair) = other.comparison.devices.first() else {
            return;
        };
        let start_of = |o: &Overview, device: DeviceId, k: Option<usize>| {
            let d = o
                .iterations
                .per_device
                .iter()
                .find(|d| d.device == device)?;
            let k = k.or(d.median_index)?;
            d.spans.get(k).copied().flatten().map(|w| w.start)
        };
        let offset = match (
            start_of(fo, pair.device, self.align_at),
            start_of(&other.overview, pair.after_device, self.align_at),
        ) {
            (Some(a), Some(b)) => b - a,
            // No iterations: the runs' starts line up.
            _ => other.trace.time_origin().unwrap_or(0) - first.time_origin().unwrap_or(0),
        };
        self.offset_ns = offset;
    }

    /// Draws the second timeline in `ui`, its view following `first`'s; a zoom or pan of
    /// its own moves `first` too. Returns whether something was selected on it.
    pub fn show_timeline(&mut self, ui: &mut egui::Ui, first: &mut Timeline) -> bool {
        let offset = self.offset_ns as f64;
        let set = (first.view.0 + offset, first.view.1 + offset);
        let Some(other) = self.ready_mut() else {
            return false;
        };
        other.timeline.view = set;
        let trace = other.trace.clone();
        let selected = other.timeline.show(ui, &trace).selected;
        let view = other.timeline.view;
        if view != set {
            first.view = (view.0 - offset, view.1 - offset);
            ui.ctx().request_repaint();
        }
        selected
    }
}

fn start(
    path: &Path,
    first: Arc<Trace>,
    first_overview: Arc<Overview>,
    ctx: &egui::Context,
) -> Task<(), Loaded> {
    let path = path.to_path_buf();
    let first_path = PathBuf::from("before");
    Task::compute((), Some(ctx), move |_cancel| {
        let options = overview::Options {
            top: 20,
            ..Default::default()
        };
        let (trace, overview) = crate::session::analysed(std::slice::from_ref(&path), &options)?;
        let comparison = compare::compare(
            &Run {
                path: &first_path,
                trace: &first,
                overview: &first_overview,
            },
            &Run {
                path: &path,
                trace: &trace,
                overview: &overview,
            },
        );
        let mut timeline = Timeline::new(&trace);
        timeline.settings.keys_anywhere = false;
        Ok(Box::new(Other {
            trace,
            overview,
            timeline,
            comparison,
        }))
    })
}

impl Compare {
    /// The Diff tab: alignment, warnings, the verdict, per-GPU deltas, kernels and gap
    /// patterns by change (a click marks the kernel or pattern in both timelines).
    pub fn diff_tab(
        &mut self,
        ui: &mut egui::Ui,
        first: &Trace,
        first_overview: Option<&Arc<Overview>>,
        first_navs: &mut Vec<Nav>,
    ) {
        let name = super::file_name(&self.path);
        match &self.state {
            CompareState::Waiting => {
                ui.label(format!("Comparing with {name} once this run is analysed…"));
                return;
            }
            CompareState::Loading(_) => {
                ui.horizontal(|ui| {
                    crate::ui::busy(ui);
                    ui.label(format!("Loading and analysing {name}…"));
                });
                return;
            }
            CompareState::Failed(e) => {
                ui.colored_label(ui.visuals().warn_fg_color, format!("Cannot compare: {e}"));
                return;
            }
            CompareState::Ready(_) => {}
        }
        let mut realign = false;
        ui.horizontal(|ui| {
            ui.label(format!("after: {name} — runs aligned at"));
            if ui
                .selectable_label(self.align_at.is_none(), "each one's median iteration")
                .clicked()
            {
                self.align_at = None;
                realign = true;
            }
            if ui
                .selectable_label(self.align_at.is_some(), "iteration")
                .on_hover_text("Iteration N of both runs lines up")
                .clicked()
                && self.align_at.is_none()
            {
                self.align_at = Some(0);
                realign = true;
            }
            if let Some(k) = &mut self.align_at
                && ui
                    .add(egui::DragValue::new(k).range(0..=1_000_000))
                    .changed()
            {
                realign = true;
            }
            ui.label(format!(
                "(after's clock = before's {})",
                signed_ns(self.offset_ns)
            ));
        });
        if realign {
            self.realign(first, first_overview);
        }
        let Some(other) = self.ready_mut() else {
            return;
        };
        let c = &other.comparison;
        for w in &c.warnings {
            ui.colored_label(ui.visuals().warn_fg_color, w);
        }
        // The UI font has no arrow glyph.
        ui.label(compare::report::verdict(c).replace('→', "->"));
        ui.separator();
        let mut clicked_kernel = None;
        let mut clicked_pattern = None;
        egui::ScrollArea::vertical()
            .id_salt("diff tab")
            .show(ui, |ui| {
                device_grid(ui, c);
                ui.add_space(6.0);
                ui.strong("Kernels by change (all GPUs; click one to find it in both timelines)");
                clicked_kernel = kernel_table(ui, c);
                ui.add_space(6.0);
                ui.strong("Recurring gap patterns by change (click one to mark it in both)");
                clicked_pattern = pattern_table(ui, c);
            });
        if let Some(name) = clicked_kernel {
            let nav = |query: &str| Nav::Find {
                query: query.to_string(),
                mode: Mode::Exact,
            };
            first_navs.push(nav(&name));
            let trace = other.trace.clone();
            other.timeline.apply(&trace, nav(&name));
        }
        if let Some(signature) = clicked_pattern {
            let first_gap = first_overview.and_then(|o| first_gap_of(o, &signature));
            if let Some(gap) = first_gap {
                first_navs.push(Nav::ShowGap(gap));
            }
            let trace = other.trace.clone();
            let mark = first_gap_of(&other.overview, &signature)
                .and_then(|g| Some((trace.device_index(g.device_id())?, g.start_ns, g.end_ns())));
            other.timeline.apply(&trace, Nav::Highlight(mark));
        }
    }
}

/// Rows listed in each Diff table (largest change first).
const TABLE_ROWS: usize = 40;

fn first_gap_of(o: &Overview, signature: &str) -> Option<crate::analysis::gaps::Gap> {
    let p = o.recurring.iter().find(|p| p.signature == signature)?;
    o.gaps.get(*p.members.first()? as usize).copied()
}

/// Per GPU: the median iteration before and after, its delta and where it went.
fn device_grid(ui: &mut egui::Ui, c: &Comparison) {
    egui::Grid::new("diff devices")
        .striped(true)
        .num_columns(10)
        .show(ui, |ui| {
            for h in [
                "GPU",
                "median before",
                "after",
                "delta",
                "compute only",
                "NCCL only",
                "overlap",
                "idle",
                "idle by cause",
                "whole run",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for d in &c.devices {
                ui.label(d.device.to_string());
                match (d.before_median_ns(), d.after_median_ns(), d.delta_ns()) {
                    (Some(b), Some(a), Some(delta)) => {
                        ui.label(format_ns(b));
                        ui.label(format_ns(a));
                        ui.strong(signed_ns(delta));
                    }
                    _ => {
                        ui.label("–");
                        ui.label("–");
                        ui.label("–");
                    }
                }
                let parts = d.breakdown_delta();
                for k in [0, 1, 2, 4] {
                    ui.label(parts.map_or("–".into(), |p| signed_ns(p[k].1)));
                }
                let idle_text = d.idle_delta().map_or_else(String::new, |i| {
                    let parts: Vec<String> = i
                        .parts()
                        .iter()
                        .filter(|p| p.1.abs() >= 1_000)
                        .map(|(n, v)| format!("{n} {}", signed_ns(*v)))
                        .collect();
                    parts.join(", ")
                });
                ui.label(RichText::new(idle_text).small());
                ui.label(d.run_delta_ns().map_or("–".into(), signed_ns));
                ui.end_row();
            }
        });
}

/// One row of a Diff table: its change, counts before and after, and what it is.
struct ChangeRow {
    delta_ns: i64,
    counts: String,
    name: String,
    hover: String,
}

/// A table of changes, largest first; returns the row whose name was clicked.
fn change_table(ui: &mut egui::Ui, id: &str, what: &str, rows: &[ChangeRow]) -> Option<usize> {
    let mut clicked = None;
    TableBuilder::new(ui)
        .id_salt(id)
        .vscroll(false)
        .striped(true)
        .column(Column::exact(80.0))
        .column(Column::exact(110.0))
        .column(Column::remainder().clip(true))
        .header(18.0, |mut h| {
            for title in ["delta", "count", what] {
                h.col(|ui| {
                    ui.strong(title);
                });
            }
        })
        .body(|body| {
            body.rows(18.0, rows.len(), |mut row| {
                let k = row.index();
                let r = &rows[k];
                row.col(|ui| {
                    ui.label(signed_ns(r.delta_ns));
                });
                row.col(|ui| {
                    ui.label(&r.counts);
                });
                row.col(|ui| {
                    if ui.link(&r.name).on_hover_text(&r.hover).clicked() {
                        clicked = Some(k);
                    }
                });
            });
        });
    clicked
}

fn kernel_table(ui: &mut egui::Ui, c: &Comparison) -> Option<String> {
    let kernels: Vec<_> = c.kernels.iter().take(TABLE_ROWS).collect();
    let rows: Vec<ChangeRow> = kernels
        .iter()
        .map(|k| ChangeRow {
            delta_ns: k.delta_ns(),
            counts: format!("{} -> {}", k.before_count, k.after_count),
            name: shorten_middle(&k.name, 70),
            hover: format!(
                "{}\n{} -> {}",
                k.name,
                format_ns(k.before_total_ns),
                format_ns(k.after_total_ns)
            ),
        })
        .collect();
    change_table(ui, "diff kernels", "kernel", &rows).map(|k| kernels[k].name.clone())
}

fn pattern_table(ui: &mut egui::Ui, c: &Comparison) -> Option<String> {
    let patterns: Vec<_> = c.patterns.iter().take(TABLE_ROWS).collect();
    let rows: Vec<ChangeRow> = patterns
        .iter()
        .map(|p| {
            // The UI font has no arrow glyph.
            let signature = p.signature.replace('→', "->");
            ChangeRow {
                delta_ns: p.delta_ns(),
                counts: format!("{}× -> {}×", p.before_count, p.after_count),
                name: shorten_middle(&signature, 80),
                hover: format!(
                    "{signature}\n{} -> {}",
                    format_ns(p.before_total_ns),
                    format_ns(p.after_total_ns)
                ),
            }
        })
        .collect();
    change_table(
        ui,
        "diff patterns",
        "before -> after (inside) [cause]",
        &rows,
    )
    .map(|k| patterns[k].signature.clone())
}
