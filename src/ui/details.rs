//! The details panel: everything known about the selected op, range or call.

use eframe::egui;

use super::nccl_bytes::transfer_lines;
use super::timeline::{Selection, Timeline};
use crate::analysis::Window;
use crate::analysis::gaps::launch_nvtx_path;
use crate::analysis::intervals::ops_touching;
use crate::analysis::nccl_payload::KernelTransfers;
use crate::format::format_ns;
use crate::trace::{Device, NONE, OpKind, Trace};

/// `transfers`: what NCCL kernels moved, once worked out.
pub fn show(
    ui: &mut egui::Ui,
    trace: &Trace,
    timeline: &Timeline,
    transfers: Option<&KernelTransfers>,
) {
    ui.heading("Details");
    if let Some((a, b)) = timeline.window {
        ui.label(format!(
            "Current window: {} long (Shift+drag to change)",
            format_ns(b - a)
        ));
    }
    if let Some(gap) = &timeline.marks.selected_gap {
        gap_details(ui, trace, gap, timeline.full.0);
        ui.add_space(10.0);
    }
    let Some(selection) = timeline.selection else {
        ui.label("Click a kernel, NVTX range or API call on the timeline.");
        ui.add_space(8.0);
        ui.label("Zoom: Ctrl+wheel or W/S · pan: drag, wheel, A/D or Left/Right · rows: Up/Down · fit: F · drag on the ruler to zoom to a range · double-click an item to zoom to it.");
        return;
    };
    let origin = timeline.full.0;
    let rows = match selection {
        Selection::Op { device, op } => op_rows(trace, device, op, transfers, origin),
        Selection::Range { thread, range } => range_rows(trace, thread, range, origin),
        Selection::Running { thread, slice } => running_rows(trace, thread, slice, origin),
        Selection::OsCall { thread, call } => os_call_rows(trace, thread, call, origin, ui),
        Selection::Call { thread, call } => call_rows(trace, thread, call, origin),
    };
    // Two columns, names on the left; long values (kernel names) wrap in the right one.
    egui::Grid::new("details")
        .num_columns(2)
        .striped(true)
        .spacing([14.0, 4.0])
        .show(ui, |ui| {
            for (k, v) in rows {
                ui.label(egui::RichText::new(k).weak());
                ui.add(egui::Label::new(v).wrap());
                ui.end_row();
            }
        });
}

/// Rows of the details grid: a name and its value.
type Rows = Vec<(&'static str, String)>;

/// A time as an offset from the trace's start, with the export's own clock beside it.
fn at(t: i64, origin: i64) -> String {
    format!("{} (export's clock: {t} ns)", format_ns(t - origin))
}

/// "python (pid 12, tid 34)".
fn thread_text(t: &crate::trace::Thread) -> String {
    format!("{} (pid {}, tid {})", t.name, t.pid, t.tid)
}

/// A GPU op: what it is, its launch configuration and NCCL transfer, who launched it and
/// the idle time around it.
fn op_rows(
    trace: &Trace,
    device: crate::trace::DeviceIndex,
    op: crate::analysis::gaps::OpRef,
    transfers: Option<&KernelTransfers>,
    origin: i64,
) -> Rows {
    let mut rows = Rows::new();
    let mut row = |k: &'static str, v: String| rows.push((k, v));
    let at = |t: i64| at(t, origin);
    let dev = &trace.devices[device];
    let ops = &dev.streams[op.stream as usize].ops;
    let i = op.op as usize;
    row("name", trace.strings.get(ops.name[i]).to_string());
    row("kind", ops.kind[i].label().to_string());
    row("duration", format_ns(ops.duration(i)));
    row("start", at(ops.start[i]));
    row("device", dev.label());
    row("stream", dev.streams[op.stream as usize].id.to_string());
    row("correlation id", ops.correlation_id[i].to_string());
    if ops.kind[i] == OpKind::Graph {
        row("executable graph", ops.detail[i].to_string());
        row(
            "kernels",
            "not recorded (nsys --cuda-graph-trace=graph, the default); profile with --cuda-graph-trace=node to see them".into(),
        );
    }
    let transfer = transfers.and_then(|t| t.get(device, op.stream as usize, i));
    for (name, value) in transfer.map(transfer_lines).unwrap_or_default() {
        row(name, value);
    }
    if transfer.is_none() && ops.kind[i] == OpKind::Nccl && transfers.is_some_and(|t| !t.is_empty())
    {
        row(
            "bytes",
            "unknown: no NCCL call with a size found for it".into(),
        );
    }
    if let Some(config) = nsys_explorer_core::load::launch_config(trace, dev, ops, i) {
        match config {
            Ok(c) => {
                row(
                    "grid",
                    format!("{} × {} × {}", c.grid[0], c.grid[1], c.grid[2]),
                );
                row(
                    "block",
                    format!("{} × {} × {}", c.block[0], c.block[1], c.block[2]),
                );
                row("registers/thread", c.registers_per_thread.to_string());
                row(
                    "shared memory",
                    format!(
                        "{} B static, {} B dynamic",
                        c.static_shared_bytes, c.dynamic_shared_bytes
                    ),
                );
                row("demangled", c.demangled_name.clone());
                if let Some(node) = c.graph_node {
                    row("CUDA graph node", node.to_string());
                    let path = nsys_explorer_core::load::captured_nvtx(trace, &c);
                    row(
                        "captured in",
                        if path.is_empty() {
                            "not recorded (the graph was captured before the profile began)".into()
                        } else {
                            path.join(" > ")
                        },
                    );
                }
            }
            Err(why) => row("launch", why),
        }
    }
    let (thread, call) = (ops.launch_thread[i], ops.launch_call[i]);
    if call != NONE {
        let t = &trace.threads[thread as usize];
        let c = call as usize;
        row(
            "launched by",
            format!(
                "{} ({}), thread {}, {} before the kernel started",
                trace.strings.get(t.api.name[c]),
                format_ns(t.api.end[c] - t.api.start[c]),
                t.tid,
                format_ns(ops.start[i] - t.api.start[c])
            ),
        );
        let path: Vec<_> = launch_nvtx_path(trace, dev, op)
            .iter()
            .map(|id| trace.strings.get(*id))
            .collect();
        row(
            "NVTX at launch",
            if path.is_empty() {
                "(none)".into()
            } else {
                path.join(" > ")
            },
        );
    } else {
        row(
            "launched by",
            "unknown (no API call with this correlation id)".into(),
        );
    }
    let (before, after) = idle_around(dev, ops.start[i], ops.end[i]);
    row(
        "gap before",
        before.map_or("none (device busy)".into(), format_ns),
    );
    row(
        "gap after",
        after.map_or("none (device busy)".into(), format_ns),
    );
    rows
}

/// An NVTX range.
fn range_rows(trace: &Trace, thread: usize, range: usize, origin: i64) -> Rows {
    let mut rows = Rows::new();
    let mut row = |k: &'static str, v: String| rows.push((k, v));
    let at = |t: i64| at(t, origin);
    let t = &trace.threads[thread];
    let n = &t.nvtx;
    row("NVTX range", trace.strings.get(n.text[range]).to_string());
    row("duration", format_ns(n.end[range] - n.start[range]));
    row("start", at(n.start[range]));
    row("depth", n.depth[range].to_string());
    row("thread", thread_text(t));
    rows
}

/// A slice of a thread running on a CPU.
fn running_rows(trace: &Trace, thread: usize, slice: usize, origin: i64) -> Rows {
    let mut rows = Rows::new();
    let mut row = |k: &'static str, v: String| rows.push((k, v));
    let at = |t: i64| at(t, origin);
    let t = &trace.threads[thread];
    let sc = &t.scheduling;
    row("running on CPU", sc.cpu[slice].to_string());
    row("duration", format_ns(sc.end[slice] - sc.start[slice]));
    row("start", at(sc.start[slice]));
    row("thread", thread_text(t));
    rows
}

/// An OS runtime call and its backtrace ("being read…" while the call stacks are read
/// after the load: the frame asks to be drawn again).
fn os_call_rows(trace: &Trace, thread: usize, call: usize, origin: i64, ui: &egui::Ui) -> Rows {
    let mut rows = Rows::new();
    let mut row = |k: &'static str, v: String| rows.push((k, v));
    let at = |t: i64| at(t, origin);
    let t = &trace.threads[thread];
    let o = &t.osrt;
    row(
        "OS runtime call",
        format!("{}()", trace.strings.get(o.name[call])),
    );
    row("duration", format_ns(o.end[call] - o.start[call]));
    row("start", at(o.start[call]));
    row("returned", o.return_value[call].to_string());
    row("thread", thread_text(t));
    // nsys keeps a backtrace of calls over 80 µs (its default threshold).
    if let Some(stack) = o.stack_of(call) {
        // Read after the load: a frame never waits for them.
        if trace.call_stacks.get().is_none() {
            row("backtrace", "being read…".to_string());
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(200));
        } else {
            let frames = crate::analysis::cpu_samples::backtrace(trace, stack);
            let lines: Vec<String> = frames.iter().map(|f| f.label()).collect();
            row("backtrace", lines.join("\n"));
        }
    }
    rows
}

/// A CUDA API call.
fn call_rows(trace: &Trace, thread: usize, call: usize, origin: i64) -> Rows {
    let mut rows = Rows::new();
    let mut row = |k: &'static str, v: String| rows.push((k, v));
    let at = |t: i64| at(t, origin);
    let t = &trace.threads[thread];
    row("API call", trace.strings.get(t.api.name[call]).to_string());
    row("duration", format_ns(t.api.end[call] - t.api.start[call]));
    row("start", at(t.api.start[call]));
    row("correlation id", t.api.correlation_id[call].to_string());
    row("thread", thread_text(t));
    rows
}

/// Idle time on the device right before `start` and right after `end` (`None` when another
/// op covers that edge).
fn idle_around(device: &Device, start: i64, end: i64) -> (Option<i64>, Option<i64>) {
    let running_at = |t: i64| {
        device
            .streams
            .iter()
            .any(|s| ops_touching(s, Window::new(t, t + 1)).any(|i| s.ops.end[i] > t))
    };
    // Ops of one stream follow each other: the last one starting before `start` ends last.
    let last_end_before = device
        .streams
        .iter()
        .filter_map(|s| {
            let k = s.ops.start.partition_point(|&x| x < start);
            k.checked_sub(1).map(|j| s.ops.end[j])
        })
        .max();
    let first_start_after = device
        .streams
        .iter()
        .filter_map(|s| {
            s.ops
                .start
                .get(s.ops.start.partition_point(|&x| x < end))
                .copied()
        })
        .min();
    let before = last_end_before
        .filter(|_| !running_at(start - 1))
        .map(|e| start - e);
    let after = first_start_after
        .filter(|_| !running_at(end))
        .map(|s| s - end);
    (before.filter(|d| *d > 0), after.filter(|d| *d > 0))
}

/// The gap chosen in the gap table, the recurring list or a drill-down, in words.
fn gap_details(ui: &mut egui::Ui, trace: &Trace, gap: &crate::analysis::gaps::Gap, origin: i64) {
    let d = crate::analysis::recurring::describe(trace, gap, 5);
    ui.strong("Gap");
    egui::Grid::new("gap details")
        .num_columns(2)
        .striped(true)
        .spacing([14.0, 4.0])
        .show(ui, |ui| {
            let mut row = |k: &str, v: String| {
                ui.label(egui::RichText::new(k).weak());
                ui.add(egui::Label::new(v).wrap());
                ui.end_row();
            };
            row("GPU", gap.device.to_string());
            row(
                "start",
                format!(
                    "{} (export's clock: {} ns)",
                    format_ns(gap.start_ns - origin),
                    gap.start_ns
                ),
            );
            row("duration", format_ns(gap.duration_ns));
            row(
                "before",
                format!("{} (stream {})", d.before_name, d.before_stream),
            );
            row(
                "after",
                format!("{} (stream {})", d.after_name, d.after_stream),
            );
            row(
                "enclosing NVTX",
                d.enclosing_nvtx.clone().unwrap_or_else(|| "(none)".into()),
            );
            row("cause", crate::analysis::recurring::cause_text(trace, gap));
            row("what it means", gap.cause.help().to_string());
            row("NVTX before", d.before_nvtx.join(" > "));
            row("NVTX after", d.after_nvtx.join(" > "));
            let calls: Vec<String> = d
                .calls_during
                .iter()
                .map(|c| format!("{} {}", c.name, format_ns(c.duration_ns)))
                .collect();
            row(
                "calls during it",
                if calls.is_empty() {
                    "(none)".into()
                } else {
                    calls.join(", ")
                },
            );
        });
}
