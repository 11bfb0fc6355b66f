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
    /// What was allocated at the peak, by where it was allocated (the allocating call and
    /// the NVTX range around it), most bytes first; the blocks allocated before the capture
    /// as one entry with neither.
    pub live_at_peak: Vec<LiveAllocations>,
    /// Where the growth went: of the blocks allocated after the first iteration and still
    /// live at the end, the place most of their bytes were allocated.
    pub growth_site: Option<LiveAllocations>,
}

/// Blocks live at a GPU's peak that were allocated in the same place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveAllocations {
    pub bytes: i64,
    pub blocks: usize,
    /// The CUDA call that allocated them (`cudaMalloc`, …), when the export links it.
    pub call: Option<String>,
    /// The innermost NVTX range around that call (its pattern: numbers as `#`).
    pub nvtx: Option<String>,
}

/// Where an allocation was made: its call's name and the innermost NVTX range around it,
/// by correlation id (only the ids asked for are looked up; correlation ids count per
/// process, so only the threads of the processes that launched work on `device`).
fn allocation_sites(
    trace: &Trace,
    device: DeviceId,
    ids: &rustc_hash::FxHashSet<u32>,
) -> rustc_hash::FxHashMap<u32, (Option<String>, Option<String>)> {
    let mut out: rustc_hash::FxHashMap<u32, (Option<String>, Option<String>)> = Default::default();
    if ids.is_empty() {
        return out;
    }
    let mut pids: rustc_hash::FxHashSet<u32> = Default::default();
    if let Some(d) = trace.device(device) {
        for s in &d.streams {
            for &th in &s.ops.launch_thread {
                if let Some(t) = trace.threads.get(th as usize) {
                    pids.insert(t.pid);
                }
            }
        }
    }
    for t in trace.threads.iter().filter(|t| pids.contains(&t.pid)) {
        for k in 0..t.api.len() {
            let id = t.api.correlation_id[k];
            if !ids.contains(&id) {
                continue;
            }
            let call = trace.strings.get(t.api.name[k]).into_owned();
            let nvtx = t
                .nvtx
                .path_at(t.api.start[k])
                .last()
                // Its pattern: one site for every step's `denoising_step_#`.
                .map(|&r| {
                    let text = t.nvtx.text[r as usize];
                    trace.strings.template_text(trace.strings.template_of(text))
                });
            out.insert(id, (Some(call), nvtx));
        }
    }
    out
}

/// A live block: (bytes, its allocation's correlation id, when it was allocated).
type Block = (i64, u32, i64);

/// The blocks live right after event `upto` of `m` (none before any event), by address,
/// and what is left then of the blocks allocated before the capture (`before` at first).
fn live_after(
    m: &MemoryEvents,
    upto: Option<usize>,
    before: i64,
) -> (rustc_hash::FxHashMap<u64, Block>, i64) {
    let mut live: rustc_hash::FxHashMap<u64, Block> = Default::default();
    let mut before = before;
    for i in upto.map_or(0..0, |u| 0..u + 1) {
        let b = m.bytes[i];
        if b >= 0 {
            let e = live
                .entry(m.address[i])
                .or_insert((0, m.correlation_id[i], m.time[i]));
            e.0 += b;
        } else if live.remove(&m.address[i]).is_none() {
            before += b;
        }
    }
    (live, before)
}

/// `blocks` grouped by where they were allocated (`sites`, by correlation id), most bytes
/// first, with what is left of the blocks from before the capture as one entry; the list
/// adds up to their bytes.
fn grouped<'a>(
    blocks: impl Iterator<Item = &'a Block>,
    before: i64,
    sites: &rustc_hash::FxHashMap<u32, (Option<String>, Option<String>)>,
) -> Vec<LiveAllocations> {
    let mut groups: std::collections::BTreeMap<(Option<String>, Option<String>), (i64, usize)> =
        Default::default();
    for &(bytes, id, _) in blocks {
        let site = sites.get(&id).cloned().unwrap_or((None, None));
        let g = groups.entry(site).or_default();
        g.0 += bytes;
        g.1 += 1;
    }
    let mut out: Vec<LiveAllocations> = groups
        .into_iter()
        .map(|((call, nvtx), (bytes, blocks))| LiveAllocations {
            bytes,
            blocks,
            call,
            nvtx,
        })
        .collect();
    if before > 0 {
        out.push(LiveAllocations {
            bytes: before,
            blocks: 0,
            call: None,
            nvtx: Some("allocated before the capture".into()),
        });
    }
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.call.cmp(&b.call)));
    // The rest as one entry: the list always adds up to the peak.
    if out.len() > LIVE_SITES {
        let rest = out.split_off(LIVE_SITES - 1);
        out.push(LiveAllocations {
            bytes: rest.iter().map(|r| r.bytes).sum(),
            blocks: rest.iter().map(|r| r.blocks).sum(),
            call: None,
            nvtx: Some(format!("{} other places", rest.len())),
        });
    }
    out
}

/// What was live at the peak (after event `peak`), and where the blocks allocated from
/// `growth_from` on and live at the end were allocated (the most bytes' place): one look-up
/// of the allocating calls for both.
fn where_allocated(
    trace: &Trace,
    m: &MemoryEvents,
    peak: Option<usize>,
    before: i64,
    growth_from: Option<i64>,
) -> (Vec<LiveAllocations>, Option<LiveAllocations>) {
    let (at_peak, before_at_peak) = live_after(m, peak, before);
    let (at_end, _) = live_after(m, m.len().checked_sub(1), before);
    let grown: Vec<&Block> = growth_from.map_or_else(Vec::new, |from| {
        at_end.values().filter(|b| b.2 >= from).collect()
    });
    let ids: rustc_hash::FxHashSet<u32> = at_peak
        .values()
        .chain(grown.iter().copied())
        .map(|b| b.1)
        .collect();
    let sites = allocation_sites(trace, m.device, &ids);
    let growth_site =
        growth_from.and_then(|_| grouped(grown.into_iter(), 0, &sites).into_iter().next());
    (
        grouped(at_peak.values(), before_at_peak, &sites),
        growth_site,
    )
}

/// Allocation sites listed at a peak.
const LIVE_SITES: usize = 8;

/// The balance after each event, from what was allocated before the capture: the blocks
/// freed in it that it never saw allocated (matched by address).
pub fn balances(m: &MemoryEvents) -> (i64, Vec<i64>) {
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
            let (mut peak, mut peak_at, mut peak_event) = (before, m.time[0], None);
            for (i, &b) in balance.iter().enumerate() {
                if b > peak {
                    (peak, peak_at, peak_event) = (b, m.time[i], Some(i));
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
            let (live_at_peak, growth_site) =
                where_allocated(trace, m, peak_event, before, ends.first().copied());
            DeviceMemoryUsage {
                device: m.device,
                peak_bytes: peak,
                peak_at_ns: peak_at,
                end_bytes: *balance.last().unwrap_or(&before),
                before_capture_bytes: before,
                allocations: m.bytes.iter().filter(|&&b| b > 0).count(),
                frees: m.bytes.iter().filter(|&&b| b < 0).count(),
                growth_per_iteration_bytes: growth,
                live_at_peak,
                growth_site,
            }
        })
        .collect()
}
