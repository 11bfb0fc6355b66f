//! The eframe app: a start page, a background load with progress and Cancel, then the
//! timeline with a details panel. The UI never runs SQL itself; a load runs on a worker
//! thread and hands over the finished `Trace`.

pub mod details;
mod fold;
pub mod gap_finder;
pub mod gap_table;
pub mod iterations_panel;
mod labels;
mod layout_cache;
mod lod;
mod ruler;
pub mod search;
pub mod split;
pub mod summary;
pub mod tables;
pub mod theme;
pub mod timeline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};

use eframe::egui;

use crate::analysis::breakdown::State as DeviceState;
use crate::analysis::overview::{self, Overview};
use crate::load::{self, LoadError, LoadReport, Progress};
use crate::report::plural;
use crate::trace::Trace;
use split::Split;
use timeline::Timeline;

const RECENT_KEY: &str = "recent_files";
const SPLIT_KEY: &str = "split";
const MAX_RECENT: usize = 8;

pub enum Message {
    Progress(Progress),
    /// The GPU side alone, so the timeline shows while the CPU side loads.
    GpuReady(Box<(Arc<Trace>, Timeline)>),
    /// The trace with its timeline indexes, built on the worker so the UI never waits.
    Done(Box<Result<LoadedParts, LoadError>>),
    /// Every analysis of the loaded trace, for the panels.
    Analysed(Box<Overview>),
    /// The analyses were cancelled: the timeline stays, the panels say so.
    AnalysesCancelled,
}

/// What a finished load hands to the UI.
pub type LoadedParts = (Arc<Trace>, LoadReport, Timeline);

/// A load (and then the analyses) running on a worker thread.
pub struct Job {
    pub progress: Option<Progress>,
    pub cancel: Arc<AtomicBool>,
    rx: Receiver<Message>,
}

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
    pub job: Option<Job>,
    /// The load was cancelled after the GPU side came in: that is all there is.
    pub cancelled: bool,
    /// The analyses were cancelled: the whole trace is loaded, the panels are empty.
    pub analyses_cancelled: bool,
}

impl Loaded {
    fn new(path: PathBuf, trace: Arc<Trace>, timeline: Timeline, job: Job) -> Self {
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
                self.timeline.overlay = summary::overlay(&trace, overview, 0, DeviceState::Idle);
                if let Some(k) = overview.iterations.slowest_index {
                    self.iterations
                        .open(k, &trace, overview, &mut self.timeline);
                    let (a, b) = self.timeline.view;
                    self.timeline.view = (a - (b - a), b + (b - a));
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

pub enum State {
    Start,
    Loading {
        path: PathBuf,
        job: Job,
    },
    Loaded(Box<Loaded>),
    Failed {
        path: PathBuf,
        message: String,
    },
    /// An Nsight Systems report (`.nsys-rep`), which needs exporting first; `export` is
    /// the SQLite export beside it, when there is one.
    Report {
        path: PathBuf,
        export: Option<PathBuf>,
    },
}

/// Whether `path` is an Nsight Systems report rather than its SQLite export.
pub fn is_report(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("nsys-rep") || e.eq_ignore_ascii_case("qdrep"))
}

pub struct App {
    pub state: State,
    pub recent: Vec<PathBuf>,
    title: String,
    /// The built-in sample's file, when it was opened: the window says it is a sample.
    sample: Option<PathBuf>,
    /// The keyboard and mouse help (F1 or ?).
    pub help_open: bool,
    /// The panels' sizes as the user chose them (remembered).
    pub split: Split,
    /// A view to open once the analyses are in (`--show`, for the screenshot script).
    pub show_when_analysed: Option<String>,
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
            split: Split::default(),
            show_when_analysed: None,
        };
        if let Some(path) = file {
            app.open(path, ctx);
        }
        app
    }

    /// Starts loading `path` on a worker thread, cancelling any load in flight.
    pub fn open(&mut self, path: PathBuf, ctx: &egui::Context) {
        if is_report(&path) {
            self.cancel_job();
            let export = Some(path.with_extension("sqlite")).filter(|p| p.is_file());
            self.state = State::Report { path, export };
            return;
        }
        self.recent.retain(|p| p != &path);
        self.recent.insert(0, path.clone());
        self.recent.truncate(MAX_RECENT);
        self.start_load(path, ctx);
    }

    fn start_load(&mut self, path: PathBuf, ctx: &egui::Context) {
        self.cancel_job();
        let (tx, rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let worker_cancel = cancel.clone();
        let worker_path = path.clone();
        let repaint = ctx.clone();
        std::thread::spawn(move || {
            let send = |m: Message| {
                let _ = tx.send(m);
                repaint.request_repaint();
            };
            let progress_tx = std::sync::Mutex::new(tx.clone());
            let progress_repaint = repaint.clone();
            let on_progress = move |p: Progress| {
                if let Ok(tx) = progress_tx.lock() {
                    let _ = tx.send(Message::Progress(p));
                }
                progress_repaint.request_repaint();
            };
            let on_gpu = |trace: Trace| {
                let timeline = Timeline::new(&trace);
                send(Message::GpuReady(Box::new((Arc::new(trace), timeline))));
            };
            let result =
                load::load_staged(&worker_path, &on_progress, &worker_cancel, Some(&on_gpu)).map(
                    |(trace, report)| {
                        let timeline = Timeline::new(&trace);
                        (Arc::new(trace), report, timeline)
                    },
                );
            let trace = result.as_ref().ok().map(|r| r.0.clone());
            send(Message::Done(Box::new(result)));
            if let Some(trace) = trace
                && !worker_cancel.load(Ordering::Relaxed)
            {
                let options = overview::Options {
                    top: 20,
                    ..Default::default()
                };
                match overview::overview_cancellable(&trace, &options, &worker_cancel) {
                    Some(o) => send(Message::Analysed(Box::new(o))),
                    None => send(Message::AnalysesCancelled),
                }
            }
        });
        let job = Job {
            progress: None,
            cancel,
            rx,
        };
        self.state = State::Loading { path, job };
    }

    /// Cancels the load or analyses in flight, if any.
    fn cancel_job(&mut self) {
        let job = match &self.state {
            State::Loading { job, .. } => Some(job),
            State::Loaded(l) => l.job.as_ref(),
            _ => None,
        };
        if let Some(job) = job {
            job.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Opens the built-in sample trace (not remembered among recent files: it is rewritten
    /// in a temporary folder).
    pub fn open_sample(&mut self, ctx: &egui::Context) {
        match crate::synth::write_sample_trace() {
            Ok(path) => {
                self.sample = Some(path.clone());
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

    fn poll_worker(&mut self) {
        loop {
            let job = match &mut self.state {
                State::Loading { job, .. } => job,
                State::Loaded(l) => match &mut l.job {
                    Some(job) => job,
                    None => return,
                },
                _ => return,
            };
            let Ok(message) = job.rx.try_recv() else {
                return;
            };
            match message {
                Message::Progress(p) => job.progress = Some(p),
                Message::GpuReady(gpu) => {
                    let (trace, timeline) = *gpu;
                    if let State::Loading { path, job } =
                        std::mem::replace(&mut self.state, State::Start)
                    {
                        self.state =
                            State::Loaded(Box::new(Loaded::new(path, trace, timeline, job)));
                    }
                }
                Message::Done(result) => match *result {
                    Ok((trace, report, mut timeline)) => {
                        match std::mem::replace(&mut self.state, State::Start) {
                            State::Loading { path, job } => {
                                let mut l = Loaded::new(path, trace, timeline, job);
                                l.report = Some(report);
                                self.state = State::Loaded(Box::new(l));
                            }
                            State::Loaded(mut l) => {
                                timeline.keep_view_of(&mut l.timeline);
                                l.timeline = timeline;
                                l.trace = trace;
                                l.report = Some(report);
                                self.state = State::Loaded(l);
                            }
                            other => self.state = other,
                        }
                    }
                    // Cancelled while the CPU side loaded: keep the GPU timeline on screen.
                    Err(LoadError::Cancelled) => match &mut self.state {
                        State::Loaded(l) => {
                            l.job = None;
                            l.cancelled = true;
                        }
                        _ => self.state = State::Start,
                    },
                    Err(e) => {
                        let path = match &self.state {
                            State::Loading { path, .. } => path.clone(),
                            State::Loaded(l) => l.path.clone(),
                            _ => PathBuf::new(),
                        };
                        self.state = State::Failed {
                            path,
                            message: e.to_string(),
                        };
                    }
                },
                Message::AnalysesCancelled => {
                    if let State::Loaded(l) = &mut self.state {
                        l.job = None;
                        l.analyses_cancelled = true;
                    }
                }
                Message::Analysed(overview) => {
                    if let State::Loaded(l) = &mut self.state {
                        l.overview = Some(Arc::from(overview));
                        l.job = None;
                        if let Some(view) = self.show_when_analysed.take() {
                            l.show(&view);
                        }
                    }
                }
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
        };
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
    }

    /// The whole window, in a `Ui` (also what the GUI tests drive).
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.poll_worker();
        self.update_title(&ctx);
        if let Some(path) = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .find_map(|f| Some(f.path().to_path_buf()).filter(|p| !p.as_os_str().is_empty()))
        }) {
            self.open(path, &ctx);
        }
        egui::Panel::top("menu").show(ui, |ui| {
            egui::MenuBar::new().ui(ui, |ui| {
                ui.menu_button("File", |ui| {
                    if ui.button("Open…").clicked() {
                        self.pick_file(&ctx);
                    }
                    if ui.button("Open sample trace").clicked() {
                        self.open_sample(&ctx);
                    }
                    ui.menu_button("Open Recent", |ui| {
                        for path in self.recent.clone() {
                            if ui.button(path.display().to_string()).clicked() {
                                self.open(path, &ctx);
                            }
                        }
                    });
                    if ui.button("Close").clicked() {
                        self.state = State::Start;
                    }
                });
                ui.menu_button("Help", |ui| {
                    if ui.button("Keys and mouse (F1)").clicked() {
                        self.help_open = true;
                    }
                });
                if let State::Loaded(l) = &mut self.state {
                    ui.separator();
                    if self.sample.as_ref() == Some(&l.path) {
                        ui.label(
                            egui::RichText::new("SAMPLE TRACE")
                                .strong()
                                .color(ui.visuals().warn_fg_color),
                        )
                        .on_hover_text("A generated Wan2.1-like 4-GPU run, built into the app. File ▸ Open… to open your own export.");
                        ui.separator();
                    }
                    if ui.button("Fit (F)").clicked() {
                        l.timeline.fit();
                    }
                    if ui.button("Find (Ctrl+F)").clicked() {
                        l.timeline.search.open = true;
                    }
                    ui.label(format!(
                        "{} on {} · {} · {}",
                        plural(l.trace.kernel_count(), "kernel"),
                        plural(l.trace.devices.len(), "GPU"),
                        plural(l.trace.api_call_count(), "API call"),
                        plural(l.trace.nvtx_range_count(), "NVTX range")
                    ));
                    if let Some(job) = &l.job {
                        ui.separator();
                        if l.complete() {
                            ui.spinner();
                            ui.label("Analysing…");
                            if ui.button("Cancel").clicked() {
                                job.cancel.store(true, Ordering::Relaxed);
                            }
                        } else {
                            progress_bar(ui, job, 220.0);
                            if ui.button("Cancel").clicked() {
                                job.cancel.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
        });
        let typing = ctx.egui_wants_keyboard_input();
        if !typing
            && ctx.input(|i| i.key_pressed(egui::Key::F1) || i.key_pressed(egui::Key::Questionmark))
        {
            self.help_open = !self.help_open;
        }
        if self.help_open {
            help_window(&ctx, &mut self.help_open);
        }
        match &mut self.state {
            State::Start => self.start_page(ui, &ctx),
            State::Loading { path, job } => {
                let what = if self.sample.as_ref() == Some(path) {
                    "the sample trace (a generated Wan2.1-like 4-GPU run)".to_string()
                } else {
                    file_name(path)
                };
                egui::CentralPanel::default().show(ui, |ui| {
                    ui.add_space(ui.available_height() / 3.0);
                    ui.vertical_centered(|ui| {
                        ui.heading(format!("Loading {what}"));
                        progress_bar(ui, job, 420.0);
                        if ui.button("Cancel").clicked() {
                            job.cancel.store(true, Ordering::Relaxed);
                        }
                    });
                });
            }
            State::Failed { path, message } => {
                let message = message.clone();
                let path = path.clone();
                egui::CentralPanel::default().show(ui, |ui| {
                    ui.add_space(40.0);
                    ui.heading(format!("Could not open {}", file_name(&path)));
                    ui.add_space(8.0);
                    ui.label(
                        egui::RichText::new(message)
                            .color(ui.visuals().warn_fg_color)
                            .size(15.0),
                    );
                    ui.add_space(16.0);
                    if ui.button("Back to the start page").clicked() {
                        self.state = State::Start;
                    }
                });
            }
            State::Loaded(l) => loaded_ui(ui, l, &mut self.split),
            State::Report { path, export } => {
                let (path, export) = (path.clone(), export.clone());
                self.report_page(ui, &ctx, &path, export);
            }
        }
    }

    /// What to do with an `.nsys-rep`: the export command, and the export if it is there.
    fn report_page(
        &mut self,
        ui: &mut egui::Ui,
        ctx: &egui::Context,
        path: &std::path::Path,
        export: Option<PathBuf>,
    ) {
        let sqlite = path.with_extension("sqlite");
        let command = format!(
            "nsys export --type sqlite --output {} {}",
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

    fn start_page(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
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

    fn pick_file(&mut self, ctx: &egui::Context) {
        if let Some(path) = rfd::FileDialog::new()
            .add_filter("Nsight Systems SQLite export", &["sqlite", "db"])
            .add_filter("All files", &["*"])
            .pick_file()
        {
            self.open(path, ctx);
        }
    }
}

/// Every key and mouse action, as Nsight Systems and Perfetto users look for them.
const HELP: [(&str, &str); 20] = [
    (
        "Ctrl + wheel, pinch, W / S",
        "zoom in / out (around the pointer; W/S around the middle)",
    ),
    ("drag, A / D, Shift + wheel", "pan"),
    ("wheel", "scroll the rows"),
    ("drag on the ruler", "zoom to the dragged range"),
    (
        "double-click an item",
        "zoom to it (an iteration: its NVTX range)",
    ),
    ("F", "fit: the whole trace, CPU side included"),
    (
        "Shift + drag",
        "set the current window (the summary and the gap table follow it)",
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
    ("host_bound", "the CPU launched too late, with no sync"),
    ("F1 or ?", "this help"),
];

fn help_window(ctx: &egui::Context, open: &mut bool) {
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

/// The load's phase, percent and rows read.
fn progress_bar(ui: &mut egui::Ui, job: &Job, width: f32) {
    let p = job.progress.unwrap_or(Progress {
        phase: load::Phase::Opening,
        fraction: 0.0,
        rows_read: 0,
    });
    ui.add(
        egui::ProgressBar::new(p.fraction)
            .desired_width(width)
            .show_percentage(),
    );
    ui.label(format!("{} · {} rows read", p.phase.label(), p.rows_read));
}

/// The loaded trace: summary on the left, tabs at the bottom, the timeline in the middle.
fn loaded_ui(ui: &mut egui::Ui, l: &mut Loaded, split: &mut Split) {
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
                (Tab::Kernels, None, Some(o)) => l.tables.kernels(ui, o, &mut l.timeline),
                (Tab::Nccl, None, Some(o)) => l.tables.nccl(ui, o, &mut l.timeline),
                (Tab::Memory, None, Some(o)) => l.tables.memory(ui, o),
                (Tab::Nvtx, None, Some(o)) => l.tables.nvtx(ui, o, &mut l.timeline),
            }
        }));
    egui::CentralPanel::default().show(ui, |ui| l.timeline.show(ui, &trace));
    // The edges are dragged last, so that they lie on top of the panels beside them.
    split.summary_edge(ui, summary.response.rect);
    split.tabs_edge(ui, tabs.response.rect);
    if std::mem::take(&mut l.timeline.clicked_selection) {
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

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// `text` cut to `max` characters by taking out its middle, so the start and the end
/// (where kernel names and signatures differ) both stay.
pub(crate) fn shorten_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(1);
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}…{end}")
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
pub fn configure(ctx: &egui::Context) {
    ctx.tessellation_options_mut(|o| o.coarse_tessellation_culling = false);
}

/// Opens the window on `file`; without one, on the built-in sample trace (or the start
/// page with `start_page`).
pub fn run(file: Option<PathBuf>, start_page: bool, show: Option<String>) -> eframe::Result {
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
            let mut app = App::new(file, &cc.egui_ctx, recent);
            if let Some(split) = cc.storage.and_then(|s| eframe::get_value(s, SPLIT_KEY)) {
                app.split = split;
            }
            app.show_when_analysed = show;
            if matches!(app.state, State::Start) && !start_page {
                app.open_sample(&cc.egui_ctx);
            }
            Ok(Box::new(app))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_cut_in_the_middle_keeps_its_start_and_end() {
        let a = "void at::native::vectorized_elementwise_kernel<4, AddFunctor>";
        let b = "void at::native::vectorized_elementwise_kernel<4, MulFunctor>";
        let (sa, sb) = (shorten_middle(a, 30), shorten_middle(b, 30));
        assert_eq!(sa.chars().count(), 30);
        assert_ne!(sa, sb, "two long names must not read alike");
        assert!(
            sa.starts_with("void at::nat") && sa.ends_with("AddFunctor>"),
            "{sa}"
        );
        assert_eq!(shorten_middle("short", 30), "short");
    }
}
