//! The window once a trace is in: the summary on the left, the tabs at the bottom, the
//! timeline in the middle, and what each panel shares with the others.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use super::loading::LoadJob;
use super::split::Split;
use super::timeline::{Nav, Timeline};
use super::{details, gap_finder, iterations_panel, summary, tables};
use crate::analysis::breakdown::State as DeviceState;
use crate::analysis::overview::Overview;
use crate::load::{self, LoadReport};
use crate::trace::Trace;

/// The bottom panel's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Gaps,
    Iterations,
    Kernels,
    Nccl,
    Memory,
    Nvtx,
    Details,
}

pub struct Loaded {
    pub path: PathBuf,
    pub trace: Arc<Trace>,
    /// `None` while the CPU side is still loading.
    pub report: Option<LoadReport>,
    pub timeline: Timeline,
    /// `None` until the analyses have run.
    pub overview: Option<Arc<Overview>>,
    pub tab: Tab,
    pub summary: summary::SummaryPanel,
    pub gaps: gap_finder::GapFinder,
    pub iterations: iterations_panel::IterationsPanel,
    pub tables: tables::Tables,
    /// The rest of the load, then the analyses.
    pub job: Option<LoadJob>,
    /// The load was cancelled after the GPU side came in: that is all there is.
    pub cancelled: bool,
    /// The analyses were cancelled: the whole trace is loaded, the panels are empty.
    pub analyses_cancelled: bool,
}

impl Loaded {
    pub(super) fn new(path: PathBuf, trace: Arc<Trace>, timeline: Timeline, job: LoadJob) -> Self {
        Self {
            path,
            trace,
            report: None,
            timeline,
            overview: None,
            tab: Tab::Gaps,
            summary: Default::default(),
            gaps: Default::default(),
            iterations: Default::default(),
            tables: Default::default(),
            job: Some(job),
            cancelled: false,
            analyses_cancelled: false,
        }
    }

    /// Opens a view the way its clicks would: `idle-overlay` (GPU 0's idle intervals around
    /// the slowest iteration), `recurring-gap` (the top recurring group's first gap) or
    /// `slow-iteration` (the slowest iteration and its drill-down).
    pub fn show(&mut self, view: &str) {
        let Some(overview) = &self.overview else {
            return;
        };
        let trace = self.trace.clone();
        match view {
            "idle-overlay" => {
                let overlay = summary::overlay(&trace, overview, 0, DeviceState::Idle);
                self.timeline.apply(&trace, Nav::Overlay(overlay));
                if let Some(k) = overview.iterations.slowest_index {
                    self.iterations
                        .open(k, &trace, overview, &mut self.timeline);
                    self.timeline.apply(&trace, Nav::Widen);
                }
            }
            "recurring-gap" => {
                self.tab = Tab::Gaps;
                self.gaps.filter.recurring = Some(0);
                self.gaps.refresh(&trace, overview);
                self.gaps.select(0, &trace, overview, &mut self.timeline);
            }
            "slow-iteration" => {
                self.tab = Tab::Iterations;
                if let Some(k) = overview.iterations.slowest_index {
                    self.iterations
                        .open(k, &trace, overview, &mut self.timeline);
                }
            }
            _ => {}
        }
    }

    /// Whether the whole trace is in (the CPU side included).
    pub fn complete(&self) -> bool {
        self.report.is_some()
    }
}

/// The loaded trace: summary on the left, tabs at the bottom, the timeline in the middle.
pub(super) fn loaded_ui(ui: &mut egui::Ui, l: &mut Loaded, split: &mut Split) {
    let trace = l.trace.clone();
    let summary = egui::Panel::left("summary")
        .exact_size(split.summary_width_in(ui.available_width()))
        .show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                if l.cancelled || l.analyses_cancelled {
                    ui.heading("Where time goes");
                    ui.label(if l.cancelled {
                        "Not analysed: the load was cancelled."
                    } else {
                        "Not analysed: the analyses were cancelled."
                    });
                } else {
                    let no_kernel_table = l
                        .report
                        .as_ref()
                        .is_some_and(|r| r.missing_tables.iter().any(|t| t == load::KERNEL));
                    l.summary.show(
                        ui,
                        &trace,
                        l.overview.as_deref(),
                        &mut l.timeline,
                        no_kernel_table,
                    )
                }
            });
        });
    // The timeline keeps at least 40 % of the height, whatever size was chosen.
    let tabs = egui::Panel::bottom("tabs")
        .exact_size(split.tabs_height_in(ui.available_height()))
        .show(ui, |ui| fill_exactly(ui, |ui| {
            ui.horizontal(|ui| {
                for (tab, name) in [
                    (Tab::Gaps, "Gaps"),
                    (Tab::Iterations, "Iterations"),
                    (Tab::Kernels, "Kernels"),
                    (Tab::Nccl, "NCCL"),
                    (Tab::Memory, "Memory"),
                    (Tab::Nvtx, "NVTX"),
                    (Tab::Details, "Details"),
                ] {
                    ui.selectable_value(&mut l.tab, tab, name);
                }
            });
            ui.separator();
            let waiting = if l.cancelled {
                Some("The load was cancelled: only the GPU side is shown. Open the file again for the rest.")
            } else if !l.complete() {
                Some("Waiting for the CPU side (API calls, NVTX) to load…")
            } else if l.analyses_cancelled {
                Some("The analyses were cancelled: the timeline shows the whole trace. Open the file again to analyse it.")
            } else if l.overview.is_none() {
                Some("Analysing…")
            } else {
                None
            };
            match (l.tab, waiting, l.overview.as_ref()) {
                (Tab::Details, _, _) => {
                    egui::ScrollArea::vertical()
                        .show(ui, |ui| details::show(ui, &trace, &l.timeline));
                }
                (_, Some(note), _) => {
                    ui.label(note);
                }
                (_, None, None) => {}
                (Tab::Gaps, None, Some(o)) => l.gaps.show(ui, &trace, o, &mut l.timeline),
                (Tab::Iterations, None, Some(o)) => {
                    l.iterations.show(ui, &trace, o, &mut l.timeline)
                }
                (Tab::Kernels, None, Some(o)) => l.tables.kernels(ui, &trace, o, &mut l.timeline),
                (Tab::Nccl, None, Some(o)) => l.tables.nccl(ui, &trace, o, &mut l.timeline),
                (Tab::Memory, None, Some(o)) => l.tables.memory(ui, o),
                (Tab::Nvtx, None, Some(o)) => l.tables.nvtx(ui, &trace, o, &mut l.timeline),
            }
        }));
    let shown = egui::CentralPanel::default().show(ui, |ui| l.timeline.show(ui, &trace));
    // The edges are dragged last, so that they lie on top of the panels beside them.
    split.summary_edge(ui, summary.response.rect);
    split.tabs_edge(ui, tabs.response.rect);
    if shown.inner.selected {
        l.tab = Tab::Details;
    }
}

/// Lays `add` out in exactly the room left in `ui`, clipped to it. A panel is as large as
/// its contents: contents a few pixels taller than the panel (a plot, a table, spacing)
/// made it grow by that much every frame, until the timeline was gone.
fn fill_exactly(ui: &mut egui::Ui, add: impl FnOnce(&mut egui::Ui)) {
    let rect = ui.available_rect_before_wrap();
    let mut child = ui.new_child(egui::UiBuilder::new().max_rect(rect).layout(*ui.layout()));
    child.shrink_clip_rect(rect);
    add(&mut child);
    ui.advance_cursor_after_rect(rect);
}
