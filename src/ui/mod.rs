//! The eframe app: a start page, a background load with progress and Cancel, then the
//! timeline with a details panel. The UI never runs SQL itself; a load runs on a worker
//! thread and hands over the finished `Trace`.

pub mod compare_view;
pub mod cpu_panel;
pub mod details;
pub mod figures_window;
pub mod findings_panel;
mod fold;
pub mod gap_finder;
pub mod gap_table;
pub mod graphs_panel;
pub mod heatmap;
mod iteration_drilldown;
pub mod iterations_panel;
pub mod job_page;
mod labels;
mod layout_cache;
pub mod load_job;
pub mod loaded;
pub mod loading;
mod lod;
pub mod nccl_bytes;
mod pages;
pub mod selection_overview;
pub mod split;
pub mod summary;
pub mod tables;
pub mod task;
pub mod theme;
pub mod timeline;
pub mod whatif_panel;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eframe::egui;

use crate::load;
use load_job::{LoadJob, progress_bar};
use loaded::loaded_ui;
pub use loaded::{Loaded, Tab};
use pages::{help_window, pick_export, pick_exports, profile_window};
use split::Split;
use timeline::Nav;

const RECENT_KEY: &str = "recent_files";
const SPLIT_KEY: &str = "split";
const MAX_RECENT: usize = 8;

pub enum State {
    Start,
    Loading {
        path: PathBuf,
        job: LoadJob,
    },
    Loaded(Box<Loaded>),
    Failed {
        path: PathBuf,
        message: String,
    },
    /// An Nsight Systems report (`.nsys-rep`) that cannot be exported here (no `nsys`, or
    /// `--no-export`); `export` is the SQLite export beside it, when there is one, and
    /// `looked` where `nsys` was looked for.
    Report {
        path: PathBuf,
        export: Option<PathBuf>,
        looked: Vec<PathBuf>,
    },
    /// Per-rank `report --json` summaries side by side (one row per GPU).
    Summaries(Vec<crate::summaries::RankRow>),
    /// A job of many ranks from their summaries (`*.summary`), or from more exports than a
    /// whole load takes, summarised one at a time.
    Job(Box<job_page::JobPage>),
}

pub use crate::export::is_report;

pub struct App {
    pub state: State,
    pub recent: Vec<PathBuf>,
    title: String,
    /// The built-in sample's file, when it was opened (the window says it is a sample), and
    /// the folder of its own it was written to, removed with the app.
    sample: Option<(PathBuf, tempfile::TempDir)>,
    /// The keyboard and mouse help (F1 or ?).
    pub help_open: bool,
    /// Help ▸ Developer ▸ Profile.
    pub profile_open: bool,
    /// The panels' sizes as the user chose them (remembered).
    pub split: Split,
    /// A view to open once the analyses are in (`--show`, for the screenshot script).
    pub show_when_analysed: Option<String>,
    /// A run to compare with once a trace is loaded (`--compare`).
    pub compare_when_loaded: Option<PathBuf>,
    /// The context drawn into was configured (its fonts): done on the first frame, for
    /// whatever context draws it.
    configured: bool,
}

impl App {
    pub fn new(file: Option<PathBuf>, ctx: &egui::Context, recent: Vec<PathBuf>) -> Self {
        configure(ctx);
        let mut app = Self {
            state: State::Start,
            recent,
            title: String::new(),
            sample: None,
            help_open: false,
            profile_open: false,
            split: Split::default(),
            show_when_analysed: None,
            compare_when_loaded: None,
            configured: false,
        };
        if let Some(path) = file {
            app.open(path, ctx);
        }
        app
    }

    /// Starts loading `path` on a worker thread, cancelling any load in flight.
    pub fn open(&mut self, path: PathBuf, ctx: &egui::Context) {
        // A report is exported on the worker (or its newer export beside it opened) when
        // it can be; else the page that says how.
        if is_report(&path) {
            let beside = crate::export::export_beside(&path);
            let located = crate::export::locate();
            if !crate::export::enabled() || (beside.is_none() && located.is_err()) {
                self.cancel_job();
                let export = Some(path.with_extension("sqlite")).filter(|p| p.is_file());
                let looked = if crate::export::enabled() {
                    located.err().unwrap_or_default()
                } else {
                    Vec::new()
                };
                self.state = State::Report {
                    path,
                    export,
                    looked,
                };
                return;
            }
        }
        self.recent.retain(|p| p != &path);
        self.recent.insert(0, path.clone());
        self.recent.truncate(MAX_RECENT);
        self.start_load(path, ctx);
    }

    /// Opens what was named: one export, or several (a folder stands for every `*.sqlite`
    /// in it) as one trace of many ranks.
    pub fn open_paths(&mut self, paths: Vec<PathBuf>, ctx: &egui::Context) {
        if crate::summaries::are_summaries(&paths) {
            self.cancel_job();
            self.state = match crate::summaries::read_summaries(&paths) {
                Ok(rows) => State::Summaries(rows),
                Err(message) => State::Failed {
                    path: paths[0].clone(),
                    message,
                },
            };
            return;
        }
        match paths.as_slice() {
            [one] if !one.is_dir() && !crate::job::is_summary(one) => self.open(one.clone(), ctx),
            _ => match load::many::expand_paths(&paths) {
                Ok(files)
                    if files.iter().any(|f| crate::job::is_summary(f))
                        || files.len() > crate::session::JOB_FROM_SUMMARIES_PAST =>
                {
                    self.cancel_job();
                    self.state = State::Job(Box::new(job_page::JobPage::start(files, ctx)));
                }
                Ok(files) if files.len() == 1 => self.open(files[0].clone(), ctx),
                Ok(files) => self.open_many(files, Vec::new(), ctx),
                Err(message) => {
                    self.state = State::Failed {
                        path: paths[0].clone(),
                        message,
                    }
                }
            },
        }
    }

    /// Opens `files` as one trace, file `k` put at `manual[k]` when given.
    pub fn open_many(
        &mut self,
        files: Vec<PathBuf>,
        manual: Vec<Option<i64>>,
        ctx: &egui::Context,
    ) {
        let label = PathBuf::from(format!("{} files", files.len()));
        let source = load_job::Source::Many {
            paths: files,
            manual,
        };
        self.start_source(label, source, ctx);
    }

    /// Opens the built-in sample trace (not remembered among recent files: it is rewritten
    /// in a temporary folder).
    pub fn open_sample(&mut self, ctx: &egui::Context) {
        // A folder of its own, removed when the window closes (dropped with the app).
        let written = tempfile::Builder::new()
            .prefix("nsys-explorer-sample-")
            .tempdir()
            .map_err(|e| format!("temporary folder: {e}"))
            .and_then(|dir| Ok((crate::synth::write_sample_trace(dir.path())?, dir)));
        match written {
            Ok((path, dir)) => {
                self.sample = Some((path.clone(), dir));
                self.start_load(path, ctx);
            }
            Err(message) => {
                self.state = State::Failed {
                    path: PathBuf::from("sample trace"),
                    message,
                };
            }
        }
    }

    fn update_title(&mut self, ctx: &egui::Context) {
        let title = match &self.state {
            State::Start => "nsys-explorer".to_string(),
            State::Loading { path, .. } | State::Failed { path, .. } => {
                format!("{} — nsys-explorer", file_name(path))
            }
            State::Loaded(l) => format!("{} — nsys-explorer", file_name(&l.path)),
            State::Report { path, .. } => format!("{} — nsys-explorer", file_name(path)),
            State::Summaries(rows) => format!("{} GPUs' summaries — nsys-explorer", rows.len()),
            State::Job(page) => format!("job of {} ranks — nsys-explorer", page.paths.len()),
        };
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
    }

    /// Compares the loaded run with the export at `path` (once one is loaded).
    pub fn compare_with(&mut self, path: PathBuf) {
        match &mut self.state {
            State::Loaded(l) => l.compare_with(path),
            _ => self.compare_when_loaded = Some(path),
        }
    }

    /// The whole window, in a `Ui` (also what the GUI tests drive).
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        if !std::mem::replace(&mut self.configured, true) {
            configure(&ctx);
        }
        // Escape closes Help first (taken, so the timeline does not also clear its marks).
        if self.help_open
            && ctx.input_mut(|i| i.consume_key(egui::Modifiers::NONE, egui::Key::Escape))
        {
            self.help_open = false;
        }
        self.poll_worker();
        if let State::Loaded(l) = &mut self.state
            && let Some(path) = self.compare_when_loaded.take()
        {
            l.compare_with(path);
        }
        self.update_title(&ctx);
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        if !dropped.is_empty() {
            self.open_paths(dropped, &ctx);
        }
        self.menu_bar(ui, &ctx);
        let typing = ctx.egui_wants_keyboard_input();
        if !typing
            && ctx.input(|i| i.key_pressed(egui::Key::F1) || i.key_pressed(egui::Key::Questionmark))
        {
            self.help_open = !self.help_open;
        }
        if self.help_open {
            help_window(&ctx, &mut self.help_open);
        }
        if self.profile_open {
            profile_window(&ctx, &mut self.profile_open);
        }
        match &mut self.state {
            State::Start => self.start_page(ui, &ctx),
            State::Loading { path, job } => {
                let what = if is_sample(&self.sample, path) {
                    "the sample trace (a generated Wan2.1-like 4-GPU run)".to_string()
                } else {
                    file_name(path)
                };
                loading_page(ui, &what, job);
            }
            State::Failed { path, message } => {
                if failed_page(ui, path, message) {
                    self.state = State::Start;
                }
            }
            State::Loaded(l) => {
                if let Some(manual) = loaded_ui(ui, l, &mut self.split) {
                    let files = l.files.iter().map(|f| f.path.clone()).collect();
                    self.open_many(files, manual, &ctx);
                }
            }
            State::Report {
                path,
                export,
                looked,
            } => {
                let (path, export, looked) = (path.clone(), export.clone(), looked.clone());
                self.report_page(ui, &ctx, &path, export, &looked);
            }
            State::Summaries(rows) => {
                if let Some(export) = pages::summaries_page(ui, rows) {
                    self.open(export, &ctx);
                }
            }
            State::Job(page) => {
                if let Some(export) = job_page::show(ui, page) {
                    self.open(export, &ctx);
                }
            }
        }
    }

    /// The menus (File, View, Help) and, with a trace open, the toolbar beside them.
    fn menu_bar(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
        egui::Panel::top("menu").show(ui, |ui| {
            egui::MenuBar::new().ui(ui, |ui| {
                ui.menu_button("File", |ui| {
                    self.file_menu(ui, ctx);
                });
                if let State::Loaded(l) = &mut self.state
                    && (!l.trace.gpu_metrics.is_empty() || !l.trace.memory_usage.is_empty())
                {
                    ui.menu_button("View", |ui| {
                        timeline::metric_rows::choice_menu(
                            ui,
                            &l.trace,
                            &mut l.timeline.settings.metric_choice,
                        );
                    });
                }
                ui.menu_button("Help", |ui| {
                    self.help_menu(ui);
                });
                self.toolbar(ui);
            });
        });
    }

    /// File: open, open several, the sample, recent files, compare, export figures, close.
    fn file_menu(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
        if ui.button("Open…").clicked() {
            self.pick_file(ctx);
        }
        if ui
            .button("Open several…")
            .on_hover_text(
                "One job's per-rank exports, opened as one trace and aligned by their collectives",
            )
            .clicked()
            && let Some(paths) = pick_exports()
        {
            self.open_paths(paths, ctx);
        }
        if ui.button("Open sample trace").clicked() {
            self.open_sample(ctx);
        }
        ui.menu_button("Open Recent", |ui| {
            for path in self.recent.clone() {
                if ui.button(path.display().to_string()).clicked() {
                    self.open(path, ctx);
                }
            }
        });
        let loaded = matches!(self.state, State::Loaded(_));
        if ui
        .add_enabled(loaded, egui::Button::new("Compare with…"))
        .on_hover_text("Another run of the same job (before / after a change): its timeline under this one, aligned by iteration, and a Diff tab")
        .clicked()
        && let Some(path) = pick_export()
    {
        self.compare_with(path);
    }
        let analysed = matches!(&self.state, State::Loaded(l) if l.overview.is_some());
        if ui
        .add_enabled(analysed, egui::Button::new("Export figures…"))
        .on_hover_text("The five figures people draw to discuss a trace, as PNG and SVG, and their numbers (also: right-click a plot)")
        .clicked()
        && let State::Loaded(l) = &mut self.state
    {
        l.figures.open_for(&l.path.clone(), None);
    }
        if ui.button("Close").clicked() {
            self.state = State::Start;
        }
        ui.separator();
        if ui.button("Quit").clicked() {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }

    /// Help: the keys, the version, where the manual and the cache are, the profiler.
    fn help_menu(&mut self, ui: &mut egui::Ui) {
        if ui.button("Keys and mouse (F1)").clicked() {
            self.help_open = true;
        }
        ui.separator();
        ui.label(format!("nsys-explorer {}", env!("CARGO_PKG_VERSION")));
        ui.label(
        "The manual: docs/guide.md (the window), docs/cli.md (the commands) and CHANGELOG.md beside the source; `man nsys-explorer` once install-desktop ran",
    );
        ui.label(match crate::cache::folder() {
            Some(dir) => format!("Cache: {} (never beside a trace)", dir.display()),
            None => "Cache: none (no cache folder)".to_string(),
        });
        ui.separator();
        // What developers time the app with, out of the way of everyone else.
        ui.menu_button("Developer", |ui| {
            if ui.button("Profile").clicked() {
                self.profile_open = true;
            }
        });
    }

    /// With a trace open: the sample's mark, Fit, Find, the counts and the analysis' progress.
    fn toolbar(&mut self, ui: &mut egui::Ui) {
        if let State::Loaded(l) = &mut self.state {
            ui.separator();
            if is_sample(&self.sample, &l.path) {
                ui.label(
                egui::RichText::new("SAMPLE TRACE")
                    .strong()
                    .color(ui.visuals().warn_fg_color),
            )
            .on_hover_text("A generated Wan2.1-like 4-GPU run, built into the app. File > Open… to open your own export.");
                ui.separator();
            }
            if ui.button("Fit (F)").clicked() {
                l.timeline.apply(&l.trace, Nav::Fit);
            }
            if ui.button("Find (Ctrl+F)").clicked() {
                l.timeline.apply(&l.trace, Nav::OpenSearch);
            }
            ui.label(l.counts_text());
            if let Some(job) = l.stage.job() {
                ui.separator();
                if l.complete() {
                    busy(ui);
                    ui.label("Analysing…");
                    if ui.button("Cancel").clicked() {
                        job.cancel();
                    }
                } else {
                    progress_bar(ui, job, 220.0);
                    if ui.button("Cancel").clicked() {
                        job.cancel();
                    }
                }
            }
        }
    }
}

/// A file being opened: what, its progress and Cancel.
fn loading_page(ui: &mut egui::Ui, what: &str, job: &LoadJob) {
    egui::CentralPanel::default().show(ui, |ui| {
        ui.add_space(ui.available_height() / 3.0);
        ui.vertical_centered(|ui| {
            ui.heading(format!("Loading {what}"));
            progress_bar(ui, job, 420.0);
            if ui.button("Cancel").clicked() {
                job.cancel();
            }
        });
    });
}

/// A file that could not be opened, and why; whether the user asked to go back.
fn failed_page(ui: &mut egui::Ui, path: &std::path::Path, message: &str) -> bool {
    let mut back = false;
    egui::CentralPanel::default().show(ui, |ui| {
        ui.add_space(40.0);
        ui.heading(format!("Could not open {}", file_name(path)));
        ui.add_space(8.0);
        ui.label(
            egui::RichText::new(message)
                .color(ui.visuals().warn_fg_color)
                .size(15.0),
        );
        ui.add_space(16.0);
        back = ui.button("Back to the start page").clicked();
    });
    back
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        App::ui(self, ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, RECENT_KEY, &self.recent);
        eframe::set_value(storage, SPLIT_KEY, &self.split);
    }
}

/// Settings of the context the app draws with. The timeline's meshes hold only what is in
/// view, so egui's coarse culling, which finds a mesh's bounds vertex by vertex to skip one
/// out of view, was a seventh of a zoomed-out frame spent to skip nothing.
/// Work under way, shown as eight dots with one lit going round: a frame every 125 ms,
/// not egui's spinner's every frame (while a 2 GB export loads, a software renderer
/// drawing at the screen's rate takes a core from the load).
pub fn busy(ui: &mut egui::Ui) {
    const DOTS: usize = 8;
    const STEP: std::time::Duration = std::time::Duration::from_millis(125);
    let size = ui.text_style_height(&egui::TextStyle::Body);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
    if ui.is_rect_visible(rect) {
        let lit = (ui.input(|i| i.time) / STEP.as_secs_f64()) as usize % DOTS;
        let (centre, radius) = (rect.center(), size * 0.38);
        let colour = ui.visuals().strong_text_color();
        for k in 0..DOTS {
            let angle = std::f32::consts::TAU * k as f32 / DOTS as f32;
            let at = centre + radius * egui::vec2(angle.cos(), angle.sin());
            let alpha = if k == lit { 1.0 } else { 0.3 };
            ui.painter()
                .circle_filled(at, size * 0.08, colour.gamma_multiply(alpha));
        }
        ui.ctx().request_repaint_after(STEP);
    }
}

pub fn configure(ctx: &egui::Context) {
    ctx.tessellation_options_mut(|o| o.coarse_tessellation_culling = false);
    // The proportional font lacks glyphs the findings and commands use (→ in a pattern's
    // signature, ▸): the monospace one, bundled with egui, has them and stands in.
    let mut fonts = egui::FontDefinitions::default();
    if let Some(family) = fonts.families.get_mut(&egui::FontFamily::Proportional)
        && !family.iter().any(|f| f == "Hack")
    {
        let at = family.len().min(1);
        family.insert(at, "Hack".to_owned());
    }
    ctx.set_fonts(fonts);
}

/// Whether `path` is the built-in sample's file (see [`App`]'s `sample`).
fn is_sample(sample: &Option<(PathBuf, tempfile::TempDir)>, path: &Path) -> bool {
    sample.as_ref().is_some_and(|(file, _)| file == path)
}

/// Opens the window on `file`; without one, on the built-in sample trace (or the start
/// page with `start_page`).
pub fn run(
    files: Vec<PathBuf>,
    start_page: bool,
    show: Option<String>,
    compare: Option<PathBuf>,
) -> eframe::Result {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("nsys-explorer")
            .with_inner_size([1400.0, 900.0])
            .with_drag_and_drop(true)
            .with_app_id("nsys-explorer")
            .with_icon(Arc::new(egui::IconData {
                rgba: crate::desktop::WINDOW_ICON_RGBA.to_vec(),
                width: 64,
                height: 64,
            })),
        ..Default::default()
    };
    eframe::run_native(
        "nsys-explorer",
        options,
        Box::new(move |cc| {
            let recent: Vec<PathBuf> = cc
                .storage
                .and_then(|s| eframe::get_value(s, RECENT_KEY))
                .unwrap_or_default();
            let mut app = App::new(None, &cc.egui_ctx, recent);
            if !files.is_empty() {
                app.open_paths(files, &cc.egui_ctx);
            }
            if let Some(split) = cc.storage.and_then(|s| eframe::get_value(s, SPLIT_KEY)) {
                app.split = split;
            }
            app.show_when_analysed = show;
            app.compare_when_loaded = compare;
            if matches!(app.state, State::Start) && !start_page {
                app.open_sample(&cc.egui_ctx);
            }
            Ok(Box::new(app))
        }),
    )
}
