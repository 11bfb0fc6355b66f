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
    w.column(&column(&|g| g.before_name))?;
    w.column(&column(&|g| g.after_name))?;
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
            w.u32(d.device)?;
            w.i64(d.gpu_span_ns)?;
            w.i64(d.kernel_ns)?;
            w.u64(d.share_pct.to_bits())?;
        }
    }
    Ok(())
}

/// A gap to be overwritten by [`read_gaps_into`].
pub const BLANK: Gap = Gap {
    device: 0,
    start_ns: 0,
    duration_ns: 0,
    before: OpRef { stream: 0, op: 0 },
    after: OpRef { stream: 0, op: 0 },
    cause: Cause::Unknown,
    before_name: 0,
    after_name: 0,
    enclosing: 0,
};

/// Reads a gap entry into `out`, column by column (one column in memory at a time).
pub fn read_gaps_into<R: Read>(r: &mut Reader<R>, out: &mut [Gap]) -> Result<()> {
    let n = out.len();
    let same = |len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(Bad::Damaged("gap columns differ in length"))
        }
    };
    let device: Vec<u16> = r.column()?;
    same(device.len())?;
    out.iter_mut().zip(device).for_each(|(g, d)| g.device = d);
    let start = r.times()?;
    same(start.len())?;
    let end = r.ends(&start)?;
    for (g, (&s, &e)) in out.iter_mut().zip(start.iter().zip(&end)) {
        g.start_ns = s;
        g.duration_ns = e - s;
    }
    let fields: [fn(&mut Gap) -> &mut u32; 4] = [
        |g| &mut g.before.stream,
        |g| &mut g.before.op,
        |g| &mut g.after.stream,
        |g| &mut g.after.op,
    ];
    for field in fields {
        let column: Vec<u32> = r.column()?;
        same(column.len())?;
        out.iter_mut().zip(column).for_each(|(g, v)| *field(g) = v);
    }
    let cause = r.codes(|c| CAUSES.get(c as usize).copied())?;
    same(cause.len())?;
    out.iter_mut().zip(cause).for_each(|(g, c)| g.cause = c);
    let names: [fn(&mut Gap) -> &mut u32; 3] = [
        |g| &mut g.before_name,
        |g| &mut g.after_name,
        |g| &mut g.enclosing,
    ];
    for field in names {
        let column: Vec<u32> = r.column()?;
        same(column.len())?;
        out.iter_mut().zip(column).for_each(|(g, v)| *field(g) = v);
    }
    Ok(())
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
    let findings = GapFindings {
        gaps: Vec::new(),
        recurring,
        single_gaps,
        nvtx_gpu,
    };
    Ok((findings, lens))
}
