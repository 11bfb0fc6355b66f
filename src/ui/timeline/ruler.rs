//! The time ruler's ticks: round values at a 1-2-5 step, with as many digits as the step
//! needs, so neighbouring labels never read alike. Times are relative to the trace's
//! first event (the one time base of every view).

use super::LABEL_W;
use super::TICK_GAP_PX;
use super::Timeline;
use crate::format::format_ns;
use eframe::egui;
use eframe::egui::Pos2;
use eframe::egui::Rect;
use eframe::egui::Stroke;
use eframe::egui::Vec2;

/// A tick step of 1, 2 or 5 × 10^k ns, the smallest leaving at least `min_gap` of
/// `span` between ticks.
pub fn tick_step(min_gap: f64) -> f64 {
    let min_gap = min_gap.max(1.0);
    let mag = 10f64.powf(min_gap.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= min_gap * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// The ticks (multiples of `step`) inside `[from, to]`, at most `MAX_TICKS` of them.
pub fn ticks(from: f64, to: f64, step: f64) -> impl Iterator<Item = f64> {
    let first = (from / step).ceil() as i64;
    let last = (to / step).floor() as i64;
    (first..=last.max(first - 1))
        .take(MAX_TICKS)
        .map(move |k| k as f64 * step)
}

/// More ticks than a screen has room for means a bad step: stop there.
const MAX_TICKS: usize = 200;

/// A tick's label: in the unit of the view's largest time (`scale_ns`, so all labels of
/// one view share it), with the decimals `step` needs: `60.393102 s` beside
/// `60.393104 s`.
pub fn tick_label(t_ns: f64, step: f64, scale_ns: f64) -> String {
    let (unit, name) = match scale_ns.abs() {
        a if a >= 1e9 => (1e9, "s"),
        a if a >= 1e6 => (1e6, "ms"),
        a if a >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    let decimals = ((unit / step).log10() - 1e-9).ceil().clamp(0.0, 9.0) as usize;
    let value = t_ns / unit;
    // No "-0": a tick at zero reads 0.
    let value = if value.abs() < 0.5 * 10f64.powi(-(decimals as i32)) {
        0.0
    } else {
        value
    };
    format!("{value:.decimals$} {name}")
}

impl Timeline {
    /// Ticks at a 1-2-5 step of the time since the trace's first event, the length of the
    /// view in the corner, and the time under the pointer.
    pub(super) fn draw_ruler(
        &self,
        painter: &egui::Painter,
        ruler: Rect,
        ui: &egui::Ui,
        cursor: Option<f32>,
    ) {
        if ruler.width() < 10.0 {
            return;
        }
        let (v0, v1) = self.view;
        let origin = self.full.0 as f64;
        let (from, to) = (v0 - origin, v1 - origin);
        let span = to - from;
        let x_of = |t: f64| ruler.left() + ((t - from) / span) as f32 * ruler.width();
        let step = tick_step(span * TICK_GAP_PX / ruler.width() as f64);
        let scale = from.abs().max(to.abs());
        let color = ui.visuals().text_color();
        let font = egui::FontId::proportional(11.0);
        // The time under the pointer, to a pixel's precision: drawn over the ticks, whose
        // labels it would cover are left out.
        let cursor = cursor.map(|x| {
            let t = from + ((x - ruler.left()) / ruler.width()) as f64 * span;
            let per_px = tick_step(span / ruler.width() as f64);
            let galley = painter.layout_no_wrap(tick_label(t, per_px, scale), font.clone(), color);
            let w = galley.size().x + 8.0;
            let left = (x - w / 2.0).clamp(ruler.left(), ruler.right() - w);
            let r = Rect::from_min_size(Pos2::new(left, ruler.top() + 1.0), Vec2::new(w, 15.0));
            (r, galley)
        });
        for t in ticks(from, to, step) {
            let x = x_of(t);
            painter.line_segment(
                [
                    Pos2::new(x, ruler.bottom() - 6.0),
                    Pos2::new(x, ruler.bottom()),
                ],
                Stroke::new(1.0, color),
            );
            let label = painter.layout_no_wrap(tick_label(t, step, scale), font.clone(), color);
            // A label that would run past the right edge is left out, not cut.
            let at = Rect::from_min_size(Pos2::new(x + 2.0, ruler.top() + 2.0), label.size());
            let covered = cursor.as_ref().is_some_and(|(r, _)| r.intersects(at));
            if at.right() <= ruler.right() && !covered {
                painter.galley(at.min, label, color);
            }
        }
        let corner = Pos2::new(ruler.left() - LABEL_W + 4.0, ruler.top() + 1.0);
        let small = egui::FontId::proportional(10.0);
        let weak = ui.visuals().weak_text_color();
        painter.text(
            corner,
            egui::Align2::LEFT_TOP,
            "time since the first event",
            small.clone(),
            weak,
        );
        painter.text(
            corner + Vec2::new(0.0, 11.0),
            egui::Align2::LEFT_TOP,
            format!("view {}", format_ns(span as i64)),
            small,
            color,
        );
        if let Some((r, galley)) = cursor {
            painter.rect_filled(r, 3.0, ui.visuals().widgets.active.bg_fill);
            painter.galley(Pos2::new(r.left() + 4.0, ruler.top() + 2.0), galley, color);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(38.5e6), 50e6);
        assert_eq!(tick_step(4.444e9), 5e9);
        assert_eq!(tick_step(1.2e3), 2e3);
        assert_eq!(tick_step(1e6), 1e6);
        assert_eq!(tick_step(0.3), 1.0);
    }

    #[test]
    fn ticks_are_round_multiples_of_the_step() {
        let t: Vec<f64> = ticks(38.5e6, 260e6, 50e6).collect();
        assert_eq!(t, vec![50e6, 100e6, 150e6, 200e6, 250e6]);
        assert_eq!(ticks(1.2, 1.5, 1.0).count(), 0);
        assert_eq!(ticks(1.0, 1.5, 1.0).count(), 1);
    }

    #[test]
    fn neighbouring_labels_never_read_alike() {
        // A view of a few µs, 476.8 ms into the trace, and one of 20 s from the start.
        for (from, span) in [(476.8e6, 5e3), (60.393e9, 8e3), (0.0, 20e9), (1.5e3, 700.0)] {
            let step = tick_step(span / 8.0);
            let labels: Vec<String> = ticks(from, from + span, step)
                .map(|t| tick_label(t, step, from + span))
                .collect();
            assert!(labels.len() >= 4, "{labels:?}");
            for pair in labels.windows(2) {
                assert_ne!(pair[0], pair[1], "{labels:?}");
            }
        }
        assert_eq!(tick_label(60.393102e9, 2e3, 61e9), "60.393102 s");
        assert_eq!(tick_label(150e6, 50e6, 260e6), "150 ms");
        assert_eq!(tick_label(2.5e9, 5e8, 4e9), "2.5 s");
        assert_eq!(tick_label(-1e-3, 1e6, 9e6), "0 ms");
    }
}
