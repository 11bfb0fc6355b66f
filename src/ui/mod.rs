//! The eframe app. For now a plain window: it loads the file on a worker thread (showing
//! progress, with Cancel) and shows the load report. The UI never runs SQL itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};

use eframe::egui;

use crate::load::{self, LoadError, LoadReport, Progress};
use crate::trace::Trace;

enum Message {
    Progress(Progress),
    Done(Result<(Trace, LoadReport), LoadError>),
}

enum State {
    Empty,
    Loading {
        path: PathBuf,
        progress: Option<Progress>,
        cancel: Arc<AtomicBool>,
        rx: Receiver<Message>,
    },
    Loaded {
        summary: String,
    },
    Failed {
        message: String,
    },
}

pub struct App {
    state: State,
}

impl App {
    pub fn new(file: Option<PathBuf>, ctx: &egui::Context) -> Self {
        let mut app = Self {
            state: State::Empty,
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
        let (tx, rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let worker_cancel = cancel.clone();
        let worker_path = path.clone();
        let repaint = ctx.clone();
        std::thread::spawn(move || {
            let progress_tx = tx.clone();
            let progress_repaint = repaint.clone();
            let on_progress = move |p: Progress| {
                let _ = progress_tx.send(Message::Progress(p));
                progress_repaint.request_repaint();
            };
            let on_progress = std::sync::Mutex::new(on_progress);
            let result = load::load_with(
                &worker_path,
                &|p| (on_progress.lock().unwrap())(p),
                &worker_cancel,
            );
            let _ = tx.send(Message::Done(result));
            repaint.request_repaint();
        });
        self.state = State::Loading {
            path,
            progress: None,
            cancel,
            rx,
        };
    }

    fn poll_worker(&mut self) {
        let State::Loading { rx, progress, .. } = &mut self.state else {
            return;
        };
        while let Ok(message) = rx.try_recv() {
            match message {
                Message::Progress(p) => *progress = Some(p),
                Message::Done(Ok((trace, report))) => {
                    self.state = State::Loaded {
                        summary: {
                            let options = crate::analysis::Options::default();
                            let overview = crate::analysis::overview(&trace, &options);
                            crate::report::report_text(&trace, &report, &overview, &options)
                        },
                    };
                    return;
                }
                Message::Done(Err(e)) => {
                    self.state = State::Failed {
                        message: e.to_string(),
                    };
                    return;
                }
            }
        }
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.poll_worker();
        egui::CentralPanel::default().show(ui, |ui| match &self.state {
            State::Empty => {
                ui.heading("nsys-explorer");
                ui.label("Run `nsys-explorer FILE.sqlite` to open an Nsight Systems export.");
            }
            State::Loading {
                path,
                progress,
                cancel,
                ..
            } => {
                ui.heading(format!("Loading {}", path.display()));
                if let Some(p) = progress {
                    ui.add(egui::ProgressBar::new(p.fraction).show_percentage());
                    ui.label(format!("{}: {} rows read", p.phase.label(), p.rows_read));
                }
                if ui.button("Cancel").clicked() {
                    cancel.store(true, Ordering::Relaxed);
                }
            }
            State::Loaded { summary } => {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    ui.monospace(summary);
                });
            }
            State::Failed { message } => {
                ui.colored_label(egui::Color32::LIGHT_RED, message);
            }
        });
    }
}

/// Opens the window on `file`, or on the built-in sample trace when none is given.
pub fn run(file: Option<PathBuf>) -> eframe::Result {
    let file = file.or_else(|| match crate::synth::write_sample_trace() {
        Ok(path) => Some(path),
        Err(e) => {
            eprintln!("nsys-explorer: could not write the sample trace: {e}");
            None
        }
    });
    let title = match &file {
        Some(path) => format!("{} — nsys-explorer", path.display()),
        None => "nsys-explorer".to_string(),
    };
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title(title)
            .with_inner_size([1400.0, 900.0]),
        ..Default::default()
    };
    eframe::run_native(
        "nsys-explorer",
        options,
        Box::new(move |cc| Ok(Box::new(App::new(file, &cc.egui_ctx)))),
    )
}
