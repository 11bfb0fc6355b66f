//! The findings of the GPU side: NCCL sharing a stream, copies, a hot kernel, launches
//! that a CUDA graph would capture.

use super::*;

/// When the collectives' results are needed, from what the trace shows, and why: the trace
/// records no data dependency, so the conservative model (the next kernel reads the
/// result) unless most collectives are gradient reductions launched in a backward or
/// optimizer range, whose results wait for the step's end (DDP/FSDP buckets).
pub(super) fn nccl_consumers(
    trace: &Trace,
    devices: &[DeviceId],
) -> (crate::whatif::NcclDependencies, String) {
    use crate::whatif::NcclDependencies;
    // A sample of each GPU's collectives is enough to tell.
    const LOOKED_AT: usize = 256;
    let (mut reductions_in_backward, mut all) = (0usize, 0usize);
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for device in devices.iter().filter_map(|&d| trace.device(d)) {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            let nccl = (0..ops.len()).filter(|&i| ops.kind[i] == crate::trace::OpKind::Nccl);
            for i in nccl.take(LOOKED_AT) {
                all += 1;
                let name = trace.strings.get(ops.name[i]);
                // `ncclDevKernel_AllReduce_Sum_bf16_RING_LL` → `AllReduce`.
                let kind = name
                    .trim_start_matches("ncclDevKernel_")
                    .trim_start_matches("ncclKernel_")
                    .split(['_', '('])
                    .next()
                    .unwrap_or("")
                    .to_string();
                *kinds.entry(kind).or_default() += 1;
                let reduction = name.contains("AllReduce") || name.contains("ReduceScatter");
                if reduction {
                    let op = OpRef {
                        stream: s as u32,
                        op: i as u32,
                    };
                    let late = launch_nvtx_path(trace, device, op).iter().any(|&t| {
                        let text = trace.strings.get(t).to_ascii_lowercase();
                        text.contains("backward") || text.contains("optimizer")
                    });
                    reductions_in_backward += usize::from(late);
                }
            }
        }
    }
    let named = kinds
        .iter()
        .rev()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    if all > 0 && reductions_in_backward * 2 > all {
        (
            NcclDependencies::AfterNextCollective,
            format!(
                "{reductions_in_backward} of the {all} collectives looked at are reductions launched in a backward or optimizer range: gradient buckets, read at the step's end"
            ),
        )
    } else {
        (
            NcclDependencies::NextKernel,
            format!(
                "the collectives ({named}) are not gradient reductions in a backward range: the trace records no data dependency, so the next kernel is taken to read each one's result"
            ),
        )
    }
}

/// 2. NCCL and compute on one stream: the fix, NCCL on its own stream, replayed with the
///    data dependencies the trace shows (the next kernel reads a collective's result,
///    unless gradient reductions wait for the step's end); the upper bound with the
///    laxer model beside it.
pub(super) fn nccl_same_stream(trace: &Trace, overview: &Overview, out: &mut Vec<Finding>) {
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
        String::new(),
    );
    f.devices = serial.iter().map(|(s, _)| s.device).collect();
    let (model, why) = nccl_consumers(trace, &f.devices);
    let upper = match model {
        crate::whatif::NcclDependencies::NextKernel => {
            crate::whatif::NcclDependencies::AfterNextCollective
        }
        _ => crate::whatif::NcclDependencies::Unbounded,
    };
    f.detail = format!(
        "{} Replayed with NCCL on a stream of its own: {} ({why}). The upper bound: {}.",
        ss.sentence(),
        model.sentence(),
        upper.sentence()
    );
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
        nccl_dependencies: upper,
        ..Default::default()
    });
    out.push(with_change(
        f,
        Change {
            nccl_own_stream: true,
            nccl_dependencies: model,
            ..Default::default()
        },
    ));
}

/// 5b. Copies that hold the GPU inside its span (a blocking checkpoint, host-to-device
///     transfers, pageable memory), grouped by kind and the NVTX range they were
///     launched in; the fix, those copies off the critical path.
pub(super) fn copies(trace: &Trace, worth: &dyn Fn(i64) -> bool, out: &mut Vec<Finding>) {
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
                g.bytes = g.bytes.saturating_add(info.bytes);
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
pub(super) fn hot_kernel(trace: &Trace, overview: &Overview, out: &mut Vec<Finding>) {
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
    if let Some(while_it_ran) = metrics_while(trace, &k.name) {
        f.detail.push_str(&while_it_ran);
    }
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
pub(super) const CAPTURE_SAMPLE: usize = 2_000;
/// The share of those occurrences that must launch the same number of ops.
pub(super) const CAPTURE_FIXED_SHARE: f64 = 0.9;

/// Opportunity: host-bound gaps between kernels launched one by one inside steady NVTX
/// ranges (`attention`, `ffn`) whose every occurrence launches the same sequence with no
/// sync: captured in a CUDA graph, each occurrence would be one launch. The change replays
/// those ranges as graphs (their kernels released by the first launch).
pub(super) fn graph_capture(
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
pub(super) fn fixed_launches_without_syncs(
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
pub(in crate::findings) fn add_unexplained_idle(
    trace: &Trace,
    overview: &Overview,
    found: &mut Vec<Finding>,
) {
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

/// Growth below this per iteration, or in all, is noise of an allocator, not a leak.
const GROWTH_PER_ITERATION: i64 = 1 << 20;
const GROWTH_IN_ALL: i64 = 64 << 20;

/// 8. Device memory that rises every iteration: a fact with where it went (a leak costs
///    memory, not time: no saving to replay).
pub(super) fn memory_growth(trace: &Trace, overview: &Overview, out: &mut Vec<Finding>) {
    use crate::analysis::memory_usage::memory_usage;
    let mib = |b: i64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
    for m in memory_usage(trace, &overview.iterations) {
        let (Some(per), Some((first, last))) = (m.growth_per_iteration_bytes, m.growth_iterations)
        else {
            continue;
        };
        let all = per * (last - first) as i64;
        if per < GROWTH_PER_ITERATION || all < GROWTH_IN_ALL {
            continue;
        }
        let mut f = finding(
            Kind::MemoryGrowth,
            format!(
                "Device memory grows {} every iteration on {} (+{} from iteration {first} to {last})",
                mib(per),
                trace.gpu_name(m.device),
                mib(all)
            ),
            format!(
                "What stays allocated through an iteration (its lowest balance) rises by about the same each iteration, as a tensor kept across steps or a growing cache does; allocated device memory ends at {} (peak {} at {}).{} Left to run, it ends in an out-of-memory error.",
                crate::format::format_bytes(m.end_bytes.max(0) as u64),
                crate::format::format_bytes(m.peak_bytes.max(0) as u64),
                format_ns(m.peak_at_ns - trace.time_origin().unwrap_or(0)),
                m.growth_site.as_ref().map_or(String::new(), |s| format!(
                    " Still allocated at the end: {} in {} block{} by {}{}.",
                    crate::format::format_bytes(s.bytes.max(0) as u64),
                    s.blocks,
                    if s.blocks == 1 { "" } else { "s" },
                    s.call.as_deref().unwrap_or("an unlinked call"),
                    s.nvtx
                        .as_deref()
                        .map_or(String::new(), |n| format!(" in {n}"))
                )),
            ),
        );
        f.info_only = true;
        f.devices = vec![m.device];
        out.push(f);
    }
}

/// " While it ran (device-wide samples): SMs Active 94 %, Tensor Active 59 %." — the GPU
/// metrics' time-weighted means over the kernel's executions on every GPU, when the capture
/// sampled them: busy is not useful work.
fn metrics_while(trace: &Trace, name: &str) -> Option<String> {
    let runs = crate::analysis::gpu_metrics::kernel_metrics(trace, name);
    let weight: i64 = runs.iter().map(|k| k.gpu_ns).sum();
    if runs.is_empty() || weight == 0 {
        return None;
    }
    let mut names: Vec<&String> = runs
        .iter()
        .flat_map(|k| k.metrics.keys())
        .filter(|n| n.contains("Active") && n.contains('%'))
        .collect();
    names.sort();
    names.dedup();
    let parts: Vec<String> = names
        .iter()
        .map(|n| {
            let mean = runs
                .iter()
                .filter_map(|k| k.metrics.get(*n).map(|v| v * k.gpu_ns as f64))
                .sum::<f64>()
                / weight as f64;
            format!("{} {mean:.0} %", n.split(" [").next().unwrap_or(n))
        })
        .collect();
    (!parts.is_empty())
        .then(|| format!(" While it ran (device-wide samples): {}.", parts.join(", ")))
}
