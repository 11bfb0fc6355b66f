//! The report as text: what `report` prints without `--json`.

use super::*;

/// "nsys 2024.6.2 (schema 3.16.1)"; exports before 2021 record neither.
pub(super) fn version_text(info: &crate::trace::ExportInfo) -> String {
    match (&info.nsys_version, &info.schema_version) {
        (None, None) => "nsys version not recorded (exports before 2021 record none)".to_string(),
        (v, s) => format!(
            "nsys {} (schema {})",
            v.as_deref().unwrap_or("version not recorded"),
            s.as_deref().unwrap_or("not recorded")
        ),
    }
}

/// The report in words: health, where the time goes, the worst recurring gaps, the slowest
/// iteration and its straggler.
pub fn report_text(
    trace: &Trace,
    report: &LoadReport,
    overview: &Overview,
    findings: &[Finding],
    options: &Options,
) -> String {
    let mut s = String::new();
    let origin = trace.time_origin().unwrap_or(0);
    header_text(&mut s, trace, report);
    s.push('\n');
    s.push_str(&findings_text(findings));
    s.push('\n');
    health(&mut s, report);
    let _ = writeln!(s, "\nWhere the time goes:");
    if trace.devices.is_empty() {
        let why = if report
            .missing_tables
            .iter()
            .any(|t| t == crate::load::KERNEL)
        {
            "the export has no kernel table"
        } else {
            "no kernel, memcpy or memset in the export"
        };
        let _ = writeln!(s, "  no GPU activity recorded ({why})");
    }
    cpu_sync_text(&mut s, overview);
    call_stacks_text(&mut s, trace);
    let graphs = crate::analysis::graphs::cuda_graphs(trace);
    if let Some(g) = &graphs {
        let _ = writeln!(s, "  CUDA graphs: {}", g.headline());
        if let Some(note) = &g.note {
            let _ = writeln!(s, "    {note}");
        }
    }
    for d in selected_devices(trace, options) {
        device_text(&mut s, overview, d, origin);
    }
    if let Some(l) = overview.nccl_wait.late.first() {
        let name = trace
            .device(l.last_device)
            .map_or(l.last_device.to_string(), |d| d.label());
        let _ = writeln!(
            s,
            "  The collective held back longest: {}",
            crate::analysis::arrivals::late_sentence(
                &l.name,
                l.start_ns - origin,
                l.held_back_ns,
                &name,
                l.last_thread_call.as_deref()
            )
        );
    }
    communication_text(&mut s, trace, &overview.nccl_payload, origin, options.top);
    gaps_text(&mut s, trace, overview, options, origin);
    nvtx_gpu_text(&mut s, overview);
    iterations_text(&mut s, trace, overview);
    s
}

/// The export: its path, nsys version, size and load time, and a GPU used for a sliver
/// of the run (said before anything measured in its window).
fn header_text(s: &mut String, trace: &Trace, report: &LoadReport) {
    let _ = writeln!(s, "{}", report.file.display());
    let _ = writeln!(
        s,
        "  {}, {:.1} MB, loaded in {:.2} s",
        version_text(&trace.info),
        report.file_bytes as f64 / 1e6,
        report.seconds
    );
    if let Some(export) = &report.export {
        let _ = writeln!(s, "  SQLite: {export}");
    }
    if let Some(note) = crate::analysis::capture_use::capture_use(trace).and_then(|c| c.sentence())
    {
        let _ = writeln!(s, "\n{note}");
    }
}

/// One GPU's counts, breakdown, memory, NCCL outliers and waits.
fn device_text(s: &mut String, overview: &Overview, d: &crate::trace::Device, origin: i64) {
    let kernels = d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl);
    let execs = d.count_of(OpKind::Graph);
    let _ = writeln!(
        s,
        "  {}: {}, {} NCCL, {}{}, {} on {}",
        d.label(),
        plural(kernels, "kernel"),
        d.count_of(OpKind::Nccl),
        if execs > 0 {
            format!("{}, ", plural(execs, "graph execution"))
        } else {
            String::new()
        },
        plural(d.count_of(OpKind::Memcpy), "memcpy"),
        plural(d.count_of(OpKind::Memset), "memset"),
        plural(d.streams.len(), "stream")
    );
    let Some(sum) = overview.devices.iter().find(|x| x.device == d.id) else {
        let _ = writeln!(s, "    no kernels: nothing to break down");
        return;
    };
    let b = sum.breakdown;
    let w = sum.window.len();
    let _ = writeln!(
        s,
        "    window {}: compute only {:.1} %, NCCL only {:.1} %, overlap {:.1} %, memory only {:.1} %, idle {:.1} %",
        format_ns(w),
        pct(b.compute_only, w),
        pct(b.nccl_only, w),
        pct(b.overlap, w),
        pct(b.memory_only, w),
        pct(b.idle, w)
    );
    if let Some(ss) = sum.same_stream {
        let _ = writeln!(s, "    {}", ss.sentence());
    }
    for m in overview.memory.iter().filter(|m| m.device == d.id).take(3) {
        let pageable = if m.pageable > 0 {
            format!(", {} from or to pageable host memory", m.pageable)
        } else {
            String::new()
        };
        let rate = m.rate_text();
        let rate = if rate.is_empty() {
            rate
        } else {
            format!(" ({rate})")
        };
        let _ = writeln!(
            s,
            "    memory {}: {}, {:.2} GB in {}{rate}{pageable}",
            m.kind,
            plural(m.count, "op"),
            m.bytes as f64 / 1e9,
            format_ns(m.total_ns),
        );
    }
    for n in overview
        .nccl
        .iter()
        .filter(|n| n.device == d.id && n.outliers > 0)
    {
        let longest = n
            .longest_outliers
            .first()
            .map_or(String::new(), |&(at, dur)| {
                format!(
                    "; the longest {} at {}",
                    format_ns(dur),
                    format_ns(at - origin)
                )
            });
        let _ = writeln!(
            s,
            "    {} {} collectives of {} last ≥ {}× their median ({}){longest}",
            n.outliers,
            n.collective,
            n.count,
            crate::analysis::summary::OUTLIER_FACTOR,
            format_ns(n.median_ns)
        );
    }
    if let Some(w) = overview
        .nccl_wait
        .per_device
        .iter()
        .find(|w| w.device == d.id && w.collectives > 0)
    {
        let _ = writeln!(
            s,
            "    NCCL: {} waiting for the last rank ({:.0} %), {} transfer; it arrived last at {} of {} collectives",
            format_ns(w.wait_ns),
            pct(w.wait_ns, w.wait_ns + w.transfer_ns),
            format_ns(w.transfer_ns),
            w.last_arrivals,
            w.collectives
        );
    }
}

/// The gaps' total and the worst recurring patterns, then the largest single gaps.
fn gaps_text(s: &mut String, trace: &Trace, overview: &Overview, options: &Options, origin: i64) {
    let total: i64 = overview.gaps.iter().map(|g| g.duration_ns).sum();
    let _ = writeln!(
        s,
        "\nGaps (≥ {}): {} totalling {}. Worst recurring patterns (seen at least twice):",
        format_ns(options.min_gap_ns),
        overview.gaps.len(),
        format_ns(total)
    );
    if overview.recurring.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for r in overview.recurring.iter().take(options.top.min(5)) {
        let _ = writeln!(
            s,
            "  {:>6} × median {:>9} = {:>9}  {}",
            r.count,
            format_ns(r.median_ns),
            format_ns(r.total_ns),
            r.signature
        );
        // The longest of the group, when the CPU was visibly busy with something then.
        if let Some(i) = r
            .members
            .iter()
            .copied()
            .max_by_key(|&i| overview.gaps[i as usize].duration_ns)
            && let g = &overview.gaps[i as usize]
            && let Some(a) = activity(trace, g)
        {
            let _ = writeln!(
                s,
                "           the longest, {} at {}: the launching thread was {}",
                format_ns(g.duration_ns),
                format_ns(g.start_ns - origin),
                a.text()
            );
        }
    }
    if !overview.single_gaps.is_empty() {
        let _ = writeln!(s, "Largest single gaps (a pattern seen once):");
        for &i in overview.single_gaps.iter().take(options.top.min(3)) {
            let g = &overview.gaps[i as usize];
            let _ = writeln!(
                s,
                "  {:>9} at {} on {}: {} [{}]",
                format_ns(g.duration_ns),
                format_ns(g.start_ns - origin),
                trace.gpu_name(g.device_id()),
                crate::analysis::recurring::signature(trace, g)
                    .rsplit_once(" [")
                    .map_or(String::new(), |x| x.0.to_string()),
                cause_text(trace, g)
            );
        }
    }
}

/// GPU time per NVTX range: the five ranges with most kernel time.
fn nvtx_gpu_text(s: &mut String, overview: &Overview) {
    let shown: Vec<_> = overview
        .nvtx_gpu
        .iter()
        .filter(|n| n.with_kernels > 0)
        .take(5)
        .collect();
    if !shown.is_empty() {
        let _ = writeln!(
            s,
            "\nGPU time per NVTX range (kernels launched inside, numbers as #):"
        );
        for n in shown {
            let _ = writeln!(
                s,
                "  {:>9} span, {:>9} kernels ({:>5.1} %), {:>7} ranges  {}",
                format_ns(n.gpu_span_ns),
                format_ns(n.kernel_ns),
                n.share_pct,
                n.count,
                n.name
            );
        }
    }
}

/// The threads that waited longest in synchronising calls.
pub(super) fn cpu_sync_text(s: &mut String, overview: &Overview) {
    for t in overview.cpu_sync.iter().take(3) {
        let calls: Vec<String> = t
            .by_name
            .iter()
            .take(3)
            .map(|c| {
                format!(
                    "{} {}, {} in all",
                    c.name,
                    plural(c.count, "call"),
                    format_ns(c.total_ns)
                )
            })
            .collect();
        let name = if t.name.is_empty() { "thread" } else { &t.name };
        let _ = writeln!(
            s,
            "  CPU {name} (pid {}, tid {}): {:.1} % of its {} in synchronising calls ({})",
            t.pid,
            t.tid,
            t.share_pct(),
            format_ns(t.span_ns),
            calls.join(", ")
        );
    }
}

pub(super) fn health(s: &mut String, report: &LoadReport) {
    let rows: u64 = report.tables.values().sum();
    let _ = writeln!(
        s,
        "  {} rows read from {} tables:",
        rows,
        report.tables.len()
    );
    for (table, n) in &report.tables {
        let _ = writeln!(s, "    {table:<38} {n:>10}");
    }
    for table in &report.missing_tables {
        let effect = report
            .missing_effects
            .get(table)
            .map(String::as_str)
            .unwrap_or("");
        let _ = writeln!(s, "  table {table} absent: {effect}");
    }
    for skip in &report.skipped_rows {
        let _ = writeln!(
            s,
            "  {} rows of {} skipped: {}",
            skip.rows, skip.table, skip.reason
        );
    }
    for note in &report.notes {
        let _ = writeln!(s, "  note: {note}");
    }
}

pub(super) fn iterations_text(s: &mut String, trace: &Trace, overview: &Overview) {
    let it = &overview.iterations;
    let Some(marker) = &it.marker else {
        let _ = writeln!(
            s,
            "\nIterations: no iteration marker found — no NVTX range repeats around the kernels as a step does (op-level ranges such as aten::… are not markers). Give one with --iteration-marker TEXT, or --iteration-marker heuristic for iterations between synchronising calls."
        );
        return;
    };
    if it.source == crate::analysis::iterations::Source::None {
        let _ = writeln!(s, "\nIterations: {marker}.");
        return;
    }
    let how = if it.heuristic {
        format!("the heuristic ({marker})")
    } else {
        format!("NVTX marker `{marker}`")
    };
    let _ = writeln!(s, "\nIterations: {} by {how}", it.count());
    for d in &it.per_device {
        let _ = writeln!(
            s,
            "  {}: median {}, {} warm-up, {} slow",
            trace.gpu_name(d.device),
            format_ns(d.median_ns),
            d.warmup,
            d.slow_indices.len()
        );
    }
    let (Some(k), Some(drill)) = (it.slowest_index, &overview.drilldown) else {
        return;
    };
    let (longest, steady) = it.across_gpus();
    if let Some(&ns) = longest.get(k) {
        let _ = writeln!(
            s,
            "  Slowest: iter {k}: {}, {:+.0} % over the median across GPUs ({}; an iteration as long as its slowest GPU)",
            format_ns(ns),
            pct(ns - steady.median_ns, steady.median_ns),
            format_ns(steady.median_ns)
        );
    }
    // What made it slower, device by device: the largest contributor first.
    for d in &drill.devices {
        if let Some(c) = d.contributors.first() {
            let metrics = d.metrics.first().map_or(String::new(), |m| {
                format!(
                    "; {} {:.0} % (median iteration {:.0} %)",
                    crate::analysis::gpu_metrics::base_name(&m.name),
                    m.mean,
                    m.reference_mean
                )
            });
            let _ = writeln!(
                s,
                "    {} {}: mostly {}{metrics}",
                trace.gpu_name(d.device),
                signed_ns(d.duration_ns - d.reference_ns),
                c.description
            );
        }
    }
    critical_path_text(s, trace, overview);
    if let (Some(rank), Some(a)) = (drill.straggler_device, &drill.straggler_activity) {
        let late = drill.collectives.first().map_or(0, |c| c.lateness_ns);
        let doing = if a.synchronized_ns > 0 {
            format!(
                "{} (after {} in synchronising calls)",
                a.doing(),
                format_ns(a.synchronized_ns)
            )
        } else {
            a.doing()
        };
        let _ = writeln!(
            s,
            "    straggler: {} started its NCCL collective {} after the first rank; its launching thread was {doing} (in {})",
            trace.gpu_name(rank),
            format_ns(late),
            a.nvtx_path.join(" > ")
        );
    }
}

/// The text report of several files: how each file was aligned, then the merged trace's.
pub fn many_text(
    trace: &Trace,
    reports: &[LoadReport],
    files: &[FileInfo],
    overview: &Overview,
    findings: &[Finding],
    options: &Options,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} files opened as one trace, on the first file's clock:",
        files.len()
    );
    for f in files {
        let how = match (f.alignment, f.residual_ns) {
            (crate::load::many::Alignment::Collectives, Some(r)) => format!(
                "by {} collectives (residual {}; UTC alone said {})",
                f.collectives,
                format_ns(r),
                f.utc_offset_ns.map_or("nothing".into(), signed_ns)
            ),
            (a, _) => a.label().to_string(),
        };
        let names: Vec<String> = f
            .devices
            .iter()
            .filter_map(|&id| trace.device(id).map(|d| d.label()))
            .collect();
        let _ = writeln!(
            s,
            "  {}  offset {}  {how}  [{}]",
            f.name,
            signed_ns(f.offset_ns),
            names.join(", ")
        );
    }
    s.push('\n');
    s.push_str(&report_text(
        trace,
        &LoadReport::combined(reports),
        overview,
        findings,
        options,
    ));
    s
}

/// The report's Communication section: bytes and bandwidth from NCCL's payloads.
pub(super) fn communication_text(
    s: &mut String,
    trace: &Trace,
    p: &NcclPayload,
    origin: i64,
    top: usize,
) {
    if p.per_device.is_empty() && p.note.is_none() {
        return;
    }
    let _ = writeln!(s, "\nCommunication");
    if let Some(note) = &p.note {
        let _ = writeln!(s, "  {note}");
        return;
    }
    let _ = writeln!(
        s,
        "  Total NCCL payload {} (every call's message size, sends and receives alike){}",
        format_bytes(p.total_message_bytes),
        if p.skipped_blobs > 0 {
            format!("; {} payloads could not be read", p.skipped_blobs)
        } else {
            String::new()
        }
    );
    for d in &p.per_device {
        let _ = writeln!(
            s,
            "  {}: {} calls, messages p50 {} / p99 {}; {} collectives, bus bandwidth median {}",
            trace.gpu_name(d.device),
            d.calls,
            format_bytes(d.message_bytes_p50),
            format_bytes(d.message_bytes_p99),
            d.collectives,
            gbps(d.busbw_gbps_median)
        );
        for c in &d.by_collective {
            let _ = writeln!(
                s,
                "    {}: {} × p50 {} / p99 {}, bus bandwidth median {}",
                c.collective,
                c.count,
                format_bytes(c.bytes_p50),
                format_bytes(c.bytes_p99),
                gbps(c.busbw_gbps_median)
            );
        }
    }
    for c in &p.communicators {
        let devices: Vec<String> = c.devices.iter().map(|&d| trace.gpu_name(d)).collect();
        let _ = writeln!(
            s,
            "  Communicator {} ({} ranks: {}): {} collectives, {}, bus bandwidth p50 {} / p99 {}",
            c.id,
            c.size,
            devices.join(", "),
            c.collectives,
            format_bytes(c.bytes),
            gbps(c.busbw_gbps_median),
            gbps(c.busbw_gbps_p99)
        );
    }
    for t in p.slowest.iter().take(top.min(3)) {
        let _ = writeln!(
            s,
            "  Slow transfer: {} of {} on {} at {}, moved in {}: {} ({:.0} % of the best of its size)",
            t.kind.label(),
            format_bytes(t.bytes),
            trace.gpu_name(t.device),
            format_ns(t.start_ns - origin),
            format_ns(t.transfer_ns),
            gbps(Some(t.busbw_gbps)),
            100.0 * t.of_best
        );
    }
}

/// The slowest iteration's critical path in a line per GPU that holds much of it.
pub(super) fn critical_path_text(s: &mut String, trace: &Trace, overview: &Overview) {
    let Some(p) = overview.slowest_path(trace) else {
        return;
    };
    let wall = p.path.wall_ns();
    let _ = writeln!(
        s,
        "    critical path ({} segments; `nsys-explorer critical-path FILE` lists them):",
        p.path.segments.len()
    );
    for (d, total, kinds) in &p.by_device {
        let (kind, ns) = kinds
            .iter()
            .max_by_key(|(_, ns)| **ns)
            .map_or(("", 0), |(k, ns)| (k.label(), *ns));
        let _ = writeln!(
            s,
            "      {}: {} ({:.0} % of the iteration), mostly {kind} ({})",
            trace.gpu_name(trace.devices[d.0].id),
            format_ns(*total),
            pct(*total, wall),
            format_ns(ns)
        );
    }
}

/// The CPU samples' hottest code and the longest OS runtime call's caller (nothing when
/// the capture recorded no call stacks).
fn call_stacks_text(s: &mut String, trace: &Trace) {
    use crate::analysis::cpu_samples::{called_from, cpu_profile, longest_os_calls};
    if let Some(p) = cpu_profile(trace, 3) {
        let top: Vec<String> = p
            .top_self
            .iter()
            .map(|f| {
                format!(
                    "{} {:.0} %",
                    f.frame.label(),
                    100.0 * f.count as f64 / p.count.max(1) as f64
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "  CPU samples: {} on {}; most in {}",
            p.count,
            plural(p.threads.len(), "thread"),
            top.join(", ")
        );
    }
    if let Some(c) = longest_os_calls(trace, 1).first() {
        let caller = trace.threads.get(c.thread).and_then(|t| {
            let i = (0..t.osrt.len()).find(|&i| t.osrt.start[i] == c.start_ns)?;
            called_from(trace, t.osrt.stack_of(i)?)
        });
        let _ = writeln!(
            s,
            "  longest OS runtime call with a backtrace: {} for {} on {}{}",
            c.call,
            format_ns(c.duration_ns),
            if c.name.is_empty() {
                format!("thread {}", c.tid)
            } else {
                c.name.clone()
            },
            caller.map_or_else(String::new, |c| format!(", called from {c}"))
        );
    }
}

/// A selected range in words (the window's "copy summary"), for an issue or a chat: its span, each GPU's breakdown and
/// the kernels that took the most of it.
pub fn selection_text(trace: &Trace, o: &Overview, (a, b): (i64, i64), origin: i64) -> String {
    use crate::analysis::breakdown::pct;
    use std::fmt::Write;
    let mut s = format!(
        "Selection: {} from {}\n",
        format_ns(b - a),
        format_ns(a - origin)
    );
    for d in &o.devices {
        let br = &d.breakdown;
        let t = br.total();
        let _ = writeln!(
            s,
            "{}: compute only {:.1} %, NCCL only {:.1} %, overlap {:.1} %, memory only {:.1} %, idle {:.1} % ({} gaps)",
            trace.gpu_name(d.device),
            pct(br.compute_only, t),
            pct(br.nccl_only, t),
            pct(br.overlap, t),
            pct(br.memory_only, t),
            pct(br.idle, t),
            o.gaps.iter().filter(|g| g.device_id() == d.device).count()
        );
    }
    for k in o.kernels.iter().take(5) {
        let _ = writeln!(
            s,
            "  {} × {}: {} ({:.1} % of kernel time)",
            k.count,
            k.name,
            format_ns(k.total_ns),
            k.share_pct
        );
    }
    s
}
