//! How much of the capture the GPU was used at all. The breakdown's window runs from a
//! device's first kernel to its last, so a program whose GPU work is 39 µs of a 1 s run
//! reads "compute 100 %": said first here, with what the CPU did meanwhile (the longest
//! calls and ranges outside the GPU's window) and the copies outside it.

use serde::Serialize;

use crate::trace::{OpKind, Trace};

/// Below this share of the capture the GPU counts as mostly unused.
pub const MOSTLY_UNUSED_PCT: f64 = 50.0;

#[derive(Debug, Clone, Serialize)]
pub struct CaptureUse {
    /// From the first event recorded to the last.
    pub capture_ns: i64,
    /// From the first kernel to the last, on any GPU.
    pub gpu_window_ns: i64,
    pub gpu_window_pct: f64,
    /// Copies and memsets outside every GPU's kernel window (pageable copies before the
    /// first kernel, a checkpoint after the last).
    pub copies_outside_ns: i64,
    pub mostly_unused: bool,
    /// The longest CUDA calls, OS runtime calls and outermost NVTX ranges outside the GPU's
    /// window on the threads that made CUDA calls, longest first: where the time went
    /// instead.
    pub cpu_outside: Vec<CpuSpan>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CpuSpan {
    /// `cuda`, `osrt` or `nvtx`.
    pub kind: &'static str,
    pub name: String,
    pub duration_ns: i64,
}

/// `None` for a trace without kernels.
pub fn capture_use(trace: &Trace) -> Option<CaptureUse> {
    let (c0, c1) = trace.time_span()?;
    let (g0, g1) = trace
        .devices
        .iter()
        .filter_map(|d| d.kernel_window())
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))?;
    let capture_ns = (c1 - c0).max(1);
    let gpu_window_ns = g1 - g0;
    let outside = |a: i64, b: i64| (g0 - a).max(0).min(b - a) + (b - g1).max(0).min(b - a);
    let mut copies_outside_ns = 0;
    for s in trace.devices.iter().flat_map(|d| &d.streams) {
        for i in 0..s.ops.len() {
            if matches!(s.ops.kind[i], OpKind::Memcpy | OpKind::Memset) {
                copies_outside_ns += outside(s.ops.start[i], s.ops.end[i]);
            }
        }
    }
    let gpu_window_pct = 100.0 * gpu_window_ns as f64 / capture_ns as f64;
    let mostly_unused = gpu_window_pct < MOSTLY_UNUSED_PCT;
    let mut cpu_outside = Vec::new();
    if mostly_unused {
        let mut spans: Vec<(i64, &'static str, u32)> = Vec::new();
        // The threads that drive the GPU (a driver's helper thread polls all run long).
        for t in trace.threads.iter().filter(|t| !t.api.is_empty()) {
            for i in 0..t.api.len() {
                spans.push((outside(t.api.start[i], t.api.end[i]), "cuda", t.api.name[i]));
            }
            for i in 0..t.osrt.len() {
                spans.push((
                    outside(t.osrt.start[i], t.osrt.end[i]),
                    "osrt",
                    t.osrt.name[i],
                ));
            }
            for i in 0..t.nvtx.len() {
                if t.nvtx.depth[i] == 0 {
                    spans.push((
                        outside(t.nvtx.start[i], t.nvtx.end[i]),
                        "nvtx",
                        t.nvtx.text[i],
                    ));
                }
            }
        }
        spans.sort_by_key(|s| std::cmp::Reverse(s.0));
        cpu_outside = spans
            .into_iter()
            .filter(|s| s.0 > 0)
            .take(3)
            .map(|(d, kind, name)| CpuSpan {
                kind,
                name: trace.strings.get(name).into_owned(),
                duration_ns: d,
            })
            .collect();
    }
    Some(CaptureUse {
        capture_ns,
        gpu_window_ns,
        gpu_window_pct,
        copies_outside_ns,
        mostly_unused,
        cpu_outside,
    })
}

impl CaptureUse {
    /// "The GPUs ran kernels in only 3.9 % of the 1.0 s capture (39.0 µs, first kernel to
    /// last); 60.0 ms of copies fell outside; the rest was the CPU side: cudaMalloc 220.0 ms,
    /// …"; `None` when the GPU was used for most of the capture.
    pub fn sentence(&self) -> Option<String> {
        use crate::format::format_ns;
        if !self.mostly_unused {
            return None;
        }
        let copies = if self.copies_outside_ns > 0 {
            format!(
                "; {} of copies fell outside it",
                format_ns(self.copies_outside_ns)
            )
        } else {
            String::new()
        };
        let cpu: Vec<String> = self
            .cpu_outside
            .iter()
            .map(|c| format!("{} {}", c.name, format_ns(c.duration_ns)))
            .collect();
        let cpu = if cpu.is_empty() {
            String::new()
        } else {
            format!(
                ". Outside it the CPU side took the time: {}",
                cpu.join(", ")
            )
        };
        Some(format!(
            "The GPUs ran kernels in only {:.1} % of the {} capture ({}, first kernel to last: the breakdown below is of that window){copies}{cpu}.",
            self.gpu_window_pct,
            format_ns(self.capture_ns),
            format_ns(self.gpu_window_ns),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn a_gpu_used_for_a_sliver_of_the_run_is_said_with_what_the_cpu_did() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        // 220 ms in cudaMalloc, then 39 µs of kernels, in a 1 s run.
        b.call(t, "cudaMalloc", 0, 220_000_000);
        let c = b.call(t, "cudaLaunchKernel", 300_000_000, 300_005_000);
        b.kernel(0, 7, "k", (300_010_000, 300_049_000), Some(c));
        b.call(t, "cudaFree", 999_000_000, 1_000_000_000);
        let use_ = capture_use(&b.build()).unwrap();
        assert_eq!(use_.capture_ns, 1_000_000_000);
        assert_eq!(use_.gpu_window_ns, 39_000);
        assert!(use_.mostly_unused);
        assert_eq!(use_.cpu_outside[0].name, "cudaMalloc");
        assert_eq!(use_.cpu_outside[0].duration_ns, 220_000_000);
        let s = use_.sentence().unwrap();
        assert!(
            s.contains("0.0 %") && s.contains("cudaMalloc 220.0 ms"),
            "{s}"
        );
    }

    #[test]
    fn a_busy_gpu_gets_no_note() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let c = b.call(t, "cudaLaunchKernel", 0, 5_000);
        b.kernel(0, 7, "k", (10_000, 1_000_000), Some(c));
        let use_ = capture_use(&b.build()).unwrap();
        assert!(!use_.mostly_unused);
        assert!(use_.sentence().is_none());
    }
}
