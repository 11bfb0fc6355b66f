//! What the `critical-path` command, `report` and the window say of a path: totals by
//! kind and by GPU, the top items on it, the slack of the largest kernels off it, and the
//! whole run's table (time on the path by kernel name and by NVTX range, over every
//! iteration).

use std::collections::BTreeMap;
use std::fmt::Write;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde_json::{Value, json};

use super::{CriticalPath, Graph, Place, Segment, SegmentKind, slack::slack};
use crate::analysis::iterations::Iterations;
use crate::format::{format_ns, plural};
use crate::trace::{DeviceIndex, NONE, StrId, Trace};

/// Items listed per table.
pub const TOP: usize = 10;

/// Time on the path by one key (a kernel's name, an NVTX range, an API call).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Item {
    pub name: String,
    pub ns: i64,
    /// Segments with this key.
    pub count: usize,
    /// Where the first of them starts and which GPU it is on (a click goes there).
    #[serde(skip)]
    pub first: Option<(DeviceIndex, i64, i64)>,
}

/// A large kernel off the path, and how much it could grow before the iteration would.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SlackItem {
    pub name: String,
    #[serde(skip)]
    pub device: DeviceIndex,
    pub start_ns: i64,
    pub duration_ns: i64,
    pub slack_ns: i64,
}

/// The path of one iteration, summed up.
#[derive(Debug, Clone)]
pub struct PathSummary {
    pub path: CriticalPath,
    pub by_kind: BTreeMap<SegmentKind, i64>,
    /// Per GPU: its total and its totals by kind.
    pub by_device: Vec<(DeviceIndex, i64, BTreeMap<SegmentKind, i64>)>,
    /// GPU work on the path by kernel (or copy) name.
    pub top_kernels: Vec<Item>,
    /// CPU time on the path by the innermost NVTX range around it.
    pub top_cpu: Vec<Item>,
    /// API calls (and launches) on the path by call name.
    pub top_api: Vec<Item>,
    /// The largest kernels of the iteration not on the path.
    pub slack: Vec<SlackItem>,
}

/// The path of iteration `k` with its totals, top items and slack.
pub fn summarise(graph: &Graph, iterations: &Iterations, k: usize) -> Option<PathSummary> {
    crate::profile_scope!("critical path: one iteration");
    Some(summarise_path(graph, graph.path(iterations, k)?))
}

/// A path's totals, top items and slack.
pub fn summarise_path(graph: &Graph, path: CriticalPath) -> PathSummary {
    let mut summary = totals_of(graph, path);
    summary.slack = slack_of_largest_off_path(graph, &summary.path);
    summary
}

/// Like [`summarise`], without the slack (what `report` gives).
pub fn totals(graph: &Graph, iterations: &Iterations, k: usize) -> Option<PathSummary> {
    Some(totals_of(graph, graph.path(iterations, k)?))
}

fn totals_of(graph: &Graph, path: CriticalPath) -> PathSummary {
    let trace = graph.trace;
    let mut by_kind = BTreeMap::new();
    let mut by_device: BTreeMap<DeviceIndex, (i64, BTreeMap<SegmentKind, i64>)> = BTreeMap::new();
    for seg in &path.segments {
        *by_kind.entry(seg.kind).or_insert(0) += seg.duration_ns();
        let d = by_device.entry(seg.device).or_default();
        d.0 += seg.duration_ns();
        *d.1.entry(seg.kind).or_insert(0) += seg.duration_ns();
    }
    let top = |keep: &dyn Fn(SegmentKind) -> bool| {
        let mut items = group(&path.segments, keep, |s| s.name);
        items.truncate(TOP);
        named(trace, items)
    };
    let top_kernels = top(&SegmentKind::is_gpu);
    let top_cpu = top(&|k| k == SegmentKind::Cpu);
    let top_api = top(&|k| matches!(k, SegmentKind::Api | SegmentKind::Launch));
    PathSummary {
        by_kind,
        by_device: by_device
            .into_iter()
            .map(|(d, (total, kinds))| (d, total, kinds))
            .collect(),
        top_kernels,
        top_cpu,
        top_api,
        slack: Vec::new(),
        path,
    }
}

/// Time on the path under one key: (key, ns, segments, the first segment's GPU and span).
type Group = (StrId, i64, usize, Option<(DeviceIndex, i64, i64)>);

/// Segments grouped by `key` among those of kinds `keep`, the most time first.
fn group(
    segments: &[Segment],
    keep: &dyn Fn(SegmentKind) -> bool,
    key: impl Fn(&Segment) -> StrId,
) -> Vec<Group> {
    let mut by: FxHashMap<StrId, Group> = FxHashMap::default();
    for s in segments.iter().filter(|s| keep(s.kind)) {
        let id = key(s);
        let e = by.entry(id).or_insert((id, 0, 0, None));
        e.1 += s.duration_ns();
        e.2 += 1;
        e.3.get_or_insert((s.device, s.start_ns, s.end_ns));
    }
    let mut out: Vec<Group> = by.into_values().collect();
    out.sort_unstable_by_key(|x| (std::cmp::Reverse(x.1), x.0));
    out
}

fn named(trace: &Trace, items: Vec<Group>) -> Vec<Item> {
    items
        .into_iter()
        .map(|(id, ns, count, first)| Item {
            name: name_of(trace, id),
            ns,
            count,
            first,
        })
        .collect()
}

fn name_of(trace: &Trace, id: StrId) -> String {
    if id == NONE {
        "(no NVTX range)".to_string()
    } else {
        trace.strings.get(id).into_owned()
    }
}

/// Kernels of the iteration looked at for slack: the largest, off the path.
const SLACK_LISTED: usize = TOP;

fn slack_of_largest_off_path(graph: &Graph, path: &CriticalPath) -> Vec<SlackItem> {
    let trace = graph.trace;
    let on_path: rustc_hash::FxHashSet<(usize, usize, usize)> = path
        .segments
        .iter()
        .filter_map(|s| match s.place {
            Place::Op(d, st, i) => Some((d, st, i)),
            _ => None,
        })
        .collect();
    let mut largest: Vec<(i64, (usize, usize, usize))> = Vec::new();
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            let lo = ops.start.partition_point(|&x| x < path.start_ns);
            let hi = ops.start.partition_point(|&x| x <= path.end_ns);
            for i in lo..hi {
                if ops.kind[i].is_kernel()
                    && ops.end[i] <= path.end_ns
                    && !on_path.contains(&(d, s, i))
                {
                    largest.push((ops.end[i] - ops.start[i], (d, s, i)));
                }
            }
        }
    }
    largest.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
    largest.truncate(SLACK_LISTED);
    if largest.is_empty() {
        return Vec::new();
    }
    let latest = slack(graph, path.start_ns, path.end_ns);
    largest
        .into_iter()
        .filter_map(|(duration_ns, (d, s, i))| {
            let ops = &trace.devices[d].streams[s].ops;
            Some(SlackItem {
                name: trace.strings.get(ops.name[i]).into_owned(),
                device: DeviceIndex(d),
                start_ns: ops.start[i],
                duration_ns,
                slack_ns: latest.of(graph, d, s, i)?,
            })
        })
        .collect()
}

/// Time on the critical path over every iteration, by kernel name and by NVTX range.
#[derive(Debug, Clone)]
pub struct RunTable {
    pub iterations: usize,
    /// The iterations' walls summed: what the shares are of.
    pub wall_ns: i64,
    pub by_kind: BTreeMap<SegmentKind, i64>,
    pub by_kernel: Vec<Item>,
    /// Every segment by an NVTX range (numbers as `#`): CPU time by the range around it,
    /// GPU work and calls by the innermost range around their launch or call.
    pub by_nvtx: Vec<Item>,
}

/// The whole run's table (every iteration's path, walked in parallel; a trace without
/// iterations, the whole run's path).
pub fn run_table(graph: &Graph, iterations: &Iterations, top: usize) -> RunTable {
    crate::profile_scope!("critical path: every iteration");
    let trace = graph.trace;
    // Without iterations, the whole run is the one path.
    let paths: Vec<CriticalPath> = if iterations.count() == 0 {
        graph.run_path().into_iter().collect()
    } else {
        (0..iterations.count())
            .into_par_iter()
            .filter_map(|k| graph.path(iterations, k))
            .collect()
    };
    let mut by_kind = BTreeMap::new();
    let mut kernels: FxHashMap<StrId, (i64, usize)> = FxHashMap::default();
    let mut ranges: FxHashMap<u32, (i64, usize)> = FxHashMap::default();
    for p in &paths {
        for s in &p.segments {
            *by_kind.entry(s.kind).or_insert(0) += s.duration_ns();
            if s.kind.is_gpu() {
                let e = kernels.entry(s.name).or_default();
                e.0 += s.duration_ns();
                e.1 += 1;
            }
            let range = nvtx_range_of(trace, s);
            let template = if range == NONE {
                NONE
            } else {
                trace.strings.template_of(range)
            };
            let e = ranges.entry(template).or_default();
            e.0 += s.duration_ns();
            e.1 += 1;
        }
    }
    let sorted = |m: FxHashMap<u32, (i64, usize)>, name: &dyn Fn(u32) -> String| {
        let mut v: Vec<(u32, i64, usize)> = m.into_iter().map(|(k, (ns, n))| (k, ns, n)).collect();
        v.sort_unstable_by_key(|x| (std::cmp::Reverse(x.1), x.0));
        v.truncate(top);
        v.into_iter()
            .map(|(k, ns, count)| Item {
                name: name(k),
                ns,
                count,
                first: None,
            })
            .collect::<Vec<_>>()
    };
    RunTable {
        iterations: paths.len(),
        wall_ns: paths.iter().map(CriticalPath::wall_ns).sum(),
        by_kind,
        by_kernel: sorted(kernels, &|id| name_of(trace, id)),
        by_nvtx: sorted(ranges, &|t| {
            if t == NONE {
                "(no NVTX range)".to_string()
            } else {
                trace.strings.template_text(t)
            }
        }),
    }
}

/// The NVTX range a segment is counted under: a CPU segment's own; a GPU segment's,
/// the innermost around its launch; a call's, the innermost around it.
fn nvtx_range_of(trace: &Trace, s: &Segment) -> StrId {
    let at_call = |th: usize, k: usize| {
        let thread = &trace.threads[th];
        let path = thread.nvtx.path_at(thread.api.start[k]);
        path.last().map_or(NONE, |&r| thread.nvtx.text[r as usize])
    };
    match s.place {
        Place::Cpu(_) => s.name,
        Place::Call(th, k) => at_call(th, k),
        Place::Op(d, st, i) => {
            let ops = &trace.devices[d].streams[st].ops;
            match (ops.launch_thread[i], ops.launch_call[i]) {
                (th, k) if th != NONE && k != NONE => at_call(th as usize, k as usize),
                _ => NONE,
            }
        }
    }
}

/// How a GPU is named in JSON: `FILE:ID` in a trace of several files, else the id.
pub fn device_json(trace: &Trace, d: DeviceIndex) -> Value {
    let device = &trace.devices[d.0];
    match &device.key {
        Some(key) => json!(key),
        None => json!(device.id),
    }
}

fn kinds_json(kinds: &BTreeMap<SegmentKind, i64>) -> Value {
    let map: serde_json::Map<String, Value> = SegmentKind::ALL
        .iter()
        .map(|k| {
            (
                k.label().to_string(),
                json!(kinds.get(k).copied().unwrap_or(0)),
            )
        })
        .collect();
    Value::Object(map)
}

/// The totals `report` gives of the slowest iteration's path.
pub fn totals_json(trace: &Trace, p: &PathSummary) -> Value {
    json!({
        "iteration": p.path.iteration,
        "start_ns": p.path.start_ns,
        "end_ns": p.path.end_ns,
        "wall_ns": p.path.wall_ns(),
        "by_kind": kinds_json(&p.by_kind),
        "by_device": p.by_device.iter().map(|(d, total, kinds)| json!({
            "device": device_json(trace, *d),
            "total_ns": total,
            "by_kind": kinds_json(kinds),
        })).collect::<Vec<_>>(),
    })
}

/// `critical-path --json`: the totals, every segment, the top items and the slack.
pub fn path_json(trace: &Trace, p: &PathSummary) -> Value {
    let mut v = totals_json(trace, p);
    v["segments"] = p
        .path
        .segments
        .iter()
        .map(|s| {
            json!({
                "kind": s.kind,
                "device": device_json(trace, s.device),
                "name": name_of(trace, s.name),
                "start_ns": s.start_ns,
                "end_ns": s.end_ns,
            })
        })
        .collect();
    v["top_kernels"] = json!(p.top_kernels);
    v["top_cpu"] = json!(p.top_cpu);
    v["top_api"] = json!(p.top_api);
    v["slack"] = p
        .slack
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "device": device_json(trace, s.device),
                "start_ns": s.start_ns,
                "duration_ns": s.duration_ns,
                "slack_ns": s.slack_ns,
            })
        })
        .collect();
    v
}

pub fn run_table_json(t: &RunTable) -> Value {
    json!({
        "iterations": t.iterations,
        "wall_ns": t.wall_ns,
        "by_kind": kinds_json(&t.by_kind),
        "by_kernel": t.by_kernel,
        "by_nvtx": t.by_nvtx,
    })
}

fn share(ns: i64, of: i64) -> f64 {
    if of <= 0 {
        0.0
    } else {
        100.0 * ns as f64 / of as f64
    }
}

fn kinds_text(kinds: &BTreeMap<SegmentKind, i64>, of: i64) -> String {
    kinds
        .iter()
        .filter(|(_, ns)| **ns > 0)
        .map(|(k, ns)| format!("{} {} ({:.0} %)", k.label(), format_ns(*ns), share(*ns, of)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The path in words: totals, where it ran, the top items, the slack.
pub fn path_text(trace: &Trace, p: &PathSummary) -> String {
    let origin = trace.time_origin().unwrap_or(0);
    let wall = p.path.wall_ns();
    let mut s = String::new();
    let what = match p.path.iteration {
        Some(k) => format!("iteration {k}"),
        None => "the whole run (no iterations found: give --iteration-marker TEXT for one)".into(),
    };
    let _ = writeln!(
        s,
        "Critical path of {what}: {} (from {} to {}), {}",
        format_ns(wall),
        format_ns(p.path.start_ns - origin),
        format_ns(p.path.end_ns - origin),
        plural(p.path.segments.len(), "segment")
    );
    let _ = writeln!(s, "  by kind: {}", kinds_text(&p.by_kind, wall));
    for (d, total, kinds) in &p.by_device {
        let _ = writeln!(
            s,
            "  {}: {} ({:.0} %): {}",
            trace.gpu_name(trace.devices[d.0].id),
            format_ns(*total),
            share(*total, wall),
            kinds_text(kinds, *total)
        );
    }
    let list = |s: &mut String, title: &str, items: &[Item]| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(s, "  {title}:");
        for it in items {
            let _ = writeln!(
                s,
                "    {:>10}  {:>4.1} %  {} ×{}",
                format_ns(it.ns),
                share(it.ns, wall),
                it.name,
                it.count
            );
        }
    };
    list(&mut s, "GPU work on the path", &p.top_kernels);
    list(&mut s, "CPU time on the path, by NVTX range", &p.top_cpu);
    list(&mut s, "API calls on the path", &p.top_api);
    if !p.slack.is_empty() {
        let _ = writeln!(
            s,
            "  Largest kernels off the path, and how much each could grow before the iteration would:"
        );
        for k in &p.slack {
            let _ = writeln!(
                s,
                "    {} {} at {}: slack {}",
                k.name,
                format_ns(k.duration_ns),
                format_ns(k.start_ns - origin),
                format_ns(k.slack_ns)
            );
        }
    }
    s
}

pub fn run_table_text(t: &RunTable) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Critical path over {}: {} in all",
        plural(t.iterations, "iteration"),
        format_ns(t.wall_ns)
    );
    let _ = writeln!(s, "  by kind: {}", kinds_text(&t.by_kind, t.wall_ns));
    for (title, items) in [("by kernel", &t.by_kernel), ("by NVTX range", &t.by_nvtx)] {
        let _ = writeln!(s, "  {title}:");
        for it in items {
            let _ = writeln!(
                s,
                "    {:>10}  {:>4.1} %  {} ×{}",
                format_ns(it.ns),
                share(it.ns, t.wall_ns),
                it.name,
                it.count
            );
        }
    }
    s
}
