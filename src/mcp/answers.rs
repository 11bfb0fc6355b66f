//! The MCP tools' answers about a whole trace: what it holds, the findings, where time goes,
//! the iterations, the critical path, a what-if, a diff, a figure. Each is the engine's
//! own answer (`report --json`, `what-if --json`, `critical-path --json`, `diff --json`
//! pieces), cut to fit a model's context, with a line of text a person reads.

use serde_json::{Value, json};

use super::page::{fit, page};
use crate::analysis::intervals::Window;
use crate::format::format_ns;
use crate::overview::{Kept, Options, Overview, overview_with};
use crate::session::OpenTrace;
use crate::trace::{OpKind, Trace};

/// A tool's answer: its JSON, the sentence that sums it up, and an image when it is one.
pub struct Answer {
    pub json: Value,
    pub summary: String,
    pub png: Option<Vec<u8>>,
}

impl Answer {
    pub fn new(json: Value, summary: String) -> Answer {
        Answer {
            json,
            summary,
            png: None,
        }
    }
}

/// What `open_trace` says of a trace: its files and GPUs, its span, what it recorded and
/// what it lacks (and what that costs the answers).
pub fn opened(id: &str, t: &OpenTrace) -> Answer {
    let trace = &t.trace;
    let (a, b) = trace_span(trace);
    let gpus: Vec<Value> = trace
        .devices
        .iter()
        .map(|d| {
            json!({
                "id": d.id,
                "name": trace.gpu_name(d.id),
                "model": d.name,
                "kernels": d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl),
                "nccl_kernels": d.count_of(OpKind::Nccl),
                "graph_launches": d.count_of(OpKind::Graph),
                "streams": d.streams.len(),
            })
        })
        .collect();
    let threads = &trace.threads;
    let count = |f: &dyn Fn(&crate::trace::Thread) -> usize| threads.iter().map(f).sum::<usize>();
    let samples = trace.stacks().samples.time.len();
    let its = &t.overview.iterations;
    let graphs = crate::analysis::graphs::cuda_graphs(trace).map(|g| g.trace_level);
    let recorded = json!({
        "api_calls": count(&|t| t.api.len()),
        "nvtx_ranges": count(&|t| t.nvtx.start.len()),
        "os_runtime_calls": count(&|t| t.osrt.len()),
        "cpu_samples": samples,
        "cuda_graphs": graphs,
        "gpu_metrics": !trace.gpu_metrics.is_empty(),
        "device_memory": trace.devices.iter().any(|d| !d.mem_info.is_empty()) || !trace.memory_usage.is_empty(),
        "nccl_payloads": threads.iter().any(|t| !t.nccl.is_empty()),
        "iterations": {
            "count": its.count(),
            "marker": its.marker,
            "heuristic": its.heuristic,
        },
    });
    let mut missing: Vec<String> = t
        .reports
        .iter()
        .flat_map(|r| r.missing_effects.values().cloned())
        .collect();
    missing.sort();
    missing.dedup();
    if samples == 0 {
        missing.push("no CPU samples: a gap's cause cannot name the Python/C++ frame the CPU was in (nsys profile --sample=process-tree)".into());
    }
    if its.count() == 0 {
        missing.push("no iterations found: give iteration_marker (an NVTX range text with # for the number, e.g. denoising_step_#)".into());
    }
    let findings = t.findings();
    let summary = format!(
        "{id}: {} GPU(s), {} span; {} iteration(s); {} finding(s){}",
        gpus.len(),
        format_ns(b - a),
        its.count(),
        findings.len(),
        findings
            .first()
            .map_or(String::new(), |f| format!(", first: {}", f.title))
    );
    let json = json!({
        "trace_id": id,
        "files": t.paths,
        "gpus": gpus,
        "span_ns": [a, b],
        "span": format_ns(b - a),
        "time_origin_ns": trace.time_origin(),
        "recorded": recorded,
        "missing": missing,
        "findings": findings.len(),
    });
    Answer::new(fit(json, 64), summary)
}

/// The first instant and the last end of anything recorded.
fn trace_span(trace: &Trace) -> (i64, i64) {
    let origin = trace.time_origin().unwrap_or(0);
    let gpu_end = trace
        .devices
        .iter()
        .filter_map(|d| d.kernel_window())
        .map(|w| w.1);
    let cpu_end = trace
        .threads
        .iter()
        .filter_map(|t| t.api.end.iter().max().copied());
    (origin, gpu_end.chain(cpu_end).max().unwrap_or(origin))
}

/// The ranked findings as `report --json` has them, the first `limit`.
pub fn findings(t: &OpenTrace, limit: usize) -> Answer {
    let all = t.findings();
    let json = crate::findings::text::findings_json(&t.trace, all);
    let rows = json.as_array().cloned().unwrap_or_default();
    let summary = match all.first() {
        None => "No finding: nothing found worth a change (a healthy run gets no advice).".into(),
        Some(f) => format!(
            "{} finding(s); first: [{}] {}{}",
            all.len(),
            f.severity.label(),
            f.title,
            f.saving_ns
                .map_or(String::new(), |s| format!(" — saves {}", format_ns(s)))
        ),
    };
    Answer::new(page("findings", rows, 0, Some(limit)), summary)
}

/// The overview of `window` (or the whole run's): a window's is worked out anew.
pub fn overview_of(
    t: &OpenTrace,
    window: Option<(i64, i64)>,
) -> Result<std::sync::Arc<Overview>, String> {
    let Some((a, b)) = window else {
        return Ok(t.overview.clone());
    };
    if b <= a {
        return Err(format!(
            "the window's end ({b}) must be after its start ({a})"
        ));
    }
    let options = Options {
        window: Some(Window::new(a, b)),
        iteration_marker: t.options.iteration_marker.clone(),
        ..Options::default()
    };
    overview_with(
        &t.trace,
        &options,
        &std::sync::atomic::AtomicBool::new(false),
        Kept::default(),
    )
    .map(std::sync::Arc::new)
    .ok_or_else(|| "cancelled".to_string())
}

/// Per GPU: compute only, NCCL only, overlap, memory only, idle (ns and % of its window).
pub fn breakdown(t: &OpenTrace, window: Option<(i64, i64)>) -> Result<Answer, String> {
    let o = overview_of(t, window)?;
    let rows: Vec<Value> = o
        .devices
        .iter()
        .map(|d| {
            let b = d.breakdown;
            let total = b.total().max(1) as f64;
            let pct = |x: i64| (1000.0 * x as f64 / total).round() / 10.0;
            json!({
                "gpu": t.trace.gpu_name(d.device),
                "window_ns": [d.window.start, d.window.end],
                "compute_only_ns": b.compute_only,
                "nccl_only_ns": b.nccl_only,
                "overlap_ns": b.overlap,
                "memory_only_ns": b.memory_only,
                "idle_ns": b.idle,
                "compute_only_pct": pct(b.compute_only),
                "nccl_only_pct": pct(b.nccl_only),
                "overlap_pct": pct(b.overlap),
                "memory_only_pct": pct(b.memory_only),
                "idle_pct": pct(b.idle),
                "diagnosis": d.same_stream.map(|s| s.sentence()),
            })
        })
        .collect();
    let summary = rows
        .iter()
        .map(|r| {
            format!(
                "{}: {} % compute, {} % NCCL, {} % overlap, {} % idle",
                r["gpu"].as_str().unwrap_or("?"),
                r["compute_only_pct"],
                r["nccl_only_pct"],
                r["overlap_pct"],
                r["idle_pct"]
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let json = json!({ "window_ns": window, "gpus": rows });
    Ok(Answer::new(fit(json, 512), summary))
}

/// The iterations: how they were found, each GPU's median and slow ones, the slowest; every
/// iteration's duration (its slowest GPU's) when there are few enough to list.
pub fn iterations(t: &OpenTrace, limit: usize) -> Answer {
    let its = &t.overview.iterations;
    let (longest, steady) = its.across_gpus();
    let per_gpu: Vec<Value> = its
        .per_device
        .iter()
        .map(|d| {
            json!({
                "gpu": t.trace.gpu_name(d.device),
                "median_ns": d.median_ns,
                "warmup": d.warmup,
                "slow": d.slow_indices,
                "slowest": d.slowest_index,
            })
        })
        .collect();
    let mut slow: Vec<(usize, i64)> = steady.slow.iter().map(|&k| (k, longest[k])).collect();
    slow.sort_by_key(|s| std::cmp::Reverse(s.1));
    let summary = match its.slowest_index {
        Some(k) => format!(
            "{} iterations ({}); median across GPUs {}; slowest {k}: {}; {} slow",
            its.count(),
            its.marker.as_deref().unwrap_or("heuristic"),
            format_ns(steady.median_ns),
            format_ns(longest.get(k).copied().unwrap_or(0)),
            slow.len()
        ),
        None if its.count() == 0 => {
            "No iterations found (give iteration_marker, e.g. denoising_step_#)".into()
        }
        None => format!(
            "{} iterations, no steady state to compare with",
            its.count()
        ),
    };
    let json = json!({
        "count": its.count(),
        "marker": its.marker,
        "heuristic": its.heuristic,
        "median_ns": steady.median_ns,
        "median": format_ns(steady.median_ns),
        "warmup": steady.warmup,
        "slowest_index": its.slowest_index,
        "slow": slow.iter().take(limit).map(|&(k, d)| json!({"index": k, "duration_ns": d, "duration": format_ns(d)})).collect::<Vec<_>>(),
        "per_gpu": per_gpu,
        "durations_ns": (longest.len() <= 300).then_some(&longest),
    });
    Answer::new(fit(json, 300), summary)
}

/// Iteration `k` drilled down: each GPU's duration against its median, what differs from
/// a normal one, the collectives' late ranks, and its critical path's totals.
pub fn iteration(t: &OpenTrace, k: usize, limit: usize) -> Result<Answer, String> {
    let its = &t.overview.iterations;
    if k >= its.count() {
        return Err(format!(
            "no iteration {k}: the trace has {} (0 to {})",
            its.count(),
            its.count().saturating_sub(1)
        ));
    }
    let d = crate::analysis::drilldown::drilldown(
        &t.trace,
        &t.overview.cpu,
        its,
        k,
        t.options.min_gap_ns,
        limit,
    );
    let path = t.critical_path_json(Some(k)).ok();
    let (longest, steady) = its.across_gpus();
    let duration = longest.get(k).copied().unwrap_or(0);
    let summary = format!(
        "Iteration {k}: {} against a median of {} across GPUs{}",
        format_ns(duration),
        format_ns(steady.median_ns),
        d.straggler_device.map_or(String::new(), |g| format!(
            "; {} started its collectives last",
            t.trace.gpu_name(g)
        ))
    );
    let json = json!({
        "index": k,
        "duration_ns": duration,
        "median_ns": steady.median_ns,
        "drilldown": serde_json::to_value(&d).unwrap_or(Value::Null),
        "critical_path": path.map(|p| json!({
            "wall_ns": p.get("wall_ns"),
            "by_kind": p.get("by_kind"),
            "by_device": p.get("by_device"),
        })),
    });
    Ok(Answer::new(fit(json, limit), summary))
}

/// `critical-path --json` of iteration `k` (default: the slowest), its lists cut to `limit`.
pub fn critical_path(t: &OpenTrace, k: Option<usize>, limit: usize) -> Result<Answer, String> {
    let json = t.critical_path_json(k)?;
    let summary = format!(
        "Critical path of {}: {} long; by kind (ns): {}",
        json.get("iteration")
            .and_then(Value::as_u64)
            .map_or("the whole run".to_string(), |k| format!("iteration {k}")),
        format_ns(json.get("wall_ns").and_then(Value::as_i64).unwrap_or(0)),
        json.get("by_kind")
            .map(|t| t.to_string())
            .unwrap_or_default()
    );
    Ok(Answer::new(fit(json, limit), summary))
}

/// `what-if --json` of `change`.
pub fn what_if(t: &OpenTrace, change: &crate::whatif::Change) -> Result<Answer, String> {
    for span in &change.remove_stalls {
        span.check(&t.trace)
            .map_err(|e| format!("remove_stall {e}"))?;
    }
    let json = t.what_if_json(change);
    let median = |side: &str| -> Option<i64> {
        json[side]["per_device"]
            .as_array()?
            .iter()
            .filter_map(|d| d["iteration_median_ns"].as_i64())
            .max()
    };
    let saving = json["saving_ns"].as_i64().unwrap_or(0);
    let summary = format!(
        "Predicted: the run {} shorter{}; the unchanged trace's replay is off by {} % at most (the model's error)",
        format_ns(saving),
        match (median("measured"), median("predicted")) {
            (Some(m), Some(p)) => format!(
                ", the median iteration {} → {} (slowest GPU)",
                format_ns(m),
                format_ns(p)
            ),
            _ => String::new(),
        },
        json["replay_error"]["max_abs_pct"]
    );
    Ok(Answer::new(fit(json, 200), summary))
}

/// `diff --json` of two traces, with the gate's verdict when a threshold is given.
pub fn diff(
    before: &OpenTrace,
    after: &OpenTrace,
    fail_if_slower_pct: Option<f64>,
) -> Result<Answer, String> {
    use crate::compare::{self, Run};
    let run = |t: &'_ OpenTrace| -> Result<(), String> {
        if t.paths.is_empty() {
            return Err("a trace without files".into());
        }
        Ok(())
    };
    run(before)?;
    run(after)?;
    let b = Run {
        path: &before.paths[0],
        trace: &before.trace,
        overview: &before.overview,
    };
    let a = Run {
        path: &after.paths[0],
        trace: &after.trace,
        overview: &after.overview,
    };
    let c = compare::compare(&b, &a);
    let mut json = compare::report::diff_json(&b, &a, &c);
    let mut summary = compare::report::verdict(&c);
    if let Some(p) = fail_if_slower_pct {
        if !p.is_finite() || p < 0.0 {
            return Err("fail_if_slower_pct wants a percentage of 0 or more".into());
        }
        let g = compare::gate::gate(&b, &a, p);
        summary = format!("{summary} Gate: {}", g.reason);
        json["gate"] = serde_json::to_value(&g).unwrap_or_default();
    }
    Ok(Answer::new(fit(json, 50), summary))
}

/// Figure `name` (of `figures::NAMES`) as a PNG, with the numbers drawn.
pub fn figure(t: &OpenTrace, name: &str, iteration: Option<usize>) -> Result<Answer, String> {
    use crate::figures;
    // Named with or without the number the files carry (`1_iter_duration_over_time`).
    let unnumbered = |n: &str| n.split_once('_').map_or(n, |(_, rest)| rest).to_string();
    let Some(name) = figures::NAMES
        .into_iter()
        .find(|&n| n == name || unnumbered(n) == name)
    else {
        let names: Vec<String> = figures::NAMES.iter().map(|n| unnumbered(n)).collect();
        return Err(format!(
            "no figure {name:?} (they are: {})",
            names.join(", ")
        ));
    };
    let data = figures::figure_data(&t.trace, &t.overview, iteration, None);
    if let Some(why) = data.skipped.get(name) {
        return Err(format!("figure {name} has nothing to draw: {why}"));
    }
    let png = figures::render(name, &data, figures::Format::Png, SIZE)?;
    let mut answer = Answer::new(
        json!({ "name": name, "width": SIZE.0, "height": SIZE.1, "bytes": png.len() }),
        format!("{name}: a {}×{} PNG", SIZE.0, SIZE.1),
    );
    answer.png = Some(png);
    Ok(answer)
}

/// A figure's size: readable in a chat, a few hundred kB at most.
const SIZE: (u32, u32) = (1200, 675);
