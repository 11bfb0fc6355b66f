//! The tools: each one's arguments (their JSON schema derived from the struct, its fields'
//! doc comments the descriptions a model reads), its description, and the call that
//! answers it from the traces kept open.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::answers::{self, Answer};
use super::tables::{self, GapQuery, Rows};
use crate::overview::Options;
use crate::session::{OpenTrace, Stages, Until};

/// The traces open, by id (`t1`, `t2`, …), and whether the cache is used.
#[derive(Default)]
pub struct Traces {
    open: Mutex<HashMap<String, Arc<Held>>>,
    next: AtomicUsize,
    pub no_cache: bool,
}

impl Traces {
    pub fn new(no_cache: bool) -> Traces {
        Traces {
            no_cache,
            ..Traces::default()
        }
    }

    fn get(&self, id: &str) -> Result<Arc<Held>, String> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(id).cloned().ok_or_else(|| {
            let mut ids: Vec<&String> = open.keys().collect();
            ids.sort();
            format!(
                "no trace {id:?} is open (open: {}); open_trace gives an id",
                if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )
        })
    }
}

/// A trace kept open, with what the tables work out once for every later call.
pub struct Held {
    pub open: OpenTrace,
    /// The gaps' indices, the longest first (of equal ones the earlier): a page of the gap
    /// table is a walk from its start, not a sort of millions.
    longest_first: OnceLock<Vec<u32>>,
}

impl Held {
    fn new(open: OpenTrace) -> Held {
        Held {
            open,
            longest_first: OnceLock::new(),
        }
    }

    pub fn longest_first(&self) -> &[u32] {
        self.longest_first.get_or_init(|| {
            use rayon::prelude::*;
            // The keys beside the index (no indirection while sorting), on every core.
            let gaps = &self.open.overview.gaps;
            let mut keyed: Vec<(i64, i64, u16, u32)> = gaps
                .iter()
                .enumerate()
                .map(|(i, g)| (-g.duration_ns, g.start_ns, g.device, i as u32))
                .collect();
            keyed.par_sort_unstable();
            keyed.into_iter().map(|k| k.3).collect()
        })
    }
}

impl std::ops::Deref for Held {
    type Target = OpenTrace;
    fn deref(&self) -> &OpenTrace {
        &self.open
    }
}

/// What a call hears and how it stops: progress (fraction, words) and the cancel flag.
pub struct Hooks<'a> {
    pub progress: &'a (dyn Fn(f32, &str) + Sync),
    pub cancel: &'a AtomicBool,
}

/// Forwards the pipeline's progress to the client: a notification a phase and a percent at
/// most (the loader reports far more often than a client wants to read).
struct Progress<'a> {
    tell: &'a (dyn Fn(f32, &str) + Sync),
    last: Mutex<(&'static str, f32)>,
}

impl<'a> Progress<'a> {
    fn new(tell: &'a (dyn Fn(f32, &str) + Sync)) -> Self {
        Progress {
            tell,
            last: Mutex::new(("", -1.0)),
        }
    }
}

impl Stages for Progress<'_> {
    fn progress(&self, p: crate::load::Progress) {
        let (phase, fraction) = (p.phase.label(), p.fraction * 0.8);
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.0 != phase || fraction - last.1 >= 0.01 {
            *last = (phase, fraction);
            (self.tell)(fraction, phase);
        }
    }
    fn analysed(&self, _: &Arc<crate::overview::Overview>) {
        (self.tell)(0.85, "Analysed; replaying the findings' changes");
    }
}

/// Times are ns on the trace's clock, as every answer gives them (`time_origin_ns` of
/// `open_trace` is the first event).
#[derive(Deserialize, JsonSchema)]
pub struct OpenTraceArgs {
    /// One export (`.sqlite` from `nsys export --type sqlite`, or an `.nsys-rep`), several
    /// ranks' exports of one job (opened as one trace, clocks aligned), or a folder of them.
    pub paths: Vec<String>,
    /// The NVTX range that marks an iteration, `#` for its number (e.g. `denoising_step_#`);
    /// found by itself when not given.
    pub iteration_marker: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct TraceArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct LimitArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// How many rows at most (default 20).
    pub limit: Option<usize>,
    /// Rows to skip (the previous answer's `next_offset`).
    pub offset: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct WindowArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// The window's start, ns on the trace's clock (default: the whole run).
    pub start_ns: Option<i64>,
    /// The window's end, ns on the trace's clock.
    pub end_ns: Option<i64>,
    /// How many rows at most (default 20).
    pub limit: Option<usize>,
    /// Rows to skip (the previous answer's `next_offset`).
    pub offset: Option<usize>,
    /// Only kernels whose name contains this (any case).
    pub name: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct GapsArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// Only this GPU (its nsys device id, as `open_trace` lists it).
    pub gpu: Option<u32>,
    /// Only this cause: host_sync, after_sync, host_bound, cross_device, cpu_gap, unknown.
    pub cause: Option<String>,
    /// Only gaps whose kernel before or after, or NVTX range around, contains this text.
    pub text: Option<String>,
    /// Only gaps at least this long (ns).
    pub min_ns: Option<i64>,
    /// Only gaps overlapping this window: start, ns on the trace's clock.
    pub start_ns: Option<i64>,
    /// Window end, ns on the trace's clock.
    pub end_ns: Option<i64>,
    /// "duration" (longest first, the default) or "start".
    pub sort: Option<String>,
    /// How many rows at most (default 20).
    pub limit: Option<usize>,
    /// Rows to skip (the previous answer's `next_offset`).
    pub offset: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct IterationArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// The iteration's index (from 0), as `iterations` numbers them.
    pub index: usize,
    /// How many items a list keeps at most (default 10).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CriticalPathArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// The iteration (default: the slowest; the whole run's without iterations).
    pub iteration: Option<usize>,
    /// How many items a list keeps at most (default 20).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct WhatIfArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// Synchronising calls whose name contains one of these no longer wait (e.g.
    /// `cudaDeviceSynchronize`).
    #[serde(default)]
    pub remove_sync: Vec<String>,
    /// `REGEX=F`: kernels whose name matches take F times as long (e.g. `flash_fwd=0.5`).
    #[serde(default)]
    pub scale_kernel: Vec<String>,
    /// NCCL kernels on a stream of their own.
    #[serde(default)]
    pub nccl_own_stream: bool,
    /// With nccl_own_stream, when a collective's result is needed: "next_kernel" (default:
    /// the next compute's input), "after_next_collective" (bucketed gradient all-reduce),
    /// "none" (the upper bound).
    pub nccl_dependencies: Option<String>,
    /// CPU time between calls inside NVTX ranges whose text contains one of these removed.
    #[serde(default)]
    pub remove_cpu: Vec<String>,
    /// Host stalls removed, `[FILE:]TID:START_NS:END_NS` (as a finding's what_if names them).
    #[serde(default)]
    pub remove_stall: Vec<String>,
    /// Host-bound gap patterns (their signature) whose launching thread's CPU time is cut.
    #[serde(default)]
    pub cut_host_gaps: Vec<String>,
    /// Copies whose name or NVTX range contains one of these take no GPU time.
    #[serde(default)]
    pub drop_copies: Vec<String>,
    /// NVTX ranges whose text contains one of these replayed as CUDA graphs.
    #[serde(default)]
    pub capture_graph: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CpuSamplesArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// One thread's samples (its tid; default: the busiest thread once a window is given).
    pub tid: Option<u32>,
    /// Window start, ns on the trace's clock (default: the whole run, every thread).
    pub start_ns: Option<i64>,
    /// Window end, ns on the trace's clock.
    pub end_ns: Option<i64>,
    /// How many frames at most (default 20).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct EventsArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// Window start, ns on the trace's clock.
    pub start_ns: i64,
    /// Window end, ns on the trace's clock.
    pub end_ns: i64,
    /// Only this GPU's rows (nsys device id).
    pub gpu: Option<u32>,
    /// Only this stream (with gpu).
    pub stream: Option<u32>,
    /// Only this CPU thread's rows (its tid).
    pub tid: Option<u32>,
    /// How many events at most, by start (default 50).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct DiffArgs {
    /// The run before the change (a trace_id).
    pub before: String,
    /// The run after it (a trace_id).
    pub after: String,
    /// Also give the gate's verdict: "slower" when the median iteration grew by more than
    /// this percentage beyond the runs' noise.
    pub fail_if_slower_pct: Option<f64>,
}

#[derive(Deserialize, JsonSchema)]
pub struct FigureArgs {
    /// The id `open_trace` gave.
    pub trace_id: String,
    /// iter_duration_over_time, iter_duration_histogram, streams_one_iter,
    /// per_device_walltime or nccl_kernel_duration_hist.
    pub name: String,
    /// The iteration streams_one_iter draws (default: the slowest).
    pub iteration: Option<usize>,
}

/// Every tool: name, title, description, its arguments' schema.
pub fn catalogue() -> Vec<Tool> {
    fn tool<A: JsonSchema + 'static>(
        name: &'static str,
        title: &str,
        description: &'static str,
    ) -> Tool {
        Tool::new(name, description, JsonObject::new())
            .with_input_schema::<A>()
            .with_title(title)
            .annotate(
                ToolAnnotations::with_title(title)
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            )
    }
    vec![
        tool::<OpenTraceArgs>(
            "open_trace",
            "Open a trace",
            "Open an Nsight Systems export (or several ranks' exports of one job, or a folder of them) and analyse it: the first call on a 2 GB export takes seconds (progress is reported), a later one of the same file reads the cache in under a second. Returns a trace_id for the other tools, the GPUs, the span, what the export recorded and what it lacks. Start here.",
        ),
        tool::<LimitArgs>(
            "findings",
            "What to fix first",
            "The findings ranked by what fixing each would save, the saving predicted by replaying the trace with the change (not by subtracting idle time), with severity, evidence, the GPUs, and the what_if arguments that reproduce it. Use it first for 'why is it slow / what should I fix'.",
        ),
        tool::<WindowArgs>(
            "breakdown",
            "Where time goes",
            "Per GPU, where its time went: compute only, NCCL only, overlap, memory only and idle (ns and %), over the whole run or a window (start_ns/end_ns).",
        ),
        tool::<GapsArgs>(
            "gaps",
            "Idle gaps",
            "Every idle window of a GPU with its cause (host_sync, after_sync, host_bound, cross_device, cpu_gap), the kernels before and after, the NVTX range around it and what the CPU did meanwhile; filter by GPU, cause, text, length or window; longest first; a page at a time (total and next_offset).",
        ),
        tool::<LimitArgs>(
            "recurring_gaps",
            "Recurring gaps",
            "The gap patterns seen at least twice (same kernels either side, same NVTX range, same cause), the most idle time first, each with its longest occurrence: where fixing one thing removes many gaps.",
        ),
        tool::<LimitArgs>(
            "iterations",
            "Iterations",
            "The iterations (steps) found: how (NVTX marker or heuristic), the median across GPUs, the slowest and the slow ones, per GPU medians. Then use iteration(index) to drill into one.",
        ),
        tool::<IterationArgs>(
            "iteration",
            "One iteration",
            "Iteration `index` drilled down against a normal one: each GPU's duration, the kernels and gaps that differ, the collectives and which rank arrived last, what its thread was doing, and the iteration's critical path totals. Answers 'what is different in iteration 311 and which rank held the others back'.",
        ),
        tool::<CriticalPathArgs>(
            "critical_path",
            "Critical path",
            "The critical path of an iteration (default: the slowest) across ranks: the chain of kernels, copies, NCCL transfers, launches, API calls and CPU time in which each could not start earlier, with totals by kind and GPU and the top items on it.",
        ),
        tool::<WhatIfArgs>(
            "what_if",
            "What if",
            "Replay the trace with a change and predict each GPU's span and iteration median: remove a sync, make a kernel faster, put NCCL on its own stream, remove CPU time or a stall, capture ranges as CUDA graphs. Takes about a second a GB. The findings' what_if fields are ready-made arguments.",
        ),
        tool::<WindowArgs>(
            "kernels",
            "Kernels",
            "The kernels of the whole run or a window: count, total, mean, median, min, max and share of kernel time, the most time first; filter by name.",
        ),
        tool::<WindowArgs>(
            "nccl",
            "NCCL",
            "NCCL over the whole run or a window: each GPU's collectives by kind, its time waiting for the last rank against transfer, the collectives held back longest and by whom, and bytes and bus bandwidth per communicator when the export has NCCL's payloads.",
        ),
        tool::<WindowArgs>(
            "memory",
            "Memory",
            "Copies and memsets per GPU and kind with bytes and bandwidth (whole run or window), and device memory in use per GPU (peak, growth per iteration) when the capture recorded it.",
        ),
        tool::<CpuSamplesArgs>(
            "cpu_samples",
            "CPU samples",
            "Where the CPU was: the hottest frames by sampled time over the whole run, or one thread's in a window (e.g. a gap's start_ns/end_ns).",
        ),
        tool::<EventsArgs>(
            "events",
            "Events in a window",
            "The GPU ops, CUDA API calls and NVTX ranges that overlap a window, by start, as the timeline shows them: zoom into a gap or an iteration. Keep windows small (a few ms).",
        ),
        tool::<DiffArgs>(
            "diff",
            "Compare two runs",
            "Compare two open traces of the same job (before and after a change): per GPU the median iteration and where its time went, kernels and gap patterns that changed, a verdict; with fail_if_slower_pct, the gate's verdict.",
        ),
        tool::<FigureArgs>(
            "figure",
            "A figure",
            "One of the figures people put in a slide or an issue, as a PNG image: iteration duration over time, its histogram, one iteration stream by stream, where each GPU's time goes, NCCL kernel durations.",
        ),
        tool::<TraceArgs>(
            "close_trace",
            "Close a trace",
            "Forget an open trace and free its memory (its cache stays for the next open).",
        ),
    ]
}

/// Whether `name` is a tool.
pub fn exists(name: &str) -> bool {
    catalogue().iter().any(|t| t.name == name)
}

/// `args` as `A`, or why not (a protocol error: the arguments fail the schema).
pub fn parse<A: DeserializeOwned>(args: &Value) -> Result<A, String> {
    serde_json::from_value(args.clone()).map_err(|e| format!("invalid arguments: {e}"))
}

/// Checks `args` against the tool's arguments (before any work).
pub fn check(name: &str, args: &Value) -> Result<(), String> {
    match name {
        "open_trace" => parse::<OpenTraceArgs>(args).map(drop),
        "findings" | "recurring_gaps" | "iterations" => parse::<LimitArgs>(args).map(drop),
        "breakdown" | "kernels" | "nccl" | "memory" => parse::<WindowArgs>(args).map(drop),
        "gaps" => parse::<GapsArgs>(args).map(drop),
        "iteration" => parse::<IterationArgs>(args).map(drop),
        "critical_path" => parse::<CriticalPathArgs>(args).map(drop),
        "what_if" => parse::<WhatIfArgs>(args).map(drop),
        "cpu_samples" => parse::<CpuSamplesArgs>(args).map(drop),
        "events" => parse::<EventsArgs>(args).map(drop),
        "diff" => parse::<DiffArgs>(args).map(drop),
        "figure" => parse::<FigureArgs>(args).map(drop),
        "close_trace" => parse::<TraceArgs>(args).map(drop),
        _ => Err(format!("no tool {name:?}")),
    }
}

/// A window from optional ends: both or neither.
fn window(start: Option<i64>, end: Option<i64>) -> Result<Option<(i64, i64)>, String> {
    match (start, end) {
        (None, None) => Ok(None),
        (Some(a), Some(b)) if b > a => Ok(Some((a, b))),
        (Some(a), Some(b)) => Err(format!(
            "the window's end ({b}) must be after its start ({a})"
        )),
        _ => Err("give both start_ns and end_ns, or neither".into()),
    }
}

/// Answers tool `name` (its arguments checked already) from `traces`.
pub fn call(traces: &Traces, name: &str, args: &Value, hooks: &Hooks) -> Result<Answer, String> {
    match name {
        "open_trace" => open_trace(traces, parse(args)?, hooks),
        "close_trace" => close_trace(traces, parse(args)?),
        "findings" => {
            let a: LimitArgs = parse(args)?;
            Ok(answers::findings(
                &*traces.get(&a.trace_id)?,
                a.limit.unwrap_or(10),
            ))
        }
        "breakdown" => {
            let a: WindowArgs = parse(args)?;
            answers::breakdown(&*traces.get(&a.trace_id)?, window(a.start_ns, a.end_ns)?)
        }
        "gaps" => {
            let a: GapsArgs = parse(args)?;
            let q = GapQuery {
                gpu: a.gpu,
                cause: a.cause,
                text: a.text,
                min_ns: a.min_ns,
                window: window(a.start_ns, a.end_ns)?,
                sort: a.sort,
            };
            tables::gaps(
                &*traces.get(&a.trace_id)?,
                &q,
                a.offset.unwrap_or(0),
                a.limit,
            )
        }
        "recurring_gaps" => {
            let a: LimitArgs = parse(args)?;
            Ok(tables::recurring_gaps(
                &*traces.get(&a.trace_id)?,
                a.offset.unwrap_or(0),
                a.limit,
            ))
        }
        "iterations" => {
            let a: LimitArgs = parse(args)?;
            Ok(answers::iterations(
                &*traces.get(&a.trace_id)?,
                a.limit.unwrap_or(20),
            ))
        }
        "iteration" => {
            let a: IterationArgs = parse(args)?;
            answers::iteration(&*traces.get(&a.trace_id)?, a.index, a.limit.unwrap_or(10))
        }
        "critical_path" => {
            let a: CriticalPathArgs = parse(args)?;
            answers::critical_path(
                &*traces.get(&a.trace_id)?,
                a.iteration,
                a.limit.unwrap_or(20),
            )
        }
        "what_if" => {
            let a: WhatIfArgs = parse(args)?;
            let t = traces.get(&a.trace_id)?;
            answers::what_if(&t, &change_of(a)?)
        }
        "kernels" => {
            let a: WindowArgs = parse(args)?;
            tables::kernels(
                &*traces.get(&a.trace_id)?,
                window(a.start_ns, a.end_ns)?,
                a.name.as_deref(),
                a.offset.unwrap_or(0),
                a.limit,
            )
        }
        "nccl" => {
            let a: WindowArgs = parse(args)?;
            tables::nccl(
                &*traces.get(&a.trace_id)?,
                window(a.start_ns, a.end_ns)?,
                a.limit.unwrap_or(20),
            )
        }
        "memory" => {
            let a: WindowArgs = parse(args)?;
            tables::memory(
                &*traces.get(&a.trace_id)?,
                window(a.start_ns, a.end_ns)?,
                a.limit.unwrap_or(20),
            )
        }
        "cpu_samples" => {
            let a: CpuSamplesArgs = parse(args)?;
            tables::cpu_samples(
                &*traces.get(&a.trace_id)?,
                a.tid,
                window(a.start_ns, a.end_ns)?,
                a.limit.unwrap_or(20),
            )
        }
        "events" => {
            let a: EventsArgs = parse(args)?;
            let rows = Rows {
                gpu: a.gpu,
                stream: a.stream,
                tid: a.tid,
            };
            tables::events(
                &*traces.get(&a.trace_id)?,
                (a.start_ns, a.end_ns),
                &rows,
                a.limit.unwrap_or(50),
            )
        }
        "diff" => {
            let a: DiffArgs = parse(args)?;
            answers::diff(
                &*traces.get(&a.before)?,
                &*traces.get(&a.after)?,
                a.fail_if_slower_pct,
            )
        }
        "figure" => {
            let a: FigureArgs = parse(args)?;
            answers::figure(&*traces.get(&a.trace_id)?, &a.name, a.iteration)
        }
        _ => Err(format!("no tool {name:?}")),
    }
}

/// Opens the exports named (one trace, however many files) and holds it under a new id.
fn open_trace(traces: &Traces, a: OpenTraceArgs, hooks: &Hooks) -> Result<Answer, String> {
    if a.paths.is_empty() {
        return Err("paths is empty: give an export's path".into());
    }
    let paths: Vec<PathBuf> = a.paths.iter().map(PathBuf::from).collect();
    let options = Options {
        iteration_marker: a.iteration_marker,
        ..Options::default()
    };
    let opened = OpenTrace::open(
        &paths,
        options,
        Until::Findings,
        !traces.no_cache,
        &Progress::new(hooks.progress),
        hooks.cancel,
    )?;
    let id = format!("t{}", traces.next.fetch_add(1, Ordering::Relaxed) + 1);
    let answer = answers::opened(&id, &opened);
    let held = Arc::new(Held::new(opened));
    traces
        .open
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, held.clone());
    // The gap table's order worked out while the agent reads the answer.
    std::thread::spawn(move || {
        held.longest_first();
    });
    Ok(answer)
}

/// Lets go of a trace held.
fn close_trace(traces: &Traces, a: TraceArgs) -> Result<Answer, String> {
    traces.get(&a.trace_id)?;
    traces
        .open
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&a.trace_id);
    Ok(Answer::new(
        serde_json::json!({ "closed": a.trace_id }),
        format!("{} closed", a.trace_id),
    ))
}

/// The replay's change from `what_if`'s arguments, as `what-if`'s flags make it.
fn change_of(a: WhatIfArgs) -> Result<crate::whatif::Change, String> {
    use crate::whatif::{ChangeSpec, NcclDependencies};
    let nccl_dependencies = match a.nccl_dependencies.as_deref() {
        None | Some("next_kernel") => NcclDependencies::NextKernel,
        Some("after_next_collective") => NcclDependencies::AfterNextCollective,
        Some("none") => NcclDependencies::Unbounded,
        Some(other) => {
            return Err(format!(
                "nccl_dependencies {other:?}? give next_kernel, after_next_collective or none"
            ));
        }
    };
    ChangeSpec {
        remove_sync: a.remove_sync,
        scale_kernel: a.scale_kernel,
        nccl_own_stream: a.nccl_own_stream,
        nccl_dependencies,
        remove_cpu: a.remove_cpu,
        remove_stall: a.remove_stall,
        cut_host_gaps: a.cut_host_gaps,
        drop_copies: a.drop_copies,
        capture_graph: a.capture_graph,
    }
    .parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Preset, SynthOptions};

    /// A tool's answer, with no progress to report and nothing to cancel.
    fn answer(traces: &Traces, name: &str, args: &Value) -> Answer {
        let never = AtomicBool::new(false);
        let hooks = Hooks {
            progress: &|_, _| {},
            cancel: &never,
        };
        call(traces, name, args, &hooks).expect(name)
    }

    /// Each NVTX event `events` lists over windows across the run: (name, start, length).
    fn nvtx_events(traces: &Traces, id: &str, (a, b): (i64, i64)) -> Vec<(String, i64, i64)> {
        let mut out = Vec::new();
        // A window at the start, two inside (ranges open across their start included) and
        // the whole run.
        let len = b - a;
        for (from, to) in [
            (a, a + len / 7),
            (a + len / 3, a + len / 2),
            (a + 2 * len / 3, b),
            (a, b),
        ] {
            let args = serde_json::json!({
                "trace_id": id, "start_ns": from, "end_ns": to, "limit": 100_000,
            });
            let answer = answer(traces, "events", &args);
            let events = answer.json["events"].as_array().expect("a list").clone();
            out.extend(events.iter().filter(|e| e["kind"] == "nvtx").map(|e| {
                (
                    e["name"].as_str().unwrap_or_default().to_string(),
                    e["start_ns"].as_i64().unwrap_or_default(),
                    e["duration_ns"].as_i64().unwrap_or_default(),
                )
            }));
        }
        out.sort();
        out
    }

    #[test]
    fn events_list_the_same_nvtx_ranges_whether_pushed_and_popped_or_started_and_ended() {
        let dir = tempfile::tempdir().unwrap();
        let push_pop = dir.path().join("push_pop.sqlite");
        synth::generate(&push_pop, SynthOptions::new(Preset::Tiny)).unwrap();
        let start_end = dir.path().join("start_end.sqlite");
        std::fs::copy(&push_pop, &start_end).unwrap();
        let conn = rusqlite::Connection::open(&start_end).unwrap();
        // nvtxRangeStart/End (60) in place of nvtxRangePush/Pop (59).
        let changed = conn
            .execute(
                "UPDATE NVTX_EVENTS SET eventType = 60 WHERE eventType = 59",
                [],
            )
            .unwrap();
        assert!(changed > 0, "the run has push/pop ranges");
        drop(conn);
        let traces = Traces::new(true);
        let mut lists = Vec::new();
        for path in [&push_pop, &start_end] {
            let args = serde_json::json!({ "paths": [path.display().to_string()] });
            let opened = answer(&traces, "open_trace", &args);
            let id = opened.json["trace_id"].as_str().expect("an id").to_string();
            let span = &opened.json["span_ns"];
            let span = (span[0].as_i64().unwrap(), span[1].as_i64().unwrap());
            lists.push(nvtx_events(&traces, &id, span));
        }
        assert!(!lists[0].is_empty(), "NVTX events listed");
        assert_eq!(lists[0], lists[1]);
    }
}
