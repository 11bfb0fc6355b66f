//! Merges the per-range chunks into the `Trace`: concatenates in file order, remaps
//! chunk-local ids, sorts by start, nests NVTX ranges, and links each GPU op to the API call
//! that launched it by (pid, correlationId) — correlationIds restart in every process.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;

use rayon::prelude::*;

use super::big_tables::{ApiChunk, GpuChunk, LOCAL_TEXT, NvtxChunk, OsrtChunk, StreamKey};
use super::error::LoadError;
use crate::trace::{
    Device, DeviceId, ExportInfo, GpuOps, MemInfo, Process, StrId, Stream, StringTable, Thread,
    Trace, global_tid_sort_key, pid_of_global_id, tid_of_global_id,
};

/// What the small tables gave.
pub struct Parts {
    pub info: ExportInfo,
    pub strings: StringTable,
    pub processes: Vec<Process>,
    pub thread_names: HashMap<i64, String>,
    pub gpu_names: HashMap<u32, String>,
    pub capture_window: Option<(i64, i64)>,
    /// The export itself: where kernels' launch configurations are read when shown.
    pub sources: Vec<std::path::PathBuf>,
}

/// The GPU tables merged and sorted: enough for a first timeline before the CPU side loads.
#[derive(Clone)]
pub struct GpuParts {
    streams: Vec<(StreamKey, GpuOps)>,
    mem_info: HashMap<u32, Vec<MemInfo>>,
}

pub fn build_gpu(gpu: GpuMerger) -> GpuParts {
    let GpuMerger {
        streams, mem_info, ..
    } = gpu;
    let mut streams: Vec<(StreamKey, GpuOps)> = streams.into_iter().collect();
    streams
        .par_iter_mut()
        .for_each(|(_, ops)| ops.sort_by_start());
    GpuParts { streams, mem_info }
}

/// A trace of the GPU side only (no threads, so no launch links): what the GUI shows while
/// the API calls and NVTX ranges are still loading.
pub fn gpu_only_trace(parts: &Parts, gpu: &GpuParts) -> Trace {
    let gpu = gpu.clone();
    let mut strings = parts.strings.clone();
    strings.freeze();
    Trace {
        info: parts.info.clone(),
        strings: strings.into(),
        devices: devices_of(gpu.streams, gpu.mem_info, &parts.gpu_names),
        threads: Vec::new(),
        processes: parts.processes.clone(),
        sources: parts.sources.clone(),
        nvtx_domains: Vec::new(),
        capture_window: parts.capture_window,
        nccl_payloads: Default::default(),
        call_stacks: Default::default(),
        memory_usage: Vec::new(),
        gpu_metrics: Vec::new(),
    }
}

/// The CPU side's tables merged into threads chunk by chunk as they are read, in file
/// order (see `load::read_merging`).
pub struct ThreadMerger<'a> {
    threads: BTreeMap<(u32, u32, i64), Thread>,
    strings: StringTable,
    thread_names: &'a HashMap<i64, String>,
    domains: BTreeMap<u32, String>,
    payloads: crate::trace::PayloadStats,
    /// The API and NVTX tables' rows not merged yet (about: the scans' plans' counts).
    api_rows_left: u64,
    nvtx_rows_left: u64,
}

/// Room for this chunk's `n` and as many again for the rest of the table (`left` rows) at
/// this chunk's rate (`n` of its `rows`), with a tenth more: arrays growing chunk by chunk
/// left every smaller copy free in the heap, held by the window after the load
/// (docs/benchmarks.md, "Figures behind the code").
fn room_for_rest(n: usize, rows: u64, left: u64) -> usize {
    let rows = rows.max(1);
    ((n as u64).saturating_mul(left) / rows * 11 / 10 + n as u64) as usize
}

impl<'a> ThreadMerger<'a> {
    /// `strings`: the small tables' (a chunk's own NVTX texts are added to it);
    /// `api_rows`, `nvtx_rows`: about how many rows the API and NVTX tables have.
    pub fn new(
        strings: StringTable,
        thread_names: &'a HashMap<i64, String>,
        api_rows: u64,
        nvtx_rows: u64,
    ) -> Self {
        Self {
            threads: BTreeMap::new(),
            strings,
            thread_names,
            domains: BTreeMap::new(),
            payloads: Default::default(),
            api_rows_left: api_rows,
            nvtx_rows_left: nvtx_rows,
        }
    }

    fn thread(&mut self, gtid: i64) -> &mut Thread {
        thread_entry(&mut self.threads, gtid, self.thread_names)
    }

    /// Adds the API table's next chunk (chunks in file order, as for each `add_`).
    pub fn add_api(&mut self, chunk: ApiChunk) {
        self.api_rows_left = self.api_rows_left.saturating_sub(chunk.rows);
        let left = self.api_rows_left;
        for (gtid, calls) in chunk.threads.groups {
            let t = &mut self.thread(gtid).api;
            if t.len() + calls.len() > t.start.capacity() {
                reserve_api(t, room_for_rest(calls.len(), chunk.rows, left));
            }
            t.start.extend(calls.start);
            t.end.extend(calls.end);
            t.name.extend(calls.name);
            t.correlation_id.extend(calls.correlation_id);
            t.class.extend(calls.class);
        }
    }

    pub fn add_osrt(&mut self, chunk: OsrtChunk) {
        for (gtid, calls) in chunk.threads.groups {
            let t = &mut self.thread(gtid).osrt;
            t.start.extend(calls.start);
            t.end.extend(calls.end);
            t.name.extend(calls.name);
            t.return_value.extend(calls.return_value);
            t.stack.extend(calls.stack);
        }
    }

    pub fn add_nvtx(&mut self, chunk: NvtxChunk) {
        crate::profile_scope!("merge: NVTX chunk");
        self.nvtx_rows_left = self.nvtx_rows_left.saturating_sub(chunk.rows);
        let left = self.nvtx_rows_left;
        // Room for the texts of the rest of the table too: a string table growing chunk by
        // chunk rehashed all it held each time it doubled.
        let (more, bytes) = chunk.texts.size();
        self.strings.reserve(
            room_for_rest(more, chunk.rows, left),
            room_for_rest(bytes, chunk.rows, left),
        );
        let remap = self.strings.absorb(&chunk.texts);
        // A chunk's text ids as the table's: its own texts were absorbed above.
        let resolve = |id: StrId| {
            if id & LOCAL_TEXT != 0 {
                remap[(id & !LOCAL_TEXT) as usize]
            } else {
                id
            }
        };
        for (gtid, ranges) in chunk.ranges.groups {
            let t = &mut self.thread(gtid).nvtx;
            if t.len() + ranges.len() > t.start.capacity() {
                reserve_nvtx(t, room_for_rest(ranges.len(), chunk.rows, left));
            }
            t.start.extend(ranges.start);
            t.end.extend(ranges.end);
            t.text.extend(ranges.text.into_iter().map(resolve));
            t.kind.extend(ranges.kind);
            t.extend_colors(&ranges.color, &ranges.palette);
        }
        for (gtid, marks) in chunk.marks {
            let t = &mut self.thread(gtid).marks;
            t.time.extend(marks.time);
            t.text.extend(marks.text.into_iter().map(resolve));
        }
        self.payloads.add(chunk.payloads);
        for (gtid, mut calls) in chunk.nccl.groups {
            calls.name.iter_mut().for_each(|id| *id = resolve(*id));
            let t = &mut self.thread(gtid).nccl;
            if t.len() + calls.len() > t.start.capacity() {
                t.reserve_exact(room_for_rest(calls.len(), chunk.rows, left));
            }
            t.append(calls);
        }
        self.domains.extend(chunk.domains);
    }

    /// The threads (sorted by pid and tid), NVTX domains, NCCL payloads' tally and the
    /// string table.
    pub fn finish(mut self, scheduling: Vec<(i64, crate::trace::Scheduling)>) -> MergedThreads {
        for (gtid, sched) in scheduling {
            self.thread(gtid).scheduling = sched;
        }
        MergedThreads {
            threads: self.threads.into_values().collect(),
            nvtx_domains: self.domains.into_iter().collect(),
            payloads: self.payloads,
            strings: self.strings,
        }
    }
}

/// What [`ThreadMerger::finish`] gives.
pub struct MergedThreads {
    threads: Vec<Thread>,
    nvtx_domains: Vec<(u32, String)>,
    payloads: crate::trace::PayloadStats,
    strings: StringTable,
}

pub fn build_trace(
    parts: Parts,
    gpu: GpuParts,
    merged: MergedThreads,
    cancel: &AtomicBool,
    report: &mut super::LoadReport,
) -> Result<Trace, LoadError> {
    let t = std::time::Instant::now();
    let MergedThreads {
        mut threads,
        nvtx_domains,
        payloads: nccl_payloads,
        mut strings,
    } = merged;
    let GpuParts {
        mut streams,
        mem_info,
    } = gpu;
    threads.par_iter_mut().for_each(|t| {
        t.api.sort_by_start();
        t.osrt.sort_by_start();
        t.index_calls();
        t.nvtx.sort_and_nest();
        t.nccl.sort();
        sort_marks(t);
    });
    check_cancel(cancel)?;
    report.phase_done("  sort and nest", t);
    let t = std::time::Instant::now();
    link_launches(&mut streams, &threads);
    strings.freeze();
    report.phase_done("  link launches", t);

    Ok(Trace {
        info: parts.info,
        strings: strings.into(),
        devices: devices_of(streams, mem_info, &parts.gpu_names),
        threads,
        processes: parts.processes,
        sources: parts.sources,
        nvtx_domains,
        capture_window: parts.capture_window,
        nccl_payloads,
        call_stacks: Default::default(),
        memory_usage: Vec::new(),
        gpu_metrics: Vec::new(),
    })
}

/// Groups streams (sorted by device) into devices.
fn devices_of(
    streams: Vec<(StreamKey, GpuOps)>,
    mut mem_info: HashMap<u32, Vec<MemInfo>>,
    gpu_names: &HashMap<u32, String>,
) -> Vec<Device> {
    let mut devices: Vec<Device> = Vec::new();
    for ((device_id, pid, stream_id), ops) in streams {
        if devices.last().map(|d| d.id) != Some(DeviceId(device_id)) {
            devices.push(Device {
                id: DeviceId(device_id),
                name: gpu_names
                    .get(&device_id)
                    .cloned()
                    .unwrap_or_else(|| format!("GPU {device_id}")),
                streams: Vec::new(),
                mem_info: mem_info.remove(&device_id).unwrap_or_default(),
                key: None,
                source: 0,
                graph_nodes: Vec::new(),
            });
        }
        devices
            .last_mut()
            .unwrap()
            .streams
            .push(Stream::new(stream_id, pid, ops));
    }
    devices
}

fn check_cancel(cancel: &AtomicBool) -> Result<(), LoadError> {
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(LoadError::Cancelled);
    }
    Ok(())
}

/// The GPU tables merged into streams chunk by chunk as they are read, in file order (see
/// `load::read_merging`).
pub struct GpuMerger {
    streams: BTreeMap<StreamKey, GpuOps>,
    /// Memory ops' details per device; an op's `detail` indexes its device's list.
    mem_info: HashMap<u32, Vec<MemInfo>>,
    /// The GPU tables' rows not merged yet (about: the scans' plans' counts).
    rows_left: u64,
}

impl GpuMerger {
    /// `rows`: about how many rows the GPU tables have.
    pub fn new(rows: u64) -> Self {
        Self {
            streams: BTreeMap::new(),
            mem_info: HashMap::new(),
            rows_left: rows,
        }
    }

    /// Adds the GPU tables' next chunk (chunks in file order).
    pub fn add(&mut self, chunk: GpuChunk) {
        crate::profile_scope!("merge: GPU chunk");
        self.rows_left = self.rows_left.saturating_sub(chunk.rows);
        let mut mem_offset: HashMap<u32, u32> = HashMap::new();
        for (device, infos) in chunk.mem_info {
            let all = self.mem_info.entry(device).or_default();
            mem_offset.insert(device, all.len() as u32);
            all.extend(infos);
        }
        for (key, mut ops) in chunk.streams.groups {
            let offset = mem_offset.get(&key.0).copied().unwrap_or(0);
            // Kernels keep their rowid; memory ops index the device's merged infos.
            for (detail, kind) in ops.detail.iter_mut().zip(&ops.kind) {
                if !kind.is_kernel() {
                    *detail += offset;
                }
            }
            let into = self.streams.entry(key).or_default();
            if into.len() + ops.len() > into.start.capacity() {
                reserve_ops(into, room_for_rest(ops.len(), chunk.rows, self.rows_left));
            }
            append_ops(into, ops);
        }
    }
}

fn append_ops(into: &mut GpuOps, from: GpuOps) {
    into.start.extend(from.start);
    into.end.extend(from.end);
    into.kind.extend(from.kind);
    into.name.extend(from.name);
    into.correlation_id.extend(from.correlation_id);
    into.launch_thread.extend(from.launch_thread);
    into.launch_call.extend(from.launch_call);
    into.detail.extend(from.detail);
}

fn reserve_api(calls: &mut crate::trace::ApiCalls, n: usize) {
    calls.start.reserve_exact(n);
    calls.end.reserve_exact(n);
    calls.name.reserve_exact(n);
    calls.correlation_id.reserve_exact(n);
    calls.class.reserve_exact(n);
}

fn reserve_nvtx(ranges: &mut crate::trace::NvtxRanges, n: usize) {
    ranges.start.reserve_exact(n);
    ranges.end.reserve_exact(n);
    ranges.text.reserve_exact(n);
    ranges.kind.reserve_exact(n);
    ranges.color.reserve_exact(n);
}

fn reserve_ops(ops: &mut GpuOps, n: usize) {
    ops.start.reserve_exact(n);
    ops.end.reserve_exact(n);
    ops.kind.reserve_exact(n);
    ops.name.reserve_exact(n);
    ops.correlation_id.reserve_exact(n);
    ops.launch_thread.reserve_exact(n);
    ops.launch_call.reserve_exact(n);
    ops.detail.reserve_exact(n);
}

fn thread_entry<'a>(
    threads: &'a mut BTreeMap<(u32, u32, i64), Thread>,
    gtid: i64,
    thread_names: &HashMap<i64, String>,
) -> &'a mut Thread {
    threads
        .entry(global_tid_sort_key(gtid))
        .or_insert_with(|| Thread {
            global_tid: gtid,
            pid: pid_of_global_id(gtid),
            tid: tid_of_global_id(gtid),
            name: thread_names.get(&gtid).cloned().unwrap_or_default(),
            ..Default::default()
        })
}

fn sort_marks(thread: &mut Thread) {
    let marks = &mut thread.marks;
    if marks.time.is_sorted() {
        return;
    }
    let mut pairs: Vec<(i64, StrId)> = marks
        .time
        .iter()
        .copied()
        .zip(marks.text.iter().copied())
        .collect();
    pairs.sort_by_key(|p| p.0);
    (marks.time, marks.text) = pairs.into_iter().unzip();
}

/// Sets `launch_thread`/`launch_call` of every GPU op whose (pid, correlationId) matches an
/// API call: per process, a table indexed by correlationId (CUPTI hands them out one per
/// call, so they are dense), or a sorted list where they are not; no per-row SQL, no hash
/// of millions of entries, no sort of every call.
fn link_launches(streams: &mut [(StreamKey, GpuOps)], threads: &[Thread]) {
    let mut of_pid: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (ti, t) in threads.iter().enumerate() {
        if !t.api.is_empty() {
            of_pid.entry(t.pid).or_default().push(ti);
        }
    }
    let tables: HashMap<u32, CallsById> = of_pid
        .into_iter()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(pid, members)| (pid, CallsById::new(threads, &members)))
        .collect();
    streams.par_iter_mut().for_each(|((_, pid, _), ops)| {
        let Some(table) = tables.get(pid) else {
            return;
        };
        for i in 0..ops.len() {
            let corr = ops.correlation_id[i];
            if corr == 0 {
                continue;
            }
            if let Some((thread, call)) = table.get(corr) {
                ops.launch_thread[i] = thread;
                ops.launch_call[i] = call;
            }
        }
    });
}

/// One process's API calls by correlationId: (thread index, call index). Where two calls
/// share an id, the first thread's first call.
enum CallsById {
    /// Indexed by id - `first`; `UNLINKED` where no call has the id.
    Dense { first: u32, calls: Vec<(u32, u32)> },
    /// (id, thread, call), sorted.
    Sorted(Vec<(u32, u32, u32)>),
}

const UNLINKED: (u32, u32) = (u32::MAX, u32::MAX);

impl CallsById {
    /// `members`: the process's threads (indices into `threads`, ascending).
    fn new(threads: &[Thread], members: &[usize]) -> Self {
        let ids = || {
            members.iter().flat_map(|&ti| {
                let ids = &threads[ti].api.correlation_id;
                (0..ids.len())
                    .filter(move |&ci| ids[ci] != 0)
                    .map(move |ci| (ids[ci], ti as u32, ci as u32))
            })
        };
        let (mut count, mut low, mut high) = (0usize, u32::MAX, 0u32);
        for (id, _, _) in ids() {
            count += 1;
            low = low.min(id);
            high = high.max(id);
        }
        if count == 0 {
            return Self::Sorted(Vec::new());
        }
        let span = (high - low) as usize + 1;
        if span <= 4 * count + 1024 {
            let mut calls = vec![UNLINKED; span];
            for (id, thread, call) in ids() {
                let slot = &mut calls[(id - low) as usize];
                if *slot == UNLINKED {
                    *slot = (thread, call);
                }
            }
            return Self::Dense { first: low, calls };
        }
        let mut keys: Vec<(u32, u32, u32)> = ids().collect();
        keys.sort_unstable();
        Self::Sorted(keys)
    }

    fn get(&self, id: u32) -> Option<(u32, u32)> {
        match self {
            Self::Dense { first, calls } => calls
                .get(id.checked_sub(*first)? as usize)
                .copied()
                .filter(|&c| c != UNLINKED),
            Self::Sorted(keys) => {
                let at = keys.partition_point(|k| k.0 < id);
                keys.get(at).filter(|k| k.0 == id).map(|k| (k.1, k.2))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_with_ids(pid: u32, ids: &[u32]) -> Thread {
        let mut t = Thread {
            pid,
            ..Default::default()
        };
        t.api.correlation_id = ids.to_vec();
        t.api.start = (0..ids.len() as i64).collect();
        t
    }

    /// Every call's (thread, call) by id the slow way: the first of equal ids.
    fn brute_force(threads: &[Thread], members: &[usize], id: u32) -> Option<(u32, u32)> {
        members.iter().find_map(|&ti| {
            let ci = threads[ti]
                .api
                .correlation_id
                .iter()
                .position(|&c| c == id)?;
            Some((ti as u32, ci as u32))
        })
    }

    #[test]
    fn calls_are_found_by_id_dense_or_sparse_first_of_equal_ids() {
        let dense = [
            thread_with_ids(7, &[5, 6, 0, 8, 9]),
            thread_with_ids(7, &[7, 10, 6]),
        ];
        let sparse = [
            thread_with_ids(9, &[3, 4_000_000, 0]),
            thread_with_ids(9, &[2_000_000_000, 3]),
        ];
        for threads in [&dense[..], &sparse[..]] {
            let table = CallsById::new(threads, &[0, 1]);
            let kind = matches!(table, CallsById::Dense { .. });
            assert_eq!(kind, threads[0].pid == 7, "dense ids index a table");
            for id in [
                0,
                1,
                2,
                3,
                5,
                6,
                7,
                8,
                9,
                10,
                11,
                4_000_000,
                2_000_000_000,
                u32::MAX,
            ] {
                let expected = if id == 0 {
                    None
                } else {
                    brute_force(threads, &[0, 1], id)
                };
                assert_eq!(table.get(id), expected, "id {id}");
            }
        }
    }
}
