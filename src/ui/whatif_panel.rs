//! The What-if tab: pick a change (syncs to remove, kernels to scale, NCCL on its own
//! stream), replay the trace with it on a worker, and see each GPU's predicted iteration
//! time and span beside the measured, with the predicted idle time drawn over the real
//! timeline as a ghost.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use eframe::egui::{self, RichText};

use super::task::{Task, take_answer};
use super::timeline::{Nav, Overlay};
use crate::analysis::Window;
use crate::analysis::breakdown::{State, state_intervals};
use crate::format::{format_ns, signed_ns};
use crate::overview::{Options, Overview};
use crate::trace::{DeviceIndex, Trace};
use crate::whatif::Change;
use crate::whatif::report::{WhatIf, max_error, what_if_progress};

/// A replay's answer: the comparison, and each GPU's predicted idle intervals.
pub struct Answer {
    pub what_if: WhatIf,
    pub predicted_idle: Vec<(Vec<i64>, Vec<i64>)>,
}

#[derive(Default)]
pub struct WhatIfPanel {
    pub remove_sync: String,
    pub scale_regex: String,
    pub scale_factor: f64,
    pub nccl_own_stream: bool,
    /// A change filled in from a finding ("Try it"), replayed as it is: (its title, it).
    pub preset: Option<(String, Change)>,
    pub error: Option<String>,
    pub answer: Option<Arc<Answer>>,
    pending: Option<Task<(), Result<Answer, String>>>,
    /// How far the replay in flight is, in thousandths (written by the worker).
    progress: Arc<AtomicU32>,
    /// The GPU whose predicted idle is drawn over the timeline.
    pub ghost: Option<usize>,
}

impl WhatIfPanel {
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }

    /// Fills in `change` (a finding's) and replays it.
    pub fn try_change(
        &mut self,
        title: String,
        change: Change,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        ctx: &egui::Context,
    ) {
        self.remove_sync = change.remove_sync.join(" ");
        self.nccl_own_stream = change.nccl_own_stream;
        if let Some((re, f)) = change.scale_kernels.first() {
            self.scale_regex = re.as_str().to_string();
            self.scale_factor = *f;
        } else {
            self.scale_regex.clear();
        }
        self.preset = Some((title, change));
        self.answer = None;
        self.run(trace, overview, ctx);
    }

    /// The change the fields describe (a finding's as it came, while not edited).
    pub fn change(&self) -> Result<Change, String> {
        if let Some((_, change)) = &self.preset {
            return Ok(change.clone());
        }
        let mut change = Change {
            nccl_own_stream: self.nccl_own_stream,
            ..Default::default()
        };
        let sync = self.remove_sync.trim();
        if !sync.is_empty() {
            change.remove_sync.push(sync.to_string());
        }
        let re = self.scale_regex.trim();
        if !re.is_empty() {
            let factor = if self.scale_factor > 0.0 {
                self.scale_factor
            } else {
                1.0
            };
            let re = regex::Regex::new(re).map_err(|e| format!("kernel regex: {e}"))?;
            change.scale_kernels.push((re, factor));
        }
        if change.is_empty() {
            return Err("Pick a change first: a sync to remove, kernels to scale, or NCCL on its own stream.".into());
        }
        Ok(change)
    }

    /// Starts the replay of `change` on a worker.
    pub fn run(&mut self, trace: &Arc<Trace>, overview: &Arc<Overview>, ctx: &egui::Context) {
        match self.change() {
            Err(e) => self.error = Some(e),
            Ok(change) => {
                self.error = None;
                let (trace, overview) = (trace.clone(), overview.clone());
                let progress = self.progress.clone();
                progress.store(0, Ordering::Relaxed);
                let repaint = ctx.clone();
                self.pending = Some(Task::compute((), Some(ctx), move |_| {
                    let mut predicted_idle = Vec::new();
                    let report = |f: f32| {
                        progress.store((f * 1000.0) as u32, Ordering::Relaxed);
                        repaint.request_repaint();
                    };
                    let look = |r: &Trace| {
                        predicted_idle = r
                            .devices
                            .iter()
                            .map(|d| match d.kernel_window() {
                                Some((a, b)) => state_intervals(d, Window::new(a, b), State::Idle),
                                None => (Vec::new(), Vec::new()),
                            })
                            .collect();
                    };
                    let w = what_if_progress(
                        &trace,
                        &overview,
                        &change,
                        &Options::default(),
                        look,
                        &report,
                    );
                    Ok(Answer {
                        what_if: w,
                        predicted_idle,
                    })
                }));
            }
        }
    }

    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        nav: &mut Vec<Nav>,
    ) {
        if let Some(((), answer)) = take_answer(&mut self.pending) {
            match answer {
                Ok(a) => self.answer = Some(Arc::new(a)),
                Err(e) => self.error = Some(e),
            }
        }
        self.show_preset(ui);
        self.show_form(ui, trace, overview);
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().warn_fg_color, e);
        }
        let Some(answer) = self.answer.clone() else {
            ui.label("The trace is replayed with the change: every launch, sync and collective moves as what it depends on moves. Replaying it unchanged reproduces it; the error is shown with the answer.");
            return;
        };
        let w = &answer.what_if;
        ui.label(format!(
            "Replayed unchanged, the model reproduces this trace to {:.3} %.",
            max_error(w)
        ));
        self.show_answer(ui, trace, &answer, nav);
        for a in &w.assumptions {
            ui.label(RichText::new(format!("Assumed: {a}.")).small());
        }
    }

    /// The change a finding or the selection asked for, with a way back to the form.
    fn show_preset(&mut self, ui: &mut egui::Ui) {
        if let Some((title, change)) = &self.preset {
            let mut clear = false;
            ui.horizontal(|ui| {
                ui.label(RichText::new(title.replace('→', "->")).strong());
                clear = ui.small_button("Edit instead").clicked();
            });
            ui.label(
                RichText::new(format!("what-if {}", change.to_args().join(" ")))
                    .monospace()
                    .small(),
            );
            if clear {
                self.preset = None;
            }
        }
    }

    /// The change's fields and the Replay button, with the replay's progress.
    fn show_form(&mut self, ui: &mut egui::Ui, trace: &Arc<Trace>, overview: &Arc<Overview>) {
        ui.horizontal_wrapped(|ui| {
            ui.label("Remove syncs in");
            ui.add(
                egui::TextEdit::singleline(&mut self.remove_sync)
                    .hint_text("call or NVTX text, e.g. aten::item")
                    .desired_width(180.0),
            );
            ui.separator();
            ui.label("Scale kernels");
            ui.add(
                egui::TextEdit::singleline(&mut self.scale_regex)
                    .hint_text("regex, e.g. flash_fwd")
                    .desired_width(140.0),
            );
            ui.label("×");
            if self.scale_factor == 0.0 {
                self.scale_factor = 0.5;
            }
            ui.add(
                egui::DragValue::new(&mut self.scale_factor)
                    .speed(0.05)
                    .range(0.01..=100.0),
            );
            ui.separator();
            ui.checkbox(&mut self.nccl_own_stream, "NCCL on its own stream");
            ui.separator();
            let busy = self.busy();
            if ui.add_enabled(!busy, egui::Button::new("Replay")).clicked() {
                self.run(trace, overview, ui.ctx());
            }
            if busy {
                crate::ui::busy(ui);
                let done = self.progress.load(Ordering::Relaxed) as f32 / 10.0;
                ui.label(format!("Replaying the trace… {done:.0} %"));
            }
        });
    }

    /// Each GPU's measured and predicted iteration and span, and its predicted idle to draw
    /// over the timeline.
    fn show_answer(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Trace,
        answer: &Arc<Answer>,
        nav: &mut Vec<Nav>,
    ) {
        let w = &answer.what_if;
        egui::Grid::new("what-if")
            .striped(true)
            .num_columns(8)
            .show(ui, |ui| {
                for h in [
                    "GPU",
                    "iteration",
                    "predicted",
                    "delta",
                    "span",
                    "predicted",
                    "delta",
                    "ghost",
                ] {
                    ui.strong(h);
                }
                ui.end_row();
                for (k, (m, p)) in w.measured.iter().zip(&w.predicted).enumerate() {
                    ui.label(trace.gpu_name(m.device));
                    let it = |x: Option<i64>| x.map_or("–".to_string(), format_ns);
                    ui.label(it(m.iteration_median_ns));
                    ui.label(it(p.iteration_median_ns));
                    ui.strong(
                        m.iteration_median_ns
                            .zip(p.iteration_median_ns)
                            .map_or("–".to_string(), |(a, b)| signed_ns(b - a)),
                    );
                    ui.label(format_ns(m.total_ns));
                    ui.label(format_ns(p.total_ns));
                    ui.strong(signed_ns(p.total_ns - m.total_ns));
                    let on = self.ghost == Some(k);
                    if ui
                        .selectable_label(on, "predicted idle")
                        .on_hover_text("Draw this GPU's predicted idle time over the real timeline")
                        .clicked()
                    {
                        self.ghost = (!on).then_some(k);
                        let overlay = self.ghost.and_then(|k| {
                            let (s, e) = answer.predicted_idle.get(k)?.clone();
                            let mut o = Overlay::new(DeviceIndex(k), State::Idle, s, e);
                            o.predicted = true;
                            Some(o)
                        });
                        nav.push(Nav::Overlay(overlay));
                    }
                    ui.end_row();
                }
            });
    }
}
