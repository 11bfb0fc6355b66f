//! The `report` command's output: the load report, per-device counts and every analysis,
//! as JSON (keys documented in docs/cli.md) or as a short diagnosis in words.

use std::fmt::Write;

use rayon::prelude::*;
use serde_json::{Value, json};

use crate::analysis::breakdown::pct;
use crate::analysis::iterations::Iterations;
use crate::analysis::nccl_payload::NcclPayload;
use crate::analysis::recurring::{activity, cause_text, describe};
use crate::findings::Finding;
use crate::findings::text::{findings_json, findings_text};
use crate::format::{format_bytes, format_ns, plural, signed_ns};
use crate::load::LoadReport;
use crate::load::many::FileInfo;
use crate::overview::Options;
use crate::overview::{Overview, selected_devices};
use crate::trace::{DeviceId, OpKind, Trace};

pub fn report_json(
    trace: &Trace,
    report: &LoadReport,
    overview: &Overview,
    findings: &[Finding],
    options: &Options,
) -> Value {
    crate::profile_scope!("report: JSON");
    let devices = devices_json(trace, overview, options);
    let (top_gaps, recurring, single) = gap_lists_json(trace, overview, options);
    let mut out = json!({
        "file": report.file,
        "time_origin_ns": trace.time_origin(),
        "nsys_version": trace.info.nsys_version,
        "schema_version": trace.info.schema_version,
        "load": {
            "seconds": report.seconds,
            "file_bytes": report.file_bytes,
            "tables": report.tables,
            "missing_tables": report.missing_tables,
            "missing_effects": report.missing_effects,
            "skipped_rows": report.skipped_rows,
            "notes": report.notes,
            "export": report.export,
        },
        "findings": findings_json(trace, findings),
        "devices": devices,
        "gaps": {
            "min_gap_ns": options.min_gap_ns,
            "count": overview.gaps.len(),
            "total_ns": overview.gaps.iter().map(|g| g.duration_ns).sum::<i64>(),
            "top": top_gaps,
        },
        "recurring_gaps": recurring,
        "single_gaps": single,
        "iterations": iterations_json(&overview.iterations, options),
        "drilldown": overview.drilldown.as_ref().map(|d| {
            let mut v = serde_json::to_value(d).unwrap_or(Value::Null);
            if let Some(c) = v.get_mut("collectives").and_then(Value::as_array_mut) {
                c.truncate(options.top);
            }
            v
        }),
        "critical_path": overview
            .slowest_path(trace)
            .map(|p| crate::critical_path::report::totals_json(trace, p)),
        "kernels_top": overview.kernels.iter().take(options.top).collect::<Vec<_>>(),
        "cpu_sync": overview.cpu_sync.iter().take(options.top).collect::<Vec<_>>(),
        "nccl": overview.nccl,
        "memory": overview.memory,
        "nvtx_gpu": overview.nvtx_gpu,
        "nccl_wait": {
            "per_device": overview.nccl_wait.per_device,
            "late": overview.nccl_wait.late.iter().take(options.top).collect::<Vec<_>>(),
        },
        "nccl_payload": nccl_payload_json(trace, &overview.nccl_payload, options.top),
    });
    add_optional_sections(&mut out, trace, overview, options);
    out
}

/// Puts `findings` in a report written by [`report_json`] without them (the report's other
/// parts are written while the findings are replayed).
pub fn set_findings_json(report: &mut Value, trace: &Trace, findings: &[Finding]) {
    report["findings"] = findings_json(trace, findings);
}

/// Each selected device: its counts, windows, breakdown and same-stream diagnosis.
fn devices_json(trace: &Trace, overview: &Overview, options: &Options) -> Vec<Value> {
    // In parallel: each device's counts read all its ops.
    selected_devices(trace, options)
        .par_iter()
        .map(|d| {
            let summary = overview.devices.iter().find(|s| s.device == d.id);
            json!({
                "id": d.id,
                "name": d.name,
                "kernels": d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl),
                "nccl_kernels": d.count_of(OpKind::Nccl),
                "graph_executions": d.count_of(OpKind::Graph),
                "memcpys": d.count_of(OpKind::Memcpy),
                "memsets": d.count_of(OpKind::Memset),
                "streams": d.streams.len(),
                "window_ns": d.kernel_window().map(|(s, e)| [s, e]),
                "analysed_window_ns": summary.map(|s| [s.window.start, s.window.end]),
                "breakdown_ns": summary.map(|s| s.breakdown),
                "idle_no_kernel_ns": summary.map(|s| s.breakdown.idle + s.breakdown.memory_only),
                "same_stream": summary.and_then(|s| s.same_stream).map(|ss| json!({
                    "stream": ss.stream,
                    "nccl_pct": ss.nccl_pct,
                    "compute_pct": ss.compute_pct,
                    "nccl_hidden_pct": ss.hidden_pct,
                    "diagnosis": ss.sentence(),
                })),
            })
        })
        .collect()
}

/// The longest gaps, the recurring patterns (each with its longest gap) and the single
/// gaps, `options.top` of each.
fn gap_lists_json(
    trace: &Trace,
    overview: &Overview,
    options: &Options,
) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let gap_json = |i: usize| gap_json(trace, &overview.gaps[i]);
    crate::profile_scope!("report: JSON gaps");
    // Beside each other: the longest gaps are picked among all gaps, and a pattern's
    // longest among all its members (millions each).
    let (top_gaps, recurring): (Vec<Value>, Vec<Value>) = rayon::join(
        || {
            overview
                .longest_gaps(options.top)
                .into_iter()
                .map(gap_json)
                .collect()
        },
        || {
            overview.recurring[..overview.recurring.len().min(options.top)]
                .par_iter()
                .map(|r| {
                    let longest = r
                        .members
                        .iter()
                        .copied()
                        .max_by_key(|&i| overview.gaps[i as usize].duration_ns);
                    json!({
                        "signature": r.signature,
                        "count": r.count,
                        "total_ns": r.total_ns,
                        "median_ns": r.median_ns,
                        "longest": longest.map(|i| gap_json(i as usize)),
                    })
                })
                .collect()
        },
    );
    let single: Vec<Value> = overview
        .single_gaps
        .iter()
        .take(options.top)
        .map(|&i| gap_json(i as usize))
        .collect();
    (top_gaps, recurring, single)
}

/// The sections a report has only when the trace holds what they need: graph capture use
/// and CUDA graphs, GPU metrics, device memory, CPU samples, OS runtime calls.
fn add_optional_sections(out: &mut Value, trace: &Trace, overview: &Overview, options: &Options) {
    crate::profile_scope!("report: JSON tail");
    // Each reads every op: the two side by side.
    let (capture_use, cuda_graphs) = rayon::join(
        || crate::analysis::capture_use::capture_use(trace),
        || crate::analysis::graphs::cuda_graphs(trace),
    );
    out["capture_use"] = json!(capture_use);
    // Absent unless the capture sampled the GPUs' counters (`--gpu-metrics-devices`).
    let window = |id| overview.analysed_window(id);
    if let Some(m) = crate::analysis::gpu_metrics::gpu_metrics(trace, &window, options.top) {
        out["gpu_metrics"] = json!(m);
    }
    // Absent unless the capture recorded device memory (`--cuda-memory-usage=true`).
    let memory = crate::analysis::memory_usage::memory_usage(trace, &overview.iterations);
    if !memory.is_empty() {
        out["memory_usage"] = json!({ "per_device": memory });
    }
    // Absent when the capture recorded no call stacks.
    if let Some(p) = crate::analysis::cpu_samples::cpu_profile(trace, options.top) {
        out["cpu_samples"] = json!(p);
    }
    let longest = crate::analysis::cpu_samples::longest_os_calls(trace, options.top);
    if !longest.is_empty() {
        out["osrt"] = json!({ "longest": longest });
    }
    // Absent when the run launched no CUDA graph.
    if let Some(g) = cuda_graphs {
        out["cuda_graphs"] = cuda_graphs_json(trace, &g, options.top);
    }
}

/// A gap as `report --json` lists it: the ops either side with their streams and NVTX
/// paths, the cause in words, what the CPU did meanwhile.
pub fn gap_json(trace: &Trace, gap: &crate::analysis::gaps::Gap) -> Value {
    let g = describe(trace, gap, 3);
    let mut v = json!({
        "device": g.gap.device,
        "start_ns": g.gap.start_ns,
        "duration_ns": g.gap.duration_ns,
        "before": g.before_name,
        "after": g.after_name,
        "before_stream": g.before_stream,
        "after_stream": g.after_stream,
        "before_nvtx": g.before_nvtx,
        "after_nvtx": g.after_nvtx,
        "enclosing_nvtx": g.enclosing_nvtx,
        "cause": g.gap.cause.label(),
        "cause_text": cause_text(trace, &g.gap),
        "cpu_activity": g.activity,
        "calls_during": g.calls_during,
    });
    if let Some(s) = &g.cpu_samples {
        v["cpu_samples"] = json!(s);
    }
    v
}

fn cuda_graphs_json(trace: &Trace, g: &crate::analysis::graphs::CudaGraphs, top: usize) -> Value {
    json!({
        "trace_level": g.trace_level,
        "launches": g.launches,
        "kernels": g.kernels,
        "gpu_pct": g.gpu_pct,
        "note": g.note,
        "per_device": g.per_device.iter().map(|d| json!({
            "device": device_name(trace, d.device),
            "launches": d.launches,
            "gpu_ns": d.gpu_ns,
        })).collect::<Vec<_>>(),
        "graphs": g.graphs.iter().take(top).collect::<Vec<_>>(),
    })
}

fn iterations_json(it: &Iterations, options: &Options) -> Value {
    let per_device: Vec<&_> = it
        .per_device
        .iter()
        .filter(|d| options.device.is_none_or(|id| d.device == id))
        .collect();
    json!({
        "marker": it.marker,
        "source": it.source,
        "heuristic": it.heuristic,
        "count": it.count(),
        "slowest_index": it.slowest_index,
        "aligned": it.aligned,
        "per_device": per_device,
    })
}

/// `report` of several files opened as one: the one-file report of the merged trace (its
/// load section per file), `files` with each file's clock alignment, and every device
/// named `FILE:ID`.
pub fn many_json(
    trace: &Trace,
    reports: &[LoadReport],
    files: &[FileInfo],
    overview: &Overview,
    findings: &[Finding],
    options: &Options,
) -> Value {
    let combined = LoadReport::combined(reports);
    let mut v = report_json(trace, &combined, overview, findings, options);
    v["file"] = json!(
        files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect::<Vec<_>>()
    );
    v["files"] = json!(
        files
            .iter()
            .zip(reports)
            .map(|(f, r)| {
                json!({
                    "path": f.path.display().to_string(),
                    "name": f.name,
                    "offset_ns": f.offset_ns,
                    "utc_offset_ns": f.utc_offset_ns,
                    "alignment": f.alignment.label(),
                    "residual_ns": f.residual_ns,
                    "collectives": f.collectives,
                    "devices": f.devices.iter().map(|&id| device_name(trace, id)).collect::<Vec<_>>(),
                    "load_seconds": r.seconds,
                })
            })
            .collect::<Vec<_>>()
    );
    name_devices(&mut v, trace, false);
    v
}

pub use crate::trace::device_name;

mod text;
pub use text::*;

/// Every device id in `v` replaced by its `FILE:ID`: the values of `device`-like keys, and
/// `id` in the `devices` list.
fn name_devices(v: &mut Value, trace: &Trace, in_devices: bool) {
    const KEYS: [&str; 3] = ["device", "straggler_device", "after_device"];
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                let is_id = KEYS.contains(&k.as_str()) || (in_devices && k == "id");
                match x.as_u64() {
                    Some(id) if is_id => *x = device_name(trace, DeviceId(id as u32)),
                    _ => name_devices(x, trace, k == "devices"),
                }
            }
        }
        Value::Array(items) => {
            for x in items {
                name_devices(x, trace, in_devices);
            }
        }
        _ => {}
    }
}

/// A device as the JSON names it: its id, or `FILE:ID` in a trace of several files.
fn device_json(trace: &Trace, id: DeviceId) -> Value {
    match trace.device(id).and_then(|d| d.key.clone()) {
        Some(key) => Value::String(key),
        None => json!(id),
    }
}

/// The analysis' lists hold `KEPT_TOP` or more: the report shows its `top`.
pub fn nccl_payload_json(trace: &Trace, p: &NcclPayload, top: usize) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
    if let Some(list) = v.get_mut("slowest").and_then(Value::as_array_mut) {
        list.truncate(top);
    }
    let rename = |v: &mut Value| {
        if let Some(d) = v.get("device").and_then(Value::as_u64) {
            v["device"] = device_json(trace, DeviceId(d as u32));
        }
    };
    for key in ["per_device", "slowest"] {
        if let Some(list) = v.get_mut(key).and_then(Value::as_array_mut) {
            list.iter_mut().for_each(rename);
        }
    }
    if let Some(list) = v.get_mut("communicators").and_then(Value::as_array_mut) {
        for c in list {
            let devices: Vec<Value> = c["devices"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|d| device_json(trace, DeviceId(d.as_u64().unwrap_or(0) as u32)))
                        .collect()
                })
                .unwrap_or_default();
            c["devices"] = Value::Array(devices);
        }
    }
    v
}

fn gbps(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |v| format!("{v:.1} GB/s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_unit_that_fits() {
        assert_eq!(format_ns(812), "812 ns");
        assert_eq!(format_ns(3_400), "3.4 µs");
        assert_eq!(format_ns(12_500_000), "12.5 ms");
        assert_eq!(format_ns(3_087_000_000), "3.087 s");
        assert_eq!(signed_ns(-3_100_000), "-3.1 ms");
        assert_eq!(signed_ns(518_200_000), "+518.2 ms");
        assert_eq!(
            (plural(1, "stream"), plural(2, "stream")),
            ("1 stream".into(), "2 streams".into())
        );
    }
}
