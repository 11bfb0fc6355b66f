//! sqlite → `Trace`. The only code that knows SQL and nsys table names.
//!
//! Opens the export read-only and immutable (nothing is ever written near it), reads the
//! small tables, then scans the big ones in parallel rowid ranges, reporting progress and
//! stopping promptly when the cancel flag is set. See `../shared/docs/nsys-sqlite.md`.

mod big_tables;
mod build;
mod deferred_stacks;
mod error;
mod gpu_metrics;
pub mod graphs;
mod launch;
pub mod many;
mod memory_usage;
mod pages;
pub mod payload;
mod report;
mod scan;
mod schema;
mod small_tables;
pub mod sniff;
pub mod stacks;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

pub use error::LoadError;
pub use launch::{captured_nvtx, launch_config};
pub use sniff::is_report;

/// The error a failed read of `path` gives, naming the path.
pub fn io_error(path: &Path, e: std::io::Error) -> LoadError {
    sniff::io_error(path, e)
}

/// The error a failed read of `path` with `kind` gives (lets tests check messages that
/// root, who reads anything, cannot provoke).
pub fn io_error_for_test(path: &Path, kind: std::io::ErrorKind) -> LoadError {
    sniff::io_error(path, std::io::Error::from(kind))
}
pub use report::{LoadReport, SkippedRows};
pub use schema::{KERNEL, MEMCPY, MEMSET, NVTX, OSRT, READ_TABLES, RUNTIME};

use big_tables::{ApiChunk, GpuChunk, NvtxChunk, OsrtChunk};
use scan::{ScanContext, Span, TablePlan};
use schema::Schema;

use crate::trace::{StringTable, Trace};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `nsys` exporting a report to SQLite (see `crate::export`), for `seconds` so far.
    Exporting {
        nsys_version: &'static str,
        seconds: u32,
    },
    Opening,
    /// Reading the trace's model from the cache (see `crate::cache`).
    ReadingCache,
    ReadingSmallTables,
    ReadingTables,
    Building,
    Done,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Exporting { .. } => "Exporting with nsys",
            Phase::Opening => "Opening",
            Phase::ReadingCache => "Reading the cache",
            Phase::ReadingSmallTables => "Reading strings and metadata",
            Phase::ReadingTables => "Reading events",
            Phase::Building => "Sorting and linking",
            Phase::Done => "Done",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub phase: Phase,
    /// Of the current phase, 0..=1.
    pub fraction: f32,
    pub rows_read: u64,
}

/// Loads `path` with no progress reporting and no way to cancel.
pub fn load(path: &Path) -> Result<(Trace, LoadReport), LoadError> {
    load_with(path, &|_| {}, &AtomicBool::new(false))
}

/// One part of a big table's scan (its plan's index and the part); one task each.
#[derive(Clone, Copy)]
pub(crate) struct Task {
    plan: usize,
    span: Span,
}

pub(crate) enum ChunkOut {
    Gpu(GpuChunk, &'static str),
    Api(ApiChunk),
    Nvtx(Box<NvtxChunk>),
    Osrt(OsrtChunk),
    Chains(Box<stacks::ChainChunk>),
    Samples(stacks::SampleChunk),
    Metrics(gpu_metrics::MetricChunk),
}

/// Loads `path`, calling `progress` from worker threads and checking `cancel` every few
/// thousand rows.
pub fn load_with(
    path: &Path,
    progress: &(dyn Fn(Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<(Trace, LoadReport), LoadError> {
    load_staged(path, progress, cancel, None)
}

/// Loads `path` through SQLite alone (no page reads): what the page reader's answers are
/// checked against.
pub fn load_through_sqlite(path: &Path) -> Result<(Trace, LoadReport), LoadError> {
    load_inner(path, &|_| {}, &AtomicBool::new(false), None, false)
}

/// Like `load_with`, and reads the GPU tables before the CPU ones: `on_gpu` gets a trace of
/// the GPU side alone as soon as it is sorted, so a timeline can appear before the API
/// calls and NVTX ranges are read.
pub fn load_staged(
    path: &Path,
    progress: &(dyn Fn(Progress) + Sync),
    cancel: &AtomicBool,
    on_gpu: Option<&(dyn Fn(Trace) + Sync)>,
) -> Result<(Trace, LoadReport), LoadError> {
    // The benchmarks' way to time the SQL path.
    let pages = std::env::var_os("NSYS_EXPLORER_SQL_SCAN").is_none();
    load_inner(path, progress, cancel, on_gpu, pages)
}

fn load_inner(
    path: &Path,
    progress: &(dyn Fn(Progress) + Sync),
    cancel: &AtomicBool,
    on_gpu: Option<&(dyn Fn(Trace) + Sync)>,
    pages: bool,
) -> Result<(Trace, LoadReport), LoadError> {
    let _memory = crate::memory::LoadMemoryGuard::hold();
    let t0 = Instant::now();
    let mut report = LoadReport::new(path);
    progress(Progress {
        phase: Phase::Opening,
        fraction: 0.0,
        rows_read: 0,
    });
    report.file_bytes = sniff::check_file(path)?;
    // What the call stacks' read, after the load, checks the file against.
    let (file_bytes, modified) = std::fs::metadata(path)
        .map(|m| (m.len(), m.modified().ok()))
        .map_err(|e| io_error(path, e))?;
    let (conn, schema) = open_export(path)?;
    report.phase_done("open", t0);

    let t = Instant::now();
    progress(Progress {
        phase: Phase::ReadingSmallTables,
        fraction: 0.0,
        rows_read: 0,
    });
    let mut small = SmallTables::read(&conn, path, &schema, &mut report)?;
    report.phase_done("small tables", t);

    let t = Instant::now();
    let db = if pages {
        pages::DbFile::open(path).map_err(|e| io_error(path, e))?
    } else {
        None
    };
    let scans = Scans::plan(&conn, db.as_ref(), &schema, path, &small, &mut report)?;
    let ctx = ScanContext {
        path,
        db: db.as_ref(),
        cancel,
        rows_read: AtomicU64::new(0),
        rows_expected: scans.rows_expected,
        progress,
    };
    let events = read_events(&ctx, &scans, &mut small, on_gpu, &mut report)?;
    report.phase_done("read events", t);

    let t = Instant::now();
    progress(Progress {
        phase: Phase::Building,
        fraction: 0.0,
        rows_read: ctx.rows_read.into_inner(),
    });
    let SmallTables {
        parts,
        names,
        metric_keys,
        ..
    } = small;
    // Names of sampled threads that made no CUDA call (the model has no row for them).
    let has_samples = schema.has(stacks::SAMPLES) && schema.has(stacks::SAMPLING_CALLCHAINS);
    let thread_names_for_samples = if has_samples {
        parts.thread_names.clone()
    } else {
        Default::default()
    };
    let Events {
        gpu_parts,
        threads,
        mut stack_merger,
        metric_merger,
    } = events;
    let mut trace = build::build_trace(parts, gpu_parts, threads, cancel, &mut report)?;
    report.phase_done("sort, nest and link", t);
    graphs::read_graph_nodes(&conn, path, &schema, &mut trace)?;
    if stack_merger.out_of_order(stacks::OSRT_CALLCHAINS) {
        stack_merger.read_sorted(path, &conn, stacks::OSRT_CALLCHAINS, &names.ids)?;
    }
    stack_merger.finish_osrt(&mut trace, &mut report.skips);
    memory_usage::read_memory_usage(&conn, path, &schema, &mut trace, &mut report)?;
    trace.gpu_metrics = metric_merger.finish(&metric_keys, &gpu_metrics::cuda_devices(&conn));
    trace.call_stacks = if has_samples {
        let mut sampled_names: rustc_hash::FxHashMap<i64, String> =
            thread_names_for_samples.into_iter().collect();
        for t in &trace.threads {
            sampled_names.insert(t.global_tid, t.name.clone());
        }
        deferred_stacks::spawn(deferred_stacks::Pending {
            path: path.to_owned(),
            bytes: file_bytes,
            modified,
            pages,
            merger: stack_merger,
            ids: names.ids,
            thread_names: sampled_names,
        })
    } else {
        let (stacks, skips) = stack_merger.finish(&Default::default());
        report.skips.merge(scan::Skips(skips.0));
        crate::trace::StacksSlot::ready(stacks)
    };
    report.finish(&trace, t0);
    progress(Progress {
        phase: Phase::Done,
        fraction: 1.0,
        rows_read: report.tables.values().sum(),
    });
    Ok((trace, report))
}

/// Opens `path` read-only and checks that it is an nsys export SQLite can read as UTF-8.
fn open_export(path: &Path) -> Result<(rusqlite::Connection, Schema), LoadError> {
    let conn = sniff::open_read_only(path)?;
    let schema = Schema::read(&conn, path)?;
    schema.check_is_nsys_export(path)?;
    // The scans read text as SQLite stores it: UTF-8, as nsys writes it (see
    // `scan::RawStatement`).
    let encoding: String = conn
        .query_row("PRAGMA encoding", [], |r| r.get(0))
        .map_err(|e| sniff::sqlite_error(path, "PRAGMA encoding", e))?;
    if encoding != "UTF-8" {
        return Err(LoadError::NotUtf8 {
            path: path.to_owned(),
            encoding,
        });
    }
    Ok((conn, schema))
}

/// What the small tables give: the trace's names, processes and GPUs, and what the scans
/// of the big tables need to know.
struct SmallTables {
    parts: build::Parts,
    names: small_tables::Names,
    /// CUDA graphs launched whole (one row a graph launch), read as GPU ops.
    graph_execs: Option<GpuChunk>,
    payloads: payload::PayloadSchemas,
    metric_keys: gpu_metrics::MetricKeys,
    scheduling: Vec<(i64, crate::trace::Scheduling)>,
}

impl SmallTables {
    fn read(
        conn: &rusqlite::Connection,
        path: &Path,
        schema: &Schema,
        report: &mut LoadReport,
    ) -> Result<Self, LoadError> {
        let mut strings = StringTable::new();
        let mut info = small_tables::read_export_info(conn, path, schema)?;
        let names = small_tables::read_names(conn, path, schema, &mut strings)?;
        let processes = small_tables::read_processes(conn, path, schema)?;
        let thread_names = small_tables::read_thread_names(conn, path, schema, &names, &strings)?;
        let gpu_names = small_tables::read_gpu_names(conn, path, schema)?;
        let capture_window = small_tables::read_capture_window(conn, path, schema)?;
        info.graph_trace = graphs::trace_mode(conn, schema);
        let graph_execs =
            graphs::read_graph_execs(conn, path, schema, &mut strings, &mut report.skips)?;
        let payloads = payload::PayloadSchemas::read(conn);
        let metric_keys = gpu_metrics::MetricKeys::read(conn, path, schema)?;
        // Scheduling only where nothing else shows the threads (real exports hold millions
        // of its rows beside the CUDA ones).
        let scheduling_only = [KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX, OSRT]
            .iter()
            .all(|t| !schema.has(t));
        let scheduling = if scheduling_only {
            small_tables::read_scheduling(conn, path, schema)?
        } else {
            Vec::new()
        };
        for &(table, disables) in READ_TABLES {
            // The copy-kind enum matters only to an export with copies.
            let needed = table != schema::MEMCPY_KINDS || schema.has(MEMCPY);
            if needed && !schema.has(table) {
                report.missing_tables.push(table.to_string());
                report
                    .missing_effects
                    .insert(table.to_string(), disables.to_string());
            }
        }
        for table in [
            "StringIds",
            "ThreadNames",
            "PROCESSES",
            "TARGET_INFO_GPU",
            "ANALYSIS_DETAILS",
            // CUDA graphs made and instantiated, and their nodes (followed back from a node
            // kernel to its capture when one is shown).
            "CUDA_GRAPH_EVENTS",
            "CUDA_GRAPH_NODE_EVENTS",
        ] {
            if schema.has(table) {
                report.tables.insert(
                    table.to_string(),
                    small_tables::count_rows(conn, path, table)?,
                );
            }
        }
        Ok(Self {
            parts: build::Parts {
                info,
                strings,
                processes,
                thread_names,
                gpu_names,
                capture_window,
                sources: vec![std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())],
            },
            names,
            graph_execs,
            payloads,
            metric_keys,
            scheduling,
        })
    }
}

/// The scans of the big tables: a plan a table, split into tasks; the GPU tables' apart,
/// as they are read first.
struct Scans {
    plans: Vec<TablePlan>,
    gpu_tasks: Vec<Task>,
    cpu_tasks: Vec<Task>,
    rows_expected: u64,
}

impl Scans {
    /// Kernels first, so a staged loader can show them earliest.
    fn plan(
        conn: &rusqlite::Connection,
        db: Option<&pages::DbFile>,
        schema: &Schema,
        path: &Path,
        small: &SmallTables,
        report: &mut LoadReport,
    ) -> Result<Self, LoadError> {
        let mut plans: Vec<TablePlan> = Vec::new();
        let mut tasks = Vec::new();
        let mut rows_expected = 0;
        // OS runtime backtraces with their calls; CPU samples after the load (see
        // `deferred_stacks`).
        let stack_tables = [stacks::OSRT_CALLCHAINS]
            .into_iter()
            .filter(|_| schema.has(OSRT));
        // GPU metrics where their names are known.
        let metric_tables = [gpu_metrics::GPU_METRICS]
            .into_iter()
            .filter(|_| !small.metric_keys.is_empty());
        for table in [KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX, OSRT]
            .into_iter()
            .chain(stack_tables)
            .chain(metric_tables)
        {
            if !schema.has(table) {
                continue;
            }
            let wanted = match table {
                stacks::OSRT_CALLCHAINS => stacks::columns(table),
                gpu_metrics::GPU_METRICS => gpu_metrics::COLUMNS,
                _ => big_tables::columns(table, &small.payloads),
            };
            let plan = scan::plan(conn, db, schema, path, table, wanted, big_tables::ON_DEMAND)?;
            rows_expected += plan.rows;
            tasks.extend(plan.spans.iter().map(|&span| Task {
                plan: plans.len(),
                span,
            }));
            report.tables.insert(table.to_string(), 0);
            if plan.reads_pages() {
                report.read_from_pages.push(table.to_string());
            }
            plans.push(plan);
        }
        let (gpu_tasks, cpu_tasks) = tasks
            .into_iter()
            .partition(|t| [KERNEL, MEMCPY, MEMSET].contains(&plans[t.plan].table));
        Ok(Self {
            plans,
            gpu_tasks,
            cpu_tasks,
            rows_expected,
        })
    }

    /// The rows planned of `table`.
    fn rows_of(&self, table: &str) -> u64 {
        self.plans
            .iter()
            .filter(|p| p.table == table)
            .map(|p| p.rows)
            .sum()
    }
}

/// Reads one task's part of its table, on a connection of its own.
fn read_task(
    ctx: &ScanContext,
    plans: &[TablePlan],
    small: &SmallTables,
    task: &Task,
) -> Result<ChunkOut, LoadError> {
    ctx.check_cancel()?;
    let conn = sniff::open_read_only(ctx.path)?;
    let plan = &plans[task.plan];
    let (names, span) = (&small.names, task.span);
    Ok(match plan.table {
        KERNEL => ChunkOut::Gpu(
            big_tables::read_kernels(ctx, &conn, plan, names, span)?,
            KERNEL,
        ),
        MEMCPY => ChunkOut::Gpu(
            big_tables::read_memory_ops(ctx, &conn, plan, names, false, span)?,
            MEMCPY,
        ),
        MEMSET => ChunkOut::Gpu(
            big_tables::read_memory_ops(ctx, &conn, plan, names, true, span)?,
            MEMSET,
        ),
        RUNTIME => ChunkOut::Api(big_tables::read_api_calls(ctx, &conn, plan, names, span)?),
        NVTX => ChunkOut::Nvtx(Box::new(big_tables::read_nvtx(
            ctx,
            &conn,
            plan,
            names,
            &small.payloads,
            span,
        )?)),
        OSRT => ChunkOut::Osrt(big_tables::read_osrt_calls(ctx, &conn, plan, names, span)?),
        stacks::OSRT_CALLCHAINS => ChunkOut::Chains(Box::new(stacks::read_chains(
            ctx, &conn, plan, &names.ids, span,
        )?)),
        gpu_metrics::GPU_METRICS => ChunkOut::Metrics(gpu_metrics::read_chunk(
            ctx,
            &conn,
            plan,
            &small.metric_keys,
            span,
        )?),
        _ => unreachable!("only the tables planned"),
    })
}

/// The big tables as read: the GPU side sorted, the threads merged, the backtraces and
/// metrics gathered.
struct Events {
    gpu_parts: build::GpuParts,
    threads: build::MergedThreads,
    stack_merger: stacks::StackMerger,
    metric_merger: gpu_metrics::MetricMerger,
}

/// Reads the GPU tables, then the CPU ones while the GPU side is sorted (and handed to
/// `on_gpu`); each chunk's rows and skipped rows go into `report`.
fn read_events(
    ctx: &ScanContext,
    scans: &Scans,
    small: &mut SmallTables,
    on_gpu: Option<&(dyn Fn(Trace) + Sync)>,
    report: &mut LoadReport,
) -> Result<Events, LoadError> {
    let graph_execs = small.graph_execs.take();
    let scheduling = std::mem::take(&mut small.scheduling);
    let small = &*small;
    let read_one = |task: &Task| read_task(ctx, &scans.plans, small, task);
    let mut tally = |table: &str, rows: u64, skips: &mut scan::Skips| {
        *report.tables.entry(table.to_string()).or_default() += rows;
        report.skips.merge(std::mem::take(skips));
    };
    let gpu_rows = scans.rows_of(KERNEL) + scans.rows_of(MEMCPY) + scans.rows_of(MEMSET);
    let mut gpu = build::GpuMerger::new(gpu_rows);
    if let Some(mut chunk) = graph_execs {
        tally(graphs::GRAPH_TRACE, chunk.rows, &mut chunk.skips);
        gpu.add(chunk);
    }
    read_merging(&scans.gpu_tasks, &read_one, |out| match out {
        ChunkOut::Gpu(mut chunk, table) => {
            tally(table, chunk.rows, &mut chunk.skips);
            gpu.add(chunk);
        }
        _ => unreachable!("only the GPU tables' tasks"),
    })?;
    let mut merger = build::ThreadMerger::new(
        small.parts.strings.clone(),
        &small.parts.thread_names,
        scans.rows_of(RUNTIME),
        scans.rows_of(NVTX),
    );
    let mut stack_merger = stacks::StackMerger::default();
    let mut metric_merger = gpu_metrics::MetricMerger::default();
    let (gpu_parts, cpu) = rayon::join(
        || {
            let gpu_parts = build::build_gpu(gpu);
            if let Some(on_gpu) = on_gpu {
                on_gpu(build::gpu_only_trace(&small.parts, &gpu_parts));
            }
            gpu_parts
        },
        || {
            read_merging(&scans.cpu_tasks, &read_one, |out| match out {
                ChunkOut::Api(mut chunk) => {
                    tally(RUNTIME, chunk.rows, &mut chunk.skips);
                    merger.add_api(chunk);
                }
                ChunkOut::Nvtx(mut chunk) => {
                    tally(NVTX, chunk.rows, &mut chunk.skips);
                    merger.add_nvtx(*chunk);
                }
                ChunkOut::Osrt(mut chunk) => {
                    tally(OSRT, chunk.rows, &mut chunk.skips);
                    merger.add_osrt(chunk);
                }
                ChunkOut::Chains(chunk) => {
                    tally(chunk.table, chunk.rows, &mut Default::default());
                    stack_merger.add_chains(*chunk);
                }
                ChunkOut::Metrics(mut chunk) => {
                    tally(gpu_metrics::GPU_METRICS, chunk.rows, &mut chunk.skips);
                    metric_merger.add(chunk);
                }
                ChunkOut::Samples(_) | ChunkOut::Gpu(..) => {
                    unreachable!("the GPU tables are read first, the samples after the load")
                }
            })
        },
    );
    cpu?;
    Ok(Events {
        gpu_parts,
        threads: merger.finish(scheduling),
        stack_merger,
        metric_merger,
    })
}

/// Reads `tasks` on every core, in order as far as cores allow (each takes the next task
/// left), while `merge` takes each chunk in task order on a thread of its own: a chunk is
/// merged and freed soon after it is read, and its memory taken again by later reads,
/// instead of every chunk waiting for one merge at the end (which wrote each event into
/// fresh memory twice and held all chunks and all threads at once). No batches: cores
/// never wait for the slowest task of a batch.
pub(crate) fn read_merging(
    tasks: &[Task],
    read_one: &(dyn Fn(&Task) -> Result<ChunkOut, LoadError> + Sync),
    mut merge: impl FnMut(ChunkOut) + Send,
) -> Result<(), LoadError> {
    let (send, received) = std::sync::mpsc::channel::<(usize, ChunkOut)>();
    let next_task = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // Chunks read ahead of one still being read wait here.
            let mut early: std::collections::BTreeMap<usize, ChunkOut> = Default::default();
            let mut next = 0;
            for (i, out) in received {
                early.insert(i, out);
                while let Some(out) = early.remove(&next) {
                    merge(out);
                    next += 1;
                }
            }
        });
        (0..rayon::current_num_threads())
            .into_par_iter()
            .try_for_each_with(send, |send, _| {
                loop {
                    let i = next_task.fetch_add(1, Ordering::Relaxed);
                    let Some(task) = tasks.get(i).filter(|_| !failed.load(Ordering::Relaxed))
                    else {
                        return Ok(());
                    };
                    let out =
                        read_one(task).inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
                    // The merger only stops once every sender is gone.
                    let _ = send.send((i, out));
                }
            })
    })
}
