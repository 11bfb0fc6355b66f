//! The search bar (Ctrl+F): query, regex switch, match count, previous/next.

use super::Timeline;
use crate::trace::Trace;
use crate::ui::timeline::search::Mode;
use eframe::egui;
use std::sync::Arc;

impl Timeline {
    /// The search bar (Ctrl+F): query, regex switch, match count, previous/next.
    pub(super) fn search_bar(&mut self, ui: &mut egui::Ui, trace: &Arc<Trace>) {
        let ctrl_f = ui.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::F));
        if ctrl_f {
            self.search.open = true;
        }
        if !self.search.open {
            return;
        }
        let mut step = None;
        let mut found = None;
        ui.horizontal(|ui| {
            ui.label("Find");
            let edit = ui.add(
                egui::TextEdit::singleline(&mut self.search.query)
                    .id_salt("search")
                    .hint_text("kernel, NVTX range or API call")
                    .desired_width(260.0),
            );
            if ctrl_f {
                edit.request_focus();
            }
            if edit.changed() && matches!(self.search.mode, Mode::Exact | Mode::Template) {
                self.search.mode = Mode::Substring;
            }
            if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                step = Some(!ui.input(|i| i.modifiers.shift));
                edit.request_focus();
            }
            let mut regex = self.search.mode == Mode::Regex;
            if ui.checkbox(&mut regex, "regex").changed() {
                self.search.mode = if regex { Mode::Regex } else { Mode::Substring };
            }
            if ui.button("Previous").clicked() {
                step = Some(false);
            }
            if ui.button("Next").clicked() {
                step = Some(true);
            }
            if let Some(m) = self.search.run(trace, ui.ctx()) {
                found = Some(m);
            }
            if self.search.searching() {
                crate::ui::busy(ui);
            }
            match (&self.search.error, self.search.current) {
                (Some(e), _) => {
                    ui.colored_label(ui.visuals().warn_fg_color, e);
                }
                (None, Some(i)) => {
                    ui.label(format!(
                        "{} of {} matches",
                        i + 1,
                        self.search.matches.len()
                    ));
                }
                (None, None)
                    if self.search.matches.len() >= crate::ui::timeline::search::MAX_MATCHES =>
                {
                    ui.label(format!(
                        "the first {} matches (more not kept)",
                        self.search.matches.len()
                    ));
                }
                (None, None) => {
                    ui.label(format!("{} matches", self.search.matches.len()));
                }
            }
            if ui.button("Close").clicked() {
                self.search.open = false;
            }
        });
        if let Some(forward) = step {
            found = found.or(self.search.step(forward));
        }
        if let Some(m) = found {
            self.go_to(m);
        }
    }
}
