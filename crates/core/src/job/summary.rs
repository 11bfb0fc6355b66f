//! A rank's summary: what cross-rank questions need of one export, made where the export is
//! (`nsys-explorer summarize`) and small enough to copy to a laptop by the hundred. Every
//! NCCL kernel (kind, communicator and sequence where payloads give them, start, end,
//! bytes) with what its launching thread did before it, the iterations' spans, the per-GPU
//! breakdown and top gaps, the UTC start and the export's identity.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::file::FileIdentity;
use crate::analysis::breakdown::Breakdown;
use crate::analysis::drilldown::activity_since;
use crate::analysis::nccl_payload::{comm_id, kernel_transfers};
use crate::overview::Overview;
use crate::trace::{DeviceIndex, NONE, OpKind, Trace};

/// No string (an index into [`RankSummary::strings`]).
pub const NO_TEXT: u32 = u32::MAX;

/// One export, summarised.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankSummary {
    /// The export summarised, as it was then.
    pub source: FileIdentity,
    /// The nsys-explorer version that wrote it.
    pub tool_version: String,
    pub nsys_version: Option<String>,
    /// The session's start on the wall clock (ns since the Unix epoch).
    pub utc_start_ns: Option<i64>,
    /// The iteration marker (`denoising_step_#`) or heuristic used.
    pub iteration_marker: Option<String>,
    pub gpus: Vec<GpuSummary>,
    /// Names the collectives' columns point into (kernel names, communicators, calls,
    /// NVTX texts), each once.
    pub strings: Vec<String>,
}

/// One GPU of an export.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GpuSummary {
    /// nsys's device id within its export.
    pub device: u32,
    /// The GPU's model, when the export names it.
    pub model: Option<String>,
    /// Its analysed window (first op's start to last op's end).
    pub window_ns: (i64, i64),
    pub breakdown_ns: Breakdown,
    /// Its longest gaps, longest first.
    pub top_gaps: Vec<GapSummary>,
    /// Each iteration's GPU span (`None`: it launched nothing here), and the duration the
    /// iteration analysis gave it.
    pub iteration_spans: Vec<Option<(i64, i64)>>,
    pub iteration_durations_ns: Vec<i64>,
    pub iteration_warmup: usize,
    pub iteration_median_ns: i64,
    /// Every NCCL kernel, in start order (kept in columns: see [`CollectiveColumns`]).
    #[serde(skip)]
    pub collectives: CollectiveColumns,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GapSummary {
    pub start_ns: i64,
    pub duration_ns: i64,
    /// `host_sync`, `host_bound`, `dependency`, `unknown`.
    pub cause: String,
    pub before: String,
    pub after: String,
    /// The NVTX range around it.
    pub nvtx: Option<String>,
}

crate::trace::columns! {
    /// A GPU's NCCL kernels as columns, one entry a kernel, in start order. Names are indices
    /// into the summary's strings ([`NO_TEXT`] for none); the activity is the launching
    /// thread's, from the previous collective's launch to this one's.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct CollectiveColumns {
        pub start: Vec<i64>,
        pub end: Vec<i64>,
        /// The kernel's name (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`).
        pub name: Vec<u32>,
        /// The communicator (NCCL's `commHash`), when the payloads give it.
        pub comm: Vec<u32>,
        /// Its place among this GPU's collectives on its communicator (from 0).
        pub seq: Vec<u32>,
        /// Bytes as nccl-tests counts them; 0 when unknown.
        pub bytes: Vec<u64>,
        /// The longest call (not a launch, not a sync) the launching thread made before it.
        pub call: Vec<u32>,
        pub call_start: Vec<i64>,
        pub call_ns: Vec<i64>,
        /// The longest stretch of the thread's own CPU time with no call (Python computing).
        pub cpu_start: Vec<i64>,
        pub cpu_ns: Vec<i64>,
        /// The NVTX range the thread was in at the longer of the two.
        pub nvtx: Vec<u32>,
        /// From the previous collective's launch to this one's.
        pub since_ns: Vec<i64>,
    }
}

impl CollectiveColumns {
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// `start`, then every other column with its name in the `collectives` table, in the
    /// summary file's order: the one list the file's writing and reading and the table
    /// follow (a new column is a line here).
    pub fn columns(&mut self) -> (&[i64], [(&'static str, CollectiveColumn<'_>); 12]) {
        use CollectiveColumn::*;
        (
            &self.start,
            [
                ("end_ns", FromStart(&mut self.end)),
                ("name", Name(&mut self.name)),
                ("comm", Name(&mut self.comm)),
                ("seq", Count(&mut self.seq)),
                ("bytes", Bytes(&mut self.bytes)),
                ("call", Name(&mut self.call)),
                ("call_start_ns", FromStart(&mut self.call_start)),
                ("call_ns", Ns(&mut self.call_ns)),
                ("cpu_start_ns", FromStart(&mut self.cpu_start)),
                ("cpu_ns", Ns(&mut self.cpu_ns)),
                ("nvtx", Name(&mut self.nvtx)),
                ("since_previous_ns", Ns(&mut self.since_ns)),
            ],
        )
    }
}

/// A collective column after `start`, by what it holds: how the summary file writes it
/// and how its table shows it.
pub enum CollectiveColumn<'c> {
    /// A time (the file: its step from the collective's start).
    FromStart(&'c mut Vec<i64>),
    /// A string index, [`NO_TEXT`] for none (the file: index + 1, 0 for none).
    Name(&'c mut Vec<u32>),
    Count(&'c mut Vec<u32>),
    Bytes(&'c mut Vec<u64>),
    /// A length of time or a signed value.
    Ns(&'c mut Vec<i64>),
}

impl CollectiveColumn<'_> {
    /// A column of numbers, as signed values (empty for names).
    pub fn values(&self) -> Vec<i64> {
        match self {
            Self::FromStart(v) | Self::Ns(v) => v.to_vec(),
            Self::Count(v) => v.iter().map(|&v| i64::from(v)).collect(),
            Self::Bytes(v) => v.iter().map(|&v| v as i64).collect(),
            Self::Name(_) => Vec::new(),
        }
    }

    /// A column of names, as string indices (empty for numbers).
    pub fn ids(&self) -> &[u32] {
        match self {
            Self::Name(v) => v,
            _ => &[],
        }
    }
}

impl RankSummary {
    /// A string of the summary; empty for [`NO_TEXT`] or a bad index.
    pub fn text(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", String::as_str)
    }

    pub fn collectives(&self) -> usize {
        self.gpus.iter().map(|g| g.collectives.len()).sum()
    }
}

/// Strings interned as the summary is built.
#[derive(Default)]
struct Interner {
    strings: Vec<String>,
    ids: FxHashMap<String, u32>,
}

impl Interner {
    fn id(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(text.to_string());
        self.ids.insert(text.to_string(), id);
        id
    }
}

/// How many gaps a GPU's summary lists.
pub const TOP_GAPS: usize = 20;

/// The summary of `trace` (one export, analysed as `overview`), whose file is `source`.
pub fn summarize(trace: &Trace, overview: &Overview, source: FileIdentity) -> RankSummary {
    crate::profile_scope!("summarize");
    let mut names = Interner::default();
    let transfers = kernel_transfers(trace);
    let mut gpus = Vec::new();
    for (d, device) in trace.devices.iter().enumerate() {
        let Some(summary) = overview.devices.iter().find(|s| s.device == device.id) else {
            continue;
        };
        let its = overview
            .iterations
            .per_device
            .iter()
            .find(|i| i.device == device.id);
        let gaps: Vec<&crate::analysis::gaps::Gap> = overview
            .longest_gaps_of(device.id, TOP_GAPS)
            .into_iter()
            .map(|i| &overview.gaps[i])
            .collect();
        gpus.push(GpuSummary {
            device: device.id.0,
            model: Some(device.name.clone()).filter(|n| !n.is_empty()),
            window_ns: (summary.window.start, summary.window.end),
            breakdown_ns: summary.breakdown,
            top_gaps: gaps
                .iter()
                .map(|g| GapSummary {
                    start_ns: g.start_ns,
                    duration_ns: g.duration_ns,
                    cause: g.cause.label().to_string(),
                    before: trace.strings.get(g.before_name(trace)).into_owned(),
                    after: trace.strings.get(g.after_name(trace)).into_owned(),
                    nvtx: g.enclosing().map(|s| trace.strings.get(s).into_owned()),
                })
                .collect(),
            iteration_spans: its.map_or_else(Vec::new, |i| {
                i.spans
                    .iter()
                    .map(|w| w.map(|w| (w.start, w.end)))
                    .collect()
            }),
            iteration_durations_ns: its.map_or_else(Vec::new, |i| i.durations_ns.clone()),
            iteration_warmup: its.map_or(0, |i| i.warmup),
            iteration_median_ns: its.map_or(0, |i| i.median_ns),
            collectives: collectives_of(trace, DeviceIndex(d), &transfers, &mut names),
        });
    }
    RankSummary {
        source,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        nsys_version: trace.info.nsys_version.clone(),
        utc_start_ns: trace.info.utc_start_ns,
        iteration_marker: overview.iterations.marker.clone(),
        gpus,
        strings: names.strings,
    }
}

/// A GPU's NCCL kernels, in start order, with their transfers and their launching
/// threads' activity before them.
fn collectives_of(
    trace: &Trace,
    d: DeviceIndex,
    transfers: &crate::analysis::nccl_payload::KernelTransfers,
    names: &mut Interner,
) -> CollectiveColumns {
    let device = &trace.devices[d.0];
    let mut kernels: Vec<(i64, usize, usize)> = device
        .ops_of(OpKind::Nccl)
        .map(|(s, i)| (device.streams[s].ops.start[i], s, i))
        .collect();
    kernels.sort_unstable();
    let mut out = CollectiveColumns::default();
    let mut seq_of: FxHashMap<u32, u32> = FxHashMap::default();
    // Per launching thread, the end of its previous collective's launch.
    let mut previous_launch: FxHashMap<u32, i64> = FxHashMap::default();
    for (start, s, i) in kernels {
        let ops = &device.streams[s].ops;
        out.start.push(start);
        out.end.push(ops.end[i]);
        out.name.push(names.id(&trace.strings.get(ops.name[i])));
        let transfer = transfers.get(d, s, i);
        let comm = transfer.map_or(NO_TEXT, |t| names.id(&comm_id(t.comm)));
        let seq = seq_of.entry(comm).or_default();
        out.comm.push(comm);
        out.seq.push(*seq);
        *seq += 1;
        out.bytes.push(transfer.map_or(0, |t| t.bytes));
        let (thread, call) = (ops.launch_thread[i], ops.launch_call[i]);
        let activity = (thread != NONE && call != NONE)
            .then(|| trace.threads.get(thread as usize))
            .flatten()
            .filter(|t| (call as usize) < t.api.len())
            .map(|t| {
                let call = call as usize;
                let since = previous_launch
                    .get(&thread)
                    .copied()
                    .unwrap_or(t.api.start[call]);
                previous_launch.insert(thread, t.api.end[call]);
                activity_since(trace, t, since, call)
            });
        match activity {
            Some(a) => {
                out.call
                    .push(a.longest_call.as_deref().map_or(NO_TEXT, |c| names.id(c)));
                out.call_start
                    .push(a.longest_call_start_ns.unwrap_or(start));
                out.call_ns.push(a.longest_call_ns);
                out.cpu_start.push(a.cpu_start_ns.unwrap_or(start));
                out.cpu_ns.push(a.cpu_ns);
                out.nvtx
                    .push(a.nvtx_path.last().map_or(NO_TEXT, |n| names.id(n)));
                out.since_ns.push(a.since_previous_collective_ns);
            }
            None => {
                out.call.push(NO_TEXT);
                out.call_start.push(start);
                out.call_ns.push(0);
                out.cpu_start.push(start);
                out.cpu_ns.push(0);
                out.nvtx.push(NO_TEXT);
                out.since_ns.push(0);
            }
        }
    }
    out
}
