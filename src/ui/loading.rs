//! Loading a file: the worker that reads it (GPU side first, so the timeline shows while
//! the CPU side loads), then runs the analyses; and the state machine its messages drive.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use super::job::Job;
use super::load_job::{LoadJob, Message, Source};
use super::loaded::{Loaded, Stage};
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

/// The timeline's indexes, and what the cache kept of the window's analyses, read while
/// the indexes build.
pub fn timeline_and_kept(
    trace: &Trace,
    key: Option<&crate::cache::TraceKey>,
) -> (Timeline, overview::Kept) {
    rayon::join(
        || Timeline::new(trace),
        || {
            key.map(|k| crate::cache::read_kept(k, &window_options(), trace))
                .unwrap_or_default()
        },
    )
}

impl App {
    pub(super) fn start_load(&mut self, path: PathBuf, ctx: &egui::Context) {
        self.start_source(path.clone(), Source::One(path), ctx);
    }

    /// Loads `source` on a worker (the window shows `path` as what it opens), then runs
    /// the analyses.
    pub(super) fn start_source(&mut self, path: PathBuf, source: Source, ctx: &egui::Context) {
        self.cancel_job();
        let job = Job::spawn((), Some(ctx), move |out| {
            let progress_out = out.clone();
            let on_progress = move |p: Progress| {
                progress_out.send(Message::Progress(p));
            };
            let on_gpu = |trace: Trace| {
                let timeline = Timeline::new(&trace);
                out.send(Message::GpuReady(Box::new((Arc::new(trace), timeline))));
            };
            let cancel = out.cancel_flag();
            let hooks = crate::session::Hooks {
                progress: &on_progress,
                cancel,
                first_look: Some(&on_gpu),
                use_cache: true,
            };
            let mut kept_analyses = crate::overview::Kept::default();
            let opened = crate::session::open(&source, hooks);
            // The file's key in the cache, and whether its model is still to be kept.
            let (key, store) = match &opened {
                Ok(o) => (o.key.clone(), !o.from_cache),
                Err(_) => (None, false),
            };
            let result =
                opened
                    .map(|o| (o.trace, o.report, o.files))
                    .map(|(trace, report, files)| {
                        let (timeline, kept) = timeline_and_kept(&trace, key.as_ref());
                        kept_analyses = kept;
                        (Arc::new(trace), report, timeline, files, key.clone())
                    });
            let trace = result.as_ref().ok().map(|r| r.0.clone());
            // Kept for the next open on a thread of its own: the panels need not wait.
            if let (Some(key), true, Ok((trace, report, ..))) = (key.clone(), store, &result) {
                let (trace, report) = (trace.clone(), report.clone());
                std::thread::spawn(move || crate::cache::store_model(&key, &trace, &report));
            }
            out.send(Message::Done(Box::new(result)));
            if let Some(trace) = &trace {
                let graphs = crate::analysis::graphs::cuda_graphs(trace).map(Arc::new);
                out.send(Message::Graphs(graphs));
            }
            if let Some(trace) = trace
                && !out.cancelled()
            {
                // The panels get the analyses before what was worked out is kept.
                let publish = |o: &Arc<Overview>| {
                    out.send(Message::Analysed(o.clone()));
                };
                let analysed = crate::cache::overview_kept(
                    &trace,
                    &window_options(),
                    cancel,
                    key.as_ref(),
                    kept_analyses,
                    publish,
                );
                if analysed.is_none() {
                    out.send(Message::AnalysesCancelled);
                }
            }
        });
        let job = LoadJob::new(job);
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
                        l.stage = Stage::Analysed;
                        if let Some(view) = self.show_when_analysed.take() {
                            l.show(&view);
                        }
                    }
                }
            }
        }
    }
}
