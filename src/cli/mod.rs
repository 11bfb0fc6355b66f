//! Command line: `nsys-explorer [FILE]` opens the GUI; `report`, `diff`, `what-if`,
//! `bench <which>`, `synth` and `completions` run without a window. Errors go to stderr with exit code 2.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::analysis::Window;
use crate::load;
use crate::overview::Options;
use crate::session;
use crate::synth::{self, Flavour, NcclStream, Preset, SynthOptions};
use crate::trace::DeviceId;
use clap::{Parser, Subcommand};

mod args;
pub use args::*;

fn bench(which: Bench) -> Result<(), String> {
    match which {
        Bench::Load { file } => crate::bench::bench_load(&file),
        Bench::Analysis { file } => crate::bench::bench_analysis(&file),
        Bench::Report { file } => crate::bench::bench_report(&file),
        Bench::Many { files } => crate::bench::bench_many(&files),
        Bench::WhatIf { file } => crate::bench::bench_what_if(&file),
        Bench::Window { file } => crate::bench::bench_window(&file),
        Bench::Job { files } => crate::bench::bench_job(&files),
        Bench::Findings { file } => crate::bench::bench_findings(&file),
        Bench::Frame { file, against } => crate::bench::bench_frame(&file, against.as_deref()),
        Bench::Panels { file } => crate::bench::bench_panels(&file),
        Bench::Reopen { file } => crate::bench::bench_reopen(&file),
        Bench::CriticalPath { file } => crate::bench::bench_critical_path(&file),
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.no_cache {
        crate::cache::disable();
    }
    if cli.no_export {
        crate::export::disable();
    }
    // Huge pages where memory is taken again and again (the window, the MCP server, the
    // benchmarks of the window's path); a one-shot command's pages are all fresh.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !matches!(
        cli.command,
        None | Some(Command::Mcp { .. }) | Some(Command::Bench { .. })
    ) {
        crate::huge_pages::set_advised(false);
    }
    let result = match cli.command {
        None => crate::ui::run(cli.files, cli.start_page, cli.show, cli.compare)
            .map_err(|e| format!("cannot open the window: {e}")),
        Some(Command::Report {
            files,
            json,
            device,
            window,
            iteration_marker,
            min_gap_ns,
            top,
        }) => {
            let options = Options {
                device: device.map(DeviceId),
                window: window.map(|w| Window::new(w[0], w[1])),
                iteration_marker,
                min_gap_ns: min_gap_ns.max(0),
                top,
            };
            report(&files, json, &options)
        }
        Some(Command::Diff {
            before,
            after,
            json,
            iteration_marker,
            top,
            fail_if_slower,
            strict,
        }) => match diff(&before, &after, json, iteration_marker, top, fail_if_slower) {
            // The gate's verdict is the exit code: 1 slower, 3 inconclusive with --strict.
            Ok(Some(crate::compare::gate::Verdict::Slower)) => return ExitCode::from(1),
            Ok(Some(crate::compare::gate::Verdict::Inconclusive)) if strict => {
                return ExitCode::from(3);
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        },
        Some(Command::WhatIf {
            files,
            change,
            json,
            iteration_marker,
        }) => what_if_change(change).and_then(|c| what_if(&files, c, json, iteration_marker)),
        Some(Command::CriticalPath {
            files,
            iteration,
            all,
            top,
            json,
            iteration_marker,
        }) => critical_path(&files, iteration, all, top, json, iteration_marker),
        Some(Command::Summarize {
            files,
            out,
            format,
            iteration_marker,
            min_gap_ns,
        }) => summarize(
            &files,
            out.as_deref(),
            format,
            &Options {
                iteration_marker,
                min_gap_ns: min_gap_ns.max(0),
                ..Default::default()
            },
        ),
        Some(Command::Export {
            files,
            out,
            format,
            min_gap_ns,
            iteration_marker,
        }) => export_tables(&files, &out, format, min_gap_ns, iteration_marker),
        Some(Command::Figures {
            files,
            out,
            format,
            iteration,
            device,
            iteration_marker,
        }) => figures(
            &files,
            out,
            &format,
            iteration,
            device.map(DeviceId),
            iteration_marker,
        ),
        Some(Command::Bench { which }) => bench(which),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "nsys-explorer",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Some(Command::InstallDesktop { default }) => desktop_command(true, default),
        Some(Command::UninstallDesktop) => desktop_command(false, false),
        Some(Command::Mcp { no_cache }) => crate::mcp::serve(no_cache),
        Some(Command::Synth(args)) => synth_command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // 2, as for a usage error: the input could not be read or understood.
            eprintln!("nsys-explorer: {message}");
            ExitCode::from(2)
        }
    }
}

/// `synth`: writes a generated trace (or one file a rank) and its truth, and says what.
fn synth_command(args: SynthArgs) -> Result<(), String> {
    let t = Instant::now();
    let out = match (args.out.clone(), &args.split_ranks) {
        (Some(out), _) => out,
        (None, Some(dir)) => dir.join("truth.json"),
        (None, None) => unreachable!("clap requires --out or --split-ranks"),
    };
    parse_kernel_scale(args.scale_kernel.as_deref())
        .and_then(|scale_kernel| {
            let options = synth_options(&args, scale_kernel);
            match &args.split_ranks {
                Some(dir) => synth::generate_split(dir, options).map(|t| {
                    for f in &t.files {
                        println!(
                            "wrote {} (clock offset {} ns, UTC start {})",
                            f.path.display(),
                            f.offset_ns,
                            f.utc_start_ns
                        );
                    }
                    t.run
                }),
                None => synth::generate(&out, options),
            }
        })
        .map(|truth| {
            let written = match &args.split_ranks {
                Some(dir) => format!("{} files in {}", truth.devices.len(), dir.display()),
                None => {
                    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
                    format!("{} ({:.1} MB)", out.display(), size as f64 / 1e6)
                }
            };
            let truth_file = match &args.split_ranks {
                Some(dir) => dir.join("truth.json"),
                None => synth::truth_path(&out),
            };
            println!(
                "wrote {written}: {} kernels, {} API calls, {} NVTX ranges, and {} in {:.1} s",
                truth.tables.get(load::KERNEL).unwrap_or(&0),
                truth.tables.get(load::RUNTIME).unwrap_or(&0),
                truth.nvtx_ranges,
                truth_file.display(),
                t.elapsed().as_secs_f64()
            );
        })
}

/// The generator's options from `synth`'s arguments.
fn synth_options(a: &SynthArgs, scale_kernel: Option<(usize, f64)>) -> SynthOptions {
    SynthOptions {
        preset: a.preset,
        flavour: a.flavour,
        nccl_stream: a.nccl_stream,
        seed: a.seed,
        clean: a.clean,
        scale_kernel,
        no_step_sync: a.no_step_sync,
        ranks: a.ranks,
        no_straggler: a.no_straggler,
        nccl_calls: (!a.no_nccl_nvtx).then_some(!a.no_nccl_blobs),
        straggler_stall: a.straggler_stall,
        straggler_rank: a.straggler_rank,
        straggler_pause_ns: a.straggler_pause,
        steps: a.steps,
        blocks: a.blocks,
        sync_after_collective: a.sync_after_collective,
        checkpoint: !a.no_checkpoint,
        cuda_graphs: a.cuda_graphs,
        host_per_op_ns: a.host_per_op,
        cpu_samples: a.cpu_samples,
        memory_usage: a.memory_usage,
        gpu_metrics: a.gpu_metrics,
        same_pids: a.same_pids,
        dlprof_markers: a.dlprof_markers,
        graph_attention: a.graph_attention,
        small_ops: a.small_ops,
        sync_removed: a.no_collective_sync,
        gradient_all_reduce: a.gradient_all_reduce,
    }
}

fn figures(
    files: &[PathBuf],
    out: Option<PathBuf>,
    formats: &[String],
    iteration: Option<usize>,
    device: Option<DeviceId>,
    iteration_marker: Option<String>,
) -> Result<(), String> {
    use crate::figures::{Format, figure_data, write_figures};
    let formats: Vec<Format> = formats
        .iter()
        .map(|f| Format::parse(f).ok_or_else(|| format!("unknown format {f:?} (png, svg)")))
        .collect::<Result<_, _>>()?;
    let paths = load::many::expand_paths(files)?;
    let options = Options {
        iteration_marker,
        ..Options::default()
    };
    let (trace, overview) = trace_and_overview(&paths, &options)?;
    if let Some(id) = device
        && trace.device(id).is_none()
    {
        let ids: Vec<String> = trace.devices.iter().map(|d| d.id.to_string()).collect();
        return Err(format!("no device {id} (devices: {})", ids.join(", ")));
    }
    let stem = paths[0]
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    // In the current folder, never beside the trace.
    let dir = out.unwrap_or_else(|| PathBuf::from(format!("{stem}-figures")));
    let data = figure_data(&trace, &overview, iteration, device);
    let written = write_figures(&data, &dir, &formats, &crate::figures::NAMES)?;
    for (name, why) in &written.skipped {
        println!("skipped {name}: {why}");
    }
    println!("wrote {} files into {}", written.files.len(), dir.display());
    Ok(())
}

fn critical_path(
    files: &[PathBuf],
    iteration: Option<usize>,
    all: bool,
    top: usize,
    as_json: bool,
    iteration_marker: Option<String>,
) -> Result<(), String> {
    use crate::critical_path::{Graph, report as cp};
    let paths = load::many::expand_paths(files)?;
    let options = Options {
        iteration_marker,
        ..Options::default()
    };
    let (trace, overview) = trace_and_overview(&paths, &options)?;
    let iterations = &overview.iterations;
    let graph = Graph::new(&trace);
    if all {
        let table = cp::run_table(&graph, iterations, top);
        return print_output(
            as_json,
            || cp::run_table_json(&table),
            || cp::run_table_text(&table),
        );
    }
    let path = if iterations.count() == 0 {
        // No iterations: the whole run's path (the text says how to get one iteration's).
        if let Some(k) = iteration {
            return Err(format!(
                "no iteration {k}: no iterations found in {} (give --iteration-marker TEXT, or `heuristic`)",
                paths[0].display()
            ));
        }
        graph.run_path()
    } else {
        let k = match iteration.or(iterations.slowest_index) {
            Some(k) if k < iterations.count() => k,
            Some(k) => {
                return Err(format!(
                    "no iteration {k}: the trace has {} (0 to {})",
                    iterations.count(),
                    iterations.count() - 1
                ));
            }
            None => iterations.count() / 2,
        };
        graph.path(iterations, k)
    };
    let path =
        path.ok_or_else(|| "no kernel ran on any GPU, so there is no critical path".to_string())?;
    let summary = cp::summarise_path(&graph, path);
    print_output(
        as_json,
        || cp::path_json(&trace, &summary),
        || cp::path_text(&trace, &summary),
    )
}

fn export_tables(
    files: &[PathBuf],
    out: &Path,
    format: crate::table_files::Format,
    min_gap_ns: i64,
    iteration_marker: Option<String>,
) -> Result<(), String> {
    let paths = load::many::expand_paths(files)?;
    let options = Options {
        iteration_marker,
        ..Options::default()
    };
    for path in &paths {
        let (trace, overview) = trace_and_overview(std::slice::from_ref(path), &options)?;
        let written =
            crate::table_files::export_tables(&trace, &overview, path, out, format, min_gap_ns)?;
        for w in written {
            println!("wrote {}", w.display());
        }
    }
    Ok(())
}

/// The session run on `paths` (the cache, an `.nsys-rep`'s export, several files as one)
/// up to `until`, quietly.
fn run_until(
    paths: &[PathBuf],
    options: &Options,
    until: session::Until,
) -> Result<session::Ran, String> {
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let source = session::Source::of(paths)?;
    session::run(&source, options, until, &session::Quiet, &cancel, true).map_err(|e| e.to_string())
}

/// The trace of `paths` opened through the session, no analysis run.
fn opened_trace(
    paths: &[PathBuf],
    options: &Options,
) -> Result<std::sync::Arc<crate::trace::Trace>, String> {
    Ok(run_until(paths, options, session::Until::Opened)?
        .opened
        .trace)
}

/// The trace and its analyses as `report` works them out (from the cache when it has them).
fn trace_and_overview(
    paths: &[PathBuf],
    options: &Options,
) -> Result<
    (
        std::sync::Arc<crate::trace::Trace>,
        std::sync::Arc<crate::overview::Overview>,
    ),
    String,
> {
    let ran = run_until(paths, options, session::Until::Analysed)?;
    let overview = ran.overview.expect("not cancelled");
    Ok((ran.opened.trace, overview))
}

/// `summarize`: each export's summary (or its tables as Parquet) into `out`.
fn summarize(
    files: &[PathBuf],
    out: Option<&Path>,
    format: args::SummaryFormat,
    options: &Options,
) -> Result<(), String> {
    let dir = out.unwrap_or(Path::new("."));
    let exports = crate::load::many::expand_paths(files)?;
    // Every name is settled before anything is written: two ranks never share a file.
    let names = crate::job::summary_names(&exports)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (path, stem) in exports.iter().zip(&names) {
        let t = Instant::now();
        let summary = crate::session::summarize_export(path, options, true)?;
        let export_size = summary.source.size.max(1);
        let (written, bytes) = match format {
            args::SummaryFormat::Summary => {
                let to = dir.join(format!("{stem}.summary"));
                let bytes = crate::job::write_summary(&summary, &to)?;
                (to.display().to_string(), bytes)
            }
            args::SummaryFormat::Parquet => {
                let mut bytes = 0;
                for name in crate::job::tables::NAMES {
                    let table = crate::job::tables::table(&summary, name).expect("a known table");
                    let batch = crate::table_files::record_batch(table, stem)?;
                    let to = dir.join(format!("{stem}.{name}.parquet"));
                    crate::table_files::write(&batch, &to, crate::table_files::Format::Parquet)?;
                    bytes += std::fs::metadata(&to).map_or(0, |m| m.len());
                }
                (
                    dir.join(format!("{stem}.*.parquet")).display().to_string(),
                    bytes,
                )
            }
        };
        println!(
            "wrote {written}: {} collectives, {} bytes ({:.2} % of the export) in {:.1} s",
            summary.collectives(),
            bytes,
            100.0 * bytes as f64 / export_size as f64,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn report(files: &[PathBuf], as_json: bool, options: &Options) -> Result<(), String> {
    print!("{}", session::report_output(files, as_json, options)?);
    Ok(())
}

/// `NAME=F` of `synth --scale-kernel`: the generated kernel NAME names, and F.
fn parse_kernel_scale(arg: Option<&str>) -> Result<Option<(usize, f64)>, String> {
    let Some(arg) = arg else { return Ok(None) };
    let (name, factor) = arg
        .rsplit_once('=')
        .ok_or_else(|| format!("--scale-kernel wants NAME=FACTOR, not `{arg}`"))?;
    let factor: f64 = factor
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f > 0.0)
        .ok_or_else(|| format!("--scale-kernel: `{factor}` is not a positive number"))?;
    let kernel = synth::kernel_index(name).ok_or_else(|| {
        let names: Vec<&str> = synth::program::KERNELS.iter().map(|k| k.short).collect();
        format!(
            "--scale-kernel: no generated kernel is called `{name}` (they are: {})",
            names.join(", ")
        )
    })?;
    Ok(Some((kernel, factor)))
}

fn diff(
    before: &Path,
    after: &Path,
    as_json: bool,
    iteration_marker: Option<String>,
    top: usize,
    fail_if_slower: Option<f64>,
) -> Result<Option<crate::compare::gate::Verdict>, String> {
    use crate::compare::{self, Run};
    let options = Options {
        iteration_marker,
        top,
        ..Default::default()
    };
    // Both files load and are analysed at once, each on half the cores' work.
    let analyse = |path: &Path| crate::session::analysed(&[path.to_path_buf()], &options);
    let (b, a) = rayon::join(|| analyse(before), || analyse(after));
    let ((bt, bo), (at, ao)) = (b?, a?);
    let before_run = Run {
        path: before,
        trace: &bt,
        overview: &bo,
    };
    let after_run = Run {
        path: after,
        trace: &at,
        overview: &ao,
    };
    let c = compare::compare(&before_run, &after_run);
    let gate = fail_if_slower
        .filter(|p| p.is_finite() && *p >= 0.0)
        .map(|p| compare::gate::gate(&before_run, &after_run, p));
    if fail_if_slower.is_some() && gate.is_none() {
        return Err("--fail-if-slower wants a percentage of 0 or more".into());
    }
    print_output(
        as_json,
        || {
            let mut v = compare::report::diff_json(&before_run, &after_run, &c);
            if let Some(g) = &gate {
                v["gate"] = serde_json::to_value(g).unwrap_or_default();
            }
            v
        },
        || {
            let mut text = compare::report::diff_text(&before_run, &after_run, &c, top);
            if let Some(g) = &gate {
                text += &format!(
                    "\nGate (--fail-if-slower {}): {}\n",
                    g.threshold_pct, g.reason
                );
            }
            text
        },
    )?;
    Ok(gate.map(|g| g.verdict))
}

/// `--scale-kernel REGEX=F` of `what-if`.
/// The change flags of `what-if`, as given.
#[derive(clap::Args, Debug)]
pub struct ChangeArgs {
    /// Make the synchronising calls whose name contains NAME non-blocking (repeatable).
    #[arg(long, value_name = "NAME")]
    remove_sync: Vec<String>,
    /// Kernels whose name matches REGEX take F times as long (repeatable), e.g.
    /// flash_fwd=0.5.
    #[arg(long, value_name = "REGEX=F")]
    scale_kernel: Vec<String>,
    /// NCCL kernels on a stream of their own, the data dependencies kept: each
    /// collective waits for the compute launched before it, and its result is needed by
    /// the next kernel launched after it (an all-to-all's or all-gather's output is the
    /// next op's input).
    #[arg(long)]
    nccl_own_stream: bool,
    /// With --nccl-own-stream: a collective's result is first needed by the compute
    /// launched after the next collective (bucketed gradient all-reduce, DDP/FSDP).
    #[arg(
        long,
        requires = "nccl_own_stream",
        conflicts_with = "nccl_no_dependencies"
    )]
    nccl_late_consumers: bool,
    /// With --nccl-own-stream: keep no dependency between NCCL and compute (the upper
    /// bound of the overlap gained).
    #[arg(long, requires = "nccl_own_stream")]
    nccl_no_dependencies: bool,
    /// Remove the CPU time between calls inside NVTX ranges whose text contains TEXT
    /// (host work), keeping the calls (repeatable).
    #[arg(long, value_name = "TEXT")]
    remove_cpu: Vec<String>,
    /// Remove a host stall: on the thread with this tid, the calls starting between the
    /// two times (ns, the trace's clock) take no time and the CPU time between them is
    /// gone (repeatable). In a job of several files whose tids repeat, FILE (the file's
    /// place among them, from 0) names the thread's file.
    #[arg(long, value_name = "[FILE:]TID:START_NS:END_NS")]
    remove_stall: Vec<String>,
    /// Cut the launching thread's CPU time during every host-bound gap with this
    /// signature (`before → after in range [host_bound]`, as `report` lists patterns).
    #[arg(long, value_name = "SIGNATURE")]
    cut_host_gaps: Vec<String>,
    /// Copies whose name or NVTX range at launch contains TEXT take no GPU time
    /// (repeatable).
    #[arg(long, value_name = "TEXT")]
    drop_copies: Vec<String>,
    /// Replay the NVTX ranges whose text contains TEXT as CUDA graphs: each one's kernels
    /// released by its first launch, the later launch calls and the CPU time after the
    /// first gone (assumes it captures as it is: no sync inside) (repeatable).
    #[arg(long, value_name = "TEXT")]
    capture_graph: Vec<String>,
}

fn what_if_change(a: ChangeArgs) -> Result<crate::whatif::Change, String> {
    use crate::whatif::NcclDependencies;
    crate::whatif::ChangeSpec {
        remove_sync: a.remove_sync,
        scale_kernel: a.scale_kernel,
        nccl_own_stream: a.nccl_own_stream,
        nccl_dependencies: if a.nccl_no_dependencies {
            NcclDependencies::Unbounded
        } else if a.nccl_late_consumers {
            NcclDependencies::AfterNextCollective
        } else {
            NcclDependencies::NextKernel
        },
        remove_cpu: a.remove_cpu,
        remove_stall: a.remove_stall,
        cut_host_gaps: a.cut_host_gaps,
        drop_copies: a.drop_copies,
        capture_graph: a.capture_graph,
    }
    .parse()
    .map_err(|e| match e.strip_prefix("no change to replay") {
        Some(_) => "what-if needs a change: --remove-sync NAME, --scale-kernel REGEX=F, --nccl-own-stream, --remove-cpu TEXT, --remove-stall TID:START_NS:END_NS, --cut-host-gaps SIGNATURE, --drop-copies TEXT or --capture-graph TEXT".to_string(),
        None => e,
    })
}

fn what_if(
    files: &[PathBuf],
    change: crate::whatif::Change,
    as_json: bool,
    iteration_marker: Option<String>,
) -> Result<(), String> {
    use crate::whatif;
    let options = Options {
        iteration_marker,
        ..Default::default()
    };
    let trace = opened_trace(files, &options)?;
    for span in &change.remove_stalls {
        span.check(&trace)
            .map_err(|e| format!("--remove-stall {e}"))?;
    }
    // Only what the outcome is read from, not every analysis: the replayed copy of the
    // trace is held beside the measured run.
    let measured = crate::overview::run_measures(&trace, &options);
    let w = whatif::report::what_if_measured(&trace, measured, &change, &options);
    let name = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    print_output(
        as_json,
        || whatif::report::what_if_json(&trace, &name, &change, &w),
        || whatif::report::what_if_text(&trace, &name, &w),
    )?;
    Ok(())
}

/// Prints `json()` pretty, or `text()`, as the command was asked.
fn print_output(
    as_json: bool,
    json: impl FnOnce() -> serde_json::Value,
    text: impl FnOnce() -> String,
) -> Result<(), String> {
    if as_json {
        let text = serde_json::to_string_pretty(&json()).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", text());
    }
    Ok(())
}

/// The manual page, from the same clap definitions as `--help`.
pub fn man_page() -> Result<Vec<u8>, String> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

fn desktop_command(install: bool, make_default: bool) -> Result<(), String> {
    use crate::desktop;
    let dirs = desktop::XdgDirs::from_env()?;
    let outcome = if install {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
        desktop::install(&dirs, &exe, make_default, &man_page()?)?
    } else {
        desktop::uninstall(&dirs)?
    };
    let verb = if install { "wrote" } else { "removed" };
    for f in &outcome.files {
        println!("{verb} {}", f.display());
    }
    for n in &outcome.notes {
        println!("note: {n}");
    }
    if install {
        println!(
            "installed {}{}; undo with `nsys-explorer uninstall-desktop`",
            desktop::DESKTOP_ID,
            if make_default {
                " as the default for .sqlite and .nsys-rep"
            } else {
                ""
            }
        );
    }
    Ok(())
}
