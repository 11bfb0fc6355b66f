//! The numbers each figure draws, taken from the overview (those of `report --json`), and
//! written beside the images as `figures.json`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::breakdown::pct;
use crate::analysis::iterations::DeviceIterations;
use crate::overview::Overview;
use crate::trace::{Device, DeviceId, OpKind, Trace};

/// What the five figures draw; `None` for a figure the trace has nothing for, with why in
/// `skipped`.
#[derive(Debug, Clone, Serialize)]
pub struct FigureData {
    pub per_device_walltime: BTreeMap<String, Walltime>,
    pub iter_duration_over_time: Option<IterationsOverTime>,
    pub iter_duration_histogram: Option<IterationHistogram>,
    pub nccl_kernel_duration_hist: Option<NcclHistogram>,
    pub streams_one_iter: Option<StreamsOneIteration>,
    /// Figure name → why it was not drawn.
    pub skipped: BTreeMap<&'static str, String>,
}

/// A GPU's analysed window in shares (they sum to 100).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Walltime {
    pub compute_only_pct: f64,
    pub nccl_only_pct: f64,
    pub overlap_pct: f64,
    pub memory_only_pct: f64,
    pub idle_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct IterationsOverTime {
    /// Per GPU: each iteration's GPU start (ns from the trace's origin) and duration.
    pub series: BTreeMap<String, Vec<[i64; 2]>>,
    /// Per GPU: where its warm-up ends (the start of its first steady iteration).
    pub warmup_end_ns: BTreeMap<String, i64>,
}

/// A bin of a histogram: `[from, to)` and how many fell in it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Bin {
    pub from_ns: i64,
    pub to_ns: i64,
    pub count: usize,
}

/// The steady-state iterations' durations, every GPU's together.
#[derive(Debug, Clone, Serialize)]
pub struct IterationHistogram {
    pub count: usize,
    pub median_ns: i64,
    /// Standard deviation, and as a share of the mean.
    pub sigma_ns: f64,
    pub sigma_pct: f64,
    pub bins: Vec<Bin>,
    /// Durations outside the bins (below the 1st percentile, above the 99th): a few
    /// outliers would otherwise squash every bar into one.
    pub below: usize,
    pub above: usize,
}

/// Every NCCL kernel's duration, every GPU's together.
#[derive(Debug, Clone, Serialize)]
pub struct NcclHistogram {
    pub count: usize,
    pub bins: Vec<Bin>,
    /// Kernels outside the bins (below the 1st percentile, above the 99th).
    pub below: usize,
    pub above: usize,
    /// Peaks: the middle of each bin above both neighbours and at least a quarter as tall
    /// as the tallest, largest first (two all-to-all sizes read as two modes).
    pub modes_ns: Vec<i64>,
}

/// One iteration of one GPU, stream by stream.
#[derive(Debug, Clone, Serialize)]
pub struct StreamsOneIteration {
    pub iteration: usize,
    pub device: String,
    /// The iteration's GPU span (ns from the trace's origin).
    pub start_ns: i64,
    pub end_ns: i64,
    /// Per stream (by id): its ops in the span, `[start, end]` from the trace's origin, and
    /// what they are.
    pub spans: BTreeMap<u32, Vec<OpSpan>>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct OpSpan {
    pub start_ns: i64,
    pub end_ns: i64,
    pub kind: &'static str,
}

/// The timeline's view as a figure: a row per GPU stream.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineView {
    /// The view (ns from the trace's first event, as every time here).
    pub start_ns: i64,
    pub end_ns: i64,
    pub rows: Vec<ViewRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ViewRow {
    /// `GPU 0 · stream 7`.
    pub name: String,
    /// Its ops in the view; ops of a kind closer than a pixel of a 1600-pixel-wide figure
    /// are joined, so a zoomed-out view stays a few thousand spans a row.
    pub spans: Vec<OpSpan>,
}

/// The ops of every GPU stream within `[start, end]` (ns, the trace's clock).
pub fn timeline_view(trace: &Trace, (start, end): (i64, i64)) -> TimelineView {
    let origin = trace.time_origin().unwrap_or(0);
    let pixel = ((end - start) / 1600).max(1);
    let rows = trace
        .devices
        .iter()
        .flat_map(|d| d.streams.iter().map(move |s| (d, s)))
        .filter_map(|(d, stream)| {
            let ops = &stream.ops;
            // Ops start in order; the longest bounds how early one may start and reach in.
            let first = ops
                .start
                .partition_point(|&s| s < start - stream.longest_op_ns);
            let mut spans: Vec<OpSpan> = Vec::new();
            for i in (first..ops.len()).take_while(|&i| ops.start[i] <= end) {
                if ops.end[i] < start {
                    continue;
                }
                let kind = ops.kind[i].label();
                match spans.last_mut() {
                    Some(last) if last.kind == kind && ops.start[i] - last.end_ns < pixel => {
                        last.end_ns = last.end_ns.max(ops.end[i]);
                    }
                    _ => spans.push(OpSpan {
                        start_ns: ops.start[i],
                        end_ns: ops.end[i],
                        kind,
                    }),
                }
            }
            for s in &mut spans {
                s.start_ns -= origin;
                s.end_ns -= origin;
            }
            (!spans.is_empty()).then(|| ViewRow {
                name: format!("{} · stream {}", trace.gpu_name(d.id), stream.id),
                spans,
            })
        })
        .collect();
    TimelineView {
        start_ns: start - origin,
        end_ns: end - origin,
        rows,
    }
}

/// How many bins the linear histograms have.
const BINS: usize = 40;
/// A mode is at least this share of the tallest bin.
const MODE_SHARE: f64 = 0.25;

/// What `device` is called in the figures: `FILE:ID` in a trace of several files.
pub fn device_key(d: &Device) -> String {
    d.key.clone().unwrap_or_else(|| d.id.to_string())
}

/// The figures' numbers. `iteration`: the one `streams_one_iter` draws (default: the
/// median one of the GPU); `device`: its GPU (default: the first).
pub fn figure_data(
    trace: &Trace,
    overview: &Overview,
    iteration: Option<usize>,
    device: Option<DeviceId>,
) -> FigureData {
    let origin = trace.time_origin().unwrap_or(0);
    let key_of = |id: DeviceId| {
        trace
            .device(id)
            .map(device_key)
            .unwrap_or_else(|| id.to_string())
    };
    let mut skipped = BTreeMap::new();
    let per_device_walltime = overview
        .devices
        .iter()
        .map(|s| {
            let b = s.breakdown;
            let all = b.total();
            let w = Walltime {
                compute_only_pct: pct(b.compute_only, all),
                nccl_only_pct: pct(b.nccl_only, all),
                overlap_pct: pct(b.overlap, all),
                memory_only_pct: pct(b.memory_only, all),
                idle_pct: pct(b.idle, all),
            };
            (key_of(s.device), w)
        })
        .collect();
    let its = &overview.iterations.per_device;
    let with_iterations = its.iter().any(|d| !d.durations_ns.is_empty());
    let (over_time, histogram, streams) = if with_iterations {
        (
            Some(over_time(its, origin, &key_of)),
            iteration_histogram(its),
            streams_one_iter(trace, its, iteration, device, origin, &mut skipped),
        )
    } else {
        let why = "no iterations: no iteration marker found".to_string();
        for name in [OVER_TIME, HISTOGRAM, STREAMS] {
            skipped.insert(name, why.clone());
        }
        (None, None, None)
    };
    if with_iterations && histogram.is_none() {
        skipped.insert(HISTOGRAM, "no steady-state iterations".into());
    }
    let nccl = nccl_histogram(trace);
    if nccl.is_none() {
        skipped.insert(NCCL, "no NCCL kernels".into());
    }
    FigureData {
        per_device_walltime,
        iter_duration_over_time: over_time,
        iter_duration_histogram: histogram,
        nccl_kernel_duration_hist: nccl,
        streams_one_iter: streams,
        skipped,
    }
}

pub const WALLTIME: &str = "4_per_device_walltime";
pub const OVER_TIME: &str = "1_iter_duration_over_time";
pub const HISTOGRAM: &str = "2_iter_duration_histogram";
pub const STREAMS: &str = "3_streams_one_iter";
pub const NCCL: &str = "5_nccl_kernel_duration_hist";

/// An iteration's GPU start: its span's, or (no kernel of it on this GPU) its CPU range's.
fn start_of(d: &DeviceIterations, k: usize) -> Option<i64> {
    d.spans
        .get(k)
        .copied()
        .flatten()
        .map(|w| w.start)
        .or_else(|| d.cpu.get(k).map(|w| w.start))
}

fn over_time(
    its: &[DeviceIterations],
    origin: i64,
    key_of: &dyn Fn(DeviceId) -> String,
) -> IterationsOverTime {
    let mut series = BTreeMap::new();
    let mut warmup_end_ns = BTreeMap::new();
    for d in its.iter().filter(|d| !d.durations_ns.is_empty()) {
        let points: Vec<[i64; 2]> = d
            .durations_ns
            .iter()
            .enumerate()
            .filter_map(|(k, &dur)| Some([start_of(d, k)? - origin, dur]))
            .collect();
        if let Some(t) = start_of(d, d.warmup) {
            warmup_end_ns.insert(key_of(d.device), t - origin);
        }
        series.insert(key_of(d.device), points);
    }
    IterationsOverTime {
        series,
        warmup_end_ns,
    }
}

fn iteration_histogram(its: &[DeviceIterations]) -> Option<IterationHistogram> {
    let mut steady: Vec<i64> = its
        .iter()
        .flat_map(|d| d.durations_ns.iter().skip(d.warmup).copied())
        .filter(|&d| d > 0)
        .collect();
    if steady.is_empty() {
        return None;
    }
    steady.sort_unstable();
    let n = steady.len() as f64;
    let mean = steady.iter().map(|&d| d as f64).sum::<f64>() / n;
    let var = steady
        .iter()
        .map(|&d| (d as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    let sigma_ns = var.sqrt();
    let (bins, below, above) = central_bins(&steady);
    Some(IterationHistogram {
        count: steady.len(),
        median_ns: crate::sorted::middle(&steady).unwrap_or(0),
        sigma_ns,
        sigma_pct: if mean > 0.0 {
            100.0 * sigma_ns / mean
        } else {
            0.0
        },
        bins,
        below,
        above,
    })
}

/// `BINS` equal bins from the 1st percentile of `sorted` to its 99th, and how many values
/// fell below and above them.
pub fn central_bins(sorted: &[i64]) -> (Vec<Bin>, usize, usize) {
    if sorted.is_empty() {
        return (Vec::new(), 0, 0);
    }
    let at =
        |p: f64| sorted[((p * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)];
    let (lo, hi) = (at(0.01), at(0.99));
    let width = ((hi - lo) / BINS as i64 + 1).max(1);
    let mut bins: Vec<Bin> = (0..BINS as i64)
        .map(|k| Bin {
            from_ns: lo + k * width,
            to_ns: lo + (k + 1) * width,
            count: 0,
        })
        .collect();
    let (mut below, mut above) = (0, 0);
    for &v in sorted {
        if v < lo {
            below += 1;
        } else if v > hi {
            above += 1;
        } else {
            let k = (((v - lo) / width) as usize).min(BINS - 1);
            bins[k].count += 1;
        }
    }
    (bins, below, above)
}

fn nccl_histogram(trace: &Trace) -> Option<NcclHistogram> {
    let mut durations: Vec<i64> = trace
        .devices
        .iter()
        .flat_map(|d| &d.streams)
        .flat_map(|s| {
            let ops = &s.ops;
            (0..ops.len())
                .filter(|&i| ops.kind[i] == OpKind::Nccl)
                .map(|i| ops.duration(i))
        })
        .collect();
    if durations.is_empty() {
        return None;
    }
    durations.sort_unstable();
    let (bins, below, above) = central_bins(&durations);
    let count = durations.len();
    Some(NcclHistogram {
        count,
        modes_ns: modes(&bins),
        bins,
        below,
        above,
    })
}

/// Bins above both neighbours (a plateau counts once, at its first bin) at least
/// [`MODE_SHARE`] as tall as the tallest, largest first.
fn modes(bins: &[Bin]) -> Vec<i64> {
    let at = |k: usize| bins.get(k).map_or(0, |b| b.count);
    let tallest = bins.iter().map(|b| b.count).max().unwrap_or(0);
    let mut peaks: Vec<&Bin> = (0..bins.len())
        .filter(|&k| {
            let before = if k == 0 { 0 } else { at(k - 1) };
            let c = at(k);
            c > before && c >= at(k + 1) && c as f64 >= MODE_SHARE * tallest as f64
        })
        .map(|k| &bins[k])
        .collect();
    peaks.sort_by_key(|b| std::cmp::Reverse(b.count));
    peaks.iter().map(|b| (b.from_ns + b.to_ns) / 2).collect()
}

fn streams_one_iter(
    trace: &Trace,
    its: &[DeviceIterations],
    iteration: Option<usize>,
    device: Option<DeviceId>,
    origin: i64,
    skipped: &mut BTreeMap<&'static str, String>,
) -> Option<StreamsOneIteration> {
    let d = match device {
        Some(id) => its.iter().find(|d| d.device == id),
        None => its.iter().find(|d| !d.durations_ns.is_empty()),
    };
    let Some(d) = d else {
        skipped.insert(STREAMS, "no iterations on that GPU".into());
        return None;
    };
    let k = iteration.or(d.median_index).unwrap_or(0);
    let Some(span) = d.spans.get(k).copied().flatten() else {
        let why = if k >= d.durations_ns.len() {
            format!(
                "iteration {k} is not in the trace ({} iterations)",
                d.durations_ns.len()
            )
        } else {
            format!("iteration {k} launched no kernel on that GPU")
        };
        skipped.insert(STREAMS, why);
        return None;
    };
    let dev = trace.device(d.device)?;
    let mut spans = BTreeMap::new();
    for stream in &dev.streams {
        let ops = &stream.ops;
        let first = ops.start.partition_point(|&s| s < span.start);
        let list: Vec<OpSpan> = (first..ops.len())
            .take_while(|&i| ops.start[i] < span.end)
            .map(|i| OpSpan {
                start_ns: ops.start[i] - origin,
                end_ns: ops.end[i] - origin,
                kind: ops.kind[i].label(),
            })
            .collect();
        if !list.is_empty() {
            spans.insert(stream.id, list);
        }
    }
    Some(StreamsOneIteration {
        iteration: k,
        device: device_key(dev),
        start_ns: span.start - origin,
        end_ns: span.end - origin,
        spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sizes_read_as_two_modes_and_outliers_stay_outside_the_bins() {
        // Durations around 13 ms and 33 ms (the card's two all-to-all sizes), the second
        // half as common, and a few stalls of a second.
        let mut d: Vec<i64> = Vec::new();
        for k in 0..2000 {
            d.push(13_000_000 + (k % 41 - 20) * 20_000);
        }
        for k in 0..1000 {
            d.push(33_000_000 + (k % 41 - 20) * 20_000);
        }
        d.extend([900_000_000, 1_000_000_000, 1_100_000_000]);
        d.sort_unstable();
        let (bins, below, above) = central_bins(&d);
        let binned: usize = bins.iter().map(|b| b.count).sum();
        assert_eq!(below + binned + above, d.len());
        assert!(above >= 3, "the stalls are left out");
        assert!(
            bins.last().unwrap().to_ns < 100_000_000,
            "the bins end near 33 ms"
        );
        let m = modes(&bins);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!((m[0] - 13_000_000).abs() < 1_000_000, "{m:?}");
        assert!((m[1] - 33_000_000).abs() < 1_000_000, "{m:?}");
    }
}
