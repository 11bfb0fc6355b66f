//! What each NCCL kernel moved, for the window: worked out on a worker once the trace is
//! in (it reads every NCCL call's payload), then shown in the NCCL table, the timeline's
//! tooltip and Details.

use std::sync::Arc;

use eframe::egui;

use super::task::{Task, take_answer};
use crate::analysis::nccl_payload::{KernelTransfer, KernelTransfers, comm_id, kernel_transfers};
use crate::analysis::nccl_sizes::{SizeGroup, size_groups};
use crate::format::{format_bytes, format_ns};
use crate::trace::Trace;

/// Each kernel's transfer, and the NCCL table's groups by size.
pub struct NcclSizes {
    pub transfers: KernelTransfers,
    pub groups: Vec<SizeGroup>,
}

impl NcclSizes {
    pub fn new(trace: &Trace) -> Self {
        let transfers = kernel_transfers(trace);
        let groups = size_groups(trace, &transfers, None);
        Self { transfers, groups }
    }
}

/// The job and its answer, for the trace it was worked out for.
#[derive(Default)]
pub struct NcclBytes {
    /// Keyed by the trace's address: a reloaded trace (files nudged) is worked out again.
    job: Option<Task<usize, NcclSizes>>,
    ready: Option<(usize, Arc<NcclSizes>)>,
}

fn key(trace: &Arc<Trace>) -> usize {
    Arc::as_ptr(trace) as usize
}

impl NcclBytes {
    /// Starts the work for `trace` unless it is done or under way.
    pub fn start(&mut self, trace: &Arc<Trace>, ctx: Option<&egui::Context>) {
        let k = key(trace);
        let done = self.ready.as_ref().is_some_and(|r| r.0 == k);
        let running = self.job.as_ref().is_some_and(|j| j.key == k);
        if done || running {
            return;
        }
        let trace = trace.clone();
        self.job = Some(Task::compute(k, ctx, move |_| NcclSizes::new(&trace)));
    }

    pub fn poll(&mut self) {
        if let Some((k, sizes)) = take_answer(&mut self.job) {
            self.ready = Some((k, Arc::new(sizes)));
        }
    }

    /// What was worked out for `trace`, once in.
    pub fn ready(&self, trace: &Arc<Trace>) -> Option<&Arc<NcclSizes>> {
        self.ready
            .as_ref()
            .filter(|r| r.0 == key(trace))
            .map(|r| &r.1)
    }

    pub fn busy(&self) -> bool {
        self.job.is_some()
    }
}

/// A kernel's transfer as lines of (name, value), for the tooltip and Details.
pub fn transfer_lines(k: &KernelTransfer) -> Vec<(&'static str, String)> {
    let mut lines = vec![
        ("collective", k.kind.label().to_string()),
        ("bytes", format_bytes(k.bytes)),
        (
            "communicator",
            format!("{} ({} ranks)", comm_id(k.comm), k.ranks),
        ),
    ];
    if !k.peers.is_empty() {
        let peers: Vec<String> = k.peers.iter().map(u32::to_string).collect();
        lines.push(("peers", peers.join(", ")));
    }
    lines.push(("transfer time", format_ns(k.transfer_ns)));
    lines.push((
        "bandwidth",
        format!(
            "{:.1} GB/s bus, {:.1} GB/s algorithm",
            k.busbw_gbps, k.algbw_gbps
        ),
    ));
    lines
}

/// The same, as the tooltip's extra lines.
pub fn transfer_tooltip(k: &KernelTransfer) -> String {
    transfer_lines(k)
        .into_iter()
        .map(|(name, value)| format!("\n{name} {value}"))
        .collect()
}
