//! The command line's arguments, as clap reads them.

use super::*;

#[derive(Parser)]
#[command(
    name = "nsys-explorer",
    version,
    about = "Explore Nsight Systems SQLite exports"
)]
pub struct Cli {
    /// An `nsys export --type sqlite` file to open in the window, or an `.nsys-rep` (exported
    /// with the installed `nsys` into the cache folder first). Without one the window
    /// opens on a built-in sample trace (a generated 4-GPU run); see --start-page. Several
    /// files (or a folder: every *.sqlite in it) are one job's per-rank exports, opened as
    /// one trace.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Open the start page (Open…, Open sample trace, recent files) instead of the sample
    /// trace when no FILE is given.
    #[arg(long)]
    pub start_page: bool,
    /// Once analysed, open a view as if clicked (for the screenshot script):
    /// idle-overlay, recurring-gap or slow-iteration.
    #[arg(long, hide = true)]
    pub show: Option<String>,
    /// Compare FILE with this export of another run (before / after a change): its
    /// timeline under FILE's, aligned by iteration, and a Diff tab.
    #[arg(long, value_name = "AFTER")]
    pub compare: Option<PathBuf>,
    /// Neither read nor write the cache (`$XDG_CACHE_HOME/nsys-explorer`) for this run.
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Never run `nsys` to export an `.nsys-rep`: say how to export it instead.
    #[arg(long, global = true)]
    pub no_export: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Print the load report, per-device counts and a diagnosis of FILE. Several files (or
    /// a folder of them: every *.sqlite in it) are one job's per-rank exports, opened as one
    /// trace, their clocks aligned by their collectives.
    Report {
        #[arg(required = true, num_args = 1.., value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Only this device (deviceId).
        #[arg(long)]
        device: Option<u32>,
        /// Analyse this window (ns, the trace's clock) instead of each device's own.
        #[arg(long, num_args = 2, value_names = ["START_NS", "END_NS"])]
        window: Option<Vec<i64>>,
        /// NVTX range text that marks iterations (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
        /// Shortest idle interval counted as a gap.
        #[arg(long, default_value_t = crate::analysis::gaps::DEFAULT_MIN_GAP_NS)]
        min_gap_ns: i64,
        /// How many gaps, patterns, kernels and collectives to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// Compare two runs of the same job (before and after a change): per GPU the median
    /// iteration and where its time went, kernels and gap patterns by change, a verdict.
    Diff {
        before: PathBuf,
        after: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// NVTX range text that marks iterations in both runs (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
        /// How many kernels and gap patterns to list (text output; JSON lists all).
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// A gate for CI: exit 1 when AFTER's median step (or span, without iterations) is
        /// slower than BEFORE's by more than PCT percent and by more than the runs' own
        /// spread; "inconclusive" (exit 0, or 3 with --strict) when that spread is larger
        /// than PCT.
        #[arg(long, value_name = "PCT")]
        fail_if_slower: Option<f64>,
        /// With --fail-if-slower: exit 3 when the verdict is inconclusive.
        #[arg(long, requires = "fail_if_slower")]
        strict: bool,
    },
    /// What would a change save? Replays FILE with the change (and unchanged, to state the
    /// model's error) and predicts each GPU's iteration median and span.
    WhatIf {
        /// One export, or every rank's file of a job (opened as one trace, as `report`
        /// opens them).
        #[arg(required = true, num_args = 1.., value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        change: ChangeArgs,
        #[arg(long)]
        json: bool,
        /// NVTX range text that marks iterations (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
    },
    /// The critical path of an iteration (default: the slowest), across ranks: the chain of
    /// work in which each piece could not start earlier because of the one before it —
    /// kernels, copies, NCCL transfers, launches, API calls and CPU time — with totals by
    /// kind and GPU, the top items on it, and the slack of the largest kernels off it.
    CriticalPath {
        #[arg(required = true, num_args = 1.., value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The iteration (index from 0; default: the slowest).
        #[arg(long)]
        iteration: Option<usize>,
        /// The whole run's table instead: time on the path over every iteration, by
        /// kernel name and by NVTX range.
        #[arg(long, conflicts_with = "iteration")]
        all: bool,
        /// How many kernels and ranges the whole run's table lists.
        #[arg(long, default_value_t = 20)]
        top: usize,
        #[arg(long)]
        json: bool,
        /// NVTX range text that marks iterations (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
    },
    /// Write the tables of each FILE (kernels, memory, api_calls, nvtx, gaps, iterations, graphs, cpu_samples, stacks, gpu_metrics, memory_events)
    /// as Arrow IPC or Parquet files into DIR, named STEM.TABLE.EXT, so that DuckDB, Spark
    /// or pandas read them without the Python bindings. Each file is exported on its own
    /// (one task per rank of a Slurm array); a `file` column names it.
    Export {
        #[arg(required = true, num_args = 1.., value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Folder to write into (made if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[arg(long, value_enum, default_value = "parquet")]
        format: crate::table_files::Format,
        /// Shortest idle interval counted as a gap.
        #[arg(long, default_value_t = crate::analysis::gaps::DEFAULT_MIN_GAP_NS)]
        min_gap_ns: i64,
        /// NVTX range text that marks iterations (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
    },
    /// Summarise each export for a job of many ranks: `DIR/STEM.summary` (under 2 % of the
    /// export) with every NCCL kernel and what its thread did before it, the iterations,
    /// each GPU's breakdown and top gaps, the UTC start and the export's identity. Run it
    /// where the exports are (one Slurm array task per rank, or `xargs -P`); `report
    /// DIR/*.summary` (or `report DIR`) reduces them into the job on any machine.
    Summarize {
        #[arg(required = true, num_args = 1.., value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Folder to write into (made if missing; default: the current folder, never the
        /// exports' own unless it is that).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// `summary` (what `report` reads) or `parquet`: the same tables as
        /// STEM.{collectives,iterations,gpus,gaps}.parquet for Spark or DuckDB.
        #[arg(long, value_enum, default_value = "summary")]
        format: SummaryFormat,
        /// NVTX range text that marks iterations (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
        /// Shortest idle interval counted as a gap.
        #[arg(long, default_value_t = crate::analysis::gaps::DEFAULT_MIN_GAP_NS)]
        min_gap_ns: i64,
    },
    /// Write the five figures people draw to discuss a trace, as PNG and SVG, and the
    /// numbers drawn (figures.json): iteration duration over time, its histogram, one
    /// iteration stream by stream, where each GPU's time goes, NCCL kernel durations.
    Figures {
        #[arg(required = true, num_args = 1.., value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Folder to write into (default: STEM-figures in the current folder).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Formats, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "png,svg")]
        format: Vec<String>,
        /// The iteration the streams figure draws (default: the median one).
        #[arg(long)]
        iteration: Option<usize>,
        /// The GPU (deviceId) the streams figure draws (default: the first).
        #[arg(long)]
        device: Option<u32>,
        /// NVTX range text that marks iterations (numbers match any number).
        #[arg(long)]
        iteration_marker: Option<String>,
    },
    /// Benchmarks: each prints its figures and the peak RSS (figures and method in docs/benchmarks.md).
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `nsys-explorer completions bash > ~/.local/share/bash-completion/completions/nsys-explorer`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Install the app for the current user: desktop entry, MIME types (*.sqlite,
    /// *.nsys-rep) and icon, under XDG_DATA_HOME (~/.local/share).
    InstallDesktop {
        /// Also make nsys-explorer the default app for .sqlite and .nsys-rep files.
        #[arg(long)]
        default: bool,
    },
    /// Remove everything install-desktop wrote.
    UninstallDesktop,
    /// Serve the engine to a coding agent as Model Context Protocol tools on stdin/stdout
    /// (open_trace, findings, breakdown, gaps, iterations, critical_path, what_if, …; see
    /// docs/agents.md), e.g. `claude mcp add nsys-explorer -- nsys-explorer mcp`.
    Mcp {
        /// Neither read nor write the cache (`$XDG_CACHE_HOME/nsys-explorer`).
        #[arg(long)]
        no_cache: bool,
    },
    /// Write a generated Wan2.1-like 4-GPU trace (and FILE.truth.json beside it).
    Synth(SynthArgs),
}

/// What `summarize` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryFormat {
    Summary,
    Parquet,
}

/// The benchmarks (`nsys-explorer bench <which>`).
#[derive(Subcommand)]
pub enum Bench {
    /// Time a full load of FILE, phase by phase, against a plain sqlite3 scan.
    Load { file: PathBuf },
    /// Time every analysis of FILE after loading it.
    Analysis { file: PathBuf },
    /// Time `report FILE --json` end to end (load, analyses, JSON) against a plain sqlite3
    /// scan, with its peak RSS.
    Report { file: PathBuf },
    /// Time the window's own path to its findings (its load job, the same stages, no
    /// frame drawn) on a cold open against `report --json --no-cache`, alternated, then
    /// its re-open from the cache.
    Window { file: PathBuf },
    /// Time opening several per-rank files (or a folder of them) as one trace, against
    /// each file alone, with the merged model's size and the peak RSS.
    Many {
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
    },
    /// Time a job of many ranks from their summaries (or exports, summarised first): the
    /// read, the reduce, with the peak RSS.
    Job {
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
    },
    /// Time what-if replays of FILE (unchanged, a sync removed, a kernel made faster).
    WhatIf { file: PathBuf },
    /// Time what to fix first on FILE: the findings' detection and replays against one
    /// what-if replay, with the peak RSS.
    Findings { file: PathBuf },
    /// Time headless timeline frames of FILE at three zoom levels.
    Frame {
        file: PathBuf,
        /// A trace to time frame for frame alongside FILE (e.g. the `tiny` preset), and
        /// print FILE's ratio to it.
        #[arg(long)]
        against: Option<PathBuf>,
    },
    /// Time the panels' work on a click: sorting and filtering the gap table, a summary
    /// overlay, a drill-down, a kernel search (each should stay under 100 ms).
    Panels { file: PathBuf },
    /// Time the window's re-open of FILE from the cache, step by step (best of 3), after
    /// one cold open that fills a cache of its own.
    Reopen { file: PathBuf },
    /// Time the critical path of FILE: the slowest iteration's (with slack) and the whole
    /// run's table, with the peak RSS.
    CriticalPath { file: PathBuf },
}

/// `synth`'s arguments: what the generator makes.
#[derive(clap::Args)]
pub struct SynthArgs {
    #[arg(long, value_enum, default_value = "tiny")]
    pub preset: Preset,
    #[arg(long, required_unless_present = "split_ranks")]
    pub out: Option<PathBuf>,
    /// Write one file per rank into this folder instead (rank00.sqlite, …), each with its
    /// own clock, a UTC start a few ms off and its GPU as device 0, and truth.json with
    /// the true clock offsets.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub split_ranks: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "2024")]
    pub flavour: Flavour,
    #[arg(long, value_enum, default_value = "same")]
    pub nccl_stream: NcclStream,
    #[arg(long, default_value_t = 311)]
    pub seed: u64,
    /// The old, kinder shape (repeated NVTX texts, sub-µs kernel spacing, no JIT stall
    /// or checkpoint), for comparison with the realistic default.
    #[arg(long)]
    pub clean: bool,
    /// The same run with one kernel taking F times as long (NAME: part of a generated
    /// kernel's name, e.g. flash_fwd_kernel=0.5), for before/after pairs.
    #[arg(long, value_name = "NAME=F")]
    pub scale_kernel: Option<String>,
    /// The same run without the scheduler's per-step stream synchronisation.
    #[arg(long)]
    pub no_step_sync: bool,
    /// Without the straggler's stall in the slow step (the "after" of fixing it).
    #[arg(long)]
    pub no_straggler: bool,
    /// NCCL's NVTX ranges without their payloads (an export made without
    /// `--include-blobs=true`).
    #[arg(long)]
    pub no_nccl_blobs: bool,
    /// No NCCL NVTX ranges at all (a run with `NCCL_NVTX_DISABLE=1`, or traced without
    /// NCCL's domain): about 1.9 ranges a kernel instead of 3.5, a third less file.
    #[arg(long, conflicts_with = "no_nccl_blobs")]
    pub no_nccl_nvtx: bool,
    /// Ranks (GPUs) instead of the preset's 4 (at least 3).
    #[arg(long)]
    pub ranks: Option<u32>,
    /// What the straggler's thread does in its stall: a `read()` after draining its
    /// device, or plain Python (CPU time with no call) inside `attention`.
    #[arg(long, value_enum, default_value = "read")]
    pub straggler_stall: synth::StragglerStall,
    /// The straggler's rank (default 2).
    #[arg(long, value_name = "RANK")]
    pub straggler_rank: Option<u32>,
    /// The straggler's pause in ns (default two fifths of a step).
    #[arg(long, value_name = "NS")]
    pub straggler_pause: Option<i64>,
    /// Steps instead of the preset's (at least 4; the slow step and the checkpoint keep
    /// their place in the run).
    #[arg(long)]
    pub steps: Option<u32>,
    /// Transformer blocks a step instead of the preset's.
    #[arg(long)]
    pub blocks: Option<u32>,
    /// A `cudaDeviceSynchronize` after each all-to-all, then 2–3 ms of Python before the
    /// next launch (the seed's Ulysses attention with `use_sync=True`).
    #[arg(long)]
    pub sync_after_collective: bool,
    /// Without the realistic shape's blocking checkpoint copy (an inference run saves
    /// no weights).
    #[arg(long)]
    pub no_checkpoint: bool,
    /// The blocks' compute replayed as CUDA graphs, recorded as `nsys
    /// --cuda-graph-trace=graph` (one row per launch, nsys's default) or `node` (every
    /// node's kernel).
    #[arg(long, value_enum)]
    pub cuda_graphs: Option<synth::GraphTrace>,
    /// The Python of each aten op before its launch, in ns (default 6000); about a
    /// millisecond or more makes the blocks launch-bound.
    #[arg(long, value_name = "NS")]
    pub host_per_op: Option<i64>,
    /// CPU samples of each rank's main thread at 1 kHz and a backtrace on every OS
    /// runtime call, as `nsys profile` records by default; the truth names each gap's
    /// most sampled innermost frame.
    #[arg(long)]
    pub cpu_samples: bool,
    /// Device memory allocations and frees (`--cuda-memory-usage=true`): weights, each
    /// step's activations, a pinned host buffer, a block allocated before the capture,
    /// a workspace of 1 GiB + (step mod 3) × 128 MiB freed on the GPU after the step's
    /// CPU time, and a leak of 64 MiB a step on rank 1; the truth has each GPU's peak
    /// and growth.
    #[arg(long)]
    pub memory_usage: bool,
    /// The GPUs' counters sampled at 10 kHz (`--gpu-metrics-devices=all`): SMs Active,
    /// Tensor Active, DRAM Read Bandwidth at levels set by the kernel running, and the
    /// clock (in Hz on GPU 2, wrapped past 2^31 on GPU 3); metric ids differ per GPU.
    #[arg(long)]
    pub gpu_metrics: bool,
    /// With --split-ranks: every rank's process has the same pid and tids (containers
    /// start each node's training process as pid 1).
    #[arg(long, requires = "split_ranks")]
    pub same_pids: bool,
    /// NVTX as DLProf records it: no step, block or module ranges, one range an
    /// operator whose text is a Python dict (`{'traceMarker': [N], 'funcStack': 'file.py:LINE'}`).
    #[arg(long)]
    pub dlprof_markers: bool,
    /// With --cuda-graphs: each block's whole attention, its two all-to-alls inside,
    /// one graph (one launch call releases compute and collectives).
    #[arg(long, requires = "cuda_graphs")]
    pub graph_attention: bool,
    /// Small ops (17–41 µs kernels) after each all-to-all, each after 60–100 µs of
    /// Python: with --sync-after-collective the GPU waits at every one until the next
    /// long kernel (the seed's shape).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub small_ops: u32,
    /// With --sync-after-collective: the device syncs left out, the Python after them
    /// kept (the "after" of removing them, every other draw the same).
    #[arg(long, requires = "sync_after_collective")]
    pub no_collective_sync: bool,
    /// The collectives are gradient all-reduces launched in a `backward` range, each
    /// result needed only after the next collective (DDP's buckets); no NCCL payload
    /// ranges.
    #[arg(long)]
    pub gradient_all_reduce: bool,
}
