//! How the window is split between the summary (left), the tabs (bottom) and the
//! timeline. The sizes the user chose by dragging an edge are kept apart from the sizes
//! shown, which are clamped to the window every frame: a remembered or transient size
//! (a first frame before the window reached its size) can never take the timeline's room,
//! and is never written back smaller than chosen.

use eframe::egui::{self, CursorIcon, Rect, Sense};

/// The bottom panel's smallest height, and its largest as a share of the window's.
const TABS_MIN_H: f32 = 140.0;
const TABS_MAX_SHARE: f32 = 0.45;
/// The summary's narrowest width, and its widest as a share of the window's.
const SUMMARY_MIN_W: f32 = 200.0;
const SUMMARY_MAX_SHARE: f32 = 0.3;
/// Half the thickness of the strip along an edge that drags it.
const HANDLE_PX: f32 = 4.0;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Split {
    pub summary_width: f32,
    pub tabs_height: f32,
}

impl Default for Split {
    fn default() -> Self {
        Self {
            summary_width: 330.0,
            tabs_height: 380.0,
        }
    }
}

impl Split {
    /// The summary's width in a window `width` wide.
    pub fn summary_width_in(&self, width: f32) -> f32 {
        clamp_share(self.summary_width, SUMMARY_MIN_W, SUMMARY_MAX_SHARE, width)
    }

    /// The tabs' height under a timeline and tabs `height` tall.
    pub fn tabs_height_in(&self, height: f32) -> f32 {
        clamp_share(self.tabs_height, TABS_MIN_H, TABS_MAX_SHARE, height)
    }

    /// Lets the summary's right edge (`panel`'s) be dragged.
    pub fn summary_edge(&mut self, ui: &egui::Ui, panel: Rect) {
        let strip = Rect::from_x_y_ranges(
            panel.right() - HANDLE_PX..=panel.right() + HANDLE_PX,
            panel.y_range(),
        );
        if let Some(dx) =
            drag_on(ui, strip, "summary edge", CursorIcon::ResizeHorizontal).map(|d| d.x)
        {
            self.summary_width = (panel.width() + dx).max(SUMMARY_MIN_W);
        }
    }

    /// Lets the tabs' top edge (`panel`'s) be dragged.
    pub fn tabs_edge(&mut self, ui: &egui::Ui, panel: Rect) {
        let strip = Rect::from_x_y_ranges(
            panel.x_range(),
            panel.top() - HANDLE_PX..=panel.top() + HANDLE_PX,
        );
        if let Some(dy) = drag_on(ui, strip, "tabs edge", CursorIcon::ResizeVertical).map(|d| d.y) {
            self.tabs_height = (panel.height() - dy).max(TABS_MIN_H);
        }
    }
}

/// `size` within `[min, share × room]` (`min` winning in a window too small for both).
fn clamp_share(size: f32, min: f32, share: f32, room: f32) -> f32 {
    size.min(share * room).max(min.min(room * 0.5))
}

/// A drag on `strip` this frame, if any (with the resize cursor while hovered).
fn drag_on(ui: &egui::Ui, strip: Rect, id: &str, cursor: CursorIcon) -> Option<egui::Vec2> {
    let response = ui.interact(strip, ui.scope_id().with(id), Sense::drag());
    if response.hovered() || response.dragged() {
        ui.ctx().set_cursor_icon(cursor);
    }
    response.dragged().then(|| response.drag_delta())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_size_too_large_for_the_window_is_shown_clamped_and_kept() {
        let split = Split {
            summary_width: 5_000.0,
            tabs_height: 5_000.0,
        };
        assert_eq!(split.tabs_height_in(900.0), 405.0);
        assert!((split.summary_width_in(1400.0) - 420.0).abs() < 1e-3);
        // A tiny first frame shows little, but the choice stays for the real window.
        assert!((Split::default().tabs_height_in(200.0) - 100.0).abs() < 1e-3);
        assert_eq!(Split::default().tabs_height_in(900.0), 380.0);
    }
}
