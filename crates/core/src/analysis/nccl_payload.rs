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
use std::collections::BTreeMap;

// Maps keyed by communicator, name or size, filled per NCCL call (millions): Fx, not SipHash.
use rustc_hash::FxHashMap as HashMap;

use serde::{Deserialize, Serialize};

use super::nccl_wait::{Collectives, collectives};
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

/// Like [`percentile`], over sorted (value, how many) pairs.
fn percentile_of_counts(sorted: &[(u64, u64)], p: f64) -> Option<u64> {
    let n: u64 = sorted.iter().map(|&(_, k)| k).sum();
    if n == 0 {
        return None;
    }
    let rank = ((p * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    sorted.iter().find_map(|&(value, k)| {
        seen += k;
        (seen >= rank).then_some(value)
    })
}

/// Message sizes and how many calls had each: millions of calls come in a few sizes, so
/// their percentiles need no list of every call (29 MB on the 2 GB export).
#[derive(Default)]
struct SizeCounts {
    counts: HashMap<u64, u64>,
    /// Calls come in runs of one size: the current run, counted into `counts` when it ends.
    run: Option<(u64, u64)>,
}

impl SizeCounts {
    fn add(&mut self, size: u64) {
        match &mut self.run {
            Some((current, n)) if *current == size => *n += 1,
            run => {
                if let Some((size, n)) = run.replace((size, 1)) {
                    *self.counts.entry(size).or_default() += n;
                }
            }
        }
    }

    /// (size, calls), smallest size first.
    fn sorted(&self) -> Vec<(u64, u64)> {
        let mut counts = self.counts.clone();
        if let Some((size, n)) = self.run {
            *counts.entry(size).or_default() += n;
        }
        let mut out: Vec<(u64, u64)> = counts.into_iter().collect();
        out.sort_unstable();
        out
    }
}

fn median_f(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
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
        list: attribute(trace, &collectives(trace), false).kernels,
    }
}

/// The calls of every NCCL kernel, made into transfers, with what the communicators'
/// calls say of them.
struct Attributed {
    /// Sorted by place.
    kernels: Vec<KernelTransfer>,
    /// Per device index: the message sizes of its kernels' calls.
    messages: Vec<SizeCounts>,
    comm_size: HashMap<u64, u32>,
    comm_ranks: HashMap<u64, Vec<u32>>,
    comm_bytes: HashMap<u64, u64>,
    /// Device ids that used each communicator.
    comm_devices: BTreeMap<u64, Vec<DeviceId>>,
    total_message_bytes: u64,
}

/// One NCCL kernel and its calls: a stretch of its launching thread's NCCL calls.
struct KernelCalls {
    /// (device index, stream index, op index).
    at: (u32, u32, u32),
    thread: u32,
    calls: std::ops::Range<u32>,
    /// The first call that is not a communicator's creation: the kernel's communicator.
    comm: u64,
}

/// Communicators' sizes and ranks from their creation calls; message sizes of all calls.
#[derive(Default)]
struct Communicators {
    size: HashMap<u64, u32>,
    ranks: HashMap<u64, Vec<u32>>,
    bytes: HashMap<u64, u64>,
    total_message_bytes: u64,
}

impl Communicators {
    fn of(trace: &Trace) -> Self {
        let mut comms = Self::default();
        for t in &trace.threads {
            let c = &t.nccl;
            for k in &c.creations {
                comms.size.insert(k.comm, k.nranks);
                if k.rank != NONE {
                    comms.ranks.entry(k.comm).or_default().push(k.rank);
                }
            }
            // Summed per run of one communicator (a thread's calls come in such runs).
            let mut run: Option<(u64, u64)> = None;
            for i in 0..c.len() {
                comms.total_message_bytes = comms.total_message_bytes.saturating_add(c.bytes[i]);
                let comm = c.comm_of(i);
                match &mut run {
                    Some((current, bytes)) if *current == comm => {
                        *bytes = bytes.saturating_add(c.bytes[i])
                    }
                    _ => {
                        if let Some((comm, bytes)) = run {
                            *comms.bytes.entry(comm).or_default() += bytes;
                        }
                        run = Some((comm, c.bytes[i]));
                    }
                }
            }
            if let Some((comm, bytes)) = run {
                *comms.bytes.entry(comm).or_default() += bytes;
            }
        }
        comms
    }
}

/// What each call's name says, worked out once a name (a text is put together to read).
#[derive(Default)]
struct CallKinds {
    kinds: HashMap<crate::trace::StrId, CallKind>,
    last: Option<(crate::trace::StrId, CallKind)>,
}

impl CallKinds {
    fn of(&mut self, trace: &Trace, name: crate::trace::StrId) -> CallKind {
        match self.last {
            // Calls come in runs of one name.
            Some((n, kind)) if n == name => kind,
            _ => {
                let kind = *self
                    .kinds
                    .entry(name)
                    .or_insert_with(|| call_kind(&trace.strings.get(name)));
                self.last = Some((name, kind));
                kind
            }
        }
    }
}

/// Each NCCL kernel with its calls (those its thread began after the previous kernel's
/// launch), by place.
fn kernel_calls(trace: &Trace, kinds: &mut CallKinds) -> Vec<KernelCalls> {
    // Each NCCL kernel by its launching thread, in launch order.
    let mut launches: Vec<Vec<(i64, u32, u32, u32)>> = vec![Vec::new(); trace.threads.len()];
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
                launches[t as usize].push((at, d as u32, s as u32, i as u32));
            }
        }
    }
    let mut kernel_calls: Vec<KernelCalls> =
        Vec::with_capacity(launches.iter().map(Vec::len).sum());
    for (t, mut list) in launches.into_iter().enumerate() {
        list.sort_unstable();
        let c = &trace.threads[t].nccl;
        let mut j = 0;
        for (at, d, s, i) in list {
            let first = j;
            let mut comm = None;
            while j < c.len() && c.start[j] < at {
                if comm.is_none() && kinds.of(trace, c.name[j]) != CallKind::Other {
                    comm = Some(c.comm_of(j));
                }
                j += 1;
            }
            if let Some(comm) = comm {
                kernel_calls.push(KernelCalls {
                    at: (d, s, i),
                    thread: t as u32,
                    calls: first as u32..j as u32,
                    comm,
                });
            }
        }
    }
    kernel_calls.sort_unstable_by_key(|k| k.at);
    kernel_calls
}

/// Devices that used each communicator: its size when no creation call says.
fn comm_devices(trace: &Trace, kernel_calls: &[KernelCalls]) -> BTreeMap<u64, Vec<DeviceId>> {
    let mut comm_devices: BTreeMap<u64, Vec<DeviceId>> = BTreeMap::new();
    for k in kernel_calls {
        let list = comm_devices.entry(k.comm).or_default();
        let id = trace.devices[k.at.0 as usize].id;
        if !list.contains(&id) {
            list.push(id);
        }
    }
    comm_devices
}

/// The last rank's start of each collective found on every GPU, by place.
fn last_starts(trace: &Trace, collectives: &Collectives) -> Vec<((u32, u32, u32), i64)> {
    let mut last_start: Vec<((u32, u32, u32), i64)> =
        Vec::with_capacity(collectives.iter().map(|g| g.len()).sum());
    for group in collectives.iter() {
        let last = group
            .iter()
            .map(|&(d, s, i)| trace.devices[d].streams[s].ops.start[i])
            .max()
            .unwrap_or(0);
        last_start.extend(
            group
                .iter()
                .map(|&(d, s, i)| ((d as u32, s as u32, i as u32), last)),
        );
    }
    last_start.sort_unstable_by_key(|l| l.0);
    last_start
}

/// A kernel's collective and the bytes it moved, from its calls: the collective's calls'
/// bytes (times the ranks where a call gives one part), or its sends (an all-to-all where
/// they reach every rank).
fn kind_and_bytes(
    trace: &Trace,
    k: &KernelCalls,
    ranks: u32,
    kinds: &mut CallKinds,
    mut message: impl FnMut(u64),
) -> (CollectiveKind, u64, Vec<u32>) {
    let c = &trace.threads[k.thread as usize].nccl;
    let mut collective = None;
    let mut collective_bytes: u64 = 0;
    let mut sends: Vec<(u32, u64)> = Vec::new();
    for j in k.calls.start as usize..k.calls.end as usize {
        let kind = kinds.of(trace, c.name[j]);
        if kind == CallKind::Other {
            continue;
        }
        message(c.bytes[j]);
        match kind {
            CallKind::Collective(k) if collective.is_none_or(|first| first == k) => {
                collective = Some(k);
                collective_bytes = collective_bytes.saturating_add(c.bytes[j]);
            }
            CallKind::Send => sends.push((c.peer[j], c.bytes[j])),
            _ => {}
        }
    }
    let mut peers: Vec<u32> = sends.iter().map(|s| s.0).collect();
    peers.sort_unstable();
    peers.dedup();
    let (kind, bytes) = match collective {
        Some(k) => {
            let parts = if k.message_is_one_part() {
                ranks as u64
            } else {
                1
            };
            (k, collective_bytes * parts)
        }
        None => {
            // Sends to every rank (itself included, as PyTorch's all_to_all does, or every
            // other rank) make an all-to-all.
            let every =
                peers.len() as u32 >= ranks || (ranks > 2 && peers.len() as u32 == ranks - 1);
            let kind = if every && ranks > 1 {
                CollectiveKind::AllToAll
            } else {
                CollectiveKind::SendRecv
            };
            (kind, sends.iter().map(|s| s.1).sum())
        }
    };
    (kind, bytes, peers)
}

/// `with_messages`: whether to count the calls' message sizes per device (the report's
/// percentiles; not wanted for the kernels' transfers alone).
fn attribute(trace: &Trace, collectives: &Collectives, with_messages: bool) -> Attributed {
    let comms = Communicators::of(trace);
    let mut kinds = CallKinds::default();
    let kernel_calls = kernel_calls(trace, &mut kinds);
    let comm_devices = comm_devices(trace, &kernel_calls);
    let last_start = last_starts(trace, collectives);
    let mut messages: Vec<SizeCounts> = (0..trace.devices.len())
        .map(|_| SizeCounts::default())
        .collect();
    let mut kernels = Vec::with_capacity(kernel_calls.len());
    let mut last_starts = last_start.iter().peekable();
    for k in kernel_calls {
        let (d, s, i) = (k.at.0 as usize, k.at.1 as usize, k.at.2 as usize);
        let ops = &trace.devices[d].streams[s].ops;
        let comm = k.comm;
        let n = comms
            .size
            .get(&comm)
            .copied()
            .unwrap_or_else(|| comm_devices.get(&comm).map_or(1, |v| v.len() as u32));
        let (kind, bytes, peers) = kind_and_bytes(trace, &k, n, &mut kinds, |bytes| {
            if with_messages {
                messages[d].add(bytes);
            }
        });
        let (start, end) = (ops.start[i], ops.end[i]);
        // Both lists are sorted by place: one walk along `last_start`.
        while last_starts.peek().is_some_and(|l| l.0 < k.at) {
            last_starts.next();
        }
        let from = match last_starts.peek() {
            Some(l) if l.0 == k.at => l.1.clamp(start, end),
            _ => start,
        };
        let transfer_ns = (end - from).max(1);
        let algbw = bytes as f64 / transfer_ns as f64; // bytes per ns = GB/s
        kernels.push(KernelTransfer {
            at: k.at,
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
        comm_size: comms.size,
        comm_ranks: comms.ranks,
        comm_bytes: comms.bytes,
        comm_devices,
        total_message_bytes: comms.total_message_bytes,
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
    nccl_payload_with(trace, &collectives(trace), top)
}

/// Like [`nccl_payload`], over the trace's `collectives` worked out already.
pub fn nccl_payload_with(trace: &Trace, collectives: &Collectives, top: usize) -> NcclPayload {
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
    let a = attribute(trace, collectives, true);
    out.total_message_bytes = a.total_message_bytes;
    out.per_device = per_device(trace, &a);
    out.communicators = communicators(&a);
    out.slowest = slowest(trace, &a.kernels, top);
    out
}

/// Each device's messages and collectives: sizes, bandwidths, by kind of collective.
fn per_device(trace: &Trace, a: &Attributed) -> Vec<DevicePayload> {
    let kernels = &a.kernels;
    let mut out = Vec::new();
    // Per device: its kernels are one stretch of the list, which is sorted by place.
    for (d, device) in trace.devices.iter().enumerate() {
        let from = kernels.partition_point(|k| (k.at.0 as usize) < d);
        let to = kernels.partition_point(|k| (k.at.0 as usize) <= d);
        let mine = &kernels[from..to];
        if mine.is_empty() {
            continue;
        }
        let messages = a.messages[d].sorted();
        let mut by: BTreeMap<CollectiveKind, Vec<&KernelTransfer>> = BTreeMap::new();
        for k in mine {
            by.entry(k.kind).or_default().push(k);
        }
        out.push(DevicePayload {
            device: device.id,
            calls: messages.iter().map(|&(_, n)| n).sum::<u64>() as usize,
            message_bytes_total: messages.iter().map(|&(size, n)| size * n).sum(),
            message_bytes_p50: percentile_of_counts(&messages, 0.5).unwrap_or(0),
            message_bytes_p99: percentile_of_counts(&messages, 0.99).unwrap_or(0),
            collectives: mine.len(),
            algbw_gbps_median: median_f(mine.iter().map(|k| k.algbw_gbps).collect()),
            busbw_gbps_median: median_f(mine.iter().map(|k| k.busbw_gbps).collect()),
            by_collective: by
                .into_iter()
                .map(|(kind, list)| {
                    let mut bytes: Vec<u64> = list.iter().map(|k| k.bytes).collect();
                    bytes.sort_unstable();
                    ByCollective {
                        collective: kind.label().to_string(),
                        count: list.len(),
                        bytes_total: bytes.iter().sum(),
                        bytes_p50: percentile(&bytes, 0.5).unwrap_or(0),
                        bytes_p99: percentile(&bytes, 0.99).unwrap_or(0),
                        busbw_gbps_median: median_f(list.iter().map(|k| k.busbw_gbps).collect()),
                    }
                })
                .collect(),
        });
    }

    out
}

/// Each communicator: its size and ranks, its collectives, bytes and bus bandwidths.
fn communicators(a: &Attributed) -> Vec<Communicator> {
    let kernels = &a.kernels;
    let mut out = Vec::new();
    // Per communicator: the bus bandwidths of its kernels, and how many each device ran.
    let mut comm_bw: HashMap<u64, Vec<f64>> = HashMap::default();
    let mut comm_device_count: HashMap<(u64, u32), usize> = HashMap::default();
    for k in kernels {
        comm_bw.entry(k.comm).or_default().push(k.busbw_gbps);
        *comm_device_count.entry((k.comm, k.at.0)).or_default() += 1;
    }
    for (&comm, devices) in &a.comm_devices {
        let mut bw = comm_bw.remove(&comm).unwrap_or_default();
        bw.sort_by(f64::total_cmp);
        // The devices counted are those that used it (`devices`).
        let collectives = comm_device_count
            .iter()
            .filter(|((c, _), _)| *c == comm)
            .map(|(_, &n)| n)
            .max()
            .unwrap_or(0);
        let mut ranks = a.comm_ranks.get(&comm).cloned().unwrap_or_default();
        ranks.sort_unstable();
        ranks.dedup();
        let mut devices = devices.clone();
        devices.sort_unstable();
        out.push(Communicator {
            size: a
                .comm_size
                .get(&comm)
                .copied()
                .unwrap_or(devices.len() as u32),
            ranks,
            collectives,
            devices,
            bytes: a.comm_bytes.get(&comm).copied().unwrap_or(0),
            busbw_gbps_median: percentile(&bw, 0.5),
            busbw_gbps_p99: percentile(&bw, 0.99),
            busbw_gbps_best: bw.last().copied(),
            id: comm_id(comm),
        });
    }

    out
}

/// At most `top` transfers clearly slower than the best of their kind, the slowest first.
fn slowest(trace: &Trace, kernels: &[KernelTransfer], top: usize) -> Vec<Transfer> {
    // The slowest against the best of their kind: the same communicator, collective and
    // size (to a power of two; bandwidth grows with size). Only the clearly slow.
    let key = |k: &KernelTransfer| (k.comm, k.kind, k.bytes.next_power_of_two());
    let mut best: HashMap<(u64, CollectiveKind, u64), f64> = HashMap::default();
    for k in kernels {
        let b = best.entry(key(k)).or_insert(0.0);
        *b = b.max(k.busbw_gbps);
    }
    let share = |k: &KernelTransfer| k.busbw_gbps / best.get(&key(k)).copied().unwrap_or(f64::MAX);
    let mut slow: Vec<(&KernelTransfer, f64)> = kernels
        .iter()
        .map(|k| (k, share(k)))
        .filter(|&(_, of_best)| of_best < SLOW_SHARE)
        .collect();
    slow.sort_by(|a, b| a.1.total_cmp(&b.1));
    slow.truncate(top);
    slow.into_iter()
        .map(|(k, of_best)| Transfer {
            of_best,
            ..k.transfer(trace)
        })
        .collect()
}

#[cfg(test)]
mod tests;
