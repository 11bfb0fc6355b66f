//! Kernel and NCCL summaries as sortable tables. Clicking a kernel name marks its
//! occurrences on the timeline and steps through them (each click goes to the next one).

use eframe::egui;
use egui_extras::{Column, TableBuilder};

use super::figures_window::save_menu;
use super::timeline::Nav;
use super::timeline::search::Mode;
use crate::analysis::nccl_sizes::{SizeClass, SizeGroup};
use crate::analysis::summary::{KernelStat, NcclStat};
use crate::format::shorten;
use crate::format::{format_bytes, format_ns};
use crate::overview::Overview;
use crate::trace::{DeviceId, Trace};

/// Per kernel name, its SMs and Tensor Active means while it ran (the GPU metrics').
type Activity = std::collections::BTreeMap<String, [Option<f64>; 2]>;

pub struct Tables {
    kernel_sort: (usize, bool),
    /// The kernels' activity, worked out once on a worker for a capture with metrics.
    activity: Option<std::sync::Arc<Activity>>,
    activity_job: Option<super::task::Task<(), std::sync::Arc<Activity>>>,
    nccl_sort: (usize, bool),
    memory_sort: (usize, bool),
    nvtx_sort: (usize, bool),
    /// The NCCL table: a row per message size class rather than per type.
    pub nccl_split_by_size: bool,
}

impl Default for Tables {
    /// Biggest total time first.
    fn default() -> Self {
        Self {
            kernel_sort: (2, true),
            activity: None,
            activity_job: None,
            nccl_sort: (4, true),
            memory_sort: (3, true),
            nvtx_sort: (2, true),
            nccl_split_by_size: false,
        }
    }
}

const KERNEL_COLUMNS: [&str; 10] = [
    "kernel",
    "count",
    "total",
    "share",
    "mean",
    "median",
    "min",
    "max",
    "SMs active",
    "Tensor active",
];
/// The table without GPU metrics stops before the activity columns.
const KERNEL_COLUMNS_PLAIN: usize = 8;
const NCCL_COLUMNS: [&str; 9] = [
    "GPU",
    "collective",
    "size",
    "count",
    "total",
    "median",
    "bytes",
    "algbw",
    "busbw",
];

impl Tables {
    /// The kernels' activity (SMs and Tensor Active while they ran), asked of a worker the
    /// first time the table is shown for a capture with GPU metrics.
    fn activity(&mut self, trace: &std::sync::Arc<Trace>, ctx: &egui::Context) {
        if trace.gpu_metrics.is_empty() || self.activity.is_some() {
            return;
        }
        if let Some(((), a)) = super::task::take_answer(&mut self.activity_job) {
            self.activity = Some(a);
            return;
        }
        if self.activity_job.is_none() {
            let trace = trace.clone();
            self.activity_job = Some(super::task::Task::compute((), Some(ctx), move |_| {
                std::sync::Arc::new(crate::analysis::gpu_metrics::kernel_activity(&trace))
            }));
        }
    }

    pub fn kernels(
        &mut self,
        ui: &mut egui::Ui,
        trace: &std::sync::Arc<Trace>,
        overview: &Overview,
        nav: &mut Vec<Nav>,
    ) {
        self.activity(trace, ui.ctx());
        let activity = self.activity.clone();
        let with_metrics = !trace.gpu_metrics.is_empty();
        let of = |name: &str, k: usize| -> Option<f64> {
            activity
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(|m| m[k])
        };
        let mut rows: Vec<&KernelStat> = overview.kernels.iter().collect();
        let (column, descending) = self.kernel_sort;
        rows.sort_by(|a, b| {
            let ord = match column {
                0 => a.name.cmp(&b.name),
                1 => a.count.cmp(&b.count),
                2 | 3 => a.total_ns.cmp(&b.total_ns),
                4 => a.mean_ns.cmp(&b.mean_ns),
                5 => a.median_ns.cmp(&b.median_ns),
                6 => a.min_ns.cmp(&b.min_ns),
                7 => a.max_ns.cmp(&b.max_ns),
                k => of(&a.name, k - 8)
                    .unwrap_or(-1.0)
                    .total_cmp(&of(&b.name, k - 8).unwrap_or(-1.0)),
            };
            if descending { ord.reverse() } else { ord }
        });
        let mut clicked: Option<String> = None;
        let mut sort = None;
        ui.label("Click a kernel to mark it on the timeline; click again for its next occurrence.");
        let cut: usize = rows.iter().map(|k| k.cut).sum();
        if cut > 0 {
            ui.weak(format!(
                "{} cut by the selection's edges: their time inside it only",
                crate::format::plural(cut, "kernel")
            ));
        }
        let columns = if with_metrics {
            KERNEL_COLUMNS.len()
        } else {
            KERNEL_COLUMNS_PLAIN
        };
        let name_w = name_width(ui, 520.0);
        // Wider than the panel, it scrolls sideways (Shift+wheel): every column reachable.
        egui::ScrollArea::horizontal()
            .id_salt("kernels table")
            .show(ui, |ui| {
            TableBuilder::new(ui)
                .striped(true)
                .column(Column::initial(name_w).clip(true).resizable(true))
                .columns(Column::auto(), columns - 1)
                .header(20.0, |mut header| {
                    for (i, name) in KERNEL_COLUMNS.iter().take(columns).enumerate() {
                        header.col(|ui| {
                            let button = ui.button(sort_label(name, i, self.kernel_sort));
                            let button = if i >= KERNEL_COLUMNS_PLAIN {
                                button.on_hover_text("The GPU metric's time-weighted mean while the kernel ran, over the whole run (samples are device-wide: kernels running at once share them)")
                            } else {
                                button
                            };
                            if button.clicked() {
                                sort = Some(i);
                            }
                        });
                    }
                })
                .body(|body| {
                    body.rows(18.0, rows.len(), |mut row| {
                        let k = rows[row.index()];
                        row.col(|ui| {
                            if ui
                                .link(shorten(&k.name, 90))
                                .on_hover_text(&k.name)
                                .clicked()
                            {
                                clicked = Some(k.name.clone());
                            }
                        });
                        for text in [
                            k.count.to_string(),
                            format_ns(k.total_ns),
                            format!("{:.1} %", k.share_pct),
                            format_ns(k.mean_ns),
                            format_ns(k.median_ns),
                            format_ns(k.min_ns),
                            format_ns(k.max_ns),
                        ] {
                            row.col(|ui| {
                                ui.label(text);
                            });
                        }
                        if with_metrics {
                            for m in 0..2 {
                                row.col(|ui| {
                                    ui.label(match (&activity, of(&k.name, m)) {
                                        (None, _) => "…".to_string(),
                                        (Some(_), Some(v)) => format!("{v:.0} %"),
                                        (Some(_), None) => "–".to_string(),
                                    });
                                });
                            }
                        }
                    });
                });
            });
        if let Some(i) = sort {
            self.kernel_sort = toggle(self.kernel_sort, i);
        }
        if let Some(name) = clicked {
            step_through(nav, &name, Mode::Exact);
        }
    }

    pub fn nccl(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Trace,
        overview: &Overview,
        input: NcclInput,
        nav: &mut Vec<Nav>,
    ) {
        // With payloads, rows come from the groups by size (bytes and bandwidth beside the
        // durations); without, or while a selection's groups are worked out, from the
        // overview's NCCL table (the selection's when there is one).
        let with_bytes = input.groups.filter(|_| input.has_bytes);
        let mut rows: Vec<NcclRow> = match with_bytes {
            Some(groups) => groups
                .iter()
                .filter(|g| (g.class == SizeClass::All) != self.nccl_split_by_size)
                .map(NcclRow::of_group)
                .collect(),
            None => overview.nccl.iter().map(NcclRow::of_stat).collect(),
        };
        let cut: usize = rows.iter().map(|r| r.cut).sum();
        sort_nccl_rows(&mut rows, self.nccl_sort);
        let mut clicked: Option<String> = None;
        let mut sort = None;
        self.nccl_header(ui, input.payloads_read, with_bytes.is_some());
        if input.payloads_read && !input.has_bytes {
            ui.add(egui::Label::new(egui::RichText::new(no_bytes_note(overview)).weak()).wrap());
        }
        if cut > 0 {
            ui.weak(format!(
                "{} cut by the selection's edges: their time inside it only",
                crate::format::plural(cut, "collective")
            ));
        }
        // Wider than the panel, it scrolls sideways (Shift+wheel): every column reachable.
        egui::ScrollArea::horizontal()
            .id_salt("nccl table")
            .show(ui, |ui| {
                TableBuilder::new(ui)
                    .striped(true)
                    .columns(Column::auto(), NCCL_COLUMNS.len())
                    .column(Column::remainder().at_least(100.0))
                    .header(20.0, |mut header| {
                        for (i, name) in NCCL_COLUMNS.iter().enumerate() {
                            header.col(|ui| {
                                if ui.button(sort_label(name, i, self.nccl_sort)).clicked() {
                                    sort = Some(i);
                                }
                            });
                        }
                        header.col(|ui| {
                            // Short enough for a 1024 px window; the rest on hover.
                            ui.strong("durations").on_hover_text(
                                "each kernel's duration in log2 buckets, counts on a log scale; hover a bar for its numbers",
                            );
                        });
                    })
                    .body(|body| {
                        body.rows(18.0, rows.len(), |mut row| {
                            let n = &rows[row.index()];
                            row.col(|ui| {
                                ui.label(trace.gpu_name(n.device));
                            });
                            row.col(|ui| {
                                if ui.link(n.collective).clicked() {
                                    clicked = Some(n.collective.to_string());
                                }
                            });
                            let gbps =
                                |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1} GB/s"));
                            for text in [
                                n.size_text(),
                                n.count.to_string(),
                                format_ns(n.total_ns),
                                format_ns(n.median_ns),
                                n.bytes_text(),
                                gbps(n.algbw),
                                gbps(n.busbw),
                            ] {
                                row.col(|ui| {
                                    ui.add(egui::Label::new(text).extend());
                                });
                            }
                            row.col(|ui| {
                                let response = mini_histogram(ui, n.histogram);
                                save_menu(&response, crate::figures::data::NCCL);
                            });
                        });
                    });
            });
        if let Some(i) = sort {
            self.nccl_sort = toggle(self.nccl_sort, i);
        }
        if let Some(name) = clicked {
            step_through(nav, &name, Mode::Substring);
        }
    }

    /// How to use the table and, once payloads give bytes, the split by message size.
    fn nccl_header(&mut self, ui: &mut egui::Ui, payloads_read: bool, with_bytes: bool) {
        ui.horizontal(|ui| {
            ui.label(
                "Click a collective to mark its kernels on the timeline and step through them.",
            );
            match (payloads_read, with_bytes) {
                (false, _) => {
                    ui.weak("Reading NCCL's payloads…");
                }
                // Said below, where it can wrap.
                (true, false) => {}
                (true, true) => {
                    ui.checkbox(&mut self.nccl_split_by_size, "split by message size")
                        .on_hover_text(
                            "One row per power-of-two size class: a type whose durations \
                             show two humps often moves two sizes.",
                        );
                }
            }
        });
    }
}

/// Why the NCCL table has no bytes.
fn no_bytes_note(overview: &Overview) -> String {
    match &overview.nccl_payload.note {
        Some(note) => format!("No bytes: {note}"),
        None => "No bytes: the export has no NCCL payloads.".into(),
    }
}

/// A row of the NCCL table: a (GPU, type) or, split, a (GPU, type, size class).
struct NcclRow<'a> {
    device: DeviceId,
    collective: &'a str,
    class: SizeClass,
    count: usize,
    total_ns: i64,
    median_ns: i64,
    histogram: &'a [(i64, usize)],
    /// Bytes per kernel, smallest and largest, and summed (0: none known).
    bytes_min: u64,
    bytes_max: u64,
    bytes_total: u64,
    algbw: Option<f64>,
    busbw: Option<f64>,
    /// Kernels a selection's edges cut.
    cut: usize,
}

/// What the NCCL table shows besides the overview: the groups by message size (the
/// selection's, when there is one), whether NCCL's payloads have been read, and whether
/// they gave bytes.
pub struct NcclInput<'a> {
    pub groups: Option<&'a [crate::analysis::nccl_sizes::SizeGroup]>,
    pub payloads_read: bool,
    pub has_bytes: bool,
}

impl<'a> NcclRow<'a> {
    fn of_stat(n: &'a NcclStat) -> Self {
        Self {
            device: n.device,
            collective: &n.collective,
            class: SizeClass::All,
            count: n.count,
            total_ns: n.total_ns,
            median_ns: n.median_ns,
            histogram: &n.histogram,
            bytes_min: 0,
            bytes_max: 0,
            bytes_total: 0,
            algbw: None,
            busbw: None,
            cut: n.cut,
        }
    }

    fn of_group(g: &'a SizeGroup) -> Self {
        Self {
            device: g.device,
            collective: g.collective,
            class: g.class,
            count: g.count,
            total_ns: g.total_ns,
            median_ns: g.median_ns,
            histogram: &g.histogram,
            bytes_min: g.bytes_min,
            bytes_max: g.bytes_max,
            bytes_total: g.bytes_total,
            algbw: g.algbw_gbps_median,
            busbw: g.busbw_gbps_median,
            cut: g.cut,
        }
    }

    /// Bytes per kernel: one size, or the smallest and largest.
    fn size_text(&self) -> String {
        if self.class == SizeClass::Unknown {
            "unknown".into()
        } else if self.bytes_max == 0 {
            "–".into()
        } else if self.bytes_min == self.bytes_max {
            format_bytes(self.bytes_max)
        } else {
            format!(
                "{}–{}",
                format_bytes(self.bytes_min),
                format_bytes(self.bytes_max)
            )
        }
    }

    fn bytes_text(&self) -> String {
        if self.bytes_total == 0 {
            "–".into()
        } else {
            format_bytes(self.bytes_total)
        }
    }
}

fn sort_label(name: &str, i: usize, (column, descending): (usize, bool)) -> String {
    match (column == i, descending) {
        (true, true) => format!("{name} v"),
        (true, false) => format!("{name} ^"),
        _ => name.to_string(),
    }
}

fn toggle((column, descending): (usize, bool), i: usize) -> (usize, bool) {
    if column == i {
        (i, !descending)
    } else {
        (i, i != 0 && i != 1)
    }
}

/// Searches `name` on the timeline (unless it is already the query) and goes to the next
/// match.
fn step_through(nav: &mut Vec<Nav>, name: &str, mode: Mode) {
    let query = name.to_string();
    nav.push(Nav::Find { query, mode });
}

/// A duration histogram drawn in a table cell: one bar per log2 bucket from the shortest
/// to the longest, heights by log count, so one slow collective shows beside thousands;
/// the numbers on hover.
fn mini_histogram(ui: &mut egui::Ui, buckets: &[(i64, usize)]) -> egui::Response {
    let size = egui::vec2(ui.available_width().clamp(120.0, 320.0), 16.0);
    let (rect, response) = ui.allocate_exact_size(size, egui::Sense::click());
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return response;
    };
    // Buckets are powers of two: position by log2 of their lower bound.
    let slot = |from: i64| (from.max(1) as f64).log2().round();
    let (lo, hi) = (slot(first.0), slot(last.0));
    let slots = (hi - lo + 1.0) as f32;
    let tallest = buckets.iter().map(|b| b.1).max().unwrap_or(1) as f32;
    let bar_w = rect.width() / slots;
    let painter = ui.painter();
    painter.rect_filled(rect, 0.0, ui.visuals().faint_bg_color);
    for &(from, count) in buckets {
        let x = rect.left() + (slot(from) - lo) as f32 * bar_w;
        let h = ((count as f32 + 1.0).ln() / (tallest + 1.0).ln()) * rect.height();
        let bar = egui::Rect::from_min_max(
            egui::pos2(x + 0.5, rect.bottom() - h),
            egui::pos2(x + bar_w - 0.5, rect.bottom()),
        );
        painter.rect_filled(bar, 0.0, super::theme::NCCL);
    }
    response.on_hover_text(
        buckets
            .iter()
            .map(|(from, c)| format!("from {}: {c}", format_ns(*from)))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

const MEMORY_COLUMNS: [&str; 7] = ["GPU", "kind", "count", "bytes", "time", "rate", "pageable"];
const NVTX_COLUMNS: [&str; 5] = [
    "NVTX range (numbers as #)",
    "count",
    "GPU span",
    "kernel time",
    "share",
];

impl Tables {
    /// Memory transfers per device and kind.
    pub fn memory(&mut self, ui: &mut egui::Ui, trace: &Trace, overview: &Overview) {
        let mut rows: Vec<&crate::analysis::memory::MemoryStat> = overview.memory.iter().collect();
        let (column, descending) = self.memory_sort;
        rows.sort_by(|a, b| {
            let ord = match column {
                0 => a.device.cmp(&b.device),
                1 => a.kind.cmp(&b.kind),
                2 => a.count.cmp(&b.count),
                3 => a.bytes.cmp(&b.bytes),
                4 => a.total_ns.cmp(&b.total_ns),
                5 => a.gbps.total_cmp(&b.gbps),
                _ => a.pageable.cmp(&b.pageable),
            };
            if descending { ord.reverse() } else { ord }
        });
        if rows.is_empty() {
            ui.label("No memcpy or memset in this trace.");
            return;
        }
        ui.label("Per GPU and copy kind. Pageable: copies from or to pageable host memory, which are staged and slower than pinned ones.");
        let cut: usize = rows.iter().map(|m| m.cut).sum();
        if cut > 0 {
            ui.weak(format!(
                "{} cut by the selection's edges: their time, and their bytes in proportion, inside it only",
                crate::format::plural(cut, "op")
            ));
        }
        let mut sort = None;
        // Wider than the panel, it scrolls sideways (Shift+wheel): every column reachable.
        egui::ScrollArea::horizontal()
            .id_salt("memory table")
            .show(ui, |ui| {
                TableBuilder::new(ui)
                    .striped(true)
                    .columns(Column::auto(), MEMORY_COLUMNS.len())
                    .header(20.0, |mut header| {
                        for (i, name) in MEMORY_COLUMNS.iter().enumerate() {
                            header.col(|ui| {
                                if ui.button(sort_label(name, i, self.memory_sort)).clicked() {
                                    sort = Some(i);
                                }
                            });
                        }
                    })
                    .body(|body| {
                        body.rows(18.0, rows.len(), |mut row| {
                            let m = rows[row.index()];
                            for text in [
                                trace.gpu_name(m.device),
                                m.kind.clone(),
                                m.count.to_string(),
                                crate::format::format_bytes(m.bytes),
                                format_ns(m.total_ns),
                                m.rate_text(),
                                m.pageable.to_string(),
                            ] {
                                row.col(|ui| {
                                    ui.label(text);
                                });
                            }
                        });
                    });
            });
        if let Some(i) = sort {
            self.memory_sort = toggle(self.memory_sort, i);
        }
    }

    /// GPU time per NVTX range name; a click marks its instances on the timeline.
    pub fn nvtx(&mut self, ui: &mut egui::Ui, overview: &Overview, nav: &mut Vec<Nav>) {
        let mut rows: Vec<&crate::analysis::nvtx_gpu::NvtxGpu> = overview
            .nvtx_gpu
            .iter()
            .filter(|n| n.with_kernels > 0)
            .collect();
        let (column, descending) = self.nvtx_sort;
        rows.sort_by(|a, b| {
            let ord = match column {
                0 => a.name.cmp(&b.name),
                1 => a.count.cmp(&b.count),
                2 => a.gpu_span_ns.cmp(&b.gpu_span_ns),
                _ => a.kernel_ns.cmp(&b.kernel_ns),
            };
            if descending { ord.reverse() } else { ord }
        });
        if rows.is_empty() {
            ui.label("No NVTX range launched a kernel.");
            return;
        }
        ui.label("Per NVTX range name: the GPU span of the kernels launched inside each instance, summed, and their kernel time. Click a name to mark its instances on the timeline.");
        let mut clicked: Option<String> = None;
        let mut sort = None;
        let name_w = name_width(ui, 560.0);
        // Wider than the panel, it scrolls sideways (Shift+wheel): every column reachable.
        egui::ScrollArea::horizontal()
            .id_salt("nvtx table")
            .show(ui, |ui| {
                TableBuilder::new(ui)
                    .striped(true)
                    .column(Column::initial(name_w).clip(true).resizable(true))
                    .columns(Column::auto(), NVTX_COLUMNS.len() - 1)
                    .header(20.0, |mut header| {
                        for (i, name) in NVTX_COLUMNS.iter().enumerate() {
                            header.col(|ui| {
                                let index = i.min(3);
                                if ui.button(sort_label(name, index, self.nvtx_sort)).clicked() {
                                    sort = Some(index);
                                }
                            });
                        }
                    })
                    .body(|body| {
                        body.rows(18.0, rows.len(), |mut row| {
                            let n = rows[row.index()];
                            row.col(|ui| {
                                if ui
                                    .link(shorten(&n.name, 90))
                                    .on_hover_text(&n.name)
                                    .clicked()
                                {
                                    clicked = Some(n.name.clone());
                                }
                            });
                            for text in [
                                n.count.to_string(),
                                format_ns(n.gpu_span_ns),
                                format_ns(n.kernel_ns),
                                format!("{:.1} %", n.share_pct),
                            ] {
                                row.col(|ui| {
                                    ui.label(text);
                                });
                            }
                        });
                    });
            });
        if let Some(i) = sort {
            self.nvtx_sort = toggle(self.nvtx_sort, i);
        }
        if let Some(name) = clicked {
            step_through(nav, &name, Mode::Template);
        }
    }
}

/// A name column's first width: at most `widest`, and at most 40 % of the panel, so that a
/// narrow window still shows the numbers beside it (the column can be dragged wider).
fn name_width(ui: &egui::Ui, widest: f32) -> f32 {
    (ui.available_width() * 0.4).clamp(160.0, widest)
}

/// The NCCL rows by the table's sort: (column, descending).
fn sort_nccl_rows(rows: &mut [NcclRow], (column, descending): (usize, bool)) {
    rows.sort_by(|a, b| {
        let ord = match column {
            0 => a.device.cmp(&b.device),
            1 => a.collective.cmp(b.collective),
            2 => a.bytes_max.cmp(&b.bytes_max),
            3 => a.count.cmp(&b.count),
            4 => a.total_ns.cmp(&b.total_ns),
            5 => a.median_ns.cmp(&b.median_ns),
            6 => a.bytes_total.cmp(&b.bytes_total),
            7 => a.algbw.unwrap_or(-1.0).total_cmp(&b.algbw.unwrap_or(-1.0)),
            _ => a.busbw.unwrap_or(-1.0).total_cmp(&b.busbw.unwrap_or(-1.0)),
        };
        if descending { ord.reverse() } else { ord }
    });
}
