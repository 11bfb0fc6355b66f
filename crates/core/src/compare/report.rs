//! The `diff` command's output: the comparison as JSON (keys documented in docs/cli.md) or
//! as tables and a verdict in words.

use std::fmt::Write;

use serde_json::{Value, json};

use super::{Comparison, DeviceDiff, Run};
use crate::format::{format_ns, signed_ns};
use crate::trace::DeviceId;

/// A delta as a share of its base: `-5.1 %`.
fn signed_pct(delta: i64, base: i64) -> String {
    if base == 0 {
        return "–".into();
    }
    format!("{:+.1} %", 100.0 * delta as f64 / base as f64)
}

fn median_of(values: impl Iterator<Item = i64>) -> Option<i64> {
    let v: Vec<i64> = values.collect();
    (!v.is_empty()).then(|| crate::sorted::median(&v))
}

/// Per GPU (the mean over `n` GPUs) of the parts `parts` gives each, those of at least
/// 1 µs, largest first: "compute only -6.9 ms, idle +1.2 ms".
fn mean_parts<const N: usize>(
    devices: &[&DeviceDiff],
    parts: impl Fn(&DeviceDiff) -> Option<[(&'static str, i64); N]>,
) -> Vec<(&'static str, i64)> {
    let mut sums: Vec<(&'static str, i64)> = Vec::new();
    let mut n = 0i64;
    for d in devices {
        let Some(ps) = parts(d) else { continue };
        n += 1;
        for (name, v) in ps {
            match sums.iter_mut().find(|p| p.0 == name) {
                Some(p) => p.1 += v,
                None => sums.push((name, v)),
            }
        }
    }
    let mut out: Vec<(&'static str, i64)> = sums
        .into_iter()
        .map(|(name, v)| (name, v / n.max(1)))
        .filter(|p| p.1.abs() >= 1_000)
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.1.abs()));
    out
}

fn listed(parts: &[(&'static str, i64)]) -> String {
    let words: Vec<String> = parts
        .iter()
        .map(|(name, v)| format!("{} {}", name.replace('_', " "), signed_ns(*v)))
        .collect();
    words.join(", ")
}

/// One paragraph: how much faster or slower an iteration and the whole run got, where the
/// time went (busy parts, idle by cause), and what changed most among kernels and gap
/// patterns.
pub fn verdict(c: &Comparison) -> String {
    let mut s = String::new();
    let with_iterations: Vec<&DeviceDiff> = c
        .devices
        .iter()
        .filter(|d| d.delta_ns().is_some())
        .collect();
    if let Some(delta) = median_of(with_iterations.iter().filter_map(|d| d.delta_ns())) {
        let before =
            median_of(with_iterations.iter().filter_map(|d| d.before_median_ns())).unwrap_or(0);
        if delta == 0 {
            s.push_str("The median iteration takes the same time in both runs");
        } else {
            let _ = write!(
                s,
                "The median iteration is {} {} after ({}, median over {} GPUs)",
                format_ns(delta.abs()),
                if delta < 0 { "faster" } else { "slower" },
                signed_pct(delta, before),
                with_iterations.len()
            );
        }
        let parts = mean_parts(&with_iterations, DeviceDiff::breakdown_delta);
        if !parts.is_empty() {
            let _ = write!(s, ": per GPU, {}", listed(&parts));
        }
        let idle = mean_parts(&with_iterations, |d| d.idle_delta().map(|i| i.parts()));
        if !idle.is_empty() {
            let _ = write!(s, "; idle by cause {}", listed(&idle));
        }
        s.push('.');
        // Work saved that came back as idle is the classic trap: say it.
        let busy: i64 = parts.iter().filter(|p| p.0 != "idle").map(|p| p.1).sum();
        let idle_total: i64 = parts.iter().filter(|p| p.0 == "idle").map(|p| p.1).sum();
        // Only when it is a real share of the saving (5 %), not jitter.
        if busy < 0 && idle_total * 20 > -busy {
            let _ = write!(
                s,
                " Of the {} of GPU work saved per iteration, {} came back as idle.",
                format_ns(-busy),
                format_ns(idle_total),
            );
        }
    } else {
        s.push_str("Iteration times are not compared (see the warnings).");
    }
    let with_runs: Vec<&DeviceDiff> = c
        .devices
        .iter()
        .filter(|d| d.run_delta_ns().is_some())
        .collect();
    if let Some(delta) = median_of(with_runs.iter().filter_map(|d| d.run_delta_ns())) {
        let before = median_of(
            with_runs
                .iter()
                .filter_map(|d| d.before_run.map(|r| r.span.len())),
        )
        .unwrap_or(0);
        let _ = write!(
            s,
            " The whole run is {} {} ({})",
            format_ns(delta.abs()),
            if delta <= 0 { "shorter" } else { "longer" },
            signed_pct(delta, before)
        );
        let idle = mean_parts(&with_runs, |d| d.run_idle_delta().map(|i| i.parts()));
        if !idle.is_empty() {
            let _ = write!(s, "; its idle time by cause, per GPU: {}", listed(&idle));
        }
        s.push('.');
    }
    if let Some(k) = c.kernels.first().filter(|k| k.delta_ns() != 0) {
        let _ = write!(
            s,
            " The kernel that changed most: {} ({} in all, {} → {}).",
            crate::format::shorten_middle(&k.name, 80),
            signed_ns(k.delta_ns()),
            format_ns(k.before_total_ns),
            format_ns(k.after_total_ns)
        );
    }
    if let Some(p) = c.patterns.first().filter(|p| p.delta_ns() != 0) {
        let _ = write!(
            s,
            " The gap pattern that changed most: {} ({}).",
            crate::format::shorten_middle(&p.signature, 120),
            signed_ns(p.delta_ns())
        );
    }
    s
}

/// `{"compute_only": -6900000, …}`.
fn object(parts: &[(&'static str, i64)]) -> serde_json::Map<String, Value> {
    parts
        .iter()
        .map(|(k, v)| ((*k).to_string(), json!(v)))
        .collect()
}

pub fn diff_json(before: &Run, after: &Run, c: &Comparison) -> Value {
    let run = |r: &Run, count: usize| {
        json!({
            "file": r.path.display().to_string(),
            "iterations": count,
            "marker": r.overview.iterations.marker,
            "median_ns": median_of(r.overview.iterations.per_device.iter()
                .filter(|d| d.median_index.is_some()).map(|d| d.median_ns)),
        })
    };
    let per_device: Vec<Value> = c
        .devices
        .iter()
        .map(|d| {
            let breakdown = d.breakdown_delta().map(|p| object(&p));
            let idle = d.idle_delta().map(|i| object(&i.parts()));
            let run_breakdown = d.run_breakdown_delta().map(|p| object(&p));
            let run_idle = d.run_idle_delta().map(|i| object(&i.parts()));
            json!({
                "device": d.device,
                "after_device": d.after_device,
                "before_median_ns": d.before_median_ns(),
                "after_median_ns": d.after_median_ns(),
                "delta_ns": d.delta_ns(),
                "before_median_iteration": d.before.map(|m| m.index),
                "after_median_iteration": d.after.map(|m| m.index),
                "breakdown_delta_ns": breakdown,
                "idle_by_cause_delta_ns": idle,
                "before_span_ns": d.before_run.map(|r| r.span.len()),
                "after_span_ns": d.after_run.map(|r| r.span.len()),
                "span_delta_ns": d.run_delta_ns(),
                "span_breakdown_delta_ns": run_breakdown,
                "span_idle_by_cause_delta_ns": run_idle,
            })
        })
        .collect();
    let kernels: Vec<Value> = c
        .kernels
        .iter()
        .map(|k| {
            json!({
                "name": k.name,
                "before_count": k.before_count,
                "after_count": k.after_count,
                "before_total_ns": k.before_total_ns,
                "after_total_ns": k.after_total_ns,
                "delta_ns": k.delta_ns(),
            })
        })
        .collect();
    let patterns: Vec<Value> = c
        .patterns
        .iter()
        .map(|p| {
            json!({
                "signature": p.signature,
                "before_count": p.before_count,
                "after_count": p.after_count,
                "before_total_ns": p.before_total_ns,
                "after_total_ns": p.after_total_ns,
                "delta_ns": p.delta_ns(),
            })
        })
        .collect();
    json!({
        "before": run(before, c.before_iterations),
        "after": run(after, c.after_iterations),
        "per_device": per_device,
        "kernels": kernels,
        "recurring_gaps": patterns,
        "warnings": c.warnings,
        "verdict": verdict(c),
    })
}

/// One GPU's line of a delta table: before, after, delta, its share, the breakdown's parts
/// and idle by cause.
fn delta_row(
    s: &mut String,
    device: DeviceId,
    (before, after, delta): (i64, i64, i64),
    parts: &[(&str, i64)],
    idle: &super::IdleByCause,
) {
    let cells = |values: &[(&str, i64)]| {
        let cells: Vec<String> = values
            .iter()
            .map(|p| format!("{:>9}", signed_ns(p.1)))
            .collect();
        cells.join(" ")
    };
    let _ = writeln!(
        s,
        "  {:<6} {:>10} {:>10} {:>10} {:>8} | {} | idle: {}",
        device,
        format_ns(before),
        format_ns(after),
        signed_ns(delta),
        signed_pct(delta, before),
        cells(parts),
        cells(&idle.parts())
    );
}

pub fn diff_text(before: &Run, after: &Run, c: &Comparison, top: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "before: {} ({} iterations)\nafter:  {} ({} iterations)\n",
        before.path.display(),
        c.before_iterations,
        after.path.display(),
        c.after_iterations
    );
    for w in &c.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    if !c.warnings.is_empty() {
        s.push('\n');
    }
    let _ = writeln!(s, "{}\n", verdict(c));
    let _ = writeln!(
        s,
        "Median iteration per GPU (after − before; the parts add up to the delta)"
    );
    let _ = writeln!(
        s,
        "  {:<6} {:>10} {:>10} {:>10} {:>8} | {:>9} {:>9} {:>9} {:>9} {:>9} | idle: {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "GPU",
        "before",
        "after",
        "delta",
        "",
        "compute",
        "nccl",
        "overlap",
        "memory",
        "idle",
        "host_sync",
        "aft_sync",
        "host_bnd",
        "depend",
        "unknown",
        "<min gap"
    );
    for d in &c.devices {
        let (Some(b), Some(a), Some(delta)) =
            (d.before_median_ns(), d.after_median_ns(), d.delta_ns())
        else {
            let _ = writeln!(s, "  {:<6} (no iterations to compare)", d.device);
            continue;
        };
        let parts = d.breakdown_delta().unwrap_or_default();
        let idle = d.idle_delta().unwrap_or_default();
        delta_row(&mut s, d.device, (b, a, delta), &parts, &idle);
    }
    let _ = writeln!(
        s,
        "\nWhole run per GPU (first op to last; time between iterations shows here)"
    );
    for d in &c.devices {
        let (Some(b), Some(a), Some(delta)) = (d.before_run, d.after_run, d.run_delta_ns()) else {
            continue;
        };
        let parts = d.run_breakdown_delta().unwrap_or_default();
        let idle = d.run_idle_delta().unwrap_or_default();
        let (b, a) = (b.span.len(), a.span.len());
        delta_row(&mut s, d.device, (b, a, delta), &parts, &idle);
    }
    let _ = writeln!(s, "\nKernels by |delta| (all GPUs)");
    for k in c.kernels.iter().take(top) {
        let _ = writeln!(
            s,
            "  {:>10}  {:>7} → {:<7} {:>10} → {:<10} {}",
            signed_ns(k.delta_ns()),
            k.before_count,
            k.after_count,
            format_ns(k.before_total_ns),
            format_ns(k.after_total_ns),
            crate::format::shorten_middle(&k.name, 90)
        );
    }
    let _ = writeln!(s, "\nRecurring gap patterns by |delta|");
    for p in c.patterns.iter().take(top) {
        let _ = writeln!(
            s,
            "  {:>10}  {:>6}× → {:<6}× {:>10} → {:<10} {}",
            signed_ns(p.delta_ns()),
            p.before_count,
            p.after_count,
            format_ns(p.before_total_ns),
            format_ns(p.after_total_ns),
            crate::format::shorten_middle(&p.signature, 110)
        );
    }
    s
}
