//! NCCL by bytes: each NCCL kernel's calls (decoded from NCCL's NVTX payloads, see
//! `trace::NcclCalls`), what collective they make, how many bytes it moved and at what
//! bandwidth, per GPU and per communicator.
//!
//! - A kernel's calls are the NCCL calls its launching thread began after the previous NCCL
//!   kernel's launch and before this one's: a lone `ncclAllReduce` launches inside its own
//!   range, a group's kernel inside `ncclGroupEnd`, after all its sends and receives.
//! - Bytes, as nccl-tests counts them: the message size for all-reduce, broadcast and reduce;
//!   the message times the communicator's size for all-gather and reduce-scatter (NCCL
//!   records one rank's part); a group of sends and receives: its sends summed.
//! - Time: the transfer only, the kernel's time after the last rank's kernel started (see
//!   `nccl_wait`), so a straggler does not read as a slow link; the whole kernel when the
//!   collective is not found on every GPU.
//! - Bus bandwidth = bytes / transfer × nccl-tests' factor: all-reduce 2(n−1)/n; all-gather,
//!   reduce-scatter, all-to-all (n−1)/n; the rest 1.

use crate::trace::{DeviceId, DeviceIndex};
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::nccl_wait::collectives;
use crate::trace::{NONE, OpKind, Trace};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    Gather,
    Scatter,
    SendRecv,
}

impl CollectiveKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::AllReduce => "all-reduce",
            Self::AllGather => "all-gather",
            Self::ReduceScatter => "reduce-scatter",
            Self::Broadcast => "broadcast",
            Self::Reduce => "reduce",
            Self::AllToAll => "all-to-all",
            Self::Gather => "gather",
            Self::Scatter => "scatter",
            Self::SendRecv => "send/recv",
        }
    }

    /// nccl-tests' bus bandwidth factor for `n` ranks.
    pub fn bus_factor(self, n: u32) -> f64 {
        let n = n.max(1) as f64;
        match self {
            Self::AllReduce => 2.0 * (n - 1.0) / n,
            Self::AllGather | Self::ReduceScatter | Self::AllToAll => (n - 1.0) / n,
            _ => 1.0,
        }
    }

    /// Whether NCCL's recorded message is one rank's part of a buffer `n` times larger.
    fn message_is_one_part(self) -> bool {
        matches!(
            self,
            Self::AllGather | Self::ReduceScatter | Self::AllToAll | Self::Gather | Self::Scatter
        )
    }
}

/// What an NCCL call's range text says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Collective(CollectiveKind),
    Send,
    Recv,
    /// Communicator creation (`ncclCommInitRank…`, `ncclCommSplit`): size, rank, device.
    Other,
}

fn call_kind(name: &str) -> CallKind {
    let n = name.strip_prefix("nccl").unwrap_or(name);
    match n {
        "AllReduce" => CallKind::Collective(CollectiveKind::AllReduce),
        "AllGather" => CallKind::Collective(CollectiveKind::AllGather),
        "ReduceScatter" => CallKind::Collective(CollectiveKind::ReduceScatter),
        "Broadcast" | "Bcast" => CallKind::Collective(CollectiveKind::Broadcast),
        "Reduce" => CallKind::Collective(CollectiveKind::Reduce),
        "AlltoAll" | "AllToAll" => CallKind::Collective(CollectiveKind::AllToAll),
        "Gather" => CallKind::Collective(CollectiveKind::Gather),
        "Scatter" => CallKind::Collective(CollectiveKind::Scatter),
        "Send" => CallKind::Send,
        "Recv" => CallKind::Recv,
        _ => CallKind::Other,
    }
}

/// One NCCL kernel with the calls that made it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transfer {
    pub device: DeviceId,
    pub start_ns: i64,
    pub end_ns: i64,
    pub kind: CollectiveKind,
    /// The communicator (NCCL's `commHash`, hex).
    pub comm: String,
    pub ranks: u32,
    /// Bytes as nccl-tests counts them (see the module's comment).
    pub bytes: u64,
    /// Send/recv: the peers sent to.
    pub peers: Vec<u32>,
    pub transfer_ns: i64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// Its bus bandwidth over the best of the same communicator, collective and size.
    pub of_best: f64,
}

/// A transfer below this share of its kind's best is listed as slow.
pub const SLOW_SHARE: f64 = 0.75;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ByCollective {
    pub collective: String,
    pub count: usize,
    pub bytes_total: u64,
    pub bytes_p50: u64,
    pub bytes_p99: u64,
    pub busbw_gbps_median: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DevicePayload {
    pub device: DeviceId,
    /// Calls that carry a message size (sends and receives alike).
    pub calls: usize,
    pub message_bytes_total: u64,
    pub message_bytes_p50: u64,
    pub message_bytes_p99: u64,
    /// NCCL kernels whose calls were found.
    pub collectives: usize,
    pub algbw_gbps_median: Option<f64>,
    pub busbw_gbps_median: Option<f64>,
    pub by_collective: Vec<ByCollective>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Communicator {
    /// NCCL's `commHash`, hex.
    pub id: String,
    /// Ranks, from `ncclCommInitRank`'s payload (else the GPUs that used it).
    pub size: u32,
    pub ranks: Vec<u32>,
    pub devices: Vec<DeviceId>,
    /// Collectives (each counted once, not once per rank).
    pub collectives: usize,
    /// Message bytes of its calls on every rank.
    pub bytes: u64,
    pub busbw_gbps_median: Option<f64>,
    pub busbw_gbps_p99: Option<f64>,
    pub busbw_gbps_best: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NcclPayload {
    /// Every call's message size summed (sends and receives alike): the card's "total NCCL
    /// payload".
    pub total_message_bytes: u64,
    pub skipped_blobs: u64,
    /// Why there are no figures, when there are none.
    pub note: Option<String>,
    pub per_device: Vec<DevicePayload>,
    pub communicators: Vec<Communicator>,
    /// Transfers below [`SLOW_SHARE`] of the best of their communicator, collective and
    /// size, the slowest first.
    pub slowest: Vec<Transfer>,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn median_f(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

/// A call with its decoded fields, as attributed to one kernel.
#[derive(Clone, Copy)]
struct Call {
    kind: CallKind,
    comm: u64,
    bytes: u64,
    peer: u32,
}

/// A communicator's id as the report and the window spell it (NCCL's `commHash` in hex).
pub fn comm_id(comm: u64) -> String {
    format!("{comm:016x}")
}

/// One NCCL kernel's transfer, found by its place in the trace.
#[derive(Debug, Clone)]
pub struct KernelTransfer {
    /// (device index, stream index, op index).
    pub at: (u32, u32, u32),
    pub kind: CollectiveKind,
    /// The communicator (NCCL's `commHash`).
    pub comm: u64,
    pub ranks: u32,
    /// Bytes as nccl-tests counts them (see the module's comment).
    pub bytes: u64,
    /// Send/recv and all-to-all: the peers sent to.
    pub peers: Vec<u32>,
    /// The kernel's time after the last rank's kernel started (the whole kernel when the
    /// collective is not found on every GPU).
    pub transfer_ns: i64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
}

/// Every NCCL kernel whose calls carry a message size, by place, for the window's table,
/// tooltip and details.
#[derive(Debug, Clone, Default)]
pub struct KernelTransfers {
    list: Vec<KernelTransfer>,
}

impl KernelTransfers {
    pub fn get(&self, device: DeviceIndex, stream: usize, op: usize) -> Option<&KernelTransfer> {
        let key = (device.0 as u32, stream as u32, op as u32);
        let i = self.list.binary_search_by_key(&key, |k| k.at).ok()?;
        Some(&self.list[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = &KernelTransfer> {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Each NCCL kernel's transfer (empty for an export without payloads).
pub fn kernel_transfers(trace: &Trace) -> KernelTransfers {
    crate::profile_scope!("analysis: NCCL transfers by kernel");
    if trace.nccl_payloads.blobs == 0 {
        return KernelTransfers::default();
    }
    KernelTransfers {
        list: attribute(trace).kernels,
    }
}

/// The calls of every NCCL kernel, made into transfers, with what the communicators'
/// calls say of them.
struct Attributed {
    /// Sorted by place.
    kernels: Vec<KernelTransfer>,
    /// Per device index: the message size of every call of its kernels.
    messages: Vec<Vec<u64>>,
    comm_size: HashMap<u64, u32>,
    comm_ranks: HashMap<u64, Vec<u32>>,
    comm_bytes: HashMap<u64, u64>,
    /// Device ids that used each communicator.
    comm_devices: BTreeMap<u64, Vec<DeviceId>>,
    total_message_bytes: u64,
}

fn attribute(trace: &Trace) -> Attributed {
    // Communicators' sizes and ranks from their creation calls; message sizes of all calls.
    let mut comm_size: HashMap<u64, u32> = HashMap::new();
    let mut comm_ranks: HashMap<u64, Vec<u32>> = HashMap::new();
    let mut comm_bytes: HashMap<u64, u64> = HashMap::new();
    let mut total_message_bytes = 0;
    for t in &trace.threads {
        let c = &t.nccl;
        for k in &c.creations {
            comm_size.insert(k.comm, k.nranks);
            if k.rank != NONE {
                comm_ranks.entry(k.comm).or_default().push(k.rank);
            }
        }
        for i in 0..c.len() {
            total_message_bytes += c.bytes[i];
            *comm_bytes.entry(c.comm[i]).or_default() += c.bytes[i];
        }
    }

    // Each NCCL kernel by its launching thread, in launch order.
    let mut launches: HashMap<u32, Vec<(i64, usize, usize, usize)>> = HashMap::new();
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                let (t, call) = (ops.launch_thread[i], ops.launch_call[i]);
                if ops.kind[i] != OpKind::Nccl || t == NONE || call == NONE {
                    continue;
                }
                let thread = &trace.threads[t as usize];
                if thread.nccl.is_empty() {
                    continue;
                }
                let at = thread.api.start[call as usize];
                launches.entry(t).or_default().push((at, d, s, i));
            }
        }
    }
    // Kernel (device, stream, op) → its calls.
    let mut kernel_calls: Vec<((usize, usize, usize), Vec<Call>)> = Vec::new();
    for (t, mut list) in launches {
        list.sort_unstable_by_key(|l| l.0);
        let c = &trace.threads[t as usize].nccl;
        let mut j = 0;
        for (at, d, s, i) in list {
            let mut calls = Vec::new();
            while j < c.len() && c.start[j] < at {
                let kind = call_kind(&trace.strings.get(c.name[j]));
                if kind != CallKind::Other {
                    calls.push(Call {
                        kind,
                        comm: c.comm[j],
                        bytes: c.bytes[j],
                        peer: c.peer[j],
                    });
                }
                j += 1;
            }
            if !calls.is_empty() {
                kernel_calls.push(((d, s, i), calls));
            }
        }
    }
    kernel_calls.sort_unstable_by_key(|k| k.0);

    // Devices that used each communicator: its size when no creation call says.
    let mut comm_devices: BTreeMap<u64, Vec<DeviceId>> = BTreeMap::new();
    for ((d, _, _), calls) in &kernel_calls {
        let list = comm_devices.entry(calls[0].comm).or_default();
        if !list.contains(&trace.devices[*d].id) {
            list.push(trace.devices[*d].id);
        }
    }

    // The last rank's start of each collective found on every GPU.
    let mut last_start: HashMap<(usize, usize, usize), i64> = HashMap::new();
    for group in collectives(trace) {
        let last = group
            .iter()
            .map(|&(d, s, i)| trace.devices[d].streams[s].ops.start[i])
            .max()
            .unwrap_or(0);
        for k in group {
            last_start.insert(k, last);
        }
    }

    let mut messages = vec![Vec::new(); trace.devices.len()];
    let mut kernels = Vec::with_capacity(kernel_calls.len());
    for ((d, s, i), calls) in kernel_calls {
        let ops = &trace.devices[d].streams[s].ops;
        let comm = calls[0].comm;
        let n = comm_size
            .get(&comm)
            .copied()
            .unwrap_or_else(|| comm_devices.get(&comm).map_or(1, |v| v.len() as u32));
        let collective = calls.iter().find_map(|c| match c.kind {
            CallKind::Collective(k) => Some(k),
            _ => None,
        });
        let sends: Vec<&Call> = calls.iter().filter(|c| c.kind == CallKind::Send).collect();
        let mut peers: Vec<u32> = sends.iter().map(|c| c.peer).collect();
        peers.sort_unstable();
        peers.dedup();
        let (kind, bytes) = match collective {
            Some(k) => {
                let message: u64 = calls
                    .iter()
                    .filter(|c| c.kind == CallKind::Collective(k))
                    .map(|c| c.bytes)
                    .sum();
                let parts = if k.message_is_one_part() { n as u64 } else { 1 };
                (k, message * parts)
            }
            None => {
                // Sends to every rank (itself included, as PyTorch's all_to_all does, or
                // every other rank) make an all-to-all.
                let every = peers.len() as u32 >= n || (n > 2 && peers.len() as u32 == n - 1);
                let kind = if every && n > 1 {
                    CollectiveKind::AllToAll
                } else {
                    CollectiveKind::SendRecv
                };
                (kind, sends.iter().map(|c| c.bytes).sum())
            }
        };
        let (start, end) = (ops.start[i], ops.end[i]);
        let from = last_start
            .get(&(d, s, i))
            .map_or(start, |&l| l.clamp(start, end));
        let transfer_ns = (end - from).max(1);
        let algbw = bytes as f64 / transfer_ns as f64; // bytes per ns = GB/s
        messages[d].extend(calls.iter().map(|c| c.bytes));
        kernels.push(KernelTransfer {
            at: (d as u32, s as u32, i as u32),
            kind,
            comm,
            ranks: n,
            bytes,
            peers,
            transfer_ns,
            algbw_gbps: algbw,
            busbw_gbps: algbw * kind.bus_factor(n),
        });
    }
    Attributed {
        kernels,
        messages,
        comm_size,
        comm_ranks,
        comm_bytes,
        comm_devices,
        total_message_bytes,
    }
}

impl KernelTransfer {
    fn transfer(&self, trace: &Trace) -> Transfer {
        let (d, s, i) = (self.at.0 as usize, self.at.1 as usize, self.at.2 as usize);
        let ops = &trace.devices[d].streams[s].ops;
        Transfer {
            device: trace.devices[d].id,
            start_ns: ops.start[i],
            end_ns: ops.end[i],
            kind: self.kind,
            comm: comm_id(self.comm),
            ranks: self.ranks,
            bytes: self.bytes,
            peers: self.peers.clone(),
            transfer_ns: self.transfer_ns,
            algbw_gbps: self.algbw_gbps,
            busbw_gbps: self.busbw_gbps,
            of_best: 1.0,
        }
    }
}

pub fn nccl_payload(trace: &Trace, top: usize) -> NcclPayload {
    crate::profile_scope!("analysis: NCCL payload");
    let mut out = NcclPayload {
        skipped_blobs: trace.nccl_payloads.skipped_blobs,
        ..Default::default()
    };
    let nccl_kernels: usize = trace.devices.iter().map(|d| d.count_of(OpKind::Nccl)).sum();
    let stats = trace.nccl_payloads;
    if stats.blobs == 0 {
        if nccl_kernels > 0 {
            out.note = Some(if stats.nccl_ranges > 0 {
                "NCCL's NVTX ranges carry no payloads: this export was made without blobs. For \
                 bytes and bandwidth export again with `nsys export --type sqlite \
                 --include-blobs=true REPORT.nsys-rep`."
                    .to_string()
            } else {
                "No NCCL NVTX ranges with payloads in this export (NCCL 2.19 or later annotates \
                 its calls unless NCCL_NVTX_DISABLE=1; nsys must trace NVTX)."
                    .to_string()
            });
        }
        return out;
    }
    let a = attribute(trace);
    out.total_message_bytes = a.total_message_bytes;
    let transfers: Vec<Transfer> = a.kernels.iter().map(|k| k.transfer(trace)).collect();

    // Per device.
    for (d, device) in trace.devices.iter().enumerate() {
        let mine: Vec<&Transfer> = transfers.iter().filter(|t| t.device == device.id).collect();
        if mine.is_empty() {
            continue;
        }
        let mut messages = a.messages[d].clone();
        messages.sort_unstable();
        let mut by: BTreeMap<CollectiveKind, Vec<&Transfer>> = BTreeMap::new();
        for t in &mine {
            by.entry(t.kind).or_default().push(t);
        }
        out.per_device.push(DevicePayload {
            device: device.id,
            calls: messages.len(),
            message_bytes_total: messages.iter().sum(),
            message_bytes_p50: percentile(&messages, 0.5).unwrap_or(0),
            message_bytes_p99: percentile(&messages, 0.99).unwrap_or(0),
            collectives: mine.len(),
            algbw_gbps_median: median_f(mine.iter().map(|t| t.algbw_gbps).collect()),
            busbw_gbps_median: median_f(mine.iter().map(|t| t.busbw_gbps).collect()),
            by_collective: by
                .into_iter()
                .map(|(kind, list)| {
                    let mut bytes: Vec<u64> = list.iter().map(|t| t.bytes).collect();
                    bytes.sort_unstable();
                    ByCollective {
                        collective: kind.label().to_string(),
                        count: list.len(),
                        bytes_total: bytes.iter().sum(),
                        bytes_p50: percentile(&bytes, 0.5).unwrap_or(0),
                        bytes_p99: percentile(&bytes, 0.99).unwrap_or(0),
                        busbw_gbps_median: median_f(list.iter().map(|t| t.busbw_gbps).collect()),
                    }
                })
                .collect(),
        });
    }

    // Per communicator.
    for (&comm, devices) in &a.comm_devices {
        let id = comm_id(comm);
        let mut bw: Vec<f64> = transfers
            .iter()
            .filter(|t| t.comm == id)
            .map(|t| t.busbw_gbps)
            .collect();
        bw.sort_by(f64::total_cmp);
        let per_device_counts = devices.iter().map(|&d| {
            transfers
                .iter()
                .filter(|t| t.comm == id && t.device == d)
                .count()
        });
        let mut ranks = a.comm_ranks.get(&comm).cloned().unwrap_or_default();
        ranks.sort_unstable();
        ranks.dedup();
        let mut devices = devices.clone();
        devices.sort_unstable();
        out.communicators.push(Communicator {
            size: a
                .comm_size
                .get(&comm)
                .copied()
                .unwrap_or(devices.len() as u32),
            ranks,
            collectives: per_device_counts.max().unwrap_or(0),
            devices,
            bytes: a.comm_bytes.get(&comm).copied().unwrap_or(0),
            busbw_gbps_median: percentile(&bw, 0.5),
            busbw_gbps_p99: percentile(&bw, 0.99),
            busbw_gbps_best: bw.last().copied(),
            id,
        });
    }

    // The slowest against the best of their kind: the same communicator, collective and
    // size (to a power of two; bandwidth grows with size). Only the clearly slow.
    let key = |t: &Transfer| (t.comm.clone(), t.kind, t.bytes.next_power_of_two());
    let mut best: HashMap<(String, CollectiveKind, u64), f64> = HashMap::new();
    for t in &transfers {
        let b = best.entry(key(t)).or_insert(0.0);
        *b = b.max(t.busbw_gbps);
    }
    let share = |t: &Transfer| t.busbw_gbps / best.get(&key(t)).copied().unwrap_or(f64::MAX);
    let mut slow: Vec<Transfer> = transfers
        .iter()
        .filter(|t| share(t) < SLOW_SHARE)
        .map(|t| Transfer {
            of_best: share(t),
            ..t.clone()
        })
        .collect();
    slow.sort_by(|a, b| a.of_best.total_cmp(&b.of_best));
    slow.truncate(top);
    out.slowest = slow;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_are_nccl_tests() {
        assert_eq!(CollectiveKind::AllReduce.bus_factor(4), 1.5);
        assert_eq!(CollectiveKind::AllGather.bus_factor(4), 0.75);
        assert_eq!(CollectiveKind::AllToAll.bus_factor(8), 0.875);
        assert_eq!(CollectiveKind::SendRecv.bus_factor(8), 1.0);
        assert_eq!(CollectiveKind::Broadcast.bus_factor(8), 1.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&[7u64], 0.99), Some(7));
        assert_eq!(percentile::<u64>(&[], 0.5), None);
    }

    #[test]
    fn call_names_read_as_collectives() {
        assert_eq!(
            call_kind("ncclAllReduce"),
            CallKind::Collective(CollectiveKind::AllReduce)
        );
        assert_eq!(call_kind("ncclSend"), CallKind::Send);
        assert_eq!(call_kind("ncclCommInitRank"), CallKind::Other);
        assert_eq!(call_kind("ncclGroupEnd"), CallKind::Other);
    }
}
