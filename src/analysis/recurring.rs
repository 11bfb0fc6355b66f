//! Gaps put in words (neighbour names, NVTX paths, enclosing range, the launching thread's
//! calls during the gap) — only for the gaps shown — and gaps grouped by signature into
//! recurring patterns, by interned ids: no string per gap.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::gaps::{Cause, Gap, OpRef, launch_nvtx_path};
use super::iterations::median;
use crate::trace::{Device, NONE, StrId, TemplateId, Trace};

/// An API call of the launching thread that overlaps a gap.
#[derive(Debug, Clone, Serialize)]
pub struct CallDuringGap {
    pub name: String,
    pub start_ns: i64,
    pub duration_ns: i64,
}

/// A gap in words.
#[derive(Debug, Clone, Serialize)]
pub struct GapDetail {
    #[serde(flatten)]
    pub gap: Gap,
    pub before_name: String,
    pub after_name: String,
    pub before_nvtx: Vec<String>,
    pub after_nvtx: Vec<String>,
    pub enclosing_nvtx: Option<String>,
    /// Calls of the thread that launched the op after the gap, overlapping it, longest first.
    pub calls_during: Vec<CallDuringGap>,
}

impl GapDetail {
    /// Before → after, enclosing range with numbers as `#`, cause.
    pub fn signature(&self, trace: &Trace) -> String {
        signature(trace, &self.gap)
    }
}

/// A gap's signature: before → after, enclosing range with numbers as `#`, cause.
pub fn signature(trace: &Trace, gap: &Gap) -> String {
    let enclosing = gap.enclosing().map_or_else(
        || "(no NVTX)".to_string(),
        |id| trace.strings.template_text(trace.strings.template_of(id)),
    );
    format!(
        "{} → {} in {} [{}]",
        trace.strings.get(gap.before_name),
        trace.strings.get(gap.after_name),
        enclosing,
        gap.cause.label()
    )
}

/// Everything known about one gap; `max_calls` limits the calls listed.
pub fn describe(trace: &Trace, gap: &Gap, max_calls: usize) -> GapDetail {
    let Some(device) = trace.device(gap.device_id()) else {
        return GapDetail {
            gap: *gap,
            before_name: String::new(),
            after_name: String::new(),
            before_nvtx: Vec::new(),
            after_nvtx: Vec::new(),
            enclosing_nvtx: None,
            calls_during: Vec::new(),
        };
    };
    let texts = |op: OpRef| -> Vec<String> {
        launch_nvtx_path(trace, device, op)
            .into_iter()
            .map(|id| trace.strings.get(id).into_owned())
            .collect()
    };
    GapDetail {
        gap: *gap,
        before_name: trace.strings.get(gap.before_name).into_owned(),
        after_name: trace.strings.get(gap.after_name).into_owned(),
        before_nvtx: texts(gap.before),
        after_nvtx: texts(gap.after),
        enclosing_nvtx: gap.enclosing().map(|id| trace.strings.get(id).into_owned()),
        calls_during: calls_during(trace, device, gap, max_calls),
    }
}

fn calls_during(trace: &Trace, device: &Device, gap: &Gap, max_calls: usize) -> Vec<CallDuringGap> {
    let ops = &device.streams[gap.after.stream as usize].ops;
    let thread = ops.launch_thread[gap.after.op as usize];
    if max_calls == 0 || thread == NONE {
        return Vec::new();
    }
    let thread = &trace.threads[thread as usize];
    let api = &thread.api;
    let mut calls: Vec<CallDuringGap> = thread
        .calls_overlapping(gap.start_ns, gap.end_ns())
        .map(|i| CallDuringGap {
            name: trace.strings.get(api.name[i]).into_owned(),
            start_ns: api.start[i],
            duration_ns: api.end[i] - api.start[i],
        })
        .collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    calls.truncate(max_calls);
    calls
}

#[derive(Debug, Clone, Serialize)]
pub struct RecurringGap {
    pub signature: String,
    pub count: usize,
    pub total_ns: i64,
    pub median_ns: i64,
    /// Indices of its gaps in the list given to [`recurring`], in time order.
    #[serde(skip)]
    pub members: Vec<u32>,
}

/// What gaps of one pattern share: the neighbours' names, the enclosing range with its
/// numbers as `#` (its template), the cause.
type Key = (StrId, StrId, TemplateId, Cause);

/// Gaps grouped by signature, largest total first: what fixing one pattern would save.
pub fn recurring(trace: &Trace, gaps: &[Gap]) -> Vec<RecurringGap> {
    let mut groups: FxHashMap<Key, Vec<u32>> = FxHashMap::default();
    for (i, g) in gaps.iter().enumerate() {
        let enclosing = g
            .enclosing()
            .map_or(NONE, |id| trace.strings.template_of(id));
        groups
            .entry((g.before_name, g.after_name, enclosing, g.cause))
            .or_default()
            .push(i as u32);
    }
    let mut out: Vec<RecurringGap> = groups
        .into_values()
        .map(|members| {
            let durations: Vec<i64> = members
                .iter()
                .map(|&i| gaps[i as usize].duration_ns)
                .collect();
            RecurringGap {
                signature: signature(trace, &gaps[members[0] as usize]),
                count: members.len(),
                total_ns: durations.iter().sum(),
                median_ns: median(&durations),
                members,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.signature.cmp(&b.signature))
    });
    out
}
