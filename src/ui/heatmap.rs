//! Iteration time per GPU and iteration as a grid of cells, the slow ones hot: which rank
//! was slow when, at a glance across a job of many ranks. A click opens that iteration.

use eframe::egui::{self, Color32, Rect, Sense, Vec2};

use super::theme;
use crate::analysis::iterations::Iterations;
use crate::format::format_ns;
use crate::trace::{DeviceIndex, Trace};

/// Width of the GPU names left of the cells.
const LABEL_W: f32 = 170.0;
const ROW_H: f32 = 18.0;

/// A cell's colour: at or under its GPU's median the panel's dark blue, hotter the more it
/// exceeds it (full red at 1.5 × the median).
pub fn heat(duration: i64, median: i64) -> Color32 {
    if median <= 0 || duration <= 0 {
        return Color32::from_gray(40);
    }
    let over = ((duration as f32 / median as f32) - 1.0).clamp(0.0, 0.5) * 2.0;
    let cool = Color32::from_rgb(40, 60, 90);
    let hot = Color32::from_rgb(230, 60, 40);
    let mix = |a: u8, b: u8| (a as f32 + (b as f32 - a as f32) * over) as u8;
    Color32::from_rgb(
        mix(cool.r(), hot.r()),
        mix(cool.g(), hot.g()),
        mix(cool.b(), hot.b()),
    )
}

/// Draws the grid; returns the (iteration, device index) clicked.
pub fn show(ui: &mut egui::Ui, trace: &Trace, its: &Iterations) -> Option<(usize, DeviceIndex)> {
    let n = its.count();
    if n == 0 || its.per_device.is_empty() {
        ui.label("No iterations found: nothing to map.");
        return None;
    }
    ui.label(format!(
            "Iteration time of each GPU ({} iterations): dark = at or under the GPU's median, red = 1.5 × or more. Click a cell to open that iteration.",
            n
        ));
    let width = (ui.available_width() - LABEL_W).max(50.0);
    let cell_w = (width / n as f32).max(2.0);
    let size = Vec2::new(
        LABEL_W + cell_w * n as f32,
        ROW_H * its.per_device.len() as f32,
    );
    let mut clicked = None;
    egui::ScrollArea::both().id_salt("heatmap").show(ui, |ui| {
        let (response, painter) = ui.allocate_painter(size, Sense::click());
        let origin = response.rect.min;
        for (row, d) in its.per_device.iter().enumerate() {
            let y = origin.y + row as f32 * ROW_H;
            painter.text(
                egui::pos2(origin.x + 4.0, y + ROW_H / 2.0),
                egui::Align2::LEFT_CENTER,
                trace.gpu_name(d.device),
                egui::FontId::proportional(12.0),
                ui.visuals().text_color(),
            );
            for (k, &ns) in d.durations_ns.iter().enumerate() {
                let x = origin.x + LABEL_W + k as f32 * cell_w;
                let cell =
                    Rect::from_min_size(egui::pos2(x, y + 1.0), Vec2::new(cell_w, ROW_H - 2.0));
                painter.rect_filled(cell, 0.0, heat(ns, d.median_ns));
                if its.slowest_index == Some(k) && cell_w >= 4.0 {
                    painter.rect_stroke(
                        cell,
                        0.0,
                        egui::Stroke::new(1.0, theme::SELECTION),
                        egui::StrokeKind::Inside,
                    );
                }
            }
        }
        let cell_at = |p: egui::Pos2| {
            let k = ((p.x - origin.x - LABEL_W) / cell_w).floor();
            let row = ((p.y - origin.y) / ROW_H).floor();
            (k >= 0.0 && (k as usize) < n && row >= 0.0 && (row as usize) < its.per_device.len())
                .then_some((k as usize, row as usize))
        };
        if let Some((k, row)) = response.hover_pos().and_then(cell_at) {
            let d = &its.per_device[row];
            if let Some(&ns) = d.durations_ns.get(k) {
                let vs = if d.median_ns > 0 {
                    format!(
                        "{:+.0} %",
                        100.0 * (ns - d.median_ns) as f64 / d.median_ns as f64
                    )
                } else {
                    String::new()
                };
                response.clone().on_hover_text_at_pointer(format!(
                    "{} · iteration {k}: {} ({vs} vs its median {})",
                    trace.gpu_name(d.device),
                    format_ns(ns),
                    format_ns(d.median_ns)
                ));
            }
        }
        if response.clicked()
            && let Some((k, row)) = response.interact_pointer_pos().and_then(cell_at)
            && let Some(index) = trace.device_index(its.per_device[row].device)
        {
            clicked = Some((k, index));
        }
    });
    clicked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_grow_hotter_with_the_excess_over_the_median_and_saturate() {
        let median = 100;
        assert_eq!(heat(80, median), heat(100, median));
        let (a, b, c) = (heat(110, median), heat(130, median), heat(150, median));
        assert!(a.r() < b.r() && b.r() < c.r());
        assert_eq!(heat(150, median), heat(400, median));
    }
}
