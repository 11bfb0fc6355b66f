//! The detectors: each reads the analyses' evidence and proposes the change that would
//! fix what it found (replayed later for the saving).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{Finding, Kind, MAX_OCCURRENCES, Severity, Where, run_span};
use crate::analysis::breakdown::{State, first_state_intervals};
use crate::analysis::gaps::{Cause, Gap, OpRef, SyncCalls, launch_nvtx_path, sync_call_names};
use crate::analysis::recurring::{activity, cause_text};
use crate::format::{format_ns, plural};
use crate::overview::Overview;
use crate::sorted::{median, median_in_place};
use crate::trace::{DeviceId, NONE, StrId, Trace};
use crate::whatif::{Change, HOST_GAP_OUTLIER_FACTOR, HostSpan};

pub(super) mod device;
mod host;
use device::*;
use host::*;

/// Below this share of the span a pattern, copy group or stall is not worth a replay.
const MIN_SHARE_PCT: f64 = 0.5;
/// How many findings of one kind at most.
const PER_KIND: usize = 3;
/// A kernel taking this share of kernel time is named as the hot kernel.
const HOT_KERNEL_PCT: f64 = 20.0;
/// Unexplained idle above this share of the span is said.
const UNEXPLAINED_PCT: f64 = 2.0;

pub(super) fn all(trace: &Trace, overview: &Overview) -> Vec<Finding> {
    let span = run_span(trace);
    if span <= 0 {
        return Vec::new();
    }
    let worth = |ns: i64| 100.0 * ns as f64 / span as f64 >= MIN_SHARE_PCT;
    // What a change can give back at most: below `NO_GAIN_PCT` of the span its replay
    // could only say that it gains nothing, and the finding would be dropped unreplayed.
    let can_gain = |ns: i64| super::gains(ns, span);
    // Two groups side by side, their findings in this order: no detector reads another's
    // findings (the straggler's stall alone goes to the one-off stalls), and the syncs take
    // about as long as the rest together.
    let (mut out, rest) = rayon::join(
        || {
            let mut out = Vec::new();
            host_syncs(trace, overview, &worth, &mut out);
            out
        },
        || {
            let mut out = Vec::new();
            nccl_same_stream(trace, overview, &mut out);
            let stall = straggler(trace, overview, &can_gain, &mut out);
            host_bound(trace, overview, &worth, &mut out);
            one_off_stalls(trace, overview, &worth, &can_gain, stall, &mut out);
            copies(trace, &worth, &mut out);
            hot_kernel(trace, overview, &mut out);
            graph_capture(trace, overview, &worth, &mut out);
            memory_growth(trace, overview, &mut out);
            out
        },
    );
    out.extend(rest);
    out
}

fn finding(kind: Kind, title: String, detail: String) -> Finding {
    Finding {
        kind,
        group: kind.group(),
        severity: Severity::Info,
        title,
        detail,
        devices: Vec::new(),
        saving_ns: None,
        saving_pct: None,
        upper_bound_ns: None,
        what_if: Vec::new(),
        first: None,
        occurrences: Vec::new(),
        change: None,
        upper_change: None,
        explains_idle: Vec::new(),
        info_only: false,
    }
}

fn with_change(mut f: Finding, change: Change) -> Finding {
    f.what_if = change.to_args();
    f.change = Some(change);
    f
}

fn gap_where(g: &Gap) -> Where {
    Where {
        device: Some(g.device_id()),
        start_ns: g.start_ns,
        end_ns: g.end_ns(),
    }
}

/// Devices, occurrences, first occurrence and idle explained, from a set of gaps.
fn from_gaps(f: &mut Finding, gaps: &mut dyn Iterator<Item = &Gap>) {
    let mut per_device: FxHashMap<DeviceId, i64> = FxHashMap::default();
    for g in gaps {
        *per_device.entry(g.device_id()).or_default() += g.duration_ns;
        if f.occurrences.len() < MAX_OCCURRENCES {
            f.occurrences.push(gap_where(g));
        }
    }
    f.occurrences.sort_by_key(|w| w.start_ns);
    f.first = f.occurrences.first().copied();
    let mut devices: Vec<(DeviceId, i64)> = per_device.into_iter().collect();
    devices.sort_unstable();
    f.devices = devices.iter().map(|d| d.0).collect();
    f.explains_idle = devices;
}

/// A finding of `kind` about the gaps `members` (indices into the overview's), its words
/// to be written.
fn gap_finding(kind: Kind, overview: &Overview, members: &[u32]) -> Finding {
    let mut f = finding(kind, String::new(), String::new());
    from_gaps(
        &mut f,
        &mut members.iter().map(|&i| &overview.gaps[i as usize]),
    );
    f
}

fn on_gpus(trace: &Trace, devices: &[DeviceId]) -> String {
    match devices {
        [one] => trace.gpu_name(*one),
        _ => format!("{} GPUs", devices.len()),
    }
}

/// The innermost NVTX range around time `t` on `thread` whose text has no digits (a
/// range the same everywhere, such as `aten::item`), if any. Asked for times in order on
/// `thread`, `from` is kept between them (see [`crate::trace::NvtxRanges::innermost_at_from`]).
fn steady_range_from(trace: &Trace, thread: usize, t: i64, from: &mut usize) -> Option<StrId> {
    let nvtx = &trace.threads[thread].nvtx;
    let mut r = nvtx.innermost_at_from(t, from);
    while r != NONE {
        let id = nvtx.text[r as usize];
        if !trace.strings.has_digits(id) {
            return Some(id);
        }
        r = nvtx.parent[r as usize];
    }
    None
}
