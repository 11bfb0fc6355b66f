//! The gap finder's table, apart from its drawing: which gaps pass the filters, in which
//! order, and the CSV export. Kept free of egui so the benchmark can time it.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::analysis::gaps::{Cause, Gap};
use crate::analysis::recurring::{RecurringGap, signature};
use crate::trace::{DeviceId, StrId, Trace};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Device,
    Start,
    Duration,
    Neighbours,
    Enclosing,
    Cause,
}

impl Column {
    pub const ALL: [Column; 6] = [
        Column::Device,
        Column::Start,
        Column::Duration,
        Column::Neighbours,
        Column::Enclosing,
        Column::Cause,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Column::Device => "GPU",
            Column::Start => "start",
            Column::Duration => "duration",
            Column::Neighbours => "before -> after",
            Column::Enclosing => "enclosing NVTX",
            Column::Cause => "cause",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub min_duration_ns: i64,
    pub device: Option<DeviceId>,
    pub cause: Option<Cause>,
    /// Case-insensitive substring of the kernel names or the enclosing NVTX range.
    pub text: String,
    /// Only the members of this recurring group (an index into the recurring list).
    pub recurring: Option<usize>,
    /// Only gaps that overlap this window (the timeline's current window, Shift+drag).
    pub window: Option<(i64, i64)>,
}

/// Every gap in each column's order (ascending, ties by start), each worked out once and
/// kept: a click on a column or a filter then keeps the rows of a list already sorted,
/// one pass instead of a sort of millions. Shared with the worker that fills it.
#[derive(Default)]
pub struct GapOrders {
    by: [OnceLock<Vec<u32>>; Column::ALL.len()],
}

impl GapOrders {
    /// The gaps in `column`'s order, sorted now if no one has yet.
    pub fn order(&self, trace: &Trace, gaps: &[Gap], column: Column) -> &[u32] {
        self.by[column as usize].get_or_init(|| {
            let mut order: Vec<u32> = (0..gaps.len() as u32).collect();
            sort(trace, gaps, &mut order, column, false);
            order
        })
    }

    /// Sorts by every column (on a worker, once the analyses are in).
    pub fn fill(&self, trace: &Trace, gaps: &[Gap]) {
        for column in Column::ALL {
            self.order(trace, gaps, column);
        }
    }

    /// Whether every column's order is in.
    pub fn is_full(&self) -> bool {
        self.by.iter().all(|o| o.get().is_some())
    }

    pub fn heap_bytes(&self) -> usize {
        self.by
            .iter()
            .filter_map(OnceLock::get)
            .map(|o| o.capacity() * 4)
            .sum()
    }
}

/// Indices of the gaps that pass `filter`, sorted by `column`. Names are compared through
/// their interned ids: each distinct name the gaps use is tested or ranked once, and the
/// rows then test or sort integers.
pub fn filtered_order(
    trace: &Trace,
    gaps: &[Gap],
    recurring: &[RecurringGap],
    filter: &Filter,
    column: Column,
    descending: bool,
) -> Vec<u32> {
    filtered_order_with(trace, gaps, recurring, filter, column, descending, None)
}

/// [`filtered_order`], keeping the rows of `orders`' sorted list when given one (the
/// same rows in the same order: ties in either direction are by start, then index).
pub fn filtered_order_with(
    trace: &Trace,
    gaps: &[Gap],
    recurring: &[RecurringGap],
    filter: &Filter,
    column: Column,
    descending: bool,
    orders: Option<&GapOrders>,
) -> Vec<u32> {
    let name_hits = TextHits::new(trace, gaps, filter);
    let passes = |i: u32| passes(trace, &gaps[i as usize], filter, &name_hits, true);
    if let Some(orders) = orders {
        let sorted = orders.order(trace, gaps, column);
        let take = |mut order: Vec<u32>| {
            if descending {
                order.reverse();
            }
            order
        };
        if *filter == Filter::default() {
            return take(sorted.to_vec());
        }
        // The rows that pass, found in gap order (a pass that reads the gaps in turn)...
        let rows: Vec<u32> = match filter.recurring {
            Some(r) => recurring.get(r).map_or_else(Vec::new, |group| {
                group
                    .members
                    .par_iter()
                    .copied()
                    .filter(|&i| passes(i))
                    .collect()
            }),
            None => (0..gaps.len() as u32)
                .into_par_iter()
                .with_min_len(4096)
                .filter(|&i| passes(i))
                .collect(),
        };
        // ...then a few sorted by themselves, many kept in the sorted list's order.
        if rows.len() < gaps.len() / 8 {
            let mut rows = rows;
            sort(trace, gaps, &mut rows, column, descending);
            return rows;
        }
        let mut passed = vec![0u64; gaps.len().div_ceil(64)];
        for &i in &rows {
            passed[i as usize / 64] |= 1 << (i % 64);
        }
        let kept = |&i: &u32| passed[i as usize / 64] & (1 << (i % 64)) != 0;
        return take(
            sorted
                .par_iter()
                .with_min_len(4096)
                .copied()
                .filter(kept)
                .collect(),
        );
    }
    // A recurring group's gaps are listed from its members, not found among all gaps.
    let mut order: Vec<u32> = match filter.recurring.and_then(|r| recurring.get(r)) {
        Some(group) => group
            .members
            .par_iter()
            .copied()
            .filter(|&i| passes(i))
            .collect(),
        None if filter.recurring.is_some() => Vec::new(),
        None => (0..gaps.len() as u32)
            .into_par_iter()
            .with_min_len(4096)
            .filter(|&i| passes(i))
            .collect(),
    };
    sort(trace, gaps, &mut order, column, descending);
    order
}

/// Where the filter's text is found, worked out once per filter: per string id the gaps
/// use as names, whether it holds the text; per cause, whether its label does; per thread,
/// the times of its NVTX ranges, API calls and OS calls whose text holds it (what a gap's
/// cause text names: `host_bound: in KernelExecutor::compileFusion > nvrtc_compile`).
struct TextHits {
    names: Vec<bool>,
    labels: [bool; CAUSES.len()],
    threads: Vec<Vec<(i64, i64)>>,
}

impl TextHits {
    fn new(trace: &Trace, gaps: &[Gap], filter: &Filter) -> Self {
        let needle = filter.text.to_lowercase();
        if needle.is_empty() {
            return Self {
                names: Vec::new(),
                labels: [false; CAUSES.len()],
                threads: Vec::new(),
            };
        }
        let strings = &trace.strings;
        let used = used_names(trace, gaps.iter());
        let names = (0..strings.len() as StrId)
            .into_par_iter()
            .map(|id| used[id as usize] && strings.get(id).to_lowercase().contains(&needle))
            .collect();
        let labels = CAUSES.map(|c| c.label().contains(&needle));
        // What the CPU side names, each distinct text tested once.
        let mut cpu_used = vec![false; strings.len()];
        for t in &trace.threads {
            for &id in t.nvtx.text.iter().chain(&t.api.name).chain(&t.osrt.name) {
                if let Some(u) = cpu_used.get_mut(id as usize) {
                    *u = true;
                }
            }
        }
        let cpu_hits: Vec<bool> = (0..strings.len() as StrId)
            .into_par_iter()
            .map(|id| cpu_used[id as usize] && strings.get(id).to_lowercase().contains(&needle))
            .collect();
        let hit = |id: StrId| cpu_hits.get(id as usize).copied().unwrap_or(false);
        let threads = trace
            .threads
            .par_iter()
            .map(|t| {
                let mut spans: Vec<(i64, i64)> = Vec::new();
                let mut add = |ids: &[StrId], starts: &[i64], ends: &[i64]| {
                    for k in (0..ids.len()).filter(|&k| hit(ids[k])) {
                        spans.push((starts[k], ends[k]));
                    }
                };
                add(&t.nvtx.text, &t.nvtx.start, &t.nvtx.end);
                add(&t.api.name, &t.api.start, &t.api.end);
                add(&t.osrt.name, &t.osrt.start, &t.osrt.end);
                spans.sort_unstable();
                let mut merged: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
                for (s, e) in spans {
                    match merged.last_mut() {
                        Some(last) if s <= last.1 => last.1 = last.1.max(e),
                        _ => merged.push((s, e)),
                    }
                }
                merged
            })
            .collect();
        Self {
            names,
            labels,
            threads,
        }
    }

    fn name(&self, id: StrId) -> bool {
        self.names.get(id as usize).copied().unwrap_or(false)
    }

    /// Whether gap `g`'s cause text holds the text: its label, or what its launching thread
    /// was in meanwhile.
    fn cause(&self, trace: &Trace, g: &Gap) -> bool {
        if CAUSES
            .iter()
            .position(|&c| c == g.cause)
            .is_some_and(|k| self.labels[k])
        {
            return true;
        }
        let Some(thread) = g.launching_thread(trace) else {
            return false;
        };
        let spans = &self.threads[thread];
        let i = spans.partition_point(|s| s.1 <= g.start_ns);
        spans.get(i).is_some_and(|s| s.0 < g.end_ns())
    }
}

/// Whether gap `g` passes `filter` (its cause too when `with_cause`).
fn passes(trace: &Trace, g: &Gap, filter: &Filter, hits: &TextHits, with_cause: bool) -> bool {
    g.duration_ns >= filter.min_duration_ns
        && filter.device.is_none_or(|d| g.device_id() == d)
        && (!with_cause || filter.cause.is_none_or(|c| g.cause == c))
        && filter
            .window
            .is_none_or(|(a, b)| g.start_ns < b && g.end_ns() > a)
        && (filter.text.is_empty()
            || hits.name(g.before_name(trace))
            || hits.name(g.after_name(trace))
            || g.enclosing().is_some_and(|id| hits.name(id))
            || hits.cause(trace, g))
}

/// The causes a filter chooses from, in the order they are listed.
pub const CAUSES: [Cause; 5] = [
    Cause::HostSync,
    Cause::AfterSync,
    Cause::HostBound,
    Cause::Dependency,
    Cause::Unknown,
];

/// What the filter leaves besides its order: the gaps of each cause that pass the rest of
/// it (so the cause buttons count what choosing one would show), and per recurring pattern
/// the members that pass it all: (pattern, count, total, median).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterCounts {
    pub any_cause: usize,
    pub causes: [usize; CAUSES.len()],
    pub patterns: Vec<(usize, usize, i64, i64)>,
}

pub fn filter_counts(
    trace: &Trace,
    gaps: &[Gap],
    recurring: &[RecurringGap],
    filter: &Filter,
) -> FilterCounts {
    let name_hits = TextHits::new(trace, gaps, filter);
    let causes = (0..gaps.len())
        .into_par_iter()
        .with_min_len(4096)
        .fold(
            || [0usize; CAUSES.len()],
            |mut c, i| {
                let g = &gaps[i];
                if passes(trace, g, filter, &name_hits, false)
                    && let Some(k) = CAUSES.iter().position(|&k| k == g.cause)
                {
                    c[k] += 1;
                }
                c
            },
        )
        .reduce(
            || [0; CAUSES.len()],
            |a, b| std::array::from_fn(|k| a[k] + b[k]),
        );
    let patterns = recurring
        .par_iter()
        .enumerate()
        .filter_map(|(k, r)| {
            let d: Vec<i64> = r
                .members
                .iter()
                .map(|&i| &gaps[i as usize])
                .filter(|g| passes(trace, g, filter, &name_hits, true))
                .map(|g| g.duration_ns)
                .collect();
            (!d.is_empty()).then(|| (k, d.len(), d.iter().sum(), crate::sorted::median(&d)))
        })
        .collect();
    FilterCounts {
        any_cause: causes.iter().sum(),
        causes,
        patterns,
    }
}

/// Per string id: does one of `gaps` name it (neighbour or enclosing range)?
fn used_names<'g>(trace: &Trace, gaps: impl Iterator<Item = &'g Gap>) -> Vec<bool> {
    let mut used = vec![false; trace.strings.len()];
    for g in gaps {
        for id in [
            Some(g.before_name(trace)),
            Some(g.after_name(trace)),
            g.enclosing(),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(u) = used.get_mut(id as usize) {
                *u = true;
            }
        }
    }
    used
}

/// Sorts `order` by `column`, ties by start. Each row gets an integer key first (a name by
/// its rank among the distinct names), so the sort compares integers.
pub fn sort(trace: &Trace, gaps: &[Gap], order: &mut [u32], column: Column, descending: bool) {
    let ranks = match column {
        Column::Neighbours | Column::Enclosing => name_ranks(trace, gaps, order),
        _ => Vec::new(),
    };
    let n = ranks.len() as i64 + 1;
    let rank = |id: Option<StrId>| id.map_or(0, |id| ranks[id as usize] + 1);
    let key = |i: u32| -> (i64, i64, u32) {
        let g = &gaps[i as usize];
        let k = match column {
            Column::Device => g.device as i64,
            Column::Start => g.start_ns,
            Column::Duration => g.duration_ns,
            Column::Cause => g.cause as i64,
            Column::Neighbours => {
                rank(Some(g.before_name(trace))) * n + rank(Some(g.after_name(trace)))
            }
            Column::Enclosing => rank(g.enclosing()),
        };
        (k, g.start_ns, i)
    };
    let mut keyed: Vec<(i64, i64, u32)> = order.par_iter().map(|&i| key(i)).collect();
    keyed.par_sort_unstable();
    if descending {
        keyed.reverse();
    }
    for (slot, (_, _, i)) in order.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// For every string id, its rank in name order among the names the rows of `order` use.
fn name_ranks(trace: &Trace, gaps: &[Gap], order: &[u32]) -> Vec<i64> {
    let strings = &trace.strings;
    let used = used_names(trace, order.iter().map(|&i| &gaps[i as usize]));
    let mut distinct: Vec<StrId> = (0..strings.len() as StrId)
        .filter(|&id| used[id as usize])
        .collect();
    distinct.sort_unstable_by_key(|&id| strings.get(id));
    let mut ranks = vec![0i64; strings.len()];
    for (r, id) in distinct.into_iter().enumerate() {
        ranks[id as usize] = r as i64;
    }
    ranks
}

/// The rows of `order` as CSV, with a header (each row described as it is written).
pub fn to_csv(
    trace: &Trace,
    gaps: &[Gap],
    order: &[u32],
    origin_ns: i64,
) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "gpu",
        "start_ns",
        "start_from_trace_start_ns",
        "duration_ns",
        "before",
        "after",
        "enclosing_nvtx",
        "cause",
        "signature",
    ];
    w.write_record(header).map_err(|e| e.to_string())?;
    for &i in order {
        let g = &gaps[i as usize];
        w.write_record([
            g.device.to_string(),
            g.start_ns.to_string(),
            (g.start_ns - origin_ns).to_string(),
            g.duration_ns.to_string(),
            trace.strings.get(g.before_name(trace)).into_owned(),
            trace.strings.get(g.after_name(trace)).into_owned(),
            g.enclosing()
                .map(|id| trace.strings.get(id).into_owned())
                .unwrap_or_default(),
            g.cause.label().to_string(),
            signature(trace, g),
        ])
        .map_err(|e| e.to_string())?;
    }
    w.into_inner().map_err(|e| e.to_string())
}
