//! The rows in display order (GPU groups with a row per stream, then CPU threads with a
//! row per NVTX depth and one of API calls), their labels and their vertical extents.

use super::HEADER_H;
use super::ROW_H;
use super::Timeline;
use crate::trace::Trace;
use eframe::egui;
use eframe::egui::Rect;
use eframe::egui::Vec2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// A group header: GPU `device` index or CPU thread index.
    GpuHeader(usize),
    ThreadHeader(usize),
    Stream {
        device: usize,
        stream: usize,
    },
    Nvtx {
        thread: usize,
        depth: u16,
    },
    Api {
        thread: usize,
    },
    /// OS runtime calls (`read`, `poll`, …) of a thread.
    Osrt {
        thread: usize,
    },
    /// When a thread ran on a CPU (exports with thread scheduling only).
    Sched {
        thread: usize,
    },
    /// One of a GPU's sampled metrics (its index in the GPU's `DeviceMetrics`).
    Metric {
        device: usize,
        metric: usize,
    },
    /// A GPU's device memory allocated over time.
    Memory {
        device: usize,
    },
}

impl RowKind {
    pub fn height(&self) -> f32 {
        match self {
            RowKind::GpuHeader(_) | RowKind::ThreadHeader(_) => HEADER_H,
            // Charts: tall enough to read a level.
            RowKind::Metric { .. } | RowKind::Memory { .. } => 2.0 * ROW_H,
            _ => ROW_H,
        }
    }
}

/// Top of `target`'s row, rows starting at `top`.
pub(super) fn row_top(rows: &[RowKind], target: RowKind, top: f32) -> Option<f32> {
    let mut y = top;
    for row in rows {
        if *row == target {
            return Some(y);
        }
        y += row.height();
    }
    None
}

/// The vertical extent of a device's stream rows (its header left out).
pub(super) fn streams_band(rows: &[RowKind], device: usize, top: f32) -> Option<egui::Rangef> {
    let mut y = top;
    let mut band: Option<egui::Rangef> = None;
    for row in rows {
        let h = row.height();
        if matches!(*row, RowKind::Stream { device: d, .. } if d == device) {
            band = Some(band.map_or(egui::Rangef::new(y, y + h), |b| {
                egui::Rangef::new(b.min, y + h)
            }));
        }
        y += h;
    }
    band
}

/// The vertical extent of a device's group (header and stream rows).
pub(super) fn device_band(rows: &[RowKind], device: usize, top: f32) -> Option<egui::Rangef> {
    let mut y = top;
    let mut band: Option<egui::Rangef> = None;
    for row in rows {
        let h = row.height();
        let mine = match *row {
            RowKind::GpuHeader(d) => d == device,
            RowKind::Stream { device: d, .. } => d == device,
            _ => false,
        };
        if mine {
            band = Some(band.map_or(egui::Rangef::new(y, y + h), |b| {
                egui::Rangef::new(b.min, y + h)
            }));
        }
        y += h;
    }
    band
}

impl Timeline {
    /// Rows in display order: GPUs (streams), then CPU threads with NVTX or API calls.
    pub fn rows(&self, trace: &Trace) -> Vec<RowKind> {
        let mut rows = Vec::new();
        for (d, device) in trace.devices.iter().enumerate() {
            rows.push(RowKind::GpuHeader(d));
            if !self.folds.gpus[d] {
                rows.extend((0..device.streams.len()).map(|s| RowKind::Stream {
                    device: d,
                    stream: s,
                }));
                if let Some((k, _)) = self.index.metrics.metrics[d] {
                    let chosen = &self.settings.metric_choice.chosen;
                    rows.extend(
                        trace.gpu_metrics[k]
                            .metrics
                            .iter()
                            .enumerate()
                            .filter(|(_, (name, _))| chosen.contains(name))
                            .map(|(m, _)| RowKind::Metric {
                                device: d,
                                metric: m,
                            }),
                    );
                }
                if self.settings.metric_choice.memory && self.index.metrics.memory[d].is_some() {
                    rows.push(RowKind::Memory { device: d });
                }
            }
        }
        for (t, thread) in trace.threads.iter().enumerate() {
            if thread.nvtx.is_empty()
                && thread.api.is_empty()
                && thread.osrt.is_empty()
                && thread.scheduling.is_empty()
            {
                continue;
            }
            rows.push(RowKind::ThreadHeader(t));
            if self.folds.threads[t] {
                continue;
            }
            for depth in 0..self.index.nvtx_by_depth[t].len() as u16 {
                rows.push(RowKind::Nvtx { thread: t, depth });
            }
            if !thread.api.is_empty() {
                rows.push(RowKind::Api { thread: t });
            }
            if !thread.osrt.is_empty() {
                rows.push(RowKind::Osrt { thread: t });
            }
            if !thread.scheduling.is_empty() {
                rows.push(RowKind::Sched { thread: t });
            }
        }
        rows
    }

    pub(super) fn draw_label(
        &self,
        painter: &egui::Painter,
        ui: &egui::Ui,
        r: Rect,
        trace: &Trace,
        row: RowKind,
    ) {
        let (text, strong) = match row {
            RowKind::GpuHeader(d) => {
                let dev = &trace.devices[d];
                let arrow = if self.folds.gpus[d] { "[+]" } else { "[-]" };
                (format!("{arrow} {}", dev.label()), true)
            }
            RowKind::ThreadHeader(t) => {
                let th = &trace.threads[t];
                let arrow = if self.folds.threads[t] { "[+]" } else { "[-]" };
                let name = if th.name.is_empty() {
                    "thread"
                } else {
                    &th.name
                };
                (
                    format!("{arrow} {name} (pid {}, tid {})", th.pid, th.tid),
                    true,
                )
            }
            RowKind::Stream { device, stream } => (
                format!("    stream {}", trace.devices[device].streams[stream].id),
                false,
            ),
            RowKind::Nvtx { depth, .. } => (format!("    NVTX {depth}"), false),
            RowKind::Api { .. } => ("    CUDA API".to_string(), false),
            RowKind::Osrt { .. } => ("    OS runtime".to_string(), false),
            RowKind::Sched { .. } => ("    on CPU".to_string(), false),
            RowKind::Metric { device, metric } => {
                let name = trace
                    .device_metrics(trace.devices[device].id)
                    .and_then(|m| m.metrics.get(metric))
                    .map_or(String::new(), |(n, _)| super::metric_rows::short_name(n));
                (format!("    {name}"), false)
            }
            RowKind::Memory { device } => {
                // The axis' top: the most allocated in the capture (kept with the row's
                // summaries, not walked each frame).
                let top_mib = self.index.metrics.memory[device]
                    .as_ref()
                    .map_or(0.0, |m| m.index.top);
                let peak = (top_mib as f64 * 1024.0 * 1024.0) as i64;
                (
                    format!(
                        "    Device memory (top {})",
                        crate::format::format_bytes(peak.max(0) as u64)
                    ),
                    false,
                )
            }
        };
        if strong {
            painter.rect_filled(r, 0.0, ui.visuals().faint_bg_color);
        }
        painter.text(
            r.left_center() + Vec2::new(4.0, 0.0),
            egui::Align2::LEFT_CENTER,
            text,
            egui::FontId::proportional(if strong { 12.5 } else { 11.5 }),
            ui.visuals().text_color(),
        );
    }

    pub(super) fn toggle_group_at(&mut self, rows: &[RowKind], top: f32, y: f32) {
        let mut row_y = top;
        for row in rows {
            let h = row.height();
            if y >= row_y && y < row_y + h {
                match *row {
                    RowKind::GpuHeader(d) => self.folds.gpus[d] ^= true,
                    RowKind::ThreadHeader(t) => self.folds.threads[t] ^= true,
                    _ => {}
                }
                return;
            }
            row_y += h;
        }
    }
}
