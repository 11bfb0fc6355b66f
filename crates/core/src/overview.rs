//! Every analysis of a trace at once, for the `report` command and the GUI's panels:
//! devices in parallel, each over its own window (or the one given).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::analysis::breakdown::{Breakdown, SameStream, breakdown, same_stream};
use crate::analysis::cpu_sync::{ThreadSync, sync_time_per_thread};
use crate::analysis::drilldown::{Drilldown, drilldown};
use crate::analysis::gaps::{CpuIndex, DEFAULT_MIN_GAP_NS, Gap, count_gaps, gaps_into};
use crate::analysis::intervals::{Window, device_window};
use crate::analysis::iterations::{Iterations, iterations_with};
use crate::analysis::memory::{MemoryStat, memory_by_kind};
use crate::analysis::nccl_payload::{NcclPayload, nccl_payload_with};
use crate::analysis::nccl_wait::{Collectives, NcclWaits, collectives, nccl_waits};
use crate::analysis::nvtx_gpu::{NvtxGpu, nvtx_gpu};
use crate::analysis::recurring::{RecurringGap, recurring};
use crate::analysis::summary::{KernelStat, NcclStat, kernels_by_name, nccl_by_type};
use crate::critical_path::report::PathSummary;
use crate::trace::{Device, DeviceId, Trace};

#[derive(Debug, Clone)]
pub struct Options {
    /// Only this device (all when `None`).
    pub device: Option<DeviceId>,
    /// This window on every device instead of each device's own.
    pub window: Option<Window>,
    pub iteration_marker: Option<String>,
    pub min_gap_ns: i64,
    /// How many gaps, kernels and drill-down rows to list.
    pub top: usize,
}

/// The ranked lists inside the analyses (late collectives, slowest NCCL calls) hold at least
/// this many entries whatever `top` asks, and readers take their `top` of them: so `report`
/// (top 10) and the window (top 20) share one kept result, and the window's first open after
/// a `report` reads it instead of working it out again.
pub const KEPT_TOP: usize = 20;

impl Options {
    /// How many entries the analyses' ranked lists hold.
    pub fn lists_top(&self) -> usize {
        self.top.max(KEPT_TOP)
    }

    /// What a kept analysis depends on: these options with `top` as the lists hold it.
    pub fn kept_key(&self) -> Options {
        Options {
            top: self.lists_top(),
            ..self.clone()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            device: None,
            window: None,
            iteration_marker: None,
            min_gap_ns: DEFAULT_MIN_GAP_NS,
            top: 10,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeviceSummary {
    pub device: DeviceId,
    pub window: Window,
    pub breakdown: Breakdown,
    pub same_stream: Option<SameStream>,
}

pub struct Overview {
    pub devices: Vec<DeviceSummary>,
    /// Every gap of the analysed devices, in device then time order.
    pub gaps: Vec<Gap>,
    /// Patterns seen at least twice, largest total first.
    pub recurring: Vec<RecurringGap>,
    /// Gaps whose pattern occurs once, longest first (indices into `gaps`).
    pub single_gaps: Vec<u32>,
    pub iterations: Iterations,
    pub drilldown: Option<Drilldown>,
    pub kernels: Vec<KernelStat>,
    pub nccl: Vec<NcclStat>,
    /// CPU threads' time in synchronising calls, the most first.
    pub cpu_sync: Vec<ThreadSync>,
    /// Memory transfers per device and kind.
    pub memory: Vec<MemoryStat>,
    /// GPU time per NVTX range name, the most GPU span first.
    pub nvtx_gpu: Vec<NvtxGpu>,
    /// Each GPU's NCCL time: waiting for the last rank, and transfer.
    pub nccl_wait: NcclWaits,
    /// NCCL's bytes and bandwidth, from its NVTX payloads.
    pub nccl_payload: NcclPayload,
    /// The CPU side as gap searches need it (drill-downs of other iterations use it too).
    pub cpu: CpuIndex,
    /// What it was worked out with.
    pub options: Options,
    /// The trace's collectives, once worked out (see [`Overview::collectives`]).
    collectives: OnceLock<Arc<Collectives>>,
    /// The slowest iteration's critical path, once worked out (see
    /// [`Overview::slowest_path`]).
    slowest_path: OnceLock<Option<PathSummary>>,
}

impl Overview {
    /// The collectives of `trace` (the one this overview is of): worked out once, shared
    /// by the NCCL analyses, the findings' replays and the critical path.
    pub fn collectives(&self, trace: &Trace) -> Arc<Collectives> {
        self.collectives
            .get_or_init(|| Arc::new(collectives(trace)))
            .clone()
    }

    /// The slowest iteration's critical path, summed up (without the slack), of `trace`
    /// (the one this overview is of): worked out once, so that a report can work it out
    /// beside the findings' replays and print it after.
    pub fn slowest_path(&self, trace: &Trace) -> Option<&PathSummary> {
        self.slowest_path
            .get_or_init(|| {
                let k = self.iterations.slowest_index?;
                let graph =
                    crate::critical_path::Graph::with_collectives(trace, self.collectives(trace));
                crate::critical_path::report::totals(&graph, &self.iterations, k)
            })
            .as_ref()
    }

    /// GPU `id`'s analysed window (its breakdown's), as (start, end).
    pub fn analysed_window(&self, id: DeviceId) -> Option<(i64, i64)> {
        self.devices
            .iter()
            .find(|d| d.device == id)
            .map(|d| (d.window.start, d.window.end))
    }

    /// The indices of the `n` longest gaps, longest first (ties by position).
    pub fn longest_gaps(&self, n: usize) -> Vec<usize> {
        let key = |i: usize| (std::cmp::Reverse(self.gaps[i].duration_ns), i);
        least_keys(self.gaps.len(), n, key)
    }

    /// The indices of `device`'s `n` longest gaps, longest first (ties by position).
    pub fn longest_gaps_of(&self, device: DeviceId, n: usize) -> Vec<usize> {
        let key = |i: usize| {
            let g = &self.gaps[i];
            (g.device_id() != device, std::cmp::Reverse(g.duration_ns), i)
        };
        let mut out = least_keys(self.gaps.len(), n, key);
        out.retain(|&i| self.gaps[i].device_id() == device);
        out
    }
}

/// The `n` indices of `0..len` with the least `key`s, least first: one pass with the best
/// so far in a heap (selecting among an index list of millions of gaps was a visible
/// share of a report).
fn least_keys<K: Ord>(len: usize, n: usize, key: impl Fn(usize) -> K) -> Vec<usize> {
    let mut best: std::collections::BinaryHeap<(K, usize)> =
        std::collections::BinaryHeap::with_capacity(n.min(len) + 1);
    for i in 0..len {
        if best.len() < n {
            best.push((key(i), i));
        } else if let Some(mut worst) = best.peek_mut() {
            let k = key(i);
            if k < worst.0 {
                *worst = (k, i);
            }
        }
    }
    best.into_sorted_vec().into_iter().map(|(_, i)| i).collect()
}

pub fn selected_devices<'t>(trace: &'t Trace, options: &Options) -> Vec<&'t Device> {
    trace
        .devices
        .iter()
        .filter(|d| options.device.is_none_or(|id| d.id == id))
        .collect()
}

pub fn overview(trace: &Trace, options: &Options) -> Overview {
    overview_cancellable(trace, options, &AtomicBool::new(false)).expect("not cancelled")
}

/// The costly part of an overview, what the cache keeps between opens: every gap, their
/// recurring patterns, and the GPU time per NVTX range.
pub struct GapFindings {
    pub gaps: Vec<Gap>,
    pub recurring: Vec<RecurringGap>,
    pub single_gaps: Vec<u32>,
    pub nvtx_gpu: Vec<NvtxGpu>,
}

/// The rest of an overview but its drill-down and CPU index (both cheap, built again): the
/// analyses the cache keeps per set of options.
pub struct Analyses {
    pub devices: Vec<DeviceSummary>,
    pub iterations: Iterations,
    pub kernels: Vec<KernelStat>,
    pub nccl: Vec<NcclStat>,
    pub cpu_sync: Vec<ThreadSync>,
    pub memory: Vec<MemoryStat>,
    pub nccl_wait: NcclWaits,
    pub nccl_payload: NcclPayload,
}

/// What an earlier run of the same trace and options left in the cache.
#[derive(Default)]
pub struct Kept {
    pub gap_findings: Option<GapFindings>,
    pub analyses: Option<Analyses>,
}

impl Overview {
    /// The parts [`GapFindings`] holds, borrowed.
    pub fn gap_findings(&self) -> (&[Gap], &[RecurringGap], &[u32], &[NvtxGpu]) {
        (
            &self.gaps,
            &self.recurring,
            &self.single_gaps,
            &self.nvtx_gpu,
        )
    }
}

/// Like [`overview`], stopping between its steps once `cancel` is set (`None` then): the
/// window's Cancel during "Analysing…".
pub fn overview_cancellable(
    trace: &Trace,
    options: &Options,
    cancel: &AtomicBool,
) -> Option<Overview> {
    overview_with(trace, options, cancel, Kept::default())
}

/// Like [`overview_cancellable`], with what an earlier run of the same trace and options
/// kept (not worked out again).
pub fn overview_with(
    trace: &Trace,
    options: &Options,
    cancel: &AtomicBool,
    kept: Kept,
) -> Option<Overview> {
    crate::profile_scope!("analyses (all)");
    let cpu = CpuIndex::new(trace);
    match (kept.gap_findings, kept.analyses) {
        (Some(g), Some(a)) => Some(assemble(trace, options, cpu, g, a)),
        (gap_findings, _) => work_out(trace, options, cancel, cpu, gap_findings),
    }
}

/// An overview from kept parts: only the drill-down is worked out.
fn assemble(
    trace: &Trace,
    options: &Options,
    cpu: CpuIndex,
    g: GapFindings,
    a: Analyses,
) -> Overview {
    let drilldown = a.iterations.slowest_index.map(|k| {
        drilldown(
            trace,
            &cpu,
            &a.iterations,
            k,
            options.min_gap_ns,
            options.top,
        )
    });
    Overview {
        devices: a.devices,
        gaps: g.gaps,
        recurring: g.recurring,
        single_gaps: g.single_gaps,
        iterations: a.iterations,
        drilldown,
        kernels: a.kernels,
        nccl: a.nccl,
        cpu_sync: a.cpu_sync,
        memory: a.memory,
        nvtx_gpu: g.nvtx_gpu,
        nccl_wait: a.nccl_wait,
        nccl_payload: a.nccl_payload,
        cpu,
        options: options.clone(),
        collectives: OnceLock::new(),
        slowest_path: OnceLock::new(),
    }
}

/// What a run is measured by where only its outcome is wanted (the `what-if` command's
/// replayed run): each selected device's summary, every gap with its cause, the iterations.
pub struct RunMeasures {
    pub devices: Vec<DeviceSummary>,
    pub gaps: Vec<Gap>,
    pub iterations: Iterations,
}

/// The [`RunMeasures`] of `trace`, as [`overview`] works them out, without the analyses
/// nothing reads there: a replayed run is a second copy of the trace beside the first, and
/// the memory of its analyses decided the command's peak.
pub fn run_measures(trace: &Trace, options: &Options) -> RunMeasures {
    let cpu = CpuIndex::new(trace);
    let never = AtomicBool::new(false);
    let selected = selected_devices(trace, options);
    let ((devices, gaps), iterations) = rayon::join(
        || per_device_gaps(trace, options, &never, &cpu, &selected, true),
        || {
            iterations_with(
                trace,
                options.iteration_marker.as_deref(),
                &collectives(trace),
            )
        },
    );
    RunMeasures {
        devices,
        gaps,
        iterations,
    }
}

/// Each selected device's summary and (when `find_gaps`) its gaps.
fn per_device_gaps(
    trace: &Trace,
    options: &Options,
    cancel: &AtomicBool,
    cpu: &CpuIndex,
    devices: &[&Device],
    find_gaps: bool,
) -> (Vec<DeviceSummary>, Vec<Gap>) {
    let cancelled = || cancel.load(Ordering::Relaxed);
    let windows: Vec<(&Device, Window)> = devices
        .iter()
        .filter_map(|&device| Some((device, options.window.or_else(|| device_window(device))?)))
        .collect();
    let (summaries, counts): (Vec<DeviceSummary>, Vec<usize>) = windows
        .par_iter()
        .map(|&(device, window)| {
            let breakdown = breakdown(device, window);
            let summary = DeviceSummary {
                device: device.id,
                window,
                breakdown,
                same_stream: same_stream(device, window).map(|s| s.with_hidden(&breakdown)),
            };
            let count = if find_gaps && !cancelled() {
                count_gaps(device, window, options.min_gap_ns)
            } else {
                0
            };
            (summary, count)
        })
        .unzip();
    // One list, each device filling its own part in parallel: millions of gaps are
    // written once, not gathered per device and then copied.
    let mut gaps = Vec::new();
    (0..counts.iter().sum::<usize>())
        .into_par_iter()
        .map(|_| Gap::EMPTY)
        .collect_into_vec(&mut gaps);
    let mut parts = Vec::with_capacity(windows.len());
    let mut rest = gaps.as_mut_slice();
    for (&(device, window), &n) in windows.iter().zip(&counts) {
        let (part, tail) = rest.split_at_mut(n);
        parts.push((device, window, part));
        rest = tail;
    }
    parts.into_par_iter().for_each(|(device, window, part)| {
        if !cancelled() {
            gaps_into(trace, cpu, device, window, options.min_gap_ns, part);
        }
    });
    (summaries, gaps)
}

/// Every analysis worked out (the gap findings taken from `kept` when there).
fn work_out(
    trace: &Trace,
    options: &Options,
    cancel: &AtomicBool,
    cpu: CpuIndex,
    kept: Option<GapFindings>,
) -> Option<Overview> {
    let cancelled = || cancel.load(Ordering::Relaxed);
    let devices = selected_devices(trace, options);
    let find_gaps = kept.is_none();
    // Two sides, each analysis started as soon as what it needs is there: the gaps, then
    // their patterns; beside them the collectives, then every analysis needing no gap
    // (a barrier after the gaps left a core idle while they finished).
    let (gap_side, rest) = rayon::join(
        || {
            let (summaries, gaps) =
                per_device_gaps(trace, options, cancel, &cpu, &devices, find_gaps);
            match kept {
                Some(k) => (
                    summaries,
                    k.gaps,
                    (k.recurring, k.single_gaps),
                    Some(k.nvtx_gpu),
                ),
                None if cancelled() => (summaries, gaps, Default::default(), None),
                None => {
                    let patterns = recurring(trace, &gaps);
                    (summaries, gaps, patterns, None)
                }
            }
        },
        || {
            let found = Arc::new(collectives(trace));
            if cancelled() {
                return None;
            }
            let (((nccl_payload, iterations), nvtx_gpu), (nccl_wait, (memory, more))) = rayon::join(
                || {
                    rayon::join(
                        || {
                            rayon::join(
                                || nccl_payload_with(trace, &found, options.lists_top()),
                                || {
                                    iterations_with(
                                        trace,
                                        options.iteration_marker.as_deref(),
                                        &found,
                                    )
                                },
                            )
                        },
                        || find_gaps.then(|| nvtx_gpu(trace, options.window)),
                    )
                },
                || {
                    rayon::join(
                        || nccl_waits(trace, &found, options.lists_top()),
                        || {
                            (
                                memory_by_kind(trace, options.window),
                                rayon::join(
                                    || kernels_by_name(trace, &devices, options.window),
                                    || {
                                        rayon::join(
                                            || nccl_by_type(trace, &devices, options.window),
                                            || sync_time_per_thread(trace, options.window),
                                        )
                                    },
                                ),
                            )
                        },
                    )
                },
            );
            let (kernels, (nccl, cpu_sync)) = more;
            Some((
                found,
                nccl_payload,
                iterations,
                nvtx_gpu,
                nccl_wait,
                memory,
                kernels,
                nccl,
                cpu_sync,
            ))
        },
    );
    if cancelled() {
        return None;
    }
    let (summaries, gaps, (recurring, single_gaps), kept_nvtx) = gap_side;
    let (found, nccl_payload, iterations, nvtx_gpu, nccl_wait, memory, kernels, nccl, cpu_sync) =
        rest?;
    let nvtx_gpu = kept_nvtx.or(nvtx_gpu).unwrap_or_default();
    let drilldown = iterations
        .slowest_index
        .map(|k| drilldown(trace, &cpu, &iterations, k, options.min_gap_ns, options.top));
    Some(Overview {
        devices: summaries,
        gaps,
        recurring,
        single_gaps,
        iterations,
        drilldown,
        kernels,
        nccl,
        cpu_sync,
        memory,
        nvtx_gpu,
        nccl_wait,
        nccl_payload,
        cpu,
        options: options.clone(),
        collectives: OnceLock::from(found),
        slowest_path: OnceLock::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::least_keys;

    #[test]
    fn the_least_keys_are_the_first_of_a_full_sort() {
        let mut rng = fastrand::Rng::with_seed(3);
        for len in [0, 1, 5, 100, 2000] {
            // Few distinct values: ties broken by position, as the gap tables show them.
            let durations: Vec<i64> = (0..len).map(|_| rng.i64(0..20)).collect();
            let key = |i: usize| (std::cmp::Reverse(durations[i]), i);
            let mut sorted: Vec<usize> = (0..len).collect();
            sorted.sort_by_key(|&i| key(i));
            for n in [0, 1, 3, 10, len, len + 7] {
                let expected: Vec<usize> = sorted.iter().copied().take(n).collect();
                assert_eq!(least_keys(len, n, key), expected, "len {len}, n {n}");
            }
        }
    }
}
