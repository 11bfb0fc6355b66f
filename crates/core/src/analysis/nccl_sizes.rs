//! NCCL kernels by GPU, collective type and message size: the window's NCCL table, where
//! a type's duration histogram splits by size (two all-to-all sizes read as two humps).

use crate::trace::{DeviceId, DeviceIndex};
use std::collections::{BTreeMap, HashMap};

use super::nccl_payload::{KernelTransfers, percentile};
use super::summary::{collective_type, histogram};
use crate::sorted::median;
use crate::trace::{OpKind, StrId, Trace};

/// Which of a type's kernels a [`SizeGroup`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeClass {
    /// Every kernel of the type.
    All,
    /// Kernels that moved `[from, 2 × from)` bytes.
    Bytes { from: u64 },
    /// Kernels whose calls carry no message size.
    Unknown,
}

/// NCCL kernels of one GPU, type (as [`collective_type`] reads the kernel's name) and size
/// class: durations as the NCCL table shows them, and what their transfers moved.
#[derive(Debug, Clone)]
pub struct SizeGroup {
    pub device: DeviceId,
    pub collective: &'static str,
    pub class: SizeClass,
    pub count: usize,
    pub total_ns: i64,
    pub median_ns: i64,
    pub histogram: Vec<(i64, usize)>,
    /// Of its kernels with a transfer: how many, the bytes they moved (summed, smallest,
    /// largest) and their median bandwidths.
    pub transfers: usize,
    pub bytes_total: u64,
    pub bytes_min: u64,
    pub bytes_max: u64,
    pub algbw_gbps_median: Option<f64>,
    pub busbw_gbps_median: Option<f64>,
    /// Of `count`, how many the window's edges cut (their time, and in proportion their
    /// bytes, counted inside it only).
    pub cut: usize,
}

#[derive(Default)]
struct Acc {
    cut: usize,
    durations: Vec<i64>,
    bytes: Vec<u64>,
    algbw: Vec<f64>,
    busbw: Vec<f64>,
}

/// Every (GPU, type) with its kernels of all sizes, then one group per size class, sorted
/// by GPU, type and class.
pub fn size_groups(
    trace: &Trace,
    transfers: &KernelTransfers,
    window: Option<super::intervals::Window>,
) -> Vec<SizeGroup> {
    crate::profile_scope!("analysis: NCCL by message size");
    let mut acc: BTreeMap<(DeviceId, &'static str, SizeClass), Acc> = BTreeMap::new();
    let mut type_of: HashMap<StrId, &'static str> = HashMap::new();
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            for (i, inside, cut) in super::intervals::ops_within(stream, window) {
                if ops.kind[i] != OpKind::Nccl {
                    continue;
                }
                let t = *type_of
                    .entry(ops.name[i])
                    .or_insert_with(|| collective_type(&trace.strings.get(ops.name[i])));
                let transfer = transfers.get(DeviceIndex(d), s, i);
                let class = transfer.map_or(SizeClass::Unknown, |k| SizeClass::Bytes {
                    from: 1 << (63 - k.bytes.max(1).leading_zeros()),
                });
                let whole = ops.duration(i);
                for class in [SizeClass::All, class] {
                    let a = acc.entry((device.id, t, class)).or_default();
                    a.durations.push(inside);
                    a.cut += usize::from(cut);
                    if let Some(k) = transfer {
                        // A cut transfer moved its bytes in proportion to its time inside.
                        a.bytes.push(if cut && whole > 0 {
                            (k.bytes as f64 * inside as f64 / whole as f64).round() as u64
                        } else {
                            k.bytes
                        });
                        a.algbw.push(k.algbw_gbps);
                        a.busbw.push(k.busbw_gbps);
                    }
                }
            }
        }
    }
    acc.into_iter()
        .map(|((device, collective, class), mut a)| {
            a.algbw.sort_by(f64::total_cmp);
            a.busbw.sort_by(f64::total_cmp);
            SizeGroup {
                device,
                collective,
                class,
                count: a.durations.len(),
                total_ns: a.durations.iter().sum(),
                median_ns: median(&a.durations),
                histogram: histogram(&a.durations),
                transfers: a.bytes.len(),
                bytes_total: a.bytes.iter().sum(),
                bytes_min: a.bytes.iter().copied().min().unwrap_or(0),
                bytes_max: a.bytes.iter().copied().max().unwrap_or(0),
                algbw_gbps_median: percentile(&a.algbw, 0.5),
                busbw_gbps_median: percentile(&a.busbw, 0.5),
                cut: a.cut,
            }
        })
        .collect()
}
