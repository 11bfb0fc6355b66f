//! The detectors: each reads the analyses' evidence and proposes the change that would
//! fix what it found (replayed later for the saving).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{Finding, Kind, MAX_OCCURRENCES, Severity, Where, run_span};
use crate::analysis::breakdown::{State, first_state_intervals};
use crate::analysis::gaps::{
    Cause, Gap, OpRef, launch_nvtx_path, sync_call_names, sync_call_of_gap,
};
use crate::analysis::recurring::{activity, cause_text};
use crate::format::{format_ns, plural};
use crate::overview::Overview;
use crate::sorted::median;
use crate::trace::{DeviceId, NONE, StrId, Trace};
use crate::whatif::{Change, HOST_GAP_OUTLIER_FACTOR, HostSpan};

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
    let can_gain = |ns: i64| 100.0 * ns as f64 / span as f64 >= super::NO_GAIN_PCT;
    let mut out = Vec::new();
    host_syncs(trace, overview, &worth, &mut out);
    nccl_same_stream(trace, overview, &mut out);
    let stall = straggler(trace, overview, &can_gain, &mut out);
    host_bound(trace, overview, &worth, &mut out);
    one_off_stalls(trace, overview, &worth, &can_gain, stall, &mut out);
    copies(trace, &worth, &mut out);
    hot_kernel(trace, overview, &mut out);
    graph_capture(trace, overview, &worth, &mut out);
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
/// range the same everywhere, such as `aten::item`), if any.
fn steady_range_at(trace: &Trace, thread: usize, t: i64) -> Option<StrId> {
    let nvtx = &trace.threads[thread].nvtx;
    nvtx.path_at(t)
        .into_iter()
        .rev()
        .map(|r| nvtx.text[r as usize])
        .find(|&id| !trace.strings.get(id).bytes().any(|b| b.is_ascii_digit()))
}

/// 1. Synchronising calls that starve the GPU: host-sync gaps grouped by the call that
///    made the CPU wait and the NVTX range around it; the fix, that sync removed.
fn host_syncs(
    trace: &Trace,
    overview: &Overview,
    worth: &dyn Fn(i64) -> bool,
    out: &mut Vec<Finding>,
) {
    crate::profile_scope!("detect: host_syncs");
    // (call name, steady range around it) → gap indices.
    let mut groups: FxHashMap<(StrId, StrId), Vec<u32>> = FxHashMap::default();
    for (i, g) in overview.gaps.iter().enumerate() {
        if g.cause != Cause::HostSync {
            continue;
        }
        let Some((thread, call)) = sync_call_of_gap(trace, g) else {
            continue;
        };
        let api = &trace.threads[thread].api;
        let range = steady_range_at(trace, thread, api.start[call]).unwrap_or(NONE);
        groups
            .entry((api.name[call], range))
            .or_default()
            .push(i as u32);
    }
    let mut groups: Vec<((StrId, StrId), Vec<u32>, i64)> = groups
        .into_iter()
        .filter(|(_, m)| m.len() >= 2)
        .map(|(k, m)| {
            let total = m
                .iter()
                .map(|&i| overview.gaps[i as usize].duration_ns)
                .sum();
            (k, m, total)
        })
        .filter(|g| worth(g.2))
        .collect();
    groups.sort_by_key(|g| (std::cmp::Reverse(g.2), g.0));
    for ((call, range), members, total) in groups.into_iter().take(PER_KIND) {
        let call_name = trace.strings.get(call).into_owned();
        let range_text = (range != NONE).then(|| trace.strings.get(range).into_owned());
        let durations: Vec<i64> = members
            .iter()
            .map(|&i| overview.gaps[i as usize].duration_ns)
            .collect();
        let place = range_text
            .as_ref()
            .map_or(String::new(), |r| format!(" in {r}"));
        let mut f = gap_finding(Kind::HostSync, overview, &members);
        // A sync that waits for each collective, on GPUs whose NCCL shares the compute
        // stream: the two fixes only pay together (without the sync a collective still
        // holds the compute behind it; on its own stream it is still waited for), so the
        // change replayed is both.
        let stream = after_collectives_on_one_stream(trace, overview, &members);
        let first = f.first.map_or(0, |w| w.start_ns);
        let evidence = format!(
            "median gap {}, first at {} on {}",
            format_ns(median(&durations)),
            format_ns(first - trace.time_origin().unwrap_or(0)),
            f.first
                .and_then(|w| w.device)
                .map_or(String::new(), |d| trace.gpu_name(d)),
        );
        let sync_removed = Change {
            remove_sync: vec![range_text.unwrap_or(call_name.clone())],
            ..Default::default()
        };
        let change = match stream {
            None => {
                f.title = format!(
                    "{call_name}{place} starves the GPU: {} idle in {} on {}",
                    format_ns(total),
                    plural(members.len(), "gap"),
                    on_gpus(trace, &f.devices)
                );
                f.detail = format!(
                    "Each time, the launching thread waits in {call_name}{place} for the GPU to drain, then launches the next kernel late ({evidence}). Removing that sync (or deferring the value it reads) lets the CPU queue work ahead."
                );
                sync_removed
            }
            Some(stream) => {
                f.title = format!(
                    "{call_name} after each collective{place}, NCCL on compute stream {stream}: {} idle in {} on {}",
                    format_ns(total),
                    plural(members.len(), "gap"),
                    on_gpus(trace, &f.devices)
                );
                f.detail = format!(
                    "Each time, the launching thread waits in {call_name}{place} for the collective and all compute to drain, then runs its Python and launches the next kernel late ({evidence}). Replayed without that sync and with NCCL on a stream of its own ({}): the CPU queues work ahead while the exchange runs. Without any dependency between NCCL and compute, the upper bound.",
                    crate::whatif::NCCL_DEPENDENCIES
                );
                f.upper_change = Some(Change {
                    nccl_own_stream: true,
                    nccl_no_dependencies: true,
                    ..sync_removed.clone()
                });
                Change {
                    nccl_own_stream: true,
                    ..sync_removed
                }
            }
        };
        out.push(with_change(f, change));
    }
}

/// The compute stream that NCCL shares, when most of the gaps `members` follow an NCCL
/// kernel on GPUs whose NCCL and compute share one stream.
fn after_collectives_on_one_stream(
    trace: &Trace,
    overview: &Overview,
    members: &[u32],
) -> Option<u32> {
    let after_nccl = members
        .iter()
        .filter(|&&i| {
            let g = &overview.gaps[i as usize];
            trace.device(g.device_id()).is_some_and(|d| {
                d.streams[g.before.stream as usize].ops.kind[g.before.op as usize]
                    == crate::trace::OpKind::Nccl
            })
        })
        .count();
    if after_nccl * 2 <= members.len() {
        return None;
    }
    overview
        .devices
        .iter()
        .filter_map(|s| s.same_stream)
        .find(|ss| ss.nccl_pct >= 50.0 && ss.compute_pct >= 50.0)
        .map(|ss| ss.stream)
}

/// The thread that launched the op after the gap (its index and itself).
fn launching_thread<'t>(trace: &'t Trace, g: &Gap) -> Option<(usize, &'t crate::trace::Thread)> {
    let device = trace.device(g.device_id())?;
    let thread = device.streams[g.after.stream as usize].ops.launch_thread[g.after.op as usize];
    (thread != NONE).then(|| (thread as usize, &trace.threads[thread as usize]))
}

/// 2. NCCL and compute on one stream: the fix, NCCL on its own stream, replayed with the
///    data dependencies kept; the upper bound without them.
fn nccl_same_stream(trace: &Trace, overview: &Overview, out: &mut Vec<Finding>) {
    crate::profile_scope!("detect: nccl_same_stream");
    let serial: Vec<_> = overview
        .devices
        .iter()
        .filter_map(|s| s.same_stream.map(|ss| (s, ss)))
        .filter(|(_, ss)| ss.nccl_pct >= 50.0 && ss.compute_pct >= 50.0)
        .collect();
    let Some((first, ss)) = serial.first() else {
        return;
    };
    // A sync after each collective already proposes NCCL on its own stream with it.
    if out
        .iter()
        .any(|f| f.change.as_ref().is_some_and(|c| c.nccl_own_stream))
    {
        return;
    }
    let nccl: i64 = serial.iter().map(|(s, _)| s.breakdown.nccl_only).sum();
    let all: i64 = serial.iter().map(|(s, _)| s.breakdown.total()).sum();
    let mut f = finding(
        Kind::NcclSameStream,
        format!(
            "NCCL shares stream {} with compute on {}: {:.0} % of GPU time is NCCL, {:.0} % of it hidden",
            ss.stream,
            if serial.len() == 1 {
                trace.gpu_name(first.device)
            } else {
                format!("{} GPUs", serial.len())
            },
            crate::analysis::breakdown::pct(nccl, all),
            ss.hidden_pct.unwrap_or(0.0),
        ),
        format!(
            "{} Replayed with NCCL on a stream of its own ({}); without any dependency between NCCL and compute the upper bound.",
            ss.sentence(),
            crate::whatif::NCCL_DEPENDENCIES
        ),
    );
    f.devices = serial.iter().map(|(s, _)| s.device).collect();
    // Each GPU's first NCCL-only moments, an equal share of the occurrences each.
    let per_device = MAX_OCCURRENCES / serial.len();
    f.occurrences = serial
        .par_iter()
        .flat_map_iter(|(s, _)| {
            let intervals = trace.device(s.device).map_or_else(Vec::new, |device| {
                first_state_intervals(device, s.window, State::NcclOnly, per_device)
            });
            intervals.into_iter().map(|(a, b)| Where {
                device: Some(s.device),
                start_ns: a,
                end_ns: b,
            })
        })
        .collect();
    f.first = f.occurrences.iter().min_by_key(|w| w.start_ns).copied();
    f.upper_change = Some(Change {
        nccl_own_stream: true,
        nccl_no_dependencies: true,
        ..Default::default()
    });
    out.push(with_change(
        f,
        Change {
            nccl_own_stream: true,
            ..Default::default()
        },
    ));
}

/// 3. A straggler: the rank that started the slowest iteration's collectives last, with
///    what its thread was doing; the fix, that stall removed. Slow iterations fold into
///    it. Returns the stall's span (its one-off gap is this finding's, not another's).
fn straggler(
    trace: &Trace,
    overview: &Overview,
    can_gain: &dyn Fn(i64) -> bool,
    out: &mut Vec<Finding>,
) -> Option<HostSpan> {
    crate::profile_scope!("detect: straggler");
    let d = overview.drilldown.as_ref()?;
    let device = d.straggler_device?;
    let activity = d.straggler_activity.as_ref()?;
    let late = d.collectives.first()?;
    let it = overview
        .iterations
        .per_device
        .iter()
        .find(|x| x.device == device)?;
    let thread = &trace.threads[it.thread];
    // The stall: the call its thread sat in, or its own CPU time with no call (Python
    // computing), whichever was longer.
    let (what, start, length) = match (&activity.longest_call, activity.longest_call_start_ns) {
        (Some(call), Some(start)) if activity.longest_call_ns >= activity.cpu_ns => {
            (format!("in {call}"), start, activity.longest_call_ns)
        }
        _ => (
            match activity.nvtx_path.last() {
                Some(range) => format!("computing in {range} (no CUDA or OS call)"),
                None => "computing (no CUDA or OS call)".to_string(),
            },
            activity.cpu_start_ns?,
            activity.cpu_ns,
        ),
    };
    let mut span = HostSpan {
        tid: thread.tid,
        start_ns: start,
        end_ns: start + length,
    };
    // A sync right before the stall (`empty_cache()` drains the device first) is part of it.
    let k = thread.api.start.partition_point(|&s| s < start);
    if let Some(prev) = k.checked_sub(1)
        && crate::analysis::gaps::is_synchronizing(&trace.strings.get(thread.api.name[prev]))
        && start - thread.api.end[prev] <= STALL_JOIN_NS
    {
        span.start_ns = thread.api.start[prev];
    }
    if length <= 0 || !can_gain(stall_gain_bound(trace, &span)) {
        return Some(span);
    }
    let slow = it.slow_indices.len();
    let k = d.iteration;
    let duration = it.durations_ns.get(k).copied().unwrap_or(0);
    let mut f = finding(
        Kind::Straggler,
        format!(
            "{} holds the others back: {} late at a collective of iteration {k}, its thread {what} for {}",
            trace.gpu_name(device),
            format_ns(late.lateness_ns),
            format_ns(length)
        ),
        format!(
            "Iteration {k} is the slowest ({} against a median of {}; {} slow in all). Its {} started last on {} (up to {} after the first rank); meanwhile its launching thread was {what} for {}{}. Every other rank waited in NCCL.",
            format_ns(duration),
            format_ns(it.median_ns),
            plural(slow, "iteration"),
            late.name,
            trace.gpu_name(device),
            format_ns(late.lateness_ns),
            format_ns(length),
            if activity.nvtx_path.is_empty() {
                String::new()
            } else {
                format!(" ({})", activity.nvtx_path.join(" > "))
            }
        ),
    );
    f.devices = vec![device];
    // The straggler's own GPU idles while its thread stalls: those gaps are this finding's.
    let idle: i64 = overview
        .gaps
        .iter()
        .filter(|g| g.device_id() == device)
        .map(|g| (g.end_ns().min(span.end_ns) - g.start_ns.max(span.start_ns)).max(0))
        .sum();
    f.explains_idle = vec![(device, idle)];
    let w = Where {
        device: Some(device),
        start_ns: span.start_ns,
        end_ns: span.end_ns,
    };
    f.first = Some(w);
    f.occurrences = vec![w];
    out.push(with_change(
        f,
        Change {
            remove_stalls: vec![span],
            ..Default::default()
        },
    ));
    Some(span)
}

/// The most removing a host stall can give back: its length on each thread with its tid.
/// Its calls take no time and the CPU time between them is gone, and a replay moves no
/// event earlier by more than the time taken out of the events before it.
fn stall_gain_bound(trace: &Trace, span: &HostSpan) -> i64 {
    let threads = trace.threads.iter().filter(|t| t.tid == span.tid).count();
    (span.end_ns - span.start_ns).saturating_mul(threads as i64)
}

/// A synchronising call ending this close before a stall is taken with it.
const STALL_JOIN_NS: i64 = 200_000;

/// 4. Host- or launch-bound stretches: recurring host-bound gap patterns; the fix, the
///    launching thread's CPU time in those gaps cut (CUDA graphs, torch.compile, less
///    Python per launch). Long one-off members are the one-off detector's.
fn host_bound(
    trace: &Trace,
    overview: &Overview,
    worth: &dyn Fn(i64) -> bool,
    out: &mut Vec<Finding>,
) {
    crate::profile_scope!("detect: host_bound");
    let mut taken = 0;
    for p in &overview.recurring {
        if taken >= PER_KIND {
            break;
        }
        let Some(&first) = p.members.first() else {
            continue;
        };
        if overview.gaps[first as usize].cause != Cause::HostBound {
            continue;
        }
        let limit = p.median_ns.saturating_mul(HOST_GAP_OUTLIER_FACTOR);
        let kept: Vec<&Gap> = p
            .members
            .iter()
            .map(|&i| &overview.gaps[i as usize])
            .filter(|g| g.duration_ns <= limit)
            .collect();
        let total: i64 = kept.iter().map(|g| g.duration_ns).sum();
        if kept.len() < 2 || !worth(total) {
            continue;
        }
        taken += 1;
        let mut f = finding(Kind::HostBound, String::new(), String::new());
        from_gaps(&mut f, &mut kept.iter().copied());
        let longest = kept.iter().max_by_key(|g| g.duration_ns).copied();
        let cpu = longest.map(|g| cause_text(trace, g)).unwrap_or_default();
        f.title = format!(
            "Host-bound: the GPU waits for launches {} ({} idle, median {}) at {}",
            plural(kept.len(), "time"),
            format_ns(total),
            format_ns(p.median_ns),
            p.signature.trim_end_matches(" [host_bound]")
        );
        f.detail = format!(
            "The next kernel was launched only after the GPU had run dry, with no sync in between: the CPU did not keep up ({cpu}). Fewer, larger launches (CUDA graphs, torch.compile) or less Python per op would close these gaps. Gaps over {HOST_GAP_OUTLIER_FACTOR}× the median are one-offs, counted apart."
        );
        out.push(with_change(
            f,
            Change {
                cut_host_gaps: vec![p.signature.clone()],
                ..Default::default()
            },
        ));
    }
}

/// 5a. One-off stalls: long gaps seen once (or far longer than the rest of their
///     pattern) while the launching thread was in an NVTX range of its own (a JIT
///     compilation, a data load) or a long call; the fix, that host work gone.
fn one_off_stalls(
    trace: &Trace,
    overview: &Overview,
    worth: &dyn Fn(i64) -> bool,
    can_gain: &dyn Fn(i64) -> bool,
    straggler: Option<HostSpan>,
    out: &mut Vec<Finding>,
) {
    crate::profile_scope!("detect: one_off_stalls");
    let mut candidates: Vec<u32> = overview
        .single_gaps
        .iter()
        .copied()
        .take_while(|&i| worth(overview.gaps[i as usize].duration_ns))
        .collect();
    for p in &overview.recurring {
        let limit = p.median_ns.saturating_mul(HOST_GAP_OUTLIER_FACTOR);
        candidates.extend(p.members.iter().copied().filter(|&i| {
            let g = &overview.gaps[i as usize];
            g.duration_ns > limit && worth(g.duration_ns)
        }));
    }
    // By what the CPU was doing: the same JIT on every rank is one finding.
    let mut by_activity: Vec<(String, Change, Vec<u32>)> = Vec::new();
    for i in candidates {
        let g = &overview.gaps[i as usize];
        if g.cause == Cause::HostSync {
            continue;
        }
        let Some(a) = activity(trace, g) else {
            continue;
        };
        let change = if let Some(range) = a.nvtx.first() {
            Change {
                remove_cpu: vec![range.clone()],
                ..Default::default()
            }
        } else {
            let Some(span) = longest_call_span(trace, g) else {
                continue;
            };
            let is_straggler = straggler.is_some_and(|s| {
                s.tid == span.tid && s.start_ns <= span.end_ns && span.start_ns <= s.end_ns
            });
            // A long gap whose longest call is short was mostly something else.
            if is_straggler || !can_gain(stall_gain_bound(trace, &span)) {
                continue;
            }
            Change {
                remove_stalls: vec![span],
                ..Default::default()
            }
        };
        // The ranges the CPU was in name the stall (their times differ rank by rank).
        let text = if a.nvtx.is_empty() {
            a.text()
        } else {
            format!("in {}", a.nvtx.join(" > "))
        };
        match by_activity
            .iter_mut()
            .find(|b| b.0 == text && !a.nvtx.is_empty())
        {
            Some(b) => b.2.push(i),
            None => by_activity.push((text, change, vec![i])),
        }
    }
    by_activity.sort_by_key(|b| {
        std::cmp::Reverse(
            b.2.iter()
                .map(|&i| overview.gaps[i as usize].duration_ns)
                .sum::<i64>(),
        )
    });
    for (text, change, members) in by_activity.into_iter().take(PER_KIND) {
        let total: i64 = members
            .iter()
            .map(|&i| overview.gaps[i as usize].duration_ns)
            .sum();
        let mut f = gap_finding(Kind::OneOffStall, overview, &members);
        f.title = format!(
            "One-off stall: {} idle on {} while the CPU was {text}",
            format_ns(total),
            on_gpus(trace, &f.devices)
        );
        f.detail = format!(
            "{} of {} ({}); nothing else ran meanwhile. Done ahead of time (a warm-up outside the profiled run, a compilation cache, a prefetching loader) it would not hold the GPU.",
            plural(members.len(), "gap"),
            format_ns(total),
            members
                .iter()
                .take(4)
                .map(|&i| {
                    let g = &overview.gaps[i as usize];
                    format!(
                        "{} on {}",
                        format_ns(g.duration_ns),
                        trace.gpu_name(g.device_id())
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        out.push(with_change(f, change));
    }
}

/// The launching thread's longest call overlapping the gap, as a host span.
fn longest_call_span(trace: &Trace, g: &Gap) -> Option<HostSpan> {
    let (_, th) = launching_thread(trace, g)?;
    let k = th
        .calls_overlapping(g.start_ns, g.end_ns())
        .max_by_key(|&k| th.api.end[k] - th.api.start[k])?;
    Some(HostSpan {
        tid: th.tid,
        start_ns: th.api.start[k],
        end_ns: th.api.end[k],
    })
}

/// 5b. Copies that hold the GPU inside its span (a blocking checkpoint, host-to-device
///     transfers, pageable memory), grouped by kind and the NVTX range they were
///     launched in; the fix, those copies off the critical path.
fn copies(trace: &Trace, worth: &dyn Fn(i64) -> bool, out: &mut Vec<Finding>) {
    crate::profile_scope!("detect: copies");
    #[derive(Default)]
    struct Group {
        count: usize,
        bytes: u64,
        pageable: usize,
        per_device: FxHashMap<DeviceId, i64>,
        occurrences: Vec<Where>,
    }
    let mut groups: FxHashMap<(StrId, StrId), Group> = FxHashMap::default();
    for device in &trace.devices {
        let Some((lo, hi)) = device.kernel_window() else {
            continue;
        };
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                if ops.kind[i].is_kernel() || ops.end[i] <= lo || ops.start[i] >= hi {
                    continue;
                }
                let path = launch_nvtx_path(
                    trace,
                    device,
                    OpRef {
                        stream: s as u32,
                        op: i as u32,
                    },
                );
                let range = path
                    .into_iter()
                    .rev()
                    .find(|&id| !trace.strings.get(id).bytes().any(|b| b.is_ascii_digit()))
                    .unwrap_or(NONE);
                let g = groups.entry((ops.name[i], range)).or_default();
                let info = device
                    .mem_info
                    .get(ops.detail[i] as usize)
                    .copied()
                    .unwrap_or_default();
                g.count += 1;
                g.bytes += info.bytes;
                g.pageable += info.pageable as usize;
                *g.per_device.entry(device.id).or_default() +=
                    ops.end[i].min(hi) - ops.start[i].max(lo);
                if g.occurrences.len() < MAX_OCCURRENCES {
                    g.occurrences.push(Where {
                        device: Some(device.id),
                        start_ns: ops.start[i],
                        end_ns: ops.end[i],
                    });
                }
            }
        }
    }
    let mut groups: Vec<((StrId, StrId), Group, i64)> = groups
        .into_iter()
        .map(|(k, g)| {
            let most = g.per_device.values().copied().max().unwrap_or(0);
            (k, g, most)
        })
        .filter(|g| worth(g.2))
        .collect();
    groups.sort_by_key(|g| (std::cmp::Reverse(g.2), g.0));
    for ((name, range), mut g, most) in groups.into_iter().take(PER_KIND) {
        let name = trace.strings.get(name).into_owned();
        let range_text = (range != NONE).then(|| trace.strings.get(range).into_owned());
        let place = range_text
            .as_ref()
            .map_or(String::new(), |r| format!(" in {r}"));
        let mut devices: Vec<DeviceId> = g.per_device.keys().copied().collect();
        devices.sort_unstable();
        g.occurrences.sort_by_key(|w| w.start_ns);
        let mut f = finding(
            Kind::Copies,
            format!(
                "Copies hold the GPU: {} of {name}{place} on {} ({}, {})",
                format_ns(most),
                on_gpus(trace, &devices),
                if g.count == 1 {
                    "1 copy".to_string()
                } else {
                    format!("{} copies", g.count)
                },
                crate::format::format_bytes(g.bytes)
            ),
            format!(
                "{} copies{place} take {} of the busiest GPU's span{}. Moved off the critical path (asynchronous, from pinned memory, on a stream of their own, or prefetched) they would not hold it.",
                g.count,
                format_ns(most),
                if g.pageable > 0 {
                    format!(
                        "; {} from or to pageable memory (staged, synchronous, slower than pinned)",
                        g.pageable
                    )
                } else {
                    String::new()
                }
            ),
        );
        f.devices = devices;
        f.first = g.occurrences.first().copied();
        f.occurrences = g.occurrences;
        out.push(with_change(
            f,
            Change {
                drop_copies: vec![range_text.unwrap_or(name)],
                ..Default::default()
            },
        ));
    }
}

/// The kernel that takes the most time, if it takes much: what it would save at twice
/// the speed (`info`: a speed-up is not a fault).
fn hot_kernel(trace: &Trace, overview: &Overview, out: &mut Vec<Finding>) {
    crate::profile_scope!("detect: hot_kernel");
    let Some(k) = overview
        .kernels
        .iter()
        // A graph execution is many kernels, unknown: no single one to make faster.
        .find(|k| {
            !crate::trace::is_nccl_name(&k.name)
                && crate::load::graphs::graph_id_of(&k.name).is_none()
        })
        .filter(|k| k.share_pct >= HOT_KERNEL_PCT)
    else {
        return;
    };
    let mut f = finding(
        Kind::HotKernel,
        format!(
            "{} takes {:.0} % of kernel time: twice as fast, the run would save the figure beside it",
            k.name, k.share_pct
        ),
        format!(
            "{}, {} in all, median {}. The saving assumes the kernel alone runs twice as fast (a better kernel, a fused one, lower precision); nothing is wrong with it.",
            if k.count == 1 {
                "1 launch".to_string()
            } else {
                format!("{} launches", k.count)
            },
            format_ns(k.total_ns),
            format_ns(k.median_ns)
        ),
    );
    f.info_only = true;
    if let Some(id) = trace.strings.find(&k.name) {
        for device in &trace.devices {
            for stream in &device.streams {
                let ops = &stream.ops;
                for i in (0..ops.len()).filter(|&i| ops.name[i] == id && ops.kind[i].is_kernel()) {
                    if f.occurrences.len() < MAX_OCCURRENCES {
                        f.occurrences.push(Where {
                            device: Some(device.id),
                            start_ns: ops.start[i],
                            end_ns: ops.end[i],
                        });
                    }
                }
            }
            if f.occurrences.iter().any(|w| w.device == Some(device.id)) {
                f.devices.push(device.id);
            }
        }
        f.occurrences.sort_by_key(|w| w.start_ns);
        f.first = f.occurrences.first().copied();
    }
    // The name comes from the file: a name too long for a pattern gets no finding, never
    // a panic.
    let Ok(re) = regex::Regex::new(&format!("^{}$", regex::escape(&k.name))) else {
        return;
    };
    out.push(with_change(
        f,
        Change {
            scale_kernels: vec![(re, 0.5)],
            ..Default::default()
        },
    ));
}

/// How many occurrences of a range are looked at to tell that it launches a fixed
/// sequence without syncs.
const CAPTURE_SAMPLE: usize = 2_000;
/// The share of those occurrences that must launch the same number of ops.
const CAPTURE_FIXED_SHARE: f64 = 0.9;

/// Opportunity: host-bound gaps between kernels launched one by one inside steady NVTX
/// ranges (`attention`, `ffn`) whose every occurrence launches the same sequence with no
/// sync: captured in a CUDA graph, each occurrence would be one launch. The change replays
/// those ranges as graphs (their kernels released by the first launch).
fn graph_capture(
    trace: &Trace,
    overview: &Overview,
    worth: &dyn Fn(i64) -> bool,
    out: &mut Vec<Finding>,
) {
    crate::profile_scope!("detect: graph_capture");
    // Steady range → (host-bound gaps in it, their idle, a launching thread).
    let mut by_range: FxHashMap<StrId, (Vec<u32>, i64, usize)> = FxHashMap::default();
    for (i, g) in overview.gaps.iter().enumerate() {
        if g.cause != Cause::HostBound || g.enclosing == NONE {
            continue;
        }
        let Some((thread, _)) = launching_thread(trace, g) else {
            continue;
        };
        let e = by_range
            .entry(g.enclosing)
            .or_insert((Vec::new(), 0, thread));
        e.0.push(i as u32);
        e.1 += g.duration_ns;
    }
    // Steady ranges only (a text with numbers is one op's, not a block's): each text read
    // once, not once a gap.
    let mut ranges: Vec<(StrId, Vec<u32>, i64, usize)> = by_range
        .into_iter()
        .map(|(r, (m, total, t))| (r, m, total, t))
        .filter(|r| r.1.len() >= 2)
        .filter(|r| !trace.strings.get(r.0).bytes().any(|b| b.is_ascii_digit()))
        .collect();
    ranges.sort_by_key(|r| (std::cmp::Reverse(r.2), r.0));
    // The largest first, each checked against its occurrences until enough are found.
    let sync_names = sync_call_names(trace);
    let mut kept = Vec::new();
    for r in ranges {
        if kept.len() == PER_KIND {
            break;
        }
        if fixed_launches_without_syncs(trace, &sync_names, r.3, r.0) {
            kept.push(r);
        }
    }
    let ranges = kept;
    let total: i64 = ranges.iter().map(|r| r.2).sum();
    if ranges.is_empty() || !worth(total) {
        return;
    }
    let names: Vec<String> = ranges
        .iter()
        .map(|r| trace.strings.get(r.0).into_owned())
        .collect();
    let members: Vec<u32> = ranges.iter().flat_map(|r| r.1.iter().copied()).collect();
    let mut f = gap_finding(Kind::GraphCapture, overview, &members);
    f.title = format!(
        "Capture {} in a CUDA graph: the GPU waits {} ({} idle) for kernels launched one by one",
        names.join(", "),
        plural(members.len(), "time"),
        format_ns(total)
    );
    f.detail = format!(
        "Each occurrence of {} launches the same kernels, with no sync inside, and the CPU does not keep up with them. Captured in a CUDA graph (torch.compile mode=\"reduce-overhead\", torch.cuda.CUDAGraph) each occurrence would be one launch. Replayed with every occurrence's kernels released by its first launch (the later launch calls and the CPU time after the first gone); assumes the range captures as it is: fixed shapes, no sync or host read inside.",
        names.join(", ")
    );
    out.push(with_change(
        f,
        Change {
            capture_graphs: names,
            ..Default::default()
        },
    ));
}

/// Whether the occurrences of range text `text` on `thread` (a sample of them) launch the
/// same number of ops, at least two, with no synchronising call inside.
fn fixed_launches_without_syncs(
    trace: &Trace,
    sync_names: &[bool],
    thread: usize,
    text: StrId,
) -> bool {
    let th = &trace.threads[thread];
    let mut counts: FxHashMap<usize, usize> = FxHashMap::default();
    let mut seen = 0;
    for r in (0..th.nvtx.len()).filter(|&r| th.nvtx.text[r] == text) {
        let (s, e) = (th.nvtx.start[r], th.nvtx.end[r]);
        let first = th.api.start.partition_point(|&x| x < s);
        let end = th.api.start.partition_point(|&x| x <= e);
        if (first..end).any(|k| sync_names[th.api.name[k] as usize]) {
            return false;
        }
        let launches = (first..end)
            .filter(|&k| trace.strings.get(th.api.name[k]).contains("Launch"))
            .count();
        *counts.entry(launches).or_default() += 1;
        seen += 1;
        if seen >= CAPTURE_SAMPLE {
            break;
        }
    }
    counts
        .iter()
        .max_by_key(|c| *c.1)
        .is_some_and(|(&n, &k)| n >= 2 && k as f64 >= CAPTURE_FIXED_SHARE * seen as f64)
}

/// 6. Idle that no finding accounts for, said as such: per device, its idle time less the
///    gaps the findings explain.
pub(super) fn add_unexplained_idle(trace: &Trace, overview: &Overview, found: &mut Vec<Finding>) {
    let span = run_span(trace);
    if span <= 0 {
        return;
    }
    let mut explained: FxHashMap<DeviceId, i64> = FxHashMap::default();
    for f in found.iter() {
        for &(d, ns) in &f.explains_idle {
            *explained.entry(d).or_default() += ns;
        }
    }
    let worst = overview
        .devices
        .iter()
        .map(|s| {
            let idle = s.breakdown.idle;
            (idle - explained.get(&s.device).copied().unwrap_or(0), s)
        })
        .max_by_key(|x| x.0);
    let Some((left, s)) = worst else {
        return;
    };
    let pct = 100.0 * left as f64 / span as f64;
    if pct < UNEXPLAINED_PCT || left < 1_000_000 {
        return;
    }
    let gaps: Vec<i64> = overview
        .gaps
        .iter()
        .filter(|g| g.device_id() == s.device)
        .map(|g| g.duration_ns)
        .collect();
    let mut f = finding(
        Kind::UnexplainedIdle,
        format!(
            "{} of {}'s idle time ({pct:.1} % of the span) is in no finding above",
            format_ns(left),
            trace.gpu_name(s.device)
        ),
        format!(
            "{} idles {} in {} (median {}); the findings above account for {}. The rest is spread over gaps no detector turns into a change: look at the Gaps tab's recurring patterns.",
            trace.gpu_name(s.device),
            format_ns(s.breakdown.idle),
            plural(gaps.len(), "gap"),
            format_ns(median(&gaps)),
            format_ns(explained.get(&s.device).copied().unwrap_or(0))
        ),
    );
    f.devices = vec![s.device];
    f.info_only = true;
    found.push(f);
}
