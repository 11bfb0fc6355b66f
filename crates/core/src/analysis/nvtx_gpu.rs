//! GPU time per NVTX range (what Nsight's `nvtx_gpu_proj_sum` gives): per range name, its
//! numbers as `#`, how many instances, the GPU span of the kernels launched inside each
//! instance summed (as iterations are measured), the kernel time inside, and the share of
//! the devices' kernel time. One sweep per thread over its kernels in launch order with a
//! stack of the ranges open at each launch: no per-range table of millions of entries.

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::trace::{DeviceId, NONE, RangeKind, TemplateId, Trace};

#[derive(Debug, Clone, Serialize)]
pub struct NvtxGpuDevice {
    pub device: DeviceId,
    pub gpu_span_ns: i64,
    pub kernel_ns: i64,
    pub share_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NvtxGpu {
    /// The range text with its numbers as `#`.
    pub name: String,
    /// Instances of the range (push/pop ranges of this name, on every thread).
    pub count: u64,
    /// Instances that launched kernels.
    pub with_kernels: u64,
    pub gpu_span_ns: i64,
    pub kernel_ns: i64,
    /// Of all devices' kernel time.
    pub share_pct: f64,
    pub per_device: Vec<NvtxGpuDevice>,
    #[serde(skip)]
    pub template: TemplateId,
}

/// Span and kernel time of one range instance on one device.
#[derive(Clone, Copy)]
struct Open {
    device: DeviceId,
    first_start: i64,
    last_end: i64,
    kernel_ns: i64,
}

/// What one open range instance holds so far, per device: the first device's inline (a
/// range's kernels nearly always run on one GPU), others in a list that allocates only
/// then.
#[derive(Default)]
struct Opens {
    first: Option<Open>,
    more: Vec<Open>,
}

impl Opens {
    fn add(&mut self, device: DeviceId, start: i64, end: i64) {
        let open = Open {
            device,
            first_start: start,
            last_end: end,
            kernel_ns: end - start,
        };
        let slot = match &mut self.first {
            None => {
                self.first = Some(open);
                return;
            }
            Some(o) if o.device == device => o,
            Some(_) => match self.more.iter_mut().find(|o| o.device == device) {
                Some(o) => o,
                None => {
                    self.more.push(open);
                    return;
                }
            },
        };
        slot.first_start = slot.first_start.min(start);
        slot.last_end = slot.last_end.max(end);
        slot.kernel_ns += end - start;
    }
}

#[derive(Default, Clone, Copy)]
struct Totals {
    instances: u64,
    span_ns: i64,
    kernel_ns: i64,
}

/// Per range name, the most GPU span first.
/// GPU time per NVTX range; with `window`, of the kernels starting in it (and the ranges
/// counted that start in it).
pub fn nvtx_gpu(trace: &Trace, window: Option<super::intervals::Window>) -> Vec<NvtxGpu> {
    crate::profile_scope!("analysis: GPU time per NVTX range");
    // Per thread, the streams it launched into (device and stream indices, in the trace's
    // order): its kernels are looked for there alone. Every thread reading every op read a
    // job of many ranks once per thread.
    let streams_of: Vec<Vec<(usize, usize)>> = {
        let mut v = vec![Vec::new(); trace.threads.len()];
        for (di, d) in trace.devices.iter().enumerate() {
            for (si, s) in d.streams.iter().enumerate() {
                for &t in &s.ops.launch_thread {
                    if t != NONE {
                        let streams: &mut Vec<(usize, usize)> = &mut v[t as usize];
                        if streams.last() != Some(&(di, si)) {
                            streams.push((di, si));
                        }
                    }
                }
            }
        }
        v
    };
    let per_thread: Vec<ThreadTotals> = (0..trace.threads.len())
        .into_par_iter()
        .map(|t| thread_totals(trace, t, &streams_of[t], window))
        .collect();
    let mut totals: FxHashMap<(TemplateId, DeviceId), Totals> = FxHashMap::default();
    let mut counts: FxHashMap<TemplateId, u64> = FxHashMap::default();
    for (by_device, by_count) in per_thread {
        for (k, v) in by_device {
            let e = totals.entry(k).or_default();
            e.instances += v.instances;
            e.span_ns += v.span_ns;
            e.kernel_ns += v.kernel_ns;
        }
        for (k, n) in by_count {
            *counts.entry(k).or_default() += n;
        }
    }
    let device_kernel_ns: FxHashMap<DeviceId, i64> = trace
        .devices
        .iter()
        .map(|d| {
            let ns = d
                .streams
                .iter()
                .map(|s| {
                    (0..s.ops.len())
                        .filter(|&i| s.ops.kind[i].is_kernel())
                        .map(|i| s.ops.duration(i))
                        .sum::<i64>()
                })
                .sum();
            (d.id, ns)
        })
        .collect();
    let all_kernel_ns: i64 = device_kernel_ns.values().sum();
    let pct = |part: i64, all: i64| super::breakdown::pct(part, all);
    let mut out: Vec<NvtxGpu> = counts
        .into_iter()
        .map(|(template, count)| {
            let mut per_device: Vec<NvtxGpuDevice> = trace
                .devices
                .iter()
                .filter_map(|d| {
                    let t = totals.get(&(template, d.id))?;
                    Some(NvtxGpuDevice {
                        device: d.id,
                        gpu_span_ns: t.span_ns,
                        kernel_ns: t.kernel_ns,
                        share_pct: pct(t.kernel_ns, device_kernel_ns[&d.id]),
                    })
                })
                .collect();
            per_device.sort_by_key(|d| d.device);
            let (span, kernel) = per_device
                .iter()
                .fold((0, 0), |a, d| (a.0 + d.gpu_span_ns, a.1 + d.kernel_ns));
            let with_kernels = trace
                .devices
                .iter()
                .filter_map(|d| totals.get(&(template, d.id)))
                .map(|t| t.instances)
                .max()
                .unwrap_or(0);
            NvtxGpu {
                name: trace.strings.template_text(template),
                count,
                with_kernels,
                gpu_span_ns: span,
                kernel_ns: kernel,
                share_pct: pct(kernel, all_kernel_ns),
                per_device,
                template,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.gpu_span_ns
            .cmp(&a.gpu_span_ns)
            .then(b.count.cmp(&a.count))
            .then(a.name.cmp(&b.name))
    });
    out
}

type ThreadTotals = (
    FxHashMap<(TemplateId, DeviceId), Totals>,
    FxHashMap<TemplateId, u64>,
);

/// One thread's ranges: their counts, and the GPU time of the kernels it launched into
/// `streams` (see [`nvtx_gpu`]) inside them.
fn thread_totals(
    trace: &Trace,
    t: usize,
    streams: &[(usize, usize)],
    window: Option<super::intervals::Window>,
) -> ThreadTotals {
    let inside = |at: i64| window.is_none_or(|w| at >= w.start && at < w.end);
    let thread = &trace.threads[t];
    let nvtx = &thread.nvtx;
    let strings = &trace.strings;
    let mut counts: FxHashMap<TemplateId, u64> = FxHashMap::default();
    for r in 0..nvtx.len() {
        if nvtx.kind[r] == RangeKind::PushPop && inside(nvtx.start[r]) {
            *counts.entry(strings.template_of(nvtx.text[r])).or_default() += 1;
        }
    }
    let mut totals: FxHashMap<(TemplateId, DeviceId), Totals> = FxHashMap::default();
    if streams.is_empty() || nvtx.is_empty() {
        return (totals, counts);
    }
    // This thread's kernels, in launch order: (launch call, device, start, end).
    // At most one a call: room reserved once, not grown by copies (a million kernels).
    let ops: usize = streams
        .iter()
        .map(|&(d, s)| trace.devices[d].streams[s].ops.len())
        .sum();
    let mut kernels: Vec<(u32, DeviceId, i64, i64)> = Vec::with_capacity(thread.api.len().min(ops));
    for &(di, si) in streams {
        let (device, ops) = (trace.devices[di].id, &trace.devices[di].streams[si].ops);
        for i in 0..ops.len() {
            if ops.launch_thread[i] == t as u32
                && ops.launch_call[i] != NONE
                && ops.kind[i].is_kernel()
                && inside(ops.start[i])
            {
                kernels.push((ops.launch_call[i], device, ops.start[i], ops.end[i]));
            }
        }
    }
    if !kernels.is_sorted() {
        kernels.sort_unstable();
    }
    let close =
        |range: u32, opens: Opens, totals: &mut FxHashMap<(TemplateId, DeviceId), Totals>| {
            let template = strings.template_of(nvtx.text[range as usize]);
            for o in opens.first.into_iter().chain(opens.more) {
                let e = totals.entry((template, o.device)).or_default();
                e.instances += 1;
                e.span_ns += o.last_end - o.first_start;
                e.kernel_ns += o.kernel_ns;
            }
        };
    // The ranges open at the current launch, outermost first, with what they hold so far.
    let mut stack: Vec<(u32, Opens)> = Vec::new();
    let mut next = 0;
    for (call, device, start, end) in kernels {
        let at = thread.api.start[call as usize];
        while next < nvtx.len() && nvtx.start[next] <= at {
            if nvtx.kind[next] == RangeKind::PushPop {
                while let Some(&(top, _)) = stack.last() {
                    if nvtx.end[top as usize] >= nvtx.start[next] {
                        break;
                    }
                    let (r, opens) = stack.pop().unwrap();
                    close(r, opens, &mut totals);
                }
                stack.push((next as u32, Opens::default()));
            }
            next += 1;
        }
        while let Some(&(top, _)) = stack.last() {
            if nvtx.end[top as usize] >= at {
                break;
            }
            let (r, opens) = stack.pop().unwrap();
            close(r, opens, &mut totals);
        }
        for (_, opens) in &mut stack {
            opens.add(device, start, end);
        }
    }
    while let Some((r, opens)) = stack.pop() {
        close(r, opens, &mut totals);
    }
    (totals, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn each_ranges_kernels_give_its_span_and_time_nested_ranges_their_own() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        for s in 0..2i64 {
            let t0 = s * 1_000;
            b.range(t, &format!("step_{s}"), t0, t0 + 900);
            b.range(t, "attn", t0 + 10, t0 + 50);
            let c1 = b.call(t, "cudaLaunchKernel", t0 + 20, t0 + 25);
            b.kernel(0, 7, "flash", (t0 + 100, t0 + 300), Some(c1));
            let c2 = b.call(t, "cudaLaunchKernel", t0 + 60, t0 + 65);
            b.kernel(0, 7, "gemm", (t0 + 400, t0 + 450), Some(c2));
        }
        b.range(t, "idle", 5_000, 6_000);
        let trace = b.build();
        let ranges = nvtx_gpu(&trace, None);
        let get = |name: &str| ranges.iter().find(|r| r.name == name).unwrap();
        let step = get("step_#");
        assert_eq!((step.count, step.with_kernels), (2, 2));
        assert_eq!((step.gpu_span_ns, step.kernel_ns), (2 * 350, 2 * 250));
        assert_eq!(step.share_pct, 100.0);
        let attn = get("attn");
        assert_eq!((attn.gpu_span_ns, attn.kernel_ns), (2 * 200, 2 * 200));
        assert_eq!(attn.share_pct, 80.0);
        let idle = get("idle");
        assert_eq!((idle.count, idle.with_kernels, idle.gpu_span_ns), (1, 0, 0));
        assert_eq!(ranges[0].name, "step_#", "most GPU span first");
    }
}
