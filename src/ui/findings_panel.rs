//! The Findings tab, shown first once a trace is analysed: what to fix first, a row per
//! finding with its severity, its saving (filled in as each replay ends, on a worker) and
//! its title. A click brings the timeline to the first occurrence and outlines every
//! occurrence; "Try it" opens the What-if tab with the change filled in and replayed.

use std::sync::Arc;

use crate::cache::TraceKey;
use eframe::egui::{self, Color32, RichText};

use super::task::Task;
use super::timeline::{Margin, Nav};
use crate::findings::{self, Finding, Saving, Severity};
use crate::format::format_ns;
use crate::overview::Overview;
use crate::trace::{DeviceIndex, Trace};
use crate::whatif::Change;

/// What the worker sends: the findings as detected, then each saving as its replay ends.
pub enum Message {
    /// With the run's span, which each saving is a share of.
    Detected(Vec<Finding>, i64),
    Saved(usize, Saving),
    /// Every replay ended: the findings ranked, unexplained idle added.
    Ranked(Vec<Finding>),
}

#[derive(Default)]
pub struct FindingsPanel {
    pub findings: Vec<Finding>,
    /// Replays ended, of how many.
    pub progress: (usize, usize),
    pub ranked: bool,
    /// The run's span (sent once by the worker: a pass over every kernel, not per frame).
    span: i64,
    pub selected: Option<usize>,
    job: Option<Task<(), Message>>,
    started: bool,
    /// Select the first finding once ranked (`--show findings`), on a frame, not by
    /// waiting on the UI thread.
    pub select_first_when_ranked: bool,
    /// The last what-if command copied (what a test reads back).
    pub copied: Option<String>,
    /// The load's worker sends the findings (the session's pipeline): no job of its own.
    fed: bool,
}

/// The findings stage as the panel hears it, when it runs it itself.
struct PanelStages(super::task::Outbox<Message>);

impl crate::session::Stages for PanelStages {
    fn detected(&self, found: &[Finding], span: i64) {
        self.0.send(Message::Detected(found.to_vec(), span));
    }

    fn saved(&self, i: usize, saving: findings::Saving) {
        self.0.send(Message::Saved(i, saving));
    }
}

/// What a click in the panel asks of the window.
pub enum Action {
    /// Open the What-if tab with this change replayed.
    TryIt(String, Change),
}

pub fn severity_colour(s: Severity) -> Color32 {
    match s {
        Severity::Critical => Color32::from_rgb(0xE0, 0x40, 0x40),
        Severity::Warning => Color32::from_rgb(0xE8, 0xA0, 0x20),
        Severity::Info => Color32::from_rgb(0x70, 0x90, 0xB0),
    }
}

impl FindingsPanel {
    pub fn busy(&self) -> bool {
        self.job.is_some() || (self.fed && !self.ranked)
    }

    /// The load's worker will send the findings of the overview just in (see
    /// [`Self::detected`], [`Self::saved`], [`Self::ranked`]).
    pub fn fed_by_load(&mut self) {
        self.fed = true;
        self.started = true;
    }

    /// What the detectors found, before the replays.
    pub fn detected(&mut self, found: Vec<Finding>, span: i64) {
        let total = found.iter().filter(|f| f.change.is_some()).count();
        self.findings = found;
        self.span = span;
        self.progress = (0, total);
    }

    /// Finding `i`'s replayed saving.
    pub fn saved(&mut self, i: usize, s: findings::Saving) {
        if let Some(f) = self.findings.get_mut(i) {
            findings::apply_saving(f, s, self.span);
        }
        self.progress.0 += 1;
    }

    /// The findings ranked: done.
    pub fn ranked(&mut self, found: Vec<Finding>) {
        self.findings = found;
        self.ranked = true;
        self.selected = None;
    }

    /// Starts detecting and replaying on a worker, once per analysed trace.
    pub fn start(
        &mut self,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        cache_key: Option<&TraceKey>,
        ctx: Option<&egui::Context>,
    ) {
        if self.started {
            return;
        }
        self.started = true;
        // An overview the load's pipeline did not make (none here yet): the same stage of
        // it, on a worker of the panel's own.
        let (trace, overview, key) = (trace.clone(), overview.clone(), cache_key.cloned());
        self.job = Some(Task::spawn((), ctx, move |out| {
            let stages = PanelStages(out.clone());
            let found =
                crate::session::find(&trace, &overview, key.as_ref(), out.cancel_flag(), &stages);
            if let Some(found) = found {
                out.send(Message::Ranked(found));
            }
        }));
    }

    /// Takes in what the worker sent.
    pub fn poll(&mut self) {
        let Some(job) = &self.job else { return };
        let mut finished = false;
        let mut messages = Vec::new();
        while let Some(m) = job.poll() {
            messages.push(m);
        }
        for m in messages {
            match m {
                Message::Detected(found, span) => self.detected(found, span),
                Message::Saved(i, s) => self.saved(i, s),
                Message::Ranked(found) => {
                    self.ranked(found);
                    finished = true;
                }
            }
        }
        if finished {
            self.job = None;
        }
    }

    /// The first finding selected once they are ranked, if that was asked for.
    pub fn select_first_if_asked(&mut self, trace: &Trace, nav: &mut Vec<Nav>) {
        if self.select_first_when_ranked && self.ranked {
            self.select_first_when_ranked = false;
            self.select(0, trace, nav);
        }
    }

    /// Brings the timeline to finding `i`'s first occurrence and outlines every one.
    pub fn select(&mut self, i: usize, trace: &Trace, nav: &mut Vec<Nav>) {
        self.selected = Some(i);
        let Some(f) = self.findings.get(i) else {
            return;
        };
        let marks: Vec<(DeviceIndex, i64, i64)> = f
            .occurrences
            .iter()
            .filter_map(|w| Some((trace.device_index(w.device?)?, w.start_ns, w.end_ns)))
            .collect();
        nav.push(Nav::MarkIteration(marks));
        if let Some(w) = f.first {
            nav.push(Nav::ZoomTo {
                start: w.start_ns,
                end: w.end_ns,
                margin: Margin::Context,
            });
            if let Some(d) = w.device.and_then(|d| trace.device_index(d)) {
                nav.push(Nav::RevealDevice(d));
            }
        }
    }

    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        nav: &mut Vec<Nav>,
    ) -> Option<Action> {
        let _ = overview;
        let mut action = None;
        self.header(ui);
        if self.ranked && self.findings.is_empty() {
            ui.label(
                "Nothing to fix: no detector found a change that the replay says would save time.",
            );
            return None;
        }
        let mut clicked = None;
        egui::ScrollArea::vertical()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                // Text wraps or is cut at the panel's edge, never past it.
                ui.set_max_width(ui.available_width());
                egui::Grid::new("findings")
                    .striped(true)
                    .num_columns(4)
                    .show(ui, |ui| {
                        for (i, f) in self.findings.iter().enumerate() {
                            // Opportunities and facts under a heading of their own, once
                            // ranked after the faults.
                            let previous = i.checked_sub(1).map(|p| self.findings[p].group);
                            if self.ranked
                                && f.group != findings::Group::Fault
                                && previous != Some(f.group)
                            {
                                ui.label(RichText::new(f.group.label()).strong());
                                ui.end_row();
                            }
                            let selected = self.selected == Some(i);
                            let (row_clicked, tried) = finding_row(ui, f, selected);
                            if row_clicked {
                                clicked = Some(i);
                            }
                            if tried.is_some() {
                                action = tried;
                            }
                            ui.end_row();
                        }
                    });
                self.selected_detail(ui);
            });
        if let Some(i) = clicked {
            self.select(i, trace, nav);
        }
        action
    }

    /// The panel's heading, with the progress of the detection and the replays.
    fn header(&self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.strong("What to fix first");
            if self.busy() {
                crate::ui::busy(ui);
                // Before the first findings arrive there is nothing to replay yet.
                ui.label(if self.findings.is_empty() {
                    "looking for what to fix…".to_string()
                } else {
                    format!(
                        "replaying each change: {} of {} done",
                        self.progress.0, self.progress.1
                    )
                });
            } else if self.ranked {
                ui.label(
                    RichText::new(
                        "ranked by what the replay predicts each fix saves of the run's span",
                    )
                    .weak(),
                );
            }
        });
    }

    /// The selected finding's evidence and its `what-if` command, with a Copy button.
    fn selected_detail(&mut self, ui: &mut egui::Ui) {
        if let Some(f) = self.selected.and_then(|i| self.findings.get(i)) {
            ui.separator();
            ui.add(egui::Label::new(&f.detail).wrap());
            if !f.what_if.is_empty() {
                // The command as the command line prints it, quoted for a shell.
                let command = findings::text::what_if_command(&f.what_if);
                ui.horizontal_wrapped(|ui| {
                    if ui
                        .button("Copy")
                        .on_hover_text("Copy the command to the clipboard")
                        .clicked()
                    {
                        ui.ctx().copy_text(command.clone());
                        self.copied = Some(command.clone());
                    }
                    ui.add(egui::Label::new(RichText::new(&command).monospace()).wrap());
                });
            }
        }
    }
}

/// One finding's row: its severity, its saving (or that it is replaying, or a fact), its
/// Try it button and its title; (the title clicked, Try it clicked).
fn finding_row(ui: &mut egui::Ui, f: &findings::Finding, selected: bool) -> (bool, Option<Action>) {
    let mut action = None;
    ui.horizontal(|ui| {
        let colour = severity_colour(f.severity);
        let (dot, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
        ui.painter().rect_filled(dot, 2.0, colour);
        ui.label(RichText::new(f.severity.label()).color(colour));
    });
    match (f.saving_ns, f.saving_pct) {
        (Some(ns), Some(pct)) => {
            let upper = f
                .upper_bound_ns
                .filter(|&u| Some(u) != f.saving_ns)
                .map_or(String::new(), |u| format!(", up to {}", format_ns(u)));
            ui.strong(format!("saves {} ({pct:.1} %){upper}", format_ns(ns)));
        }
        _ if f.change.is_some() => {
            ui.horizontal(|ui| {
                crate::ui::busy(ui);
                ui.label("replaying");
            });
        }
        _ => {
            ui.label("fact");
        }
    }
    if let Some(change) = &f.change {
        if ui
            .button("Try it")
            .on_hover_text(findings::text::what_if_command(&f.what_if))
            .clicked()
        {
            action = Some(Action::TryIt(f.title.clone(), change.clone()));
        }
    } else {
        ui.label("");
    }
    let mut title = RichText::new(&f.title);
    if selected {
        title = title.strong().color(super::theme::SELECTION);
    }
    // A long title wraps at the panel's edge: read whole at any size.
    let row = ui
        .add(egui::Label::new(title).wrap().sense(egui::Sense::click()))
        .on_hover_text(format!("{}\n\n{}", f.title, f.detail));
    (row.clicked(), action)
}
