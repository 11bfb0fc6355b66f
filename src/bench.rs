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
const SCAN_SQL: &str = "SELECT count(*), total(start), total(end), total(deviceId), total(streamId), total(correlationId), total(globalPid), total(shortName), total(demangledName), total(gridX), total(gridY), total(gridZ), total(blockX), total(blockY), total(blockZ), total(registersPerThread), total(staticSharedMemory), total(dynamicSharedMemory) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT count(*), total(start), total(end), total(eventClass), total(globalTid), total(correlationId), total(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT count(*), total(start), total(end), total(eventType), total(length(text)), total(textId), total(globalTid), total(color), total(domainId) FROM NVTX_EVENTS;";

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
