//! Memory transfers per device and kind (HtoD, DtoH, DtoD, PtoP, …, memset): count, bytes,
//! time, bandwidth, and how many came from or went to pageable host memory — what a
//! trace that is mostly "memory only" is doing.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::trace::{DeviceId, OpKind, Trace};

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MemoryStat {
    pub device: DeviceId,
    /// `HtoD`, `DtoH`, `DtoD`, `PtoP`, … or `memset`.
    pub kind: String,
    pub count: usize,
    pub bytes: u64,
    pub total_ns: i64,
    /// Bytes per ns = GB/s, over the ops' summed time (copies only: a memset's is no
    /// transfer rate, and is 0).
    pub gbps: f64,
    /// The rate is beyond what any GPU's memory does ([`SUSPECT_GBPS`]): the recorded
    /// times are too short to be believed (a 4 GB memset "in a microsecond").
    pub gbps_suspect: bool,
    /// Copies from or to pageable host memory.
    pub pageable: usize,
    /// Of `count`, how many the window's edges cut (their time and, in proportion, their
    /// bytes counted inside it only).
    #[serde(default, skip_serializing_if = "super::summary::is_zero")]
    pub cut: usize,
}

/// Above this, a copy's rate is no hardware's (HBM3e moves about 5 TB/s).
pub const SUSPECT_GBPS: f64 = 6_000.0;

impl MemoryStat {
    /// The rate in words: none for a memset, flagged where it cannot be true.
    pub fn rate_text(&self) -> String {
        if self.kind == "memset" {
            String::new()
        } else if self.gbps_suspect {
            format!("{:.0} GB/s, suspect: faster than any GPU memory", self.gbps)
        } else {
            crate::format::format_rate(self.gbps)
        }
    }
}

/// Copies and memsets by kind per GPU, most bytes first within a device: within `window`
/// when one is given, each op clipped to it (its bytes in proportion to its time inside).
pub fn memory_by_kind(trace: &Trace, window: Option<super::intervals::Window>) -> Vec<MemoryStat> {
    crate::profile_scope!("analysis: memory by kind");
    let mut out = Vec::new();
    for device in &trace.devices {
        let mut by_kind: BTreeMap<String, MemoryStat> = BTreeMap::new();
        for stream in &device.streams {
            let ops = &stream.ops;
            for (i, inside, cut) in super::intervals::ops_within(stream, window) {
                if ops.kind[i].is_kernel() {
                    continue;
                }
                let kind = if ops.kind[i] == OpKind::Memset {
                    "memset".to_string()
                } else {
                    let name = trace.strings.get(ops.name[i]);
                    name.strip_prefix("Memcpy ").unwrap_or(&name).to_string()
                };
                let info = device
                    .mem_info
                    .get(ops.detail[i] as usize)
                    .copied()
                    .unwrap_or_default();
                let stat = by_kind.entry(kind.clone()).or_insert_with(|| MemoryStat {
                    device: device.id,
                    kind,
                    count: 0,
                    bytes: 0,
                    total_ns: 0,
                    gbps: 0.0,
                    gbps_suspect: false,
                    pageable: 0,
                    cut: 0,
                });
                let whole = ops.duration(i);
                stat.count += 1;
                stat.cut += usize::from(cut);
                // Saturating: a file's byte counts are not trusted to add up in a u64.
                stat.bytes = stat.bytes.saturating_add(if cut && whole > 0 {
                    (info.bytes as f64 * inside as f64 / whole as f64).round() as u64
                } else {
                    info.bytes
                });
                stat.total_ns += inside;
                stat.pageable += info.pageable as usize;
            }
        }
        let mut stats: Vec<MemoryStat> = by_kind
            .into_values()
            .map(|mut s| {
                s.gbps = if s.total_ns > 0 && s.kind != "memset" {
                    s.bytes as f64 / s.total_ns as f64
                } else {
                    0.0
                };
                s.gbps_suspect = s.gbps > SUSPECT_GBPS;
                s
            })
            .collect();
        stats.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.kind.cmp(&b.kind)));
        out.extend(stats);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn copies_add_up_per_device_and_kind_with_their_bandwidth_and_pageable_count() {
        let mut b = TraceBuilder::new();
        b.memcpy(0, 1, "HtoD", 2_000, (0, 100), true, None);
        b.memcpy(0, 1, "HtoD", 6_000, (200, 300), false, None);
        b.memcpy(0, 1, "DtoH", 500, (400, 410), false, None);
        b.memcpy(1, 1, "HtoD", 1_000, (0, 10), false, None);
        b.kernel(0, 1, "gemm", (500, 600), None);
        let trace = b.build();
        let stats = memory_by_kind(&trace, None);
        let htod = &stats[0];
        assert_eq!((htod.device, htod.kind.as_str()), (DeviceId(0), "HtoD"));
        assert_eq!(
            (htod.count, htod.bytes, htod.total_ns, htod.pageable),
            (2, 8_000, 200, 1)
        );
        assert_eq!(htod.gbps, 40.0);
        assert_eq!(stats.len(), 3);
        assert_eq!(stats[2].device, DeviceId(1));
    }
}
