//! The view: which time range is shown and how it moves (fit, zoom, pan, zoom to a span,
//! go to a match, scroll a GPU into view).

use super::Timeline;
use super::rows::device_band;
use crate::trace::{DeviceIndex, Trace};
use crate::ui::timeline::search::Match;

/// How far past the trace's ends (a share of its extent) zooming out may show.
const ZOOM_OUT_MARGIN: f64 = 0.02;

impl Timeline {
    pub fn fit(&mut self) {
        self.view = (self.full.0 as f64, self.full.1 as f64);
    }

    /// Zooms by `factor` (< 1 zooms in) around time `at`.
    pub fn zoom(&mut self, factor: f64, at: f64) {
        let (s, e) = self.view;
        // Out to the trace's extent and a margin, no further: no time before the trace's.
        let extent = (self.full.1 - self.full.0) as f64;
        let margin = extent * ZOOM_OUT_MARGIN;
        let widest = (extent + 2.0 * margin).max(100.0);
        let span = ((e - s) * factor).clamp(100.0, widest.max(e - s));
        let frac = ((at - s) / (e - s)).clamp(0.0, 1.0);
        let mut start = at - frac * span;
        if factor > 1.0 {
            let (lo, hi) = (self.full.0 as f64 - margin, self.full.1 as f64 + margin);
            start = start.min(hi - span).max(lo);
        }
        self.view = (start, start + span);
    }

    pub fn pan(&mut self, fraction: f64) {
        let d = (self.view.1 - self.view.0) * fraction;
        self.view = (self.view.0 + d, self.view.1 + d);
        self.keep_in_bounds();
    }

    /// Pans the view back so that it shows no more than the zoom-out margin past the
    /// trace's ends (a view wider than that keeps the whole trace in it): panning stops
    /// where zooming out does.
    pub fn keep_in_bounds(&mut self) {
        let extent = (self.full.1 - self.full.0) as f64;
        let margin = extent * ZOOM_OUT_MARGIN;
        let (lo, hi) = (self.full.0 as f64 - margin, self.full.1 as f64 + margin);
        let span = self.view.1 - self.view.0;
        let start = if span <= hi - lo {
            self.view.0.clamp(lo, hi - span)
        } else {
            self.view.0.clamp(hi - span, lo)
        };
        self.view = (start, start + span);
    }

    /// Selects a search match and brings it into view: centred at the current zoom when it
    /// fits, else zoomed to it.
    pub fn go_to(&mut self, m: Match) {
        self.selection = Some(m.selection);
        let span = self.view.1 - self.view.0;
        let len = (m.end - m.start) as f64;
        if len < span * 0.5 && span < (self.full.1 - self.full.0) as f64 * 0.05 {
            let mid = (m.start + m.end) as f64 / 2.0;
            self.view = (mid - span / 2.0, mid + span / 2.0);
        } else {
            self.zoom_to(m.start, m.end, 1.0);
        }
    }

    /// Shows `[start, end]` with `margin` of its length on both sides, the margins cut
    /// at the trace's ends.
    pub fn zoom_to(&mut self, start: i64, end: i64, margin: f64) {
        let len = (end - start).max(100) as f64;
        let (lo, hi) = (self.full.0.min(start) as f64, self.full.1.max(end) as f64);
        self.view = (
            (start as f64 - len * margin).max(lo),
            (end as f64 + len * margin).min(hi),
        );
    }

    /// Unfolds GPU `device` (an index) and scrolls its rows into view when they are not.
    pub fn reveal_device(&mut self, trace: &Trace, device: DeviceIndex) {
        let Some(folded) = self.folds.gpus.get_mut(device.0) else {
            return;
        };
        *folded = false;
        let rows = self.rows(trace);
        let Some(band) = device_band(&rows, device.0, 0.0) else {
            return;
        };
        let visible = self.frame.last_plot.height();
        if !visible.is_finite() || visible <= 0.0 {
            return;
        }
        let shown = self.scroll_y..=self.scroll_y + visible;
        if !(shown.contains(&band.min) && shown.contains(&band.max.min(band.min + visible))) {
            self.scroll_y = band.min;
        }
    }
}
