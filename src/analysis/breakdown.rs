//! Time breakdown of a device in a window: compute only, NCCL only, overlap, memory only,
//! idle. At each instant the device is in exactly one state, so the five add up to the
//! window. Unions, not sums: concurrent kernels on several streams count once.

use serde::Serialize;

use super::intervals::{Class, Window, boundary_events};
use crate::trace::Device;

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
