//! Time each CPU thread spent waiting for the GPU in synchronising CUDA calls
//! (`*Synchronize*`, blocking copies): what an export without GPU activity can still say,
//! and a first sign of a host that waits.

use serde::Serialize;

use super::gaps::sync_call_names;
use super::intervals::Window;
use crate::trace::Trace;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SyncName {
    pub name: String,
    pub count: usize,
    pub total_ns: i64,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ThreadSync {
    /// Index into `Trace::threads`.
    #[serde(skip)]
    pub thread: usize,
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    /// First to last API call or NVTX range of the thread.
    pub span_ns: i64,
    /// Union of its synchronising calls (a runtime call and the driver call inside it
    /// count once).
    pub sync_ns: i64,
    pub sync_calls: usize,
    /// Synchronising calls by name, largest total first (at most 5).
    pub by_name: Vec<SyncName>,
}

impl ThreadSync {
    pub fn share_pct(&self) -> f64 {
        super::breakdown::pct(self.sync_ns, self.span_ns)
    }
}

/// Threads that made synchronising calls, the most time in them first; within `window`
/// when one is given (calls cut at its edges, each thread's span too).
pub fn sync_time_per_thread(trace: &Trace, window: Option<Window>) -> Vec<ThreadSync> {
    let (lo, hi) = window.map_or((i64::MIN, i64::MAX), |w| (w.start, w.end));
    crate::profile_scope!("analysis: CPU sync per thread");
    let is_sync = sync_call_names(trace);
    let mut out: Vec<ThreadSync> = trace
        .threads
        .iter()
        .enumerate()
        .filter_map(|(index, t)| {
            let api = &t.api;
            let mut by_name: rustc_hash::FxHashMap<u32, (usize, i64)> = Default::default();
            let (mut union, mut covered_to, mut calls) = (0i64, i64::MIN, 0usize);
            for i in 0..api.len() {
                if !is_sync.get(api.name[i] as usize).copied().unwrap_or(false) {
                    continue;
                }
                let (s, e) = (api.start[i].max(lo), api.end[i].min(hi));
                if e <= s && (api.end[i] <= lo || api.start[i] >= hi) {
                    continue;
                }
                calls += 1;
                let entry = by_name.entry(api.name[i]).or_default();
                entry.0 += 1;
                entry.1 += e - s;
                // Calls are sorted by start: the union grows by what lies past `covered_to`.
                union += (e - s.max(covered_to)).max(0);
                covered_to = covered_to.max(e);
            }
            if calls == 0 {
                return None;
            }
            let first = [api.start.first(), t.nvtx.start.first()]
                .into_iter()
                .flatten()
                .min()
                .copied()?
                .max(lo);
            let last = [api.end.iter().max(), t.nvtx.end.iter().max()]
                .into_iter()
                .flatten()
                .max()
                .copied()?
                .min(hi);
            let mut by_name: Vec<SyncName> = by_name
                .into_iter()
                .map(|(id, (count, total_ns))| SyncName {
                    name: trace.strings.get(id).to_string(),
                    count,
                    total_ns,
                })
                .collect();
            by_name.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
            by_name.truncate(5);
            Some(ThreadSync {
                thread: index,
                pid: t.pid,
                tid: t.tid,
                name: t.name.clone(),
                span_ns: last - first,
                sync_ns: union,
                sync_calls: calls,
                by_name,
            })
        })
        .collect();
    out.sort_by(|a, b| b.sync_ns.cmp(&a.sync_ns).then(a.thread.cmp(&b.thread)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn a_runtime_sync_and_the_driver_call_inside_it_count_once() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        b.call(t, "cudaLaunchKernel", 0, 10);
        b.call(t, "cudaStreamSynchronize", 100, 600);
        b.call(t, "cuStreamSynchronize", 110, 590);
        b.call(t, "cudaDeviceSynchronize", 800, 1_000);
        b.range(t, "all", 0, 1_000);
        let trace = b.build();
        let s = &sync_time_per_thread(&trace, None)[0];
        assert_eq!(s.span_ns, 1_000);
        assert_eq!(s.sync_ns, 500 + 200);
        assert_eq!(s.sync_calls, 3);
        assert_eq!(s.by_name[0].name, "cudaStreamSynchronize");
        assert_eq!(s.share_pct(), 70.0);
        // A window: the calls cut at its edges, the span too; a call outside left out.
        let w = sync_time_per_thread(&trace, Some(Window::new(300, 700)))[0].clone();
        assert_eq!(w.span_ns, 400);
        assert_eq!(w.sync_ns, 300);
        assert_eq!(w.sync_calls, 2);
        let none = sync_time_per_thread(&trace, Some(Window::new(20, 90)));
        assert!(none.is_empty(), "{none:?}");
    }
}
