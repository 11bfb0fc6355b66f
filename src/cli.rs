//! Command line: `nsys-explorer [FILE]` opens the GUI; `report`, `bench-load` and `synth`
//! run without a window. Errors go to stderr with a non-zero exit.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::load::{self, LoadReport};
use crate::synth::{self, Flavour, NcclStream, Preset, SynthOptions};
use crate::trace::{OpKind, Trace};

#[derive(Parser)]
#[command(
    name = "nsys-explorer",
    version,
    about = "Explore Nsight Systems SQLite exports"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// An `nsys export --type sqlite` file to open in the window (none: start page).
    pub file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Print the load report and per-device counts of FILE.
    Report {
        file: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Time a full load of FILE, phase by phase, against a plain sqlite3 scan.
    BenchLoad { file: PathBuf },
    /// Write a generated Wan2.1-like 4-GPU trace (and FILE.truth.json beside it).
    Synth {
        #[arg(long, value_enum, default_value = "tiny")]
        preset: Preset,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, value_enum, default_value = "2024")]
        flavour: Flavour,
        #[arg(long, value_enum, default_value = "same")]
        nccl_stream: NcclStream,
        #[arg(long, default_value_t = 311)]
        seed: u64,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => crate::ui::run(cli.file).map_err(|e| format!("cannot open the window: {e}")),
        Some(Command::Report { file, json }) => report(&file, json),
        Some(Command::BenchLoad { file }) => bench_load(&file),
        Some(Command::Synth {
            preset,
            out,
            flavour,
            nccl_stream,
            seed,
        }) => {
            let t = Instant::now();
            synth::generate(&out, SynthOptions { preset, flavour, nccl_stream, seed }).map(|truth| {
                let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
                println!(
                    "wrote {} ({:.1} MB, {} kernels, {} API calls, {} NVTX ranges) and {} in {:.1} s",
                    out.display(),
                    size as f64 / 1e6,
                    truth.tables.get(load::KERNEL).unwrap_or(&0),
                    truth.tables.get(load::RUNTIME).unwrap_or(&0),
                    truth.nvtx_ranges,
                    synth::truth_path(&out).display(),
                    t.elapsed().as_secs_f64()
                );
            })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("nsys-explorer: {message}");
            ExitCode::FAILURE
        }
    }
}

fn report(file: &Path, as_json: bool) -> Result<(), String> {
    let (trace, report) = load::load(file).map_err(|e| e.to_string())?;
    if as_json {
        let text = serde_json::to_string_pretty(&report_json(&trace, &report))
            .map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", report_text(&trace, &report));
    }
    Ok(())
}

/// The `report --json` document (keys documented in the README).
pub fn report_json(trace: &Trace, report: &LoadReport) -> serde_json::Value {
    let devices: Vec<_> = trace
        .devices
        .iter()
        .map(|d| {
            json!({
                "id": d.id,
                "name": d.name,
                "kernels": d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl),
                "nccl_kernels": d.count_of(OpKind::Nccl),
                "memcpys": d.count_of(OpKind::Memcpy),
                "memsets": d.count_of(OpKind::Memset),
                "streams": d.streams.len(),
                "window_ns": d.kernel_window().map(|(s, e)| [s, e]),
            })
        })
        .collect();
    json!({
        "file": report.file,
        "nsys_version": trace.info.nsys_version,
        "schema_version": trace.info.schema_version,
        "load": {
            "seconds": report.seconds,
            "file_bytes": report.file_bytes,
            "tables": report.tables,
            "missing_tables": report.missing_tables,
            "missing_effects": report.missing_effects,
            "skipped_rows": report.skipped_rows,
            "notes": report.notes,
        },
        "devices": devices,
    })
}

pub fn report_text(trace: &Trace, report: &LoadReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let version = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let _ = writeln!(s, "{}", report.file.display());
    let _ = writeln!(
        s,
        "  nsys {} (schema {}), {:.1} MB, loaded in {:.2} s",
        version(&trace.info.nsys_version),
        version(&trace.info.schema_version),
        report.file_bytes as f64 / 1e6,
        report.seconds
    );
    let _ = writeln!(s, "Rows read:");
    for (table, rows) in &report.tables {
        let _ = writeln!(s, "  {table:<38} {rows:>10}");
    }
    if !report.missing_tables.is_empty() {
        let _ = writeln!(s, "Tables absent:");
        for table in &report.missing_tables {
            let effect = report
                .missing_effects
                .get(table)
                .map(String::as_str)
                .unwrap_or("");
            let _ = writeln!(s, "  {table:<38} no {effect}");
        }
    }
    if !report.skipped_rows.is_empty() {
        let _ = writeln!(s, "Rows skipped:");
        for skip in &report.skipped_rows {
            let _ = writeln!(s, "  {:<38} {:>10}  {}", skip.table, skip.rows, skip.reason);
        }
    }
    for note in &report.notes {
        let _ = writeln!(s, "Note: {note}");
    }
    let _ = writeln!(s, "Devices:");
    for d in &trace.devices {
        let window = d
            .kernel_window()
            .map(|(a, b)| format!("{a} .. {b} ns ({:.3} s)", (b - a) as f64 / 1e9))
            .unwrap_or_else(|| "no kernels".into());
        let _ = writeln!(
            s,
            "  GPU {} {}: {} kernels ({} NCCL), {} memcpys, {} memsets on {} streams; window {}",
            d.id,
            d.name,
            d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl),
            d.count_of(OpKind::Nccl),
            d.count_of(OpKind::Memcpy),
            d.count_of(OpKind::Memset),
            d.streams.len(),
            window
        );
    }
    s
}

fn bench_load(file: &Path) -> Result<(), String> {
    // Read the file once so both contenders start from a warm page cache (streamed, so
    // that the peak RSS printed below is the load's own).
    let mut reader = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(|e| format!("{}: {e}", file.display()))?;
    let baseline = crate::bench::sqlite3_scan(file);

    let t = Instant::now();
    let (trace, report) = load::load(file).map_err(|e| e.to_string())?;
    let seconds = t.elapsed().as_secs_f64();
    let rows: u64 = report.tables.values().sum();
    println!(
        "file: {} ({:.1} MB)",
        file.display(),
        report.file_bytes as f64 / 1e6
    );
    println!("threads: {}", rayon::current_num_threads());
    for (phase, secs) in &report.phases {
        println!("phase {phase:<22} {secs:>8.3} s");
    }
    println!("load total             {seconds:>8.3} s");
    println!(
        "rows read              {rows:>10}  ({:.1} M rows/s)",
        rows as f64 / seconds / 1e6
    );
    let events = trace.event_count();
    println!(
        "events in model        {events:>10}  ({} kernels+memory ops, {} API calls, {} NVTX ranges)",
        trace.gpu_op_count(),
        trace.api_call_count(),
        trace.nvtx_range_count()
    );
    println!(
        "model size             {:>8.1} MB  ({:.1} bytes/event)",
        trace.heap_bytes() as f64 / 1e6,
        trace.heap_bytes() as f64 / events.max(1) as f64
    );
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS               {:>8.1} MB", peak as f64 / 1e6);
    }
    match baseline {
        Ok(b) => println!(
            "sqlite3 scan of the same columns of kernels, API calls and NVTX: {:.3} s ({})\nratio load/sqlite3     {:>8.2}",
            b.seconds,
            b.how,
            seconds / b.seconds
        ),
        Err(e) => println!("sqlite3 baseline not run: {e}"),
    }
    Ok(())
}
