//! Summaries: kernels by name, and NCCL kernels by collective type with a duration
//! histogram. (The health report is the loader's `LoadReport`.)

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use super::intervals::{Window, ops_within};
use crate::sorted::median;
use crate::trace::{Device, DeviceId, OpKind, StrId, Trace};

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct KernelStat {
    pub name: String,
    pub count: usize,
    pub total_ns: i64,
    pub mean_ns: i64,
    pub median_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Share of all kernel time in the window, in percent.
    pub share_pct: f64,
    /// Of `count`, how many the window's edges cut (their time counted inside it only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut: usize,
}

pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The kernels' time inside `window` (clipped to it), by name, longest total first.
pub fn kernels_by_name(
    trace: &Trace,
    devices: &[&Device],
    window: Option<Window>,
) -> Vec<KernelStat> {
    crate::profile_scope!("analysis: kernels by name");
    let mut by_name: HashMap<StrId, (Vec<i64>, usize)> = HashMap::default();
    for device in devices {
        for stream in &device.streams {
            let ops = &stream.ops;
            for (i, inside, cut) in ops_within(stream, window) {
                if !ops.kind[i].is_kernel() {
                    continue;
                }
                let entry = by_name.entry(ops.name[i]).or_default();
                entry.0.push(inside);
                entry.1 += usize::from(cut);
            }
        }
    }
    let all: i64 = by_name.values().flat_map(|v| &v.0).sum();
    let mut stats: Vec<KernelStat> = by_name
        .into_iter()
        .map(|(name, (mut durations, cut))| {
            let total: i64 = durations.iter().sum();
            KernelStat {
                name: trace.strings.get(name).to_string(),
                count: durations.len(),
                total_ns: total,
                mean_ns: total / durations.len() as i64,
                median_ns: crate::sorted::median_in_place(&mut durations),
                min_ns: durations.iter().copied().min().unwrap_or(0),
                max_ns: durations.iter().copied().max().unwrap_or(0),
                share_pct: if all > 0 {
                    100.0 * total as f64 / all as f64
                } else {
                    0.0
                },
                cut,
            }
        })
        .collect();
    stats.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    stats
}

/// Collective type from a kernel name (analysis-definitions.md).
pub fn collective_type(name: &str) -> &'static str {
    const TYPES: [(&str, &str); 7] = [
        ("sendrecv", "SendRecv"),
        ("allreduce", "AllReduce"),
        ("allgather", "AllGather"),
        ("reducescatter", "ReduceScatter"),
        ("broadcast", "Broadcast"),
        ("alltoall", "AllToAll"),
        ("reduce", "Reduce"),
    ];
    let lower = name.to_ascii_lowercase().replace('_', "");
    TYPES
        .iter()
        .find(|(key, _)| lower.contains(key))
        .map_or("other NCCL", |(_, t)| t)
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NcclStat {
    pub device: DeviceId,
    pub collective: String,
    pub count: usize,
    pub total_ns: i64,
    pub median_ns: i64,
    /// Power-of-two duration buckets: (lower bound in ns, count), empty buckets left out.
    pub histogram: Vec<(i64, usize)>,
    /// Collectives lasting at least `OUTLIER_FACTOR` × the median: how many, and the
    /// longest few as (start, duration).
    pub outliers: usize,
    pub longest_outliers: Vec<(i64, i64)>,
    /// Of `count`, how many the window's edges cut (their time counted inside it only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut: usize,
}

/// A collective this many times its type's median is an outlier (a rank waited for
/// another, or the network stalled).
pub const OUTLIER_FACTOR: i64 = 5;

/// NCCL kernels by device and collective type.
pub fn nccl_by_type(trace: &Trace, devices: &[&Device], window: Option<Window>) -> Vec<NcclStat> {
    crate::profile_scope!("analysis: NCCL by type");
    let mut out = Vec::new();
    for device in devices {
        // Per type: each kernel's (time inside the window, start), and how many were cut.
        type Kernels = (Vec<(i64, i64)>, usize);
        let mut by_type: HashMap<&'static str, Kernels> = HashMap::default();
        let mut type_of: HashMap<StrId, &'static str> = HashMap::default();
        for stream in &device.streams {
            let ops = &stream.ops;
            for (i, inside, cut) in ops_within(stream, window) {
                if ops.kind[i] != OpKind::Nccl {
                    continue;
                }
                let t = *type_of
                    .entry(ops.name[i])
                    .or_insert_with(|| collective_type(&trace.strings.get(ops.name[i])));
                let start = window.map_or(ops.start[i], |w| ops.start[i].max(w.start));
                let entry = by_type.entry(t).or_default();
                entry.0.push((inside, start));
                entry.1 += usize::from(cut);
            }
        }
        let mut stats: Vec<NcclStat> = by_type
            .into_iter()
            .map(|(t, (mut kernels, cut))| {
                let durations: Vec<i64> = kernels.iter().map(|k| k.0).collect();
                let median_ns = median(&durations);
                kernels.retain(|k| median_ns > 0 && k.0 >= OUTLIER_FACTOR * median_ns);
                kernels.sort_by_key(|k| std::cmp::Reverse(*k));
                NcclStat {
                    device: device.id,
                    collective: t.to_string(),
                    count: durations.len(),
                    total_ns: durations.iter().sum(),
                    median_ns,
                    histogram: histogram(&durations),
                    outliers: kernels.len(),
                    longest_outliers: kernels.iter().take(3).map(|&(d, s)| (s, d)).collect(),
                    cut,
                }
            })
            .collect();
        stats.sort_by_key(|s| std::cmp::Reverse(s.total_ns));
        out.extend(stats);
    }
    out
}

/// Counts per power-of-two bucket `[2^k, 2^(k+1))` ns.
pub fn histogram(durations: &[i64]) -> Vec<(i64, usize)> {
    let mut buckets = [0usize; 64];
    for &d in durations {
        let k = 63 - (d.max(1) as u64).leading_zeros() as usize;
        buckets[k] += 1;
    }
    buckets
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (1i64 << k, *n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn collective_types_come_from_the_kernel_name() {
        assert_eq!(
            collective_type("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096>)"),
            "SendRecv"
        );
        assert_eq!(
            collective_type("ncclKernel_AllReduce_RING_LL_Sum_float"),
            "AllReduce"
        );
        assert_eq!(collective_type("ncclDevKernel_Generic"), "other NCCL");
    }

    #[test]
    fn a_collective_five_times_its_median_is_an_outlier() {
        let mut b = TraceBuilder::new();
        for k in 0..9 {
            b.kernel(
                0,
                7,
                "ncclDevKernel_AllReduce",
                (k * 1_000, k * 1_000 + 100),
                None,
            );
        }
        b.kernel(0, 7, "ncclDevKernel_AllReduce", (10_000, 10_600), None);
        let trace = b.build();
        let devices: Vec<&Device> = trace.devices.iter().collect();
        let stats = nccl_by_type(&trace, &devices, None);
        let s = &stats[0];
        assert_eq!(
            (s.collective.as_str(), s.count, s.median_ns),
            ("AllReduce", 10, 100)
        );
        assert_eq!(s.outliers, 1);
        assert_eq!(s.longest_outliers, vec![(10_000, 600)]);
    }
}
