//! Iterations: the NVTX marker that delimits them (auto-detected or given), per-device GPU
//! spans and CPU lengths, warm-up, slow iterations and the slowest one.

use crate::sorted::median;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use crate::analysis::intervals::Window;
use crate::analysis::nccl_wait::Collectives;
use crate::trace::{
    Device, DeviceId, DeviceIndex, NONE, RangeKind, StrId, TemplateId, Thread, Trace,
};

mod markers;
use markers::*;

/// Text with every run of digits replaced by `#`: `denoising_step_37` → `denoising_step_#`.
pub fn numbers_to_hash(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

/// Where the iteration boundaries came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The NVTX group picked by auto-detection.
    Detected,
    /// The marker the user gave.
    Given,
    /// No NVTX marker: synchronising calls of the main launching thread end iterations.
    Heuristic,
    /// Nothing to go by.
    None,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct DeviceIterations {
    pub device: DeviceId,
    /// Index into `Trace::threads` of the thread whose ranges delimit the iterations.
    #[serde(skip)]
    pub thread: usize,
    /// The marker ranges (CPU time) on that thread, in order.
    #[serde(skip)]
    pub cpu: Vec<Window>,
    /// GPU span of each iteration's kernels; `None` when it launched none on this device.
    #[serde(skip)]
    pub spans: Vec<Option<Window>>,
    pub durations_ns: Vec<i64>,
    pub cpu_durations_ns: Vec<i64>,
    /// Leading iterations before durations settle within 10 % of the median.
    pub warmup: usize,
    /// Median duration of the steady-state iterations.
    pub median_ns: i64,
    /// The steady-state iteration whose duration is the median (the drill-down's reference).
    pub median_index: Option<usize>,
    pub slow_indices: Vec<usize>,
    pub slowest_index: Option<usize>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Iterations {
    /// The marker pattern (`denoising_step_#`), or a description of the heuristic.
    pub marker: Option<String>,
    pub source: Source,
    /// True when no NVTX marker was used.
    pub heuristic: bool,
    pub per_device: Vec<DeviceIterations>,
    /// The iteration whose longest device duration is the largest (steady state only).
    pub slowest_index: Option<usize>,
    /// How the GPUs' iterations were lined up by their collectives, when they had to be
    /// (a GPU's leading iterations that no other GPU has, dropped).
    #[serde(default)]
    pub aligned: Option<String>,
}

impl Iterations {
    /// Each iteration's time as its longest GPU's duration (a step lasts until its slowest
    /// GPU is done), and the steady state of those: the one median every place compares an
    /// iteration with ("the median across GPUs"), as a job of many ranks does.
    pub fn across_gpus(&self) -> (Vec<i64>, SteadyState) {
        let durations: Vec<i64> = (0..self.count())
            .map(|k| {
                self.per_device
                    .iter()
                    .filter_map(|d| d.durations_ns.get(k))
                    .max()
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let steady = steady_state(&durations);
        (durations, steady)
    }

    pub fn count(&self) -> usize {
        self.per_device
            .iter()
            .map(|d| d.durations_ns.len())
            .max()
            .unwrap_or(0)
    }

    /// Iteration `k`'s GPU span on each device that ran it: (the device's place in
    /// `trace.devices`, start, end), as the timeline marks it.
    pub fn spans_of(&self, trace: &Trace, k: usize) -> Vec<(DeviceIndex, i64, i64)> {
        self.per_device
            .iter()
            .filter_map(|d| {
                let w = d.spans.get(k).copied().flatten()?;
                Some((trace.device_index(d.device)?, w.start, w.end))
            })
            .collect()
    }
}

/// What `--iteration-marker` / the marker field takes to use the synchronising-call
/// heuristic instead of an NVTX marker.
pub const HEURISTIC_MARKER: &str = "heuristic";

/// Iterations of the whole trace: with `marker` given, ranges matching it (or the
/// synchronising-call heuristic for [`HEURISTIC_MARKER`]); otherwise the auto-detected
/// marker. A trace with NVTX ranges of which none qualifies has no iterations ("no
/// iteration marker found", the heuristic offered); one without any falls back to the
/// heuristic, and says so.
pub fn iterations(trace: &Trace, marker: Option<&str>) -> Iterations {
    iterations_with(
        trace,
        marker,
        &crate::analysis::nccl_wait::collectives(trace),
    )
}

/// [`iterations`], with the trace's collectives already worked out: where the GPUs share
/// collectives, iteration k is the same step on each (see [`align_by_collectives`]).
pub fn iterations_with(
    trace: &Trace,
    marker: Option<&str>,
    collectives: &Collectives,
) -> Iterations {
    align_by_collectives(trace, unaligned(trace, marker), collectives)
}

fn unaligned(trace: &Trace, marker: Option<&str>) -> Iterations {
    crate::profile_scope!("analysis: iterations");
    if marker == Some(HEURISTIC_MARKER) {
        return heuristic_iterations(trace)
            .unwrap_or_else(|| finish(None, Source::None, Vec::new()));
    }
    if let Some(pattern) = marker {
        let per_thread: Vec<Vec<Window>> = trace
            .threads
            .iter()
            .map(|t| marker_ranges(trace, t, pattern))
            .collect();
        let per_device = per_device(trace, &per_thread);
        return finish(Some(pattern.to_string()), Source::Given, per_device);
    }
    if let Some((name, per_device)) = detect_marker(trace) {
        return finish(Some(name), Source::Detected, per_device);
    }
    // No NVTX group marks a step (none recorded, or only operators' ranges: DLProf's
    // records, `emit_nvtx`'s ops): the syncs are what is left to go by.
    if let Some(it) = heuristic_iterations(trace) {
        return it;
    }
    finish(None, Source::None, Vec::new())
}

/// Iterations between the synchronising calls of each device's launching thread, taken
/// `k` intervals at a time where the program synchronises `k` times per step (the smallest
/// `k` whose sums of `k` consecutive intervals are regular). A thread whose intervals have
/// no such cycle gives no iterations: no ranking of noise.
fn heuristic_iterations(trace: &Trace) -> Option<Iterations> {
    let mut cycles: Vec<usize> = Vec::new();
    let launch_span = kernel_launch_spans(trace);
    let per_thread: Vec<Vec<Window>> = trace
        .threads
        .iter()
        .zip(&launch_span)
        .map(|(t, span)| {
            // Only where the thread launches kernels: warm-up copies before the first
            // launch are no steps.
            let Some((first, last)) = *span else {
                return Vec::new();
            };
            let intervals: Vec<Window> = sync_bounded(trace, t)
                .into_iter()
                .filter(|w| w.end > first && w.start <= last)
                .collect();
            match sync_cycle(&intervals) {
                Some((k, phase)) => {
                    cycles.push(k);
                    group_intervals(&intervals, k, phase)
                }
                None => Vec::new(),
            }
        })
        .collect();
    let per_device = per_device(trace, &per_thread);
    let k = cycles.iter().copied().max().unwrap_or(1);
    if !per_device.iter().any(|d| d.durations_ns.len() >= 3) {
        let has_syncs = trace
            .threads
            .iter()
            .any(|t| sync_bounded(trace, t).len() >= 3);
        return has_syncs.then(|| finish(Some(NO_PATTERN.to_string()), Source::None, Vec::new()));
    }
    let marker = if k == 1 {
        "synchronising calls of the launching thread".to_string()
    } else {
        format!("synchronising calls of the launching thread, {k} per iteration")
    };
    Some(finish(Some(marker), Source::Heuristic, per_device))
}

/// Per thread, the first and last start of a call that launched a kernel.
fn kernel_launch_spans(trace: &Trace) -> Vec<Option<(i64, i64)>> {
    let mut out: Vec<Option<(i64, i64)>> = vec![None; trace.threads.len()];
    for device in &trace.devices {
        for stream in &device.streams {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                let (th, call) = (ops.launch_thread[i], ops.launch_call[i]);
                if th == NONE || call == NONE || !ops.kind[i].is_kernel() {
                    continue;
                }
                let t = trace.threads[th as usize].api.start[call as usize];
                let span = &mut out[th as usize];
                *span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            }
        }
    }
    out
}

/// What the heuristic says when the intervals between syncs repeat in no cycle.
pub const NO_PATTERN: &str =
    "no repeating pattern between synchronising calls: no iterations inferred";

/// The longest cycle of intervals looked for.
const MAX_CYCLE: usize = 8;
/// Sums of `k` intervals are regular when this share of them lies within
/// `CYCLE_TOLERANCE` of their median.
const CYCLE_REGULAR_SHARE: f64 = 0.8;
const CYCLE_TOLERANCE: f64 = 0.25;

/// The smallest `k` (≤ [`MAX_CYCLE`]) for which the sums of `k` consecutive intervals are
/// regular, with the phase that ends each group at the cycle's longest interval (the
/// step's GPU work, waited for last); `None` without a cycle or with fewer than 3 groups.
pub fn sync_cycle(intervals: &[Window]) -> Option<(usize, usize)> {
    let d: Vec<i64> = intervals.iter().map(Window::len).collect();
    (1..=MAX_CYCLE).find_map(|k| {
        if d.len() / k < 3 {
            return None;
        }
        // The position in the cycle with the longest intervals ends an iteration.
        let last = (0..k)
            .max_by_key(|&j| median(&d.iter().skip(j).step_by(k).copied().collect::<Vec<_>>()))
            .unwrap_or(0);
        let phase = (last + 1) % k;
        let sums: Vec<i64> = d[phase..].chunks_exact(k).map(|c| c.iter().sum()).collect();
        if sums.len() < 3 {
            return None;
        }
        let m = median(&sums) as f64;
        let near = sums
            .iter()
            .filter(|&&x| (x as f64 - m).abs() <= CYCLE_TOLERANCE * m)
            .count();
        (m > 0.0 && near as f64 >= CYCLE_REGULAR_SHARE * sums.len() as f64).then_some((k, phase))
    })
}

/// `k` intervals at a time from `phase` on, as one window each.
fn group_intervals(intervals: &[Window], k: usize, phase: usize) -> Vec<Window> {
    intervals
        .get(phase..)
        .unwrap_or_default()
        .chunks_exact(k)
        .map(|c| Window::new(c[0].start, c[k - 1].end))
        .collect()
}

fn finish(marker: Option<String>, source: Source, per_device: Vec<DeviceIterations>) -> Iterations {
    let count = per_device
        .iter()
        .map(|d| d.durations_ns.len())
        .max()
        .unwrap_or(0);
    let warmup = per_device.iter().map(|d| d.warmup).max().unwrap_or(0);
    let slowest_index = (warmup..count).max_by_key(|&i| {
        per_device
            .iter()
            .filter_map(|d| d.durations_ns.get(i))
            .max()
            .copied()
            .unwrap_or(0)
    });
    Iterations {
        heuristic: source == Source::Heuristic,
        marker,
        source,
        per_device,
        slowest_index,
        aligned: None,
    }
}

/// Where ranks share collectives, iteration k must be the same step on every GPU before
/// any answer compares them (a rank's straggling, the critical path, the heatmap). Each
/// device's iterations are matched to the first device's by the collectives they hold;
/// the shift most of them agree on renumbers them, and leading iterations that not every
/// GPU has are dropped (a thread that synchronised once more before the first step).
pub fn align_by_collectives(
    trace: &Trace,
    it: Iterations,
    collectives: &Collectives,
) -> Iterations {
    if it.per_device.len() < 2 || collectives.is_empty() {
        return it;
    }
    // Per device (index into the trace): each of its NCCL kernels' start and collective.
    let mut starts: Vec<Vec<(i64, u32)>> = vec![Vec::new(); trace.devices.len()];
    for (g, members) in collectives.iter().enumerate() {
        for &(d, s, i) in members {
            starts[d].push((trace.devices[d].streams[s].ops.start[i], g as u32));
        }
    }
    for list in &mut starts {
        list.sort_unstable();
    }
    // Per device of `it`: the collectives its iterations hold (first and last), by index.
    let held: Vec<Vec<Option<(u32, u32)>>> = it
        .per_device
        .iter()
        .map(|d| {
            let list = trace
                .device_index(d.device)
                .map_or(&[][..], |di| &starts[di.0][..]);
            d.spans
                .iter()
                .map(|span| {
                    let w = (*span)?;
                    let a = list.partition_point(|x| x.0 < w.start);
                    let b = list.partition_point(|x| x.0 <= w.end);
                    let gs = list[a..b].iter().map(|x| x.1);
                    Some((gs.clone().min()?, gs.max()?))
                })
                .collect()
        })
        .collect();
    // The reference: the first device's iteration of each collective.
    let mut iteration_of = vec![u32::MAX; collectives.len()];
    for (k, h) in held[0].iter().enumerate() {
        if let Some((a, b)) = *h {
            for g in a..=b {
                iteration_of[g as usize] = k as u32;
            }
        }
    }
    let shifts: Vec<i64> = held
        .iter()
        .map(|h| {
            let mut votes: HashMap<i64, usize> = HashMap::default();
            for (k, x) in h.iter().enumerate() {
                if let Some((g, _)) = *x
                    && iteration_of[g as usize] != u32::MAX
                {
                    *votes
                        .entry(iteration_of[g as usize] as i64 - k as i64)
                        .or_default() += 1;
                }
            }
            votes
                .into_iter()
                .max_by_key(|&(shift, n)| (n, std::cmp::Reverse(shift.abs())))
                .map_or(0, |(shift, _)| shift)
        })
        .collect();
    let top = shifts.iter().copied().max().unwrap_or(0);
    if shifts.iter().all(|&s| s == top) {
        return it;
    }
    let mut dropped = Vec::new();
    let Iterations {
        marker,
        source,
        per_device,
        ..
    } = it;
    let per_device: Vec<DeviceIterations> = per_device
        .into_iter()
        .zip(&shifts)
        .map(|(d, &shift)| {
            let drop = (top - shift) as usize;
            if drop == 0 {
                return d;
            }
            dropped.push(match drop {
                1 => format!("{}'s first iteration", trace.gpu_name(d.device)),
                n => format!("{}'s first {n} iterations", trace.gpu_name(d.device)),
            });
            without_leading(d, drop)
        })
        .collect();
    let mut aligned = finish(marker, source, per_device);
    aligned.aligned = Some(format!(
        "iterations lined up across GPUs by their collectives: {} dropped (not every GPU has them)",
        dropped.join(", ")
    ));
    aligned
}

/// `d` without its first `n` iterations, its statistics worked out again.
fn without_leading(d: DeviceIterations, n: usize) -> DeviceIterations {
    let n = n.min(d.spans.len());
    DeviceIterations::of(
        d.device,
        d.thread,
        d.cpu[n..].to_vec(),
        d.spans[n..].to_vec(),
    )
}

impl DeviceIterations {
    /// A device's iterations from their CPU ranges and GPU spans, with their statistics.
    fn of(device: DeviceId, thread: usize, cpu: Vec<Window>, spans: Vec<Option<Window>>) -> Self {
        let durations_ns: Vec<i64> = spans.iter().map(|s| s.map_or(0, |w| w.len())).collect();
        let stats = steady_state(&durations_ns);
        DeviceIterations {
            device,
            thread,
            cpu_durations_ns: cpu.iter().map(|w| w.len()).collect(),
            cpu,
            spans,
            durations_ns,
            warmup: stats.warmup,
            median_ns: stats.median_ns,
            median_index: stats.median_index,
            slow_indices: stats.slow,
            slowest_index: stats.slowest,
        }
    }
}

/// Warm-up, median, slow and slowest of a series of durations.
#[derive(Debug, Default, PartialEq)]
pub struct SteadyState {
    pub warmup: usize,
    pub median_ns: i64,
    pub median_index: Option<usize>,
    pub slow: Vec<usize>,
    pub slowest: Option<usize>,
}

/// An iteration is slow only when it is also this much longer than the median: no
/// "+3000 %" on microseconds.
pub const SLOW_FLOOR_NS: i64 = 1_000_000;

/// Slow: an outlier of the steady iterations, beyond their upper fence (Q3 + 3 IQR), and
/// at least `SLOW_FLOOR_NS` longer than the median — a noisy but steady run flags few.
/// Warm-up: the leading iterations until one is within 10 % of the median.
pub fn steady_state(durations: &[i64]) -> SteadyState {
    if durations.is_empty() {
        return SteadyState::default();
    }
    let overall = median(durations);
    let warmup = durations
        .iter()
        .position(|&d| (d - overall).abs() * 10 <= overall)
        .unwrap_or(0);
    let steady: Vec<(usize, i64)> = durations.iter().copied().enumerate().skip(warmup).collect();
    let mut sorted = steady.clone();
    sorted.sort_by_key(|&(i, d)| (d, i));
    // Not empty: the warm-up ends at the last iteration at the latest.
    let (median_index, median_ns) = crate::sorted::middle(&sorted).unwrap_or_default();
    let quartile = |q: usize| sorted[(sorted.len() - 1) * q / 4].1;
    let (q1, q3) = (quartile(1), quartile(3));
    let fence = q3 + 3 * (q3 - q1);
    let slow = steady
        .iter()
        .filter(|&&(_, d)| d > fence && d - median_ns >= SLOW_FLOOR_NS)
        .map(|&(i, _)| i)
        .collect();
    let slowest = steady
        .iter()
        .max_by_key(|&&(i, d)| (d, std::cmp::Reverse(i)))
        .map(|&(i, _)| i);
    SteadyState {
        warmup,
        median_ns,
        median_index: Some(median_index),
        slow,
        slowest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    /// `steps` steps of 10 ms on one thread, each holding `aten::mm, op_id = N` ops that
    /// launch a 4 ms kernel each, and a `FusionExecutor::run` range around each kernel.
    fn trace(steps: i64, empty_every: Option<i64>) -> Trace {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let mut op = 0;
        for s in 0..steps {
            let t0 = s * 10_000_000;
            b.range(t, &format!("train_step_{s}"), t0, t0 + 9_000_000);
            if empty_every.is_some_and(|k| s % k == 1) {
                continue; // a step range that launches nothing
            }
            for k in 0..2 {
                let at = t0 + 100 + k * 4_500_000;
                op += 1;
                b.range(t, &format!("aten::mm, op_id = {op}"), at, at + 50);
                b.range(t, "FusionExecutor::run", at + 1, at + 40);
                let c = b.call(t, "cudaLaunchKernel", at + 10, at + 20);
                b.kernel(0, 7, "gemm", (at + 1_000, at + 4_001_000), Some(c));
            }
        }
        b.build()
    }

    #[test]
    fn the_outermost_repeating_range_is_the_marker_not_op_or_library_ranges() {
        let trace = trace(6, None);
        let it = iterations(&trace, None);
        assert_eq!(it.marker.as_deref(), Some("train_step_#"));
        assert_eq!(it.source, Source::Detected);
        let d = &it.per_device[0];
        assert_eq!(d.durations_ns, vec![8_500_000; 6]);
        assert!(d.slow_indices.is_empty());
    }

    #[test]
    fn op_level_and_library_texts_are_not_markers() {
        for name in [
            "aten::mm, op_id = #",
            "FusionKernelRuntime::runKernelWithInput",
            "nccl:all_reduce",
            "Linear, seq = #",
        ] {
            assert!(is_op_level(name), "{name}");
        }
        for name in [
            "denoising_step_#",
            "train_step",
            "FSDP forward pass",
            "iteration #",
        ] {
            assert!(!is_op_level(name), "{name}");
        }
    }

    #[test]
    fn ranges_that_launch_nothing_are_not_iterations() {
        let trace = trace(7, Some(3));
        let it = iterations(&trace, None);
        let d = &it.per_device[0];
        // Steps 1 and 4 launched nothing: 5 iterations, none of them 0 ns.
        assert_eq!(d.durations_ns.len(), 5);
        assert!(d.durations_ns.iter().all(|&ns| ns > 0));
    }

    #[test]
    fn a_given_marker_and_the_heuristic_are_taken_as_asked() {
        let trace = trace(4, None);
        let given = iterations(&trace, Some("aten::mm"));
        assert_eq!(given.source, Source::Given);
        assert_eq!(given.per_device[0].durations_ns, vec![4_000_000; 8]);
        // Without synchronising calls the heuristic finds nothing, and says so.
        let h = iterations(&trace, Some(HEURISTIC_MARKER));
        assert_eq!(h.source, Source::None);
    }

    #[test]
    fn numbers_become_hashes() {
        assert_eq!(numbers_to_hash("step_12 of 300"), "step_# of #");
        assert_eq!(numbers_to_hash("no digits"), "no digits");
    }

    fn windows(lengths: &[i64]) -> Vec<Window> {
        let mut t = 0;
        lengths
            .iter()
            .map(|&d| {
                let w = Window::new(t, t + d);
                t += d;
                w
            })
            .collect()
    }

    #[test]
    fn syncs_in_cycles_make_one_iteration_per_cycle() {
        // Four syncs a step: (4 µs, 31 µs, 3 µs, 2.0 ms), a few percent of jitter.
        let mut rng = fastrand::Rng::with_seed(4);
        let four: Vec<i64> = (0..40)
            .flat_map(|_| [4_000, 31_000, 3_000, 2_000_000])
            .map(|d: i64| d + rng.i64(0..d / 20 + 1))
            .collect();
        let (k, phase) = sync_cycle(&windows(&four)).unwrap();
        assert_eq!(k, 4);
        // Each iteration ends with the cycle's longest interval.
        let grouped = group_intervals(&windows(&four), k, phase);
        assert!(
            grouped
                .iter()
                .all(|w| (2_038_000..2_150_000).contains(&w.len()))
        );
        // Three a step: (0.1 ms, 13 ms, 0.5 ms).
        let three: Vec<i64> = (0..30)
            .flat_map(|_| [100_000, 13_000_000, 500_000])
            .collect();
        assert_eq!(sync_cycle(&windows(&three)).map(|c| c.0), Some(3));
        // Steady steps: one sync each.
        assert_eq!(sync_cycle(&windows(&[5_000_000; 12])).map(|c| c.0), Some(1));
        // No structure: no iterations.
        let noise: Vec<i64> = (0..200).map(|_| 1_000 * rng.i64(1..100_000)).collect();
        assert_eq!(sync_cycle(&windows(&noise)), None);
    }

    #[test]
    fn a_noisy_but_steady_run_flags_only_its_outliers() {
        let mut rng = fastrand::Rng::with_seed(9);
        // 10 % noise around 50 ms, and two real outliers.
        let mut d: Vec<i64> = (0..200)
            .map(|_| 50_000_000 + rng.i64(-5_000_000..5_000_000))
            .collect();
        d[60] = 120_000_000;
        d[150] = 95_000_000;
        let s = steady_state(&d);
        assert_eq!(s.slow, vec![60, 150]);
        assert_eq!(s.slowest, Some(60));
        // Microsecond iterations are never slow, however they vary.
        let tiny: Vec<i64> = (0..50)
            .map(|i| if i % 7 == 0 { 900_000 } else { 3_000 })
            .collect();
        assert!(steady_state(&tiny).slow.is_empty());
    }

    /// ONNX-Runtime-like ops: `Identity_N` ranges around one 1.6 µs kernel each, inside
    /// `step_N` ranges (or alone).
    fn op_ranges(with_steps: bool) -> Trace {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let mut n = 0;
        for s in 0..6i64 {
            let t0 = s * 10_000_000;
            if with_steps {
                b.range(t, &format!("step_{s}"), t0, t0 + 9_000_000);
            }
            for k in 0..20i64 {
                let at = t0 + 100 + k * 400_000;
                n += 1;
                b.range(t, &format!("Identity_{n}"), at, at + 30_000);
                let c = b.call(t, "cudaLaunchKernel", at + 10, at + 20);
                b.kernel(0, 7, "identity", (at + 5_000, at + 6_600), Some(c));
            }
        }
        b.build()
    }

    #[test]
    fn ranges_around_single_small_kernels_are_ops_not_steps() {
        let it = iterations(&op_ranges(true), None);
        assert_eq!(it.marker.as_deref(), Some("step_#"));
        assert_eq!(it.count(), 6);
        let it = iterations(&op_ranges(false), None);
        assert_eq!(it.source, Source::None, "{:?}", it.marker);
        assert_eq!(it.count(), 0);
    }
}
