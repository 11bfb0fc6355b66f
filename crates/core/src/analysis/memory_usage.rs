//! Device memory over the run, per GPU: its peak and when, what is left at the end, and how
//! much it grows per iteration (the first question before an out-of-memory error). The
//! balance starts from what was allocated before the capture began, known from the frees
//! of blocks the capture never saw allocated.

use serde::Serialize;

use super::iterations::Iterations;
use crate::trace::{DeviceId, MemoryEvents, Trace};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceMemoryUsage {
    pub device: DeviceId,
    pub peak_bytes: i64,
    pub peak_at_ns: i64,
    pub end_bytes: i64,
    /// Allocated before the capture began (freed in it without being allocated in it).
    pub before_capture_bytes: i64,
    pub allocations: usize,
    pub frees: usize,
    /// Mean change from the end of the first iteration to the end of the last, per
    /// iteration (`None` with fewer than two iterations).
    pub growth_per_iteration_bytes: Option<i64>,
}

/// The balance after each event, from what was allocated before the capture: the blocks
/// freed in it that it never saw allocated (matched by address).
fn balances(m: &MemoryEvents) -> (i64, Vec<i64>) {
    let mut live: rustc_hash::FxHashMap<u64, i64> = Default::default();
    let mut before = 0i64;
    for i in 0..m.len() {
        let b = m.bytes[i];
        if b >= 0 {
            *live.entry(m.address[i]).or_default() += b;
        } else if live.remove(&m.address[i]).is_none() {
            before -= b;
        }
    }
    let mut sum = before;
    (
        before,
        m.bytes
            .iter()
            .map(|&b| {
                sum += b;
                sum
            })
            .collect(),
    )
}

pub fn memory_usage(trace: &Trace, iterations: &Iterations) -> Vec<DeviceMemoryUsage> {
    trace
        .memory_usage
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| {
            let (before, balance) = balances(m);
            let (mut peak, mut peak_at) = (before, m.time[0]);
            for (i, &b) in balance.iter().enumerate() {
                if b > peak {
                    (peak, peak_at) = (b, m.time[i]);
                }
            }
            let at = |t: i64| {
                let n = m.time.partition_point(|&x| x <= t);
                if n == 0 { before } else { balance[n - 1] }
            };
            let ends: Vec<i64> = iterations
                .per_device
                .iter()
                .find(|d| d.device == m.device)
                .map(|d| d.cpu.iter().map(|w| w.end).collect())
                .unwrap_or_default();
            let growth = (ends.len() >= 2)
                .then(|| (at(ends[ends.len() - 1]) - at(ends[0])) / (ends.len() as i64 - 1));
            DeviceMemoryUsage {
                device: m.device,
                peak_bytes: peak,
                peak_at_ns: peak_at,
                end_bytes: *balance.last().unwrap_or(&before),
                before_capture_bytes: before,
                allocations: m.bytes.iter().filter(|&&b| b > 0).count(),
                frees: m.bytes.iter().filter(|&&b| b < 0).count(),
                growth_per_iteration_bytes: growth,
            }
        })
        .collect()
}
