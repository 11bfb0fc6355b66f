//! GPU metrics (`GPU_METRICS`, named by `TARGET_INFO_GPU_METRICS`), read after the model is
//! built: one row per (sample, metric), the GPU in the low byte of `typeId`, a metric named
//! per `(typeId, metricId)` (ids are not stable across GPUs or files). Clocks are repaired
//! to MHz; samples with no time or no value, or of a metric with no name, are counted.

use std::path::Path;

use rusqlite::Connection;
use rustc_hash::FxHashMap as HashMap;

use super::error::LoadError;
use super::report::LoadReport;
use super::schema::Schema;
use super::small_tables::int;
use super::sniff::sqlite_error;
use crate::trace::{DeviceId, DeviceMetrics, NO_SAMPLE, Trace, clock_mhz};

pub const GPU_METRICS: &str = "GPU_METRICS";
pub const METRIC_NAMES: &str = "TARGET_INFO_GPU_METRICS";

const BAD_ROW: &str = "NULL timestamp, typeId, metricId or value";
const UNNAMED: &str = "a metric TARGET_INFO_GPU_METRICS does not name";

pub fn read_gpu_metrics(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    trace: &mut Trace,
    report: &mut LoadReport,
) -> Result<(), LoadError> {
    if !schema.has(GPU_METRICS) || !schema.has(METRIC_NAMES) {
        return Ok(());
    }
    // (typeId, metricId) → name.
    let mut names: HashMap<(i64, i64), String> = HashMap::default();
    let mut read_names = || -> rusqlite::Result<()> {
        let cols = schema.select_list(METRIC_NAMES, &["typeId", "metricId", "metricName"]);
        let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {METRIC_NAMES}"))?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            if let (Some(t), Some(m), Ok(Some(name))) =
                (int(r, 0), int(r, 1), r.get::<_, Option<String>>(2))
            {
                names.insert((t, m), name);
            }
        }
        Ok(())
    };
    read_names().map_err(|e| sqlite_error(path, METRIC_NAMES, e))?;
    // Per GPU: (time, metric slot, value), the slots' names.
    struct Gpu {
        rows: Vec<(i64, u16, f32)>,
        slots: Vec<String>,
        slot_of: HashMap<(i64, i64), u16>,
    }
    let mut gpus: Vec<(u32, Gpu)> = Vec::new();
    let mut rows = 0u64;
    let mut read = || -> rusqlite::Result<()> {
        let cols = schema.select_list(GPU_METRICS, &["timestamp", "typeId", "metricId", "value"]);
        let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {GPU_METRICS}"))?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            rows += 1;
            let (Some(t), Some(type_id), Some(metric), Some(value)) =
                (int(r, 0), int(r, 1), int(r, 2), int(r, 3))
            else {
                report.skips.add(GPU_METRICS, BAD_ROW);
                continue;
            };
            let Some(name) = names.get(&(type_id, metric)) else {
                report.skips.add(GPU_METRICS, UNNAMED);
                continue;
            };
            let gpu = (type_id & 0xFF) as u32;
            let at = match gpus.iter().position(|g| g.0 == gpu) {
                Some(at) => at,
                None => {
                    gpus.push((
                        gpu,
                        Gpu {
                            rows: Vec::new(),
                            slots: Vec::new(),
                            slot_of: HashMap::default(),
                        },
                    ));
                    gpus.len() - 1
                }
            };
            let g = &mut gpus[at].1;
            let slot = match g.slot_of.get(&(type_id, metric)) {
                Some(&s) => s,
                None => {
                    // The same name under another (typeId, metricId) of this GPU: one metric.
                    let s = match g.slots.iter().position(|n| n == name) {
                        Some(s) => s as u16,
                        None => {
                            g.slots.push(name.clone());
                            (g.slots.len() - 1) as u16
                        }
                    };
                    g.slot_of.insert((type_id, metric), s);
                    s
                }
            };
            let value = if name.contains("Clock") {
                clock_mhz(value)
            } else {
                value as f32
            };
            g.rows.push((t, slot, value));
        }
        Ok(())
    };
    read().map_err(|e| sqlite_error(path, GPU_METRICS, e))?;
    report.tables.insert(GPU_METRICS.to_string(), rows);
    let cuda_of = cuda_devices(conn);
    let mut out = Vec::new();
    for (gpu, mut g) in gpus {
        g.rows.sort_unstable_by_key(|r| (r.0, r.1));
        let mut time: Vec<i64> = g.rows.iter().map(|r| r.0).collect();
        time.dedup();
        let mut metrics: Vec<(String, Vec<f32>)> = g
            .slots
            .iter()
            .map(|n| (n.clone(), vec![NO_SAMPLE; time.len()]))
            .collect();
        let mut k = 0;
        for &(t, slot, value) in &g.rows {
            while time[k] < t {
                k += 1;
            }
            metrics[slot as usize].1[k] = value;
        }
        metrics.sort_by(|a, b| a.0.cmp(&b.0));
        out.push(DeviceMetrics {
            device: DeviceId(cuda_of.get(&gpu).copied().unwrap_or(gpu)),
            time,
            metrics,
        });
    }
    out.sort_by_key(|m| m.device);
    trace.gpu_metrics = out;
    Ok(())
}

/// nsys GPU id → CUDA device id (`TARGET_INFO_CUDA_DEVICE`), where the export maps them;
/// otherwise the two are taken to be the same.
fn cuda_devices(conn: &Connection) -> HashMap<u32, u32> {
    let mut out = HashMap::default();
    let Ok(mut stmt) = conn.prepare("SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE") else {
        return out;
    };
    let Ok(mut q) = stmt.query([]) else {
        return out;
    };
    while let Ok(Some(r)) = q.next() {
        if let (Some(g), Some(c)) = (int(r, 0), int(r, 1))
            && let (Ok(g), Ok(c)) = (u32::try_from(g), u32::try_from(c))
        {
            out.entry(g).or_insert(c);
        }
    }
    out
}
