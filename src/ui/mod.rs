//! The eframe app: a start page, a background load with progress and Cancel, then the
//! timeline with a details panel. The UI never runs SQL itself; a load runs on a worker
//! thread and hands over the finished `Trace`.

pub mod details;
pub mod timeline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};

use eframe::egui;

use crate::load::{self, LoadError, LoadReport, Progress};
use crate::trace::Trace;
use timeline::Timeline;

const RECENT_KEY: &str = "recent_files";
const MAX_RECENT: usize = 8;

pub enum Message {
    Progress(Progress),
    /// The trace with its timeline indexes, built on the worker so the UI never waits.
    Done(Box<Result<(Trace, LoadReport, Timeline), LoadError>>),
}

pub struct Loaded {
    pub path: PathBuf,
    pub trace: Trace,
    pub report: LoadReport,
    pub timeline: Timeline,
}

pub enum State {
    Start,
    Loading {
        path: PathBuf,
        progress: Option<Progress>,
        cancel: Arc<AtomicBool>,
        rx: Receiver<Message>,
    },
    Loaded(Box<Loaded>),
    Failed {
        path: PathBuf,
        message: String,
    },
}

pub struct App {
    pub state: State,
    pub recent: Vec<PathBuf>,
    title: String,
}

impl App {
    pub fn new(file: Option<PathBuf>, ctx: &egui::Context, recent: Vec<PathBuf>) -> Self {
        let mut app = Self {
            state: State::Start,
            recent,
            title: String::new(),
        };
        if let Some(path) = file {
            app.open(path, ctx);
        }
        app
    }

    /// Starts loading `path` on a worker thread, cancelling any load in flight.
    pub fn open(&mut self, path: PathBuf, ctx: &egui::Context) {
        if let State::Loading { cancel, .. } = &self.state {
            cancel.store(true, Ordering::Relaxed);
        }
        self.recent.retain(|p| p != &path);
        self.recent.insert(0, path.clone());
        self.recent.truncate(MAX_RECENT);
        let (tx, rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let worker_cancel = cancel.clone();
        let worker_path = path.clone();
        let repaint = ctx.clone();
        std::thread::spawn(move || {
            let progress_tx = std::sync::Mutex::new(tx.clone());
            let progress_repaint = repaint.clone();
            let on_progress = move |p: Progress| {
                if let Ok(tx) = progress_tx.lock() {
                    let _ = tx.send(Message::Progress(p));
                }
                progress_repaint.request_repaint();
            };
            let result = load::load_with(&worker_path, &on_progress, &worker_cancel).map(
                |(trace, report)| {
                    let timeline = Timeline::new(&trace);
                    (trace, report, timeline)
                },
            );
            let _ = tx.send(Message::Done(Box::new(result)));
            repaint.request_repaint();
        });
        self.state = State::Loading {
            path,
            progress: None,
            cancel,
            rx,
        };
    }

    pub fn open_sample(&mut self, ctx: &egui::Context) {
        match crate::synth::write_sample_trace() {
            Ok(path) => self.open(path, ctx),
            Err(message) => {
                self.state = State::Failed {
                    path: PathBuf::from("sample trace"),
                    message,
                };
            }
        }
    }

    fn poll_worker(&mut self) {
        let State::Loading {
            rx, progress, path, ..
        } = &mut self.state
        else {
            return;
        };
        while let Ok(message) = rx.try_recv() {
            match message {
                Message::Progress(p) => *progress = Some(p),
                Message::Done(result) => {
                    let path = path.clone();
                    self.state = match *result {
                        Ok((trace, report, timeline)) => State::Loaded(Box::new(Loaded {
                            path,
                            trace,
                            report,
                            timeline,
                        })),
                        Err(LoadError::Cancelled) => State::Start,
                        Err(e) => State::Failed {
                            path,
                            message: e.to_string(),
                        },
                    };
                    return;
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
                if let State::Loaded(l) = &mut self.state {
                    ui.separator();
                    if ui.button("Fit (F)").clicked() {
                        l.timeline.fit();
                    }
                    ui.label(format!(
                        "{} kernels on {} GPUs · {} API calls · {} NVTX ranges",
                        l.trace.kernel_count(),
                        l.trace.devices.len(),
                        l.trace.api_call_count(),
                        l.trace.nvtx_range_count()
                    ));
                }
            });
        });
        match &mut self.state {
            State::Start => self.start_page(ui, &ctx),
            State::Loading {
                path,
                progress,
                cancel,
                ..
            } => {
                egui::CentralPanel::default().show(ui, |ui| {
                    ui.add_space(ui.available_height() / 3.0);
                    ui.vertical_centered(|ui| {
                        ui.heading(format!("Loading {}", file_name(path)));
                        let p = progress.unwrap_or(Progress {
                            phase: load::Phase::Opening,
                            fraction: 0.0,
                            rows_read: 0,
                        });
                        ui.add(
                            egui::ProgressBar::new(p.fraction)
                                .desired_width(420.0)
                                .show_percentage(),
                        );
                        ui.label(format!("{} · {} rows read", p.phase.label(), p.rows_read));
                        if ui.button("Cancel").clicked() {
                            cancel.store(true, Ordering::Relaxed);
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
            State::Loaded(l) => {
                egui::Panel::right("details")
                    .default_size(340.0)
                    .resizable(true)
                    .show(ui, |ui| {
                        egui::ScrollArea::vertical()
                            .show(ui, |ui| details::show(ui, &l.trace, &l.timeline));
                    });
                egui::CentralPanel::default().show(ui, |ui| l.timeline.show(ui, &l.trace));
            }
        }
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
    }
}

/// Opens the window on `file`; without one, on the built-in sample trace (or the start
/// page with `start_page`).
pub fn run(file: Option<PathBuf>, start_page: bool) -> eframe::Result {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("nsys-explorer")
            .with_inner_size([1400.0, 900.0])
            .with_drag_and_drop(true),
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
            if matches!(app.state, State::Start) && !start_page {
                app.open_sample(&cc.egui_ctx);
            }
            Ok(Box::new(app))
        }),
    )
}
