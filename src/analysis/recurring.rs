//! Gaps described in words (neighbour names, NVTX paths, enclosing range, the launching
//! thread's calls during the gap) and grouped by signature into recurring gaps.

use std::collections::HashMap;

use serde::Serialize;

use super::gaps::{Gap, OpRef, enclosing, launch_nvtx_path};
use super::iterations::{median, numbers_to_hash};
use crate::trace::{Device, NONE, StrId, Trace};

/// An API call of the launching thread that overlaps a gap.
#[derive(Debug, Clone, Serialize)]
pub struct CallDuringGap {
    pub name: String,
    pub start_ns: i64,
    pub duration_ns: i64,
}

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
    /// The same names as interned ids, for tables that sort and filter many gaps.
    #[serde(skip)]
    pub ids: GapNameIds,
}

/// Interned ids (`Trace::strings`) of a gap's names.
#[derive(Debug, Clone, Copy, Default)]
pub struct GapNameIds {
    pub before: StrId,
    pub after: StrId,
    pub enclosing: Option<StrId>,
}

impl GapDetail {
    /// Before → after, enclosing range with numbers as `#`, cause.
    pub fn signature(&self) -> String {
        let enclosing = self
            .enclosing_nvtx
            .as_deref()
            .map(numbers_to_hash)
            .unwrap_or_else(|| "(no NVTX)".into());
        format!(
            "{} → {} in {} [{}]",
            self.before_name,
            self.after_name,
            enclosing,
            self.gap.cause.label()
        )
    }
}

fn op_name_id(device: &Device, op: OpRef) -> StrId {
    device.streams[op.stream as usize].ops.name[op.op as usize]
}

/// Everything known about one gap; `max_calls` limits the calls listed.
pub fn describe(trace: &Trace, device: &Device, gap: &Gap, max_calls: usize) -> GapDetail {
    let texts = |ids: Vec<u32>| -> Vec<String> {
        ids.into_iter()
            .map(|id| trace.strings.get(id).to_string())
            .collect()
    };
    let before_path = launch_nvtx_path(trace, device, gap.before);
    let after_path = launch_nvtx_path(trace, device, gap.after);
    let ids = GapNameIds {
        before: op_name_id(device, gap.before),
        after: op_name_id(device, gap.after),
        enclosing: enclosing(&before_path, &after_path),
    };
    let enclosing_nvtx = ids.enclosing.map(|id| trace.strings.get(id).to_string());
    GapDetail {
        gap: gap.clone(),
        before_name: trace.strings.get(ids.before).to_string(),
        after_name: trace.strings.get(ids.after).to_string(),
        before_nvtx: texts(before_path),
        after_nvtx: texts(after_path),
        enclosing_nvtx,
        calls_during: calls_during(trace, device, gap, max_calls),
        ids,
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
    let (gs, ge) = (gap.start_ns, gap.start_ns + gap.duration_ns);
    let mut calls: Vec<CallDuringGap> = (thread.first_call_running_at(gs)..api.len())
        .take_while(|&i| api.start[i] < ge)
        .filter(|&i| api.end[i] > gs)
        .map(|i| CallDuringGap {
            name: trace.strings.get(api.name[i]).to_string(),
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
    pub members: Vec<usize>,
}

/// Gaps grouped by signature, largest total first: what fixing one pattern would save.
pub fn recurring(details: &[GapDetail]) -> Vec<RecurringGap> {
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, d) in details.iter().enumerate() {
        groups.entry(d.signature()).or_default().push(i);
    }
    let mut out: Vec<RecurringGap> = groups
        .into_iter()
        .map(|(signature, members)| {
            let durations: Vec<i64> = members
                .iter()
                .map(|&i| details[i].gap.duration_ns)
                .collect();
            RecurringGap {
                signature,
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
