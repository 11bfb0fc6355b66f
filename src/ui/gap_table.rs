//! The gap finder's table, apart from its drawing: which gaps pass the filters, in which
//! order, and the CSV export. Kept free of egui so the benchmark can time it.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::analysis::gaps::Cause;
use crate::analysis::recurring::{GapDetail, RecurringGap};

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
}

/// Indices of the gaps that pass `filter`, sorted by `column`.
pub fn filtered_order(
    gaps: &[GapDetail],
    recurring: &[RecurringGap],
    filter: &Filter,
    column: Column,
    descending: bool,
) -> Vec<u32> {
    let mut names = NameMatcher {
        needle: filter.text.to_lowercase(),
        seen: HashMap::new(),
    };
    let members: Option<Vec<bool>> = filter.recurring.and_then(|r| recurring.get(r)).map(|r| {
        let mut mask = vec![false; gaps.len()];
        for &m in &r.members {
            if let Some(slot) = mask.get_mut(m) {
                *slot = true;
            }
        }
        mask
    });
    let mut order: Vec<u32> = Vec::with_capacity(gaps.len());
    for (i, g) in gaps.iter().enumerate() {
        let passes = g.gap.duration_ns >= filter.min_duration_ns
            && filter.device.is_none_or(|d| g.gap.device == d)
            && filter.cause.is_none_or(|c| g.gap.cause == c)
            && members.as_ref().is_none_or(|m| m[i])
            && (names.needle.is_empty()
                || names.hit(&g.before_name)
                || names.hit(&g.after_name)
                || g.enclosing_nvtx.as_deref().is_some_and(|n| names.hit(n)));
        if passes {
            order.push(i as u32);
        }
    }
    sort(gaps, &mut order, column, descending);
    order
}

/// Case-insensitive substring test; names repeat across gaps, so each is tested once.
struct NameMatcher<'a> {
    needle: String,
    seen: HashMap<&'a str, bool>,
}

impl<'a> NameMatcher<'a> {
    fn hit(&mut self, name: &'a str) -> bool {
        let needle = &self.needle;
        *self
            .seen
            .entry(name)
            .or_insert_with(|| name.to_lowercase().contains(needle))
    }
}

pub fn sort(gaps: &[GapDetail], order: &mut [u32], column: Column, descending: bool) {
    let key = |i: &u32| &gaps[*i as usize];
    let by = |a: &u32, b: &u32| {
        let (x, y) = (key(a), key(b));
        let ord = match column {
            Column::Device => x.gap.device.cmp(&y.gap.device),
            Column::Start => x.gap.start_ns.cmp(&y.gap.start_ns),
            Column::Duration => x.gap.duration_ns.cmp(&y.gap.duration_ns),
            Column::Neighbours => (&x.before_name, &x.after_name).cmp(&(&y.before_name, &y.after_name)),
            Column::Enclosing => x.enclosing_nvtx.cmp(&y.enclosing_nvtx),
            Column::Cause => x.gap.cause.label().cmp(y.gap.cause.label()),
        };
        // Ties by start, so the order is stable and steps through time.
        let ord = ord.then(x.gap.start_ns.cmp(&y.gap.start_ns));
        if descending { ord.reverse() } else { ord }
    };
    order.par_sort_unstable_by(by);
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
