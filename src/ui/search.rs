//! Find ops, NVTX ranges and CUDA API calls by name (substring, regex or exact name) and
//! step through the matches in time order. Names are interned, so a query tests each
//! distinct name once (a query without digits tests each template once: a text's
//! digit-free stretches are its template's) and then every item by its name id. On a large
//! trace the search runs on a worker; the last matches stay on screen meanwhile.

use std::sync::Arc;

use eframe::egui;
use rayon::prelude::*;

use super::job::{Job, take_answer};
use super::timeline::{RowKind, Selection};
use crate::analysis::gaps::OpRef;
use crate::trace::{StrId, Trace};

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
            let by_template: Vec<bool> = (0..strings.templates_len() as u32)
                .into_par_iter()
                .map(|t| {
                    stretches
                        .iter()
                        .all(|s| strings.template_contains_ascii_case(t, s))
                })
                .collect();
            // Its digits must be some number's of the text: tested on the numbers as kept,
            // so only texts that pass are joined.
            let runs = crate::trace::DigitRun::all_in(needle.as_bytes());
            let has_digits = !runs.is_empty();
            let finder = memchr::memmem::Finder::new(needle.as_bytes());
            Ok((0..strings.len() as StrId)
                .into_par_iter()
                .map_init(Vec::new, |text, id| {
                    if !by_template[strings.template_of(id) as usize] {
                        return false;
                    }
                    if !has_digits {
                        return true;
                    }
                    if !runs.iter().all(|r| strings.numbers_can_hold(id, r)) {
                        return false;
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
/// start order already: they are merged, and the merge stops at the cap, so a query that
/// matches millions of items holds no more than the cap.
pub fn find(trace: &Trace, query: &str, mode: Mode) -> Result<Vec<Match>, String> {
    if query.is_empty() {
        return Ok(Vec::new());
    }
    let matching = matching_names(trace, query, mode)?;
    let hit = |id: u32| matching.get(id as usize).copied().unwrap_or(false);
    let mut sources: Vec<Box<dyn Iterator<Item = Match> + '_>> = Vec::new();
    for (d, device) in trace.devices.iter().enumerate() {
        for (s, stream) in device.streams.iter().enumerate() {
            let ops = &stream.ops;
            sources.push(Box::new(
                (0..ops.len())
                    .filter(move |&i| hit(ops.name[i]))
                    .map(move |i| Match {
                        start: ops.start[i],
                        end: ops.end[i],
                        selection: Selection::Op {
                            device: d,
                            op: OpRef {
                                stream: s as u32,
                                op: i as u32,
                            },
                        },
                        row: RowKind::Stream {
                            device: d,
                            stream: s,
                        },
                    }),
            ));
        }
    }
    let ops_only = mode == Mode::Exact
        && trace
            .devices
            .iter()
            .flat_map(|d| &d.streams)
            .any(|s| s.ops.name.iter().any(|&n| hit(n)));
    if !ops_only {
        for (t, thread) in trace.threads.iter().enumerate() {
            let nvtx = &thread.nvtx;
            sources.push(Box::new(
                (0..nvtx.len())
                    .filter(move |&r| hit(nvtx.text[r]))
                    .map(move |r| Match {
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
                    }),
            ));
            let api = &thread.api;
            sources.push(Box::new(
                (0..api.len())
                    .filter(move |&c| hit(api.name[c]))
                    .map(move |c| Match {
                        start: api.start[c],
                        end: api.end[c],
                        selection: Selection::Call { thread: t, call: c },
                        row: RowKind::Api { thread: t },
                    }),
            ));
        }
    }
    Ok(merge_by_start(sources, MAX_MATCHES))
}

/// The first `cap` items of `sources` (each in start order) in (start, end, source) order.
fn merge_by_start<'a>(
    mut sources: Vec<Box<dyn Iterator<Item = Match> + 'a>>,
    cap: usize,
) -> Vec<Match> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut heads: Vec<Option<Match>> = sources.iter_mut().map(|s| s.next()).collect();
    let mut heap: BinaryHeap<Reverse<(i64, i64, usize)>> = heads
        .iter()
        .enumerate()
        .filter_map(|(k, m)| m.map(|m| Reverse((m.start, m.end, k))))
        .collect();
    let mut out = Vec::new();
    while out.len() < cap
        && let Some(Reverse((_, _, k))) = heap.pop()
    {
        if let Some(m) = heads[k].take() {
            out.push(m);
        }
        heads[k] = sources[k].next();
        if let Some(m) = heads[k] {
            heap.push(Reverse((m.start, m.end, k)));
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
    pending: Option<Job<(String, Mode), Found>>,
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
        self.pending = Some(Job::compute(key, Some(ctx), move |_| {
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
