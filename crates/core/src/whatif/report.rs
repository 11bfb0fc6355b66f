//! The `what-if` command's answer: each GPU's iteration median and span as measured and as
//! the replay with the change predicts, what the change moved (idle by cause, kernel time),
//! and how well the replay reproduces the trace unchanged.

use std::fmt::Write;

use serde_json::{Value, json};

use super::{Change, replay_with_progress};
use crate::analysis::gaps::Gap;
use crate::analysis::iterations::Iterations;
use crate::analysis::iterations::iterations;
use crate::compare::{IdleByCause, idle_by_cause};
use crate::format::{format_ns, signed_ns};
use crate::overview::{DeviceSummary, Options, Overview, RunMeasures, run_measures};
use crate::trace::device_name;
use crate::trace::{DeviceId, OpKind, Trace};

/// One GPU in one version of the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    pub device: DeviceId,
    pub iteration_median_ns: Option<i64>,
    /// First kernel start to last kernel end.
    pub total_ns: i64,
    /// Compute kernels' time (a change keeps it unless it scales them).
    pub kernel_ns: i64,
    /// NCCL kernels' time: what a change moves as ranks wait less for each other.
    pub nccl_ns: i64,
    pub idle: IdleByCause,
}

pub struct WhatIf {
    pub measured: Vec<Outcome>,
    pub predicted: Vec<Outcome>,
    /// Replayed unchanged: each GPU's (iteration median, span) error against the measured,
    /// in percent.
    pub unchanged_error_pct: Vec<(DeviceId, Option<f64>, f64)>,
    pub assumptions: Vec<String>,
}

/// The time of `device`'s ops of `kinds`.
fn time_of(trace: &Trace, device: usize, kinds: &[OpKind]) -> i64 {
    trace.devices[device]
        .streams
        .iter()
        .flat_map(|s| {
            (0..s.ops.len())
                .filter(move |&i| kinds.contains(&s.ops.kind[i]))
                .map(move |i| s.ops.duration(i))
        })
        .sum()
}

/// Each GPU's outcome in a run measured by `m` (its overview's parts, or a replayed run's
/// [`RunMeasures`]).
fn outcomes(trace: &Trace, m: Measures) -> Vec<Outcome> {
    trace
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| Outcome {
            device: d.id,
            iteration_median_ns: m
                .iterations
                .per_device
                .iter()
                .find(|x| x.device == d.id && x.median_index.is_some())
                .map(|x| x.median_ns),
            total_ns: d.kernel_window().map_or(0, |w| w.1 - w.0),
            kernel_ns: time_of(trace, i, &[OpKind::Compute, OpKind::Graph]),
            nccl_ns: time_of(trace, i, &[OpKind::Nccl]),
            // The whole run's idle time by the cause of its gaps (`compare::whole_run`).
            idle: m
                .devices
                .iter()
                .find(|s| s.device == d.id)
                .map(|s| idle_by_cause(m.gaps, d.id, s.window, s.breakdown.idle))
                .unwrap_or_default(),
        })
        .collect()
}

/// What an outcome is read from.
#[derive(Clone, Copy)]
struct Measures<'a> {
    devices: &'a [DeviceSummary],
    gaps: &'a [Gap],
    iterations: &'a Iterations,
}

impl<'a> Measures<'a> {
    fn of_overview(o: &'a Overview) -> Self {
        Self {
            devices: &o.devices,
            gaps: &o.gaps,
            iterations: &o.iterations,
        }
    }

    fn of_run(m: &'a RunMeasures) -> Self {
        Self {
            devices: &m.devices,
            gaps: &m.gaps,
            iterations: &m.iterations,
        }
    }
}

fn pct_error(got: i64, want: i64) -> f64 {
    if want == 0 {
        0.0
    } else {
        100.0 * (got - want) as f64 / want as f64
    }
}

/// Replays `trace` with `change` (and unchanged, for the model's error) and sets the
/// prediction beside `measured`, the trace's own analyses.
pub fn what_if(trace: &Trace, measured: &Overview, change: &Change, options: &Options) -> WhatIf {
    what_if_with(trace, measured, change, options, |_| {})
}

/// Like [`what_if`], handing the replayed trace to `look` before it is dropped (the window
/// takes its predicted idle time from it).
pub fn what_if_with(
    trace: &Trace,
    measured: &Overview,
    change: &Change,
    options: &Options,
    look: impl FnOnce(&Trace),
) -> WhatIf {
    what_if_progress(trace, measured, change, options, look, &|_| {})
}

/// Like [`what_if_with`], telling `progress` how far it is (0..=1): the unchanged replay,
/// the changed one, then the analyses of the replayed trace.
pub fn what_if_progress(
    trace: &Trace,
    measured: &Overview,
    change: &Change,
    options: &Options,
    look: impl FnOnce(&Trace),
    progress: &dyn Fn(f32),
) -> WhatIf {
    let outcomes_measured = outcomes(trace, Measures::of_overview(measured));
    let measured = Measured {
        outcomes: outcomes_measured,
        iterations: &measured.iterations,
        gaps: Some(&measured.gaps),
    };
    replayed(trace, measured, change, options, look, progress)
}

/// [`what_if`] of a run measured for this alone (the command line): its gaps are let go
/// before the replays unless the change cuts host-bound gaps, so that the replayed copy
/// of the trace is not held beside them.
pub fn what_if_measured(
    trace: &Trace,
    measured: RunMeasures,
    change: &Change,
    options: &Options,
) -> WhatIf {
    let outcomes_measured = outcomes(trace, Measures::of_run(&measured));
    let RunMeasures {
        gaps, iterations, ..
    } = measured;
    let gaps = (!change.cut_host_gaps.is_empty()).then_some(gaps);
    let measured = Measured {
        outcomes: outcomes_measured,
        iterations: &iterations,
        gaps: gaps.as_deref(),
    };
    replayed(trace, measured, change, options, |_| {}, &|_| {})
}

/// What the replays need of the measured run.
struct Measured<'a> {
    outcomes: Vec<Outcome>,
    iterations: &'a Iterations,
    /// Its gaps, where the change may cut host-bound ones (found again when `None`).
    gaps: Option<&'a [Gap]>,
}

/// The replays (unchanged, for the model's error, then with `change`) set beside the
/// measured run.
fn replayed(
    trace: &Trace,
    measured: Measured,
    change: &Change,
    options: &Options,
    look: impl FnOnce(&Trace),
    progress: &dyn Fn(f32),
) -> WhatIf {
    // The same iterations in every version: the marker the measured run found.
    let options = Options {
        iteration_marker: options
            .iteration_marker
            .clone()
            .or_else(|| measured.iterations.marker.clone()),
        ..options.clone()
    };
    let unchanged = replay_with_progress(trace, &Change::default(), None, &|f| progress(0.45 * f));
    let its = iterations(&unchanged, options.iteration_marker.as_deref());
    let unchanged_error_pct = trace
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let want = measured
                .iterations
                .per_device
                .iter()
                .find(|x| x.device == d.id && x.median_index.is_some());
            let got = its.per_device.iter().find(|x| x.device == d.id);
            let iteration = match (want, got) {
                (Some(w), Some(g)) => Some(pct_error(g.median_ns, w.median_ns)),
                _ => None,
            };
            let span = |t: &Trace| t.devices[i].kernel_window().map_or(0, |w| w.1 - w.0);
            (d.id, iteration, pct_error(span(&unchanged), span(trace)))
        })
        .collect();
    drop(unchanged);
    let changed =
        replay_with_progress(trace, change, measured.gaps, &|f| progress(0.45 + 0.45 * f));
    progress(0.9);
    let predicted = run_measures(&changed, &options);
    progress(1.0);
    look(&changed);
    let mut assumptions = vec![
        "CPU time between calls, launch latencies, kernel durations and transfer times are kept as recorded; a synchronising call waits for the work its thread launched before it".to_string(),
    ];
    if change.nccl_own_stream {
        assumptions.push(match change.nccl_dependencies {
            super::NcclDependencies::Unbounded => format!(
                "NCCL on its own stream: {} — an upper bound on the overlap gained",
                change.nccl_dependencies.sentence()
            ),
            model => format!(
                "NCCL on its own stream with the data dependencies kept: {}",
                model.sentence()
            ),
        });
    }
    if !change.remove_stalls.is_empty() {
        assumptions.push("A removed stall: the calls starting in it take no time and the CPU time between them is gone".to_string());
    }
    if !change.cut_host_gaps.is_empty() {
        assumptions.push("Host-bound gaps cut: the launching thread's CPU time during each gap of the pattern is gone (fewer launches, CUDA graphs, less Python per op), so the next kernel is launched in time".to_string());
    }
    if !change.drop_copies.is_empty() {
        assumptions.push("Dropped copies take no GPU time and their blocking calls return at once: done off the critical path (asynchronous, from pinned memory, on a stream of their own) or not at all".to_string());
    }
    if !change.remove_cpu.is_empty() {
        assumptions.push("Removed host work: the CPU time between calls inside the ranges named is gone; the calls themselves stay".to_string());
    }
    if !change.remove_sync.is_empty() {
        assumptions.push("A removed sync returns at once: what came after it no longer waits for the GPU (a value it read must then come from elsewhere)".to_string());
    }
    WhatIf {
        measured: measured.outcomes,
        predicted: outcomes(&changed, Measures::of_run(&predicted)),
        unchanged_error_pct,
        assumptions,
    }
}

fn change_json(change: &Change) -> Value {
    json!({
        "remove_sync": change.remove_sync,
        "scale_kernel": change.scale_kernels.iter().map(|(re, f)| json!({"regex": re.as_str(), "factor": f})).collect::<Vec<_>>(),
        "nccl_own_stream": change.nccl_own_stream,
        "nccl_dependencies": match change.nccl_dependencies {
            super::NcclDependencies::NextKernel => "next_kernel",
            super::NcclDependencies::AfterNextCollective => "after_next_collective",
            super::NcclDependencies::Unbounded => "none",
        },
        "remove_cpu": change.remove_cpu,
        "remove_stall": change.remove_stalls.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "cut_host_gaps": change.cut_host_gaps,
        "drop_copies": change.drop_copies,
        "args": change.to_args(),
    })
}

/// What the change saves of the run: the largest reduction of a GPU's span (first kernel
/// start to last kernel end), as a finding's `saving_ns` says.
pub fn saving_ns(w: &WhatIf) -> i64 {
    w.measured
        .iter()
        .zip(&w.predicted)
        .map(|(m, p)| m.total_ns - p.total_ns)
        .max()
        .unwrap_or(0)
}

fn outcome_json(trace: &Trace, o: &Outcome) -> Value {
    json!({
        "device": device_name(trace, o.device),
        "iteration_median_ns": o.iteration_median_ns,
        "total_ns": o.total_ns,
    })
}

pub fn what_if_json(trace: &Trace, file: &str, change: &Change, w: &WhatIf) -> Value {
    let effects: Vec<Value> = w
        .measured
        .iter()
        .zip(&w.predicted)
        .map(|(m, p)| {
            let idle = p.idle.minus(&m.idle);
            json!({
                "device": device_name(trace, m.device),
                "iteration_median_delta_ns": m.iteration_median_ns.zip(p.iteration_median_ns).map(|(a, b)| b - a),
                "total_delta_ns": p.total_ns - m.total_ns,
                "kernel_time_delta_ns": p.kernel_ns - m.kernel_ns,
                "nccl_time_delta_ns": p.nccl_ns - m.nccl_ns,
                "idle_by_cause_delta_ns": idle.parts().iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    let errors: Vec<Value> = w
        .unchanged_error_pct
        .iter()
        .map(|(d, it, span)| json!({"device": device_name(trace, *d), "iteration_median_error_pct": it, "total_error_pct": span}))
        .collect();
    json!({
        "file": file,
        "change": change_json(change),
        "saving_ns": saving_ns(w),
        "measured": {"per_device": w.measured.iter().map(|o| outcome_json(trace, o)).collect::<Vec<_>>()},
        "predicted": {"per_device": w.predicted.iter().map(|o| outcome_json(trace, o)).collect::<Vec<_>>()},
        "effects": effects,
        "replay_error": {"per_device": errors, "max_abs_pct": max_error(w)},
        "assumptions": w.assumptions,
    })
}

/// The largest error of the unchanged replay, iteration medians and spans together.
pub fn max_error(w: &WhatIf) -> f64 {
    w.unchanged_error_pct
        .iter()
        .flat_map(|(_, it, span)| [it.unwrap_or(0.0).abs(), span.abs()])
        .fold(0.0, f64::max)
}

pub fn what_if_text(trace: &Trace, file: &str, w: &WhatIf) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{file}: replayed with the change\n");
    let _ = writeln!(
        s,
        "  {:<18} {:>12} {:>12} {:>10} | {:>10} {:>10} {:>10}",
        "GPU", "iteration", "predicted", "delta", "span", "predicted", "delta"
    );
    for (m, p) in w.measured.iter().zip(&w.predicted) {
        let it = |x: Option<i64>| x.map_or("–".to_string(), format_ns);
        let delta = m
            .iteration_median_ns
            .zip(p.iteration_median_ns)
            .map_or("–".to_string(), |(a, b)| signed_ns(b - a));
        let _ = writeln!(
            s,
            "  {:<18} {:>12} {:>12} {:>10} | {:>10} {:>10} {:>10}",
            trace.gpu_name(m.device),
            it(m.iteration_median_ns),
            it(p.iteration_median_ns),
            delta,
            format_ns(m.total_ns),
            format_ns(p.total_ns),
            signed_ns(p.total_ns - m.total_ns)
        );
        let idle = p.idle.minus(&m.idle);
        let moved: Vec<String> = idle
            .parts()
            .iter()
            .filter(|x| x.1.abs() >= 1_000)
            .map(|(k, v)| format!("{k} {}", signed_ns(*v)))
            .collect();
        if !moved.is_empty() || p.kernel_ns != m.kernel_ns || p.nccl_ns != m.nccl_ns {
            let mut line = format!(
                "      idle {}; kernel time {}",
                if moved.is_empty() {
                    "unchanged".to_string()
                } else {
                    moved.join(", ")
                },
                signed_ns(p.kernel_ns - m.kernel_ns)
            );
            if p.nccl_ns != m.nccl_ns {
                let _ = write!(
                    line,
                    "; NCCL time {} (ranks waiting for each other)",
                    signed_ns(p.nccl_ns - m.nccl_ns)
                );
            }
            let _ = writeln!(s, "{line}");
        }
    }
    let _ = writeln!(
        s,
        "\nReplayed unchanged, the model reproduces the trace to {:.3} % (largest error over the GPUs' iteration medians and spans).",
        max_error(w)
    );
    for a in &w.assumptions {
        let _ = writeln!(s, "Assumed: {a}.");
    }
    s
}
