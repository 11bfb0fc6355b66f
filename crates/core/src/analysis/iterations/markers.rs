//! Which NVTX range marks an iteration: the candidates tried, their coverage of the GPU
//! work, and each device's iterations cut at the chosen marker.

use super::*;

/// Statistics of one NVTX group (texts equal up to numbers: one template) on one or more
/// threads.
#[derive(Clone, Copy)]
pub(super) struct Group {
    ranges: u64,
    /// Ranges that launched at least one kernel.
    ranges_with_kernels: u64,
    kernels: u64,
    /// GPU time of those kernels.
    kernel_ns: i64,
    overlapping: bool,
    /// The shallowest nesting depth of its ranges.
    depth: u16,
}

impl Group {
    /// Each range wraps a kernel or a handful, all op-sized (an ONNX Runtime `Identity_#`
    /// around one 1.6 µs kernel): an operator's annotation, not a step.
    fn wraps_single_ops(&self) -> bool {
        let with = self.ranges_with_kernels.max(1);
        2 * self.kernels <= 3 * with && self.kernel_ns / (with as i64) < OP_SIZED_NS
    }
}

/// A range launching one kernel (1.5 on average at most) of less than this annotates an
/// operator; a step, however small, launches more.
pub(super) const OP_SIZED_NS: i64 = 100_000;

impl Default for Group {
    fn default() -> Self {
        Self {
            ranges: 0,
            ranges_with_kernels: 0,
            kernels: 0,
            kernel_ns: 0,
            overlapping: false,
            depth: u16::MAX,
        }
    }
}

/// How many candidates, outermost first, are tried against the coverage rule.
pub(super) const CANDIDATES_TRIED: usize = 8;
/// The share of the GPU time between a marker's first and last iteration that its
/// iterations' GPU spans must cover.
pub(super) const MIN_COVERAGE: f64 = 0.5;
/// The share of the kernels launched between a marker's first and last range that its
/// ranges must launch: an iteration holds most of the launches of its stretch of the run
/// (a forward pass a third of them), one operator's ranges hold a sliver however much GPU
/// time their kernels take (a 21 ms attention kernel among 80 small ones a block).
pub(super) const MIN_LAUNCH_SHARE: f64 = 0.2;

/// The iteration marker of analysis-definitions.md: an NVTX group (one template) that does
/// not overlap itself on any thread, has at least 3 ranges that launch kernels, is not an
/// op-level annotation, and whose iterations' GPU spans cover most of the GPU time between
/// the first and the last; the outermost such group, then the one launching most.
pub(super) fn detect_marker(trace: &Trace) -> Option<(String, Vec<DeviceIterations>)> {
    let launches = launches_per_call(trace);
    let per_thread: Vec<HashMap<TemplateId, Group>> = (0..trace.threads.len())
        .into_par_iter()
        .map(|ti| thread_groups(trace, &launches[ti], ti))
        .collect();
    let mut groups: HashMap<TemplateId, Group> = HashMap::default();
    for map in per_thread {
        for (t, g) in map {
            let total = groups.entry(t).or_default();
            total.ranges += g.ranges;
            total.ranges_with_kernels += g.ranges_with_kernels;
            total.kernels += g.kernels;
            total.kernel_ns += g.kernel_ns;
            total.overlapping |= g.overlapping;
            total.depth = total.depth.min(g.depth);
        }
    }
    let mut candidates: Vec<(TemplateId, Group, String)> = groups
        .into_iter()
        .filter(|(_, g)| !g.overlapping && g.ranges_with_kernels >= 3 && !g.wraps_single_ops())
        .map(|(t, g)| (t, g, trace.strings.template_text(t)))
        .filter(|(_, _, name)| !is_op_level(name))
        .collect();
    candidates.sort_by(|a, b| {
        (a.1.depth, std::cmp::Reverse(a.1.kernels), a.1.ranges, &a.2).cmp(&(
            b.1.depth,
            std::cmp::Reverse(b.1.kernels),
            b.1.ranges,
            &b.2,
        ))
    });
    candidates
        .into_iter()
        .take(CANDIDATES_TRIED)
        .find_map(|(t, _, name)| {
            let per_thread: Vec<Vec<Window>> = trace
                .threads
                .iter()
                .map(|thread| template_ranges(thread, |id| trace.strings.template_of(id) == t))
                .collect();
            if launch_share(&launches, &trace.threads, &per_thread) < MIN_LAUNCH_SHARE {
                return None;
            }
            let per_device = per_device(trace, &per_thread);
            (coverage(trace, &per_device) >= MIN_COVERAGE).then_some((name, per_device))
        })
}

/// Of the kernels launched from each thread between its first range and its last, the
/// share its ranges launched.
fn launch_share(launches: &[CallLaunches], threads: &[Thread], ranges: &[Vec<Window>]) -> f64 {
    let (mut inside, mut all) = (0u64, 0u64);
    for ((thread, launched), windows) in threads.iter().zip(launches).zip(ranges) {
        let (Some(first), Some(last)) = (windows.first(), windows.last()) else {
            continue;
        };
        let starts = &thread.api.start;
        let calls_in = |a: i64, b: i64| {
            let from = starts.partition_point(|&s| s < a);
            let to = starts.partition_point(|&s| s <= b);
            launched.kernels_in(from, to.max(from))
        };
        all += calls_in(first.start, last.end);
        inside += windows
            .iter()
            .map(|w| calls_in(w.start, w.end))
            .sum::<u64>();
    }
    if all == 0 {
        return 1.0;
    }
    inside as f64 / all as f64
}

/// Texts that annotate one operator, not a step: PyTorch's `emit_nvtx` ranges
/// (`aten::mm, seq = 5, op_id = 5, …`), NCCL's and cuDNN's op ranges, and a library's own
/// functions named as C++ does (`FusionKernelRuntime::runKernelWithInput`: nvFuser marks
/// each kernel it runs).
pub(super) fn is_op_level(name: &str) -> bool {
    let qualified_function = name.contains("::")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_:<>#".contains(c));
    // A structured record (a Python dict or JSON: DLProf's and pyprof's per-op
    // annotations, `{'traceMarker': […], 'funcStack': '…'}`) describes one op.
    let record = name.trim_start().starts_with('{');
    qualified_function
        || record
        || name.starts_with("aten::")
        || name.starts_with("nccl")
        || name.starts_with("cudnn")
        || name.starts_with("cublas")
        || ["op_id = ", "seq = ", "sizes = "]
            .iter()
            .any(|k| name.contains(k))
}

/// The share of the kernel time between each device's first iteration and its last that
/// falls inside the iterations' GPU spans (a checkpoint's copy between two steps is not
/// kernel time; a layer's range around a few of a network's kernels covers little).
pub(super) fn coverage(trace: &Trace, per_device: &[DeviceIterations]) -> f64 {
    let (mut covered, mut all) = (0i64, 0i64);
    for d in per_device {
        let Some(device) = trace.device(d.device) else {
            continue;
        };
        let spans: Vec<Window> = d.spans.iter().flatten().copied().collect();
        let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
            continue;
        };
        let extent = Window::new(first.start, last.end);
        for stream in &device.streams {
            let ops = &stream.ops;
            let mut span = 0;
            for i in crate::analysis::intervals::ops_touching(stream, extent) {
                let (s, e) = (ops.start[i], ops.end[i]);
                if !ops.kind[i].is_kernel() || s < extent.start || s >= extent.end {
                    continue;
                }
                all += e - s;
                while span < spans.len() && spans[span].end <= s {
                    span += 1;
                }
                if spans.get(span).is_some_and(|w| w.start <= s) {
                    covered += e - s;
                }
            }
        }
    }
    if all > 0 {
        covered as f64 / all as f64
    } else {
        0.0
    }
}

/// A thread's API calls' kernels, as prefix sums over its calls: the kernels launched by
/// calls `[a, b)` and their GPU time, each one subtraction.
pub(super) struct CallLaunches {
    /// Kernels launched before call `c`, at `c` (wrapping: a difference is exact for any
    /// range of calls launching fewer than 2^32 kernels).
    kernels: Vec<u32>,
    /// Their GPU time.
    kernel_ns: Vec<i64>,
}

impl CallLaunches {
    /// Kernels launched by calls `[a, b)`.
    fn kernels_in(&self, a: usize, b: usize) -> u64 {
        u64::from(self.kernels[b].wrapping_sub(self.kernels[a]))
    }

    /// Their GPU time.
    fn kernel_ns_in(&self, a: usize, b: usize) -> i64 {
        self.kernel_ns[b] - self.kernel_ns[a]
    }
}

/// Per thread, the kernels its API calls launched and their GPU time, in one pass over
/// the ops (each is read once for both), summed in place: a count and a time per call with
/// their prefix sums beside took twice the fresh pages (docs/benchmarks.md, "Figures
/// behind the code").
pub(super) fn launches_per_call(trace: &Trace) -> Vec<CallLaunches> {
    let mut per_thread: Vec<CallLaunches> = trace
        .threads
        .iter()
        .map(|t| CallLaunches {
            kernels: vec![0; t.api.len() + 1],
            kernel_ns: vec![0; t.api.len() + 1],
        })
        .collect();
    for device in &trace.devices {
        for stream in &device.streams {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                if ops.launch_call[i] != NONE && ops.kind[i].is_kernel() {
                    let (t, c) = (ops.launch_thread[i] as usize, ops.launch_call[i] as usize);
                    let launched = &mut per_thread[t];
                    launched.kernels[c + 1] = launched.kernels[c + 1].wrapping_add(1);
                    launched.kernel_ns[c + 1] += ops.duration(i);
                }
            }
        }
    }
    per_thread.par_iter_mut().for_each(|launched| {
        for c in 1..launched.kernels.len() {
            launched.kernels[c] = launched.kernels[c].wrapping_add(launched.kernels[c - 1]);
            launched.kernel_ns[c] += launched.kernel_ns[c - 1];
        }
    });
    per_thread
}

/// The groups of one thread's push/pop ranges, by template. Ranges come in start order and
/// the calls inside one are found from a cursor that only moves forward.
pub(super) fn thread_groups(
    trace: &Trace,
    launches: &CallLaunches,
    ti: usize,
) -> HashMap<TemplateId, Group> {
    let thread = &trace.threads[ti];
    let (nvtx, starts) = (&thread.nvtx, &thread.api.start);
    let mut groups: HashMap<TemplateId, (Group, i64)> = HashMap::default();
    let mut cursor = 0usize;
    for r in 0..nvtx.len() {
        if nvtx.kind[r] != RangeKind::PushPop {
            continue;
        }
        let (start, end) = (nvtx.start[r], nvtx.end[r]);
        let (group, last_end) = groups
            .entry(trace.strings.template_of(nvtx.text[r]))
            .or_insert((Group::default(), i64::MIN));
        group.depth = group.depth.min(nvtx.depth[r]);
        if group.overlapping {
            continue;
        }
        if start < *last_end {
            group.overlapping = true;
            continue;
        }
        *last_end = end;
        group.ranges += 1;
        while cursor < starts.len() && starts[cursor] < start {
            cursor += 1;
        }
        let b = first_after(starts, cursor, end);
        let kernels = launches.kernels_in(cursor, b);
        group.kernels += kernels;
        group.kernel_ns += launches.kernel_ns_in(cursor, b);
        group.ranges_with_kernels += (kernels > 0) as u64;
    }
    groups.into_iter().map(|(t, (g, _))| (t, g)).collect()
}

/// The outermost push/pop ranges of `thread` whose text passes `matches`, in time order.
pub(super) fn template_ranges(
    thread: &Thread,
    mut matches: impl FnMut(StrId) -> bool,
) -> Vec<Window> {
    let nvtx = &thread.nvtx;
    let mut out: Vec<Window> = Vec::new();
    for r in 0..nvtx.len() {
        if nvtx.kind[r] == RangeKind::PushPop
            && matches(nvtx.text[r])
            && out.last().is_none_or(|w| nvtx.start[r] >= w.end)
        {
            out.push(Window::new(nvtx.start[r], nvtx.end[r]));
        }
    }
    out
}

/// The first index at or after `from` whose start is past `end`: steps doubling from
/// `from`, then a search of the last step (most ranges hold a few calls).
pub(super) fn first_after(starts: &[i64], from: usize, end: i64) -> usize {
    let mut step = 1;
    while from + step < starts.len() && starts[from + step] <= end {
        step *= 2;
    }
    let hi = (from + step + 1).min(starts.len());
    from + starts[from.min(hi)..hi].partition_point(|&s| s <= end)
}

/// The outermost push/pop ranges of `thread` that match `pattern`, in time order. Each
/// template is tested once: texts equal to the pattern with numbers as `#` share one, and
/// so do texts containing a pattern without digits; only a pattern with digits that is
/// not a whole template is tested text by text.
pub(super) fn marker_ranges(trace: &Trace, thread: &Thread, pattern: &str) -> Vec<Window> {
    let strings = &trace.strings;
    let normal = numbers_to_hash(pattern);
    let has_digits = pattern.bytes().any(|b| b.is_ascii_digit());
    let mut verdict: HashMap<TemplateId, Option<bool>> = HashMap::default();
    template_ranges(thread, |id| {
        let t = strings.template_of(id);
        let whole = *verdict.entry(t).or_insert_with(|| {
            if strings.template_text(t) == normal {
                Some(true)
            } else if !has_digits {
                Some(strings.template_contains(t, pattern.as_bytes()))
            } else {
                None
            }
        });
        whole.unwrap_or_else(|| strings.get(id).contains(pattern))
    })
}

/// Heuristic without NVTX: an iteration runs from one synchronising call's end to the
/// next one's end (a training or sampling step ends in a `.item()` or a synchronize).
pub(super) fn sync_bounded(trace: &Trace, thread: &Thread) -> Vec<Window> {
    let api = &thread.api;
    let ends: Vec<i64> = (0..api.len())
        .filter(|&i| crate::analysis::gaps::is_synchronizing(&trace.strings.get(api.name[i])))
        .map(|i| api.end[i])
        .collect();
    ends.windows(2).map(|w| Window::new(w[0], w[1])).collect()
}

/// For each device with kernels: the thread that launched most of them among those with
/// iteration ranges, and the iterations on it.
pub(super) fn per_device(trace: &Trace, ranges_of_thread: &[Vec<Window>]) -> Vec<DeviceIterations> {
    // Devices in parallel: each pass reads every op of its device, twice.
    trace
        .devices
        .par_iter()
        .filter_map(|device| device_of(trace, device, ranges_of_thread))
        .collect()
}

/// A device's iterations, from the ranges of the thread that launched most of its kernels.
pub(super) fn device_of(
    trace: &Trace,
    device: &Device,
    ranges_of_thread: &[Vec<Window>],
) -> Option<DeviceIterations> {
    let mut per_thread = vec![0u64; trace.threads.len()];
    for stream in &device.streams {
        let ops = &stream.ops;
        for i in 0..ops.len() {
            if ops.launch_call[i] != NONE && ops.kind[i].is_kernel() {
                per_thread[ops.launch_thread[i] as usize] += 1;
            }
        }
    }
    let thread = (0..trace.threads.len())
        .filter(|&t| ranges_of_thread[t].len() >= 3 && per_thread[t] > 0)
        .max_by_key(|&t| per_thread[t])?;
    Some(device_iterations(
        trace,
        device,
        thread,
        &ranges_of_thread[thread],
    ))
}

pub(super) fn device_iterations(
    trace: &Trace,
    device: &Device,
    thread: usize,
    cpu: &[Window],
) -> DeviceIterations {
    let api = &trace.threads[thread].api;
    let mut spans: Vec<Option<Window>> = vec![None; cpu.len()];
    for stream in &device.streams {
        let ops = &stream.ops;
        // A stream's launches come nearly in time order: each found from the last.
        let mut k = 0;
        for i in 0..ops.len() {
            if ops.launch_thread[i] as usize != thread
                || ops.launch_call[i] == NONE
                || !ops.kind[i].is_kernel()
            {
                continue;
            }
            let t = api.start[ops.launch_call[i] as usize];
            k = crate::sorted::partition_near(k, cpu.len(), |j| cpu[j].start <= t);
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
    // A range that launched nothing on this device is not an iteration of it.
    let (cpu, spans): (Vec<Window>, Vec<Option<Window>>) = cpu
        .iter()
        .zip(spans)
        .filter(|(_, s)| s.is_some())
        .map(|(c, s)| (*c, s))
        .unzip();
    DeviceIterations::of(device.id, thread, cpu, spans)
}
