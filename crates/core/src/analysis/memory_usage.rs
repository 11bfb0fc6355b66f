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
    /// What stays allocated from one iteration to the next, per iteration: the blocks
    /// allocated from the second iteration (the first allocates the model) to the start of
    /// the last and still allocated when the last ends, over those iterations. A workspace
    /// allocated and freed in its iteration — on the GPU's timeline, perhaps after the CPU's
    /// step has ended — is not growth, whatever moment a sample would catch it at. `None`
    /// with fewer than three iterations.
    pub growth_per_iteration_bytes: Option<i64>,
    /// The iterations that growth is measured over (`[first, last]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub growth_iterations: Option<(usize, usize)>,
    /// What was allocated at the peak, by where it was allocated (the allocating call and
    /// the NVTX range around it), most bytes first; the blocks allocated before the capture
    /// as one entry with neither.
    pub live_at_peak: Vec<LiveAllocations>,
    /// Where the growth went: of the blocks it counts, the place most of their bytes were
    /// allocated.
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
            bytes: rest.iter().fold(0, |sum, r| sum.saturating_add(r.bytes)),
            blocks: rest.iter().map(|r| r.blocks).sum(),
            call: None,
            nvtx: Some(format!("{} other places", rest.len())),
        });
    }
    out
}

/// Growth is measured over allocations in `[from, to)` still live at `at`.
#[derive(Clone, Copy)]
struct GrowthWindow {
    from: i64,
    to: i64,
    at: i64,
}

/// What was live at the peak (after event `peak`); the bytes of the blocks `growth` counts
/// and the place most of them were allocated: one look-up of the allocating calls for both.
fn where_allocated(
    trace: &Trace,
    m: &MemoryEvents,
    peak: Option<usize>,
    before: i64,
    growth: Option<GrowthWindow>,
) -> (Vec<LiveAllocations>, Option<(i64, Option<LiveAllocations>)>) {
    let (at_peak, before_at_peak) = live_after(m, peak, before);
    let (then, _) = match growth {
        Some(g) => live_after(
            m,
            m.time.partition_point(|&t| t <= g.at).checked_sub(1),
            before,
        ),
        None => Default::default(),
    };
    let grown: Vec<&Block> = growth.map_or_else(Vec::new, |g| {
        then.values()
            .filter(|b| b.2 >= g.from && b.2 < g.to)
            .collect()
    });
    let ids: rustc_hash::FxHashSet<u32> = at_peak
        .values()
        .chain(grown.iter().copied())
        .map(|b| b.1)
        .collect();
    let sites = allocation_sites(trace, m.device, &ids);
    let grown_bytes: i64 = grown.iter().map(|b| b.0).sum();
    let growth = growth.map(|_| {
        let site = grouped(grown.into_iter(), 0, &sites).into_iter().next();
        (grown_bytes, site)
    });
    (grouped(at_peak.values(), before_at_peak, &sites), growth)
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
        // Saturating: a file's sizes are not trusted to add up in an i64.
        if b >= 0 {
            let block = live.entry(m.address[i]).or_default();
            *block = block.saturating_add(b);
        } else if live.remove(&m.address[i]).is_none() {
            before = before.saturating_sub(b);
        }
    }
    let mut sum = before;
    (
        before,
        m.bytes
            .iter()
            .map(|&b| {
                sum = sum.saturating_add(b);
                sum
            })
            .collect(),
    )
}

/// The most allocated at once (from [`balances`]), when, and after which event (`None`:
/// before the first — what was allocated before the capture); `None` without events. The
/// report's peak and the memory row's mark both.
pub fn peak(m: &MemoryEvents, before: i64, balance: &[i64]) -> Option<(i64, i64, Option<usize>)> {
    let (mut peak, mut peak_at, mut peak_event) = (before, *m.time.first()?, None);
    for (i, &b) in balance.iter().enumerate() {
        if b > peak {
            (peak, peak_at, peak_event) = (b, m.time[i], Some(i));
        }
    }
    Some((peak, peak_at, peak_event))
}

pub fn memory_usage(trace: &Trace, iterations: &Iterations) -> Vec<DeviceMemoryUsage> {
    trace
        .memory_usage
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| {
            let (before, balance) = balances(m);
            let (peak, peak_at, peak_event) =
                peak(m, before, &balance).unwrap_or((before, 0, None));
            let windows: &[crate::analysis::intervals::Window] = iterations
                .per_device
                .iter()
                .find(|d| d.device == m.device)
                .map_or(&[], |d| &d.cpu);
            let measured = (windows.len() >= 3).then(|| (1, windows.len() - 1));
            let window = measured.map(|(first, last)| GrowthWindow {
                from: windows[first].start,
                to: windows[last].start,
                at: windows[last].end,
            });
            let (live_at_peak, grown) = where_allocated(trace, m, peak_event, before, window);
            let growth = measured
                .zip(grown.as_ref())
                .map(|((first, last), (bytes, _))| bytes / (last - first) as i64);
            let growth_site = grown.and_then(|g| g.1);
            DeviceMemoryUsage {
                device: m.device,
                peak_bytes: peak,
                peak_at_ns: peak_at,
                end_bytes: *balance.last().unwrap_or(&before),
                before_capture_bytes: before,
                allocations: m.bytes.iter().filter(|&&b| b > 0).count(),
                frees: m.bytes.iter().filter(|&&b| b < 0).count(),
                growth_per_iteration_bytes: growth,
                growth_iterations: measured,
                live_at_peak,
                growth_site,
            }
        })
        .collect()
}
