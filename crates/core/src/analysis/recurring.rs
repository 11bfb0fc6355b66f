//! Gaps put in words (neighbour names, NVTX paths, enclosing range, the launching thread's
//! calls during the gap) — only for the gaps shown — and gaps grouped by signature into
//! recurring patterns, by interned ids: no string per gap.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::cpu_samples::{FrameName, WindowSamples, backtrace, samples_in};
use super::gaps::{Cause, Gap, OpRef, launch_nvtx_path};
use crate::format::format_ns;
use crate::sorted::median_in_place;
use crate::trace::{Device, NONE, StrId, TemplateId, Thread, Trace};

/// A call of the launching thread that overlaps a gap: a CUDA API call, or an OS runtime
/// call (`read`, `pthread_cond_wait`, …).
#[derive(Debug, Clone, Serialize)]
pub struct CallDuringGap {
    /// `cuda` or `osrt`.
    pub kind: &'static str,
    pub name: String,
    pub start_ns: i64,
    pub duration_ns: i64,
    /// An OS runtime call's backtrace (its innermost frames first), when nsys kept one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backtrace: Option<Vec<FrameName>>,
}

/// Frames of a backtrace listed with a gap.
const BACKTRACE_FRAMES: usize = 8;
/// Frames listed with a gap's CPU samples.
const SAMPLE_FRAMES: usize = 5;

/// A gap in words.
#[derive(Debug, Clone, Serialize)]
pub struct GapDetail {
    #[serde(flatten)]
    pub gap: Gap,
    pub before_name: String,
    pub after_name: String,
    /// CUDA stream ids of the ops before and after it.
    pub before_stream: u32,
    pub after_stream: u32,
    pub before_nvtx: Vec<String>,
    pub after_nvtx: Vec<String>,
    pub enclosing_nvtx: Option<String>,
    /// Calls of the thread that launched the op after the gap, overlapping it, longest first.
    pub calls_during: Vec<CallDuringGap>,
    /// What that thread was doing meanwhile, when something covers much of the gap.
    pub activity: Option<CpuActivity>,
    /// That thread's CPU samples in the gap, when the capture sampled it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_samples: Option<WindowSamples>,
}

/// What the thread that launched the op after a gap was doing during it: the NVTX ranges
/// open on it then that do not also surround the launch (a JIT compilation, a data load),
/// and its longest API call in the gap.
#[derive(Debug, Clone, Serialize)]
pub struct CpuActivity {
    /// Outermost first.
    pub nvtx: Vec<String>,
    /// How much of the gap the outermost of them covers.
    pub nvtx_ns: i64,
    pub longest_call: Option<String>,
    /// How much of the gap that call covers.
    pub longest_call_ns: i64,
}

impl CpuActivity {
    /// "in KernelExecutor::compileFusion > nvrtc_compile for 330.0 ms".
    pub fn text(&self) -> String {
        match (&self.nvtx[..], &self.longest_call) {
            ([], Some(call)) => format!("in {call} for {}", format_ns(self.longest_call_ns)),
            ([], None) => String::new(),
            // An OS runtime call says what the thread waited for; the innermost range
            // says where.
            (ranges, Some(call)) if call.ends_with("()") => format!(
                "in {call} for {} ({})",
                format_ns(self.longest_call_ns),
                ranges.last().map_or("", String::as_str)
            ),
            (ranges, _) => format!("in {} for {}", ranges.join(" > "), format_ns(self.nvtx_ns)),
        }
    }
}

/// A share of the gap below which what the CPU did is not named.
const ACTIVITY_MIN_SHARE: f64 = 0.1;

/// What the launching thread did during `gap` (see [`CpuActivity`]).
pub fn activity(trace: &Trace, gap: &Gap) -> Option<CpuActivity> {
    let device = trace.device(gap.device_id())?;
    let ops = &device.streams[gap.after.stream as usize].ops;
    let (thread, call) = (
        ops.launch_thread[gap.after.op as usize],
        ops.launch_call[gap.after.op as usize],
    );
    if call == NONE {
        return None;
    }
    let thread = &trace.threads[thread as usize];
    let nvtx = &thread.nvtx;
    let (gs, ge) = (gap.start_ns, gap.end_ns());
    let overlap = |s: i64, e: i64| (e.min(ge) - s.max(gs)).max(0);
    let enough = |ns: i64| ns as f64 >= ACTIVITY_MIN_SHARE * gap.duration_ns as f64;
    let middle = gs + gap.duration_ns / 2;
    let launch = thread.api.start[call as usize];
    // The ranges open at the gap's middle that the launch is not in.
    let during = nvtx.path_at(middle);
    let common = nvtx.enclosing(middle.min(launch), middle.max(launch));
    let extra = &during[during
        .iter()
        .position(|&r| r == common)
        .map_or(0, |i| i + 1)..];
    let nvtx_ns = extra.first().map_or(0, |&r| {
        overlap(nvtx.start[r as usize], nvtx.end[r as usize])
    });
    let (call_ns, call_name) = match longest_call(trace, thread, gs, ge) {
        Some((ns, name)) if enough(ns) => (ns, Some(name)),
        _ => (0, None),
    };
    let names: Vec<String> = if enough(nvtx_ns) {
        extra
            .iter()
            .map(|&r| trace.strings.get(nvtx.text[r as usize]).into_owned())
            .collect()
    } else {
        Vec::new()
    };
    (!names.is_empty() || call_name.is_some()).then_some(CpuActivity {
        nvtx: names,
        nvtx_ns,
        longest_call: call_name,
        longest_call_ns: call_ns,
    })
}

/// The call of `thread` that covers most of `[a, b)`, CUDA API or OS runtime (named
/// `read()`): how much it covers, and its name.
pub fn longest_call(trace: &Trace, thread: &Thread, a: i64, b: i64) -> Option<(i64, String)> {
    let overlap = |s: i64, e: i64| (e.min(b) - s.max(a)).max(0);
    let cuda = thread
        .calls_overlapping(a, b)
        .map(|i| (overlap(thread.api.start[i], thread.api.end[i]), i))
        .max();
    let os = thread
        .osrt_overlapping(a, b)
        .map(|i| (overlap(thread.osrt.start[i], thread.osrt.end[i]), i))
        .max();
    match (cuda, os) {
        (Some(c), Some(o)) if o.0 > c.0 => Some((o.0, os_call_name(trace, thread, o.1))),
        (None, Some(o)) => Some((o.0, os_call_name(trace, thread, o.1))),
        (Some(c), _) => Some((c.0, trace.strings.get(thread.api.name[c.1]).into_owned())),
        (None, None) => None,
    }
}

/// An OS runtime call as a person reads it: `read()`.
pub fn os_call_name(trace: &Trace, thread: &Thread, i: usize) -> String {
    format!("{}()", trace.strings.get(thread.osrt.name[i]))
}

/// A gap's cause with what the CPU was doing: `host_bound: in
/// KernelExecutor::compileFusion > nvrtc_compile for 330.0 ms`; a host-sync gap's names the
/// synchronising call first (`host_sync: waited in cudaStreamSynchronize for 9.8 ms, then
/// in pthread_cond_wait() for 40.0 ms (scheduler_step)`).
pub fn cause_text(trace: &Trace, gap: &Gap) -> String {
    // A host-sync gap names the synchronising call its thread waited in (the longest call
    // in the gap may be a launch after it).
    if gap.cause == super::gaps::Cause::HostSync
        && let Some((thread, call)) = super::gaps::sync_call_of_gap(trace, gap)
    {
        let api = &trace.threads[thread].api;
        let then = activity(trace, gap).map_or(String::new(), |a| format!(", then {}", a.text()));
        return format!(
            "{}: waited in {} for {}{then}",
            gap.cause.label(),
            trace.strings.get(api.name[call]),
            format_ns(api.end[call] - api.start[call])
        );
    }
    match activity(trace, gap) {
        Some(a) => format!("{}: {}", gap.cause.label(), a.text()),
        None => gap.cause.label().to_string(),
    }
}

impl GapDetail {
    /// Before → after, enclosing range with numbers as `#`, cause.
    pub fn signature(&self, trace: &Trace) -> String {
        signature(trace, &self.gap)
    }
}

/// A gap's signature: before → after, enclosing range with numbers as `#`, cause.
pub fn signature(trace: &Trace, gap: &Gap) -> String {
    let enclosing = gap.enclosing().map_or_else(
        || "(no NVTX)".to_string(),
        |id| trace.strings.template_text(trace.strings.template_of(id)),
    );
    format!(
        "{} → {} in {} [{}]",
        trace.strings.get(gap.before_name(trace)),
        trace.strings.get(gap.after_name(trace)),
        enclosing,
        gap.cause.label()
    )
}

/// Everything known about one gap; `max_calls` limits the calls listed.
pub fn describe(trace: &Trace, gap: &Gap, max_calls: usize) -> GapDetail {
    let Some(device) = trace.device(gap.device_id()) else {
        return GapDetail {
            gap: *gap,
            before_name: String::new(),
            after_name: String::new(),
            before_stream: 0,
            after_stream: 0,
            before_nvtx: Vec::new(),
            after_nvtx: Vec::new(),
            enclosing_nvtx: None,
            calls_during: Vec::new(),
            activity: None,
            cpu_samples: None,
        };
    };
    let texts = |op: OpRef| -> Vec<String> {
        launch_nvtx_path(trace, device, op)
            .into_iter()
            .map(|id| trace.strings.get(id).into_owned())
            .collect()
    };
    GapDetail {
        gap: *gap,
        before_name: trace.strings.get(gap.before_name(trace)).into_owned(),
        after_name: trace.strings.get(gap.after_name(trace)).into_owned(),
        before_stream: device.streams[gap.before.stream as usize].id,
        after_stream: device.streams[gap.after.stream as usize].id,
        before_nvtx: texts(gap.before),
        after_nvtx: texts(gap.after),
        enclosing_nvtx: gap.enclosing().map(|id| trace.strings.get(id).into_owned()),
        calls_during: calls_during(trace, device, gap, max_calls),
        activity: activity(trace, gap),
        cpu_samples: samples_of_launcher(trace, device, gap),
    }
}

/// The CPU samples, in the gap, of the thread that launched the op after it.
pub fn samples_of_launcher(trace: &Trace, device: &Device, gap: &Gap) -> Option<WindowSamples> {
    if trace.stacks().samples.is_empty() {
        return None;
    }
    let ops = &device.streams[gap.after.stream as usize].ops;
    let thread = ops.launch_thread[gap.after.op as usize];
    let thread = trace.threads.get(thread as usize)?;
    samples_in(
        trace,
        thread.global_tid,
        gap.start_ns,
        gap.end_ns(),
        SAMPLE_FRAMES,
    )
}

fn calls_during(trace: &Trace, device: &Device, gap: &Gap, max_calls: usize) -> Vec<CallDuringGap> {
    let ops = &device.streams[gap.after.stream as usize].ops;
    let thread = ops.launch_thread[gap.after.op as usize];
    if max_calls == 0 || thread == NONE {
        return Vec::new();
    }
    let thread = &trace.threads[thread as usize];
    let api = &thread.api;
    let os = &thread.osrt;
    let mut calls: Vec<CallDuringGap> = thread
        .calls_overlapping(gap.start_ns, gap.end_ns())
        .map(|i| CallDuringGap {
            kind: "cuda",
            name: trace.strings.get(api.name[i]).into_owned(),
            start_ns: api.start[i],
            duration_ns: api.end[i] - api.start[i],
            backtrace: None,
        })
        .chain(
            thread
                .osrt_overlapping(gap.start_ns, gap.end_ns())
                .map(|i| CallDuringGap {
                    kind: "osrt",
                    name: os_call_name(trace, thread, i),
                    start_ns: os.start[i],
                    duration_ns: os.end[i] - os.start[i],
                    backtrace: os.stack_of(i).map(|s| {
                        let mut frames = backtrace(trace, s);
                        frames.truncate(BACKTRACE_FRAMES);
                        frames
                    }),
                }),
        )
        .collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    calls.truncate(max_calls);
    calls
}

#[derive(Debug, Clone, Serialize)]
pub struct RecurringGap {
    pub signature: String,
    pub count: usize,
    pub total_ns: i64,
    pub median_ns: i64,
    /// Indices of its gaps in the list given to [`recurring`], in time order.
    #[serde(skip)]
    pub members: Vec<u32>,
}

/// What gaps of one pattern share: the neighbours' names, the enclosing range with its
/// numbers as `#` (its template), the cause.
type Key = (StrId, StrId, TemplateId, Cause);

/// Gaps grouped by signature: the patterns seen at least twice, largest total first (what
/// fixing one would save), and the gaps seen once, longest first.
pub fn recurring(trace: &Trace, gaps: &[Gap]) -> (Vec<RecurringGap>, Vec<u32>) {
    crate::profile_scope!("analysis: recurring gaps");
    let mut groups: FxHashMap<Key, Vec<u32>> = FxHashMap::default();
    for (i, g) in gaps.iter().enumerate() {
        let enclosing = g
            .enclosing()
            .map_or(NONE, |id| trace.strings.template_of(id));
        groups
            .entry((
                g.before_name(trace),
                g.after_name(trace),
                enclosing,
                g.cause,
            ))
            .or_default()
            .push(i as u32);
    }
    let (groups, singles): (Vec<Vec<u32>>, Vec<Vec<u32>>) =
        groups.into_values().partition(|m| m.len() >= 2);
    let mut single: Vec<u32> = singles.into_iter().flatten().collect();
    single.sort_by_key(|&i| (std::cmp::Reverse(gaps[i as usize].duration_ns), i));
    let mut out: Vec<RecurringGap> = groups
        .into_iter()
        .map(|members| {
            let mut durations: Vec<i64> = members
                .iter()
                .map(|&i| gaps[i as usize].duration_ns)
                .collect();
            RecurringGap {
                signature: signature(trace, &gaps[members[0] as usize]),
                count: members.len(),
                total_ns: durations.iter().sum(),
                median_ns: median_in_place(&mut durations),
                members,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.signature.cmp(&b.signature))
    });
    (out, single)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::gaps::{CpuIndex, gaps};
    use crate::analysis::intervals::Window;
    use crate::trace::builder::TraceBuilder;

    /// Three steps, each "a" then "b" after a 1 µs host-bound gap; before the first "b"
    /// of step 0 a 400 µs compilation (an NVTX range, no launch) instead.
    fn trace() -> Trace {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        for step in 0..3i64 {
            let t0 = step * 1_000_000;
            b.range(t, &format!("step_{step}"), t0, t0 + 900_000);
            let ca = b.call(t, "cudaLaunchKernel", t0 + 10, t0 + 20);
            b.kernel(0, 7, "a", (t0 + 100, t0 + 1_000), Some(ca));
            let wait = if step == 0 {
                b.range(t, "compileFusion", t0 + 1_100, t0 + 401_100);
                401_200
            } else {
                1_100
            };
            let cb = b.call(t, "cudaLaunchKernel", t0 + wait, t0 + wait + 10);
            b.kernel(0, 7, "b", (t0 + wait + 50, t0 + wait + 500), Some(cb));
        }
        b.build()
    }

    fn found(trace: &Trace) -> Vec<Gap> {
        let cpu = CpuIndex::new(trace);
        gaps(trace, &cpu, &trace.devices[0], Window::new(0, 3_000_000), 1)
    }

    #[test]
    fn patterns_are_seen_at_least_twice_and_one_offs_listed_apart() {
        let trace = trace();
        let g = found(&trace);
        let (patterns, single) = recurring(&trace, &g);
        // a → b in step_# (3×, the JIT one among them), b → a in (no NVTX) (2×).
        assert_eq!(patterns.len(), 2, "{patterns:?}");
        let count = |sig: &str| {
            patterns
                .iter()
                .find(|p| p.signature == sig)
                .map(|p| p.count)
        };
        assert_eq!(count("a → b in step_# [host_bound]"), Some(3));
        assert_eq!(count("b → a in (no NVTX) [host_bound]"), Some(2));
        assert!(patterns.windows(2).all(|w| w[0].total_ns >= w[1].total_ns));
        assert!(single.is_empty());
        let total: usize = patterns.iter().map(|p| p.count).sum();
        assert_eq!(total, g.len());
    }

    #[test]
    fn a_gap_during_a_compilation_names_it() {
        let trace = trace();
        let jit = found(&trace)
            .into_iter()
            .find(|g| g.start_ns == 1_000)
            .unwrap();
        assert_eq!(
            cause_text(&trace, &jit),
            "host_bound: in compileFusion for 400.0 µs"
        );
        let d = describe(&trace, &jit, 3);
        assert_eq!(d.enclosing_nvtx.as_deref(), Some("step_0"));
        // A short gap with nothing in it says only its cause.
        let short = found(&trace)
            .into_iter()
            .find(|g| g.start_ns == 2_001_000)
            .unwrap();
        assert_eq!(cause_text(&trace, &short), "host_bound");
    }
}
