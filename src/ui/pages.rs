//! The pages shown when no trace is on screen: the start page, the page for an
//! `.nsys-rep` (which needs exporting first), and the keys-and-mouse help.

use std::path::PathBuf;

use eframe::egui;

use super::{App, State, file_name};

impl App {
    /// What to do with an `.nsys-rep`: the export command, and the export if it is there.
    pub(super) fn report_page(
        &mut self,
        ui: &mut egui::Ui,
        ctx: &egui::Context,
        path: &std::path::Path,
        export: Option<PathBuf>,
        looked: &[PathBuf],
    ) {
        let sqlite = path.with_extension("sqlite");
        let command = format!(
            "nsys export --type sqlite --include-blobs=true --output {} {}",
            shell_quote(&sqlite),
            shell_quote(path)
        );
        egui::CentralPanel::default().show(ui, |ui| {
            ui.add_space(40.0);
            ui.heading(format!("{} is an Nsight Systems report", file_name(path)));
            ui.add_space(8.0);
            ui.label(
                "nsys-explorer reads the SQLite export of a report, which Nsight Systems writes with:",
            );
            ui.add_space(4.0);
            ui.code(&command);
            if ui.small_button("Copy the command").clicked() {
                ctx.copy_text(command.clone());
            }
            ui.add_space(8.0);
            if looked.is_empty() {
                ui.label("Exporting here is off (--no-export).");
            } else {
                ui.label(
                    "No `nsys` was found to export it here. Looked at (set NSYS=/path/to/nsys to name one):",
                );
                for place in looked {
                    ui.label(egui::RichText::new(place.display().to_string()).monospace().weak());
                }
            }
            ui.add_space(12.0);
            match export {
                Some(export) => {
                    if ui
                        .button(
                            egui::RichText::new(format!("Open {}", file_name(&export))).size(16.0),
                        )
                        .clicked()
                    {
                        self.open(export, ctx);
                    }
                }
                None => {
                    ui.label(format!(
                        "There is no {} beside it yet: run the command, then open that file.",
                        file_name(&sqlite)
                    ));
                }
            }
            ui.add_space(16.0);
            if ui.button("Back to the start page").clicked() {
                self.state = State::Start;
            }
        });
    }

    pub(super) fn start_page(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
        egui::CentralPanel::default().show(ui, |ui| {
            ui.add_space(60.0);
            ui.vertical_centered(|ui| {
                ui.heading(egui::RichText::new("nsys-explorer").size(30.0));
                ui.label(
                    "Explore Nsight Systems profiles exported with `nsys export --type sqlite`.",
                );
                ui.add_space(20.0);
                if ui
                    .add(egui::Button::new(egui::RichText::new("Open…").size(16.0)))
                    .clicked()
                {
                    self.pick_file(ctx);
                }
                ui.add_space(6.0);
                if ui
                    .add(egui::Button::new(
                        egui::RichText::new("Open sample trace").size(16.0),
                    ))
                    .clicked()
                {
                    self.open_sample(ctx);
                }
                ui.label("(a generated Wan2.1-like 4-GPU run)");
                ui.add_space(20.0);
                ui.label("Or drop a .sqlite file on this window.");
                if !self.recent.is_empty() {
                    ui.add_space(20.0);
                    ui.strong("Recent files");
                    for path in self.recent.clone() {
                        if ui.link(path.display().to_string()).clicked() {
                            self.open(path, ctx);
                        }
                    }
                }
            });
        });
    }

    pub(super) fn pick_file(&mut self, ctx: &egui::Context) {
        if let Some(path) = pick_export() {
            self.open(path, ctx);
        }
    }
}

/// Every key and mouse action, as Nsight Systems and Perfetto users look for them.
const HELP: [(&str, &str); 21] = [
    (
        "Ctrl + wheel, pinch, W / S",
        "zoom in / out (around the pointer; W/S a quarter around the middle, smoothly held)",
    ),
    (
        "drag, A / D, Left / Right, Shift + wheel",
        "pan (a tenth of the view a press)",
    ),
    (
        "wheel, Up / Down",
        "scroll the rows (the arrow keys: a row a press)",
    ),
    ("drag on the ruler", "zoom to the dragged range"),
    (
        "double-click an item",
        "zoom to it (an iteration: its NVTX range)",
    ),
    ("F", "fit: the whole trace, CPU side included"),
    (
        "Shift + drag",
        "select a range: the summary, the tables, the gaps and the CPU tab answer for it",
    ),
    (
        "Ctrl + drag",
        "measure a span (Escape or a click clears it)",
    ),
    (
        "click",
        "select a kernel, NVTX range or API call (Details tab)",
    ),
    ("click a group header", "fold or unfold a GPU or a thread"),
    (
        "Ctrl + F",
        "find kernels, NVTX ranges and API calls by name",
    ),
    ("Enter / Shift + Enter", "next / previous match"),
    ("Escape", "close Find; then clear the measured span"),
    ("N / Shift + N", "next / previous gap of the gap table"),
    (
        "click a summary number",
        "show those moments on that GPU's rows",
    ),
    ("click a gap row", "zoom to the gap and outline it"),
    (
        "click an iteration",
        "zoom to it on every GPU and open its drill-down",
    ),
    (
        "host_sync",
        "the launching thread waited in a synchronising call",
    ),
    (
        "after_sync",
        "launched just in time ever since a sync emptied the queue",
    ),
    ("host_bound", "the CPU launched too late, with no sync"),
    ("F1 or ?", "this help"),
];

pub(super) fn help_window(ctx: &egui::Context, open: &mut bool) {
    egui::Window::new("Keys and mouse")
        .open(open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
        .show(ctx, |ui| {
            egui::Grid::new("help keys")
                .striped(true)
                .num_columns(2)
                .show(ui, |ui| {
                    for (keys, what) in HELP {
                        ui.strong(keys);
                        ui.label(what);
                        ui.end_row();
                    }
                });
        });
}

/// `path` quoted for a POSIX shell when it needs it.
fn shell_quote(path: &std::path::Path) -> String {
    let s = path.display().to_string();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The file dialog for an export.
pub(super) fn pick_export() -> Option<PathBuf> {
    rfd::FileDialog::new()
        .add_filter("Nsight Systems SQLite export", &["sqlite", "db"])
        .add_filter("All files", &["*"])
        .pick_file()
}

/// The file dialog for several exports (one job's ranks), or their summaries.
pub(super) fn pick_exports() -> Option<Vec<PathBuf>> {
    rfd::FileDialog::new()
        .add_filter("Nsight Systems SQLite export", &["sqlite", "db"])
        .add_filter("Rank summaries (nsys-explorer summarize)", &["summary"])
        .add_filter("All files", &["*"])
        .pick_files()
}

/// Help ▸ Developer ▸ Profile: every profiled scope (load phases, analyses, frames, replays) with
/// how often it ran and how long it took.
pub(super) fn profile_window(ctx: &egui::Context, open: &mut bool) {
    use crate::format::format_ns;
    egui::Window::new("Profile")
        .open(open)
        .default_width(520.0)
        .show(ctx, |ui| {
            ui.label("Scopes timed in this process (load phases, analyses, frames, replays).");
            egui::Grid::new("profile")
                .striped(true)
                .num_columns(5)
                .show(ui, |ui| {
                    for h in ["scope", "count", "last", "mean", "longest"] {
                        ui.strong(h);
                    }
                    ui.end_row();
                    for s in crate::profile::snapshot() {
                        ui.label(s.name);
                        ui.label(s.count.to_string());
                        ui.label(format_ns(s.last_ns as i64));
                        ui.label(format_ns((s.total_ns / s.count.max(1)) as i64));
                        ui.label(format_ns(s.max_ns as i64));
                        ui.end_row();
                    }
                });
        });
    // The frame scope changes every frame: keep the table current while it is open.
    ctx.request_repaint_after(std::time::Duration::from_millis(250));
}

/// Per-rank summaries (`report --json` files) side by side, one row per GPU, the slowest
/// median iteration first; returns the export to open when a row's Open is clicked.
pub(super) fn summaries_page(
    ui: &mut egui::Ui,
    rows: &[crate::summaries::RankRow],
) -> Option<PathBuf> {
    use crate::format::format_ns;
    let mut open = None;
    egui::CentralPanel::default().show(ui, |ui| {
        ui.heading(format!("{} GPUs in {} summaries", rows.len(), {
            let mut files: Vec<_> = rows.iter().map(|r| &r.summary).collect();
            files.dedup();
            files.len()
        }));
        ui.label("From `nsys-explorer report RANK.sqlite --json`, run where each export is; the slowest median iteration first. Open loads that rank's export, when it is here.");
        ui.add_space(6.0);
        egui::ScrollArea::vertical().show(ui, |ui| {
            egui::Grid::new("summaries").striped(true).num_columns(8).show(ui, |ui| {
                for h in ["summary", "GPU", "median iteration", "slowest", "idle", "NCCL", "NCCL waiting", ""] {
                    ui.strong(h);
                }
                ui.end_row();
                for r in rows {
                    ui.label(file_name(&r.summary));
                    ui.label(&r.device);
                    ui.label(r.median_ns.map_or("–".into(), format_ns));
                    ui.label(r.slowest.map_or("–".into(), |(k, ns)| format!("iter {k}: {}", format_ns(ns))));
                    ui.label(format!("{:.1} %", r.idle_pct));
                    ui.label(format!("{:.1} %", r.nccl_pct));
                    ui.label(r.nccl_wait_pct.map_or("–".into(), |p| format!("{p:.0} %")));
                    let here = r.export.is_file();
                    if ui
                        .add_enabled(here, egui::Button::new("Open"))
                        .on_disabled_hover_text(format!("{} is not on this machine", r.export.display()))
                        .clicked()
                    {
                        open = Some(r.export.clone());
                    }
                    ui.end_row();
                }
            });
        });
    });
    open
}
