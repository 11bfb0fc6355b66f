//! Loading a file: the worker that reads it (GPU side first, so the timeline shows while
//! the CPU side loads), then runs the analyses; and the state machine its messages drive.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use super::load_job::{LoadJob, Message, Source};
use super::loaded::{Loaded, Stage};
use super::task::Task;
use super::timeline::Timeline;
use super::{App, State};
use crate::load::{LoadError, Progress};
use crate::overview::{self, Overview};
use crate::trace::Trace;

/// The analyses' options of a window's first overview.
pub fn window_options() -> overview::Options {
    overview::Options {
        top: 20,
        ..Default::default()
    }
}

/// The pipeline's stages as the window hears them: each sent on as a message (a repaint
/// each); the whole trace's timeline indexes built on a thread of their own beside the
/// analyses. What the analyses send waits in `after_timeline` until the trace with its
/// timeline has been sent (never by blocking: the stages run on rayon's workers, which
/// the indexes' build needs too).
struct WindowStages {
    out: super::task::Outbox<Message>,
    timeline: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    after_timeline: Arc<std::sync::Mutex<AfterTimeline>>,
}

/// Messages held until the timeline is sent, and whether it is.
#[derive(Default)]
struct AfterTimeline {
    sent: bool,
    held: Vec<Message>,
}

impl WindowStages {
    fn new(out: super::task::Outbox<Message>) -> Self {
        Self {
            out,
            timeline: std::sync::Mutex::new(None),
            after_timeline: Arc::default(),
        }
    }

    /// Sends `m` once the window has the trace it is of.
    fn send_after_timeline(&self, m: Message) {
        let mut after = self
            .after_timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if after.sent {
            self.out.send(m);
        } else {
            after.held.push(m);
        }
    }

    /// Waits for the thread that builds and sends the timeline (on the job's own thread,
    /// once the pipeline has returned).
    fn timeline_sent(&self) {
        let handle = self
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl crate::session::Stages for WindowStages {
    fn progress(&self, p: Progress) {
        self.out.send(Message::Progress(p));
    }

    fn wants_first_look(&self) -> bool {
        true
    }

    fn first_look(&self, trace: Trace) {
        let timeline = Timeline::new(&trace);
        self.out
            .send(Message::GpuReady(Box::new((Arc::new(trace), timeline))));
    }

    fn opened(&self, opened: &crate::session::Opened) {
        let trace = opened.trace.clone();
        let parts = (
            opened.report.clone(),
            opened.files.clone(),
            opened.key.clone(),
        );
        let out = self.out.clone();
        let after_timeline = self.after_timeline.clone();
        let handle = std::thread::spawn(move || {
            let timeline = Timeline::new(&trace);
            let (report, files, key) = parts;
            out.send(Message::Done(Box::new(Ok((
                trace.clone(),
                report,
                timeline,
                files,
                key,
            )))));
            let graphs = crate::analysis::graphs::cuda_graphs(&trace).map(Arc::new);
            out.send(Message::Graphs(graphs));
            let mut after = after_timeline.lock().unwrap_or_else(|e| e.into_inner());
            after.sent = true;
            for m in std::mem::take(&mut after.held) {
                out.send(m);
            }
        });
        *self.timeline.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
    }

    fn analysed(&self, overview: &Arc<Overview>) {
        self.send_after_timeline(Message::Analysed(overview.clone()));
    }

    fn detected(&self, found: &[crate::findings::Finding], span: i64) {
        self.send_after_timeline(Message::Detected(found.to_vec(), span));
    }

    fn saved(&self, i: usize, saving: crate::findings::Saving) {
        self.send_after_timeline(Message::Saved(i, saving));
    }
}

/// The window's load on a worker: the session's pipeline to the findings, each stage sent
/// as a message (`ctx` repainted at each; `None`: polled without a window, as
/// `bench window` does).
pub fn spawn_load(source: Source, ctx: Option<&egui::Context>) -> Task<(), Message> {
    Task::spawn((), ctx, move |out| {
        let stages = WindowStages::new(out.clone());
        let ran = crate::session::run(
            &source,
            &window_options(),
            crate::session::Until::Findings,
            &stages,
            out.cancel_flag(),
            true,
        );
        stages.timeline_sent();
        match ran {
            Err(e) => {
                out.send(Message::Done(Box::new(Err(e))));
            }
            Ok(ran) => match (ran.overview, ran.findings) {
                (None, _) => {
                    out.send(Message::AnalysesCancelled);
                }
                (Some(_), Some(findings)) => {
                    out.send(Message::Ranked(findings));
                }
                // Analysed, the findings cancelled: the panels stay, without findings.
                (Some(_), None) => {
                    out.send(Message::Ranked(Vec::new()));
                }
            },
        }
    })
}

impl App {
    pub(super) fn start_load(&mut self, path: PathBuf, ctx: &egui::Context) {
        self.start_source(path.clone(), Source::One(path), ctx);
    }

    /// Loads `source` on a worker (the window shows `path` as what it opens), then runs
    /// the analyses and the findings: the session's pipeline, each stage told to the window
    /// as it ends.
    pub(super) fn start_source(&mut self, path: PathBuf, source: Source, ctx: &egui::Context) {
        self.cancel_job();
        let job = LoadJob::new(spawn_load(source, Some(ctx)));
        self.state = State::Loading { path, job };
    }

    /// Cancels the load or analyses in flight, if any.
    pub(super) fn cancel_job(&mut self) {
        let job = match &self.state {
            State::Loading { job, .. } => Some(job),
            State::Loaded(l) => l.stage.job(),
            _ => None,
        };
        if let Some(job) = job {
            job.cancel();
        }
    }

    pub(super) fn poll_worker(&mut self) {
        loop {
            let job = match &mut self.state {
                State::Loading { job, .. } => job,
                State::Loaded(l) => match l.stage.job_mut() {
                    Some(job) => job,
                    None => return,
                },
                _ => return,
            };
            let Some(message) = job.job.poll() else {
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
                    Ok((trace, report, mut timeline, files, cache_key)) => {
                        match std::mem::replace(&mut self.state, State::Start) {
                            State::Loading { path, job } => {
                                let mut l = Loaded::new(path, trace, timeline, job);
                                l.stage.loaded();
                                l.report = Some(report);
                                l.files = files;
                                l.cache_key = cache_key;
                                self.state = State::Loaded(Box::new(l));
                            }
                            State::Loaded(mut l) => {
                                timeline.keep_view_of(&mut l.timeline);
                                l.timeline = timeline;
                                l.trace = trace;
                                l.stage.loaded();
                                l.report = Some(report);
                                l.files = files;
                                l.cache_key = cache_key;
                                self.state = State::Loaded(l);
                            }
                            other => self.state = other,
                        }
                    }
                    // Cancelled while the CPU side loaded: keep the GPU timeline on screen.
                    Err(LoadError::Cancelled) => match &mut self.state {
                        State::Loaded(l) => l.stage = Stage::LoadCancelled,
                        _ => self.state = State::Start,
                    },
                    Err(e) => {
                        let path = match &self.state {
                            State::Loading { path, .. } => path.clone(),
                            State::Loaded(l) => l.path.clone(),
                            _ => PathBuf::new(),
                        };
                        // A file that did not open is no recent file to open again.
                        self.recent.retain(|p| p != &path);
                        self.state = State::Failed {
                            path,
                            message: e.to_string(),
                        };
                    }
                },
                Message::Graphs(graphs) => {
                    if let State::Loaded(l) = &mut self.state {
                        l.summary.graphs_note = graphs.as_ref().and_then(|g| g.note.clone());
                        l.summary.capture_note =
                            crate::analysis::capture_use::capture_use(&l.trace)
                                .and_then(|c| c.sentence());
                        l.graphs = graphs;
                    }
                }
                Message::AnalysesCancelled => {
                    if let State::Loaded(l) = &mut self.state {
                        l.stage = Stage::AnalysesCancelled;
                    }
                }
                Message::Analysed(overview) => {
                    if let State::Loaded(l) = &mut self.state {
                        l.overview = Some(overview);
                        // Orders kept for the gaps of an earlier overview are not of these.
                        l.gaps.forget_orders();
                        // The findings come from the same worker: the panel starts none.
                        l.findings.fed_by_load();
                        l.stage.analysed();
                        if let Some(view) = self.show_when_analysed.take() {
                            l.show(&view);
                        }
                    }
                }
                Message::Detected(found, span) => {
                    if let State::Loaded(l) = &mut self.state {
                        l.findings.detected(found, span);
                    }
                }
                Message::Saved(i, saving) => {
                    if let State::Loaded(l) = &mut self.state {
                        l.findings.saved(i, saving);
                    }
                }
                Message::Ranked(found) => {
                    if let State::Loaded(l) = &mut self.state {
                        l.findings.ranked(found);
                        l.stage.done();
                    }
                }
            }
        }
    }
}
