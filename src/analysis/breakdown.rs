//! Time breakdown of a device in a window: compute only, NCCL only, overlap, memory only,
//! idle. At each instant the device is in exactly one state, so the five add up to the
//! window. Unions, not sums: concurrent kernels on several streams count once.

use serde::Serialize;

use super::intervals::{Class, Window, boundary_events};
use crate::trace::{Device, OpKind};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    pub compute_only: i64,
    pub nccl_only: i64,
    pub overlap: i64,
    pub memory_only: i64,
    pub idle: i64,
}

impl Breakdown {
    pub fn total(&self) -> i64 {
        self.compute_only + self.nccl_only + self.overlap + self.memory_only + self.idle
    }
}

pub fn breakdown(device: &Device, window: Window) -> Breakdown {
    let mut out = Breakdown::default();
    let mut active = [0i32; 3];
    let mut t = window.start;
    for (time, delta, class) in boundary_events(device, window) {
        let span = time - t;
        match (
            active[Class::Compute as usize] > 0,
            active[Class::Nccl as usize] > 0,
            active[Class::Memory as usize] > 0,
        ) {
            (true, true, _) => out.overlap += span,
            (true, false, _) => out.compute_only += span,
            (false, true, _) => out.nccl_only += span,
            (false, false, true) => out.memory_only += span,
            (false, false, false) => out.idle += span,
        }
        active[class as usize] += delta as i32;
        t = time;
    }
    out.idle += window.end - t;
    debug_assert_eq!(out.total(), window.len());
    out
}

/// `part` as a percentage of `all` (0 when `all` is 0).
pub fn pct(part: i64, all: i64) -> f64 {
    if all > 0 {
        100.0 * part as f64 / all as f64
    } else {
        0.0
    }
}

/// The same-stream diagnosis: the stream with the most NCCL time, and the shares of the
/// device's NCCL and compute time that run on it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SameStream {
    pub stream: u32,
    pub nccl_pct: f64,
    pub compute_pct: f64,
}

impl SameStream {
    /// The diagnosis in one sentence.
    pub fn sentence(&self) -> String {
        if self.nccl_pct >= 99.5 && self.compute_pct >= 99.5 {
            format!(
                "All NCCL and all compute kernels run on stream {}: communication cannot overlap compute as launched, so every NCCL nanosecond adds to step time.",
                self.stream
            )
        } else if self.compute_pct >= 50.0 {
            format!(
                "Stream {} carries {:.0} % of NCCL time and {:.0} % of compute time: most communication is serialised with compute.",
                self.stream, self.nccl_pct, self.compute_pct
            )
        } else {
            format!(
                "NCCL runs mostly on stream {} ({:.0} % of NCCL time) with {:.0} % of compute time on it: communication can overlap compute.",
                self.stream, self.nccl_pct, self.compute_pct
            )
        }
    }
}

/// `None` when the device ran no NCCL kernel in the window. Times are clipped to the window;
/// ops of one stream never overlap, so per-stream sums are unions.
pub fn same_stream(device: &Device, window: Window) -> Option<SameStream> {
    let mut nccl = Vec::with_capacity(device.streams.len());
    let mut compute = Vec::with_capacity(device.streams.len());
    for stream in &device.streams {
        let ops = &stream.ops;
        let (mut n, mut c) = (0i64, 0i64);
        for i in super::intervals::ops_touching(stream, window) {
            let Some((s, e)) = window.clip(ops.start[i], ops.end[i]) else {
                continue;
            };
            match ops.kind[i] {
                OpKind::Nccl => n += e - s,
                OpKind::Compute => c += e - s,
                _ => {}
            }
        }
        nccl.push((stream.id, n));
        compute.push(c);
    }
    let (best, &(stream, nccl_on)) = nccl
        .iter()
        .enumerate()
        .max_by_key(|(_, (s, t))| (*t, std::cmp::Reverse(*s)))?;
    if nccl_on == 0 {
        return None;
    }
    Some(SameStream {
        stream,
        nccl_pct: pct(nccl_on, nccl.iter().map(|p| p.1).sum()),
        compute_pct: pct(compute[best], compute.iter().sum()),
    })
}
