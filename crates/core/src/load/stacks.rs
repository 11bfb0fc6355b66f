//! Call stacks: CPU samples (`COMPOSITE_EVENTS`, their stacks in `SAMPLING_CALLCHAINS`) and
//! the backtraces of OS runtime calls (`OSRT_API.callchainId` → `OSRT_CALLCHAINS`). nsys
//! records both by default when it launches the program, a row per frame: 10 minutes of
//! samples on 8 threads are ~150 M rows. So they are read like the big tables, in parallel
//! chunks (the OS runtime backtraces with the load, the samples after it: see
//! `deferred_stacks`), each chunk building the stacks it holds into a little tree of its own; the merge
//! adds only each chunk's distinct stacks to the trace's tree, and a chain cut by a chunk's
//! edge is joined there. Frames stay as nsys wrote them, innermost first; a hole in a
//! chain's `stackDepth`s or a chain with no frames is counted in the load report.

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use super::LoadError;
use super::scan::{ScanContext, Skips, Span, TablePlan, int, scan_range};
use super::small_tables::IdMap;
use crate::trace::{CallStacks, CpuSamples, NONE, SampledThread, StacksBuilder, StrId, Trace};

pub const SAMPLES: &str = "COMPOSITE_EVENTS";
pub const SAMPLING_CALLCHAINS: &str = "SAMPLING_CALLCHAINS";
pub const OSRT_CALLCHAINS: &str = "OSRT_CALLCHAINS";

const NO_FRAMES: &str = "callchain id with no frames";
const DEPTH_HOLE: &str = "stackDepth not contiguous (frames kept as they are)";
const OUT_OF_ORDER: &str = "callchain rows out of (id, stackDepth) order (kept first seen)";
const NO_THREAD: &str = "sample with no thread (NULL globalTid)";
const BAD_TIME: &str = "NULL start";

/// The columns each table's reader reads.
pub fn columns(table: &str) -> &'static [&'static str] {
    match table {
        SAMPLES => &["id", "start", "threadState", "globalTid"],
        _ => &["id", "stackDepth", "symbol", "module", "unresolved"],
    }
}

/// A frame as read: (symbol, module, unresolved).
type RawFrame = (StrId, StrId, bool);

/// A chain whose frames may go on in the next chunk (or began in the one before).
#[derive(Default)]
pub struct Fragment {
    id: i64,
    /// The first frame's `stackDepth`.
    first_depth: i64,
    frames: Vec<RawFrame>,
}

/// One chunk of a callchain table: its whole chains built into a tree of its own.
pub struct ChainChunk {
    pub table: &'static str,
    pub rows: u64,
    pub skips: Skips,
    local: StacksBuilder,
    /// (chain id, node in `local`), in id order.
    chains: Vec<(i64, u32)>,
    /// The chain the chunk begins in the middle of, if any, and the one it ends with.
    head: Option<Fragment>,
    tail: Option<Fragment>,
    /// Its first and last rows' (id, stackDepth), and whether its rows came in that order.
    first_key: Option<(i64, i64)>,
    last_key: Option<(i64, i64)>,
    in_order: bool,
}

pub fn read_chains(
    ctx: &ScanContext,
    conn: &rusqlite::Connection,
    plan: &TablePlan,
    ids: &IdMap,
    span: Span,
) -> Result<ChainChunk, LoadError> {
    let mut chunk = ChainChunk {
        table: plan.table,
        rows: 0,
        skips: Skips::default(),
        local: StacksBuilder::default(),
        chains: Vec::new(),
        head: None,
        tail: None,
        first_key: None,
        last_key: None,
        in_order: true,
    };
    let mut current: Option<Fragment> = None;
    let mut first = true;
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let (Some(id), Some(depth)) = (int(r, 0), int(r, 1)) else {
            return Ok(());
        };
        // Rows out of (id, stackDepth) order scatter a chain: the table is then read again,
        // sorted (see `StackMerger::read_sorted`).
        if chunk.last_key.is_some_and(|k| k >= (id, depth)) {
            chunk.in_order = false;
        }
        chunk.first_key.get_or_insert((id, depth));
        chunk.last_key = Some((id, depth));
        let frame = (
            ids.get(int(r, 2)),
            ids.get(int(r, 3)),
            int(r, 4).is_some_and(|u| u != 0),
        );
        match &mut current {
            Some(c) if c.id == id => {
                let expected = c.first_depth + c.frames.len() as i64;
                if depth != expected {
                    chunk.skips.add(plan.table, DEPTH_HOLE);
                }
                c.frames.push(frame);
            }
            _ => {
                if let Some(done) = current.take() {
                    chunk.finish(done, first);
                    first = false;
                }
                current = Some(Fragment {
                    id,
                    first_depth: depth,
                    frames: vec![frame],
                });
            }
        }
        Ok(())
    })?;
    // The last chain may go on in the next chunk: the merge decides.
    if let Some(last) = current {
        if first && last.first_depth != 0 {
            chunk.head = Some(last);
        } else {
            chunk.tail = Some(last);
        }
    }
    Ok(chunk)
}

impl ChainChunk {
    /// A chain read whole within the chunk (`first`: the chunk's first, which may have begun
    /// in the chunk before).
    fn finish(&mut self, f: Fragment, first: bool) {
        if first && f.first_depth != 0 {
            self.head = Some(f);
            return;
        }
        if f.first_depth != 0 {
            self.skips.add(self.table, DEPTH_HOLE);
        }
        let frames: Vec<u32> = f
            .frames
            .iter()
            .map(|&(s, m, u)| self.local.frame(s, m, u))
            .collect();
        let node = self.local.stack(&frames);
        self.chains.push((f.id, node));
    }
}

/// One chunk of `COMPOSITE_EVENTS`.
#[derive(Default)]
pub struct SampleChunk {
    pub rows: u64,
    pub skips: Skips,
    /// (globalTid, time, sample id, thread state)
    samples: Vec<(i64, i64, i64, u8)>,
}

pub fn read_samples(
    ctx: &ScanContext,
    conn: &rusqlite::Connection,
    plan: &TablePlan,
    span: Span,
) -> Result<SampleChunk, LoadError> {
    let mut chunk = SampleChunk::default();
    chunk.rows = scan_range(ctx, conn, plan, span, |r| {
        let Some(time) = int(r, 1) else {
            chunk.skips.add(SAMPLES, BAD_TIME);
            return Ok(());
        };
        let Some(tid) = int(r, 3) else {
            chunk.skips.add(SAMPLES, NO_THREAD);
            return Ok(());
        };
        let state = int(r, 2).map_or(0, |s| s.clamp(0, 255) as u8);
        chunk
            .samples
            .push((tid, time, int(r, 0).unwrap_or(-1), state));
        Ok(())
    })?;
    Ok(chunk)
}

/// The chains of one table, merged chunk by chunk in file order.
#[derive(Default)]
struct Chains {
    /// (chain id, node in the trace's tree), in the order read.
    nodes: Vec<(i64, u32)>,
    /// The previous chunk's last chain, perhaps unfinished.
    tail: Option<Fragment>,
    /// The last row's (id, stackDepth) so far, and whether any row came out of that order.
    last_key: Option<(i64, i64)>,
    out_of_order: bool,
}

/// The call stacks of a load, merged as their chunks arrive.
#[derive(Default)]
pub struct StackMerger {
    builder: StacksBuilder,
    osrt: Chains,
    sampling: Chains,
    samples: Vec<SampleChunk>,
    skips: Skips,
}

impl StackMerger {
    pub fn add_chains(&mut self, mut chunk: ChainChunk) {
        self.skips.merge(std::mem::take(&mut chunk.skips));
        let chains = if chunk.table == OSRT_CALLCHAINS {
            &mut self.osrt
        } else {
            &mut self.sampling
        };
        if !chunk.in_order
            || matches!((chains.last_key, chunk.first_key), (Some(a), Some(b)) if a >= b)
        {
            chains.out_of_order = true;
        }
        chains.last_key = chunk.last_key.or(chains.last_key);
        let builder = &mut self.builder;
        let mut add = |f: Fragment, skips: &mut Skips| {
            if f.first_depth != 0 {
                skips.add(chunk.table, DEPTH_HOLE);
            }
            let frames: Vec<u32> = f
                .frames
                .iter()
                .map(|&(s, m, u)| builder.frame(s, m, u))
                .collect();
            chains.nodes.push((f.id, builder.stack(&frames)));
        };
        // The chain cut by the chunks' edge, joined; else each on its own.
        match (chains.tail.take(), chunk.head.take()) {
            (Some(mut tail), Some(head)) if tail.id == head.id => {
                tail.frames.extend(head.frames);
                add(tail, &mut self.skips);
            }
            (tail, head) => {
                tail.into_iter()
                    .chain(head)
                    .for_each(|f| add(f, &mut self.skips));
            }
        }
        // The chunk's own tree, node by node (a caller before its callees) into the trace's.
        let local = &chunk.local.stacks;
        let frames: Vec<u32> = (0..local.frame_symbol.len())
            .map(|f| {
                builder.frame(
                    local.frame_symbol[f],
                    local.frame_module[f],
                    local.frame_unresolved[f],
                )
            })
            .collect();
        let mut nodes: Vec<u32> = Vec::with_capacity(local.node_frame.len());
        for n in 0..local.node_frame.len() {
            let p = local.node_parent[n];
            let parent = if p == NONE { NONE } else { nodes[p as usize] };
            nodes.push(builder.child(parent, frames[local.node_frame[n] as usize]));
        }
        chains
            .nodes
            .extend(chunk.chains.iter().map(|&(id, n)| (id, nodes[n as usize])));
        chains.tail = chunk.tail;
    }

    pub fn add_samples(&mut self, mut chunk: SampleChunk) {
        self.skips.merge(std::mem::take(&mut chunk.skips));
        self.samples.push(chunk);
    }

    /// The chain left unfinished by the last chunk of each table, ended.
    fn end_chains(&mut self) {
        for chains in [&mut self.osrt, &mut self.sampling] {
            if let Some(last) = chains.tail.take() {
                let frames: Vec<u32> = last
                    .frames
                    .iter()
                    .map(|&(s, m, u)| self.builder.frame(s, m, u))
                    .collect();
                chains.nodes.push((last.id, self.builder.stack(&frames)));
            }
        }
    }

    /// Whether `table`'s rows came out of (id, stackDepth) order (an export need not keep
    /// it): its chains must then be read again with [`StackMerger::read_sorted`].
    pub fn out_of_order(&self, table: &str) -> bool {
        if table == OSRT_CALLCHAINS {
            self.osrt.out_of_order
        } else {
            self.sampling.out_of_order
        }
    }

    /// `table`'s chains read again through SQL in (id, stackDepth) order, in place of those
    /// its scan built (rare: an export whose rows are out of order; SQLite sorts them in
    /// temporary storage, not in memory).
    pub fn read_sorted(
        &mut self,
        path: &std::path::Path,
        conn: &rusqlite::Connection,
        table: &'static str,
        ids: &IdMap,
    ) -> Result<(), LoadError> {
        let chains = if table == OSRT_CALLCHAINS {
            &mut self.osrt
        } else {
            &mut self.sampling
        };
        let fail = |e: rusqlite::Error| super::sniff::sqlite_error(path, table, e);
        let mut query = conn
            .prepare(&format!(
                "SELECT id, stackDepth, symbol, module, unresolved FROM {table} \
                 WHERE id IS NOT NULL AND stackDepth IS NOT NULL ORDER BY id, stackDepth"
            ))
            .map_err(fail)?;
        let mut rows = query.query([]).map_err(fail)?;
        let builder = &mut self.builder;
        let skips = &mut self.skips;
        let mut nodes: Vec<(i64, u32)> = Vec::new();
        let mut current: Option<Fragment> = None;
        let mut end = |f: Fragment, nodes: &mut Vec<(i64, u32)>, skips: &mut Skips| {
            if f.first_depth != 0 {
                skips.add(table, DEPTH_HOLE);
            }
            let frames: Vec<u32> = f
                .frames
                .iter()
                .map(|&(s, m, u)| builder.frame(s, m, u))
                .collect();
            nodes.push((f.id, builder.stack(&frames)));
        };
        while let Some(r) = rows.next().map_err(fail)? {
            let get = |k: usize| r.get::<_, Option<i64>>(k).ok().flatten();
            let (Some(id), Some(depth)) = (get(0), get(1)) else {
                continue;
            };
            let frame = (
                ids.get(get(2)),
                ids.get(get(3)),
                get(4).is_some_and(|u| u != 0),
            );
            match &mut current {
                Some(c) if c.id == id => {
                    if depth != c.first_depth + c.frames.len() as i64 {
                        skips.add(table, DEPTH_HOLE);
                    }
                    c.frames.push(frame);
                }
                _ => {
                    if let Some(done) = current.take() {
                        end(done, &mut nodes, skips);
                    }
                    current = Some(Fragment {
                        id,
                        first_depth: depth,
                        frames: vec![frame],
                    });
                }
            }
        }
        if let Some(done) = current.take() {
            end(done, &mut nodes, skips);
        }
        chains.nodes = nodes;
        chains.tail = None;
        Ok(())
    }

    /// The OS runtime calls' chain ids made nodes of the tree (read with the rest of the
    /// trace; the samples come after, into the same tree: see [`StackMerger::finish`]).
    pub fn finish_osrt(&mut self, trace: &mut Trace, skips: &mut Skips) {
        self.end_chains();
        let osrt = ChainIndex::new(std::mem::take(&mut self.osrt.nodes), &mut self.skips);
        let mut missing = 0u64;
        for t in &mut trace.threads {
            for s in &mut t.osrt.stack {
                if *s != NONE {
                    *s = osrt.get(*s as i64).unwrap_or_else(|| {
                        missing += 1;
                        NONE
                    });
                }
            }
            if t.osrt.stack.iter().all(|&s| s == NONE) {
                t.osrt.stack = Vec::new();
            }
        }
        for _ in 0..missing {
            self.skips.add(OSRT_CALLCHAINS, NO_FRAMES);
        }
        skips.merge(std::mem::take(&mut self.skips));
    }

    /// Every stack and sample: each sample given its stack and grouped by thread (named
    /// from `thread_names`, global id → name).
    pub fn finish(mut self, thread_names: &HashMap<i64, String>) -> (CallStacks, Skips) {
        self.end_chains();
        let sampling = ChainIndex::new(std::mem::take(&mut self.sampling.nodes), &mut self.skips);
        let samples = group_samples(thread_names, self.samples, &sampling);
        let stacks = CallStacks {
            stacks: self.builder.stacks,
            samples,
            read: Default::default(),
        };
        (stacks, self.skips)
    }
}

/// Chain id → node: a vector when ids are dense (nsys numbers them from 1), else a sorted
/// list searched by halving.
enum ChainIndex {
    Dense { first: i64, nodes: Vec<u32> },
    Sorted(Vec<(i64, u32)>),
}

impl ChainIndex {
    fn new(mut chains: Vec<(i64, u32)>, skips: &mut Skips) -> ChainIndex {
        if !chains.is_sorted_by_key(|c| c.0) {
            chains.par_sort_by_key(|c| c.0);
        }
        let before = chains.len();
        chains.dedup_by_key(|c| c.0);
        for _ in chains.len()..before {
            skips.add(SAMPLING_CALLCHAINS, OUT_OF_ORDER);
        }
        let (Some(first), Some(last)) = (chains.first(), chains.last()) else {
            return ChainIndex::Sorted(chains);
        };
        let span = last.0.checked_sub(first.0).and_then(|d| d.checked_add(1));
        match span {
            Some(n) if n as u64 <= 2 * chains.len() as u64 + 1024 => {
                let first = first.0;
                let mut nodes = vec![NONE; n as usize];
                for &(id, node) in &chains {
                    nodes[(id - first) as usize] = node;
                }
                ChainIndex::Dense { first, nodes }
            }
            _ => ChainIndex::Sorted(chains),
        }
    }

    fn get(&self, id: i64) -> Option<u32> {
        match self {
            ChainIndex::Dense { first, nodes } => id
                .checked_sub(*first)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| nodes.get(i))
                .copied()
                .filter(|&n| n != NONE),
            ChainIndex::Sorted(v) => v.binary_search_by_key(&id, |c| c.0).ok().map(|i| v[i].1),
        }
    }
}

/// Samples grouped by thread (threads by global id), each thread's by time: counted per
/// thread, then placed, in file order (already by time, as nsys writes them; sorted where
/// not).
fn group_samples(
    thread_names: &HashMap<i64, String>,
    chunks: Vec<SampleChunk>,
    chains: &ChainIndex,
) -> CpuSamples {
    let mut counts: HashMap<i64, usize> = HashMap::default();
    for c in &chunks {
        for s in &c.samples {
            *counts.entry(s.0).or_default() += 1;
        }
    }
    let mut tids: Vec<i64> = counts.keys().copied().collect();
    tids.sort_unstable();
    let total: usize = counts.values().sum();
    let mut threads = Vec::with_capacity(tids.len());
    let mut next: HashMap<i64, usize> = HashMap::default();
    let mut first = 0;
    for &tid in &tids {
        let count = counts[&tid];
        let name = thread_names.get(&tid).cloned().unwrap_or_default();
        threads.push(SampledThread {
            global_tid: tid,
            name,
            first,
            count,
        });
        next.insert(tid, first);
        first += count;
    }
    let mut out = CpuSamples {
        threads,
        time: vec![0; total],
        node: vec![NONE; total],
        state: vec![0; total],
    };
    for c in chunks {
        for (tid, time, id, state) in c.samples {
            let at = next.get_mut(&tid).expect("counted");
            out.time[*at] = time;
            out.node[*at] = chains.get(id).unwrap_or(NONE);
            out.state[*at] = state;
            *at += 1;
        }
    }
    for t in &out.threads {
        let range = t.first..t.first + t.count;
        if !out.time[range.clone()].is_sorted() {
            let mut order: Vec<usize> = range.clone().collect();
            order.sort_by_key(|&i| out.time[i]);
            let time: Vec<i64> = order.iter().map(|&i| out.time[i]).collect();
            let node: Vec<u32> = order.iter().map(|&i| out.node[i]).collect();
            let state: Vec<u8> = order.iter().map(|&i| out.state[i]).collect();
            out.time[range.clone()].copy_from_slice(&time);
            out.node[range.clone()].copy_from_slice(&node);
            out.state[range].copy_from_slice(&state);
        }
    }
    out
}
