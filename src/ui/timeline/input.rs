//! Input on the timeline: wheel, pinch and keys zoom and pan; drags pan, zoom to a ruler
//! range, set the current window (Shift) or measure a span (Ctrl); Escape.

use super::Timeline;
use eframe::egui;
use eframe::egui::Rect;

/// What a drag on the timeline does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DragKind {
    Pan,
    /// On the ruler: zoom to the dragged range.
    Zoom,
    /// With Shift: set the current window.
    Window,
    /// With Ctrl: measure the dragged span.
    Measure,
}

impl Timeline {
    pub(super) fn handle_input(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        plot: Rect,
        ruler: Rect,
    ) {
        self.on_escape(ui);
        // Times under the pointer from the view as the frame began: every input of a frame
        // reads it alike, whatever an earlier one changed.
        let (v0, v1) = self.view;
        let t_of = |x: f32| v0 + ((x - plot.left()) / plot.width()) as f64 * (v1 - v0);
        self.on_wheel(ui, response, plot, (v0, v1), &t_of);
        self.on_keys(ui, response, (v0, v1));
        self.on_drag(ui, response, plot, ruler, &t_of);
    }

    fn on_escape(&mut self, ui: &egui::Ui) {
        // Escape closes Find first, then drops a measured span, then the selected range,
        // then clears every mark at once: what the panels marked (idle overlay, gap,
        // iteration, finding, critical path, samples), Find's matches and the selected item
        // with its launch arrow.
        if ui.input(|i| i.key_pressed(egui::Key::Escape)) {
            if self.search.open {
                self.search.open = false;
            } else if self.marks.measure.is_some() {
                self.marks.measure = None;
            } else if self.window.is_some() {
                self.window = None;
            } else {
                self.marks = super::Marks::default();
                self.search.clear();
                self.selection = None;
            }
        }
    }

    /// The wheel (or a pinch) over the plot: zoom about the pointer, pan, scroll the rows.
    fn on_wheel(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        plot: Rect,
        (v0, v1): (f64, f64),
        t_of: &dyn Fn(f32) -> f64,
    ) {
        if response.hovered() {
            let (scroll, zoom, mods) =
                ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta(), i.modifiers));
            let at = response.hover_pos().map_or((v0 + v1) / 2.0, |p| t_of(p.x));
            if zoom != 1.0 {
                self.zoom(1.0 / zoom as f64, at);
            } else if mods.command && scroll.y != 0.0 {
                self.zoom((-scroll.y as f64 / 200.0).exp(), at);
            } else {
                if scroll.x != 0.0 {
                    self.pan(-scroll.x as f64 / plot.width() as f64);
                }
                self.scroll_y = (self.scroll_y - scroll.y).max(0.0);
            }
        }
    }

    fn on_keys(&mut self, ui: &egui::Ui, response: &egui::Response, (v0, v1): (f64, f64)) {
        // Keys move the view wherever the pointer is, unless a widget has the keyboard (a
        // text field, a focused button); the second timeline of a comparison only under
        // the pointer, so that one press does not move both.
        let keys_anywhere =
            self.settings.keys_anywhere && ui.ctx().memory(|m| m.focused().is_none());
        if response.hovered() || response.has_focus() || keys_anywhere {
            // A press moves one step (a quarter of the view in zoom, a tenth across, a row
            // up or down); held, the view keeps moving at four steps a second, smoothly
            // whatever the frame rate.
            use egui::Key;
            let (zoom_in, zoom_out, left, right, up, down, fit, mods) = ui.input(|i| {
                (
                    KeyMotion::of(i, &[Key::W]),
                    KeyMotion::of(i, &[Key::S]),
                    KeyMotion::of(i, &[Key::A, Key::ArrowLeft]),
                    KeyMotion::of(i, &[Key::D, Key::ArrowRight]),
                    KeyMotion::of(i, &[Key::ArrowUp]),
                    KeyMotion::of(i, &[Key::ArrowDown]),
                    i.key_pressed(Key::F),
                    i.modifiers.any(),
                )
            });
            if !mods {
                let mid = (v0 + v1) / 2.0;
                let zoom = zoom_in.steps() - zoom_out.steps();
                if zoom != 0.0 {
                    self.zoom(ZOOM_STEP.powf(zoom), mid);
                }
                let across = right.steps() - left.steps();
                if across != 0.0 {
                    self.pan(PAN_STEP * across);
                }
                let rows = down.steps() - up.steps();
                if rows != 0.0 {
                    self.scroll_y = (self.scroll_y + rows as f32 * super::ROW_H).max(0.0);
                }
                if fit {
                    self.fit();
                }
                let held = [zoom_in, zoom_out, left, right, up, down]
                    .iter()
                    .any(|k| k.held);
                if held {
                    ui.ctx().request_repaint();
                }
            }
        }
    }

    fn on_drag(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        plot: Rect,
        ruler: Rect,
        t_of: &dyn Fn(f32) -> f64,
    ) {
        // Drag: on the ruler, zoom to the dragged range; with Shift, set the current window;
        // with Ctrl, measure; otherwise pan.
        // Where the button went down: a drag is known only once the pointer has moved.
        if response.drag_started()
            && let Some(p) = ui
                .input(|i| i.pointer.press_origin())
                .or(response.interact_pointer_pos())
        {
            let mods = ui.input(|i| i.modifiers);
            let kind = if mods.shift {
                DragKind::Window
            } else if mods.command {
                DragKind::Measure
            } else if ruler.contains(p) {
                DragKind::Zoom
            } else {
                DragKind::Pan
            };
            self.input.drag = Some((p.x, kind));
        }
        match (self.input.drag, response.interact_pointer_pos()) {
            (Some((_, DragKind::Pan)), _) if response.dragged() => {
                let dx = response.drag_delta().x;
                self.pan(-dx as f64 / plot.width() as f64);
            }
            (Some((x0, kind)), Some(p)) if response.dragged() || response.drag_stopped() => {
                let (a, b) = (t_of(x0.min(p.x)), t_of(x0.max(p.x)));
                let wide = (p.x - x0).abs() > 4.0;
                match kind {
                    DragKind::Measure => self.marks.measure = wide.then_some((a, b)),
                    DragKind::Window if wide => {
                        self.input.pending_window = Some((a as i64, b as i64))
                    }
                    DragKind::Zoom if wide => self.input.pending_zoom = Some((a, b)),
                    _ => {}
                }
                if response.drag_stopped() {
                    if let Some(w) = self.input.pending_window.take() {
                        self.window = Some(w);
                    }
                    if let Some(v) = self.input.pending_zoom.take() {
                        self.view = v;
                    }
                }
            }
            _ => {}
        }
        if response.drag_stopped() {
            self.input.drag = None;
        }
    }
}

/// The view's width after one zoom step of W (S: its inverse).
const ZOOM_STEP: f64 = 0.75;
/// One pan step of A/D or ←/→, in views.
const PAN_STEP: f64 = 0.1;
/// Steps a second while a key is held.
const HELD_STEPS_PER_S: f64 = 4.0;

/// A key's motion this frame: pressed now (one step), or held since an earlier frame
/// (steps in proportion to the time).
#[derive(Clone, Copy)]
struct KeyMotion {
    pressed: bool,
    held: bool,
    dt: f64,
}

impl KeyMotion {
    fn of(i: &egui::InputState, keys: &[egui::Key]) -> KeyMotion {
        let pressed = i.events.iter().any(|e| {
            matches!(e, egui::Event::Key { key, pressed: true, repeat: false, .. } if keys.contains(key))
        });
        let held = keys.iter().any(|k| i.key_down(*k));
        KeyMotion {
            pressed,
            held,
            dt: (i.stable_dt as f64).min(0.1),
        }
    }

    fn steps(&self) -> f64 {
        if self.pressed {
            1.0
        } else if self.held {
            HELD_STEPS_PER_S * self.dt
        } else {
            0.0
        }
    }
}
