//! The findings of the CPU side: synchronising calls, stalls, a straggling rank, a host
//! that cannot keep up.

use super::*;
use crate::analysis::arrivals::{ThreadActivity, straggler_title};

/// 1. Synchronising calls that starve the GPU: host-sync gaps grouped by the call that
///    made the CPU wait and the NVTX range around it, with the after-sync gaps that follow
///    each (the thread launching just in time until a long kernel lets it lead again); the
///    fix, that sync removed.
pub(super) fn host_syncs(
    trace: &Trace,
    overview: &Overview,
    worth: &dyn Fn(i64) -> bool,
    out: &mut Vec<Finding>,
) {
    crate::profile_scope!("detect: host_syncs");
    let groups = gaps_by_sync(trace, overview);
    let idle = |members: &[u32]| -> i64 {
        members
            .iter()
            .map(|&i| overview.gaps[i as usize].duration_ns)
            .sum()
    };
    // (call, range), its gaps, the after-sync gaps after them, their idle in all.
    type Group = ((StrId, StrId), Vec<u32>, Vec<u32>, i64);
    let mut groups: Vec<Group> = groups
        .into_iter()
        .filter(|(_, (m, _))| m.len() >= 2)
        .map(|(k, (m, after))| {
            let total = idle(&m) + idle(&after);
            (k, m, after, total)
        })
        .filter(|g| worth(g.3))
        .collect();
    groups.sort_by_key(|g| (std::cmp::Reverse(g.3), g.0));
    for ((call, range), members, after, total) in groups.into_iter().take(PER_KIND) {
        out.push(sync_finding(
            trace,
            overview,
            (call, range),
            &members,
            &after,
            total,
        ));
    }
}

/// The host-sync gaps grouped by (sync call's name, steady range around it), each group
/// with the after-sync gaps that followed its gaps on their device.
fn gaps_by_sync(
    trace: &Trace,
    overview: &Overview,
) -> FxHashMap<(StrId, StrId), (Vec<u32>, Vec<u32>)> {
    // (call name, steady range around it) → (its gaps, the after-sync gaps after them).
    let mut groups: FxHashMap<(StrId, StrId), (Vec<u32>, Vec<u32>)> = FxHashMap::default();
    let mut sync_calls = SyncCalls::new(trace);
    // Per thread, where its last sync's ranges were found: a device's gaps come in time
    // order.
    let mut range_from = vec![0usize; trace.threads.len()];
    // The group of the host-sync gap that began the run of after-sync gaps on a device.
    let mut run_of: Option<(u16, (StrId, StrId))> = None;
    for (i, g) in overview.gaps.iter().enumerate() {
        match g.cause {
            Cause::AfterSync => {
                if let Some((device, key)) = run_of
                    && device == g.device
                    && let Some(group) = groups.get_mut(&key)
                {
                    group.1.push(i as u32);
                }
                continue;
            }
            Cause::HostSync => {}
            _ => {
                run_of = None;
                continue;
            }
        }
        let Some((thread, call)) = sync_calls.of_gap(g) else {
            run_of = None;
            continue;
        };
        let api = &trace.threads[thread].api;
        let range = steady_range_from(trace, thread, api.start[call], &mut range_from[thread])
            .unwrap_or(NONE);
        let key = (api.name[call], range);
        groups.entry(key).or_default().0.push(i as u32);
        run_of = Some((g.device, key));
    }
    groups
}

/// The finding of one sync: its gaps (`members`), the after-sync gaps that follow them
/// (`after`; none: it starves the GPU, some: it empties the launch queue), their idle in
/// all, and the change that removes it.
fn sync_finding(
    trace: &Trace,
    overview: &Overview,
    (call, range): (StrId, StrId),
    members: &[u32],
    after: &[u32],
    total: i64,
) -> Finding {
    let call_name = trace.strings.get(call).into_owned();
    let range_text = (range != NONE).then(|| trace.strings.get(range).into_owned());
    let mut durations: Vec<i64> = members
        .iter()
        .map(|&i| overview.gaps[i as usize].duration_ns)
        .collect();
    let every: Vec<u32> = members.iter().chain(after).copied().collect();
    let mut f = gap_finding(Kind::HostSync, overview, &every);
    // A sync that waits for each collective, on GPUs whose NCCL shares the compute
    // stream, is named by the collective (its range when it has one).
    let after_collectives = after_collectives_on_one_stream(trace, overview, members).is_some();
    let place = match (&range_text, after_collectives) {
        (Some(r), true) => format!(" after each {r}"),
        (None, true) => " after each collective".to_string(),
        (Some(r), false) => format!(" in {r}"),
        (None, false) => String::new(),
    };
    let first = f.first.map_or(0, |w| w.start_ns);
    let evidence = format!(
        "median gap {}, first at {} on {}",
        format_ns(median_in_place(&mut durations)),
        format_ns(first - trace.time_origin().unwrap_or(0)),
        f.first
            .and_then(|w| w.device)
            .map_or(String::new(), |d| trace.gpu_name(d)),
    );
    if after.is_empty() {
        f.title = format!(
            "{call_name}{place} starves the GPU: {} idle in {} on {}",
            format_ns(total),
            plural(members.len(), "gap"),
            on_gpus(trace, &f.devices)
        );
        f.detail = format!(
            "Each time, the launching thread waits in {call_name}{place} for the GPU to drain, then launches the next kernel late ({evidence}). Removing that sync (or deferring the value it reads) lets the CPU queue work ahead."
        );
    } else {
        let mut gaps_after: Vec<i64> = after
            .iter()
            .map(|&i| overview.gaps[i as usize].duration_ns)
            .collect();
        f.title = format!(
            "{call_name}{place} empties the launch queue: {} launch gaps follow it ({} idle in all on {}) — remove it",
            after.len(),
            format_ns(total),
            on_gpus(trace, &f.devices)
        );
        f.detail = format!(
            "Each time, the launching thread waits in {call_name}{place} for the GPU to drain ({evidence}); from then on it launches every kernel just in time, and the GPU waits at {} boundaries (median {}) until a long kernel lets the CPU get ahead again. The host is no slower without the sync: it would queue work while the long kernels run, and the kernels after them would run back to back. Removing that sync (or deferring the value it reads) is the fix; the replay keeps every CPU time as recorded.",
            after.len(),
            format_ns(median_in_place(&mut gaps_after))
        );
    }
    with_change(
        f,
        Change {
            remove_sync: vec![range_text.unwrap_or(call_name)],
            ..Default::default()
        },
    )
}

/// The compute stream that NCCL shares, when most of the gaps `members` follow an NCCL
/// kernel on GPUs whose NCCL and compute share one stream.
pub(super) fn after_collectives_on_one_stream(
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
pub(super) fn launching_thread<'t>(
    trace: &'t Trace,
    g: &Gap,
) -> Option<(usize, &'t crate::trace::Thread)> {
    let device = trace.device(g.device_id())?;
    let thread = device.streams[g.after.stream as usize].ops.launch_thread[g.after.op as usize];
    (thread != NONE).then(|| (thread as usize, &trace.threads[thread as usize]))
}

/// 3. A straggler: the rank that started the slowest iteration's collectives last, with
///    what its thread was doing; the fix, that stall removed. Slow iterations fold into
///    it. Returns the stall's span (its one-off gap is this finding's, not another's).
pub(super) fn straggler(
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
    let (what, start, length) = crate::analysis::arrivals::stall(ThreadActivity {
        call: activity
            .longest_call
            .as_deref()
            .zip(activity.longest_call_start_ns)
            .map(|(call, start)| (call, start, activity.longest_call_ns)),
        cpu: activity.cpu_start_ns.map(|start| (start, activity.cpu_ns)),
        range: activity.nvtx_path.last().map(String::as_str),
    })?;
    let mut span = HostSpan::of(trace, thread, start, start + length);
    // A sync right before the stall (`empty_cache()` drains the device first) is part of it.
    let k = thread.api.start.partition_point(|&s| s < start);
    if let Some(prev) = k.checked_sub(1)
        && crate::analysis::gaps::is_synchronizing(&trace.strings.get(thread.api.name[prev]))
        && start - thread.api.end[prev] <= STALL_JOIN_NS
    {
        span.start_ns = thread.api.start[prev];
    }
    if length <= 0 || !can_gain(stall_gain_bound(&span)) {
        return Some(span);
    }
    let slow = it.slow_indices.len();
    let k = d.iteration;
    // The iteration as long as its slowest GPU, against the median across GPUs.
    let (longest, steady) = overview.iterations.across_gpus();
    let duration = longest.get(k).copied().unwrap_or(0);
    let mut f = finding(
        Kind::Straggler,
        straggler_title(&trace.gpu_name(device), late.lateness_ns, k, &what, length),
        format!(
            "Iteration {k} is the slowest ({} against a median of {} across GPUs; {} slow in all). Its {} started last on {} (up to {} after the first rank); meanwhile its launching thread was {what} for {}{}.{} Every other rank waited in NCCL.",
            format_ns(duration),
            format_ns(steady.median_ns),
            plural(slow, "iteration"),
            late.name,
            trace.gpu_name(device),
            format_ns(late.lateness_ns),
            format_ns(length),
            if activity.nvtx_path.is_empty() {
                String::new()
            } else {
                format!(" ({})", activity.nvtx_path.join(" > "))
            },
            code_sentence(trace, &[(thread.global_tid, span.start_ns, span.end_ns)])
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

/// The most removing a host stall can give back: its length. Its calls take no time and
/// the CPU time between them is gone on its one thread, and a replay moves no event
/// earlier by more than the time taken out of the events before it.
pub(super) fn stall_gain_bound(span: &HostSpan) -> i64 {
    span.end_ns - span.start_ns
}

/// A synchronising call ending this close before a stall is taken with it.
pub(super) const STALL_JOIN_NS: i64 = 200_000;

/// 4. Host- or launch-bound stretches: recurring host-bound gap patterns; the fix, the
///    launching thread's CPU time in those gaps cut (CUDA graphs, torch.compile, less
///    Python per launch). Long one-off members are the one-off detector's.
pub(super) fn host_bound(
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
        if overview.gaps[first as usize].cause != Cause::HostBound || once_per_gpu(overview, p) {
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
            "The next kernel was launched only after the GPU had run dry, with no sync in between: the CPU did not keep up ({cpu}).{} Fewer, larger launches (CUDA graphs, torch.compile) or less Python per op would close these gaps. Gaps over {HOST_GAP_OUTLIER_FACTOR}× the median are one-offs, counted apart.",
            code_in_gaps(trace, kept.iter().copied())
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

/// Whether pattern `p` happens at most once on each GPU: an event every rank met once
/// (a JIT compilation), not a recurring cost.
fn once_per_gpu(overview: &Overview, p: &crate::analysis::recurring::RecurringGap) -> bool {
    let mut seen: Vec<u16> = p
        .members
        .iter()
        .map(|&i| overview.gaps[i as usize].device)
        .collect();
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    seen.len() == n
}

/// 5a. One-off stalls: long gaps seen once (or far longer than the rest of their
///     pattern) while the launching thread was in an NVTX range of its own (a JIT
///     compilation, a data load) or a long call; the fix, that host work gone.
pub(super) fn one_off_stalls(
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
        // A pattern seen once on each GPU (the same JIT on every rank) is a one-off.
        let limit = if once_per_gpu(overview, p) {
            0
        } else {
            p.median_ns.saturating_mul(HOST_GAP_OUTLIER_FACTOR)
        };
        candidates.extend(p.members.iter().copied().filter(|&i| {
            let g = &overview.gaps[i as usize];
            g.duration_ns > limit && worth(g.duration_ns)
        }));
    }
    // By what the CPU was doing: the same JIT on every rank is one finding.
    let mut by_activity: Vec<(String, Change, Vec<u32>)> = Vec::new();
    for i in candidates {
        let g = &overview.gaps[i as usize];
        if matches!(g.cause, Cause::HostSync | Cause::AfterSync) {
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
                s.file == span.file
                    && s.tid == span.tid
                    && s.start_ns <= span.end_ns
                    && span.start_ns <= s.end_ns
            });
            // A long gap whose longest call is short was mostly something else.
            if is_straggler || !can_gain(stall_gain_bound(&span)) {
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
        let code = code_in_gaps(trace, members.iter().map(|&i| &overview.gaps[i as usize]));
        f.detail = format!(
            "{} of {} ({}); nothing else ran meanwhile.{code} Done ahead of time (a warm-up outside the profiled run, a compilation cache, a prefetching loader) it would not hold the GPU.",
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
pub(super) fn longest_call_span(trace: &Trace, g: &Gap) -> Option<HostSpan> {
    let (_, th) = launching_thread(trace, g)?;
    let k = th
        .calls_overlapping(g.start_ns, g.end_ns())
        .max_by_key(|&k| th.api.end[k] - th.api.start[k])?;
    Some(HostSpan::of(trace, th, th.api.start[k], th.api.end[k]))
}

/// " What the CPU ran: …." for the launching threads of `gaps` (empty without call stacks).
fn code_in_gaps<'g>(trace: &Trace, gaps: impl Iterator<Item = &'g Gap>) -> String {
    let windows: Vec<(i64, i64, i64)> = gaps
        .filter_map(|g| {
            let (_, th) = launching_thread(trace, g)?;
            Some((th.global_tid, g.start_ns, g.end_ns()))
        })
        .collect();
    code_sentence(trace, &windows)
}

fn code_sentence(trace: &Trace, windows: &[(i64, i64, i64)]) -> String {
    crate::analysis::cpu_samples::code_in(trace, windows)
        .map_or_else(String::new, |c| format!(" What the CPU ran: {c}."))
}
