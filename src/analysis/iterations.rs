//! Iterations: the NVTX marker that delimits them (auto-detected or given), per-device GPU
//! spans and CPU lengths, warm-up, slow iterations and the slowest one.

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use super::intervals::Window;
use crate::trace::{Device, NONE, RangeKind, StrId, Thread, Trace};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct DeviceIterations {
    pub device: u32,
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

#[derive(Debug, Clone, Serialize)]
pub struct Iterations {
    /// The marker pattern (`denoising_step_#`), or a description of the heuristic.
    pub marker: Option<String>,
    pub source: Source,
    /// True when no NVTX marker was used.
    pub heuristic: bool,
    pub per_device: Vec<DeviceIterations>,
    /// The iteration whose longest device duration is the largest (steady state only).
    pub slowest_index: Option<usize>,
}

impl Iterations {
    pub fn count(&self) -> usize {
        self.per_device
            .iter()
            .map(|d| d.durations_ns.len())
            .max()
            .unwrap_or(0)
    }
}

/// Iterations of the whole trace: with `marker` given, ranges matching it; otherwise the
/// auto-detected marker; without NVTX, the synchronising-call heuristic.
pub fn iterations(trace: &Trace, marker: Option<&str>) -> Iterations {
    let (pattern, source) = match marker {
        Some(m) => (Some(m.to_string()), Source::Given),
        None => match detect_marker(trace, &LaunchCounts::new(trace)) {
            Some(m) => (Some(m), Source::Detected),
            None => (None, Source::None),
        },
    };
    if let Some(pattern) = pattern {
        let per_thread: Vec<Vec<Window>> = trace
            .threads
            .iter()
            .map(|t| marker_ranges(trace, t, &pattern))
            .collect();
        let per_device = per_device(trace, &per_thread);
        if source == Source::Given || !per_device.is_empty() {
            return finish(Some(pattern), source, per_device);
        }
    }
    let per_thread: Vec<Vec<Window>> = trace
        .threads
        .iter()
        .map(|t| sync_bounded(trace, t))
        .collect();
    let per_device = per_device(trace, &per_thread);
    if per_device.iter().any(|d| d.durations_ns.len() >= 3) {
        let marker = "heuristic: synchronising calls of the launching thread".to_string();
        return finish(Some(marker), Source::Heuristic, per_device);
    }
    finish(None, Source::None, Vec::new())
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
    }
}

/// Per thread, how many kernels (or other GPU ops) each API call launched, as a prefix sum
/// over the thread's calls: launches in calls `[a, b)` = `prefix[b] - prefix[a]`.
struct LaunchCounts {
    prefix: Vec<Vec<u32>>,
}

impl LaunchCounts {
    fn new(trace: &Trace) -> Self {
        let mut counts: Vec<Vec<u32>> = trace
            .threads
            .iter()
            .map(|t| vec![0; t.api.len() + 1])
            .collect();
        for device in &trace.devices {
            for stream in &device.streams {
                let ops = &stream.ops;
                for i in 0..ops.len() {
                    if ops.launch_call[i] != NONE && ops.kind[i].is_kernel() {
                        counts[ops.launch_thread[i] as usize][ops.launch_call[i] as usize + 1] += 1;
                    }
                }
            }
        }
        for c in &mut counts {
            for i in 1..c.len() {
                c[i] += c[i - 1];
            }
        }
        Self { prefix: counts }
    }

    /// Kernels launched by `thread` from calls starting in `[start, end]`, where `*cursor`
    /// is at or before the first call at `start` (ranges come in start order, so the cursor
    /// only moves forward and most ranges hold few calls: no search over the whole thread).
    fn in_range(
        &self,
        starts: &[i64],
        thread: usize,
        cursor: &mut usize,
        start: i64,
        end: i64,
    ) -> u64 {
        while *cursor < starts.len() && starts[*cursor] < start {
            *cursor += 1;
        }
        let a = *cursor;
        // Gallop: double the step until past `end`, then search inside the last step.
        let mut step = 1;
        while a + step < starts.len() && starts[a + step] <= end {
            step *= 2;
        }
        let hi = (a + step + 1).min(starts.len());
        let b = a + starts[a..hi].partition_point(|&s| s <= end);
        (self.prefix[thread][b] - self.prefix[thread][a]) as u64
    }
}

/// Statistics of one NVTX group (texts equal up to numbers) on one or more threads.
#[derive(Default, Clone, Copy)]
struct Group {
    ranges: u64,
    kernels: u64,
    overlapping: bool,
}

/// The NVTX group (text with numbers as `#`) that is non-overlapping on every thread, has
/// at least 3 ranges, and whose ranges contain the most kernel launches. Threads are
/// scanned in parallel.
fn detect_marker(trace: &Trace, launches: &LaunchCounts) -> Option<String> {
    let per_thread: Vec<HashMap<String, Group>> = (0..trace.threads.len())
        .into_par_iter()
        .map(|ti| thread_groups(trace, launches, ti))
        .collect();
    let mut groups: HashMap<String, Group> = HashMap::default();
    for map in per_thread {
        for (name, g) in map {
            let total = groups.entry(name).or_default();
            total.ranges += g.ranges;
            total.kernels += g.kernels;
            total.overlapping |= g.overlapping;
        }
    }
    groups
        .into_iter()
        .filter(|(_, g)| !g.overlapping && g.ranges >= 3 && g.kernels > 0)
        .max_by(|(na, a), (nb, b)| {
            (a.kernels, std::cmp::Reverse(a.ranges), nb).cmp(&(
                b.kernels,
                std::cmp::Reverse(b.ranges),
                na,
            ))
        })
        .map(|(name, _)| name)
}

fn thread_groups(trace: &Trace, launches: &LaunchCounts, ti: usize) -> HashMap<String, Group> {
    let thread = &trace.threads[ti];
    let nvtx = &thread.nvtx;
    // Per text id: its group's index here (texts are few, ranges many).
    let mut group_of_text: HashMap<StrId, usize> = HashMap::default();
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::default();
    let mut groups: Vec<(Group, i64)> = Vec::new(); // (stats, end of the last range)
    let mut cursor = 0usize;
    for r in 0..nvtx.len() {
        if nvtx.kind[r] != RangeKind::PushPop {
            continue;
        }
        let g = *group_of_text.entry(nvtx.text[r]).or_insert_with(|| {
            let name = numbers_to_hash(&trace.strings.get(nvtx.text[r]));
            *index.entry(name.clone()).or_insert_with(|| {
                names.push(name);
                groups.push((Group::default(), i64::MIN));
                groups.len() - 1
            })
        });
        let (group, last_end) = &mut groups[g];
        if group.overlapping {
            continue;
        }
        if nvtx.start[r] < *last_end {
            group.overlapping = true;
            continue;
        }
        *last_end = nvtx.end[r];
        group.ranges += 1;
        group.kernels += launches.in_range(
            &thread.api.start,
            ti,
            &mut cursor,
            nvtx.start[r],
            nvtx.end[r],
        );
    }
    names
        .into_iter()
        .zip(groups)
        .map(|(n, (g, _))| (n, g))
        .collect()
}

/// Does this range text match the marker? Equal with numbers as `#`, or containing it.
pub fn matches_marker(text: &str, pattern: &str) -> bool {
    numbers_to_hash(text) == numbers_to_hash(pattern) || text.contains(pattern)
}

/// The outermost push/pop ranges of `thread` that match `pattern`, in time order.
fn marker_ranges(trace: &Trace, thread: &Thread, pattern: &str) -> Vec<Window> {
    let nvtx = &thread.nvtx;
    let mut verdict: HashMap<StrId, bool> = HashMap::default();
    let mut out: Vec<Window> = Vec::new();
    for r in 0..nvtx.len() {
        if nvtx.kind[r] != RangeKind::PushPop {
            continue;
        }
        let text = nvtx.text[r];
        let hit = *verdict
            .entry(text)
            .or_insert_with(|| matches_marker(&trace.strings.get(text), pattern));
        if hit && out.last().is_none_or(|w| nvtx.start[r] >= w.end) {
            out.push(Window::new(nvtx.start[r], nvtx.end[r]));
        }
    }
    out
}

/// Heuristic without NVTX: an iteration runs from one synchronising call's end to the
/// next one's end (a training or sampling step ends in a `.item()` or a synchronize).
fn sync_bounded(trace: &Trace, thread: &Thread) -> Vec<Window> {
    let api = &thread.api;
    let ends: Vec<i64> = (0..api.len())
        .filter(|&i| super::gaps::is_synchronizing(&trace.strings.get(api.name[i])))
        .map(|i| api.end[i])
        .collect();
    ends.windows(2).map(|w| Window::new(w[0], w[1])).collect()
}

/// For each device with kernels: the thread that launched most of them among those with
/// iteration ranges, and the iterations on it.
fn per_device(trace: &Trace, ranges_of_thread: &[Vec<Window>]) -> Vec<DeviceIterations> {
    let mut out = Vec::new();
    for device in &trace.devices {
        let mut per_thread = vec![0u64; trace.threads.len()];
        for stream in &device.streams {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                if ops.launch_call[i] != NONE && ops.kind[i].is_kernel() {
                    per_thread[ops.launch_thread[i] as usize] += 1;
                }
            }
        }
        let Some(thread) = (0..trace.threads.len())
            .filter(|&t| ranges_of_thread[t].len() >= 3 && per_thread[t] > 0)
            .max_by_key(|&t| per_thread[t])
        else {
            continue;
        };
        out.push(device_iterations(
            trace,
            device,
            thread,
            &ranges_of_thread[thread],
        ));
    }
    out
}

fn device_iterations(
    trace: &Trace,
    device: &Device,
    thread: usize,
    cpu: &[Window],
) -> DeviceIterations {
    let api = &trace.threads[thread].api;
    let mut spans: Vec<Option<Window>> = vec![None; cpu.len()];
    for stream in &device.streams {
        let ops = &stream.ops;
        for i in 0..ops.len() {
            if ops.launch_thread[i] as usize != thread
                || ops.launch_call[i] == NONE
                || !ops.kind[i].is_kernel()
            {
                continue;
            }
            let t = api.start[ops.launch_call[i] as usize];
            let k = cpu.partition_point(|w| w.start <= t);
            if k == 0 || t > cpu[k - 1].end {
                continue;
            }
            let span = &mut spans[k - 1];
            *span = Some(match *span {
                None => Window::new(ops.start[i], ops.end[i]),
                Some(w) => Window::new(w.start.min(ops.start[i]), w.end.max(ops.end[i])),
            });
        }
    }
    let durations_ns: Vec<i64> = spans.iter().map(|s| s.map_or(0, |w| w.len())).collect();
    let stats = steady_state(&durations_ns);
    DeviceIterations {
        device: device.id,
        thread,
        cpu: cpu.to_vec(),
        spans,
        cpu_durations_ns: cpu.iter().map(|w| w.len()).collect(),
        durations_ns,
        warmup: stats.warmup,
        median_ns: stats.median_ns,
        median_index: stats.median_index,
        slow_indices: stats.slow,
        slowest_index: stats.slowest,
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

/// Slow: above 1.5 × the steady-state median, or a robust z-score (median / MAD, scaled to
/// σ) above 3. Warm-up: the leading iterations until one is within 10 % of the median.
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
    let (median_index, median_ns) = sorted[(sorted.len() - 1) / 2];
    let deviations: Vec<i64> = steady.iter().map(|&(_, d)| (d - median_ns).abs()).collect();
    let mad = median(&deviations) as f64 * 1.4826;
    let slow = steady
        .iter()
        .filter(|&&(_, d)| {
            d as f64 > 1.5 * median_ns as f64 || (mad > 0.0 && (d - median_ns) as f64 / mad > 3.0)
        })
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

/// Lower median.
pub fn median(values: &[i64]) -> i64 {
    if values.is_empty() {
        return 0;
    }
    let mut v = values.to_vec();
    let mid = (v.len() - 1) / 2;
    *v.select_nth_unstable(mid).1
}
