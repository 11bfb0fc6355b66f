//! A job of many ranks in the window: rank summaries (`*.summary`), or more exports than a
//! whole load takes, each summarised in turn on a worker (one model in memory at a time),
//! reduced into the job: the straggler, the ranks × iterations heatmap, each GPU's wait vs
//! transfer, the collectives held back longest and the slowest iteration's path by
//! collective. A rank's Open loads its export in full, when it is on this machine.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use eframe::egui::{self, Color32, Rect, Sense, Vec2};

use super::{file_name, heatmap::heat};
use crate::format::format_ns;
use crate::job::Job;
use crate::overview::Options;

enum Msg {
    Summarising(usize),
    Done(Box<Result<Job, String>>),
}

/// What the heatmap's cells show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellValue {
    /// Iteration time against the GPU's median.
    Duration,
    /// Time the GPU held the others back (started a collective last).
    HeldBack,
    /// Time the GPU's NCCL kernels waited for the last rank.
    Wait,
}

pub struct JobPage {
    pub paths: Vec<PathBuf>,
    pub job: Option<Job>,
    pub error: Option<String>,
    /// Exports summarised so far (of `paths`), while they are.
    pub summarised: usize,
    pub cells: CellValue,
    /// Every GPU in the table, not only the most waiting ones.
    pub all_gpus: bool,
    /// The rows of the heatmap and of the GPU table, worked out when the job arrives.
    layout: Layout,
    rx: mpsc::Receiver<Msg>,
    cancel: Arc<AtomicBool>,
}

impl Drop for JobPage {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl JobPage {
    /// Starts reading (or summarising) `paths` on a worker thread.
    pub fn start(paths: Vec<PathBuf>, ctx: &egui::Context) -> Self {
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let (worker_paths, stop, ctx) = (paths.clone(), cancel.clone(), ctx.clone());
        std::thread::spawn(move || {
            let result = reduce(&worker_paths, &stop, &|k| {
                let _ = tx.send(Msg::Summarising(k));
                ctx.request_repaint();
            });
            let _ = tx.send(Msg::Done(Box::new(result)));
            ctx.request_repaint();
        });
        Self {
            paths,
            job: None,
            error: None,
            summarised: 0,
            cells: CellValue::HeldBack,
            all_gpus: false,
            layout: Layout::default(),
            rx,
            cancel,
        }
    }

    /// Takes in what the worker sent; whether it is done.
    pub fn poll(&mut self) -> bool {
        while let Ok(msg) = self.rx.try_recv() {
            match msg {
                Msg::Summarising(k) => self.summarised = k,
                Msg::Done(result) => match *result {
                    Ok(job) => {
                        self.layout = Layout::of(&job);
                        self.job = Some(job);
                    }
                    Err(e) => self.error = Some(e),
                },
            }
        }
        self.job.is_some() || self.error.is_some()
    }

    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// The job of `paths`: summaries read, or exports summarised one at a time.
fn reduce(paths: &[PathBuf], cancel: &AtomicBool, progress: &dyn Fn(usize)) -> Result<Job, String> {
    let options = Options::default();
    let summaries =
        crate::session::rank_summaries(paths, &options, true, cancel, &|k, _| progress(k))?;
    Ok(crate::job::reduce(&summaries, options.top))
}

const LABEL_W: f32 = 170.0;
const ROW_H: f32 = 14.0;
/// GPUs listed before "show all".
const GPU_ROWS: usize = 16;

/// Draws the page; returns the export to open in full when a rank's Open is clicked.
pub fn show(ui: &mut egui::Ui, page: &mut JobPage) -> Option<PathBuf> {
    let done = page.poll();
    let mut open = None;
    egui::CentralPanel::default().show(ui, |ui| {
        if !done {
            let n = page.paths.len();
            ui.heading(format!("Job of {n} ranks"));
            ui.add(
                egui::ProgressBar::new(page.summarised as f32 / n.max(1) as f32).text(format!(
                    "summarising {} ({} of {n}), one export at a time",
                    page.paths
                        .get(page.summarised.min(n.saturating_sub(1)))
                        .map_or_else(String::new, |p| file_name(p)),
                    page.summarised + 1
                )),
            );
            if ui.button("Cancel").clicked() {
                page.cancel();
            }
            return;
        }
        if let Some(e) = &page.error {
            ui.heading("The job could not be read");
            ui.label(egui::RichText::new(e).color(ui.visuals().warn_fg_color));
            return;
        }
        let Some(job) = &page.job else { return };
        egui::ScrollArea::vertical().show(ui, |ui| {
            open = job_ui(ui, job, &page.layout, &mut page.cells, &mut page.all_gpus);
        });
    });
    open
}

fn job_ui(
    ui: &mut egui::Ui,
    job: &Job,
    layout: &Layout,
    cells: &mut CellValue,
    all_gpus: &mut bool,
) -> Option<PathBuf> {
    job_heading(ui, job);
    ui.add_space(6.0);
    ui.horizontal(|ui| {
        ui.strong("Ranks × iterations");
        ui.selectable_value(cells, CellValue::HeldBack, "held the others back");
        ui.selectable_value(cells, CellValue::Wait, "waited in NCCL");
        ui.selectable_value(cells, CellValue::Duration, "iteration time");
    });
    if let Some((_, rows)) = layout.heat.iter().find(|h| h.0 == *cells) {
        heatmap(ui, job, *cells, rows);
    }
    let open = gpu_table(ui, job, layout, all_gpus);
    late_collectives(ui, job);
    open
}

/// The job's size and span, how its clocks were aligned, and its straggler finding.
fn job_heading(ui: &mut egui::Ui, job: &Job) {
    ui.heading(format!(
        "Job of {} ranks ({} GPUs), {} long",
        job.files.len(),
        job.devices.len(),
        format_ns(job.span_ns.1 - job.span_ns.0)
    ));
    ui.label(format!(
        "From their summaries; {} of {} clocks aligned by the collectives. {} collectives on every GPU, {} iterations.",
        job.clocks_aligned(),
        job.files.len(),
        job.nccl_wait.collectives,
        job.iterations.count
    ));
    ui.add_space(6.0);
    if job.findings.is_empty() {
        ui.label("No straggler: no rank held the others back enough to matter.");
    }
    for f in &job.findings {
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.strong(format!("[{}] {}", f.severity.label(), f.title));
            ui.label(&f.detail);
            ui.label(format!(
                "Saves {} ({:.1} % of the job), {}.",
                format_ns(f.saving_ns),
                f.saving_pct,
                f.assumes
            ));
        });
    }
}

/// The GPUs, most NCCL waiting first (the first few unless all are asked for), each with
/// an Open button for its rank's export; the export to open when one is clicked.
fn gpu_table(
    ui: &mut egui::Ui,
    job: &Job,
    layout: &Layout,
    all_gpus: &mut bool,
) -> Option<PathBuf> {
    let mut open = None;
    ui.add_space(8.0);
    ui.strong("GPUs, most NCCL waiting first");
    let gpu_rows = &layout.gpu_rows;
    let hidden = gpu_rows.len().saturating_sub(GPU_ROWS);
    let shown = if *all_gpus {
        gpu_rows
    } else {
        &gpu_rows[..gpu_rows.len().min(GPU_ROWS)]
    };
    egui::Grid::new("job gpus")
        .striped(true)
        .num_columns(7)
        .show(ui, |ui| {
            for h in [
                "GPU",
                "NCCL wait",
                "transfer",
                "arrived last",
                "idle",
                "median iteration",
                "",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for &(r, device) in shown {
                let (w, d) = (&job.nccl_wait.per_device[r], &job.devices[device]);
                let total = d.breakdown_ns.total().max(1);
                ui.label(&w.device);
                ui.label(format!(
                    "{} ({:.0} %)",
                    format_ns(w.wait_ns),
                    100.0 * w.wait_ns as f64 / (w.wait_ns + w.transfer_ns).max(1) as f64
                ));
                ui.label(format_ns(w.transfer_ns));
                ui.label(format!("{} times", w.last_arrivals));
                ui.label(format!(
                    "{:.1} %",
                    100.0 * d.breakdown_ns.idle as f64 / total as f64
                ));
                ui.label(format_ns(d.iteration_median_ns));
                let export = &job.files[d.file].export;
                let here = export.is_file();
                if ui
                    .add_enabled(here, egui::Button::new("Open"))
                    .on_hover_text("Load this rank's export in full")
                    .on_disabled_hover_text(format!("{} is not on this machine", export.display()))
                    .clicked()
                {
                    open = Some(export.clone());
                }
                ui.end_row();
            }
        });
    if hidden > 0 {
        let label = if *all_gpus {
            "show fewer".to_string()
        } else {
            format!("show all {} GPUs", job.nccl_wait.per_device.len())
        };
        if ui.button(label).clicked() {
            *all_gpus = !*all_gpus;
        }
    }
    open
}

/// The collectives held back longest, and the slowest iteration's path by collective.
fn late_collectives(ui: &mut egui::Ui, job: &Job) {
    ui.add_space(8.0);
    ui.strong("Collectives held back longest");
    for l in &job.nccl_wait.late {
        ui.label(l.describe(job.span_ns.0));
    }
    if let Some(p) = &job.critical_path {
        ui.add_space(8.0);
        ui.strong(format!(
            "Iteration {}'s path by collective: the rank each waited for",
            p.iteration
        ));
        let mut steps: Vec<_> = p.steps.iter().collect();
        steps.sort_by_key(|s| std::cmp::Reverse(s.lateness_ns));
        for s in steps.iter().take(10) {
            ui.label(format!(
                "#{} {}: {} late, {}",
                s.collective,
                s.last_device,
                format_ns(s.lateness_ns),
                s.doing
            ));
        }
    }
}

/// The rows of the page's heatmap and GPU table, worked out once a job (not every frame:
/// a 512-rank job of 1,250 iterations has 640 k cells).
#[derive(Default)]
struct Layout {
    /// For each cell value, the heatmap's rows.
    heat: Vec<(CellValue, HeatRows)>,
    /// The GPU table's rows: each its place in `nccl_wait.per_device` and in `devices`.
    gpu_rows: Vec<(usize, usize)>,
}

impl Layout {
    fn of(job: &Job) -> Self {
        Self {
            heat: [CellValue::HeldBack, CellValue::Wait, CellValue::Duration]
                .into_iter()
                .map(|c| (c, heat_rows(job, c)))
                .collect(),
            gpu_rows: gpu_rows(job),
        }
    }
}

/// The GPU table's rows, most NCCL waiting first but the straggler's (it waits least: it
/// held the others) first of all: each its place in `nccl_wait.per_device` and in `devices`.
fn gpu_rows(job: &Job) -> Vec<(usize, usize)> {
    let waits = &job.nccl_wait.per_device;
    let mut rows: Vec<usize> = (0..waits.len()).collect();
    rows.sort_by_key(|&r| std::cmp::Reverse(waits[r].wait_ns));
    let straggler: Vec<&String> = job.findings.iter().flat_map(|f| &f.devices).collect();
    if let Some(at) = rows
        .iter()
        .position(|&r| straggler.contains(&&waits[r].device))
    {
        let s = rows.remove(at);
        rows.insert(0, s);
    }
    let device_of: rustc_hash::FxHashMap<&str, usize> = job
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.key.as_str(), i))
        .collect();
    rows.into_iter()
        .filter_map(|r| Some((r, *device_of.get(waits[r].device.as_str())?)))
        .collect()
}

/// A cell's colour for a time out of its row's largest: dark at none, red at the largest.
fn share_heat(ns: i64, largest: i64) -> Color32 {
    if largest <= 0 {
        return heat(0, 0);
    }
    // `heat` is red at 1.5 × the median: map the share onto it.
    heat(1_000 + (500 * ns.max(0) / largest), 1_000)
}

/// The heatmap's rows for one cell value: their order (the hottest first: a straggler
/// among 512 ranks is the first row; for iteration time, each row's hottest cell against
/// its GPU's median) and the largest cell (shares are of it: the straggler's stands out).
struct HeatRows {
    order: Vec<usize>,
    largest: i64,
}

fn values_of(job: &Job, cells: CellValue) -> &Vec<Vec<i64>> {
    let h = &job.heatmap;
    match cells {
        CellValue::Duration => &h.duration_ns,
        CellValue::HeldBack => &h.held_back_ns,
        CellValue::Wait => &h.wait_ns,
    }
}

fn heat_rows(job: &Job, cells: CellValue) -> HeatRows {
    let values = values_of(job, cells);
    let hottest = |r: usize| -> i64 {
        let top = values[r].iter().copied().max().unwrap_or(0);
        match cells {
            CellValue::Duration => 1000 * top / job.devices[r].iteration_median_ns.max(1),
            _ => top,
        }
    };
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&r| (std::cmp::Reverse(hottest(r)), r));
    HeatRows {
        order,
        largest: values.iter().flatten().copied().max().unwrap_or(0),
    }
}

fn heatmap(ui: &mut egui::Ui, job: &Job, cells: CellValue, rows_of: &HeatRows) {
    let h = &job.heatmap;
    let n = h.duration_ns.iter().map(Vec::len).max().unwrap_or(0);
    if n == 0 || h.devices.is_empty() {
        ui.label("No iterations found: nothing to map.");
        return;
    }
    let values = values_of(job, cells);
    let (order, largest) = (&rows_of.order, rows_of.largest);
    ui.label(format!(
        "{} GPUs, the hottest first; {} iterations left to right. Hover a cell for its times.",
        order.len(),
        n
    ));
    // Room for the scroll bars on the right.
    let width = (ui.available_width() - LABEL_W - 28.0).max(50.0);
    let cell_w = (width / n as f32).max(2.0);
    let rows = h.devices.len();
    let size = Vec2::new(LABEL_W + cell_w * n as f32, ROW_H * rows as f32);
    egui::ScrollArea::both()
        .id_salt("job heatmap")
        .max_height(360.0)
        .show(ui, |ui| {
            let (response, painter) = ui.allocate_painter(size, Sense::hover());
            let origin = response.rect.min;
            let visible = ui.clip_rect();
            // Only the cells in view are drawn.
            let column = |x: f32| ((x - origin.x - LABEL_W) / cell_w).max(0.0) as usize;
            let columns = column(visible.min.x)..(column(visible.max.x) + 1).min(n);
            for (row, &r) in order.iter().enumerate() {
                let row_values = &values[r];
                let y = origin.y + row as f32 * ROW_H;
                if y + ROW_H < visible.min.y || y > visible.max.y {
                    continue;
                }
                painter.text(
                    egui::pos2(origin.x + 4.0, y + ROW_H / 2.0),
                    egui::Align2::LEFT_CENTER,
                    &h.devices[r],
                    egui::FontId::proportional(12.0),
                    ui.visuals().text_color(),
                );
                let median = job.devices[r].iteration_median_ns;
                for (k, &ns) in row_values.iter().enumerate().take(columns.end).skip(columns.start) {
                    // Edges on whole pixels: fractional ones leave seams between cells.
                    let x0 = (origin.x + LABEL_W + k as f32 * cell_w).round();
                    let x1 = (origin.x + LABEL_W + (k + 1) as f32 * cell_w).round();
                    let cell = Rect::from_min_max(
                        egui::pos2(x0, y + 1.0),
                        egui::pos2(x1.max(x0 + 1.0), y + ROW_H - 1.0),
                    );
                    let colour = match cells {
                        CellValue::Duration => heat(ns, median),
                        _ => share_heat(ns, largest),
                    };
                    painter.rect_filled(cell, 0.0, colour);
                }
            }
            let cell_at = |p: egui::Pos2| {
                let k = ((p.x - origin.x - LABEL_W) / cell_w).floor();
                let row = ((p.y - origin.y) / ROW_H).floor();
                (k >= 0.0 && (k as usize) < n && row >= 0.0 && (row as usize) < rows)
                    .then_some((k as usize, row as usize))
            };
            if let Some((k, row)) = response.hover_pos().and_then(cell_at) {
                let r = order[row];
                let at = |v: &Vec<Vec<i64>>| v[r].get(k).copied().unwrap_or(0);
                response.on_hover_text_at_pointer(format!(
                    "{} · iteration {k}: this GPU's iteration {}, it waited {} in NCCL and held the others back {}",
                    h.devices[r],
                    format_ns(at(&h.duration_ns)),
                    format_ns(at(&h.wait_ns)),
                    format_ns(at(&h.held_back_ns)),
                ));
            }
        });
}
