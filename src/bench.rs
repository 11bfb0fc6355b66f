//! The baseline the load benchmark is held to: one `sqlite3` process scanning the same
//! columns of the three big tables that the loader reads.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

pub struct Baseline {
    pub seconds: f64,
    pub how: String,
}

/// Sums every column the loader reads, so SQLite must decode each of them.
const SCAN_SQL: &str = "SELECT count(*), sum(start), sum(end), sum(deviceId), sum(streamId), sum(correlationId), sum(globalPid), sum(shortName), sum(demangledName), sum(gridX), sum(gridY), sum(gridZ), sum(blockX), sum(blockY), sum(blockZ), sum(registersPerThread), sum(staticSharedMemory), sum(dynamicSharedMemory) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT count(*), sum(start), sum(end), sum(eventClass), sum(globalTid), sum(correlationId), sum(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT count(*), sum(start), sum(end), sum(eventType), sum(length(text)), sum(textId), sum(globalTid), sum(color), sum(domainId) FROM NVTX_EVENTS;";

pub fn sqlite3_scan(file: &Path) -> Result<Baseline, String> {
    let uri = format!("file:{}?immutable=1", file.display());
    let t = Instant::now();
    let output = Command::new("sqlite3")
        .arg("-readonly")
        .arg(&uri)
        .arg(SCAN_SQL)
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
