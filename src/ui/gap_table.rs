//! The gap finder's table, apart from its drawing: which gaps pass the filters, in which
//! order, and the CSV export. Kept free of egui so the benchmark can time it.

use rayon::prelude::*;

use crate::analysis::gaps::Cause;
use crate::analysis::recurring::{GapDetail, RecurringGap};
use crate::trace::{StrId, StringTable};

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
    pub device: Option<u32>,
    pub cause: Option<Cause>,
    /// Case-insensitive substring of the kernel names or the enclosing NVTX range.
    pub text: String,
    /// Only the members of this recurring group (an index into the recurring list).
    pub recurring: Option<usize>,
    /// Only gaps that overlap this window (the timeline's current window, Shift+drag).
    pub window: Option<(i64, i64)>,
}

/// Indices of the gaps that pass `filter`, sorted by `column`. Names are compared through
/// their interned ids (`strings`): each distinct name is lower-cased or ranked once, and
/// the rows then test or sort integers.
pub fn filtered_order(
    strings: &StringTable,
    gaps: &[GapDetail],
    recurring: &[RecurringGap],
    filter: &Filter,
    column: Column,
    descending: bool,
) -> Vec<u32> {
    let needle = filter.text.to_lowercase();
    let name_hits: Vec<bool> = if needle.is_empty() {
        Vec::new()
    } else {
        (0..strings.len() as StrId)
            .into_par_iter()
            .map(|id| strings.get(id).to_lowercase().contains(&needle))
            .collect()
    };
    let hit = |id: StrId| name_hits.get(id as usize).copied().unwrap_or(false);
    let members: Option<Vec<bool>> = filter.recurring.and_then(|r| recurring.get(r)).map(|r| {
        let mut mask = vec![false; gaps.len()];
        for &m in &r.members {
            if let Some(slot) = mask.get_mut(m) {
                *slot = true;
            }
        }
        mask
    });
    let passes = |i: usize| {
        let g = &gaps[i];
        g.gap.duration_ns >= filter.min_duration_ns
            && filter.device.is_none_or(|d| g.gap.device == d)
            && filter.cause.is_none_or(|c| g.gap.cause == c)
            && members.as_ref().is_none_or(|m| m[i])
            && filter
                .window
                .is_none_or(|(a, b)| g.gap.start_ns < b && g.gap.start_ns + g.gap.duration_ns > a)
            && (needle.is_empty()
                || hit(g.ids.before)
                || hit(g.ids.after)
                || g.ids.enclosing.is_some_and(hit))
    };
    let mut order: Vec<u32> = (0..gaps.len() as u32)
        .into_par_iter()
        .with_min_len(4096)
        .filter(|&i| passes(i as usize))
        .collect();
    sort(strings, gaps, &mut order, column, descending);
    order
}

/// Sorts `order` by `column`, ties by start. Each row gets an integer key first (a name by
/// its rank among the distinct names), so the sort compares integers.
pub fn sort(
    strings: &StringTable,
    gaps: &[GapDetail],
    order: &mut [u32],
    column: Column,
    descending: bool,
) {
    let ranks = match column {
        Column::Neighbours | Column::Enclosing => name_ranks(strings, gaps, order),
        _ => Vec::new(),
    };
    let n = ranks.len() as i64 + 1;
    let rank = |id: Option<StrId>| id.map_or(0, |id| ranks[id as usize] + 1);
    let key = |i: u32| -> (i64, i64, u32) {
        let g = &gaps[i as usize];
        let k = match column {
            Column::Device => g.gap.device as i64,
            Column::Start => g.gap.start_ns,
            Column::Duration => g.gap.duration_ns,
            Column::Cause => g.gap.cause as i64,
            Column::Neighbours => rank(Some(g.ids.before)) * n + rank(Some(g.ids.after)),
            Column::Enclosing => rank(g.ids.enclosing),
        };
        (k, g.gap.start_ns, i)
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
fn name_ranks(strings: &StringTable, gaps: &[GapDetail], order: &[u32]) -> Vec<i64> {
    let mut used = vec![false; strings.len()];
    for &i in order {
        let ids = gaps[i as usize].ids;
        for id in [Some(ids.before), Some(ids.after), ids.enclosing]
            .into_iter()
            .flatten()
        {
            if let Some(u) = used.get_mut(id as usize) {
                *u = true;
            }
        }
    }
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

/// The rows of `order` as CSV, with a header.
pub fn to_csv(gaps: &[GapDetail], order: &[u32], origin_ns: i64) -> Result<Vec<u8>, String> {
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
            g.gap.device.to_string(),
            g.gap.start_ns.to_string(),
            (g.gap.start_ns - origin_ns).to_string(),
            g.gap.duration_ns.to_string(),
            g.before_name.clone(),
            g.after_name.clone(),
            g.enclosing_nvtx.clone().unwrap_or_default(),
            g.gap.cause.label().to_string(),
            g.signature(),
        ])
        .map_err(|e| e.to_string())?;
    }
    w.into_inner().map_err(|e| e.to_string())
}
