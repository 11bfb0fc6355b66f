//! What is drawn over the rows and their marks: the current window, a zoom being dragged,
//! a measured span (each a band with its length), and the selected item outlined, a kernel's
//! with an arrow from its launch.

use eframe::egui::{self, Color32, Pos2, Rect, Stroke};

use super::ROW_H;
use super::Timeline;
use super::rows::{RowKind, row_top};
use super::selection::Selection;
use crate::format::format_ns;
use crate::trace::{NONE, Trace};
use crate::ui::theme;

impl Timeline {
    /// The current window, the selection, and the arrow from a selected kernel to its launch.
    pub(super) fn draw_overlays(
        &self,
        painter: &egui::Painter,
        trace: &Trace,
        rows: &[RowKind],
        plot: Rect,
        x_of: &dyn Fn(f64) -> f32,
    ) {
        self.draw_bands(painter, plot, x_of);
        self.draw_selected(painter, trace, rows, plot, x_of);
    }

    /// The current window (or the one being dragged), a zoom being dragged on the ruler, a
    /// measured span: each a band with its length.
    fn draw_bands(&self, painter: &egui::Painter, plot: Rect, x_of: &dyn Fn(f64) -> f32) {
        let window = self
            .input
            .pending_window
            .or(self.window)
            .map(|(a, b)| (a as f64, b as f64));
        let bands = [
            (
                window,
                Color32::from_rgba_unmultiplied(80, 140, 255, 30),
                "window",
            ),
            (
                self.input.pending_zoom,
                Color32::from_rgba_unmultiplied(200, 200, 200, 30),
                "zoom to",
            ),
            (
                self.marks.measure,
                Color32::from_rgba_unmultiplied(255, 255, 255, 24),
                "measured",
            ),
        ];
        for (span, fill, what) in bands {
            let Some((a, b)) = span else { continue };
            let r = Rect::from_x_y_ranges(x_of(a)..=x_of(b), plot.y_range());
            painter.rect_filled(r, 0.0, fill);
            let edge = Stroke::new(1.0, fill.to_opaque().gamma_multiply(0.8));
            painter.vline(r.left(), plot.y_range(), edge);
            painter.vline(r.right(), plot.y_range(), edge);
            let text = format!("{what} {}", format_ns((b - a) as i64));
            let galley =
                painter.layout_no_wrap(text, egui::FontId::proportional(12.0), Color32::WHITE);
            let centre = r.center().x.clamp(plot.left() + 60.0, plot.right() - 60.0);
            let at = Pos2::new(centre - galley.size().x / 2.0, plot.top() + 4.0);
            let back = Rect::from_min_size(at, galley.size()).expand(3.0);
            painter.rect_filled(back, 3.0, Color32::from_black_alpha(190));
            painter.galley(at, galley, Color32::WHITE);
        }
    }

    /// The selected item outlined on its row; a kernel's with an arrow from its launch.
    fn draw_selected(
        &self,
        painter: &egui::Painter,
        trace: &Trace,
        rows: &[RowKind],
        plot: Rect,
        x_of: &dyn Fn(f64) -> f32,
    ) {
        let Some(sel) = self.selection else { return };
        let row_y = |target: RowKind| row_top(rows, target, plot.top() - self.scroll_y);
        let stroke = Stroke::new(2.0, theme::SELECTION);
        match sel {
            Selection::Op { device, op } => {
                let ops = &trace.devices[device].streams[op.stream as usize].ops;
                let i = op.op as usize;
                if let Some(y) = row_y(RowKind::Stream {
                    device: device.0,
                    stream: op.stream as usize,
                }) {
                    let r = Rect::from_min_max(
                        Pos2::new(x_of(ops.start[i] as f64), y + 1.0),
                        Pos2::new(
                            x_of(ops.end[i] as f64).max(x_of(ops.start[i] as f64) + 2.0),
                            y + ROW_H - 1.0,
                        ),
                    );
                    painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Outside);
                    let (thread, call) = (ops.launch_thread[i], ops.launch_call[i]);
                    // Only from a row in view: from far above or below it, the line would run
                    // along the kernel's row over its neighbours (the Details tab names the
                    // launch).
                    if call != NONE
                        && let Some(cy) = row_y(RowKind::Api {
                            thread: thread as usize,
                        })
                        && plot.y_range().contains(cy + ROW_H / 2.0)
                    {
                        let api = &trace.threads[thread as usize].api;
                        // A launch before the view: from the view's edge on its row.
                        let x = x_of(api.start[call as usize] as f64);
                        let from = Pos2::new(x.clamp(plot.left(), plot.right()), cy + ROW_H / 2.0);
                        let to = Pos2::new(r.left(), r.center().y);
                        // egui's arrow scales its head with the length; keep it 8 px.
                        let stroke = Stroke::new(1.5, theme::SELECTION);
                        let dir = (to - from).normalized();
                        let rot = egui::emath::Rot2::from_angle(0.45);
                        painter.line_segment([from, to], stroke);
                        painter.line_segment([to, to - rot * dir * 8.0], stroke);
                        painter.line_segment([to, to - rot.inverse() * dir * 8.0], stroke);
                    }
                }
            }
            Selection::Range { thread, range } => {
                let n = &trace.threads[thread].nvtx;
                if let Some(y) = row_y(RowKind::Nvtx {
                    thread,
                    depth: n.depth[range],
                }) {
                    outline(painter, x_of, y, (n.start[range], n.end[range]), stroke);
                }
            }
            Selection::Running { thread, slice } => {
                let sc = &trace.threads[thread].scheduling;
                if let Some(y) = row_y(RowKind::Sched { thread }) {
                    outline(painter, x_of, y, (sc.start[slice], sc.end[slice]), stroke);
                }
            }
            Selection::OsCall { thread, call } => {
                let o = &trace.threads[thread].osrt;
                if let Some(y) = row_y(RowKind::Osrt { thread }) {
                    outline(painter, x_of, y, (o.start[call], o.end[call]), stroke);
                }
            }
            Selection::Call { thread, call } => {
                let a = &trace.threads[thread].api;
                if let Some(y) = row_y(RowKind::Api { thread }) {
                    outline(painter, x_of, y, (a.start[call], a.end[call]), stroke);
                }
            }
        }
    }
}

/// `(start, end)` outlined on the row whose top is `y`.
fn outline(
    painter: &egui::Painter,
    x_of: &dyn Fn(f64) -> f32,
    y: f32,
    (start, end): (i64, i64),
    stroke: Stroke,
) {
    let r = Rect::from_min_max(
        Pos2::new(x_of(start as f64), y + 1.0),
        Pos2::new(x_of(end as f64), y + ROW_H - 1.0),
    );
    painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Outside);
}
