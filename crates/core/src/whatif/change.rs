//! The change a replay makes, and its parsing.

use crate::trace::Trace;
use regex::Regex;

/// A change to replay.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// Synchronising calls whose name contains one of these no longer wait for the GPU.
    pub remove_sync: Vec<String>,
    /// Kernels whose name matches take `factor` times as long.
    pub scale_kernels: Vec<(Regex, f64)>,
    /// NCCL kernels on a stream of their own, keeping `nccl_dependencies` between NCCL and
    /// compute.
    pub nccl_own_stream: bool,
    /// With `nccl_own_stream`: when a collective's result is needed.
    pub nccl_dependencies: NcclDependencies,
    /// CPU time between calls inside NVTX ranges whose text contains one of these is
    /// removed (the host work after a sync, say).
    pub remove_cpu: Vec<String>,
    /// Host stalls removed: on the span's thread, the calls that start in it
    /// take no time (a synchronising one does not wait) and the CPU time between them is
    /// gone (a straggler's `cudaMalloc`, say).
    pub remove_stalls: Vec<HostSpan>,
    /// Host-bound gaps whose signature (`before → after in range [host_bound]`) is one of
    /// these: the launching thread's CPU time during each such gap is cut, so the next
    /// launch comes as early as its launch latency allows.
    pub cut_host_gaps: Vec<String>,
    /// Copies (memcpy, memset) whose name or NVTX range at launch contains one of these
    /// take no GPU time (assumed done off the critical path: asynchronous, pinned memory,
    /// a stream of their own).
    pub drop_copies: Vec<String>,
    /// NVTX ranges whose text contains one of these replayed as CUDA graphs: each
    /// occurrence's kernels released by its first launch (the later launch calls take no
    /// time, the CPU time from the first launch to the range's end is gone). Assumes the
    /// range captures as it is: fixed shapes, no sync or host read inside.
    pub capture_graphs: Vec<String>,
}

/// What NCCL on a stream of its own keeps of the data flow between NCCL and compute. A
/// trace records no data dependency: the conservative model is the default, the others
/// are taken where the trace shows they hold (see `analysis::nccl_consumers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NcclDependencies {
    /// A collective waits for the compute launched before it on its stream (its input),
    /// and its result is needed by the next compute launched after it (an all-to-all's or
    /// all-gather's output is the next kernel's input: Ulysses, tensor and sequence
    /// parallel layers). Only the compute launched between a collective and its consumer
    /// can overlap it.
    #[default]
    NextKernel,
    /// Its result is first needed by the compute launched after the next collective: one
    /// collective in flight beside compute (bucketed gradient all-reduce, DDP/FSDP, whose
    /// results the optimizer reads at the step's end).
    AfterNextCollective,
    /// Nothing on the compute stream waits for NCCL, nor NCCL for it, beyond launch order:
    /// the upper bound of what a stream of its own can gain.
    Unbounded,
}

impl NcclDependencies {
    /// The model in words, for the assumptions and the findings.
    pub fn sentence(self) -> &'static str {
        match self {
            NcclDependencies::NextKernel => {
                "each collective waits for the compute launched before it; its result is needed by the next kernel launched after it"
            }
            NcclDependencies::AfterNextCollective => {
                "each collective waits for the compute launched before it; its result is first needed by the compute launched after the next collective"
            }
            NcclDependencies::Unbounded => {
                "no compute kernel waits for a collective's result, nor a collective for compute, beyond launch order"
            }
        }
    }
}

/// A span of one thread's time, on the trace's clock: `TID:START_NS:END_NS`, or
/// `FILE:TID:START_NS:END_NS` in a trace of several files (`FILE` the file's place among
/// them, from 0: their pids and tids may repeat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSpan {
    /// The thread's file (`Thread::source`); `None`: the only thread with this tid.
    pub file: Option<u32>,
    pub tid: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

impl HostSpan {
    /// A span of `thread`'s time, naming its file when the trace has several.
    pub fn of(trace: &Trace, thread: &crate::trace::Thread, start_ns: i64, end_ns: i64) -> Self {
        HostSpan {
            file: (trace.sources.len() > 1).then_some(thread.source),
            tid: thread.tid,
            start_ns,
            end_ns,
        }
    }

    pub fn parse(arg: &str) -> Result<Self, String> {
        let parts: Vec<&str> = arg.split(':').collect();
        let bad = || {
            format!(
                "a host span is TID:START_NS:END_NS (or FILE:TID:START_NS:END_NS in a job of several files), not `{arg}`"
            )
        };
        let (file, [tid, start, end]) = (match parts[..] {
            [tid, start, end] => Some((None, [tid, start, end])),
            [file, tid, start, end] => {
                Some((Some(file.parse().map_err(|_| bad())?), [tid, start, end]))
            }
            _ => None,
        })
        .ok_or_else(bad)?;
        let span = HostSpan {
            file,
            tid: tid.parse().map_err(|_| bad())?,
            start_ns: start.parse().map_err(|_| bad())?,
            end_ns: end.parse().map_err(|_| bad())?,
        };
        if span.end_ns < span.start_ns {
            return Err(format!("{arg}: the span ends before it starts"));
        }
        Ok(span)
    }

    /// Whether the span is on `thread`.
    pub fn is_on(&self, thread: &crate::trace::Thread) -> bool {
        thread.tid == self.tid && self.file.is_none_or(|f| f == thread.source)
    }

    /// `Err` saying why, when the span names no thread of `trace` or several (a tid that
    /// repeats across its files and no file named).
    pub fn check(&self, trace: &Trace) -> Result<(), String> {
        let on: Vec<&crate::trace::Thread> =
            trace.threads.iter().filter(|t| self.is_on(t)).collect();
        match on.len() {
            0 => Err(format!(
                "{self}: no thread of the trace has this tid{}",
                match self.file {
                    Some(f) => format!(" in file {f}"),
                    None => String::new(),
                }
            )),
            1 => Ok(()),
            _ if self.file.is_none() && on.iter().any(|t| t.source != on[0].source) => {
                Err(format!(
                    "{self}: threads of several files have tid {}: name the file as FILE:TID:START_NS:END_NS (FILE from 0, in the order the files were given)",
                    self.tid
                ))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for HostSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = self.file {
            write!(f, "{file}:")?;
        }
        write!(f, "{}:{}:{}", self.tid, self.start_ns, self.end_ns)
    }
}

/// `--scale-kernel`'s `REGEX=FACTOR`.
pub fn parse_scale_kernel(arg: &str) -> Result<(Regex, f64), String> {
    let (re, factor) = arg
        .rsplit_once('=')
        .ok_or_else(|| format!("--scale-kernel wants REGEX=FACTOR, not `{arg}`"))?;
    let factor: f64 = factor
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f > 0.0)
        .ok_or_else(|| format!("--scale-kernel: `{factor}` is not a positive number"))?;
    let re = Regex::new(re).map_err(|e| format!("--scale-kernel: {e}"))?;
    Ok((re, factor))
}

impl Change {
    /// The CPU time in `[a, b)` gone from every thread that launched GPU work (the
    /// window's "What if the CPU had not spent it" on a selection).
    pub fn cpu_time_removed(trace: &Trace, a: i64, b: i64) -> Change {
        let remove_stalls = trace
            .threads
            .iter()
            .filter(|t| !t.api.is_empty())
            .map(|t| HostSpan::of(trace, t, a, b))
            .collect();
        Change {
            remove_stalls,
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.remove_sync.is_empty()
            && self.scale_kernels.is_empty()
            && !self.nccl_own_stream
            && self.remove_cpu.is_empty()
            && self.remove_stalls.is_empty()
            && self.cut_host_gaps.is_empty()
            && self.drop_copies.is_empty()
            && self.capture_graphs.is_empty()
    }

    /// The `what-if` command-line arguments that make this change.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |flag: &str, value: String| {
            out.push(flag.to_string());
            out.push(value);
        };
        for x in &self.remove_sync {
            add("--remove-sync", x.clone());
        }
        for (re, f) in &self.scale_kernels {
            add("--scale-kernel", format!("{}={f}", re.as_str()));
        }
        for x in &self.remove_cpu {
            add("--remove-cpu", x.clone());
        }
        for x in &self.remove_stalls {
            add("--remove-stall", x.to_string());
        }
        for x in &self.cut_host_gaps {
            add("--cut-host-gaps", x.clone());
        }
        for x in &self.drop_copies {
            add("--drop-copies", x.clone());
        }
        for x in &self.capture_graphs {
            add("--capture-graph", x.clone());
        }
        if self.nccl_own_stream {
            out.push("--nccl-own-stream".into());
            match self.nccl_dependencies {
                NcclDependencies::NextKernel => {}
                NcclDependencies::AfterNextCollective => out.push("--nccl-late-consumers".into()),
                NcclDependencies::Unbounded => out.push("--nccl-no-dependencies".into()),
            }
        }
        out
    }

    /// The change [`Change::to_args`] wrote (the cache keeps findings' changes so).
    pub fn from_args(args: &[String]) -> Result<Change, String> {
        let mut change = Change::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} wants a value"))
            };
            match flag.as_str() {
                "--remove-sync" => change.remove_sync.push(value()?),
                "--scale-kernel" => change.scale_kernels.push(parse_scale_kernel(&value()?)?),
                "--remove-cpu" => change.remove_cpu.push(value()?),
                "--remove-stall" => change.remove_stalls.push(HostSpan::parse(&value()?)?),
                "--cut-host-gaps" => change.cut_host_gaps.push(value()?),
                "--drop-copies" => change.drop_copies.push(value()?),
                "--capture-graph" => change.capture_graphs.push(value()?),
                "--nccl-own-stream" => change.nccl_own_stream = true,
                "--nccl-late-consumers" => {
                    change.nccl_dependencies = NcclDependencies::AfterNextCollective;
                }
                "--nccl-no-dependencies" => change.nccl_dependencies = NcclDependencies::Unbounded,
                other => return Err(format!("not a change: `{other}`")),
            }
        }
        Ok(change)
    }
}

/// A change as people give it in words — the command line's flags, the MCP server's and
/// the Python package's arguments — before it is parsed.
#[derive(Debug, Default, Clone)]
pub struct ChangeSpec {
    pub remove_sync: Vec<String>,
    /// `REGEX=F` each.
    pub scale_kernel: Vec<String>,
    pub nccl_own_stream: bool,
    pub nccl_dependencies: NcclDependencies,
    pub remove_cpu: Vec<String>,
    /// `[FILE:]TID:START_NS:END_NS` each.
    pub remove_stall: Vec<String>,
    pub cut_host_gaps: Vec<String>,
    pub drop_copies: Vec<String>,
    pub capture_graph: Vec<String>,
}

impl ChangeSpec {
    /// The change, or what is wrong with it in words (an empty change included).
    pub fn parse(self) -> Result<Change, String> {
        let change = Change {
            remove_sync: self.remove_sync,
            scale_kernels: self
                .scale_kernel
                .iter()
                .map(|s| parse_scale_kernel(s))
                .collect::<Result<_, _>>()?,
            nccl_own_stream: self.nccl_own_stream,
            nccl_dependencies: self.nccl_dependencies,
            remove_cpu: self.remove_cpu,
            remove_stalls: self
                .remove_stall
                .iter()
                .map(|s| HostSpan::parse(s).map_err(|e| format!("remove stall {s:?}: {e}")))
                .collect::<Result<_, _>>()?,
            cut_host_gaps: self.cut_host_gaps,
            drop_copies: self.drop_copies,
            capture_graphs: self.capture_graph,
        };
        if change.is_empty() {
            return Err("no change to replay: remove a sync, scale a kernel, put NCCL on its own stream, remove CPU time or a stall, cut host gaps, drop copies or capture a range as a graph".into());
        }
        Ok(change)
    }
}
