//! Benchmarks that print figures: `bench load` (against one `sqlite3` process scanning the
//! same columns of the three big tables) and `bench analysis`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::analysis;
use crate::load;
use crate::overview::Options;

mod frames;
pub use frames::*;

pub struct Baseline {
    pub seconds: f64,
    pub how: String,
}

/// Sums every column the loader reads, so SQLite must decode each of them.
const SCAN_SQL: &str = "SELECT count(*), total(start), total(end), total(deviceId), total(streamId), total(correlationId), total(globalPid), total(shortName), total(demangledName), total(gridX), total(gridY), total(gridZ), total(blockX), total(blockY), total(blockZ), total(registersPerThread), total(staticSharedMemory), total(dynamicSharedMemory) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT count(*), total(start), total(end), total(eventClass), total(globalTid), total(correlationId), total(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT count(*), total(start), total(end), total(eventType), total(length(text)), total(textId), total(globalTid), total(color), total(domainId) FROM NVTX_EVENTS;";

/// Only the columns the first answer needs (times, device, stream, name ids, correlation
/// id, thread, NVTX text): the "narrow" baseline, what a reader that leaves launch
/// configurations for later would have to read.
const NARROW_SQL: &str = "SELECT count(*), total(start), total(end), total(deviceId), total(streamId), total(correlationId), total(globalPid), total(shortName) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT count(*), total(start), total(end), total(globalTid), total(correlationId), total(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT count(*), total(start), total(end), total(length(text)), total(textId), total(globalTid) FROM NVTX_EVENTS;";

/// The process's peak RSS so far, as a benchmark's last line.
fn print_peak_rss() {
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS               {:>8.1} MB", peak as f64 / 1e6);
    }
}

pub fn sqlite3_scan(file: &Path) -> Result<Baseline, String> {
    sqlite3_run(file, SCAN_SQL)
}

/// [`sqlite3_scan`] of only the columns the first answer needs.
pub fn sqlite3_narrow_scan(file: &Path) -> Result<Baseline, String> {
    sqlite3_run(file, NARROW_SQL)
}

fn sqlite3_run(file: &Path, sql: &str) -> Result<Baseline, String> {
    let uri = format!("file:{}?immutable=1", file.display());
    let t = Instant::now();
    let output = Command::new("sqlite3")
        .arg("-readonly")
        .arg(&uri)
        .arg(sql)
        .output()
        .map_err(|e| {
            format!("cannot run sqlite3 ({e}); install it with `apt-get install sqlite3`")
        })?;
    let seconds = t.elapsed().as_secs_f64();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    Ok(Baseline {
        seconds,
        how: "sqlite3 CLI, one process".into(),
    })
}

pub fn bench_load(file: &Path) -> Result<(), String> {
    // Read the file once so both contenders start from a warm page cache (streamed, so
    // that the peak RSS printed below is the load's own).
    let mut reader = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    std::io::copy(&mut reader, &mut std::io::sink())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let baseline = crate::bench::sqlite3_scan(file);
    let narrow = crate::bench::sqlite3_narrow_scan(file);

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
    if !trace.gpu_metrics.is_empty() {
        let samples = report.tables.get("GPU_METRICS").copied().unwrap_or(0);
        let bytes: usize = trace.gpu_metrics.iter().map(|m| m.heap_bytes()).sum();
        println!(
            "GPU metrics            {samples} samples on {} GPUs: {:.1} MB, {:.2} bytes a sample (a time per instant, each value in the narrowest type that holds it)",
            trace.gpu_metrics.len(),
            bytes as f64 / 1e6,
            bytes as f64 / samples.max(1) as f64
        );
    }
    // The call stacks come after the load (its trace is handed over without them).
    let waited = Instant::now();
    let call_stacks = trace.stacks();
    let waited = waited.elapsed().as_secs_f64();
    if !call_stacks.samples.is_empty() || !call_stacks.stacks.is_empty() {
        let n = call_stacks.samples.len();
        let tree = &call_stacks.stacks;
        println!(
            "call stacks            {n} CPU samples ({} bytes each) + a tree of {} frames and {} stacks ({:.1} MB): {:.1} bytes a sample in all",
            crate::trace::CpuSamples::BYTES_PER_SAMPLE,
            tree.frame_symbol.len(),
            tree.node_frame.len(),
            tree.bytes() as f64 / 1e6,
            call_stacks.bytes() as f64 / n.max(1) as f64
        );
        println!(
            "call stacks read       {:>8.3} s  after the load, on a thread of their own ({:.3} s more until they were in: the trace complete at {:.3} s)",
            call_stacks.read.seconds,
            waited,
            seconds + waited
        );
    }
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
    if let Ok(b) = narrow {
        println!(
            "sqlite3 scan of only the columns the first answer needs: {:.3} s\nratio load/narrow scan {:>8.2}",
            b.seconds,
            seconds / b.seconds
        );
    }
    warm_load(file, &trace, &report)?;
    // The GUI's staged load: when the first timeline (GPU side) can be drawn. Run after
    // the figures above, since its GPU-side copy raises the peak RSS.
    drop(trace);
    let t = Instant::now();
    let gpu_ready = std::sync::Mutex::new(0.0);
    let on_gpu = |_: crate::trace::Trace| *gpu_ready.lock().unwrap() = t.elapsed().as_secs_f64();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    load::load_staged(file, &|_| {}, &cancel, Some(&on_gpu)).map_err(|e| e.to_string())?;
    println!(
        "staged load (GUI)      GPU side ready at {:.3} s, whole trace at {:.3} s",
        gpu_ready.into_inner().unwrap(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A folder for a benchmark's cache, removed when dropped (the user's cache is left alone).
struct BenchCache(std::path::PathBuf);

impl BenchCache {
    /// The parent to give a child process as `XDG_CACHE_HOME`; this process uses it too.
    fn new() -> Result<Self, String> {
        let root = std::env::temp_dir().join(format!("nsys-explorer-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        crate::cache::set_folder(&root.join("nsys-explorer"));
        Ok(Self(root))
    }
}

impl Drop for BenchCache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The re-open: the model written to the cache, then read back.
fn warm_load(
    file: &Path,
    trace: &crate::trace::Trace,
    report: &load::LoadReport,
) -> Result<(), String> {
    let dir = BenchCache::new()?;
    let key = crate::cache::TraceKey::of(file).ok_or("the cache is off")?;
    let t = Instant::now();
    crate::cache::store_model(&key, trace, report);
    let written = t.elapsed().as_secs_f64();
    let bytes: u64 = std::fs::read_dir(dir.0.join("nsys-explorer"))
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    // Three reads: the first may meet the write's pages still going to disk.
    let mut reads = Vec::new();
    let mut events = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let back =
            crate::cache::read_model(&key).ok_or("the model did not come back from the cache")?;
        reads.push(t.elapsed().as_secs_f64());
        events = back.0.event_count();
        if reads.len() == 3 {
            let t = Instant::now();
            let timeline = crate::ui::timeline::Timeline::new(&back.0);
            std::hint::black_box(&timeline);
            println!(
                "timeline indexes       {:>8.3} s  (what the window builds before it draws)",
                t.elapsed().as_secs_f64()
            );
        }
    }
    let read = reads.iter().copied().fold(f64::MAX, f64::min);
    println!(
        "cache write            {written:>8.3} s  ({:.1} MB, {:.0} % of the file)",
        bytes as f64 / 1e6,
        100.0 * bytes as f64 / report.file_bytes.max(1) as f64
    );
    println!(
        "re-open from the cache {read:>8.3} s  (best of {}: {}; {events} events; {:.0}x faster than the load)",
        reads.len(),
        reads
            .iter()
            .map(|s| format!("{s:.3}"))
            .collect::<Vec<_>>()
            .join(" / "),
        report.seconds / read
    );
    Ok(())
}

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

/// `bench reopen`: a cold open through a cache of its own, then the window's re-open from
/// it three times.
pub fn bench_reopen(file: &Path) -> Result<(), String> {
    let _dir = BenchCache::new()?;
    let t = Instant::now();
    crate::session::report_output(
        std::slice::from_ref(&file.to_path_buf()),
        true,
        &Options::default(),
    )?;
    window_reopen(file)?;
    println!(
        "cold open through the cache: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    for _ in 0..3 {
        window_reopen(file)?;
    }
    println!("scopes of the last re-open:");
    for s in crate::profile::snapshot() {
        println!("  {:<40} {:>8.3} s", s.name, s.last_ns as f64 / 1e9);
    }
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS {:.1} MB", peak as f64 / 1e6);
    }
    Ok(())
}

/// The window's re-open, in this process, from the cache the caller filled.
fn window_reopen(file: &Path) -> Result<(), String> {
    let times = window_path(file)?;
    println!("the window's re-open (in process): {times}");
    Ok(())
}

/// The window's own path to its findings — the load job it runs, the same stages, no
/// frame drawn — each message's time since the start.
pub struct WindowTimes {
    pub gpu_ready: Option<f64>,
    pub whole_trace: f64,
    pub analysed: f64,
    pub findings: f64,
    pub found: usize,
}

impl std::fmt::Display for WindowTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(t) = self.gpu_ready {
            write!(f, "GPU rows {t:.3} s, ")?;
        }
        write!(
            f,
            "whole trace with its timeline {:.3} s, analyses {:.3} s, {} findings ranked {:.3} s",
            self.whole_trace, self.analysed, self.found, self.findings
        )
    }
}

/// Runs the window's load of `file` (its worker, polled as a frame would) to the end.
pub fn window_path(file: &Path) -> Result<WindowTimes, String> {
    use crate::ui::load_job::Message;
    let t = Instant::now();
    let job = crate::ui::loading::spawn_load(crate::session::Source::One(file.to_path_buf()), None);
    let mut times = WindowTimes {
        gpu_ready: None,
        whole_trace: 0.0,
        analysed: 0.0,
        findings: 0.0,
        found: 0,
    };
    loop {
        let Some(m) = job.poll() else {
            std::thread::sleep(std::time::Duration::from_millis(2));
            continue;
        };
        let now = t.elapsed().as_secs_f64();
        match m {
            Message::GpuReady(_) => times.gpu_ready = Some(now),
            Message::Done(result) => {
                result.map_err(|e| e.to_string())?;
                times.whole_trace = now;
            }
            Message::Analysed(_) => times.analysed = now,
            Message::AnalysesCancelled => return Err("analyses cancelled".into()),
            Message::Ranked(found) => {
                times.findings = now;
                times.found = found.len();
                return Ok(times);
            }
            _ => {}
        }
    }
}

/// `bench window`: the window's time to its findings on a cold open (no cache) against
/// `report --json --no-cache` in a fresh process, alternated, then a re-open from the
/// cache: what issue 69 measures, without drawing.
pub fn bench_window(file: &Path) -> Result<(), String> {
    println!("file: {}", file.display());
    let mut ratios = Vec::new();
    for round in 1..=2 {
        let report = cold_report_process(file)?.seconds;
        // Cold, as the report: nothing read from the cache nor kept in it.
        crate::cache::disable();
        let window = window_path(file)?;
        ratios.push(window.findings / report);
        println!(
            "round {round}: report --json --no-cache {report:.3} s; the window cold: {window} ({:.2}× the report)",
            window.findings / report
        );
    }
    let _dir = BenchCache::new()?;
    window_path(file)?;
    let reopen = window_path(file)?;
    println!("the window's re-open from the cache: {reopen}");
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS {:.1} MB", peak as f64 / 1e6);
    }
    Ok(())
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
struct ReportRun {
    seconds: f64,
    /// Its phases' ends (seconds from its start), from its scope trace.
    phase_ends: Vec<(String, f64)>,
    /// The replays the findings ran (each change's, spans only), and the walks of the
    /// trace they took (a few changes a walk).
    replays: usize,
    walks: usize,
}

fn cold_report_process(file: &Path) -> Result<ReportRun, String> {
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

/// Loads FILE, then times each analysis of all devices (best of 3 runs) and all together.
pub fn bench_analysis(file: &Path) -> Result<(), String> {
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let options = Options::default();
    let best_of_3 = |f: &dyn Fn()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let devices: Vec<_> = trace.devices.iter().collect();
    let windows: Vec<_> = devices
        .iter()
        .filter_map(|d| analysis::intervals::device_window(d))
        .collect();
    println!(
        "file: {} ({} kernels, {} devices)",
        file.display(),
        trace.kernel_count(),
        devices.len()
    );
    println!("threads: {}", rayon::current_num_threads());
    let cpu = analysis::gaps::CpuIndex::new(&trace);
    let found: Vec<_> = devices
        .iter()
        .zip(&windows)
        .flat_map(|(d, w)| analysis::gaps::gaps(&trace, &cpu, d, *w, options.min_gap_ns))
        .collect();
    let rows: [(&str, f64); 14] = [
        (
            "GPU time per NVTX range",
            best_of_3(&|| {
                std::hint::black_box(analysis::nvtx_gpu::nvtx_gpu(&trace, None));
            }),
        ),
        (
            "memory transfers",
            best_of_3(&|| {
                std::hint::black_box(analysis::memory::memory_by_kind(&trace, None));
            }),
        ),
        (
            "  gaps: CPU index",
            best_of_3(&|| {
                std::hint::black_box(analysis::gaps::CpuIndex::new(&trace));
            }),
        ),
        (
            "  gaps: found (no cause, no NVTX)",
            best_of_3(&|| {
                for (d, w) in devices.iter().zip(&windows) {
                    std::hint::black_box(analysis::gaps::find_gaps(d, *w, options.min_gap_ns));
                }
            }),
        ),
        (
            "  gaps: with cause and NVTX",
            best_of_3(&|| {
                for (d, w) in devices.iter().zip(&windows) {
                    std::hint::black_box(analysis::gaps::gaps(
                        &trace,
                        &cpu,
                        d,
                        *w,
                        options.min_gap_ns,
                    ));
                }
            }),
        ),
        (
            "  gaps: recurring patterns",
            best_of_3(&|| {
                std::hint::black_box(analysis::recurring::recurring(&trace, &found));
            }),
        ),
        (
            "breakdown + same-stream",
            best_of_3(&|| {
                for (d, w) in devices.iter().zip(&windows) {
                    std::hint::black_box((
                        analysis::breakdown(d, *w),
                        analysis::same_stream(d, *w),
                    ));
                }
            }),
        ),
        (
            "gaps (found, with cause and NVTX) + recurring",
            best_of_3(&|| {
                let cpu = analysis::gaps::CpuIndex::new(&trace);
                let found: Vec<_> = devices
                    .iter()
                    .zip(&windows)
                    .flat_map(|(d, w)| {
                        analysis::gaps::gaps(&trace, &cpu, d, *w, options.min_gap_ns)
                    })
                    .collect();
                std::hint::black_box(analysis::recurring::recurring(&trace, &found));
            }),
        ),
        (
            "iterations (auto marker)",
            best_of_3(&|| {
                std::hint::black_box(analysis::iterations::iterations(&trace, None));
            }),
        ),
        ("drill-down of the slowest", {
            let it = analysis::iterations::iterations(&trace, None);
            let cpu = analysis::gaps::CpuIndex::new(&trace);
            best_of_3(&|| {
                if let Some(k) = it.slowest_index {
                    std::hint::black_box(analysis::drilldown::drilldown(
                        &trace,
                        &cpu,
                        &it,
                        k,
                        options.min_gap_ns,
                        10,
                    ));
                }
            })
        }),
        (
            "kernel and NCCL summaries",
            best_of_3(&|| {
                std::hint::black_box(analysis::summary::kernels_by_name(&trace, &devices, None));
                std::hint::black_box(analysis::summary::nccl_by_type(&trace, &devices, None));
            }),
        ),
        (
            "NCCL bytes and bandwidth (report)",
            best_of_3(&|| {
                std::hint::black_box(analysis::nccl_payload::nccl_payload(&trace, options.top));
            }),
        ),
        (
            "NCCL per kernel + by size (window's worker)",
            best_of_3(&|| {
                let transfers = analysis::nccl_payload::kernel_transfers(&trace);
                std::hint::black_box(analysis::nccl_sizes::size_groups(&trace, &transfers, None));
            }),
        ),
        (
            "all (overview, in parallel)",
            best_of_3(&|| {
                std::hint::black_box(crate::overview::overview(&trace, &options));
            }),
        ),
    ];
    for (name, secs) in rows {
        println!("{name:<30} {:>8.1} ms", secs * 1e3);
    }
    let overview = crate::overview::overview(&trace, &options);
    println!(
        "found: {} gaps, {} recurring patterns, {} iterations (slowest {:?})",
        overview.gaps.len(),
        overview.recurring.len(),
        overview.iterations.count(),
        overview.iterations.slowest_index
    );
    print_peak_rss();
    Ok(())
}

/// Times opening several per-rank files as one trace: each file alone first (its load time
/// and model size), then all of them together (parallel load, alignment, merge), with the
/// merged model's size against the sum of the files' and the process's peak RSS.
pub fn bench_many(paths: &[std::path::PathBuf]) -> Result<(), String> {
    // The files are loaded from themselves (a cache of the bench's own, empty, removed after).
    let _cache = BenchCache::new()?;
    let files = load::many::expand_paths(paths)?;
    println!(
        "files: {} (threads: {})",
        files.len(),
        rayon::current_num_threads()
    );
    let mut single_bytes = 0usize;
    let mut single_seconds = 0.0;
    for f in &files {
        let t = Instant::now();
        let (trace, report) = load::load(f).map_err(|e| e.to_string())?;
        let s = t.elapsed().as_secs_f64();
        single_seconds += s;
        single_bytes += trace.heap_bytes();
        println!(
            "file={} mb={:.1} load_s={s:.3} model_mb={:.1} events={}",
            f.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            report.file_bytes as f64 / 1e6,
            trace.heap_bytes() as f64 / 1e6,
            trace.event_count()
        );
    }
    let t = Instant::now();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let (trace, _, infos) =
        crate::session::open_many(&files, &[], crate::session::Hooks::quiet(&cancel))
            .map_err(|e| e.to_string())?;
    let together = t.elapsed().as_secs_f64();
    let worst_residual = infos
        .iter()
        .filter_map(|i| i.residual_ns)
        .max()
        .unwrap_or(0);
    println!(
        "all together: load_s={together:.3} (one after another: {single_seconds:.3}) model_mb={:.1} (sum of files: {:.1}, ratio {:.2}) worst_alignment_residual_ns={worst_residual}",
        trace.heap_bytes() as f64 / 1e6,
        single_bytes as f64 / 1e6,
        trace.heap_bytes() as f64 / single_bytes.max(1) as f64
    );
    let t = Instant::now();
    let o = crate::overview::overview(&trace, &Default::default());
    println!(
        "analyses of the merged trace: {:.3} s ({} GPUs, {} gaps, {} iterations)",
        t.elapsed().as_secs_f64(),
        trace.devices.len(),
        o.gaps.len(),
        o.iterations.count()
    );
    print_peak_rss();
    Ok(())
}

/// Times a job of many ranks: its summaries read (in parallel, checksums and exports
/// checked), then reduced (alignment, matching, waits, heatmap, straggler replay), with
/// the summaries' sizes and the peak RSS. Exports given instead are summarised first, one
/// at a time, as `report` does past 16 of them.
pub fn bench_job(paths: &[std::path::PathBuf]) -> Result<(), String> {
    let files = load::many::expand_paths(paths)?;
    let t = Instant::now();
    let summaries = crate::session::rank_summaries(
        &files,
        &Default::default(),
        false,
        &std::sync::atomic::AtomicBool::new(false),
        &|_, _| {},
    )?;
    let read_s = t.elapsed().as_secs_f64();
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let collectives: usize = summaries.iter().map(|s| s.1.collectives()).sum();
    println!(
        "ranks: {} files, {:.1} MB, {collectives} NCCL kernels; read/summarised in {read_s:.3} s (threads: {})",
        files.len(),
        bytes as f64 / 1e6,
        rayon::current_num_threads()
    );
    let t = Instant::now();
    let job = crate::job::reduce(&summaries, 10);
    let reduce_s = t.elapsed().as_secs_f64();
    let straggler = job.findings.first().map_or("none".to_string(), |f| {
        format!(
            "{} ({})",
            f.devices.join(","),
            crate::format::format_ns(f.saving_ns)
        )
    });
    println!(
        "reduce_s={reduce_s:.3} total_s={:.3} collectives_matched={} aligned_by_collectives={} late0={} straggler={straggler}",
        read_s + reduce_s,
        job.nccl_wait.collectives,
        job.files
            .iter()
            .filter(|f| f.clock.alignment == crate::load::many::Alignment::Collectives)
            .count(),
        job.nccl_wait
            .late
            .first()
            .map_or("none", |l| l.last_device.as_str()),
    );
    print_peak_rss();
    Ok(())
}

/// Times a what-if replay of FILE (its per-step sync removed, as `aten::item` names it,
/// and its largest kernel made twice as fast): the replay alone, then the analyses of the
/// replayed trace, with the peak RSS.
pub fn bench_what_if(file: &Path) -> Result<(), String> {
    use crate::whatif::{Change, replay};
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let o = crate::overview::overview(&trace, &Default::default());
    let top = o
        .kernels
        .first()
        .map(|k| regex::escape(&k.name))
        .unwrap_or_default();
    println!("file: {} ({} events)", file.display(), trace.event_count());
    for (what, change) in [
        ("unchanged", Change::default()),
        (
            "remove sync in aten::item",
            Change {
                remove_sync: vec!["aten::item".into()],
                ..Default::default()
            },
        ),
        (
            "top kernel x0.5",
            Change {
                scale_kernels: vec![(regex::Regex::new(&top).map_err(|e| e.to_string())?, 0.5)],
                ..Default::default()
            },
        ),
    ] {
        let t = Instant::now();
        let replayed = replay(&trace, &change);
        let replay_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let p = crate::overview::overview(&replayed, &Default::default());
        println!(
            "change={what:?} replay_s={replay_s:.3} analyses_s={:.3} iterations={}",
            t.elapsed().as_secs_f64(),
            p.iterations.count()
        );
    }
    spans_of_every_change_kind(&trace, &o, &top)?;
    print_peak_rss();
    Ok(())
}

/// Times the spans-only walk (what a finding's saving costs) of one change of each kind,
/// aimed at what this trace holds: a change kind that a shape makes slow shows here.
fn spans_of_every_change_kind(
    trace: &crate::trace::Trace,
    o: &crate::overview::Overview,
    top_kernel: &str,
) -> Result<(), String> {
    use crate::whatif::{Change, HostSpan, Prepared, predicted_spans_with};
    let t = Instant::now();
    let prepared = Prepared::new(trace);
    println!(
        "shared preparation      {:>8.3} s",
        t.elapsed().as_secs_f64()
    );
    // The texts the changes aim at: the most recurring gaps' ranges and signatures.
    let recurring = &o.recurring;
    let signature = |cause: &str| {
        recurring
            .iter()
            .find(|r| r.signature.ends_with(cause))
            .map(|r| r.signature.clone())
    };
    let range_text = recurring
        .iter()
        .filter_map(|r| r.signature.split(" in ").nth(1))
        .map(|r| {
            r.split(" [")
                .next()
                .unwrap_or(r)
                .trim_end_matches('#')
                .to_string()
        })
        .find(|r| !r.is_empty() && !r.starts_with('('))
        .unwrap_or_default();
    let busiest = trace
        .threads
        .iter()
        .max_by_key(|t| t.api.len())
        .ok_or("no threads")?;
    let (first, last) = trace.time_span().ok_or("an empty trace")?;
    let from = first + (last - first) / 3;
    let stall = HostSpan::of(trace, busiest, from, from + 1_000_000_000);
    let kinds: Vec<(&str, Change)> = vec![
        ("unchanged", Change::default()),
        (
            "remove sync (every synchronising call)",
            Change {
                remove_sync: vec![String::new()],
                ..Default::default()
            },
        ),
        (
            "top kernel x0.5",
            Change {
                scale_kernels: vec![(
                    regex::Regex::new(top_kernel).map_err(|e| e.to_string())?,
                    0.5,
                )],
                ..Default::default()
            },
        ),
        (
            "NCCL on its own stream",
            Change {
                nccl_own_stream: true,
                ..Default::default()
            },
        ),
        (
            "NCCL on its own stream, no dependencies",
            Change {
                nccl_own_stream: true,
                nccl_dependencies: crate::whatif::NcclDependencies::Unbounded,
                ..Default::default()
            },
        ),
        (
            "remove CPU in the most recurring gaps' range",
            Change {
                remove_cpu: vec![range_text.clone()],
                ..Default::default()
            },
        ),
        (
            "remove CPU in every range",
            Change {
                remove_cpu: vec![String::new()],
                ..Default::default()
            },
        ),
        (
            "remove a 1 s stall of the busiest thread",
            Change {
                remove_stalls: vec![stall],
                ..Default::default()
            },
        ),
        (
            "cut the most recurring host-bound gaps",
            Change {
                cut_host_gaps: signature("[host_bound]").into_iter().collect(),
                ..Default::default()
            },
        ),
        (
            "drop every copy",
            Change {
                drop_copies: vec![String::new()],
                ..Default::default()
            },
        ),
        (
            "capture the most recurring gaps' range as graphs",
            Change {
                capture_graphs: vec![range_text.clone()],
                ..Default::default()
            },
        ),
    ];
    println!("spans-only walk of one change (what a finding's saving costs):");
    for (what, change) in kinds {
        let t = Instant::now();
        let spans = predicted_spans_with(trace, &prepared, &change, Some(&o.gaps));
        let longest = spans.iter().max().copied().unwrap_or(0);
        println!(
            "  {what:<50} {:>8.3} s  (longest span {})",
            t.elapsed().as_secs_f64(),
            crate::format::format_ns(longest)
        );
    }
    println!("  (range aimed at: {range_text:?})");
    Ok(())
}

/// Times what to fix first on FILE: detecting the findings, then every finding's replay
/// (in parallel), against one what-if replay of the trace (the `what-if` command's), with
/// the peak RSS.
pub fn bench_findings(file: &Path) -> Result<(), String> {
    use std::sync::atomic::AtomicBool;
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let o = crate::overview::overview(&trace, &Default::default());
    println!("file: {} ({} events)", file.display(), trace.event_count());
    println!("threads: {}", rayon::current_num_threads());
    let t = Instant::now();
    let found = crate::findings::detect(&trace, &o);
    let detect_s = t.elapsed().as_secs_f64();
    let replays = found
        .iter()
        .map(|f| f.change.is_some() as usize + f.upper_change.is_some() as usize)
        .sum::<usize>();
    let t = Instant::now();
    let savings =
        crate::findings::replay_savings(&trace, &o, &found, &AtomicBool::new(false), |_, _| {})
            .unwrap_or_default();
    let replays_s = t.elapsed().as_secs_f64();
    let ranked = crate::findings::finish(&trace, &o, found, &savings);
    // The findings' peak first: the what-if replay below builds a whole replayed trace.
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS (findings)    {:>8.1} MB", peak as f64 / 1e6);
    }
    let t = Instant::now();
    let replayed = crate::whatif::replay(&trace, &crate::whatif::Change::default());
    let one = t.elapsed().as_secs_f64();
    drop(replayed);
    println!("one what-if replay      {one:>8.3} s");
    println!("findings: detect        {detect_s:>8.3} s");
    println!("findings: {replays:>2} replays    {replays_s:>8.3} s");
    println!(
        "ratio (detect + replays) / one replay   {:.2}",
        (detect_s + replays_s) / one
    );
    for f in &ranked {
        println!(
            "  [{}] {} {}",
            f.severity.label(),
            f.saving_ns
                .map_or("fact".to_string(), crate::format::format_ns),
            f.title
        );
    }
    print_peak_rss();
    Ok(())
}

/// Times the critical path on FILE: the graph (collectives, launches per thread), the
/// slowest iteration's path with its slack, and the whole run's table (every iteration),
/// after the load and the iterations, with the peak RSS.
pub fn bench_critical_path(file: &Path) -> Result<(), String> {
    use crate::critical_path::{Graph, report as cp};
    let t = Instant::now();
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let its = crate::analysis::iterations::iterations(&trace, None);
    let iterations_s = t.elapsed().as_secs_f64();
    println!("file: {} ({} events)", file.display(), trace.event_count());
    println!("load                    {load_s:>8.3} s");
    println!("iterations ({:>5})      {iterations_s:>8.3} s", its.count());
    let k = its
        .slowest_index
        .ok_or("no slow iteration: nothing to time")?;
    let t = Instant::now();
    let graph = Graph::new(&trace);
    let graph_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let one = cp::summarise(&graph, &its, k).ok_or("the slowest iteration has no path")?;
    let one_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let table = cp::run_table(&graph, &its, 20);
    let table_s = t.elapsed().as_secs_f64();
    println!("graph                   {graph_s:>8.3} s");
    println!(
        "one iteration ({k}, {} segments, slack of {} kernels) {one_s:>8.3} s; with the graph {:.3} s",
        one.path.segments.len(),
        one.slack.len(),
        graph_s + one_s
    );
    println!(
        "whole run ({} iterations)  {table_s:>8.3} s; with the graph {:.3} s",
        table.iterations,
        graph_s + table_s
    );
    print_peak_rss();
    Ok(())
}
