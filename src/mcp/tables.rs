//! The MCP tools' tables, a page at a time: the gaps with their causes, the recurring gap
//! patterns, the kernels, NCCL and memory of a window, the CPU samples, and the events of a
//! window as the timeline shows them (an agent zooms as a person does).

use serde_json::{Value, json};

use super::answers::{Answer, overview_of};
use super::page::{fit, page, paged};
use crate::analysis::gaps::Gap;
use crate::format::format_ns;
use crate::report::gap_json;
use crate::session::OpenTrace;
use crate::trace::{DeviceId, NONE};

/// How the gaps are filtered and ordered.
#[derive(Debug, Default, Clone)]
pub struct GapQuery {
    pub gpu: Option<u32>,
    pub cause: Option<String>,
    pub text: Option<String>,
    pub min_ns: Option<i64>,
    pub window: Option<(i64, i64)>,
    /// "duration" (the longest first, the default) or "start".
    pub sort: Option<String>,
}

/// The gaps that pass `q`, as `report --json` describes them, a page at a time.
pub fn gaps(
    t: &super::tools::Held,
    q: &GapQuery,
    offset: usize,
    limit: Option<usize>,
) -> Result<Answer, String> {
    let trace = &t.trace;
    let causes = [
        "host_sync",
        "after_sync",
        "host_bound",
        "cross_device",
        "cpu_gap",
        "unknown",
    ];
    if let Some(c) = &q.cause
        && !t.overview.gaps.iter().any(|g| g.cause.label() == c)
        && !causes.contains(&c.as_str())
    {
        return Err(format!(
            "no cause {c:?}: gaps' causes are labels such as {}",
            causes.join(", ")
        ));
    }
    // Whether a name holds the text, worked out once a name (not once a gap: millions of
    // gaps share a few thousand names).
    let named = q.text.as_ref().map(|text| {
        let needle = text.to_lowercase();
        let seen = std::cell::RefCell::new(rustc_hash::FxHashMap::default());
        move |id: crate::trace::StrId| {
            id != NONE
                && *seen
                    .borrow_mut()
                    .entry(id)
                    .or_insert_with(|| trace.strings.get(id).to_lowercase().contains(&needle))
        }
    });
    let passes = |g: &Gap| {
        q.gpu.is_none_or(|d| g.device_id() == DeviceId(d))
            && q.cause.as_ref().is_none_or(|c| g.cause.label() == c)
            && q.min_ns.is_none_or(|m| g.duration_ns >= m)
            && q.window
                .is_none_or(|(a, b)| g.start_ns < b && g.end_ns() > a)
            && named.as_ref().is_none_or(|is| {
                is(g.before_name(trace)) || is(g.after_name(trace)) || is(g.enclosing)
            })
    };
    let limit = limit
        .unwrap_or(super::page::DEFAULT_LIMIT)
        .min(super::page::MOST);
    let gaps = &t.overview.gaps;
    // One walk in the order asked for: the total, the idle time and the page at once.
    let order: Box<dyn Iterator<Item = &Gap>> = match q.sort.as_deref() {
        None | Some("duration") => Box::new(t.longest_first().iter().map(|&i| &gaps[i as usize])),
        Some("start") => {
            let mut by_start: Vec<&Gap> = gaps.iter().filter(|g| passes(g)).collect();
            by_start.sort_by_key(|g| (g.start_ns, g.device));
            Box::new(by_start.into_iter())
        }
        Some(other) => {
            return Err(format!("sort by {other:?}? give \"duration\" or \"start\""));
        }
    };
    let (mut total, mut idle) = (0usize, 0i64);
    let mut hits: Vec<&Gap> = Vec::with_capacity(limit);
    let longest_first = matches!(q.sort.as_deref(), None | Some("duration"));
    // Longest first, the walk ends at the first gap under the length asked for.
    let shortest = q.min_ns.filter(|_| longest_first).unwrap_or(i64::MIN);
    let unfiltered = q.gpu.is_none()
        && q.cause.is_none()
        && q.text.is_none()
        && q.min_ns.is_none()
        && q.window.is_none();
    if unfiltered {
        // Every gap passes: the page is the order's, the sums the whole list's.
        total = gaps.len();
        idle = gaps.iter().map(|g| g.duration_ns).sum();
        hits.extend(order.skip(offset).take(limit));
    } else {
        for g in order
            .take_while(|g| g.duration_ns >= shortest)
            .filter(|g| passes(g))
        {
            if total >= offset && hits.len() < limit {
                hits.push(g);
            }
            total += 1;
            idle += g.duration_ns;
        }
    }
    let rows: Vec<Value> = hits
        .iter()
        .map(|g| {
            let mut v = gap_json(trace, g);
            v["gpu"] = trace.gpu_name(g.device_id()).into();
            v["duration"] = format_ns(g.duration_ns).into();
            v
        })
        .collect();
    let mut json = paged("gaps", rows, total, offset);
    json["idle_ns"] = idle.into();
    let summary = format!(
        "{total} gap(s), {} idle in all{}",
        format_ns(idle),
        hits.first().map_or(String::new(), |g| format!(
            "; longest shown first: {} ({})",
            format_ns(g.duration_ns),
            g.cause.label()
        ))
    );
    Ok(Answer::new(json, summary))
}

/// The gap patterns seen at least twice, the most idle time first, with each one's longest.
pub fn recurring_gaps(t: &OpenTrace, offset: usize, limit: Option<usize>) -> Answer {
    let o = &t.overview;
    let limit = limit
        .unwrap_or(super::page::DEFAULT_LIMIT)
        .min(super::page::MOST);
    // Each pattern's longest gap looked for on the page's patterns only.
    let rows: Vec<Value> = o
        .recurring
        .iter()
        .skip(offset)
        .take(limit)
        .map(|r| {
            let longest = r
                .members
                .iter()
                .copied()
                .max_by_key(|&i| o.gaps[i as usize].duration_ns);
            json!({
                "signature": r.signature,
                "count": r.count,
                "total_ns": r.total_ns,
                "total": format_ns(r.total_ns),
                "median_ns": r.median_ns,
                "longest": longest.map(|i| gap_json(&t.trace, &o.gaps[i as usize])),
            })
        })
        .collect();
    let summary = match o.recurring.first() {
        Some(r) => format!(
            "{} pattern(s); the largest: {} × {} ({} in all)",
            o.recurring.len(),
            r.count,
            r.signature,
            format_ns(r.total_ns)
        ),
        None => "No gap recurs".into(),
    };
    Answer::new(paged("patterns", rows, o.recurring.len(), offset), summary)
}

/// The kernels of a window (or the whole run), the most GPU time first; `name` filters.
pub fn kernels(
    t: &OpenTrace,
    window: Option<(i64, i64)>,
    name: Option<&str>,
    offset: usize,
    limit: Option<usize>,
) -> Result<Answer, String> {
    let o = overview_of(t, window)?;
    let needle = name.map(str::to_lowercase);
    let rows: Vec<Value> = o
        .kernels
        .iter()
        .filter(|k| {
            needle
                .as_ref()
                .is_none_or(|n| k.name.to_lowercase().contains(n))
        })
        .map(|k| serde_json::to_value(k).unwrap_or(Value::Null))
        .collect();
    let summary = match o.kernels.first() {
        Some(k) => format!(
            "{} kernel name(s); the most time: {} ({:.1} % of kernel time, {} calls)",
            o.kernels.len(),
            k.name,
            k.share_pct,
            k.count
        ),
        None => "No kernel in it".into(),
    };
    Ok(Answer::new(page("kernels", rows, offset, limit), summary))
}

/// NCCL of a window (or the whole run): each GPU's collectives, its wait for the last rank
/// against transfer, the collectives held back longest, and bytes and bus bandwidth by
/// communicator when the export has NCCL's payloads.
pub fn nccl(t: &OpenTrace, window: Option<(i64, i64)>, limit: usize) -> Result<Answer, String> {
    let o = overview_of(t, window)?;
    let trace = &t.trace;
    let per_gpu: Vec<Value> = o
        .nccl_wait
        .per_device
        .iter()
        .map(|w| {
            json!({
                "gpu": trace.gpu_name(w.device),
                "collectives": w.collectives,
                "wait_ns": w.wait_ns,
                "transfer_ns": w.transfer_ns,
                "last_arrivals": w.last_arrivals,
            })
        })
        .collect();
    let payload = crate::report::nccl_payload_json(trace, &o.nccl_payload, limit);
    let summary = match o.nccl_wait.late.first() {
        Some(l) => format!(
            "{} NCCL kernel kind(s); the collective held back longest: {}",
            o.nccl.len(),
            crate::analysis::arrivals::late_sentence(
                &l.name,
                l.start_ns - trace.time_origin().unwrap_or(0),
                l.held_back_ns,
                &trace.gpu_name(l.last_device),
                l.last_thread_call.as_deref()
            )
        ),
        None if o.nccl.is_empty() => "No NCCL kernel in it".into(),
        None => format!("{} NCCL kernel kind(s) on one GPU", o.nccl.len()),
    };
    let json = json!({
        "window_ns": window,
        "kernels": o.nccl,
        "wait": per_gpu,
        "late": o.nccl_wait.late.iter().take(limit).collect::<Vec<_>>(),
        "payload": payload,
    });
    Ok(Answer::new(fit(json, limit), summary))
}

/// Memory of a window (or the whole run): copies and sets per GPU and kind with their
/// bandwidth; device memory in use per GPU (peak, growth) when the capture recorded it.
pub fn memory(t: &OpenTrace, window: Option<(i64, i64)>, limit: usize) -> Result<Answer, String> {
    let o = overview_of(t, window)?;
    let usage = crate::analysis::memory_usage::memory_usage(&t.trace, &t.overview.iterations);
    let moved: u64 = o.memory.iter().map(|m| m.bytes).sum();
    let summary = format!(
        "{} copy/set row(s), {:.1} MiB moved{}",
        o.memory.len(),
        moved as f64 / (1 << 20) as f64,
        if usage.is_empty() {
            "; device memory not recorded (nsys --cuda-memory-usage=true)".to_string()
        } else {
            format!("; device memory of {} GPU(s)", usage.len())
        }
    );
    let json = json!({
        "window_ns": window,
        "transfers": o.memory,
        "device_memory": (!usage.is_empty()).then_some(&usage),
    });
    Ok(Answer::new(fit(json, limit), summary))
}

/// The CPU samples: the whole run's hottest frames, or one thread's in a window.
pub fn cpu_samples(
    t: &OpenTrace,
    tid: Option<u32>,
    window: Option<(i64, i64)>,
    limit: usize,
) -> Result<Answer, String> {
    let trace = &t.trace;
    if trace.stacks().samples.time.is_empty() {
        return Err("the trace has no CPU samples (nsys profile samples by default; --sample=none turns it off)".into());
    }
    let json = match (tid, window) {
        (None, None) => {
            serde_json::to_value(crate::analysis::cpu_samples::cpu_profile(trace, limit))
                .unwrap_or(Value::Null)
        }
        (tid, window) => {
            let thread = match tid {
                Some(tid) => trace
                    .threads
                    .iter()
                    .find(|t| t.tid == tid)
                    .ok_or_else(|| format!("no thread with tid {tid}"))?,
                None => trace
                    .threads
                    .iter()
                    .max_by_key(|t| t.api.len())
                    .ok_or("no thread")?,
            };
            let (a, b) = window.unwrap_or((i64::MIN, i64::MAX));
            let s = crate::analysis::cpu_samples::samples_in(trace, thread.global_tid, a, b, limit);
            json!({ "tid": thread.tid, "thread": thread.name, "window_ns": window, "samples": s })
        }
    };
    let summary = "The hottest frames by samples (self), innermost first".to_string();
    Ok(Answer::new(fit(json, limit), summary))
}

/// Which rows of the timeline `events` reads.
#[derive(Debug, Default, Clone)]
pub struct Rows {
    pub gpu: Option<u32>,
    pub stream: Option<u32>,
    pub tid: Option<u32>,
}

/// The GPU ops, API calls and NVTX ranges that overlap `[a, b)`, by start, the first
/// `limit` (with how many there are of each).
pub fn events(
    t: &OpenTrace,
    (a, b): (i64, i64),
    rows: &Rows,
    limit: usize,
) -> Result<Answer, String> {
    if b <= a {
        return Err(format!(
            "the window's end ({b}) must be after its start ({a})"
        ));
    }
    let trace = &t.trace;
    let mut found: Vec<(i64, Value)> = Vec::new();
    let mut counts = [0usize; 3];
    for d in &trace.devices {
        if rows.gpu.is_some_and(|g| d.id != DeviceId(g))
            || (rows.tid.is_some() && rows.gpu.is_none())
        {
            continue;
        }
        for s in d
            .streams
            .iter()
            .filter(|s| rows.stream.is_none_or(|id| s.id == id))
        {
            let ops = &s.ops;
            let from = ops
                .start
                .partition_point(|&x| x < a.saturating_sub(s.longest_op_ns));
            for i in (from..ops.len())
                .take_while(|&i| ops.start[i] < b)
                .filter(|&i| ops.end[i] > a)
            {
                counts[0] += 1;
                found.push((
                    ops.start[i],
                    json!({
                        "row": format!("{} stream {}", trace.gpu_name(d.id), s.id),
                        "kind": format!("{:?}", ops.kind[i]).to_lowercase(),
                        "name": trace.strings.get(ops.name[i]),
                        "start_ns": ops.start[i],
                        "duration_ns": ops.end[i] - ops.start[i],
                    }),
                ));
            }
        }
    }
    for th in &trace.threads {
        if rows.tid.is_some_and(|tid| th.tid != tid) || (rows.gpu.is_some() && rows.tid.is_none()) {
            continue;
        }
        let row = format!("{} (tid {})", th.name, th.tid);
        for i in th.calls_overlapping(a, b) {
            counts[1] += 1;
            found.push((
                th.api.start[i],
                json!({
                    "row": row,
                    "kind": "api",
                    "name": trace.strings.get(th.api.name[i]),
                    "start_ns": th.api.start[i],
                    "duration_ns": th.api.end[i] - th.api.start[i],
                }),
            ));
        }
        let n = &th.nvtx;
        // The ranges open at `a` (start/end ones opened long before included), then those
        // starting in the window.
        let (from, to) = (
            n.start.partition_point(|&x| x < a),
            n.start.partition_point(|&x| x < b),
        );
        for i in n.open_at(a).into_iter().chain(from..to) {
            counts[2] += 1;
            found.push((
                n.start[i],
                json!({
                    "row": row,
                    "kind": "nvtx",
                    "name": trace.strings.get(n.text[i]),
                    "depth": n.depth[i],
                    "start_ns": n.start[i],
                    "duration_ns": n.end[i] - n.start[i],
                }),
            ));
        }
    }
    found.sort_by_key(|e| e.0);
    let total = found.len();
    let shown: Vec<Value> = found
        .into_iter()
        .take(limit.min(super::page::MOST))
        .map(|e| e.1)
        .collect();
    let mut json = paged("events", shown, total, 0);
    json["gpu_ops"] = counts[0].into();
    json["api_calls"] = counts[1].into();
    json["nvtx_ranges"] = counts[2].into();
    let summary = format!(
        "{} GPU op(s), {} API call(s), {} NVTX range(s) in {} from {}",
        counts[0],
        counts[1],
        counts[2],
        format_ns(b - a),
        format_ns(a - trace.time_origin().unwrap_or(0))
    );
    Ok(Answer::new(json, summary))
}
