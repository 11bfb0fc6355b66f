//! Drill-down of one iteration against the median one: breakdown of both, the kernels that
//! grew most, its gaps, and per NCCL collective the rank that started last (the straggler)
//! with what its launching thread was doing instead.

use std::collections::HashMap;

use serde::Serialize;

use super::breakdown::{Breakdown, breakdown};
use super::gaps::{CpuIndex, Gap, gaps, is_synchronizing};
use super::intervals::{Window, ops_touching};
use super::iterations::{DeviceIterations, Iterations};
use super::recurring::{GapDetail, describe, os_call_name};
use crate::format::format_ns;
use crate::trace::{Device, DeviceId, NONE, OpKind, StrId, Trace};

#[derive(Debug, Clone, Serialize)]
pub struct KernelGrowth {
    pub name: String,
    /// Which occurrence of this name in the iteration (0-based).
    pub occurrence: usize,
    pub duration_ns: i64,
    pub reference_ns: i64,
    pub growth_ns: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceDrilldown {
    pub device: DeviceId,
    pub span: Window,
    pub reference_index: usize,
    pub reference_span: Window,
    pub duration_ns: i64,
    pub reference_ns: i64,
    pub breakdown_ns: Breakdown,
    pub reference_breakdown_ns: Breakdown,
    /// Largest growth first.
    pub kernels_grown: Vec<KernelGrowth>,
    /// Its longest gaps, in words.
    pub gaps: Vec<GapDetail>,
    /// What made it differ from the median iteration, largest |delta| first.
    pub contributors: Vec<Contributor>,
    /// The GPU's percent metrics over the iteration against the median one, largest
    /// difference first (a capture with GPU metrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<super::gpu_metrics::IterationMetric>,
}

/// One part of the difference between an iteration and the device's median one: a kind
/// of gap, a kernel (by name and stream), NCCL time spent waiting for the last rank, or
/// memory ops.
#[derive(Debug, Clone, Serialize)]
pub struct Contributor {
    pub device: DeviceId,
    /// `gap`, `kernel`, `nccl_wait` or `memory`.
    pub kind: &'static str,
    pub delta_ns: i64,
    pub this_ns: i64,
    pub reference_ns: i64,
    pub description: String,
}

/// What a rank's launching thread was doing before a late collective: its longest API call
/// (other than launches) since it launched the previous collective (or since the
/// iteration began), where it was in NVTX, and how long the thread took in all.
#[derive(Debug, Clone, Serialize)]
pub struct Activity {
    pub longest_call: Option<String>,
    pub longest_call_ns: i64,
    pub longest_call_start_ns: Option<i64>,
    /// The longest stretch of the thread's own CPU time in that interval: no CUDA or OS
    /// runtime call (Python computing). A stall of plain CPU time has no call to name.
    pub cpu_ns: i64,
    pub cpu_start_ns: Option<i64>,
    /// NVTX path of the thread in its longest call or CPU stretch, whichever is longer (at
    /// the launch, without either).
    pub nvtx_path: Vec<String>,
    /// From the previous collective's launch (or the iteration's start) to this launch.
    pub since_previous_collective_ns: i64,
    /// Time in synchronising calls in that interval.
    pub synchronized_ns: i64,
}

impl Activity {
    /// Whether the thread's longest stall was its own CPU time rather than a call.
    pub fn computing(&self) -> bool {
        self.cpu_ns > self.longest_call_ns
    }

    /// What the thread was doing, in words: `in read() for 1.2 s` or `computing (no CUDA
    /// or OS call) for 1.2 s`.
    pub fn doing(&self) -> String {
        match &self.longest_call {
            Some(call) if !self.computing() => {
                format!("in {call} for {}", format_ns(self.longest_call_ns))
            }
            _ if self.cpu_ns > 0 => format!(
                "computing (no CUDA or OS call) for {}",
                format_ns(self.cpu_ns)
            ),
            _ => format!(
                "busy on the CPU for {}",
                format_ns(self.since_previous_collective_ns)
            ),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Collective {
    /// Position among the iteration's NCCL kernels.
    pub index: usize,
    pub name: String,
    /// (device, start) on every rank that ran it.
    pub starts_ns: Vec<(DeviceId, i64)>,
    pub straggler_device: DeviceId,
    /// Last start minus first start.
    pub lateness_ns: i64,
    pub activity: Activity,
}

#[derive(Debug, Clone, Serialize)]
pub struct Drilldown {
    pub iteration: usize,
    pub devices: Vec<DeviceDrilldown>,
    /// Collectives, latest straggler first.
    pub collectives: Vec<Collective>,
    /// The straggler of the collective with the largest lateness.
    pub straggler_device: Option<DeviceId>,
    pub straggler_activity: Option<Activity>,
    /// Every device's contributors together, largest |delta| first.
    pub contributors: Vec<Contributor>,
}

/// A kernel of one iteration: (stream index, op index).
type Kernel = (usize, usize);

/// The kernels that iteration `k` of `it` launched on `device`, in start order.
fn iteration_kernels(
    trace: &Trace,
    device: &Device,
    it: &DeviceIterations,
    k: usize,
) -> Vec<Kernel> {
    let (Some(Some(span)), Some(cpu)) = (it.spans.get(k), it.cpu.get(k)) else {
        return Vec::new();
    };
    let api = &trace.threads[it.thread].api;
    let mut out = Vec::new();
    for (si, stream) in device.streams.iter().enumerate() {
        let ops = &stream.ops;
        for i in ops_touching(stream, *span) {
            let call = ops.launch_call[i];
            if call == NONE
                || ops.launch_thread[i] as usize != it.thread
                || !ops.kind[i].is_kernel()
            {
                continue;
            }
            let t = api.start[call as usize];
            if t >= cpu.start && t <= cpu.end {
                out.push((si, i));
            }
        }
    }
    out.sort_by_key(|&(s, i)| (device.streams[s].ops.start[i], s));
    out
}

/// Kernels aligned by (name, occurrence); largest growth first.
fn kernel_growth(
    trace: &Trace,
    device: &Device,
    slow: &[Kernel],
    reference: &[Kernel],
    top: usize,
) -> Vec<KernelGrowth> {
    let keyed = |ks: &[Kernel]| -> HashMap<(StrId, usize), i64> {
        let mut seen: HashMap<StrId, usize> = HashMap::new();
        ks.iter()
            .map(|&(s, i)| {
                let ops = &device.streams[s].ops;
                let n = seen.entry(ops.name[i]).or_default();
                *n += 1;
                ((ops.name[i], *n - 1), ops.duration(i))
            })
            .collect()
    };
    let reference = keyed(reference);
    let mut grown: Vec<KernelGrowth> = keyed(slow)
        .into_iter()
        .map(|((name, occurrence), d)| {
            let r = reference.get(&(name, occurrence)).copied().unwrap_or(0);
            KernelGrowth {
                name: trace.strings.get(name).to_string(),
                occurrence,
                duration_ns: d,
                reference_ns: r,
                growth_ns: d - r,
            }
        })
        // Growth only: a kernel that shrank did not make the iteration slow.
        .filter(|g| g.growth_ns > 0)
        .collect();
    grown.sort_by(|a, b| {
        b.growth_ns
            .cmp(&a.growth_ns)
            .then_with(|| a.occurrence.cmp(&b.occurrence))
    });
    grown.truncate(top);
    grown
}

fn activity_before(
    trace: &Trace,
    device: &Device,
    it: &DeviceIterations,
    collectives: &[Kernel],
    j: usize,
) -> Activity {
    let thread = &trace.threads[it.thread];
    let api = &thread.api;
    let call_of = |k: Kernel| device.streams[k.0].ops.launch_call[k.1] as usize;
    let call = call_of(collectives[j]);
    let since = match j.checked_sub(1) {
        Some(p) => api.end[call_of(collectives[p])],
        None => {
            let k = it
                .cpu
                .partition_point(|w| w.start <= api.start[call])
                .saturating_sub(1);
            it.cpu.get(k).map_or(api.start[call], |w| w.start)
        }
    };
    activity_since(trace, thread, since, call)
}

/// What `thread` did from `since` to the start of its API call `call` (a collective's
/// launch): its longest call other than launches and syncs, its longest stretch of CPU
/// time with no call, and where it was in NVTX. The rank summaries record it for every
/// collective, so that a job read from them names a late rank's activity as a full load does.
pub fn activity_since(
    trace: &Trace,
    thread: &crate::trace::Thread,
    since: i64,
    call: usize,
) -> Activity {
    let api = &thread.api;
    // One graph launch may release several collectives: the one before ended its call
    // after this one's began (the same call), and nothing ran in between.
    let since = since.min(api.start[call]);
    let first = api.start.partition_point(|&s| s < since);
    // A synchronising call waits for the rank's own GPU, which stays busy meanwhile; what
    // delays the collective is CPU work that is neither a launch nor a wait.
    let name = |i: usize| trace.strings.get(api.name[i]);
    let synchronized_ns = (first..call)
        .filter(|&i| is_synchronizing(&name(i)))
        .map(|i| api.end[i] - api.start[i])
        .sum();
    let longest = (first..call)
        .filter(|&i| !name(i).contains("Launch") && !is_synchronizing(&name(i)))
        .max_by_key(|&i| api.end[i] - api.start[i])
        .map(|i| {
            let n = trace.strings.get(api.name[i]).to_string();
            (api.end[i] - api.start[i], api.start[i], n)
        });
    // An OS runtime call in that time (a `read()` of a data loader) may be what held it.
    let os = &thread.osrt;
    let longest_os = thread
        .osrt_overlapping(since, api.start[call])
        .max_by_key(|&i| os.end[i] - os.start[i])
        .map(|i| {
            (
                os.end[i] - os.start[i],
                os.start[i],
                os_call_name(trace, thread, i),
            )
        });
    let longest = match (longest, longest_os) {
        (Some(c), Some(o)) => Some(if o.0 > c.0 { o } else { c }),
        (c, o) => c.or(o),
    };
    let cpu = longest_cpu_stretch(thread, first..call, since, api.start[call]);
    let at = match (&longest, cpu) {
        (Some(l), Some((ns, start))) if ns > l.0 => start + ns / 2,
        (None, Some((ns, start))) => start + ns / 2,
        (Some(l), _) => l.1,
        (None, None) => api.start[call],
    };
    Activity {
        longest_call_ns: longest.as_ref().map_or(0, |l| l.0),
        longest_call_start_ns: longest.as_ref().map(|l| l.1),
        longest_call: longest.map(|l| l.2),
        cpu_ns: cpu.map_or(0, |c| c.0),
        cpu_start_ns: cpu.map(|c| c.1),
        nvtx_path: thread
            .nvtx
            .path_at(at)
            .into_iter()
            .map(|r| trace.strings.get(thread.nvtx.text[r as usize]).to_string())
            .collect(),
        since_previous_collective_ns: api.start[call] - since,
        synchronized_ns,
    }
}

/// The longest stretch of `[a, b)` in which `thread` was in none of its CUDA calls
/// `calls` (those starting in it) nor an OS runtime call: (length, start).
fn longest_cpu_stretch(
    thread: &crate::trace::Thread,
    calls: std::ops::Range<usize>,
    a: i64,
    b: i64,
) -> Option<(i64, i64)> {
    if b <= a {
        return None;
    }
    let (api, os) = (&thread.api, &thread.osrt);
    let mut busy: Vec<(i64, i64)> = calls.map(|i| (api.start[i], api.end[i])).collect();
    busy.extend(
        thread
            .osrt_overlapping(a, b)
            .map(|i| (os.start[i], os.end[i])),
    );
    busy.sort_unstable();
    let mut best: Option<(i64, i64)> = None;
    let mut free_from = a;
    for (s, e) in busy.into_iter().chain(std::iter::once((b, b))) {
        let s = s.max(a).min(b);
        if s > free_from && best.is_none_or(|x| s - free_from > x.0) {
            best = Some((s - free_from, free_from));
        }
        free_from = free_from.max(e.min(b));
    }
    best
}

/// Drill-down of iteration `k`; `top` limits the kernels and gaps listed per device.
pub fn drilldown(
    trace: &Trace,
    cpu: &CpuIndex,
    iterations: &Iterations,
    k: usize,
    min_gap_ns: i64,
    top: usize,
) -> Drilldown {
    crate::profile_scope!("analysis: drill-down");
    let (mut devices, nccl_per_rank): (Vec<DeviceDrilldown>, Vec<RankNccl>) = iterations
        .per_device
        .iter()
        .filter_map(|it| device_drilldown(trace, cpu, it, k, min_gap_ns, top))
        .unzip();
    let collectives = collectives_by_lateness(trace, &nccl_per_rank);
    let straggler =
        super::arrivals::straggler_collective(collectives.iter().map(|c| (c.index, c.lateness_ns)))
            .and_then(|(index, _)| collectives.iter().find(|c| c.index == index));
    add_nccl_contributors(trace, iterations, k, top, &mut devices);
    let mut contributors: Vec<Contributor> = devices
        .iter()
        .flat_map(|d| d.contributors.iter().cloned())
        .collect();
    contributors.sort_by(|a, b| {
        b.delta_ns
            .abs()
            .cmp(&a.delta_ns.abs())
            .then(a.device.cmp(&b.device))
    });
    Drilldown {
        iteration: k,
        straggler_device: straggler.map(|c| c.straggler_device),
        straggler_activity: straggler.map(|c| c.activity.clone()),
        devices,
        collectives,
        contributors,
    }
}

/// A rank's NCCL kernels in the iteration: its device's id, the device, its iterations and
/// the kernels in start order.
type RankNccl<'t> = (DeviceId, &'t Device, &'t DeviceIterations, Vec<Kernel>);

/// One device's drill-down of iteration `k` against its median one, and its NCCL kernels
/// in it; `None` when the device lacks either iteration.
fn device_drilldown<'t>(
    trace: &'t Trace,
    cpu: &CpuIndex,
    it: &'t DeviceIterations,
    k: usize,
    min_gap_ns: i64,
    top: usize,
) -> Option<(DeviceDrilldown, RankNccl<'t>)> {
    let device = trace.device(it.device)?;
    let (Some(Some(span)), Some(reference_index)) = (it.spans.get(k).copied(), it.median_index)
    else {
        return None;
    };
    let reference_span = it.spans[reference_index].unwrap_or(span);
    let slow = iteration_kernels(trace, device, it, k);
    let reference = iteration_kernels(trace, device, it, reference_index);
    let mut iteration_gaps = gaps(trace, cpu, device, span, min_gap_ns);
    let reference_gaps = gaps(trace, cpu, device, reference_span, min_gap_ns);
    let mut contributors = gap_contributors(trace, device.id, &iteration_gaps, &reference_gaps);
    contributors.extend(op_contributors(trace, device, span, reference_span));
    iteration_gaps.sort_by_key(|g| std::cmp::Reverse(g.duration_ns));
    iteration_gaps.truncate(top);
    let iteration_gaps = iteration_gaps
        .iter()
        .map(|g| describe(trace, g, 3))
        .collect();
    let drilldown = DeviceDrilldown {
        device: it.device,
        span,
        reference_index,
        reference_span,
        duration_ns: span.len(),
        reference_ns: reference_span.len(),
        breakdown_ns: breakdown(device, span),
        reference_breakdown_ns: breakdown(device, reference_span),
        kernels_grown: kernel_growth(trace, device, &slow, &reference, top),
        gaps: iteration_gaps,
        contributors,
        metrics: super::gpu_metrics::iteration_metrics(
            trace,
            it.device,
            (span.start, span.end),
            (reference_span.start, reference_span.end),
        ),
    };
    let nccl: Vec<Kernel> = slow
        .into_iter()
        .filter(|&(s, i)| device.streams[s].ops.kind[i] == OpKind::Nccl)
        .collect();
    Some((drilldown, (it.device, device, it, nccl)))
}

/// The iteration's collectives matched by their place on each rank, the latest-arriving
/// first (of equal lateness the earlier).
fn collectives_by_lateness(trace: &Trace, nccl_per_rank: &[RankNccl]) -> Vec<Collective> {
    let count = nccl_per_rank.iter().map(|r| r.3.len()).min().unwrap_or(0);
    let mut collectives: Vec<Collective> = (0..count)
        .map(|j| {
            let starts: Vec<(DeviceId, i64)> = nccl_per_rank
                .iter()
                .map(|(id, device, _, ks)| (*id, device.streams[ks[j].0].ops.start[ks[j].1]))
                .collect();
            let (last, &(straggler, last_start)) = starts
                .iter()
                .enumerate()
                .max_by_key(|(_, (id, s))| (*s, std::cmp::Reverse(*id)))
                .expect("at least one rank");
            let first_start = starts.iter().map(|s| s.1).min().unwrap_or(last_start);
            let (_, device, it, ks) = &nccl_per_rank[last];
            let ops = &device.streams[ks[j].0].ops;
            Collective {
                index: j,
                name: trace.strings.get(ops.name[ks[j].1]).to_string(),
                starts_ns: starts,
                straggler_device: straggler,
                lateness_ns: last_start - first_start,
                activity: activity_before(trace, device, it, ks, j),
            }
        })
        .collect();
    collectives.sort_by(|a, b| {
        b.lateness_ns
            .cmp(&a.lateness_ns)
            .then_with(|| a.index.cmp(&b.index))
    });
    collectives
}

/// Each device's NCCL time in the iteration against its median one, split into waiting for
/// the last rank and transfer, as contributors; each device's contributors then ranked and
/// cut to `top`.
fn add_nccl_contributors(
    trace: &Trace,
    iterations: &Iterations,
    k: usize,
    top: usize,
    devices: &mut [DeviceDrilldown],
) {
    // NCCL time spent waiting for the last rank, against each device's median iteration.
    let waits = nccl_waits(trace, iterations, k);
    // Each is over every rank: worked out once per median iteration, not once per device
    // (most devices share theirs; a job of many ranks did it ranks × ranks times).
    let mut reference_waits: HashMap<usize, HashMap<DeviceId, NcclTime>> = HashMap::default();
    for dev in devices.iter_mut() {
        let this = waits.get(&dev.device).copied().unwrap_or_default();
        let reference = reference_waits
            .entry(dev.reference_index)
            .or_insert_with(|| nccl_waits(trace, iterations, dev.reference_index))
            .get(&dev.device)
            .copied()
            .unwrap_or_default();
        let who = match this.last {
            Some(d) if d == dev.device => "this GPU started its collectives last".to_string(),
            Some(d) => format!("{} started last", trace.gpu_name(d)),
            None => "no collective".to_string(),
        };
        let (transfer, reference_transfer) = (
            this.total - this.waiting,
            reference.total - reference.waiting,
        );
        dev.contributors.push(Contributor {
            device: dev.device,
            kind: "nccl_wait",
            delta_ns: this.waiting - reference.waiting,
            this_ns: this.waiting,
            reference_ns: reference.waiting,
            description: format!(
                "NCCL kernels waiting for the last rank ({who}): {} in this iteration, {} in the median one",
                format_ns(this.waiting),
                format_ns(reference.waiting)
            ),
        });
        dev.contributors.push(Contributor {
            device: dev.device,
            kind: "kernel",
            delta_ns: transfer - reference_transfer,
            this_ns: transfer,
            reference_ns: reference_transfer,
            description: format!(
                "NCCL transfer (kernel time once every rank had arrived): {} in this iteration, {} in the median one",
                format_ns(transfer),
                format_ns(reference_transfer)
            ),
        });
        dev.contributors.sort_by(|a, b| {
            b.delta_ns
                .abs()
                .cmp(&a.delta_ns.abs())
                .then(a.kind.cmp(b.kind))
        });
        dev.contributors.truncate(top);
    }
}

/// Time and count on each side (this iteration, the reference), and what else a group keeps.
type Sides<T> = ([i64; 2], [usize; 2], T);

/// Gaps of an iteration against the reference one's, grouped by neighbours and cause.
fn gap_contributors(
    trace: &Trace,
    device: DeviceId,
    this: &[Gap],
    reference: &[Gap],
) -> Vec<Contributor> {
    type Key = (StrId, StrId, super::gaps::Cause);
    let key = |g: &Gap| (g.before_name(trace), g.after_name(trace), g.cause);
    // Per kind of gap: (total, count, longest) in this iteration and in the reference.
    let mut groups: HashMap<Key, Sides<Option<Gap>>> = HashMap::new();
    for (side, list) in [(0, this), (1, reference)] {
        for g in list {
            let e = groups.entry(key(g)).or_insert(([0; 2], [0; 2], None));
            e.0[side] += g.duration_ns;
            e.1[side] += 1;
            if side == 0 && e.2.is_none_or(|l| l.duration_ns < g.duration_ns) {
                e.2 = Some(*g);
            }
        }
    }
    groups
        .into_iter()
        .map(|((before, after, cause), (ns, n, longest))| {
            let name = |id| trace.strings.get(id);
            let what = longest.map_or(String::new(), |g| {
                let d = describe(trace, &g, 1);
                let enclosing = d
                    .enclosing_nvtx
                    .map_or(String::new(), |e| format!(" in {e}"));
                let cpu = d
                    .activity
                    .map_or(String::new(), |a| format!("; the CPU was {}", a.text()));
                format!("{enclosing}{cpu}")
            });
            Contributor {
                device,
                kind: "gap",
                delta_ns: ns[0] - ns[1],
                this_ns: ns[0],
                reference_ns: ns[1],
                description: format!(
                    "{} gaps {} → {}{what}: {} ({}) in this iteration, {} ({}) in the median one",
                    cause.label(),
                    name(before),
                    name(after),
                    format_ns(ns[0]),
                    crate::format::plural(n[0], "gap"),
                    format_ns(ns[1]),
                    crate::format::plural(n[1], "gap")
                ),
            }
        })
        .collect()
}

/// Kernels (by name and stream) and memory ops of an iteration's span against the
/// reference's. NCCL kernels count their transfer part only: their waiting is its own
/// contributor.
fn op_contributors(
    trace: &Trace,
    device: &Device,
    span: Window,
    reference: Window,
) -> Vec<Contributor> {
    // (name, stream id, is memory) → ([time], [count]) in this span and the reference.
    let mut groups: HashMap<(StrId, u32, bool), Sides<()>> = HashMap::new();
    for (side, w) in [(0, span), (1, reference)] {
        for stream in &device.streams {
            let ops = &stream.ops;
            for i in ops_touching(stream, w) {
                if ops.start[i] < w.start || ops.start[i] >= w.end || ops.kind[i] == OpKind::Nccl {
                    continue;
                }
                let e = groups
                    .entry((ops.name[i], stream.id, !ops.kind[i].is_kernel()))
                    .or_default();
                e.0[side] += ops.duration(i);
                e.1[side] += 1;
            }
        }
    }
    groups
        .into_iter()
        .map(|((name, stream, memory), (ns, n, ()))| Contributor {
            device: device.id,
            kind: if memory { "memory" } else { "kernel" },
            delta_ns: ns[0] - ns[1],
            this_ns: ns[0],
            reference_ns: ns[1],
            description: format!(
                "{} {} on stream {stream}: {} ({}) in this iteration, {} ({}) in the median one",
                if memory { "memory op" } else { "kernel" },
                trace.strings.get(name),
                format_ns(ns[0]),
                crate::format::plural(n[0], "op"),
                format_ns(ns[1]),
                crate::format::plural(n[1], "op")
            ),
        })
        .collect()
}

/// Per device, the NCCL time of iteration `k` spent waiting for the last rank (the k-th
/// collective's kernel time before the last rank's kernel started), and which device
/// started last most often.
fn nccl_waits(trace: &Trace, iterations: &Iterations, k: usize) -> HashMap<DeviceId, NcclTime> {
    let ranks: Vec<(DeviceId, Vec<(i64, i64)>)> = iterations
        .per_device
        .iter()
        .filter_map(|it| {
            let device = trace.device(it.device)?;
            let nccl = iteration_kernels(trace, device, it, k)
                .into_iter()
                .filter(|&(s, i)| device.streams[s].ops.kind[i] == OpKind::Nccl)
                .map(|(s, i)| (device.streams[s].ops.start[i], device.streams[s].ops.end[i]))
                .collect();
            Some((it.device, nccl))
        })
        .collect();
    let count = ranks.iter().map(|r| r.1.len()).min().unwrap_or(0);
    let mut out: HashMap<DeviceId, NcclTime> = ranks
        .iter()
        .map(|r| {
            (
                r.0,
                NcclTime {
                    waiting: 0,
                    total: r.1.iter().map(|(s, e)| e - s).sum(),
                    last: None,
                },
            )
        })
        .collect();
    // The rank named is the last one of the collective that waited longest.
    let mut latest: Option<(i64, DeviceId)> = None;
    for j in 0..count {
        let (last_device, last_start) = ranks
            .iter()
            .map(|r| (r.0, r.1[j].0))
            .max_by_key(|&(d, s)| (s, std::cmp::Reverse(d)))
            .expect("ranks");
        let first_start = ranks.iter().map(|r| r.1[j].0).min().unwrap_or(last_start);
        if latest.is_none_or(|(l, _)| last_start - first_start > l) {
            latest = Some((last_start - first_start, last_device));
        }
        for (d, kernels) in &ranks {
            let (s, e) = kernels[j];
            out.get_mut(d).unwrap().waiting += (last_start - s).max(0).min(e - s);
        }
    }
    let last = latest.filter(|l| l.0 > 0).map(|l| l.1);
    for v in out.values_mut() {
        v.last = last;
    }
    out
}

/// A device's NCCL kernel time in one iteration: in all, and waiting for the last rank.
#[derive(Default, Clone, Copy)]
struct NcclTime {
    waiting: i64,
    total: i64,
    /// The device that started last in the collective that waited longest.
    last: Option<DeviceId>,
}
