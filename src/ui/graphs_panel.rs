//! The Graphs tab: the run's CUDA graph launches per graph and per GPU, and — when nsys
//! recorded them whole (its default) — that their kernels are not in the export and how
//! to get them.

use eframe::egui::{self, RichText};

use crate::analysis::graphs::CudaGraphs;
use crate::format::format_ns;
use crate::trace::Trace;

pub fn show(ui: &mut egui::Ui, trace: &Trace, g: &CudaGraphs) {
    ui.horizontal(|ui| {
        ui.strong("CUDA graphs");
        ui.label(g.headline());
    });
    if let Some(note) = &g.note {
        ui.label(RichText::new(note).color(super::theme::STRAGGLER));
    }
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            egui::Grid::new("graphs per device")
                .striped(true)
                .show(ui, |ui| {
                    for h in ["GPU", "launches", "GPU time in graphs"] {
                        ui.strong(h);
                    }
                    ui.end_row();
                    for d in &g.per_device {
                        ui.label(trace.gpu_name(d.device));
                        ui.label(d.launches.to_string());
                        ui.label(format_ns(d.gpu_ns));
                        ui.end_row();
                    }
                });
            ui.add_space(6.0);
            egui::Grid::new("graphs").striped(true).show(ui, |ui| {
                for h in [
                    "graph",
                    "exec",
                    "launches",
                    "kernels / launch",
                    "GPU time",
                    "median",
                    "CPU in its launch calls (total)",
                    "NVTX around its launches",
                ] {
                    ui.strong(h);
                }
                ui.end_row();
                for s in &g.graphs {
                    let id = s.graph_id.map_or_else(
                        || s.first_kernel.clone().unwrap_or_default(),
                        |id| id.to_string(),
                    );
                    ui.label(id);
                    ui.label(s.exec_id.map_or("—".to_string(), |x| x.to_string()));
                    ui.label(s.launches.to_string());
                    ui.label(
                        s.kernels_per_launch
                            .map_or("not recorded".to_string(), |k| format!("{k:.0}")),
                    );
                    ui.label(format_ns(s.gpu_ns));
                    ui.label(format_ns(s.median_ns));
                    ui.label(format_ns(s.launch_cpu_ns));
                    ui.label(s.nvtx.clone().unwrap_or_default());
                    ui.end_row();
                }
            });
        });
}
