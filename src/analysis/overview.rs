//! Every analysis of a trace at once, for the `report` command and the GUI's panels:
//! devices in parallel, each over its own window (or the one given).

use rayon::prelude::*;

use super::breakdown::{Breakdown, SameStream, breakdown, same_stream};
use super::cpu_sync::{ThreadSync, sync_time_per_thread};
use super::drilldown::{Drilldown, drilldown};
use super::gaps::{DEFAULT_MIN_GAP_NS, gaps};
use super::intervals::{Window, device_window};
use super::iterations::{Iterations, iterations};
use super::recurring::{GapDetail, RecurringGap, describe, recurring};
use super::summary::{KernelStat, NcclStat, kernels_by_name, nccl_by_type};
use crate::trace::{Device, Trace};

#[derive(Debug, Clone)]
pub struct Options {
    /// Only this device (all when `None`).
    pub device: Option<u32>,
    /// This window on every device instead of each device's own.
    pub window: Option<Window>,
    pub iteration_marker: Option<String>,
    pub min_gap_ns: i64,
    /// How many gaps, kernels and drill-down rows to list.
    pub top: usize,
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

#[derive(Debug, Clone)]
pub struct DeviceSummary {
    pub device: u32,
    pub window: Window,
    pub breakdown: Breakdown,
    pub same_stream: Option<SameStream>,
}

pub struct Overview {
    pub devices: Vec<DeviceSummary>,
    /// Every gap of the analysed devices, in device then time order.
    pub gaps: Vec<GapDetail>,
    pub recurring: Vec<RecurringGap>,
    pub iterations: Iterations,
    pub drilldown: Option<Drilldown>,
    pub kernels: Vec<KernelStat>,
    pub nccl: Vec<NcclStat>,
    /// CPU threads' time in synchronising calls, the most first.
    pub cpu_sync: Vec<ThreadSync>,
}

impl Overview {
    /// Gap indices, longest first.
    pub fn longest_gaps(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.gaps.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.gaps[i].gap.duration_ns), i));
        order
    }
}

pub fn selected_devices<'t>(trace: &'t Trace, options: &Options) -> Vec<&'t Device> {
    trace
        .devices
        .iter()
        .filter(|d| options.device.is_none_or(|id| d.id == id))
        .collect()
}

pub fn overview(trace: &Trace, options: &Options) -> Overview {
    let devices = selected_devices(trace, options);
    let per_device: Vec<(DeviceSummary, Vec<GapDetail>)> = devices
        .par_iter()
        .filter_map(|device| {
            let window = options.window.or_else(|| device_window(device))?;
            let details = gaps(trace, device, window, options.min_gap_ns)
                .iter()
                .map(|g| describe(trace, device, g, 3))
                .collect();
            let summary = DeviceSummary {
                device: device.id,
                window,
                breakdown: breakdown(device, window),
                same_stream: same_stream(device, window),
            };
            Some((summary, details))
        })
        .collect();
    let (summaries, gap_lists): (Vec<_>, Vec<_>) = per_device.into_iter().unzip();
    let gaps: Vec<GapDetail> = gap_lists.into_iter().flatten().collect();
    let (recurring, (iterations, (kernels, (nccl, cpu_sync)))) = rayon::join(
        || recurring(&gaps),
        || {
            rayon::join(
                || iterations(trace, options.iteration_marker.as_deref()),
                || {
                    (
                        kernels_by_name(trace, &devices, options.window),
                        rayon::join(
                            || nccl_by_type(trace, &devices, options.window),
                            || sync_time_per_thread(trace),
                        ),
                    )
                },
            )
        },
    );
    let drilldown = iterations
        .slowest_index
        .map(|k| drilldown(trace, &iterations, k, options.min_gap_ns, options.top));
    Overview {
        devices: summaries,
        gaps,
        recurring,
        iterations,
        drilldown,
        kernels,
        nccl,
        cpu_sync,
    }
}
