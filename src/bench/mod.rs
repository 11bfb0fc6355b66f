//! Benchmarks that print figures (`nsys-explorer bench …`), one module per command; here what
//! they share: the `sqlite3` scans they are measured against, the peak RSS, a cache folder
//! of their own.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

mod analyses;
mod frames;
mod loading;
mod many;
mod replays;
mod report;
mod window;

pub use analyses::bench_analysis;
pub use frames::{bench_frame, bench_panels};
pub use loading::bench_load;
pub use many::{bench_job, bench_many};
pub use replays::{bench_critical_path, bench_findings, bench_what_if};
pub use report::bench_report;
pub use window::{WindowTimes, bench_reopen, bench_window, window_path};

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
