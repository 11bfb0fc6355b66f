//! The analyses of the selected time range (Shift+drag on the timeline): the Kernels, NCCL,
//! Memory and NVTX tabs answer for the selection, not the whole trace, once a worker has
//! run every analysis over it. A banner above the tabs says what is selected, with a clear.

use std::sync::Arc;

use eframe::egui;

use super::task::{Task, take_answer};
use super::timeline::{Nav, PathMark};
use crate::analysis::intervals::Window;
use crate::critical_path::Graph;
use crate::critical_path::report::{PathSummary, summarise_path};
use crate::format::format_ns;
use crate::overview::{Kept, Options, Overview, overview_with};
use crate::trace::Trace;

/// What the timeline's right-click asks of the selection's banner (done in its next frame,
/// as its buttons do).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ask {
    CopySummary,
    WhatIf,
    CriticalPath,
}

const ASK: &str = "selection ask";

pub fn ask(ctx: &egui::Context, what: Ask) {
    ctx.data_mut(|d| d.insert_temp(egui::Id::unique(ASK), Some(what)));
}

/// A range's critical path with its totals (`None`: no kernel ends in the range).
pub type RangePath = Arc<Option<PathSummary>>;

#[derive(Default)]
pub struct SelectionOverview {
    /// The selection analysed and its overview.
    pub ready: Option<((i64, i64), Arc<Overview>)>,
    job: Option<Task<(i64, i64), Option<Overview>>>,
    /// The last summary copied to the clipboard (what a test reads back).
    pub copied: Option<String>,
    /// The selection's critical path, once asked for and worked out.
    pub path: Option<((i64, i64), RangePath)>,
    path_job: Option<Task<(i64, i64), RangePath>>,
    /// The NCCL table's groups by size over the selection (its kernels clipped to it), once
    /// NCCL's payloads are read and the groups worked out.
    nccl_groups: Option<((i64, i64), NcclGroups)>,
    nccl_job: Option<Task<(i64, i64), NcclGroups>>,
}

/// The NCCL table's rows of a range.
pub type NcclGroups = Arc<Vec<crate::analysis::nccl_sizes::SizeGroup>>;

impl SelectionOverview {
    /// The overview of `selection` if it is worked out, starting its work when it is not;
    /// `None` without a selection or while it runs.
    pub fn for_selection(
        &mut self,
        trace: &Arc<Trace>,
        selection: Option<(i64, i64)>,
        ctx: &egui::Context,
    ) -> Option<Arc<Overview>> {
        if let Some((key, Some(o))) = take_answer(&mut self.job) {
            self.ready = Some((key, Arc::new(o)));
        }
        let w = selection?;
        if let Some((key, o)) = &self.ready
            && *key == w
        {
            return Some(o.clone());
        }
        if self.job.as_ref().is_none_or(|j| j.key != w) {
            let trace = trace.clone();
            self.job = Some(Task::compute(w, Some(ctx), move |cancel| {
                let options = Options {
                    window: Some(Window::new(w.0, w.1)),
                    top: 20,
                    ..Default::default()
                };
                overview_with(&trace, &options, cancel, Kept::default())
            }));
        }
        None
    }

    /// The NCCL groups of the selection last worked out, and for which range.
    pub fn nccl_groups(&self) -> Option<&((i64, i64), NcclGroups)> {
        self.nccl_groups.as_ref()
    }

    /// The NCCL groups by size over `selection`, once `sizes` (the whole trace's
    /// transfers) are in: worked out on a worker, `None` meanwhile or without either.
    pub fn nccl_groups_for(
        &mut self,
        trace: &Arc<Trace>,
        selection: Option<(i64, i64)>,
        sizes: Option<&Arc<super::nccl_bytes::NcclSizes>>,
        ctx: &egui::Context,
    ) -> Option<NcclGroups> {
        if let Some((key, groups)) = take_answer(&mut self.nccl_job) {
            self.nccl_groups = Some((key, groups));
        }
        let (w, sizes) = (selection?, sizes?);
        if let Some((key, groups)) = &self.nccl_groups
            && *key == w
        {
            return Some(groups.clone());
        }
        if self.nccl_job.as_ref().is_none_or(|j| j.key != w) {
            let (trace, sizes) = (trace.clone(), sizes.clone());
            self.nccl_job = Some(Task::compute(w, Some(ctx), move |_| {
                Arc::new(crate::analysis::nccl_sizes::size_groups(
                    &trace,
                    &sizes.transfers,
                    Some(Window::new(w.0, w.1)),
                ))
            }));
        }
        None
    }

    pub fn busy(&self) -> bool {
        self.job.is_some() || self.nccl_job.is_some()
    }
}

/// "Selection: 12.3 ms from 1.2 s — this tab is of the selection" (or, over a tab of the
/// whole run's — findings, iterations, what-if, ranks — says so), with a button that copies
/// its summary and one back to the whole trace; nothing without a selection.
/// The banner over the tables while a range is selected; returns a change to try in the
/// What-if tab when asked ("what if the CPU had not spent this range": its title and the
/// change).
pub fn banner(
    ui: &mut egui::Ui,
    state: &mut SelectionOverview,
    trace: &Arc<Trace>,
    selection: Option<(i64, i64)>,
    origin: i64,
    tab_of_whole_run: bool,
    nav: &mut Vec<Nav>,
) -> Option<(String, crate::whatif::Change)> {
    let (a, b) = selection?;
    let mut try_it = None;
    let asked = ui
        .ctx()
        .data_mut(|d| d.remove_temp::<Option<Ask>>(egui::Id::unique(ASK)))
        .flatten();
    if let Some((key, p)) = take_answer(&mut state.path_job) {
        // Drawn on the timeline as an iteration's is (the yellow line).
        let marks = p
            .as_ref()
            .as_ref()
            .map_or_else(Vec::new, |p| PathMark::of(&p.path));
        nav.push(Nav::MarkPath(Arc::new(marks)));
        state.path = Some((key, p));
    }
    let ready = state
        .ready
        .as_ref()
        .filter(|(k, _)| *k == (a, b))
        .map(|(_, o)| o.clone());
    // Wrapped: the path's words and the buttons may not fit one line of a small window.
    ui.horizontal_wrapped(|ui| {
        ui.label(
            egui::RichText::new(format!(
                "Selection: {} from {}",
                format_ns(b - a),
                format_ns(a - origin)
            ))
            .strong()
            .color(super::theme::SELECTION),
        );
        match &ready {
            None => {
                crate::ui::busy(ui);
                ui.label("analysing it… (the tables show the whole trace meanwhile)");
            }
            Some(o) => {
                ui.label(if tab_of_whole_run {
                    "— this tab is the whole run's (the others, the selection's)"
                } else {
                    "— this tab is of the selection"
                });
                if ui
                    .small_button("copy summary")
                    .on_hover_text(
                        "each GPU's breakdown and the top kernels of the selection, as text",
                    )
                    .clicked()
                    || asked == Some(Ask::CopySummary)
                {
                    let text = crate::report::selection_text(trace, o, (a, b), origin);
                    ui.ctx().copy_text(text.clone());
                    state.copied = Some(text);
                }
            }
        }
        critical_path_item(ui, state, trace, (a, b), asked);
        if ui
            .small_button("save as figure")
            .on_hover_text("the timeline over the selection, a row per GPU stream, as PNG or SVG with its spans (also: right-click the timeline)")
            .clicked()
        {
            super::figures_window::ask_to_save(
                ui.ctx(),
                (a, b),
                super::figures_window::Range::Selection,
            );
        }
        if ui
            .small_button("what if the CPU had not spent it")
            .on_hover_text("replay the trace with the CPU time of the launching threads in the selection removed (a stall fixed: its calls take no time, its syncs wait for nothing) — what fixing it would save")
            .clicked()
            || asked == Some(Ask::WhatIf)
        {
            try_it = Some((
                format!(
                    "From the selection: the CPU's {} from {} removed",
                    format_ns(b - a),
                    format_ns(a - origin)
                ),
                crate::whatif::Change::cpu_time_removed(trace, a, b),
            ));
        }
        if ui
            .small_button("clear: whole trace")
            .on_hover_text("clear the selection (Esc)")
            .clicked()
        {
            nav.push(Nav::Window(None));
        }
    });
    try_it
}

/// The selection's critical path: its words once worked out, a spinner meanwhile, else the
/// button that asks for it.
fn critical_path_item(
    ui: &mut egui::Ui,
    state: &mut SelectionOverview,
    trace: &Arc<Trace>,
    (a, b): (i64, i64),
    asked: Option<Ask>,
) {
    let path = state.path.as_ref().filter(|(k, _)| *k == (a, b));
    match (path, &state.path_job) {
        (Some((_, p)), _) => match p.as_ref() {
            Some(p) => {
                ui.label(format!("critical path: {}", path_words(p)))
                    .on_hover_text("the chain of work back from the last kernel to end in the selection, each piece waiting for the one before (the yellow line)");
            }
            None => {
                ui.label("no kernel ends in the selection: no critical path");
            }
        },
        (None, Some(_)) => {
            crate::ui::busy(ui);
        }
        (None, None) => {
            if ui
                .small_button("critical path")
                .on_hover_text(
                    "the chain of work that set the selection's end, drawn on the timeline",
                )
                .clicked()
                || asked == Some(Ask::CriticalPath)
            {
                let trace = trace.clone();
                state.path_job = Some(Task::compute((a, b), Some(ui.ctx()), move |_| {
                    let graph = Graph::new(&trace);
                    Arc::new(graph.window_path((a, b)).map(|p| summarise_path(&graph, p)))
                }));
            }
        }
    }
}

/// "12.3 ms — compute 8.1 ms, CPU 2.2 ms, NCCL 1.0 ms": the path's length and the kinds
/// of work it spent most in.
fn path_words(p: &PathSummary) -> String {
    let wall = p.path.wall_ns();
    let mut kinds: Vec<(&crate::critical_path::SegmentKind, &i64)> = p.by_kind.iter().collect();
    kinds.sort_by_key(|(_, ns)| std::cmp::Reverse(**ns));
    let parts: Vec<String> = kinds
        .iter()
        .take(3)
        .map(|(k, ns)| format!("{} {}", k.label(), format_ns(**ns)))
        .collect();
    format!("{} — {}", format_ns(wall), parts.join(", "))
}
