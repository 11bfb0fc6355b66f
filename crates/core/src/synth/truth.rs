//! The ground truth a generated trace carries beside it, computed from the generator's own
//! event lists (not by the loader or the analyses): per-device time breakdown, every gap
//! with its neighbours, NVTX context and cause, iteration durations and the straggler.

use std::collections::BTreeMap;

use serde::Serialize;

use super::program::KERNELS;
use super::sim::{OP_MEMCPY_DTOH, OP_MEMCPY_HTOD, OP_MEMSET, RankSim, TruthOp, Wait};

/// Gaps shorter than this are not gaps (analysis-definitions.md default).
pub const MIN_GAP_NS: i64 = 1_000;

/// The same result type as the analysis; the truth computes it independently, below.
pub use crate::analysis::Breakdown;

#[derive(Debug, Clone, Serialize)]
pub struct SameStream {
    pub stream: u32,
    pub nccl_pct: f64,
    pub compute_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceTruth {
    pub id: u32,
    pub pid: u32,
    pub kernels: u64,
    pub nccl_kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    /// Kernels that have a launching API call (all of them, in generated traces).
    pub linked_kernels: u64,
    pub window_ns: [i64; 2],
    pub breakdown_ns: Breakdown,
    pub same_stream: SameStream,
}

/// Every kernel of one name, on all devices.
#[derive(Debug, Clone, Serialize)]
pub struct KernelTruth {
    /// The short name (`program::KERNELS`), contained in the name the trace shows.
    pub name: String,
    pub count: u64,
    pub total_ns: i64,
}

/// A rank's NCCL time: waiting for the last rank, and transfer.
#[derive(Debug, Clone, Serialize)]
pub struct NcclWaitTruth {
    pub device: u32,
    pub collectives: usize,
    pub wait_ns: i64,
    pub transfer_ns: i64,
    pub last_arrivals: usize,
}

/// The k-th NCCL kernel of every rank is one collective (every rank joins every one): its
/// time before the last rank's kernel starts is waiting.
pub fn nccl_wait_truth(ranks: &[RankSim]) -> Vec<NcclWaitTruth> {
    let kernels: Vec<Vec<&TruthOp>> = ranks
        .iter()
        .map(|r| {
            r.truth
                .iter()
                .filter(|o| (o.op as usize) < KERNELS.len() && KERNELS[o.op as usize].nccl)
                .collect()
        })
        .collect();
    let n = kernels.iter().map(Vec::len).min().unwrap_or(0);
    let mut out: Vec<NcclWaitTruth> = (0..ranks.len())
        .map(|r| NcclWaitTruth {
            device: r as u32,
            collectives: n,
            wait_ns: 0,
            transfer_ns: 0,
            last_arrivals: 0,
        })
        .collect();
    for k in 0..n {
        let (last_rank, last) = kernels
            .iter()
            .enumerate()
            .map(|(r, ops)| (r, ops[k].start))
            .max_by_key(|&(r, s)| (s, std::cmp::Reverse(r)))
            .expect("ranks");
        for (r, ops) in kernels.iter().enumerate() {
            let op = ops[k];
            let wait = (last - op.start).max(0).min(op.end - op.start);
            out[r].wait_ns += wait;
            out[r].transfer_ns += op.end - op.start - wait;
        }
        out[last_rank].last_arrivals += 1;
    }
    out
}

/// Kernel counts and total time by name over all ranks, in `KERNELS` order.
pub fn kernel_totals(ranks: &[RankSim]) -> Vec<KernelTruth> {
    let mut totals = vec![(0u64, 0i64); KERNELS.len()];
    for op in ranks.iter().flat_map(|r| &r.truth) {
        if let Some(t) = totals.get_mut(op.op as usize) {
            t.0 += 1;
            t.1 += op.end - op.start;
        }
    }
    KERNELS
        .iter()
        .zip(totals)
        .map(|(k, (count, total_ns))| KernelTruth {
            name: k.short.to_string(),
            count,
            total_ns,
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct GapTruth {
    pub device: u32,
    pub start_ns: i64,
    pub duration_ns: i64,
    pub before: String,
    pub after: String,
    pub before_stream: u32,
    pub after_stream: u32,
    pub before_nvtx: Vec<String>,
    pub after_nvtx: Vec<String>,
    pub enclosing_nvtx: Option<String>,
    pub cause: String,
    /// With `--cpu-samples`: the launching (main) thread's samples in the gap, and the
    /// innermost frame most of them are in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_samples: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_top_frame: Option<String>,
}

/// Of samples (time, innermost frame) sorted by time, those in `[start, start + duration)`:
/// how many, and the frame most of them are in (ties: the first by name).
pub fn top_sampled_frame(
    samples: &[(i64, &'static str)],
    start: i64,
    duration: i64,
) -> (Option<u32>, Option<String>) {
    let lo = samples.partition_point(|s| s.0 < start);
    let hi = samples.partition_point(|s| s.0 < start + duration);
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for s in &samples[lo..hi] {
        *counts.entry(s.1).or_default() += 1;
    }
    let top = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(f, _)| f.to_string());
    (Some((hi - lo) as u32), top)
}

#[derive(Debug, Clone, Serialize)]
pub struct IterationDevice {
    pub device: u32,
    /// GPU span of the kernels launched inside each `denoising_step_N` range.
    pub durations_ns: Vec<i64>,
    /// The ranges' own (CPU) lengths.
    pub cpu_durations_ns: Vec<i64>,
    pub slowest_index: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct IterationTruth {
    pub marker: String,
    pub count: usize,
    pub warmup: u32,
    pub per_device: Vec<IterationDevice>,
    /// The step the generator slowed down, and the rank (device) that caused it.
    pub slowest_index: usize,
    pub straggler_device: u32,
    pub straggler_pause_ns: i64,
    /// What the straggler's launching thread was doing instead (API call name).
    pub straggler_activity: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroundTruth {
    pub preset: String,
    pub flavour: String,
    pub nccl_stream: String,
    /// Rows written per table (NVTX_EVENTS counts every row, ranges and others).
    pub tables: BTreeMap<String, u64>,
    pub nvtx_ranges: u64,
    /// Kernels by name, all devices together.
    pub kernels: Vec<KernelTruth>,
    /// Each rank's NCCL time split into waiting for the last rank and transfer.
    pub nccl_wait: Vec<NcclWaitTruth>,
    /// What NCCL's payloads say, when the export carries them.
    pub nccl_payload: Option<NcclPayloadTruth>,
    pub devices: Vec<DeviceTruth>,
    /// Every gap counted per device and cause.
    pub gap_summary: Vec<GapSummary>,
    /// The gaps listed one by one: all of them, or when there are more than
    /// `LIST_ALL_GAPS_UP_TO`, those of at least `gaps_listed_from_ns`.
    pub gaps_listed_from_ns: i64,
    pub gaps: Vec<GapTruth>,
    pub iterations: IterationTruth,
    /// With `--cuda-graphs`: how they were recorded, the launches and the kernels they ran.
    pub cuda_graphs: Option<GraphsTruth>,
    /// With `--gpu-metrics`: each GPU's metrics' means over its kernel window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_metrics: Option<Vec<super::metrics::MetricsTruth>>,
    /// With `--memory-usage`: each GPU's device memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_usage: Option<Vec<super::memory::MemoryTruth>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphsTruth {
    pub trace_level: super::GraphTrace,
    pub launches: u64,
    /// The kernels the launches ran (recorded at node level only).
    pub kernels: u64,
    /// Distinct graphs per rank.
    pub graphs: u32,
}

/// Traces with more gaps than this list only the longer ones (a realistic `large` has one
/// at nearly every one of its 4.4M kernel boundaries).
pub const LIST_ALL_GAPS_UP_TO: usize = 50_000;
/// The shortest gap listed when not all are.
pub const LISTED_GAP_MIN_NS: i64 = 10_000;

pub fn op_name(op: u16) -> &'static str {
    match op {
        OP_MEMCPY_HTOD => "Memcpy HtoD",
        OP_MEMCPY_DTOH => "Memcpy DtoH",
        OP_MEMSET => "Memset",
        k => KERNELS[k as usize].short,
    }
}

/// Sweep over interval endpoints: time spent in each state inside `window`.
pub fn breakdown(ops: &[TruthOp], window: (i64, i64)) -> Breakdown {
    // (time, +1/-1, class 0 compute / 1 nccl / 2 memory)
    let mut events: Vec<(i64, i32, usize)> = Vec::with_capacity(ops.len() * 2);
    for op in ops {
        let (s, e) = (op.start.max(window.0), op.end.min(window.1));
        if e <= s {
            continue;
        }
        let class = if op.is_nccl() {
            1
        } else if op.is_kernel() {
            0
        } else {
            2
        };
        events.push((s, 1, class));
        events.push((e, -1, class));
    }
    events.sort_unstable();
    let mut active = [0i32; 3];
    let mut out = Breakdown::default();
    let mut t = window.0;
    for (time, delta, class) in events {
        let span = time - t;
        match (active[0] > 0, active[1] > 0, active[2] > 0) {
            (true, true, _) => out.overlap += span,
            (true, false, _) => out.compute_only += span,
            (false, true, _) => out.nccl_only += span,
            (false, false, true) => out.memory_only += span,
            (false, false, false) => out.idle += span,
        }
        active[class] += delta;
        t = time;
    }
    out.idle += window.1 - t;
    out
}

fn same_stream(ops: &[TruthOp]) -> SameStream {
    let mut nccl: BTreeMap<u32, i64> = BTreeMap::new();
    let mut compute: BTreeMap<u32, i64> = BTreeMap::new();
    for op in ops.iter().filter(|o| o.is_kernel()) {
        let m = if op.is_nccl() {
            &mut nccl
        } else {
            &mut compute
        };
        *m.entry(op.stream).or_default() += op.end - op.start;
    }
    let (stream, nccl_on) = nccl
        .iter()
        .max_by_key(|(s, t)| (**t, std::cmp::Reverse(**s)))
        .map_or((0, 0), |(s, t)| (*s, *t));
    let pct = |part: i64, all: i64| {
        if all > 0 {
            100.0 * part as f64 / all as f64
        } else {
            0.0
        }
    };
    SameStream {
        stream,
        nccl_pct: pct(nccl_on, nccl.values().sum()),
        compute_pct: pct(
            compute.get(&stream).copied().unwrap_or(0),
            compute.values().sum(),
        ),
    }
}

/// A gap as the generator finds it: where, and the ops (indices into the rank's truth
/// list) on either side.
#[derive(Debug, Clone, Copy)]
pub struct RawGap {
    pub start_ns: i64,
    pub duration_ns: i64,
    before: usize,
    after: usize,
}

/// Every gap of a rank's ops inside `window`, in time order.
pub fn raw_gaps(ops: &[TruthOp], window: (i64, i64)) -> Vec<RawGap> {
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| (ops[i].start, ops[i].end));
    let mut out = Vec::new();
    let mut last: Option<usize> = None; // op with the latest end so far
    for &i in &order {
        let op = &ops[i];
        if let Some(l) = last {
            let busy_until = ops[l].end;
            let (gap_start, gap_end) = (busy_until.max(window.0), op.start.min(window.1));
            if gap_end - gap_start >= MIN_GAP_NS {
                out.push(RawGap {
                    start_ns: gap_start,
                    duration_ns: gap_end - gap_start,
                    before: l,
                    after: i,
                });
            }
            if op.end > busy_until {
                last = Some(i);
            }
        } else {
            last = Some(i);
        }
    }
    out
}

/// The cause of a gap, by why the op after it started late. An op that had been launched
/// in time and waited only for the GPU's own 1–3 µs between kernels is "dependency"
/// (analysis-definitions.md: dependency / other).
pub fn cause_of(rank: &RankSim, gap: &RawGap) -> &'static str {
    match rank.truth[gap.after].wait {
        Wait::None | Wait::Dependency => "dependency",
        w => w.label(),
    }
}

/// A gap in words: names, streams, NVTX paths and enclosing range.
pub fn describe_gap(rank: &RankSim, device: u32, gap: &RawGap) -> GapTruth {
    let ops = &rank.truth;
    let (before, after) = (&ops[gap.before], &ops[gap.after]);
    let before_nvtx = rank.path_string(before.path);
    let after_nvtx = rank.path_string(after.path);
    let common = before_nvtx
        .iter()
        .zip(&after_nvtx)
        .take_while(|(a, b)| a == b)
        .count();
    GapTruth {
        device,
        start_ns: gap.start_ns,
        duration_ns: gap.duration_ns,
        before: op_name(before.op).to_string(),
        after: op_name(after.op).to_string(),
        before_stream: before.stream,
        after_stream: after.stream,
        enclosing_nvtx: common.checked_sub(1).map(|c| before_nvtx[c].clone()),
        before_nvtx,
        after_nvtx,
        cause: cause_of(rank, gap).to_string(),
        cpu_samples: None,
        cpu_top_frame: None,
    }
}

/// Every gap of a device counted, by cause: the truth for traces whose gaps are too many
/// to list one by one.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GapSummary {
    pub device: u32,
    pub count: u64,
    pub total_ns: i64,
    /// Cause label → (count, total ns).
    pub by_cause: BTreeMap<String, (u64, i64)>,
}

pub fn summarise_gaps(rank: &RankSim, device: u32, gaps: &[RawGap]) -> GapSummary {
    let mut summary = GapSummary {
        device,
        ..Default::default()
    };
    for g in gaps {
        summary.count += 1;
        summary.total_ns += g.duration_ns;
        let entry = summary
            .by_cause
            .entry(cause_of(rank, g).to_string())
            .or_default();
        entry.0 += 1;
        entry.1 += g.duration_ns;
    }
    summary
}

pub fn device_truth(rank: &RankSim, device: u32, pid: u32) -> (DeviceTruth, Vec<RawGap>) {
    let ops = &rank.truth;
    let kernels = ops.iter().filter(|o| o.is_kernel());
    let window = (
        kernels.clone().map(|o| o.start).min().unwrap_or(0),
        kernels.clone().map(|o| o.end).max().unwrap_or(0),
    );
    let count = |f: &dyn Fn(&TruthOp) -> bool| ops.iter().filter(|o| f(o)).count() as u64;
    let truth = DeviceTruth {
        id: device,
        pid,
        kernels: count(&|o| o.is_kernel()),
        nccl_kernels: count(&|o| o.is_nccl()),
        memcpys: count(&|o| o.op == OP_MEMCPY_DTOH || o.op == OP_MEMCPY_HTOD),
        memsets: count(&|o| o.op == OP_MEMSET),
        linked_kernels: count(&|o| o.is_kernel()),
        window_ns: [window.0, window.1],
        breakdown_ns: breakdown(ops, window),
        same_stream: same_stream(ops),
    };
    (truth, raw_gaps(ops, window))
}

/// GPU span of each step's kernels, per rank.
pub fn step_spans(rank: &RankSim, steps: u32) -> Vec<i64> {
    let mut spans = vec![(i64::MAX, i64::MIN); steps as usize];
    for op in rank
        .truth
        .iter()
        .filter(|o| o.is_kernel() && o.step != u32::MAX)
    {
        let s = &mut spans[op.step as usize];
        s.0 = s.0.min(op.start);
        s.1 = s.1.max(op.end);
    }
    spans.into_iter().map(|(a, b)| b - a).collect()
}

/// NCCL's bytes and bandwidth as the generator wrote them: every rank makes the same
/// all-to-alls (a send and a receive of the message to each rank, itself included).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NcclPayloadTruth {
    pub ranks: u32,
    pub communicator: String,
    pub collectives_per_device: usize,
    pub calls_per_device: usize,
    pub message_bytes_per_device: u64,
    pub total_message_bytes: u64,
    pub message_bytes_p50: u64,
    pub message_bytes_p99: u64,
    pub busbw_gbps_median: f64,
    /// Per device: how many collectives moved each number of bytes (as nccl-tests counts
    /// them: the sends summed).
    pub collectives_by_bytes: std::collections::BTreeMap<u64, usize>,
}

/// Nearest-rank percentile of sorted values (0 for none).
fn nearest<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `transfers`: each collective's message per peer and transfer time.
pub fn nccl_payload_truth(transfers: &[(u64, i64)], ranks: u32) -> NcclPayloadTruth {
    let n = ranks as u64;
    let mut messages: Vec<u64> = transfers
        .iter()
        .flat_map(|&(m, _)| std::iter::repeat_n(m, 2 * ranks as usize))
        .collect();
    messages.sort_unstable();
    let factor = (n as f64 - 1.0) / n as f64;
    let mut busbw: Vec<f64> = transfers
        .iter()
        .map(|&(m, t)| (m * n) as f64 / t as f64 * factor)
        .collect();
    busbw.sort_by(f64::total_cmp);
    let per_device: u64 = messages.iter().sum();
    NcclPayloadTruth {
        ranks,
        communicator: format!("{:016x}", super::sim::NCCL_COMM),
        collectives_per_device: transfers.len(),
        calls_per_device: messages.len(),
        message_bytes_per_device: per_device,
        total_message_bytes: per_device * n,
        message_bytes_p50: nearest(&messages, 0.5),
        message_bytes_p99: nearest(&messages, 0.99),
        busbw_gbps_median: nearest(&busbw, 0.5),
        collectives_by_bytes: transfers.iter().fold(Default::default(), |mut m, &(b, _)| {
            *m.entry(b * n).or_default() += 1;
            m
        }),
    }
}
