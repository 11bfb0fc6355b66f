//! `bench report`: `report FILE --json` end to end in a process of its own, cold and warm,
//! against the narrow sqlite3 scan.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::window::window_reopen;
use super::{BenchCache, sqlite3_narrow_scan, sqlite3_scan};
use crate::overview::Options;

/// `report FILE --json` in a process of its own, as a user runs it (wall seconds).
fn report_process(file: &Path, cache_home: &Path, extra: &[&str]) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let out = Command::new(exe)
        .arg("report")
        .arg("--json")
        .args(extra)
        .arg(file)
        .env("XDG_CACHE_HOME", cache_home)
        .output()
        .map_err(|e| e.to_string())?;
    let seconds = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(seconds)
}

/// The second `report`: cold once through the cache (which keeps the model and the
/// answer), then in fresh processes: the same report (the answer kept), and one with other
/// options (the model kept, the analyses run again).
fn warm_report(file: &Path) -> Result<(), String> {
    let dir = BenchCache::new()?;
    let t = Instant::now();
    crate::session::report_output(
        std::slice::from_ref(&file.to_path_buf()),
        true,
        &Options::default(),
    )?;
    let cold = t.elapsed().as_secs_f64();
    let warm: Vec<f64> = (0..3)
        .map(|_| report_process(file, &dir.0, &[]))
        .collect::<Result<_, _>>()?;
    let model_only = report_process(file, &dir.0, &["--top", "11"])?;
    println!("through the cache: cold {cold:.3} s (the model and the answer written)");
    println!(
        "warm report --json (new process, the answer kept): {} s",
        warm.iter()
            .map(|s| format!("{s:.3}"))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    println!(
        "warm report --json --top 11 (new process, the model kept, analyses and findings run): {model_only:.3} s"
    );
    window_reopen(file)
}

/// `report FILE --json` end to end — load, every analysis, the JSON written — against one
/// sqlite3 process scanning the same columns of the three big tables. The two alternate,
/// sqlite3 / report / sqlite3 / report / sqlite3, and each report is set against the mean of
/// the scans on either side of it: this machine's speed changes from one moment to the
/// next, and a ratio of runs far apart would measure that.
pub fn bench_report(file: &Path) -> Result<(), String> {
    let mut reader = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    std::io::copy(&mut reader, &mut std::io::sink())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    println!("file: {}", file.display());
    println!("threads: {}", rayon::current_num_threads());
    let mut scans = vec![sqlite3_scan(file)?.seconds];
    let mut narrow = vec![sqlite3_narrow_scan(file)?.seconds];
    let (mut ratios, mut narrow_ratios) = (Vec::new(), Vec::new());
    for round in 1..=2 {
        let run = cold_report_process(file)?;
        let seconds = run.seconds;
        scans.push(sqlite3_scan(file)?.seconds);
        narrow.push(sqlite3_narrow_scan(file)?.seconds);
        let around = (scans[round - 1] + scans[round]) / 2.0;
        let narrow_around = (narrow[round - 1] + narrow[round]) / 2.0;
        ratios.push(seconds / around);
        narrow_ratios.push(seconds / narrow_around);
        let phase = |name: &str| {
            run.phase_ends
                .iter()
                .find(|p| p.0 == name)
                .map_or(0.0, |p| p.1)
        };
        let (loaded, analysed, found) = (
            phase("sort, nest and link"),
            phase("analyses (all)"),
            phase("findings: replays"),
        );
        println!(
            "round {round}: load {loaded:.3} s, analyses {:.3} s, findings ({} replays in {} walks) {:.3} s, the rest (critical path, JSON, exit) {:.3} s, report --json {seconds:.3} s; sqlite3 scans around it {:.3} / {:.3} s (narrow {:.3} / {:.3} s); ratio {:.2} (narrow {:.2}); load alone to the narrow scan {:.2}",
            analysed - loaded,
            run.replays,
            run.walks,
            found - analysed,
            seconds - found,
            scans[round - 1],
            scans[round],
            narrow[round - 1],
            narrow[round],
            seconds / around,
            seconds / narrow_around,
            loaded / narrow_around
        );
    }
    println!(
        "ratio report/narrow sqlite3 scan {:.2} (best), {:.2} (worst)",
        narrow_ratios.iter().copied().fold(f64::MAX, f64::min),
        narrow_ratios.iter().copied().fold(0.0, f64::max)
    );
    println!(
        "ratio report/sqlite3   {:.2} (best of {}), {:.2} (worst)",
        ratios.iter().copied().fold(f64::MAX, f64::min),
        ratios.len(),
        ratios.iter().copied().fold(0.0, f64::max)
    );
    if let Some(peak) = crate::memory::children_peak_rss_bytes() {
        println!(
            "peak RSS (cold, the report's process) {:>8.1} MB ({:.2} GiB)",
            peak as f64 / 1e6,
            peak as f64 / (1u64 << 30) as f64
        );
    }
    warm_report(file)
}

/// One cold `report FILE --json --no-cache` as a user runs it, in a process of its own.
pub(super) struct ReportRun {
    pub(super) seconds: f64,
    /// Its phases' ends (seconds from its start), from its scope trace.
    phase_ends: Vec<(String, f64)>,
    /// The replays the findings ran (each change's, spans only), and the walks of the
    /// trace they took (a few changes a walk).
    replays: usize,
    walks: usize,
}

pub(super) fn cold_report_process(file: &Path) -> Result<ReportRun, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program: {e}"))?;
    let t = Instant::now();
    let output = Command::new(exe)
        .arg("report")
        .arg(file)
        .args(["--json", "--no-cache"])
        .env("NSYS_EXPLORER_SCOPES", "1")
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run report: {e}"))?;
    let seconds = t.elapsed().as_secs_f64();
    let trace = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("report failed: {}", trace.trim()));
    }
    // Lines as `profile::trace_line` writes them: "T s … - NAME" at a scope's end.
    let phase_ends = trace
        .lines()
        .filter_map(|line| {
            let (time, rest) = line.trim_start().split_once(" s ")?;
            let (_, name) = rest.split_once(" - ")?;
            Some((name.trim().to_string(), time.parse().ok()?))
        })
        .collect();
    let count = |name: &str| {
        trace
            .lines()
            .filter(|l| l.trim_end().ends_with(&format!("- {name}")))
            .count()
    };
    Ok(ReportRun {
        seconds,
        phase_ends,
        replays: count("what-if replay (spans)"),
        walks: count("what-if walk (spans)"),
    })
}
