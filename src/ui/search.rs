//! Find ops, NVTX ranges and CUDA API calls by name (substring, regex or exact name) and step through the
//! matches in time order. Names are interned, so a query tests each distinct name once and
//! then every item by its name id.

use rayon::prelude::*;

use super::timeline::{RowKind, Selection};
use crate::analysis::gaps::OpRef;
use crate::trace::Trace;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Substring,
    Regex,
    /// The whole name, as the kernel table asks for.
    Exact,
}

#[derive(Debug, Clone, Copy)]
pub struct Match {
    pub start: i64,
    pub end: i64,
    pub selection: Selection,
    pub row: RowKind,
}

/// Every op, NVTX range and API call whose name matches `query`, by start time. An exact
/// name (a kernel table's click) looks among ranges and calls only when no op has it.
pub fn find(trace: &Trace, query: &str, mode: Mode) -> Result<Vec<Match>, String> {
    if query.is_empty() {
        return Ok(Vec::new());
    }
    let regex = match mode {
        Mode::Regex => Some(regex::Regex::new(query).map_err(|e| e.to_string())?),
        _ => None,
    };
    let needle = query.to_lowercase();
    let matching: Vec<bool> = (0..trace.strings.len() as u32)
        .into_par_iter()
        .map(|id| {
            let name = trace.strings.get(id);
            match mode {
                Mode::Substring => name.to_lowercase().contains(&needle),
                Mode::Regex => regex.as_ref().is_some_and(|r| r.is_match(&name)),
                Mode::Exact => name == query,
            }
        })
        .collect();
    let hit = |id: u32| matching.get(id as usize).copied().unwrap_or(false);
    let mut matches: Vec<Match> = trace
        .devices
        .par_iter()
        .enumerate()
        .flat_map_iter(|(d, device)| {
            device
                .streams
                .iter()
                .enumerate()
                .flat_map(move |(s, stream)| {
                    let ops = &stream.ops;
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
                        })
                })
        })
        .collect();
    if mode != Mode::Exact || matches.is_empty() {
        let ranges: Vec<Match> = trace
            .threads
            .par_iter()
            .enumerate()
            .flat_map_iter(|(t, thread)| {
                let nvtx = &thread.nvtx;
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
                    })
            })
            .collect();
        matches.extend(ranges);
        let calls: Vec<Match> = trace
            .threads
            .par_iter()
            .enumerate()
            .flat_map_iter(|(t, thread)| {
                let api = &thread.api;
                (0..api.len())
                    .filter(move |&c| hit(api.name[c]))
                    .map(move |c| Match {
                        start: api.start[c],
                        end: api.end[c],
                        selection: Selection::Call { thread: t, call: c },
                        row: RowKind::Api { thread: t },
                    })
            })
            .collect();
        matches.extend(calls);
    }
    matches.par_sort_by_key(|m| (m.start, m.end));
    Ok(matches)
}

/// The matches of one row, by start.
pub struct RowMatches {
    pub row: RowKind,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    pub longest: i64,
}

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
}

impl Search {
    /// Runs the query unless it already ran.
    pub fn run(&mut self, trace: &Trace) {
        let mode = self.mode;
        let key = (self.query.clone(), mode);
        if self.searched.as_ref() == Some(&key) {
            return;
        }
        self.searched = Some(key);
        self.current = None;
        match find(trace, &self.query, mode) {
            Ok(matches) => {
                self.error = None;
                self.set_matches(matches);
            }
            Err(e) => {
                self.error = Some(e);
                self.set_matches(Vec::new());
            }
        }
    }

    fn set_matches(&mut self, matches: Vec<Match>) {
        let mut by_row: Vec<RowMatches> = Vec::new();
        for m in &matches {
            let row = match by_row.iter_mut().position(|r| r.row == m.row) {
                Some(i) => &mut by_row[i],
                None => {
                    by_row.push(RowMatches {
                        row: m.row,
                        starts: Vec::new(),
                        ends: Vec::new(),
                        longest: 0,
                    });
                    by_row.last_mut().unwrap()
                }
            };
            row.starts.push(m.start);
            row.ends.push(m.end);
            row.longest = row.longest.max(m.end - m.start);
        }
        self.by_row = by_row;
        self.matches = matches;
    }

    /// Searches for `query` in `mode` (a table click) and opens the bar.
    pub fn set(&mut self, trace: &Trace, query: &str, mode: Mode) {
        self.open = true;
        self.query = query.to_string();
        self.mode = mode;
        self.run(trace);
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
