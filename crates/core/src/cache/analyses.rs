//! The analyses of an overview as cache entries' payloads. The gap findings (every gap, the
//! recurring patterns, GPU time per NVTX range): the gaps as columns, the rest field by
//! field; the order here is the format: change it, bump [`super::FORMAT_VERSION`]. The
//! other analyses (small: a row per device, iteration, kernel name…) as JSON, with the
//! fields the report leaves out beside them.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use super::codec::{Bad, Reader, Result, Writer};
use crate::analysis::cpu_sync::ThreadSync;
use crate::analysis::gaps::{Cause, Gap, OpRef};
use crate::analysis::intervals::Window;
use crate::analysis::iterations::Iterations;
use crate::analysis::memory::MemoryStat;
use crate::analysis::nccl_payload::NcclPayload;
use crate::analysis::nccl_wait::NcclWaits;
use crate::analysis::nvtx_gpu::{NvtxGpu, NvtxGpuDevice};
use crate::analysis::recurring::RecurringGap;
use crate::analysis::summary::{KernelStat, NcclStat};
use crate::overview::GapFindings;
use crate::overview::{Analyses, DeviceSummary, Overview};
use crate::trace::DeviceId;

const CAUSES: [Cause; 5] = [
    Cause::HostSync,
    Cause::HostBound,
    Cause::Dependency,
    Cause::Unknown,
    Cause::AfterSync,
];

fn cause_code(c: Cause) -> u8 {
    CAUSES.iter().position(|&k| k == c).unwrap_or(3) as u8
}

/// Gaps as columns (a run of one device's, one entry each, read in parallel).
pub fn write_gaps<W: Write>(w: &mut Writer<W>, gaps: &[Gap]) -> std::io::Result<()> {
    let column = |f: &dyn Fn(&Gap) -> u32| gaps.iter().map(f).collect::<Vec<u32>>();
    let device: Vec<u16> = gaps.iter().map(|g| g.device).collect();
    let start: Vec<i64> = gaps.iter().map(|g| g.start_ns).collect();
    let end: Vec<i64> = gaps.iter().map(Gap::end_ns).collect();
    w.column(&device)?;
    w.times(&start)?;
    w.ends(&start, &end)?;
    w.column(&column(&|g| g.before.stream))?;
    w.column(&column(&|g| g.before.op))?;
    w.column(&column(&|g| g.after.stream))?;
    w.column(&column(&|g| g.after.op))?;
    w.codes(gaps, |g| cause_code(g.cause))?;
    w.column(&column(&|g| g.enclosing))
}

/// The rest of the gap findings, and how many gaps each gap entry holds.
pub fn write_rest<W: Write>(
    w: &mut Writer<W>,
    (recurring, single_gaps, nvtx_gpu): (&[RecurringGap], &[u32], &[NvtxGpu]),
    part_lens: &[usize],
) -> std::io::Result<()> {
    let lens: Vec<u64> = part_lens.iter().map(|&n| n as u64).collect();
    w.column(&lens)?;
    w.u64(recurring.len() as u64)?;
    for r in recurring {
        w.str(&r.signature)?;
        w.u64(r.count as u64)?;
        w.i64(r.total_ns)?;
        w.i64(r.median_ns)?;
        w.column(&r.members)?;
    }
    w.column(single_gaps)?;
    w.u64(nvtx_gpu.len() as u64)?;
    for n in nvtx_gpu {
        w.str(&n.name)?;
        w.u64(n.count)?;
        w.u64(n.with_kernels)?;
        w.i64(n.gpu_span_ns)?;
        w.i64(n.kernel_ns)?;
        w.u64(n.share_pct.to_bits())?;
        w.u32(n.template)?;
        w.u64(n.per_device.len() as u64)?;
        for d in &n.per_device {
            w.u32(d.device.0)?;
            w.i64(d.gpu_span_ns)?;
            w.i64(d.kernel_ns)?;
            w.u64(d.share_pct.to_bits())?;
        }
    }
    Ok(())
}

/// One gap entry's columns, as read.
pub struct GapColumns {
    device: Vec<u16>,
    start: Vec<i64>,
    end: Vec<i64>,
    /// Stream and op before, stream and op after.
    ops: [Vec<u32>; 4],
    cause: Vec<Cause>,
    /// The enclosing range's text.
    enclosing: Vec<u32>,
}

impl GapColumns {
    pub fn len(&self) -> usize {
        self.device.len()
    }

    pub fn gap(&self, i: usize) -> Gap {
        Gap {
            device: self.device[i],
            start_ns: self.start[i],
            duration_ns: self.end[i] - self.start[i],
            before: OpRef {
                stream: self.ops[0][i],
                op: self.ops[1][i],
            },
            after: OpRef {
                stream: self.ops[2][i],
                op: self.ops[3][i],
            },
            cause: self.cause[i],
            enclosing: self.enclosing[i],
        }
    }
}

/// Reads a gap entry's columns (the gaps are then built in one pass: a pass per column
/// over hundreds of MB of gaps took as long again as the reading).
pub fn read_gap_columns<R: Read>(r: &mut Reader<R>) -> Result<GapColumns> {
    let device: Vec<u16> = r.column()?;
    let start = r.times()?;
    let end = r.ends(&start)?;
    let ops = [r.column()?, r.column()?, r.column()?, r.column()?];
    let cause = r.codes(|c| CAUSES.get(c as usize).copied())?;
    let enclosing: Vec<u32> = r.column()?;
    let n = device.len();
    let same = [start.len(), end.len(), cause.len(), enclosing.len()]
        .into_iter()
        .chain(ops.iter().map(Vec::len))
        .all(|len| len == n);
    if !same {
        return Err(Bad::Damaged("gap columns differ in length"));
    }
    Ok(GapColumns {
        device,
        start,
        end,
        ops,
        cause,
        enclosing,
    })
}

/// The rest of the gap findings (with no gaps yet) and the gap entries' lengths.
pub fn read_rest<R: Read>(r: &mut Reader<R>) -> Result<(GapFindings, Vec<usize>)> {
    let lens: Vec<u64> = r.column()?;
    let n: u64 = lens.iter().sum();
    let lens: Vec<usize> = lens.into_iter().map(|l| l as usize).collect();
    let n = n as usize;
    let in_range = |members: &[u32]| members.iter().all(|&m| (m as usize) < n);
    let recurring = (0..r.count(40)?)
        .map(|_| {
            let group = RecurringGap {
                signature: r.str()?,
                count: r.u64()? as usize,
                total_ns: r.i64()?,
                median_ns: r.i64()?,
                members: r.column()?,
            };
            if in_range(&group.members) {
                Ok(group)
            } else {
                Err(Bad::Damaged("a pattern's gap past the end"))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let single_gaps: Vec<u32> = r.column()?;
    if !in_range(&single_gaps) {
        return Err(Bad::Damaged("a single gap past the end"));
    }
    let nvtx_gpu = (0..r.count(52)?)
        .map(|_| {
            let mut n = NvtxGpu {
                name: r.str()?,
                count: r.u64()?,
                with_kernels: r.u64()?,
                gpu_span_ns: r.i64()?,
                kernel_ns: r.i64()?,
                share_pct: f64::from_bits(r.u64()?),
                template: r.u32()?,
                per_device: Vec::new(),
            };
            n.per_device = (0..r.count(28)?)
                .map(|_| {
                    Ok(NvtxGpuDevice {
                        device: DeviceId(r.u32()?),
                        gpu_span_ns: r.i64()?,
                        kernel_ns: r.i64()?,
                        share_pct: f64::from_bits(r.u64()?),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(n)
        })
        .collect::<Result<Vec<_>>>()?;
    let findings = GapFindings {
        gaps: Vec::new(),
        recurring,
        single_gaps,
        nvtx_gpu,
    };
    Ok((findings, lens))
}

/// [`Analyses`] as JSON: serde's derives (the report's), with the fields they skip beside.
#[derive(Serialize, Deserialize)]
struct KeptAnalyses {
    devices: Vec<DeviceSummary>,
    iterations: Iterations,
    /// Per device of `iterations`: its thread, CPU ranges and GPU spans.
    iteration_parts: Vec<(usize, Vec<Window>, Vec<Option<Window>>)>,
    kernels: Vec<KernelStat>,
    nccl: Vec<NcclStat>,
    cpu_sync: Vec<ThreadSync>,
    /// Per row of `cpu_sync`: its thread.
    cpu_sync_threads: Vec<usize>,
    memory: Vec<MemoryStat>,
    nccl_wait: NcclWaits,
    nccl_payload: NcclPayload,
}

/// `overview`'s analyses as the text of an entry.
pub fn analyses_json(overview: &Overview) -> Option<String> {
    let kept = KeptAnalyses {
        devices: overview.devices.clone(),
        iterations: overview.iterations.clone(),
        iteration_parts: overview
            .iterations
            .per_device
            .iter()
            .map(|d| (d.thread, d.cpu.clone(), d.spans.clone()))
            .collect(),
        kernels: overview.kernels.clone(),
        nccl: overview.nccl.clone(),
        cpu_sync: overview.cpu_sync.clone(),
        cpu_sync_threads: overview.cpu_sync.iter().map(|t| t.thread).collect(),
        memory: overview.memory.clone(),
        nccl_wait: overview.nccl_wait.clone(),
        nccl_payload: overview.nccl_payload.clone(),
    };
    serde_json::to_string(&kept).ok()
}

/// The analyses back from [`analyses_json`]'s text; `None` when it does not fit together
/// (`threads`: how many threads the trace has).
pub fn analyses_from_json(text: &str, threads: usize) -> Option<Analyses> {
    let mut kept: KeptAnalyses = serde_json::from_str(text).ok()?;
    let fits = kept.iteration_parts.len() == kept.iterations.per_device.len()
        && kept.cpu_sync_threads.len() == kept.cpu_sync.len()
        && kept.iteration_parts.iter().all(|p| p.0 < threads)
        && kept.cpu_sync_threads.iter().all(|&t| t < threads);
    if !fits {
        return None;
    }
    for (d, (thread, cpu, spans)) in kept
        .iterations
        .per_device
        .iter_mut()
        .zip(kept.iteration_parts)
    {
        (d.thread, d.cpu, d.spans) = (thread, cpu, spans);
    }
    for (row, thread) in kept.cpu_sync.iter_mut().zip(kept.cpu_sync_threads) {
        row.thread = thread;
    }
    Some(Analyses {
        devices: kept.devices,
        iterations: kept.iterations,
        kernels: kept.kernels,
        nccl: kept.nccl,
        cpu_sync: kept.cpu_sync,
        memory: kept.memory,
        nccl_wait: kept.nccl_wait,
        nccl_payload: kept.nccl_payload,
    })
}
