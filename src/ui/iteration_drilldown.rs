//! The Iterations tab's drill-down of one iteration against the median one: the straggler,
//! the critical path, what made it differ, the breakdowns, GPU metrics, the kernels that
//! grew, its longest gaps and its collectives.

use eframe::egui::{self, RichText};

use super::iterations_panel::TOP;
use super::theme;
use super::timeline::{Margin, Nav, Timeline};
use crate::analysis::breakdown::{State, pct};
use crate::analysis::drilldown::Drilldown;
use crate::critical_path::report::{Item, PathSummary};
use crate::format::{format_ns, shorten};
use crate::trace::Trace;

pub(super) fn show_drilldown(
    ui: &mut egui::Ui,
    trace: &Trace,
    d: &Drilldown,
    path: Option<&PathSummary>,
    timeline: &Timeline,
    nav: &mut Vec<Nav>,
) {
    ui.heading(format!("Iteration {}", d.iteration));
    show_straggler(ui, trace, d);
    if let Some(p) = path {
        show_critical_path(ui, trace, p, nav);
    }
    ui.add_space(4.0);
    show_contributors(ui, trace, d);
    ui.add_space(4.0);
    show_breakdowns(ui, trace, d);
    show_metrics(ui, trace, d);
    ui.add_space(4.0);
    show_kernels_grown(ui, trace, d);
    ui.add_space(4.0);
    show_longest_gaps(ui, trace, d, timeline.full.0, nav);
    ui.add_space(4.0);
    show_collectives(ui, trace, d);
}

/// Who started the collectives last, and what its thread did before.
fn show_straggler(ui: &mut egui::Ui, trace: &Trace, d: &Drilldown) {
    if let Some(rank) = d.straggler_device {
        let mut text = format!("Straggler: {}", trace.gpu_name(rank));
        if let Some(a) = &d.straggler_activity {
            text += &format!(
                " — its CPU thread was {} before launching the collective",
                a.doing()
            );
            if !a.nvtx_path.is_empty() {
                text += &format!(" (in {})", a.nvtx_path.join(" > "));
            }
        }
        ui.label(RichText::new(text).strong().color(theme::STRAGGLER));
    }
}

fn show_contributors(ui: &mut egui::Ui, trace: &Trace, d: &Drilldown) {
    ui.strong("What made it differ from the median iteration, largest first");
    egui::Grid::new("drill contributors")
        .striped(true)
        .show(ui, |ui| {
            for h in ["GPU", "change", "what"] {
                ui.label(h);
            }
            ui.end_row();
            for dev in &d.devices {
                for c in dev.contributors.iter().take(4) {
                    ui.label(trace.gpu_name(c.device));
                    ui.label(crate::format::signed_ns(c.delta_ns));
                    // The default font has no arrow.
                    let text = c.description.replace('→', "->");
                    ui.label(shorten(&text, 160)).on_hover_text(&text);
                    ui.end_row();
                }
            }
        });
}

fn show_breakdowns(ui: &mut egui::Ui, trace: &Trace, d: &Drilldown) {
    ui.strong("Breakdown vs the median iteration");
    egui::Grid::new("drill breakdown")
        .striped(true)
        .show(ui, |ui| {
            ui.label("GPU");
            ui.label("this");
            ui.label("median");
            for s in State::ALL {
                ui.label(s.label());
            }
            ui.end_row();
            for dev in &d.devices {
                ui.label(trace.gpu_name(dev.device));
                ui.label(format_ns(dev.duration_ns));
                ui.label(format!(
                    "{} (iter {})",
                    format_ns(dev.reference_ns),
                    dev.reference_index
                ));
                for s in State::ALL {
                    ui.label(format!(
                        "{} vs {}",
                        format_ns(s.of(&dev.breakdown_ns)),
                        format_ns(s.of(&dev.reference_breakdown_ns))
                    ));
                }
                ui.end_row();
            }
        });
}

fn show_metrics(ui: &mut egui::Ui, trace: &Trace, d: &Drilldown) {
    // With GPU metrics: how busy each GPU was, against its median iteration.
    if d.devices.iter().any(|dev| !dev.metrics.is_empty()) {
        ui.add_space(4.0);
        ui.strong("GPU metrics vs the median iteration, largest change first")
            .on_hover_text("means of the device-wide samples over each iteration");
        egui::Grid::new("drill metrics")
            .striped(true)
            .show(ui, |ui| {
                for h in ["GPU", "metric", "this", "median"] {
                    ui.label(h);
                }
                ui.end_row();
                for dev in &d.devices {
                    for m in dev.metrics.iter().take(3) {
                        ui.label(trace.gpu_name(dev.device));
                        ui.label(crate::analysis::gpu_metrics::base_name(&m.name));
                        ui.label(format!("{:.0} %", m.mean));
                        ui.label(format!("{:.0} %", m.reference_mean));
                        ui.end_row();
                    }
                }
            });
    }
}

fn show_kernels_grown(ui: &mut egui::Ui, trace: &Trace, d: &Drilldown) {
    ui.strong("Kernels that grew most");
    egui::Grid::new("drill kernels")
        .striped(true)
        .show(ui, |ui| {
            for h in ["GPU", "kernel", "#", "this", "median", "growth"] {
                ui.label(h);
            }
            ui.end_row();
            for dev in &d.devices {
                for k in dev.kernels_grown.iter().take(5) {
                    ui.label(trace.gpu_name(dev.device));
                    ui.label(shorten(&k.name, 60));
                    ui.label(k.occurrence.to_string());
                    ui.label(format_ns(k.duration_ns));
                    ui.label(format_ns(k.reference_ns));
                    ui.label(format!("+{}", format_ns(k.growth_ns)));
                    ui.end_row();
                }
            }
        });
}

/// Each GPU's longest gaps in the iteration, a click going to one (times from `origin`).
fn show_longest_gaps(
    ui: &mut egui::Ui,
    trace: &Trace,
    d: &Drilldown,
    origin: i64,
    nav: &mut Vec<Nav>,
) {
    ui.strong("Its longest gaps");
    let mut go = None;
    for dev in &d.devices {
        ui.horizontal_wrapped(|ui| {
            ui.label(format!("{}:", trace.gpu_name(dev.device)));
            for g in dev.gaps.iter().take(6).map(|d| d.gap) {
                let text = format!(
                    "{} at {}",
                    format_ns(g.duration_ns),
                    format_ns(g.start_ns - origin)
                );
                if ui.link(text).clicked() {
                    go = Some(g);
                }
            }
        });
    }
    if let Some(g) = go {
        super::gap_finder::show_gap(&g, nav);
    }
}

fn show_collectives(ui: &mut egui::Ui, trace: &Trace, d: &Drilldown) {
    ui.strong("NCCL collectives: who started last");
    egui::Grid::new("drill collectives")
        .striped(true)
        .show(ui, |ui| {
            for h in ["#", "collective", "straggler", "late by", "its thread was"] {
                ui.label(h);
            }
            ui.end_row();
            for c in d.collectives.iter().take(TOP) {
                ui.label(c.index.to_string());
                ui.label(shorten(&c.name, 50));
                ui.label(trace.gpu_name(c.straggler_device));
                ui.label(format_ns(c.lateness_ns));
                let a = &c.activity;
                ui.label(match &a.longest_call {
                    Some(call) => format!("in {call} for {}", format_ns(a.longest_call_ns)),
                    None => format!("busy for {}", format_ns(a.since_previous_collective_ns)),
                });
                ui.end_row();
            }
        });
}

/// The iteration's critical path: where it ran (per GPU, by kind), the top items on it
/// (a click goes to the first), and the slack of the largest kernels off it.
fn show_critical_path(ui: &mut egui::Ui, trace: &Trace, p: &PathSummary, nav: &mut Vec<Nav>) {
    let wall = p.path.wall_ns();
    ui.add_space(4.0);
    ui.strong(format!(
        "Critical path: {} in {} segments (the yellow line)",
        format_ns(wall),
        p.path.segments.len()
    ))
    .on_hover_text("The chain of work, followed back from the iteration's end, in which each piece could not start earlier because of the one before it");
    egui::Grid::new("critical path by device")
        .striped(true)
        .show(ui, |ui| {
            ui.label("GPU");
            ui.label("on the path");
            ui.label("mostly");
            ui.end_row();
            for (d, total, kinds) in &p.by_device {
                ui.label(trace.gpu_name(trace.devices[d.0].id));
                ui.label(format!(
                    "{} ({:.0} %)",
                    format_ns(*total),
                    pct(*total, wall)
                ));
                let parts: Vec<String> = kinds
                    .iter()
                    .filter(|(_, ns)| **ns * 20 >= *total)
                    .map(|(k, ns)| format!("{} {}", k.label(), format_ns(*ns)))
                    .collect();
                ui.label(parts.join(", "));
                ui.end_row();
            }
        });
    // The top items of every kind in one list, the most time first: GPU work by kernel,
    // CPU time by NVTX range, calls by name.
    let mut items: Vec<(&str, &Item)> = p
        .top_kernels
        .iter()
        .map(|it| ("GPU", it))
        .chain(p.top_cpu.iter().map(|it| ("CPU in", it)))
        .chain(p.top_api.iter().map(|it| ("call", it)))
        .collect();
    items.sort_by_key(|(_, it)| std::cmp::Reverse(it.ns));
    ui.label("Most of it (a click goes to the first):");
    let mut go: Option<(crate::trace::DeviceIndex, i64, i64)> = None;
    for (what, it) in items.iter().take(TOP) {
        let text = format!(
            "{} ({:.0} %) {what} {} ×{}",
            format_ns(it.ns),
            pct(it.ns, wall),
            shorten(&it.name, 56),
            it.count
        );
        if ui.link(text).on_hover_text(&it.name).clicked() {
            go = it.first;
        }
    }
    if let Some((device, start, end)) = go {
        nav.push(Nav::ZoomTo {
            start,
            end,
            margin: Margin::Wide,
        });
        nav.push(Nav::Highlight(Some((device, start, end))));
        nav.push(Nav::RevealDevice(device));
    }
}
