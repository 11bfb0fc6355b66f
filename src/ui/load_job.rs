//! The load's worker as the UI sees it: the messages it sends, what it was asked to load,
//! and its progress. Its own module, so that the loading screen (`loading.rs`) and the
//! loaded one (`loaded.rs`, which keeps the job while the analyses run) need not import
//! each other.

use std::sync::Arc;

use eframe::egui;

use super::task::Task;
use super::timeline::Timeline;
use crate::load::many::FileInfo;
use crate::load::{self, LoadError, LoadReport, Progress};
use crate::overview::Overview;
use crate::trace::Trace;

pub enum Message {
    Progress(Progress),
    /// The GPU side alone, so the timeline shows while the CPU side loads.
    GpuReady(Box<(Arc<Trace>, Timeline)>),
    /// The trace with its timeline indexes, built on the worker so the UI never waits.
    Done(Box<Result<LoadedParts, LoadError>>),
    /// Every analysis of the loaded trace, for the panels.
    Analysed(Arc<Overview>),
    /// The run's CUDA graph launches (`None`: it has none), for the Graphs tab.
    Graphs(Option<Arc<crate::analysis::graphs::CudaGraphs>>),
    /// The analyses were cancelled: the timeline stays, the panels say so.
    AnalysesCancelled,
    /// What the findings' detectors found (no savings yet), and the run's span.
    Detected(Vec<crate::findings::Finding>, i64),
    /// Finding `i`'s replayed saving.
    Saved(usize, crate::findings::Saving),
    /// The findings ranked with their savings: the pipeline's end.
    Ranked(Vec<crate::findings::Finding>),
}

/// What a finished load hands to the UI (with each file's alignment when several files
/// were opened as one).
pub type LoadedParts = (
    Arc<Trace>,
    LoadReport,
    Timeline,
    Vec<FileInfo>,
    Option<crate::cache::TraceKey>,
);

pub use crate::session::Source;

/// A load (and then the analyses) running on a worker thread, and how far it got.
pub struct LoadJob {
    pub progress: Option<Progress>,
    pub(super) job: Task<(), Message>,
}

impl LoadJob {
    pub(super) fn new(job: Task<(), Message>) -> Self {
        Self {
            progress: None,
            job,
        }
    }

    pub fn cancel(&self) {
        self.job.cancel();
    }
}

/// The load's phase, percent and rows read.
pub(super) fn progress_bar(ui: &mut egui::Ui, job: &LoadJob, width: f32) {
    let p = job.progress.unwrap_or(Progress {
        phase: load::Phase::Opening,
        fraction: 0.0,
        rows_read: 0,
    });
    if let load::Phase::Exporting {
        nsys_version,
        seconds,
    } = p.phase
    {
        // nsys says nothing of its progress: a bar that moves, and the time so far.
        ui.add(
            egui::ProgressBar::new(0.0)
                .desired_width(width)
                .animate(true),
        );
        ui.label(format!("{} {nsys_version}… {seconds} s", p.phase.label()));
        return;
    }
    ui.add(
        egui::ProgressBar::new(p.fraction)
            .desired_width(width)
            .show_percentage(),
    );
    ui.label(format!("{} · {} rows read", p.phase.label(), p.rows_read));
}
