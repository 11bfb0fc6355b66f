//! Find ops, NVTX ranges and CUDA API calls by name (substring, regex or exact name) and
//! step through the matches in time order. Names are interned, so a query tests each
//! distinct name once (a query without digits tests each template once: a text's
//! digit-free stretches are its template's) and then every item by its name id. On a large
//! trace the search runs on a worker; the last matches stay on screen meanwhile.

use std::sync::Arc;

use eframe::egui;
use rayon::prelude::*;

use super::{RowKind, Selection};
use crate::analysis::gaps::OpRef;
use crate::trace::{DeviceIndex, StrId, Trace};
use crate::ui::task::{Task, take_answer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Substring,
    Regex,
    /// The whole name, as the kernel table asks for.
    Exact,
    /// Every text equal to the query with its numbers as `#` (an NVTX table's row).
    Template,
}

#[derive(Debug, Clone, Copy)]
pub struct Match {
    pub start: i64,
    pub end: i64,
    pub selection: Selection,
    pub row: RowKind,
}

/// At most this many matches are kept (a query like "a" matches every item of a trace of
/// millions; marks and stepping stay useful, memory stays bounded).
pub const MAX_MATCHES: usize = 1_000_000;

/// Traces with fewer items than this are searched within the frame.
pub const ITEMS_SEARCHED_IN_FRAME: usize = 1_000_000;

/// Per string id: does the name match?
fn matching_names(trace: &Trace, query: &str, mode: Mode) -> Result<Vec<bool>, String> {
    let strings = &trace.strings;
    match mode {
        Mode::Exact => {
            let mut hits = vec![false; strings.len()];
            if let Some(id) = strings.find(query) {
                hits[id as usize] = true;
            }
            Ok(hits)
        }
        Mode::Template => {
            let wanted: Vec<bool> = (0..strings.templates_len() as u32)
                .map(|t| strings.template_text(t) == query)
                .collect();
            Ok((0..strings.len() as StrId)
                .map(|id| wanted[strings.template_of(id) as usize])
                .collect())
        }
        Mode::Regex => {
            let regex = regex::Regex::new(query).map_err(|e| e.to_string())?;
            Ok((0..strings.len() as StrId)
                .into_par_iter()
                .map(|id| regex.is_match(&strings.get(id)))
                .collect())
        }
        Mode::Substring => {
            let needle = query.to_lowercase();
            if !needle.is_ascii() {
                return Ok((0..strings.len() as StrId)
                    .into_par_iter()
                    .map(|id| strings.get(id).to_lowercase().contains(&needle))
                    .collect());
            }
            // Case folded as ASCII. A text holds the query only if its template holds each
            // of the query's stretches between digits (the text's digits are all its
            // numbers'): tested once per template; with no digit in the query that is all.
            let stretches: Vec<&[u8]> = needle
                .as_bytes()
                .split(u8::is_ascii_digit)
                .filter(|s| !s.is_empty())
                .collect();
            // Its digits must be numbers of the text, in places of the template that follow
            // the query's text before them: tested on the numbers as kept, so only texts
            // that pass are joined.
            let runs = crate::trace::DigitRun::all_in(needle.as_bytes());
            let has_digits = !runs.is_empty();
            // Per template: whether it can hold the query, and the places of each run (none
            // to test where the template has digits of its own: its texts are joined).
            let by_template: Vec<Option<Option<Vec<u64>>>> = (0..strings.templates_len() as u32)
                .into_par_iter()
                .map(|t| {
                    let holds = stretches
                        .iter()
                        .all(|s| strings.template_contains_ascii_case(t, s));
                    if !holds {
                        return None;
                    }
                    if strings.template_has_digits(t) {
                        return Some(None);
                    }
                    let places: Vec<u64> = runs.iter().map(|r| strings.places_for(t, r)).collect();
                    places.iter().all(|&p| p != 0).then_some(Some(places))
                })
                .collect();
            let finder = memchr::memmem::Finder::new(needle.as_bytes());
            Ok((0..strings.len() as StrId)
                .into_par_iter()
                .map_init(Vec::new, |text, id| {
                    let Some(places) = &by_template[strings.template_of(id) as usize] else {
                        return false;
                    };
                    if !has_digits {
                        return true;
                    }
                    if let Some(places) = places {
                        let can = runs
                            .iter()
                            .zip(places)
                            .all(|(r, &p)| strings.numbers_can_hold_at(id, r, p));
                        if !can {
                            return false;
                        }
                    }
                    text.clear();
                    strings.text_into(id, text);
                    text.make_ascii_lowercase();
                    finder.find(text).is_some()
                })
                .collect())
        }
    }
}

/// Every op, NVTX range and API call whose name matches `query`, by start time (the first
/// [`MAX_MATCHES`]). An exact name (a kernel table's click) looks among ranges and calls
/// only when no op has it. Each stream's ops and each thread's ranges and calls are in
/// start order already: their matching positions are found in parallel (at most the cap
/// of each), then merged, and the merge stops at the cap, so a query that matches millions
/// of items holds no more than the cap.
pub fn find(trace: &Trace, query: &str, mode: Mode) -> Result<Vec<Match>, String> {
    if query.is_empty() {
        return Ok(Vec::new());
    }
    let matching = matching_names(trace, query, mode)?;
    let hits_in = |names: &[StrId]| -> Vec<u32> {
        (0..names.len() as u32)
            .filter(|&i| {
                matching
                    .get(names[i as usize] as usize)
                    .copied()
                    .unwrap_or(false)
            })
            .take(MAX_MATCHES)
            .collect()
    };
    let stream_ids: Vec<(usize, usize)> = trace
        .devices
        .iter()
        .enumerate()
        .flat_map(|(d, device)| (0..device.streams.len()).map(move |s| (d, s)))
        .collect();
    let stream_hits: Vec<Vec<u32>> = stream_ids
        .par_iter()
        .map(|&(d, s)| hits_in(&trace.devices[d].streams[s].ops.name))
        .collect();
    let ops_only = mode == Mode::Exact && stream_hits.iter().any(|h| !h.is_empty());
    let thread_hits: Vec<(Vec<u32>, Vec<u32>)> = if ops_only {
        Vec::new()
    } else {
        trace
            .threads
            .par_iter()
            .map(|t| (hits_in(&t.nvtx.text), hits_in(&t.api.name)))
            .collect()
    };
    let mut sources: Vec<Source> = Vec::new();
    for (&(d, s), hits) in stream_ids.iter().zip(stream_hits) {
        let ops = &trace.devices[d].streams[s].ops;
        sources.push(Source {
            hits,
            make: Box::new(move |i| Match {
                start: ops.start[i as usize],
                end: ops.end[i as usize],
                selection: Selection::Op {
                    device: DeviceIndex(d),
                    op: OpRef {
                        stream: s as u32,
                        op: i,
                    },
                },
                row: RowKind::Stream {
                    device: d,
                    stream: s,
                },
            }),
        });
    }
    for (t, (ranges, calls)) in thread_hits.into_iter().enumerate() {
        let (nvtx, api) = (&trace.threads[t].nvtx, &trace.threads[t].api);
        sources.push(Source {
            hits: ranges,
            make: Box::new(move |r| {
                let r = r as usize;
                Match {
                    start: nvtx.start[r],
                    end: nvtx.end[r],
                    selection: Selection::Range {
                        thread: t,
                        range: r,
                    },
                    row: RowKind::Nvtx {
                        thread: t,
                        depth: nvtx.depth[r],
                    },
                }
            }),
        });
        sources.push(Source {
            hits: calls,
            make: Box::new(move |c| {
                let c = c as usize;
                Match {
                    start: api.start[c],
                    end: api.end[c],
                    selection: Selection::Call { thread: t, call: c },
                    row: RowKind::Api { thread: t },
                }
            }),
        });
    }
    Ok(first_by_start(&sources, MAX_MATCHES))
}

/// One row's matching items, by position (in start order), with their start and match.
struct Source<'a> {
    hits: Vec<u32>,
    make: Box<dyn Fn(u32) -> Match + Sync + 'a>,
}

/// The first `cap` items of `sources` in (start, end, source) order: a merge of the
/// sources' runs (each in start order), stopped at the cap.
fn first_by_start(sources: &[Source], cap: usize) -> Vec<Match> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let head = |k: usize, at: usize| {
        let m = (sources[k].make)(sources[k].hits[at]);
        Reverse((m.start, m.end, k, at))
    };
    let mut heap: BinaryHeap<Reverse<(i64, i64, usize, usize)>> = (0..sources.len())
        .filter(|&k| !sources[k].hits.is_empty())
        .map(|k| head(k, 0))
        .collect();
    let total: usize = sources.iter().map(|s| s.hits.len()).sum();
    let mut out = Vec::with_capacity(total.min(cap));
    while out.len() < cap
        && let Some(Reverse((_, _, k, at))) = heap.pop()
    {
        out.push((sources[k].make)(sources[k].hits[at]));
        if at + 1 < sources[k].hits.len() {
            heap.push(head(k, at + 1));
        }
    }
    out
}

/// The matches of one row, by start.
pub struct RowMatches {
    pub row: RowKind,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    pub longest: i64,
}

/// A search's result, with its marks per row.
type Found = (Result<Vec<Match>, String>, Vec<RowMatches>);

/// The search bar's state.
#[derive(Default)]
pub struct Search {
    pub open: bool,
    pub query: String,
    pub mode: Mode,
    pub error: Option<String>,
    pub matches: Vec<Match>,
    pub current: Option<usize>,
    /// Per row with matches, for the match marks on the timeline.
    pub by_row: Vec<RowMatches>,
    searched: Option<(String, Mode)>,
    /// A search running on a worker, and what for.
    pending: Option<Task<(String, Mode), Found>>,
    /// Go to the first match once the search in flight is done (a table's click).
    step_when_done: bool,
}

impl Search {
    /// Runs the query unless it already ran (or runs): on a worker for a large trace.
    /// Returns the match to go to when a search asked to step has just finished.
    pub fn run(&mut self, trace: &Arc<Trace>, ctx: &egui::Context) -> Option<Match> {
        if let Some((key, found)) = take_answer(&mut self.pending) {
            self.take(key, found);
            if std::mem::take(&mut self.step_when_done) {
                return self.step(true);
            }
        }
        let key = (self.query.clone(), self.mode);
        // One search at a time: while one runs, a newer query waits for it (typing a name
        // would start a search per letter, each holding its matches).
        if self.searched.as_ref() == Some(&key) || self.pending.is_some() {
            return None;
        }
        if trace.event_count() < ITEMS_SEARCHED_IN_FRAME {
            self.run_now(trace);
            return std::mem::take(&mut self.step_when_done)
                .then(|| self.step(true))
                .flatten();
        }
        let (trace, (query, mode)) = (trace.clone(), key.clone());
        self.pending = Some(Task::compute(key, Some(ctx), move |_| {
            search(&trace, &query, mode)
        }));
        None
    }

    /// Runs the query now, unless it already ran.
    pub fn run_now(&mut self, trace: &Trace) {
        let key = (self.query.clone(), self.mode);
        if self.searched.as_ref() != Some(&key) {
            let found = search(trace, &key.0, key.1);
            self.take(key, found);
        }
    }

    /// No query and no matches (Escape's last step): the marks on the rows go, and the
    /// next query runs afresh.
    pub fn clear(&mut self) {
        self.query.clear();
        self.error = None;
        self.matches.clear();
        self.by_row.clear();
        self.current = None;
        self.searched = None;
        self.pending = None;
        self.step_when_done = false;
    }

    /// Whether a search is running on a worker.
    pub fn searching(&self) -> bool {
        self.pending.is_some()
    }

    fn take(&mut self, key: (String, Mode), (result, by_row): Found) {
        self.searched = Some(key);
        self.current = None;
        match result {
            Ok(matches) => {
                self.error = None;
                self.matches = matches;
                self.by_row = by_row;
            }
            Err(e) => {
                self.error = Some(e);
                self.matches = Vec::new();
                self.by_row = Vec::new();
            }
        }
    }

    /// Searches for `query` in `mode` (a table click) and opens the bar. The same search
    /// again steps to its next match, returned; a new one steps to its first once done
    /// (see [`Search::run`]).
    pub fn set(&mut self, query: &str, mode: Mode) -> Option<Match> {
        self.open = true;
        let key = (query.to_string(), mode);
        if self.searched.as_ref() == Some(&key) && self.pending.is_none() {
            return self.step(true);
        }
        self.query = key.0;
        self.mode = mode;
        self.step_when_done = true;
        None
    }

    /// Moves to the next (or previous) match, wrapping around.
    pub fn step(&mut self, forward: bool) -> Option<Match> {
        let n = self.matches.len();
        if n == 0 {
            return None;
        }
        let next = match (self.current, forward) {
            (None, true) => 0,
            (None, false) => n - 1,
            (Some(i), true) => (i + 1) % n,
            (Some(i), false) => (i + n - 1) % n,
        };
        self.current = Some(next);
        Some(self.matches[next])
    }
}

/// The matches of `query` and their marks per row.
fn search(trace: &Trace, query: &str, mode: Mode) -> Found {
    let result = find(trace, query, mode);
    let by_row = result.as_ref().map(|m| rows_of(m)).unwrap_or_default();
    (result, by_row)
}

fn rows_of(matches: &[Match]) -> Vec<RowMatches> {
    let mut by_row: Vec<RowMatches> = Vec::new();
    let mut index: rustc_hash::FxHashMap<RowKind, usize> = Default::default();
    for m in matches {
        let i = *index.entry(m.row).or_insert_with(|| {
            by_row.push(RowMatches {
                row: m.row,
                starts: Vec::new(),
                ends: Vec::new(),
                longest: 0,
            });
            by_row.len() - 1
        });
        let row = &mut by_row[i];
        row.starts.push(m.start);
        row.ends.push(m.end);
        row.longest = row.longest.max(m.end - m.start);
    }
    by_row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    /// Ops, ranges and calls with texts that differ in their numbers, some at equal starts.
    fn trace() -> Trace {
        let mut b = TraceBuilder::new();
        let th = b.thread(1, 1);
        for k in 0..300i64 {
            let t = k * 10;
            b.range(
                th,
                &format!("aten::linear, seq = {k}, op_id = {}", k * 7),
                t,
                t + 8,
            );
            let call = b.call(th, "cudaLaunchKernel", t + 1, t + 2);
            // Digits inside a word stay in a name's template: found as well as numbers.
            let name = match k % 5 {
                0 => "gemm_47",
                1 => "ncclAllToAll4D",
                2 => "c10d_broadcast",
                _ => "elementwise",
            };
            b.kernel(
                0,
                1 + (k % 2) as u32,
                name,
                (t + 3, t + 5 + k % 4),
                Some(call),
            );
        }
        b.build()
    }

    fn brute_force(trace: &Trace, query: &str) -> Vec<(i64, i64)> {
        let q = query.to_lowercase();
        let has = |id: StrId| trace.strings.get(id).to_lowercase().contains(&q);
        let mut out = Vec::new();
        for d in &trace.devices {
            for s in &d.streams {
                (0..s.ops.len())
                    .filter(|&i| has(s.ops.name[i]))
                    .for_each(|i| out.push((s.ops.start[i], s.ops.end[i])));
            }
        }
        for t in &trace.threads {
            (0..t.nvtx.len())
                .filter(|&r| has(t.nvtx.text[r]))
                .for_each(|r| out.push((t.nvtx.start[r], t.nvtx.end[r])));
            (0..t.api.len())
                .filter(|&c| has(t.api.name[c]))
                .for_each(|c| out.push((t.api.start[c], t.api.end[c])));
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn a_search_finds_every_item_holding_the_query_in_time_order() {
        let trace = trace();
        for query in [
            "op_id = 7",
            "op_id = 70",
            "= 21",
            "seq = 1,",
            "47",
            "7",
            "LINEAR, SEQ = 29",
            "gemm",
            "cudaLaunch",
            "nothing like it",
            "op_id = 2093",
            "alltoall4d",
            "ToAll4",
            "4D",
            "c10d",
            "10",
        ] {
            let found = find(&trace, query, Mode::Substring).unwrap();
            let spans: Vec<(i64, i64)> = found.iter().map(|m| (m.start, m.end)).collect();
            assert!(spans.is_sorted(), "{query}: not in time order");
            let mut sorted = spans.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, brute_force(&trace, query), "{query}");
        }
        assert_eq!(
            find(&trace, "op_id = 2093", Mode::Substring).unwrap().len(),
            1
        );
    }

    #[test]
    fn the_cap_keeps_the_earliest_matches() {
        let trace = trace();
        let mut sources = Vec::new();
        for t in &trace.threads {
            let nvtx = &t.nvtx;
            sources.push(Source {
                hits: (0..nvtx.len() as u32).collect(),
                make: Box::new(move |r| Match {
                    start: nvtx.start[r as usize],
                    end: nvtx.end[r as usize],
                    selection: Selection::Range {
                        thread: 0,
                        range: r as usize,
                    },
                    row: RowKind::Api { thread: 0 },
                }),
            });
        }
        let first = first_by_start(&sources, 5);
        let starts: Vec<i64> = first.iter().map(|m| m.start).collect();
        assert_eq!(starts, vec![0, 10, 20, 30, 40]);
    }
}
