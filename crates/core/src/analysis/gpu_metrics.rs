//! Is the busy time useful work? The GPU's sampled counters per GPU over its analysed
//! window, and per kernel name the time-weighted mean of each while that kernel ran: each
//! sample stands for the time until the next, weighted by how much of it the kernel
//! covered. Samples are device-wide, so where kernels overlap each gets the same values.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::trace::{DeviceId, DeviceMetrics, Trace};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricStat {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceMetricStats {
    pub device: DeviceId,
    pub samples: usize,
    pub metrics: BTreeMap<String, MetricStat>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelMetrics {
    pub device: DeviceId,
    pub name: String,
    pub gpu_ns: i64,
    /// Time-weighted mean of each metric while the kernel ran.
    pub metrics: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GpuMetrics {
    pub sample_hz: f64,
    pub per_device: Vec<DeviceMetricStats>,
    /// Per GPU, its kernels with the most GPU time (`top` of them).
    pub kernels: Vec<KernelMetrics>,
}

/// `None` without metrics. `window` gives each GPU's analysed window (the breakdown's).
pub fn gpu_metrics(
    trace: &Trace,
    window: &dyn Fn(DeviceId) -> Option<(i64, i64)>,
    top: usize,
) -> Option<GpuMetrics> {
    let step = sample_step(trace)?;
    let per_device = trace
        .gpu_metrics
        .iter()
        .map(|m| {
            let window = window(m.device).unwrap_or((i64::MIN, i64::MAX));
            let range = m.range(window.0, window.1);
            let metrics = m
                .metrics
                .iter()
                .filter_map(|(name, values)| {
                    let mut v: Vec<f64> = values
                        .iter_range(range.clone())
                        .filter(|x| !x.is_nan())
                        .map(|x| x as f64)
                        .collect();
                    if v.is_empty() {
                        return None;
                    }
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    v.sort_by(f64::total_cmp);
                    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
                    Some((
                        name.clone(),
                        MetricStat {
                            mean,
                            p50: q(0.5),
                            p95: q(0.95),
                        },
                    ))
                })
                .collect();
            DeviceMetricStats {
                device: m.device,
                samples: range.len(),
                metrics,
            }
        })
        .collect();
    let kernels = trace
        .gpu_metrics
        .iter()
        .flat_map(|m| kernels_of(trace, m, step, top))
        .collect();
    Some(GpuMetrics {
        sample_hz: 1e9 / step as f64,
        per_device,
        kernels,
    })
}

/// The `top` kernel names of `m`'s GPU by time, each with its metrics' means while it ran.
fn kernels_of(trace: &Trace, m: &DeviceMetrics, step: i64, top: usize) -> Vec<KernelMetrics> {
    let Some(device) = trace.device(m.device) else {
        return Vec::new();
    };
    let mut by_name: BTreeMap<u32, i64> = BTreeMap::new();
    for s in &device.streams {
        for i in 0..s.ops.len() {
            if s.ops.kind[i].is_kernel() {
                *by_name.entry(s.ops.name[i]).or_default() += s.ops.end[i] - s.ops.start[i];
            }
        }
    }
    let mut names: Vec<(u32, i64)> = by_name.into_iter().collect();
    names.sort_by_key(|&(id, ns)| (std::cmp::Reverse(ns), id));
    names.truncate(top);
    names
        .into_iter()
        .map(|(id, gpu_ns)| means_while(trace, device, m, step, id, gpu_ns))
        .collect()
}

/// The samples of `m` from `first` on whose period (to the next sample, or `step` for the
/// last) overlaps `[a, b)`, with the ns of it covered: what a kernel running then weighs
/// each sample by.
fn covered_samples(
    m: &DeviceMetrics,
    step: i64,
    first: usize,
    (a, b): (i64, i64),
) -> impl Iterator<Item = (usize, f64)> + '_ {
    (first..m.time.len())
        .take_while(move |&k| m.time[k] < b)
        .filter_map(move |k| {
            let t0 = m.time[k];
            let t1 = m.time.get(k + 1).copied().unwrap_or(t0 + step);
            let covered = (t1.min(b) - t0.max(a)).max(0) as f64;
            (covered > 0.0).then_some((k, covered))
        })
}

/// The slot of `m`'s metric named first `want` (by the start of its name: units vary).
fn slot_of(m: &DeviceMetrics, want: &str) -> Option<usize> {
    m.metrics.iter().position(|(n, _)| n.starts_with(want))
}

/// Kernel `id`'s time-weighted mean of each of `m`'s metrics over its executions on
/// `device` (`gpu_ns` of them in all).
fn means_while(
    trace: &Trace,
    device: &crate::trace::Device,
    m: &DeviceMetrics,
    step: i64,
    id: u32,
    gpu_ns: i64,
) -> KernelMetrics {
    // Per metric: Σ value × covered ns, Σ covered ns.
    let mut sums = vec![(0.0f64, 0.0f64); m.metrics.len()];
    for s in &device.streams {
        for i in 0..s.ops.len() {
            if s.ops.name[i] != id || !s.ops.kind[i].is_kernel() {
                continue;
            }
            let (a, b) = (s.ops.start[i], s.ops.end[i]);
            // From the sample at or before the start.
            let first = m.time.partition_point(|&t| t <= a).saturating_sub(1);
            for (k, covered) in covered_samples(m, step, first, (a, b)) {
                for (slot, (_, values)) in m.metrics.iter().enumerate() {
                    let v = values.get(k);
                    if !v.is_nan() {
                        sums[slot].0 += v as f64 * covered;
                        sums[slot].1 += covered;
                    }
                }
            }
        }
    }
    KernelMetrics {
        device: m.device,
        name: trace.strings.get(id).into_owned(),
        gpu_ns,
        metrics: m
            .metrics
            .iter()
            .zip(sums)
            .filter(|(_, (_, w))| *w > 0.0)
            .map(|((name, _), (s, w))| (name.clone(), s / w))
            .collect(),
    }
}

/// The kernels named `name`, per GPU with metrics, with their metrics' means while they ran
/// (none without metrics or without such a kernel).
pub fn kernel_metrics(trace: &Trace, name: &str) -> Vec<KernelMetrics> {
    let (Some(step), Some(id)) = (sample_step(trace), trace.strings.find(name)) else {
        return Vec::new();
    };
    trace
        .gpu_metrics
        .iter()
        .filter_map(|m| {
            let device = trace.device(m.device)?;
            let gpu_ns: i64 = device
                .streams
                .iter()
                .flat_map(|s| (0..s.ops.len()).map(move |i| (s, i)))
                .filter(|&(s, i)| s.ops.name[i] == id && s.ops.kind[i].is_kernel())
                .map(|(s, i)| s.ops.end[i] - s.ops.start[i])
                .sum();
            (gpu_ns > 0).then(|| means_while(trace, device, m, step, id, gpu_ns))
        })
        .collect()
}

/// The sampling period of the first GPU sampled twice.
fn sample_step(trace: &Trace) -> Option<i64> {
    let first = trace.gpu_metrics.iter().find(|m| m.time.len() >= 2)?;
    crate::sorted::sample_period(&first.time)
}

/// The metrics the kernel table shows beside each kernel: how busy its SMs and tensor
/// cores were while it ran (by the start of nsys's names, whose units vary by version).
pub const ACTIVITY_METRICS: [&str; 2] = ["SMs Active", "Tensor Active"];

/// Per kernel name, over all its executions on every GPU with metrics: the time-weighted
/// mean of each of [`ACTIVITY_METRICS`] while it ran (`None` where no sample covered it).
/// One pass over the kernels, each stream's samples followed forward (not searched per
/// kernel). Samples are device-wide: where kernels overlap, each gets the same values.
pub fn kernel_activity(trace: &Trace) -> BTreeMap<String, [Option<f64>; 2]> {
    let Some(step) = sample_step(trace) else {
        return BTreeMap::new();
    };
    // Per name: per metric (Σ value × covered ns, Σ covered ns).
    let mut sums: rustc_hash::FxHashMap<u32, [(f64, f64); 2]> = Default::default();
    for m in &trace.gpu_metrics {
        let Some(device) = trace.device(m.device) else {
            continue;
        };
        let slots = ACTIVITY_METRICS.map(|want| slot_of(m, want));
        if slots.iter().all(Option::is_none) {
            continue;
        }
        for s in &device.streams {
            let ops = &s.ops;
            let mut k0 = 0;
            for i in 0..ops.len() {
                if !ops.kind[i].is_kernel() {
                    continue;
                }
                let (a, b) = (ops.start[i], ops.end[i]);
                // The sample at or before the start: ops by start, so only forward.
                k0 = crate::sorted::gallop(k0, m.time.len(), |k| m.time[k] <= a);
                let entry = sums.entry(ops.name[i]).or_default();
                for (k, covered) in covered_samples(m, step, k0.saturating_sub(1), (a, b)) {
                    for (e, slot) in entry.iter_mut().zip(&slots) {
                        if let Some(slot) = slot {
                            let v = m.metrics[*slot].1.get(k);
                            if !v.is_nan() {
                                e.0 += v as f64 * covered;
                                e.1 += covered;
                            }
                        }
                    }
                }
            }
        }
    }
    sums.into_iter()
        .map(|(id, s)| {
            let mean = |(v, w): (f64, f64)| (w > 0.0).then(|| v / w);
            (trace.strings.get(id).into_owned(), [mean(s[0]), mean(s[1])])
        })
        .collect()
}

/// A metric over an iteration against the device's typical (median) iteration.
#[derive(Debug, Clone, Serialize)]
pub struct IterationMetric {
    pub name: String,
    pub mean: f64,
    pub reference_mean: f64,
}

/// `device`'s percent metrics over `span` against `reference` (means of the samples in
/// each), largest difference first; none without metrics.
pub fn iteration_metrics(
    trace: &Trace,
    device: DeviceId,
    span: (i64, i64),
    reference: (i64, i64),
) -> Vec<IterationMetric> {
    let Some(m) = trace.device_metrics(device) else {
        return Vec::new();
    };
    let mean = |values: &crate::trace::MetricValues, (a, b): (i64, i64)| values.mean(m.range(a, b));
    let mut out: Vec<IterationMetric> = m
        .metrics
        .iter()
        .filter(|(name, _)| name.contains('%'))
        .filter_map(|(name, values)| {
            Some(IterationMetric {
                name: name.clone(),
                mean: mean(values, span)?,
                reference_mean: mean(values, reference)?,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        (b.mean - b.reference_mean)
            .abs()
            .total_cmp(&(a.mean - a.reference_mean).abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

/// A metric's name without its unit: `SMs Active [Throughput %]` → `SMs Active`.
pub fn base_name(name: &str) -> &str {
    name.split(" [").next().unwrap_or(name)
}

/// `device`'s means of [`ACTIVITY_METRICS`] over the samples in `[a, b)` (`None` where
/// it has no such metric or no sample there).
pub fn activity_means(trace: &Trace, device: DeviceId, (a, b): (i64, i64)) -> [Option<f64>; 2] {
    let Some(m) = trace.device_metrics(device) else {
        return [None, None];
    };
    let range = m.range(a, b);
    ACTIVITY_METRICS.map(|want| m.metrics[slot_of(m, want)?].1.mean(range.clone()))
}
