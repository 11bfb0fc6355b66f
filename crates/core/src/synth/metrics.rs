//! `synth --gpu-metrics`: the GPU's counters sampled at 10 kHz as `--gpu-metrics-devices=all`
//! records them (`GPU_METRICS`, named in `TARGET_INFO_GPU_METRICS`), each sample's values set
//! by the kind of kernel running then: levels per kernel class, so that the truth knows each
//! GPU's means and what a kernel runs at. The metrics' ids differ from GPU to GPU (nsys
//! does not keep them stable), one GPU writes its clock in Hz and one wrapped past 2^31.

use std::collections::BTreeMap;

use serde::Serialize;

use super::program::{KERNELS, SEND_RECV};
use super::sim::TruthOp;

pub const PERIOD_NS: i64 = 100_000;
pub const SM_ACTIVE: &str = "SMs Active [Throughput %]";
pub const TENSOR_ACTIVE: &str = "Tensor Active [Throughput %]";
pub const DRAM_READ: &str = "DRAM Read Bandwidth [Throughput %]";
pub const GPC_CLOCK: &str = "GPC Clock Frequency [MHz]";
/// The metrics an H100 records with `--gpu-metrics-devices=all` (nsys's default set): the
/// first three set by the kernel running, the others derived from them or constant.
pub const METRICS: [&str; 20] = [
    SM_ACTIVE,
    TENSOR_ACTIVE,
    DRAM_READ,
    GPC_CLOCK,
    "SYS Clock Frequency [MHz]",
    "GR Active [Throughput %]",
    "Sync Compute In Flight [Throughput %]",
    "Async Compute In Flight [Throughput %]",
    "SM Issue [Throughput %]",
    "Compute Warps In Flight [Throughput %]",
    "Unallocated Warps in Active SMs [Throughput %]",
    "Vertex/Tess/Geometry Warps in Flight [Throughput %]",
    "Pixel Warps in Flight [Throughput %]",
    "DRAM Write Bandwidth [Throughput %]",
    "PCIe RX Throughput [Throughput %]",
    "PCIe TX Throughput [Throughput %]",
    "NVLink RX Throughput [Throughput %]",
    "NVLink TX Throughput [Throughput %]",
    "PCIe Read Requests to BAR1 [Requests]",
    "PCIe Write Requests to BAR1 [Requests]",
];
/// flash_fwd_kernel's levels: SMs Active, Tensor Active, DRAM Read.
pub const FLASH_LEVELS: [f64; 3] = [95.0, 60.0, 40.0];
/// GPU 3 runs at 2.9 GHz so that its clock in Hz passes 2^31 and wraps.
pub fn clock_mhz(gpu: u32) -> f64 {
    if gpu == 3 { 2900.0 } else { 1755.0 }
}

/// (SMs Active, Tensor Active, DRAM Read) while a kernel of this name runs; idle: zeros.
pub fn levels(op: u16) -> [f64; 3] {
    if op as usize == SEND_RECV {
        return [15.0, 0.0, 20.0];
    }
    let Some(k) = KERNELS.get(op as usize) else {
        // Copies and memsets: the memory busy, the SMs not.
        return [0.0, 0.0, 60.0];
    };
    if k.short.contains("flash") {
        FLASH_LEVELS
    } else if k.short.contains("gemm") {
        [98.0, 80.0, 30.0]
    } else {
        [70.0, 0.0, 70.0]
    }
}

/// `typeId` of GPU `gpu`: a type in the high bits, the GPU in the low byte.
pub fn type_id(gpu: u32) -> i64 {
    (0x1_0000_i64 << 8) | gpu as i64
}

/// The metric id of metric `k` on GPU `gpu`: a different numbering per GPU.
pub fn metric_id(gpu: u32, k: usize) -> i64 {
    ((k as i64 + gpu as i64 * 3) % METRICS.len() as i64) + 10 * (gpu as i64 + 1)
}

/// The raw value GPU `gpu` writes for metric `k` at level `v`: clocks in MHz, in Hz on GPU
/// 2, and on GPU 3 in Hz as an unsigned 32-bit number read back signed (negative).
pub fn raw(gpu: u32, k: usize, v: f64) -> i64 {
    if METRICS[k] != GPC_CLOCK {
        return v.round() as i64;
    }
    match gpu {
        2 => (v * 1e6) as i64,
        3 => (v * 1e6) as i64 - (1i64 << 32),
        _ => v.round() as i64,
    }
}

/// The value of each metric at `t` on GPU `gpu` whose ops (sorted by start) are `ops`
/// (whole numbers, as nsys writes them).
pub fn values_at(gpu: u32, ops: &[TruthOp], t: i64) -> [f64; METRICS.len()] {
    let n = ops.partition_point(|o| o.start <= t);
    let running = ops[n.saturating_sub(16)..n]
        .iter()
        .rev()
        .filter(|o| o.end > t)
        .map(|o| levels(o.op))
        .max_by(|a, b| a[0].total_cmp(&b[0]));
    let [sm, tensor, dram] = running.unwrap_or([0.0; 3]);
    let busy = if sm > 0.0 || dram > 0.0 { 100.0 } else { 0.0 };
    let part = |v: f64, f: f64| (v * f).round();
    [
        sm,
        tensor,
        dram,
        clock_mhz(gpu),
        1980.0,
        busy,
        if sm > 0.0 { 100.0 } else { 0.0 },
        0.0,
        part(sm, 0.4),
        part(sm, 0.6),
        part(sm, 0.3),
        0.0,
        0.0,
        part(dram, 0.5),
        part(dram, 0.1),
        part(dram, 0.05),
        // NCCL's SendRecv moves its bytes over NVLink.
        if tensor == 0.0 && sm == 15.0 {
            60.0
        } else {
            0.0
        },
        if tensor == 0.0 && sm == 15.0 {
            60.0
        } else {
            0.0
        },
        0.0,
        part(dram, 3.0),
    ]
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricsTruth {
    pub device: u32,
    /// Each metric's mean over the GPU's kernel window, as sampled.
    pub means: BTreeMap<String, f64>,
    pub samples: usize,
}

/// The levels of each kernel class, for the truth file.
pub fn class_levels() -> BTreeMap<String, [f64; 3]> {
    KERNELS
        .iter()
        .enumerate()
        .map(|(k, s)| (s.short.to_string(), levels(k as u16)))
        .collect()
}
