//! File ▸ Export figures… and every plot's right-click ▸ Save as…: the figures of
//! `nsys-explorer figures` written from the window, on a worker, into a folder the user
//! types or picks (never beside the trace by default).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eframe::egui;

use super::task::{Task, take_answer};
use crate::figures::data::timeline_view;
use crate::figures::{Format, NAMES, Written, figure_data, write_figures, write_view};
use crate::format::format_ns;
use crate::overview::Overview;
use crate::trace::Trace;

/// Where a panel's right-click asks for one figure, or the timeline's for its view; read
/// by the window once a frame.
const REQUEST: &str = "save figure";
const VIEW_REQUEST: &str = "save timeline view";

/// Adds right-click ▸ Save view as… to the timeline's `response`: `view` (ns, the trace's
/// clock) as a figure; and, with a selected range, Save selection as….
pub fn save_view_menu(response: &egui::Response, view: (i64, i64), selection: Option<(i64, i64)>) {
    response.context_menu(|ui| {
        if ui.button("Save view as PNG or SVG…").clicked() {
            ask_to_save(ui.ctx(), view, Range::View);
            ui.close();
        }
        if let Some(range) = selection {
            ui.separator();
            if ui.button("Save selection as PNG or SVG…").clicked() {
                ask_to_save(ui.ctx(), range, Range::Selection);
                ui.close();
            }
            // What the selection's banner does, asked of it for the next frame.
            use super::selection_overview::{Ask, ask};
            if ui.button("Copy selection summary").clicked() {
                ask(ui.ctx(), Ask::CopySummary);
                ui.close();
            }
            if ui.button("What if the CPU had not spent it").clicked() {
                ask(ui.ctx(), Ask::WhatIf);
                ui.close();
            }
            if ui.button("Critical path of the selection").clicked() {
                ask(ui.ctx(), Ask::CriticalPath);
                ui.close();
            }
        }
    });
}

/// Which range of the timeline a figure is saved over: what the window calls it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Range {
    /// What the timeline shows.
    #[default]
    View,
    /// The Shift+dragged range.
    Selection,
}

/// Asks the figures window (next frame) to save the timeline over `range` as a figure.
pub fn ask_to_save(ctx: &egui::Context, range: (i64, i64), what: Range) {
    ctx.data_mut(|d| d.insert_temp(egui::Id::unique(VIEW_REQUEST), (range, what)));
}

/// Adds right-click ▸ Save as… to a plot's `response`, for the figure `name`.
pub fn save_menu(response: &egui::Response, name: &'static str) {
    response.context_menu(|ui| {
        if ui.button("Save as PNG or SVG…").clicked() {
            ui.ctx()
                .data_mut(|d| d.insert_temp(egui::Id::unique(REQUEST), name));
            ui.close();
        }
    });
}

#[derive(Default)]
pub struct FiguresWindow {
    pub open: bool,
    pub folder: String,
    pub png: bool,
    pub svg: bool,
    /// One figure (a plot's Save as…), or all five.
    pub only: Option<&'static str>,
    /// The timeline's range to save instead (ns, the trace's clock), and which it is.
    pub view: Option<((i64, i64), Range)>,
    job: Option<Task<(), Result<Written, String>>>,
    /// What the last write did, in words.
    pub outcome: Option<String>,
}

impl FiguresWindow {
    /// Opens the window for `trace_path`'s figures (all, or `only`), the folder defaulting
    /// to `STEM-figures` in the current folder, as the command line does.
    pub fn open_for(&mut self, trace_path: &Path, only: Option<&'static str>) {
        if self.folder.is_empty() {
            let stem = trace_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "trace".into());
            let here = std::env::current_dir().unwrap_or_default();
            self.folder = here.join(format!("{stem}-figures")).display().to_string();
        }
        if !self.png && !self.svg {
            self.png = true;
            self.svg = true;
        }
        self.only = only;
        self.view = None;
        self.outcome = None;
        self.open = true;
    }

    /// Takes a panel's Save as… request of this frame, if any.
    pub fn take_request(&mut self, ctx: &egui::Context, trace_path: &Path) {
        let asked = ctx.data_mut(|d| d.remove_temp::<&'static str>(egui::Id::unique(REQUEST)));
        if let Some(name) = asked {
            self.open_for(trace_path, Some(name));
        }
        let view =
            ctx.data_mut(|d| d.remove_temp::<((i64, i64), Range)>(egui::Id::unique(VIEW_REQUEST)));
        if let Some(view) = view {
            self.open_for(trace_path, None);
            self.view = Some(view);
        }
    }

    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    fn start(&mut self, ctx: &egui::Context, trace: &Arc<Trace>, overview: &Arc<Overview>) {
        let formats: Vec<Format> = [(self.png, Format::Png), (self.svg, Format::Svg)]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect();
        let (trace, overview) = (trace.clone(), overview.clone());
        let dir = PathBuf::from(self.folder.trim());
        let names: Vec<&'static str> = match self.only {
            Some(name) => vec![name],
            None => NAMES.to_vec(),
        };
        let view = self.view;
        self.outcome = None;
        self.job = Some(Task::compute((), Some(ctx), move |_| match view {
            Some((range, _)) => write_view(&timeline_view(&trace, range), &dir, &formats),
            None => {
                let data = figure_data(&trace, &overview, None, None);
                write_figures(&data, &dir, &formats, &names)
            }
        }));
    }

    pub fn show(&mut self, ctx: &egui::Context, trace: &Arc<Trace>, overview: &Arc<Overview>) {
        if let Some(((), result)) = take_answer(&mut self.job) {
            self.outcome = Some(match result {
                Ok(w) => {
                    let mut text =
                        format!("Wrote {} files into {}", w.files.len(), self.folder.trim());
                    for (name, why) in &w.skipped {
                        text += &format!("\nSkipped {name}: {why}");
                    }
                    text
                }
                Err(e) => format!("Not written: {e}"),
            });
        }
        let mut open = self.open;
        let title = match (self.view, self.only) {
            (Some((_, Range::View)), _) => "Save timeline view",
            (Some((_, Range::Selection)), _) => "Save selection",
            (None, Some(_)) => "Save figure",
            (None, None) => "Export figures",
        };
        egui::Window::new(title)
            .open(&mut open)
            .default_width(520.0)
            .show(ctx, |ui| {
                ui.label(match (self.view, self.only) {
                    (Some(((a, b), Range::View)), _) => format!("The timeline's view ({}), a row per GPU stream, as timeline_view (1600×900), and timeline_view.json with its spans.", format_ns(b - a)),
                    (Some(((a, b), Range::Selection)), _) => format!("The selection ({}), a row per GPU stream, as timeline_view (1600×900), and timeline_view.json with its spans.", format_ns(b - a)),
                    (None, Some(name)) => format!("The figure {name}, and figures.json with its numbers."),
                    (None, None) => "The five figures (iteration duration over time, its histogram, one iteration stream by stream, where each GPU's time goes, NCCL kernel durations), 1600×900, and figures.json with the numbers drawn.".into(),
                });
                ui.horizontal(|ui| {
                    ui.label("Folder");
                    ui.add(egui::TextEdit::singleline(&mut self.folder).desired_width(360.0));
                    if ui.button("Browse…").clicked()
                        && let Some(dir) = rfd::FileDialog::new().pick_folder()
                    {
                        self.folder = dir.display().to_string();
                    }
                });
                ui.horizontal(|ui| {
                    ui.checkbox(&mut self.png, "PNG");
                    ui.checkbox(&mut self.svg, "SVG");
                });
                let ready = !self.folder.trim().is_empty() && (self.png || self.svg);
                ui.horizontal(|ui| {
                    if ui
                        .add_enabled(ready && !self.busy(), egui::Button::new("Write"))
                        .clicked()
                    {
                        self.start(ctx, trace, overview);
                    }
                    if self.busy() {
                        crate::ui::busy(ui);
                    }
                });
                if let Some(text) = &self.outcome {
                    ui.label(text);
                }
            });
        self.open = open;
    }
}
