//! GPU metrics (`GPU_METRICS`, named by `TARGET_INFO_GPU_METRICS`): one row per (sample,
//! metric), the GPU in the low byte of `typeId`, a metric named per `(typeId, metricId)`
//! (ids are not stable across GPUs or files). Often the biggest table of an export that has
//! it (20 metrics at 10 kHz on 4 GPUs: 19 M rows for 2 minutes), so it is read in the load's
//! parallel scan, each chunk straight into per-GPU columns: a time per sample instant and a
//! value per metric, rows of one instant arriving together as nsys writes them. Rows out of
//! time order are kept aside and the GPU's columns rebuilt from all its rows at the end.
//! Values end in the narrowest type that holds them ([`MetricValues`]): a percent a byte.
//! Clocks are repaired to MHz; rows with no time or value, or of a metric with no name, are
//! counted.

use std::path::Path;

use rusqlite::Connection;
use rustc_hash::FxHashMap as HashMap;

use super::error::LoadError;
use super::scan::{ScanContext, Skips, Span, TablePlan, int, scan_range};
use super::schema::Schema;
use super::small_tables;
use super::sniff::sqlite_error;
use crate::trace::{DeviceId, DeviceMetrics, MetricValues, NO_SAMPLE, clock_mhz};

pub const GPU_METRICS: &str = "GPU_METRICS";
pub const METRIC_NAMES: &str = "TARGET_INFO_GPU_METRICS";

const BAD_ROW: &str = "NULL timestamp, typeId, metricId or value";
const UNNAMED: &str = "a metric TARGET_INFO_GPU_METRICS does not name";

/// The columns the scan reads.
pub const COLUMNS: &[&str] = &["timestamp", "typeId", "metricId", "value"];

/// Where each `(typeId, metricId)` goes: its GPU's place and the metric's slot there, from
/// the names alone (read before the scan). A name met under two ids of one GPU is one
/// metric.
#[derive(Default)]
pub struct MetricKeys {
    /// (typeId, metricId) → (GPU's place in `gpus`, slot, a clock to repair).
    keys: HashMap<(i64, i64), (u16, u16, bool)>,
    /// Per GPU (nsys id): its metrics' names, by slot (sorted).
    gpus: Vec<(u32, Vec<String>)>,
}

impl MetricKeys {
    pub fn read(conn: &Connection, path: &Path, schema: &Schema) -> Result<MetricKeys, LoadError> {
        let mut out = MetricKeys::default();
        if !schema.has(GPU_METRICS) || !schema.has(METRIC_NAMES) {
            return Ok(out);
        }
        let mut names: Vec<((i64, i64), String)> = Vec::new();
        let mut read = || -> rusqlite::Result<()> {
            let cols = schema.select_list(METRIC_NAMES, &["typeId", "metricId", "metricName"]);
            let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {METRIC_NAMES}"))?;
            let mut q = stmt.query([])?;
            while let Some(r) = q.next()? {
                if let (Some(t), Some(m), Ok(Some(name))) = (
                    small_tables::int(r, 0),
                    small_tables::int(r, 1),
                    r.get::<_, Option<String>>(2),
                ) {
                    names.push(((t, m), name));
                }
            }
            Ok(())
        };
        read().map_err(|e| sqlite_error(path, METRIC_NAMES, e))?;
        for ((type_id, _), name) in &names {
            let gpu = (type_id & 0xFF) as u32;
            let at = match out.gpus.iter().position(|g| g.0 == gpu) {
                Some(at) => at,
                None => {
                    out.gpus.push((gpu, Vec::new()));
                    out.gpus.len() - 1
                }
            };
            if !out.gpus[at].1.contains(name) {
                out.gpus[at].1.push(name.clone());
            }
        }
        for g in &mut out.gpus {
            g.1.sort();
        }
        for ((type_id, metric), name) in names {
            let gpu = (type_id & 0xFF) as u32;
            let at = out
                .gpus
                .iter()
                .position(|g| g.0 == gpu)
                .expect("added above");
            let slot = out.gpus[at].1.binary_search(&name).expect("added above");
            out.keys.insert(
                (type_id, metric),
                (at as u16, slot as u16, name.contains("Clock")),
            );
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }
}

/// One GPU's columns as read: sample instants and each metric's value at them.
#[derive(Default)]
struct Columns {
    time: Vec<i64>,
    /// Per slot; shorter than `time` where its last values are still unknown.
    values: Vec<Vec<f32>>,
}

impl Columns {
    /// Sets `slot`'s value at the last instant.
    fn set_last(&mut self, slot: usize, value: f32) {
        let n = self.time.len();
        let col = &mut self.values[slot];
        col.resize(n, NO_SAMPLE);
        col[n - 1] = value;
    }

    /// Every column as long as `time`.
    fn pad(&mut self) {
        let n = self.time.len();
        for col in &mut self.values {
            col.resize(n, NO_SAMPLE);
        }
    }
}

/// One chunk of `GPU_METRICS`.
pub struct MetricChunk {
    pub rows: u64,
    pub skips: Skips,
    /// Per GPU (place in [`MetricKeys::gpus`]).
    gpus: Vec<Columns>,
    /// Rows behind their GPU's last instant: (GPU, time, slot, value).
    unordered: Vec<(u16, i64, u16, f32)>,
}

pub fn read_chunk(
    ctx: &ScanContext,
    conn: &Connection,
    plan: &TablePlan,
    keys: &MetricKeys,
    span: Span,
) -> Result<MetricChunk, LoadError> {
    let mut chunk = MetricChunk {
        rows: 0,
        skips: Skips::default(),
        gpus: keys
            .gpus
            .iter()
            .map(|g| Columns {
                time: Vec::new(),
                values: vec![Vec::new(); g.1.len()],
            })
            .collect(),
        unordered: Vec::new(),
    };
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let (Some(t), Some(type_id), Some(metric), Some(value)) =
            (int(r, 0), int(r, 1), int(r, 2), int(r, 3))
        else {
            chunk.skips.add(GPU_METRICS, BAD_ROW);
            return Ok(());
        };
        let Some(&(gpu, slot, clock)) = keys.keys.get(&(type_id, metric)) else {
            chunk.skips.add(GPU_METRICS, UNNAMED);
            return Ok(());
        };
        let value = if clock {
            clock_mhz(value)
        } else {
            value as f32
        };
        chunk.add(gpu, t, slot, value);
        Ok(())
    })?;
    Ok(chunk)
}

impl MetricChunk {
    /// A row: at its GPU's last instant, a new one after it, or aside when behind it.
    fn add(&mut self, gpu: u16, t: i64, slot: u16, value: f32) {
        let g = &mut self.gpus[gpu as usize];
        match g.time.last() {
            Some(&last) if t < last => self.unordered.push((gpu, t, slot, value)),
            Some(&last) if t == last => g.set_last(slot as usize, value),
            _ => {
                g.time.push(t);
                g.set_last(slot as usize, value);
            }
        }
    }
}

/// The chunks joined in file order.
#[derive(Default)]
pub struct MetricMerger {
    gpus: Vec<Columns>,
    unordered: Vec<(u16, i64, u16, f32)>,
}

impl MetricMerger {
    /// Joins `chunk` (its skipped rows already counted by the caller).
    pub fn add(&mut self, chunk: MetricChunk) {
        if self.gpus.is_empty() {
            self.gpus = chunk.gpus;
            self.unordered = chunk.unordered;
            return;
        }
        self.unordered.extend(chunk.unordered);
        for (gpu, (into, mut from)) in self.gpus.iter_mut().zip(chunk.gpus).enumerate() {
            let (Some(&last), Some(&first)) = (into.time.last(), from.time.first()) else {
                if into.time.is_empty() {
                    *into = from;
                }
                continue;
            };
            into.pad();
            from.pad();
            if first < last {
                // Behind what came before: kept aside with the other rows out of order.
                for (k, &t) in from.time.iter().enumerate() {
                    for (slot, col) in from.values.iter().enumerate() {
                        if !col[k].is_nan() {
                            self.unordered.push((gpu as u16, t, slot as u16, col[k]));
                        }
                    }
                }
                continue;
            }
            // An instant cut by the chunks' edge: its values joined.
            let skip = usize::from(first == last);
            if skip == 1 {
                let n = into.time.len();
                for (slot, col) in from.values.iter().enumerate() {
                    if !col[0].is_nan() {
                        into.values[slot][n - 1] = col[0];
                    }
                }
            }
            into.time.extend_from_slice(&from.time[skip..]);
            for (col, more) in into.values.iter_mut().zip(&from.values) {
                col.extend_from_slice(&more[skip..]);
            }
        }
    }

    /// Each GPU's metrics (named by `keys`, on the CUDA device `cuda_of` maps it to).
    pub fn finish(mut self, keys: &MetricKeys, cuda_of: &HashMap<u32, u32>) -> Vec<DeviceMetrics> {
        let mut out = Vec::new();
        for (gpu, mut columns) in self.gpus.into_iter().enumerate() {
            columns.pad();
            let late: Vec<(i64, u16, f32)> = self
                .unordered
                .iter()
                .filter(|u| u.0 as usize == gpu)
                .map(|u| (u.1, u.2, u.3))
                .collect();
            if !late.is_empty() {
                columns = rebuilt(columns, late);
            }
            if columns.time.is_empty() {
                continue;
            }
            let (nsys_gpu, names) = &keys.gpus[gpu];
            out.push(DeviceMetrics {
                device: DeviceId(cuda_of.get(nsys_gpu).copied().unwrap_or(*nsys_gpu)),
                time: columns.time,
                metrics: names
                    .iter()
                    .cloned()
                    .zip(columns.values.into_iter().map(MetricValues::narrowest))
                    .collect(),
            });
        }
        self.unordered.clear();
        out.sort_by_key(|m| m.device);
        out
    }
}

/// A GPU's columns rebuilt from every row (those in order and `late`), sorted by time.
fn rebuilt(columns: Columns, late: Vec<(i64, u16, f32)>) -> Columns {
    let mut rows = late;
    for (k, &t) in columns.time.iter().enumerate() {
        for (slot, col) in columns.values.iter().enumerate() {
            if !col[k].is_nan() {
                rows.push((t, slot as u16, col[k]));
            }
        }
    }
    rows.sort_by_key(|r| (r.0, r.1));
    let mut time: Vec<i64> = rows.iter().map(|r| r.0).collect();
    time.dedup();
    let mut values = vec![vec![NO_SAMPLE; time.len()]; columns.values.len()];
    let mut k = 0;
    for &(t, slot, value) in &rows {
        while time[k] < t {
            k += 1;
        }
        values[slot as usize][k] = value;
    }
    Columns { time, values }
}

/// nsys GPU id → CUDA device id (`TARGET_INFO_CUDA_DEVICE`), where the export maps them;
/// otherwise the two are taken to be the same.
pub fn cuda_devices(conn: &Connection) -> HashMap<u32, u32> {
    let mut out = HashMap::default();
    let Ok(mut stmt) = conn.prepare("SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE") else {
        return out;
    };
    let Ok(mut q) = stmt.query([]) else {
        return out;
    };
    while let Ok(Some(r)) = q.next() {
        if let (Some(g), Some(c)) = (small_tables::int(r, 0), small_tables::int(r, 1))
            && let (Ok(g), Ok(c)) = (u32::try_from(g), u32::try_from(c))
        {
            out.entry(g).or_insert(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> MetricKeys {
        MetricKeys {
            keys: Default::default(),
            gpus: vec![(0, vec!["A".into(), "B".into()])],
        }
    }

    /// A chunk of rows (time, slot, value) of GPU 0 as `read_chunk` takes them in.
    fn chunk(rows: &[(i64, u16, f32)]) -> MetricChunk {
        let mut c = MetricChunk {
            rows: rows.len() as u64,
            skips: Skips::default(),
            gpus: vec![Columns {
                time: Vec::new(),
                values: vec![Vec::new(); 2],
            }],
            unordered: Vec::new(),
        };
        for &(t, slot, v) in rows {
            c.add(0, t, slot, v);
        }
        c
    }

    #[test]
    fn chunks_in_order_out_of_order_and_cut_mid_instant_give_the_sorted_columns() {
        // Instants 10..=60; an instant cut between two chunks (30), a row behind in a chunk
        // (15), a whole chunk behind the one before (20, 25).
        let chunks = [
            vec![(10, 0, 1.0), (10, 1, 2.0), (30, 0, 3.0)],
            vec![(30, 1, 4.0), (40, 0, 5.0), (15, 1, 6.0), (40, 1, 7.0)],
            vec![(20, 0, 8.0), (25, 1, 9.0)],
            vec![(60, 0, 10.0)],
        ];
        let mut merger = MetricMerger::default();
        for rows in &chunks {
            merger.add(chunk(rows));
        }
        let out = merger.finish(&keys(), &Default::default());
        assert_eq!(out.len(), 1);
        let m = &out[0];
        assert_eq!(m.time, vec![10, 15, 20, 25, 30, 40, 60]);
        let a = m.metrics[0].1.to_f32();
        let b = m.metrics[1].1.to_f32();
        let show = |v: &[f32]| -> Vec<Option<f32>> {
            v.iter().map(|x| (!x.is_nan()).then_some(*x)).collect()
        };
        assert_eq!(
            show(&a),
            [
                Some(1.0),
                None,
                Some(8.0),
                None,
                Some(3.0),
                Some(5.0),
                Some(10.0)
            ]
        );
        assert_eq!(
            show(&b),
            [
                Some(2.0),
                Some(6.0),
                None,
                Some(9.0),
                Some(4.0),
                Some(7.0),
                None
            ]
        );
        // Whole numbers under 255: a byte a sample.
        assert_eq!(m.metrics[0].1.width(), 1);
    }
}
