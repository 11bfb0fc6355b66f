//! The gap findings of an overview (every gap, the recurring patterns, GPU time per NVTX
//! range) as a cache entry's payload: the gaps as columns, the rest field by field. The
//! order here is the format: change it, bump [`super::FORMAT_VERSION`].

use std::io::{Read, Write};

use super::codec::{Bad, Reader, Result, Writer};
use crate::analysis::gaps::{Cause, Gap, OpRef};
use crate::analysis::nvtx_gpu::{NvtxGpu, NvtxGpuDevice};
use crate::analysis::overview::GapFindings;
use crate::analysis::recurring::RecurringGap;

const CAUSES: [Cause; 4] = [
    Cause::HostSync,
    Cause::HostBound,
    Cause::Dependency,
    Cause::Unknown,
];

fn cause_code(c: Cause) -> u8 {
    CAUSES.iter().position(|&k| k == c).unwrap_or(3) as u8
}

pub fn write<W: Write>(
    w: &mut Writer<W>,
    (gaps, recurring, single_gaps, nvtx_gpu): (&[Gap], &[RecurringGap], &[u32], &[NvtxGpu]),
) -> std::io::Result<()> {
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
    w.column(&column(&|g| g.before_name))?;
    w.column(&column(&|g| g.after_name))?;
    w.column(&column(&|g| g.enclosing))?;
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
            w.u32(d.device)?;
            w.i64(d.gpu_span_ns)?;
            w.i64(d.kernel_ns)?;
            w.u64(d.share_pct.to_bits())?;
        }
    }
    Ok(())
}

pub fn read<R: Read>(r: &mut Reader<R>) -> Result<GapFindings> {
    let device: Vec<u16> = r.column()?;
    let start = r.times()?;
    let end = r.ends(&start)?;
    let columns: Vec<Vec<u32>> = (0..4).map(|_| r.column()).collect::<Result<_>>()?;
    let cause = r.codes(|c| CAUSES.get(c as usize).copied())?;
    let names: Vec<Vec<u32>> = (0..3).map(|_| r.column()).collect::<Result<_>>()?;
    let n = device.len();
    let lengths_agree =
        start.len() == n && cause.len() == n && columns.iter().chain(&names).all(|c| c.len() == n);
    if !lengths_agree {
        return Err(Bad::Damaged("gap columns differ in length"));
    }
    let gaps: Vec<Gap> = (0..n)
        .map(|i| Gap {
            device: device[i],
            start_ns: start[i],
            duration_ns: end[i] - start[i],
            before: OpRef {
                stream: columns[0][i],
                op: columns[1][i],
            },
            after: OpRef {
                stream: columns[2][i],
                op: columns[3][i],
            },
            cause: cause[i],
            before_name: names[0][i],
            after_name: names[1][i],
            enclosing: names[2][i],
        })
        .collect();
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
                        device: r.u32()?,
                        gpu_span_ns: r.i64()?,
                        kernel_ns: r.i64()?,
                        share_pct: f64::from_bits(r.u64()?),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(n)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(GapFindings {
        gaps,
        recurring,
        single_gaps,
        nvtx_gpu,
    })
}
