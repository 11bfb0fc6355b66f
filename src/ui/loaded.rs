//! The window once a trace is in: the summary on the left, the tabs at the bottom, the
//! timeline in the middle, and what each panel shares with the others.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui::{self, RichText};

use super::compare_view::Compare;
use super::figures_window::FiguresWindow;
use super::findings_panel::{Action, FindingsPanel};
use super::heatmap;
use super::load_job::LoadJob;
use super::nccl_bytes::NcclBytes;
use super::split::Split;
use super::timeline::{Nav, Timeline};
use super::whatif_panel::WhatIfPanel;
use super::{details, gap_finder, iterations_panel, summary, tables};
use crate::analysis::breakdown::State as DeviceState;
use crate::analysis::nccl_payload::KernelTransfers;
use crate::format::signed_ns;
use crate::format::{format_ns, plural};
use crate::load::many::{Alignment, FileInfo};
use crate::load::{self, LoadReport};
use crate::overview::Overview;
use crate::trace::{DeviceIndex, OpKind, Trace};

/// The bottom panel's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// What to fix first, ranked by the replayed saving (the first tab).
    Findings,
    Gaps,
    Iterations,
    Kernels,
    Nccl,
    Memory,
    Nvtx,
    Details,
    /// The comparison with a second run (only with one).
    Diff,
    /// Iteration time per GPU and iteration (with two GPUs or more).
    Ranks,
    /// The trace replayed with a change: what would it save?
    WhatIf,
    /// CUDA graph launches per graph and GPU (only in a run that launched graphs).
    Graphs,
    /// What the CPU ran, from its samples (only in a capture with CPU samples).
    Cpu,
}

/// Where a loaded trace is in its life: the one owner of its load's lifecycle.
pub enum Stage {
    /// The GPU side is on screen; the API calls and NVTX ranges are loading.
    LoadingCpu(LoadJob),
    /// The whole trace is in; the analyses run on the same worker.
    Analysing(LoadJob),
    /// The analyses are in; the findings' replays run on the same worker (the session's
    /// pipeline goes on).
    Finding(LoadJob),
    Analysed,
    /// Cancelled while the CPU side loaded: the GPU side is all there is.
    LoadCancelled,
    /// The analyses were cancelled: the whole trace, and no panels.
    AnalysesCancelled,
}

impl Stage {
    pub fn job(&self) -> Option<&LoadJob> {
        match self {
            Stage::LoadingCpu(job) | Stage::Analysing(job) | Stage::Finding(job) => Some(job),
            _ => None,
        }
    }

    pub fn job_mut(&mut self) -> Option<&mut LoadJob> {
        match self {
            Stage::LoadingCpu(job) | Stage::Analysing(job) | Stage::Finding(job) => Some(job),
            _ => None,
        }
    }

    /// The analyses came in: the same job goes on to the findings.
    pub fn analysed(&mut self) {
        let stage = std::mem::replace(self, Stage::Analysed);
        *self = match stage {
            Stage::LoadingCpu(job) | Stage::Analysing(job) => Stage::Finding(job),
            other => other,
        };
    }

    /// The findings came in: nothing more from the job.
    pub fn done(&mut self) {
        if matches!(self, Stage::Finding(_)) {
            *self = Stage::Analysed;
        }
    }

    /// The whole trace came in: the same job goes on to the analyses.
    pub fn loaded(&mut self) {
        let stage = std::mem::replace(self, Stage::Analysed);
        *self = match stage {
            Stage::LoadingCpu(job) => Stage::Analysing(job),
            other => other,
        };
    }

    pub fn cancelled(&self) -> bool {
        matches!(self, Stage::LoadCancelled | Stage::AnalysesCancelled)
    }
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
    /// What is still coming (the rest of the load, then the analyses), or why it stopped.
    pub stage: Stage,
    /// A second run shown under this one and compared with it.
    pub compare: Option<Compare>,
    /// The files of a trace opened from several, each with its clock alignment.
    pub files: Vec<FileInfo>,
    /// Offsets the user typed for the files (ns), applied by reloading.
    pub nudges: Vec<Option<i64>>,
    pub what_if: WhatIfPanel,
    pub findings: FindingsPanel,
    /// File ▸ Export figures… and the plots' Save as….
    pub figures: FiguresWindow,
    /// What each NCCL kernel moved (worked out once the whole trace is in).
    pub nccl_bytes: NcclBytes,
    /// The file's key in the cache, from its load (`None`: several files, or no cache):
    /// what the replayed savings are kept under.
    pub cache_key: Option<crate::cache::TraceKey>,
    /// The run's CUDA graph launches, once counted on the loading worker.
    pub graphs: Option<Arc<crate::analysis::graphs::CudaGraphs>>,
    pub cpu: super::cpu_panel::CpuPanel,
    /// Every analysis of the selected range, for the tables.
    pub selection: super::selection_overview::SelectionOverview,
    /// The header's counts of the trace they were counted for (a count walks every op: not
    /// once a frame).
    counts: Option<(std::sync::Weak<Trace>, String)>,
}

impl Loaded {
    pub(super) fn new(path: PathBuf, trace: Arc<Trace>, timeline: Timeline, job: LoadJob) -> Self {
        Self {
            path,
            trace,
            report: None,
            timeline,
            overview: None,
            tab: Tab::Findings,
            summary: Default::default(),
            gaps: Default::default(),
            iterations: Default::default(),
            tables: Default::default(),
            stage: Stage::LoadingCpu(job),
            compare: None,
            files: Vec::new(),
            nudges: Vec::new(),
            what_if: Default::default(),
            findings: Default::default(),
            nccl_bytes: Default::default(),
            figures: Default::default(),
            cache_key: None,
            graphs: None,
            cpu: Default::default(),
            selection: Default::default(),
            counts: None,
        }
    }

    /// "38,640 kernels, 76,800 graph executions on 4 GPUs · … API calls · … NVTX ranges",
    /// counted once per trace.
    pub fn counts_text(&mut self) -> &str {
        // A weak reference keeps the counted trace's allocation: no other trace can take
        // its address while it is compared with.
        if self
            .counts
            .as_ref()
            .is_none_or(|c| !std::sync::Weak::ptr_eq(&c.0, &Arc::downgrade(&self.trace)))
        {
            let t = &self.trace;
            let execs: usize = t.devices.iter().map(|d| d.count_of(OpKind::Graph)).sum();
            let text = format!(
                "{}{} on {} · {} · {}",
                plural(t.kernel_count(), "kernel"),
                if execs > 0 {
                    format!(", {}", plural(execs, "graph execution"))
                } else {
                    String::new()
                },
                plural(t.devices.len(), "GPU"),
                plural(t.api_call_count(), "API call"),
                plural(t.nvtx_range_count(), "NVTX range")
            );
            self.counts = Some((Arc::downgrade(&self.trace), text));
        }
        &self.counts.as_ref().expect("just set").1
    }

    /// Compares this run with the export at `path` (loaded on a worker once this one is
    /// analysed): its timeline under this one, the Diff tab.
    pub fn compare_with(&mut self, path: PathBuf) {
        self.compare = Some(Compare::new(path));
        self.tab = Tab::Diff;
    }

    /// Whether a load, the analyses or a compared run's load is still running.
    pub fn busy(&self) -> bool {
        self.stage.job().is_some()
            || self.compare.as_ref().is_some_and(Compare::busy)
            || self.what_if.busy()
            || self.findings.busy()
            || self.iterations.busy()
            || self.nccl_bytes.busy()
            || self.figures.busy()
    }

    /// Opens a view the way its clicks would: `idle-overlay` (GPU 0's idle intervals around
    /// the slowest iteration), `recurring-gap` (the top recurring group's first gap) or
    /// `slow-iteration` (the slowest iteration and its drill-down).
    pub fn show(&mut self, view: &str) {
        let Some(overview) = &self.overview else {
            return;
        };
        let trace = self.trace.clone();
        // What the panels ask of the timeline, applied once they are done.
        let mut nav = Vec::new();
        match view {
            "idle-overlay" => {
                let overlay = summary::overlay(&trace, overview, DeviceIndex(0), DeviceState::Idle);
                nav.push(Nav::Overlay(overlay));
                if let Some(k) = overview.iterations.slowest_index {
                    self.iterations.open(k, &trace, overview, &mut nav);
                    nav.push(Nav::Widen);
                }
            }
            "recurring-gap" => {
                self.tab = Tab::Gaps;
                self.gaps.filter.recurring = Some(0);
                self.gaps.refresh(&trace, overview);
                self.gaps.select(0, overview, &mut nav);
            }
            "findings" => {
                self.tab = Tab::Findings;
                let overview = overview.clone();
                self.findings
                    .start(&trace, &overview, self.cache_key.as_ref(), None);
                // Selected on the frame the ranking arrives (see `ui`), the window drawn
                // meanwhile.
                self.findings.select_first_when_ranked = true;
            }
            "slow-iteration" => {
                self.tab = Tab::Iterations;
                if let Some(k) = overview.iterations.slowest_index {
                    self.iterations.open(k, &trace, overview, &mut nav);
                }
            }
            _ => {}
        }
        self.timeline.apply_all(&trace, nav);
    }

    /// Whether the whole trace is in (the CPU side included).
    pub fn complete(&self) -> bool {
        self.report.is_some()
    }
}

/// The loaded trace: summary on the left, tabs at the bottom, the timeline in the middle.
/// Returns the files' offsets to reload with, when the user nudged them.
pub(super) fn loaded_ui(
    ui: &mut egui::Ui,
    l: &mut Loaded,
    split: &mut Split,
) -> Option<Vec<Option<i64>>> {
    let mut reload = None;
    let trace = l.trace.clone();
    // What the panels ask of the timeline: they read it, and it is changed in one place,
    // before it is drawn.
    let mut nav: Vec<Nav> = Vec::new();
    if let Some(c) = &mut l.compare {
        c.poll(&trace, l.overview.as_ref(), ui.ctx());
    }
    poll_background(ui.ctx(), l, &trace, &mut nav);
    let sizes = l.nccl_bytes.ready(&trace).cloned();
    let transfers = sizes.as_ref().map(|s| &s.transfers);
    if l.compare.is_none() && l.tab == Tab::Diff {
        l.tab = Tab::Gaps;
    }
    // A selected range: the panels answer for it (worked out on a worker).
    let window = l.timeline.window;
    let selected = l.selection.for_selection(&trace, window, ui.ctx());
    let selected_nccl = l
        .selection
        .nccl_groups_for(&trace, window, sizes.as_ref(), ui.ctx());
    let summary = egui::Panel::left("summary")
        .exact_size(split.summary_width_in(ui.available_width()))
        .show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                reload = summary_contents(ui, l, &trace, selected.as_deref(), &mut nav);
            });
        });
    // The timeline keeps at least 40 % of the height, whatever size was chosen.
    let tabs = egui::Panel::bottom("tabs")
        .exact_size(split.tabs_height_in(ui.available_height()))
        .show(ui, |ui| {
            fill_exactly(ui, |ui| {
                tab_bar(ui, l, &trace);
                ui.separator();
                let try_selection = super::selection_overview::banner(
                    ui,
                    &mut l.selection,
                    &trace,
                    window,
                    l.timeline.full.0,
                    matches!(
                        l.tab,
                        Tab::Findings | Tab::Iterations | Tab::WhatIf | Tab::Ranks
                    ),
                    &mut nav,
                );
                if let (Some((title, change)), Some(o)) = (try_selection, &l.overview) {
                    l.what_if.try_change(title, change, &trace, o, ui.ctx());
                    l.tab = Tab::WhatIf;
                }
                let input = TabInput {
                    window,
                    selected: selected.as_deref(),
                    selected_nccl: selected_nccl.as_deref().map(Vec::as_slice),
                    sizes: sizes.as_deref(),
                };
                tab_contents(ui, l, &trace, input, &mut nav);
            })
        });
    if let Some(c) = &mut l.compare {
        c.follow_iteration(l.iterations.selected, &trace, l.overview.as_ref());
    }
    l.timeline.apply_all(&trace, std::mem::take(&mut nav));
    let shown = egui::CentralPanel::default().show(ui, |ui| {
        match l.compare.as_mut().filter(|c| c.ready().is_some()) {
            None => l.timeline.show_with(ui, &trace, transfers).selected,
            Some(c) => two_timelines(ui, &trace, &l.path, &mut l.timeline, c, transfers),
        }
    });
    // The edges are dragged last, so that they lie on top of the panels beside them.
    split.summary_edge(ui, summary.response.rect);
    split.tabs_edge(ui, tabs.response.rect);
    if shown.inner {
        l.tab = Tab::Details;
    }
    reload
}

/// What the tabs show beside the trace and its overview: a selected range's answers, and
/// NCCL's message sizes once read.
struct TabInput<'a> {
    window: Option<(i64, i64)>,
    selected: Option<&'a Overview>,
    selected_nccl: Option<&'a [crate::analysis::nccl_sizes::SizeGroup]>,
    sizes: Option<&'a super::nccl_bytes::NcclSizes>,
}

/// The chosen tab's contents, or why it waits.
fn tab_contents(
    ui: &mut egui::Ui,
    l: &mut Loaded,
    trace: &Arc<Trace>,
    input: TabInput,
    nav: &mut Vec<Nav>,
) {
    let sizes = input.sizes;
    let transfers = sizes.map(|s| &s.transfers);
    let waiting = waiting_note(l);
    match (l.tab, waiting, l.overview.as_ref()) {
        (Tab::Diff, _, _) => {
            if let Some(c) = &mut l.compare {
                c.diff_tab(ui, trace, l.overview.as_ref(), nav);
            }
        }
        (Tab::Graphs, _, _) => {
            if let Some(g) = &l.graphs {
                super::graphs_panel::show(ui, trace, g);
            }
        }
        (Tab::Cpu, _, _) => l.cpu.show(ui, trace, &l.timeline, nav),
        (Tab::Details, _, _) => {
            egui::ScrollArea::vertical()
                .show(ui, |ui| details::show(ui, trace, &l.timeline, transfers));
        }
        (_, Some(note), _) => {
            ui.label(note);
        }
        (_, None, None) => {}
        (Tab::Findings, None, Some(o)) => {
            if let Some(Action::TryIt(title, change)) = l.findings.show(ui, trace, o, nav) {
                let title = format!("From a finding: {title}");
                l.what_if.try_change(title, change, trace, o, ui.ctx());
                l.tab = Tab::WhatIf;
            }
        }
        (Tab::Gaps, None, Some(o)) => l.gaps.show(ui, trace, o, &l.timeline, nav),
        (Tab::Iterations, None, Some(o)) => {
            let other = l
                .compare
                .as_ref()
                .and_then(Compare::ready)
                .map(|c| &c.overview.iterations);
            l.iterations.show(ui, trace, o, &l.timeline, nav, other)
        }
        (Tab::Kernels, None, Some(o)) => {
            l.tables
                .kernels(ui, trace, input.selected.unwrap_or(o), nav)
        }
        (Tab::Nccl, None, Some(o)) => {
            // A selection's rows are its own: the payload groups clipped to it once
            // worked out, its overview's meanwhile — never the whole run's.
            let groups = match input.window {
                Some(_) => input.selected_nccl,
                None => sizes.map(|s| s.groups.as_slice()),
            };
            l.tables.nccl(
                ui,
                trace,
                input.selected.unwrap_or(o),
                super::tables::NcclInput {
                    groups,
                    payloads_read: sizes.is_some(),
                    has_bytes: sizes.as_ref().is_some_and(|s| !s.transfers.is_empty()),
                },
                nav,
            )
        }
        (Tab::Memory, None, Some(o)) => l.tables.memory(ui, trace, input.selected.unwrap_or(o)),
        (Tab::Nvtx, None, Some(o)) => l.tables.nvtx(ui, input.selected.unwrap_or(o), nav),
        (Tab::WhatIf, None, Some(o)) => l.what_if.show(ui, trace, o, nav),
        (Tab::Ranks, None, Some(o)) => {
            let its = l.iterations.iterations(o);
            if let Some((k, device)) = heatmap::show(ui, trace, its) {
                l.iterations.open(k, trace, o, nav);
                nav.push(Nav::RevealDevice(device));
                l.tab = Tab::Iterations;
            }
        }
    }
}

/// The summary panel: the rank files and their nudges (a re-open asked for comes back),
/// the export read, then where the time goes.
fn summary_contents(
    ui: &mut egui::Ui,
    l: &mut Loaded,
    trace: &Arc<Trace>,
    selected: Option<&Overview>,
    nav: &mut Vec<Nav>,
) -> Option<Vec<Option<i64>>> {
    let mut reload = None;
    if !l.files.is_empty() {
        reload = files_panel(ui, &l.files, &mut l.nudges);
        ui.separator();
    }
    // A report opened directly: which export is on screen.
    if let Some(export) = l.report.as_ref().and_then(|r| r.export.as_deref()) {
        ui.add(
            egui::Label::new(
                egui::RichText::new(format!("Read as SQLite: {export}"))
                    .weak()
                    .small(),
            )
            .wrap(),
        );
        ui.separator();
    }
    if l.stage.cancelled() {
        ui.heading("Where time goes");
        ui.label(if matches!(l.stage, Stage::LoadCancelled) {
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
            trace,
            l.overview.as_deref(),
            selected,
            &l.timeline,
            nav,
            no_kernel_table,
        )
    }
    reload
}

/// The work the panels start in the background as soon as the analyses are in, whatever
/// tab is open, in an order that keeps memory's peak low; and their answers taken.
fn poll_background(ctx: &egui::Context, l: &mut Loaded, trace: &Arc<Trace>, nav: &mut Vec<Nav>) {
    if let Some(o) = &l.overview {
        l.findings.start(trace, o, l.cache_key.as_ref(), Some(ctx));
        l.findings.poll();
        l.findings.select_first_if_asked(trace, nav);
        l.iterations.poll(ctx, nav);
        // The gap table's orders (seconds of sorting on a large trace) wait for what to fix
        // first, the first thing shown, unless the gap table is wanted now.
        if !l.findings.busy() || l.tab == Tab::Gaps {
            l.gaps.prepare(trace, o);
        }
        // So do the NCCL table's per-kernel figures (a pass over every NCCL call), and they
        // wait for those orders, unless the NCCL tab is open: the temporaries of the
        // replays, the sorts and theirs do not add up at a peak of memory.
        if (!l.findings.busy() && !l.gaps.sorting()) || l.tab == Tab::Nccl {
            l.nccl_bytes.start(trace, Some(ctx));
        }
        l.nccl_bytes.poll();
        l.figures.take_request(ctx, &l.path);
        l.figures.show(ctx, trace, o);
    }
}

/// The tabs a trace has (Diff when comparing, Graphs with graphs, CPU with samples, Ranks
/// with two GPUs or more) and "Stop comparing".
fn tab_bar(ui: &mut egui::Ui, l: &mut Loaded, trace: &Trace) {
    ui.horizontal(|ui| {
        for (tab, name) in [
            (Tab::Findings, "Findings"),
            (Tab::Gaps, "Gaps"),
            (Tab::Iterations, "Iterations"),
            (Tab::Kernels, "Kernels"),
            (Tab::Nccl, "NCCL"),
            (Tab::Memory, "Memory"),
            (Tab::Nvtx, "NVTX"),
            (Tab::Details, "Details"),
            (Tab::Diff, "Diff"),
            (Tab::Ranks, "Ranks"),
            (Tab::WhatIf, "What if"),
            (Tab::Graphs, "Graphs"),
            (Tab::Cpu, "CPU"),
        ] {
            let shown = match tab {
                Tab::Diff => l.compare.is_some(),
                Tab::Graphs => l.graphs.is_some(),
                // Shown while the stacks are read (they come after the load).
                Tab::Cpu => trace
                    .call_stacks
                    .get()
                    .is_none_or(|s| !s.samples.is_empty()),
                Tab::Ranks => trace.devices.len() >= 2,
                _ => true,
            };
            if shown {
                ui.selectable_value(&mut l.tab, tab, name);
            }
        }
        if l.compare.is_some() && ui.small_button("Stop comparing").clicked() {
            l.compare = None;
        }
    });
}

/// Why the tables are not shown yet, if they are not.
fn waiting_note(l: &Loaded) -> Option<&'static str> {
    if matches!(l.stage, Stage::LoadCancelled) {
        Some(
            "The load was cancelled: only the GPU side is shown. Open the file again for the rest.",
        )
    } else if !l.complete() {
        Some("Waiting for the CPU side (API calls, NVTX) to load…")
    } else if matches!(l.stage, Stage::AnalysesCancelled) {
        Some(
            "The analyses were cancelled: the timeline shows the whole trace. Open the file again to analyse it.",
        )
    } else if l.overview.is_none() {
        Some("Analysing…")
    } else {
        None
    }
}

/// The files of a trace opened from several: how each was put on the first's clock, and
/// its offset to nudge (applied by reloading). Returns the offsets when applied.
fn files_panel(
    ui: &mut egui::Ui,
    files: &[FileInfo],
    nudges: &mut Vec<Option<i64>>,
) -> Option<Vec<Option<i64>>> {
    nudges.resize(files.len(), None);
    let mut apply = false;
    egui::CollapsingHeader::new(format!("{} files, on the first one's clock", files.len()))
        .default_open(files.len() <= 8)
        .show(ui, |ui| {
            egui::Grid::new("files")
                .num_columns(3)
                .striped(true)
                .show(ui, |ui| {
                    for (k, f) in files.iter().enumerate() {
                        ui.label(&f.name);
                        let how = match (f.alignment, f.residual_ns) {
                            (Alignment::Collectives, Some(r)) => {
                                format!("{} collectives, ±{}", f.collectives, format_ns(r))
                            }
                            (a, _) => a.label().to_string(),
                        };
                        ui.label(RichText::new(how).small())
                            .on_hover_text(match f.utc_offset_ns {
                                Some(u) => {
                                    format!("UTC session starts alone said {}", signed_ns(u))
                                }
                                None => "No UTC session start in this file".to_string(),
                            });
                        if k == 0 {
                            ui.label("reference");
                        } else {
                            let mut ms = nudges[k].unwrap_or(f.offset_ns) as f64 / 1e6;
                            if ui
                                .add(egui::DragValue::new(&mut ms).speed(0.01).suffix(" ms"))
                                .on_hover_text(
                                    "Offset added to this file's times; drag or type, then Apply",
                                )
                                .changed()
                            {
                                nudges[k] = Some((ms * 1e6).round() as i64);
                            }
                        }
                        ui.end_row();
                    }
                });
            if nudges.iter().any(Option::is_some) && ui.button("Apply offsets (reload)").clicked() {
                apply = true;
            }
        });
    apply.then(|| std::mem::take(nudges))
}

/// The run and the one compared with it, one above the other on a shared axis, each
/// named above its rows. Returns whether a click selected something in either.
fn two_timelines(
    ui: &mut egui::Ui,
    trace: &Arc<Trace>,
    path: &std::path::Path,
    first: &mut Timeline,
    c: &mut Compare,
    transfers: Option<&KernelTransfers>,
) -> bool {
    let rect = ui.available_rect_before_wrap();
    let half = rect.height() / 2.0;
    let top = egui::Rect::from_min_size(rect.min, egui::vec2(rect.width(), half));
    let bottom = egui::Rect::from_min_max(egui::pos2(rect.left(), rect.top() + half), rect.max);
    let mut selected = false;
    let name = super::file_name;
    let (before, after) = (name(path), name(&c.path));
    let offset = c.offset_ns;
    in_rect(ui, top, "before timeline", |ui| {
        ui.label(RichText::new(format!("before: {before}")).strong());
        selected |= first.show_with(ui, trace, transfers).selected;
    });
    in_rect(ui, bottom, "after timeline", |ui| {
        ui.label(
            RichText::new(format!(
                "after: {after} (its clock shifted {} so the aligned iterations line up)",
                signed_ns(offset)
            ))
            .strong(),
        );
        // Details follow the first run's selection; the second's shows in its tooltips.
        c.show_timeline(ui, first);
    });
    ui.advance_cursor_after_rect(rect);
    selected
}

/// Lays `add` out in `rect` of `ui`, clipped to it.
fn in_rect(ui: &mut egui::Ui, rect: egui::Rect, salt: &str, add: impl FnOnce(&mut egui::Ui)) {
    let mut child = ui.new_child(
        egui::UiBuilder::new()
            .id_salt(salt)
            .max_rect(rect)
            .layout(egui::Layout::top_down(egui::Align::Min)),
    );
    child.shrink_clip_rect(rect);
    add(&mut child);
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

#[cfg(test)]
mod stage_tests {
    use super::Stage;
    use crate::ui::load_job::{LoadJob, Message};
    use crate::ui::task::Task;

    fn job() -> LoadJob {
        LoadJob::new(Task::compute((), None, |_| Message::AnalysesCancelled))
    }

    #[test]
    fn a_load_goes_from_its_cpu_side_to_the_analyses_with_the_same_job_and_then_ends() {
        let mut stage = Stage::LoadingCpu(job());
        assert!(stage.job().is_some() && !stage.cancelled());
        stage.loaded();
        assert!(matches!(stage, Stage::Analysing(_)));
        assert!(stage.job_mut().is_some());
        stage = Stage::Analysed;
        stage.loaded();
        assert!(matches!(stage, Stage::Analysed) && stage.job().is_none());
        for stopped in [Stage::LoadCancelled, Stage::AnalysesCancelled] {
            assert!(stopped.cancelled() && stopped.job().is_none());
        }
    }
}
