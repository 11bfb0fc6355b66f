//! What a change cuts from the trace: the synchronising calls made non-blocking, the CPU
//! stretches removed, the copies dropped, and NCCL's dependencies on a stream of its own.

use super::change::HostSpan;
use crate::analysis::gaps::{
    Cause, CpuIndex, DEFAULT_MIN_GAP_NS, Gap, OpRef, gaps, launch_nvtx_path,
};
use crate::analysis::intervals::device_window;
use crate::analysis::recurring::signature;
use crate::sorted::median_in_place;
use crate::trace::{NONE, Trace};

/// Whether a string's text contains one of some needles, each string or template tested
/// once: a trace has millions of ranges, and a text built for each took most of a
/// change's setup.
pub(super) struct TextMatch<'a> {
    strings: &'a crate::trace::StringTable,
    needles: &'a [String],
    /// No needle holds a digit: a text's digit-free stretches are its template's, so its
    /// template answers for every text of it.
    by_template: bool,
    known: rustc_hash::FxHashMap<u32, bool>,
}

impl<'a> TextMatch<'a> {
    pub(super) fn new(strings: &'a crate::trace::StringTable, needles: &'a [String]) -> Self {
        Self {
            strings,
            needles,
            by_template: !needles
                .iter()
                .any(|n| n.bytes().any(|b| b.is_ascii_digit())),
            known: Default::default(),
        }
    }

    pub(super) fn contains(&mut self, id: crate::trace::StrId) -> bool {
        let (strings, needles) = (self.strings, self.needles);
        let key = if self.by_template {
            strings.template_of(id)
        } else {
            id
        };
        *self.known.entry(key).or_insert_with(|| {
            if self.by_template {
                needles
                    .iter()
                    .any(|n| strings.template_contains(key, n.as_bytes()))
            } else {
                let text = strings.get(id);
                needles.iter().any(|n| text.contains(n.as_str()))
            }
        })
    }
}

/// Per thread, the synchronising calls (indices, sorted) to make non-blocking: those whose
/// name, or the text of an NVTX range around them, contains one of `texts`.
pub(super) fn removed_syncs(trace: &Trace, sync_names: &[bool], texts: &[String]) -> Vec<Vec<u32>> {
    let mut matches = TextMatch::new(&trace.strings, texts);
    trace
        .threads
        .iter()
        .map(|th| {
            if texts.is_empty() {
                return Vec::new();
            }
            let nvtx = &th.nvtx;
            // The push/pop ranges around each call, found from where the last call's were;
            // start/end ranges (rare: they may overlap anything) tested one by one.
            let mut from = 0;
            let start_end: Vec<usize> = (0..nvtx.len())
                .filter(|&r| nvtx.kind[r] == crate::trace::RangeKind::StartEnd)
                .collect();
            (0..th.api.len())
                .filter(|&k| sync_names[th.api.name[k] as usize])
                .filter(|&k| {
                    let (s, e) = (th.api.start[k], th.api.end[k]);
                    if matches.contains(th.api.name[k]) {
                        return true;
                    }
                    let inner = nvtx.enclosing_from(s, e, &mut from);
                    nvtx.ancestors(inner)
                        .any(|r| matches.contains(nvtx.text[r as usize]))
                        || start_end.iter().any(|&r| {
                            nvtx.start[r] <= s && nvtx.end[r] >= e && matches.contains(nvtx.text[r])
                        })
                })
                .map(|k| k as u32)
                .collect()
        })
        .collect()
}

/// Per thread, the union of the NVTX ranges whose text contains one of `texts`, sorted.
pub(super) fn cpu_cuts(trace: &Trace, texts: &[String]) -> Vec<Vec<(i64, i64)>> {
    spans_of_ranges(trace, texts, |th, r| {
        Some((th.nvtx.start[r], th.nvtx.end[r]))
    })
}

/// Per thread, the union of `span(thread, range)` over its NVTX ranges whose text contains
/// one of `texts`.
pub(super) fn spans_of_ranges(
    trace: &Trace,
    texts: &[String],
    span: impl Fn(&crate::trace::Thread, usize) -> Option<(i64, i64)>,
) -> Vec<Vec<(i64, i64)>> {
    let mut matches = TextMatch::new(&trace.strings, texts);
    trace
        .threads
        .iter()
        .map(|th| {
            if texts.is_empty() {
                return Vec::new();
            }
            let mut spans: Vec<(i64, i64)> = (0..th.nvtx.len())
                .filter(|&r| matches.contains(th.nvtx.text[r]))
                .filter_map(|r| span(th, r))
                .collect();
            spans.sort_unstable();
            union_of(spans)
        })
        .collect()
}

/// Per thread, the sorted spans of `stalls` that fall on it.
pub(super) fn stall_spans(trace: &Trace, stalls: &[HostSpan]) -> Vec<Vec<(i64, i64)>> {
    trace
        .threads
        .iter()
        .map(|th| {
            let mut spans: Vec<(i64, i64)> = stalls
                .iter()
                .filter(|s| s.is_on(th))
                .map(|s| (s.start_ns, s.end_ns))
                .collect();
            spans.sort_unstable();
            union_of(spans)
        })
        .collect()
}

/// Per thread, what replaying the ranges whose text contains one of `texts` as CUDA graphs
/// removes, as stalls: from the end of each occurrence's first launch call to its end (its
/// later launches take no time: one launch releases them all).
pub(super) fn capture_spans(trace: &Trace, texts: &[String]) -> Vec<Vec<(i64, i64)>> {
    if texts.is_empty() {
        return vec![Vec::new(); trace.threads.len()];
    }
    let launch_names = trace.api_names_where(|name| name.contains("Launch"));
    let is_launch = |th: &crate::trace::Thread, k: usize| launch_names[th.api.name[k] as usize];
    spans_of_ranges(trace, texts, |th, r| {
        let (s, e) = (th.nvtx.start[r], th.nvtx.end[r]);
        let first = th.api.start.partition_point(|&x| x < s);
        let end = th.api.start.partition_point(|&x| x <= e);
        let mut launches = (first..end).filter(|&k| is_launch(th, k));
        let k = launches.next()?;
        launches.next()?;
        Some((th.api.end[k], e))
    })
}

/// Sorted, overlapping spans merged.
pub(super) fn union_of(spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    let mut union: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match union.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => union.push((s, e)),
        }
    }
    union
}

/// Each thread's spans in `more` added to `cut`'s, kept sorted and disjoint.
pub(super) fn add_spans(cut: &mut [Vec<(i64, i64)>], more: &[Vec<(i64, i64)>]) {
    for (c, m) in cut.iter_mut().zip(more) {
        if m.is_empty() {
            continue;
        }
        let mut all = std::mem::take(c);
        all.extend_from_slice(m);
        all.sort_unstable();
        *c = union_of(all);
    }
}

/// Whether `t` is in one of the sorted, disjoint `[start, end)` spans: a call starting
/// where a stall ends is not part of it.
pub(super) fn in_spans(spans: &[(i64, i64)], t: i64) -> bool {
    let i = spans.partition_point(|s| s.1 <= t);
    spans.get(i).is_some_and(|s| s.0 <= t)
}

/// Every gap of every device, as the analyses find them (default minimum).
pub(super) fn all_gaps(trace: &Trace) -> Vec<Gap> {
    let cpu = CpuIndex::new(trace);
    trace
        .devices
        .iter()
        .filter_map(|d| {
            let w = device_window(d)?;
            Some(gaps(trace, &cpu, d, w, DEFAULT_MIN_GAP_NS))
        })
        .flatten()
        .collect()
}

/// Per thread, the CPU time to cut for the host-bound gaps whose signature is one of
/// `signatures`: the gap itself, moved back by the launch latency the op after it had (so
/// that op's launch reaches the GPU as the op before it ends).
pub(super) fn host_gap_cuts(
    trace: &Trace,
    gaps: &[Gap],
    signatures: &[String],
) -> Vec<Vec<(i64, i64)>> {
    let mut out: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.threads.len()];
    // Signatures are put in words once per distinct pattern, not once per gap.
    let mut wanted: rustc_hash::FxHashMap<(u32, u32, u32), bool> = Default::default();
    let mut matched: rustc_hash::FxHashMap<(u32, u32, u32), Vec<&Gap>> = Default::default();
    for g in gaps.iter().filter(|g| g.cause == Cause::HostBound) {
        let template = g
            .enclosing()
            .map_or(NONE, |id| trace.strings.template_of(id));
        let key = (g.before_name(trace), g.after_name(trace), template);
        let hit = *wanted
            .entry(key)
            .or_insert_with(|| signatures.contains(&signature(trace, g)));
        if hit {
            matched.entry(key).or_default().push(g);
        }
    }
    for members in matched.values() {
        let mut durations: Vec<i64> = members.iter().map(|g| g.duration_ns).collect();
        let limit = median_in_place(&mut durations).saturating_mul(HOST_GAP_OUTLIER_FACTOR);
        for g in members.iter().filter(|g| g.duration_ns <= limit) {
            let Some(device) = trace.device(g.device_id()) else {
                continue;
            };
            let ops = &device.streams[g.after.stream as usize].ops;
            let i = g.after.op as usize;
            let (th, call) = (ops.launch_thread[i], ops.launch_call[i]);
            if th == NONE || call == NONE {
                continue;
            }
            let latency =
                (ops.start[i] - trace.threads[th as usize].api.start[call as usize]).max(0);
            out[th as usize].push((g.start_ns - latency, g.end_ns() - latency));
        }
    }
    for spans in &mut out {
        spans.sort_unstable();
        *spans = union_of(std::mem::take(spans));
    }
    out
}

/// Gaps of a host-bound pattern longer than this many times its median are one-offs (a
/// JIT compilation after the same kernel as every step's short gap): `cut_host_gaps`
/// leaves them to a change of their own.
pub const HOST_GAP_OUTLIER_FACTOR: i64 = 4;

/// The copies `texts` name (by the op's name or an NVTX range at its launch): (device,
/// stream, op).
pub(super) fn dropped_copies(
    trace: &Trace,
    texts: &[String],
) -> rustc_hash::FxHashSet<(u32, u32, u32)> {
    let mut out = rustc_hash::FxHashSet::default();
    if texts.is_empty() {
        return out;
    }
    let mut matches = TextMatch::new(&trace.strings, texts);
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                if ops.kind[i].is_kernel() {
                    continue;
                }
                let op = OpRef {
                    stream: s as u32,
                    op: i as u32,
                };
                let hit = matches.contains(ops.name[i])
                    || launch_nvtx_path(trace, device, op)
                        .into_iter()
                        .any(|id| matches.contains(id));
                if hit {
                    out.insert((d as u32, s as u32, i as u32));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::TextMatch;
    use crate::trace::StringTable;

    #[test]
    fn a_text_match_answers_as_the_texts_do() {
        let mut table = StringTable::new();
        let texts = [
            "aten::item",
            "aten::linear, sizes = [[2, 77, 4096], [4096, 4096]]",
            "aten::linear, sizes = [[2, 78, 4096], [4096, 4096]]",
            "layer_12 attention",
            "layer_3 attention",
            "denoising_step_5",
            "ncclDevKernel_AllToAll4D",
            "",
        ];
        let ids: Vec<u32> = texts.iter().map(|t| table.intern(t)).collect();
        table.freeze();
        let needles: [&[&str]; 8] = [
            &["item"],
            &["linear"],
            &["77"],
            &["layer_1"],
            &["12 att", "step"],
            &["4D"],
            &["sizes = [[2"],
            &["absent", "tention"],
        ];
        for needles in needles {
            let needles: Vec<String> = needles.iter().map(|n| n.to_string()).collect();
            let mut matches = TextMatch::new(&table, &needles);
            // Twice: the second answers from what the first learnt.
            for _ in 0..2 {
                for (&id, text) in ids.iter().zip(texts) {
                    let expected = needles.iter().any(|n| text.contains(n.as_str()));
                    assert_eq!(matches.contains(id), expected, "{needles:?} in {text:?}");
                }
            }
        }
    }
}
