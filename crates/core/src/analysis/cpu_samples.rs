//! What the CPU was doing, from its call stacks: the samples' flat profile (self: the
//! innermost frame; total: any frame of the stack), per thread and per time window (a
//! gap's, a stall's), and the OS runtime calls' backtraces.

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use crate::trace::{NONE, Trace};

/// A frame as a report names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameName {
    pub symbol: String,
    pub module: String,
    /// nsys could not resolve it (the symbol is an address).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unresolved: bool,
    /// A Python frame (its module a `.py` file).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub python: bool,
}

impl FrameName {
    pub fn of(trace: &Trace, frame: u32) -> FrameName {
        let s = &trace.stacks().stacks;
        let f = frame as usize;
        let module = trace.strings.get(s.frame_module[f]).into_owned();
        FrameName {
            symbol: trace.strings.get(s.frame_symbol[f]).into_owned(),
            python: crate::trace::stacks::is_python_module(&module),
            unresolved: s.frame_unresolved[f],
            module,
        }
    }

    /// `symbol` (`libfoo.so`): the module's file name only.
    pub fn label(&self) -> String {
        let module = self.module.rsplit('/').next().unwrap_or(&self.module);
        if module.is_empty() {
            self.symbol.clone()
        } else {
            format!("{} ({module})", self.symbol)
        }
    }
}

/// A frame and how many samples it is in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameCount {
    #[serde(flatten)]
    pub frame: FrameName,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SampledThreadCount {
    pub tid: u32,
    pub name: String,
    pub count: u64,
}

/// The samples' flat profile over the whole capture.
#[derive(Debug, Clone, Serialize)]
pub struct CpuProfile {
    pub count: u64,
    pub threads: Vec<SampledThreadCount>,
    /// The most sampled innermost frames, most first.
    pub top_self: Vec<FrameCount>,
    /// The frames in the most samples' stacks, most first.
    pub top_total: Vec<FrameCount>,
}

/// Self and total counts of frames over `samples` (indices into the columns).
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub count: u64,
    pub self_counts: HashMap<u32, u64>,
    pub total_counts: HashMap<u32, u64>,
}

impl Tally {
    /// Samples are counted per recorded stack first, so each stack is walked once however
    /// often it was sampled.
    pub fn of(trace: &Trace, samples: impl Iterator<Item = usize>) -> Tally {
        let mut t = Tally::default();
        let mut per_stack: HashMap<u32, u64> = HashMap::default();
        for i in samples {
            t.count += 1;
            let node = trace.stacks().samples.node[i];
            if node != NONE {
                *per_stack.entry(node).or_default() += 1;
            }
        }
        let mut seen: Vec<u32> = Vec::new();
        for (node, n) in per_stack {
            seen.clear();
            for (depth, frame) in trace.stacks().stacks.frames(node).enumerate() {
                if depth == 0 {
                    *t.self_counts.entry(frame).or_default() += n;
                }
                // A recursive frame counts once a sample.
                if !seen.contains(&frame) {
                    seen.push(frame);
                    *t.total_counts.entry(frame).or_default() += n;
                }
            }
        }
        t
    }

    /// The `n` frames counted most, most first (ties by frame name, so the order is the
    /// same on every run).
    pub fn top(trace: &Trace, counts: &HashMap<u32, u64>, n: usize) -> Vec<FrameCount> {
        let mut v: Vec<FrameCount> = counts
            .iter()
            .map(|(&f, &count)| FrameCount {
                frame: FrameName::of(trace, f),
                count,
            })
            .collect();
        v.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.frame.symbol.cmp(&b.frame.symbol))
                .then_with(|| a.frame.module.cmp(&b.frame.module))
        });
        v.truncate(n);
        v
    }
}

/// The capture's CPU profile; `None` without samples.
pub fn cpu_profile(trace: &Trace, top: usize) -> Option<CpuProfile> {
    let s = &trace.stacks().samples;
    if s.is_empty() {
        return None;
    }
    let tally = Tally::of(trace, 0..s.len());
    let mut threads: Vec<SampledThreadCount> = s
        .threads
        .iter()
        .map(|t| SampledThreadCount {
            tid: crate::trace::tid_of_global_id(t.global_tid),
            name: t.name.clone(),
            count: t.count as u64,
        })
        .collect();
    threads.sort_by(|a, b| b.count.cmp(&a.count).then(a.tid.cmp(&b.tid)));
    Some(CpuProfile {
        count: s.len() as u64,
        threads,
        top_self: Tally::top(trace, &tally.self_counts, top),
        top_total: Tally::top(trace, &tally.total_counts, top),
    })
}

/// What one thread's samples say of a window: how many, and the top innermost frames.
#[derive(Debug, Clone, Serialize)]
pub struct WindowSamples {
    pub count: u64,
    pub top_self: Vec<FrameCount>,
}

impl WindowSamples {
    /// "72 % of 1,200 samples in `copy_` (libtorch_cpu.so)"; `None` without samples.
    pub fn summary(&self) -> Option<String> {
        let first = self.top_self.first()?;
        Some(format!(
            "{:.0} % of its {} CPU samples in {}",
            100.0 * first.count as f64 / self.count.max(1) as f64,
            self.count,
            first.frame.label()
        ))
    }
}

/// `global_tid`'s samples in `[a, b)`; `None` when it has none there.
pub fn samples_in(
    trace: &Trace,
    global_tid: i64,
    a: i64,
    b: i64,
    top: usize,
) -> Option<WindowSamples> {
    let range = trace.stacks().samples.of_thread_in(global_tid, a, b);
    if range.is_empty() {
        return None;
    }
    let tally = Tally::of(trace, range);
    Some(WindowSamples {
        count: tally.count,
        top_self: Tally::top(trace, &tally.self_counts, top),
    })
}

/// An OS runtime call with its backtrace.
#[derive(Debug, Clone, Serialize)]
pub struct OsCallBacktrace {
    /// The thread's index in `Trace::threads` (tids may repeat across a job's files).
    #[serde(skip)]
    pub thread: usize,
    pub tid: u32,
    pub name: String,
    pub call: String,
    pub start_ns: i64,
    pub duration_ns: i64,
    /// Innermost first.
    pub backtrace: Vec<FrameName>,
}

/// A call's backtrace, innermost first.
pub fn backtrace(trace: &Trace, node: u32) -> Vec<FrameName> {
    trace
        .stacks()
        .stacks
        .frames(node)
        .map(|f| FrameName::of(trace, f))
        .collect()
}

/// The `n` longest OS runtime calls that have a backtrace, longest first.
pub fn longest_os_calls(trace: &Trace, n: usize) -> Vec<OsCallBacktrace> {
    let mut calls: Vec<(i64, usize, usize)> = Vec::new();
    for (ti, t) in trace.threads.iter().enumerate() {
        for i in 0..t.osrt.len() {
            if t.osrt.stack_of(i).is_some() {
                calls.push((t.osrt.end[i] - t.osrt.start[i], ti, i));
            }
        }
    }
    calls.sort_by(|a, b| b.0.cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    calls
        .into_iter()
        .take(n)
        .map(|(d, ti, i)| {
            let t = &trace.threads[ti];
            OsCallBacktrace {
                thread: ti,
                tid: t.tid,
                name: t.name.clone(),
                call: trace.strings.get(t.osrt.name[i]).into_owned(),
                start_ns: t.osrt.start[i],
                duration_ns: d,
                backtrace: t
                    .osrt
                    .stack_of(i)
                    .map_or_else(Vec::new, |s| backtrace(trace, s)),
            }
        })
        .collect()
}

/// "`read` called from `load_batch` (libdata.so)": the first frame of a backtrace that is
/// not the call itself or the C library around it; `None` without one.
pub fn called_from(trace: &Trace, node: u32) -> Option<String> {
    let frames = backtrace(trace, node);
    let caller = frames
        .iter()
        .find(|f| !f.unresolved && !is_system_module(&f.module))
        .or_else(|| frames.get(1))?;
    Some(caller.label())
}

fn is_system_module(module: &str) -> bool {
    let file = module.rsplit('/').next().unwrap_or(module);
    [
        "libc.so",
        "libc-",
        "libpthread",
        "ld-linux",
        "libstdc++",
        "[kernel",
        "libnvToolsExt",
    ]
    .iter()
    .any(|p| file.starts_with(p))
}

/// Samples needed before a finding names the code they were in.
pub const MIN_SAMPLES: u64 = 10;

/// What the CPU was running over windows of threads (`(global_tid, start, end)`), in
/// words for a finding's evidence: "CPU samples: 97 % of 350 in `nvrtcCompileProgram`
/// (libnvrtc.so.12)", and the caller of the longest OS runtime call there with a
/// backtrace ("`read` called from load_next_batch (data_loader.py)"). `None` when the
/// capture recorded neither there.
pub fn code_in(trace: &Trace, windows: &[(i64, i64, i64)]) -> Option<String> {
    let mut parts = Vec::new();
    if !trace.stacks().samples.is_empty() {
        let samples = windows
            .iter()
            .flat_map(|&(tid, a, b)| trace.stacks().samples.of_thread_in(tid, a, b));
        let tally = Tally::of(trace, samples);
        // Named only where the samples say something: enough of them, mostly in one place.
        if let Some(top) = Tally::top(trace, &tally.self_counts, 1)
            .first()
            .filter(|t| tally.count >= MIN_SAMPLES && t.count * 4 >= tally.count)
        {
            parts.push(format!(
                "CPU samples: {:.0} % of {} in {}",
                100.0 * top.count as f64 / tally.count.max(1) as f64,
                tally.count,
                top.frame.label()
            ));
        }
    }
    let mut longest: Option<(i64, usize, usize)> = None;
    for &(tid, a, b) in windows {
        let Some(ti) = trace.thread_index(tid) else {
            continue;
        };
        let t = &trace.threads[ti];
        for i in t.osrt_overlapping(a, b) {
            let d = t.osrt.end[i].min(b) - t.osrt.start[i].max(a);
            if t.osrt.stack_of(i).is_some() && longest.is_none_or(|l| d > l.0) {
                longest = Some((d, ti, i));
            }
        }
    }
    if let Some((_, ti, i)) = longest {
        let t = &trace.threads[ti];
        if let Some(caller) = t.osrt.stack_of(i).and_then(|s| called_from(trace, s)) {
            parts.push(format!(
                "`{}` called from {caller}",
                trace.strings.get(t.osrt.name[i])
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A flame graph's tree: callers above callees, a node per distinct path from the
/// outermost frame, with how many samples passed through it and ended in it.
#[derive(Debug, Clone, Default)]
pub struct Flame {
    /// Samples in it.
    pub count: u64,
    pub nodes: Vec<FlameNode>,
    /// The outermost frames' nodes, most samples first.
    pub roots: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct FlameNode {
    pub frame: u32,
    /// Samples whose stack passes through this node (its width).
    pub total: u64,
    /// Samples whose innermost frame it is.
    pub own: u64,
    /// Its callees, most samples first.
    pub children: Vec<usize>,
    pub depth: u16,
}

impl Flame {
    /// The flame graph of `samples` (indices into the trace's sample columns). Samples are
    /// counted per recorded stack first, so a stack is walked once however often it was
    /// sampled.
    pub fn of(trace: &Trace, samples: impl Iterator<Item = usize>) -> Flame {
        let mut per_stack: HashMap<u32, u64> = HashMap::default();
        let mut count = 0u64;
        for i in samples {
            count += 1;
            let node = trace.stacks().samples.node[i];
            if node != NONE {
                *per_stack.entry(node).or_default() += 1;
            }
        }
        let mut flame = Flame {
            count,
            ..Default::default()
        };
        let mut index: HashMap<(usize, u32), usize> = HashMap::default();
        let mut path: Vec<u32> = Vec::new();
        let mut stacks: Vec<(u32, u64)> = per_stack.into_iter().collect();
        stacks.sort_unstable();
        for (node, n) in stacks {
            path.clear();
            path.extend(trace.stacks().stacks.frames(node));
            let mut parent = usize::MAX;
            for (depth, &frame) in path.iter().rev().enumerate() {
                let next = flame.nodes.len();
                let at = *index.entry((parent, frame)).or_insert(next);
                if at == next {
                    flame.nodes.push(FlameNode {
                        frame,
                        total: 0,
                        own: 0,
                        children: Vec::new(),
                        depth: depth.min(u16::MAX as usize) as u16,
                    });
                    if parent == usize::MAX {
                        flame.roots.push(at);
                    } else {
                        flame.nodes[parent].children.push(at);
                    }
                }
                flame.nodes[at].total += n;
                parent = at;
            }
            if parent != usize::MAX {
                flame.nodes[parent].own += n;
            }
        }
        let totals: Vec<u64> = flame.nodes.iter().map(|n| n.total).collect();
        let by_total = |v: &mut Vec<usize>| v.sort_by_key(|&c| (std::cmp::Reverse(totals[c]), c));
        by_total(&mut flame.roots);
        for n in &mut flame.nodes {
            by_total(&mut n.children);
        }
        flame
    }

    /// The frames by samples they are innermost in (self) and in at all (total), most
    /// self first: the bottom-up table. A recursive frame counts once a sample (its
    /// outermost node's total).
    pub fn bottom_up(&self) -> Vec<(u32, u64, u64)> {
        let mut own: HashMap<u32, u64> = HashMap::default();
        let mut total: HashMap<u32, u64> = HashMap::default();
        let mut open: HashMap<u32, u32> = HashMap::default();
        // Depth first: (node, leaving); a frame open above a node is not counted again.
        let mut stack: Vec<(usize, bool)> = self.roots.iter().rev().map(|&r| (r, false)).collect();
        while let Some((at, leaving)) = stack.pop() {
            let n = &self.nodes[at];
            let depth = open.entry(n.frame).or_default();
            if leaving {
                *depth -= 1;
                continue;
            }
            if *depth == 0 {
                *total.entry(n.frame).or_default() += n.total;
            }
            *depth += 1;
            *own.entry(n.frame).or_default() += n.own;
            stack.push((at, true));
            stack.extend(n.children.iter().rev().map(|&c| (c, false)));
        }
        let mut rows: Vec<(u32, u64, u64)> = total
            .into_iter()
            .map(|(f, t)| (f, own.get(&f).copied().unwrap_or(0), t))
            .collect();
        rows.sort_by_key(|&(f, s, t)| (std::cmp::Reverse(s), std::cmp::Reverse(t), f));
        rows
    }
}

/// The samples of `threads` (global ids; every sampled thread when empty) in `[a, b)`.
pub fn samples_of(trace: &Trace, threads: &[i64], a: i64, b: i64) -> Vec<usize> {
    let s = &trace.stacks().samples;
    s.threads
        .iter()
        .filter(|t| threads.is_empty() || threads.contains(&t.global_tid))
        .flat_map(|t| s.of_thread_in(t.global_tid, a, b))
        .collect()
}

/// The times of the samples among `samples` (indices into the samples' columns) whose call
/// stack holds `frame`, by thread (its index in `Trace::threads`, in that order): where a
/// frame chosen in a flame graph ran, to mark on the threads' rows.
pub fn samples_holding(trace: &Trace, samples: &[usize], frame: u32) -> Vec<(usize, Vec<i64>)> {
    let s = &trace.stacks().samples;
    let stacks = &trace.stacks().stacks;
    // The sampled threads by their first sample, to find a sample's thread by a search.
    let mut threads: Vec<(usize, usize, Option<usize>)> = s
        .threads
        .iter()
        .map(|t| (t.first, t.first + t.count, trace.thread_index(t.global_tid)))
        .collect();
    threads.sort_unstable();
    let mut by_thread: std::collections::BTreeMap<usize, Vec<i64>> = Default::default();
    for &i in samples {
        let k = threads.partition_point(|t| t.0 <= i);
        let Some(&(_, end, Some(thread))) = k.checked_sub(1).map(|k| &threads[k]) else {
            continue;
        };
        if i < end && stacks.frames(s.node[i]).any(|f| f == frame) {
            by_thread.entry(thread).or_default().push(s.time[i]);
        }
    }
    by_thread.into_iter().collect()
}

/// The sampling period: the median step between the most sampled thread's samples
/// (nsys's default, 1 ms, when there are none).
pub fn sample_period(trace: &Trace) -> i64 {
    let s = &trace.stacks().samples;
    let Some(t) = s.threads.iter().max_by_key(|t| t.count) else {
        return 1_000_000;
    };
    crate::sorted::sample_period(&s.time[t.first..t.first + t.count]).unwrap_or(1_000_000)
}
