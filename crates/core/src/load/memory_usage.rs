//! Device memory allocations and frees (`CUDA_GPU_MEMORY_USAGE_EVENTS`, recorded with
//! `--cuda-memory-usage=true`), read after the model is built, per GPU. Host memory
//! (`memKind` 0 pageable, 1 pinned) is counted in the load report and left out.

use std::path::Path;

use rusqlite::Connection;

use super::error::LoadError;
use super::report::LoadReport;
use super::schema::Schema;
use super::small_tables::int;
use super::sniff::sqlite_error;
use crate::trace::{DeviceId, MemoryEvents, Trace};

pub const MEMORY_USAGE: &str = "CUDA_GPU_MEMORY_USAGE_EVENTS";

const HOST_MEMORY: &str = "host memory (pageable or pinned), not a GPU's";
const BAD_ROW: &str = "NULL start, device or size, or an unknown operation";

/// `memoryOperationType` (`ENUM_CUDA_DEV_MEM_EVENT_OPER`).
const ALLOCATION: i64 = 0;
const DEALLOCATION: i64 = 1;

pub fn read_memory_usage(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    trace: &mut Trace,
    report: &mut LoadReport,
) -> Result<(), LoadError> {
    if !schema.has(MEMORY_USAGE) {
        return Ok(());
    }
    let cols = schema.select_list(
        MEMORY_USAGE,
        &[
            "start",
            "deviceId",
            "bytes",
            "memKind",
            "memoryOperationType",
            "correlationId",
            "address",
        ],
    );
    let mut per_device: Vec<MemoryEvents> = Vec::new();
    let mut rows = 0u64;
    let mut read = || -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {MEMORY_USAGE}"))?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            rows += 1;
            let int = |i: usize| int(r, i);
            if matches!(int(3), Some(0 | 1)) {
                report.skips.add(MEMORY_USAGE, HOST_MEMORY);
                continue;
            }
            let (Some(start), Some(device), Some(bytes), Some(op)) =
                (int(0), int(1), int(2), int(4))
            else {
                report.skips.add(MEMORY_USAGE, BAD_ROW);
                continue;
            };
            let sign = match op {
                ALLOCATION => 1,
                DEALLOCATION => -1,
                _ => {
                    report.skips.add(MEMORY_USAGE, BAD_ROW);
                    continue;
                }
            };
            let Ok(device) = u32::try_from(device) else {
                report.skips.add(MEMORY_USAGE, BAD_ROW);
                continue;
            };
            let device = DeviceId(device);
            let at = match per_device.iter().position(|m| m.device == device) {
                Some(at) => at,
                None => {
                    per_device.push(MemoryEvents {
                        device,
                        ..Default::default()
                    });
                    per_device.len() - 1
                }
            };
            let m = &mut per_device[at];
            m.time.push(start);
            m.bytes.push(sign * bytes.max(0));
            m.address.push(int(6).map_or(0, |a| a as u64));
            m.correlation_id
                .push(int(5).and_then(|c| u32::try_from(c).ok()).unwrap_or(0));
        }
        Ok(())
    };
    read().map_err(|e| sqlite_error(path, MEMORY_USAGE, e))?;
    report.tables.insert(MEMORY_USAGE.to_string(), rows);
    for m in &mut per_device {
        m.sort();
    }
    per_device.sort_by_key(|m| m.device);
    trace.memory_usage = per_device;
    Ok(())
}
