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

pub fn build_gpu(gpu: Vec<GpuChunk>) -> GpuParts {
    let (mut streams, mem_info) = merge_gpu(gpu);
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
        strings,
        devices: devices_of(gpu.streams, gpu.mem_info, &parts.gpu_names),
        threads: Vec::new(),
        processes: parts.processes.clone(),
        sources: parts.sources.clone(),
        nvtx_domains: Vec::new(),
        capture_window: parts.capture_window,
        nccl_payloads: Default::default(),
    }
}

/// What the CPU side's tables gave: per chunk of rows, and the threads' scheduling.
pub struct CpuChunks {
    pub api: Vec<ApiChunk>,
    pub nvtx: Vec<NvtxChunk>,
    pub osrt: Vec<OsrtChunk>,
    pub scheduling: Vec<(i64, crate::trace::Scheduling)>,
}

pub fn build_trace(
    parts: Parts,
    gpu: GpuParts,
    cpu: CpuChunks,
    cancel: &AtomicBool,
    report: &mut super::LoadReport,
) -> Result<Trace, LoadError> {
    let t = std::time::Instant::now();
    let mut strings = parts.strings;
    let GpuParts {
        mut streams,
        mem_info,
    } = gpu;
    let (mut threads, nvtx_domains, nccl_payloads) =
        merge_threads(cpu, &mut strings, &parts.thread_names);
    check_cancel(cancel)?;
    report.phase_done("  merge threads, strings", t);
    let t = std::time::Instant::now();

    threads.par_iter_mut().for_each(|t| {
        t.api.sort_by_start();
        t.osrt.sort_by_start();
        t.index_calls();
        t.nvtx.sort_and_nest();
        t.nccl.sort_by_start();
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
        strings,
        devices: devices_of(streams, mem_info, &parts.gpu_names),
        threads,
        processes: parts.processes,
        sources: parts.sources,
        nvtx_domains,
        capture_window: parts.capture_window,
        nccl_payloads,
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

type MergedGpu = (Vec<(StreamKey, GpuOps)>, HashMap<u32, Vec<MemInfo>>);

fn merge_gpu(chunks: Vec<GpuChunk>) -> MergedGpu {
    crate::profile_scope!("merge: GPU ops");
    let mut streams: BTreeMap<StreamKey, GpuOps> = BTreeMap::new();
    let mut mem_info: HashMap<u32, Vec<MemInfo>> = HashMap::new();
    let mut totals: HashMap<StreamKey, usize> = HashMap::new();
    for (key, ops) in chunks.iter().flat_map(|c| &c.streams.groups) {
        *totals.entry(*key).or_default() += ops.len();
    }
    for (key, n) in totals {
        reserve_ops(streams.entry(key).or_default(), n);
    }
    for chunk in chunks {
        let mut mem_offset: HashMap<u32, u32> = HashMap::new();
        for (device, infos) in chunk.mem_info {
            let all = mem_info.entry(device).or_default();
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
            append_ops(streams.entry(key).or_default(), ops);
        }
    }
    (streams.into_iter().collect(), mem_info)
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

fn merge_threads(
    cpu: CpuChunks,
    strings: &mut StringTable,
    thread_names: &HashMap<i64, String>,
) -> (Vec<Thread>, Vec<(u32, String)>, crate::trace::PayloadStats) {
    let CpuChunks {
        api,
        nvtx,
        osrt,
        scheduling,
    } = cpu;
    let mut threads: BTreeMap<(u32, u32, i64), Thread> = BTreeMap::new();
    // Reserve each thread's final size first: growing by doubling would hold two copies.
    let mut api_len: HashMap<i64, usize> = HashMap::new();
    for (gtid, calls) in api.iter().flat_map(|c| &c.threads.groups) {
        *api_len.entry(*gtid).or_default() += calls.len();
    }
    let mut nvtx_len: HashMap<i64, usize> = HashMap::new();
    for (gtid, ranges) in nvtx.iter().flat_map(|c| &c.ranges.groups) {
        *nvtx_len.entry(*gtid).or_default() += ranges.len();
    }
    for (gtid, n) in api_len {
        reserve_api(&mut thread_entry(&mut threads, gtid, thread_names).api, n);
    }
    for (gtid, n) in nvtx_len {
        reserve_nvtx(&mut thread_entry(&mut threads, gtid, thread_names).nvtx, n);
    }
    // The chunks' texts go into the table while the API calls are copied into their
    // threads: neither needs the other.
    let (remaps, ()) = rayon::join(
        || {
            crate::profile_scope!("merge: absorb texts");
            let (more, bytes) = nvtx
                .iter()
                .map(|c| c.texts.size())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            strings.reserve(more, bytes);
            nvtx.iter()
                .map(|c| strings.absorb(&c.texts))
                .collect::<Vec<Vec<StrId>>>()
        },
        || {
            crate::profile_scope!("merge: API calls");
            for chunk in api {
                for (gtid, calls) in chunk.threads.groups {
                    let t = &mut thread_entry(&mut threads, gtid, thread_names).api;
                    t.start.extend(calls.start);
                    t.end.extend(calls.end);
                    t.name.extend(calls.name);
                    t.correlation_id.extend(calls.correlation_id);
                    t.class.extend(calls.class);
                }
            }
        },
    );
    let mut domains: BTreeMap<u32, String> = BTreeMap::new();
    let mut payloads = crate::trace::PayloadStats::default();
    // A chunk's text ids as the table's: its own texts were absorbed into `strings`.
    let resolve_in = |c: usize, id: StrId| {
        if id & LOCAL_TEXT != 0 {
            remaps[c][(id & !LOCAL_TEXT) as usize]
        } else {
            id
        }
    };
    // Each thread's ranges, chunk by chunk in file order, are copied into it below.
    let mut ranges_of: HashMap<i64, Vec<(usize, crate::trace::NvtxRanges)>> = HashMap::new();
    let scope = crate::profile::scope("merge: NVTX chunks' marks, NCCL calls");
    for (c, chunk) in nvtx.into_iter().enumerate() {
        let resolve = |id: StrId| resolve_in(c, id);
        for (gtid, ranges) in chunk.ranges.groups {
            ranges_of.entry(gtid).or_default().push((c, ranges));
        }
        for (gtid, marks) in chunk.marks {
            let t = &mut thread_entry(&mut threads, gtid, thread_names).marks;
            t.time.extend(marks.time);
            t.text.extend(marks.text.into_iter().map(resolve));
        }
        payloads.add(chunk.payloads);
        for (gtid, mut calls) in chunk.nccl.groups {
            calls.name.iter_mut().for_each(|id| *id = resolve(*id));
            thread_entry(&mut threads, gtid, thread_names)
                .nccl
                .append(calls);
        }
        domains.extend(chunk.domains);
    }
    drop(scope);
    // Thread by thread on every core: the copies write fresh pages, whose faults (most of
    // this phase's time) then happen on both cores at once.
    for &gtid in ranges_of.keys() {
        thread_entry(&mut threads, gtid, thread_names);
    }
    let work: Vec<(&mut crate::trace::NvtxRanges, Vec<_>)> = threads
        .values_mut()
        .filter_map(|t| Some((&mut t.nvtx, ranges_of.remove(&t.global_tid)?)))
        .collect();
    crate::profile_scope!("merge: NVTX ranges");
    work.into_par_iter().for_each(|(t, list)| {
        for (c, ranges) in list {
            t.start.extend(ranges.start);
            t.end.extend(ranges.end);
            t.text
                .extend(ranges.text.into_iter().map(|id| resolve_in(c, id)));
            t.kind.extend(ranges.kind);
            t.extend_colors(&ranges.color, &ranges.palette);
        }
    });
    for (gtid, sched) in scheduling {
        thread_entry(&mut threads, gtid, thread_names).scheduling = sched;
    }
    for chunk in osrt {
        for (gtid, calls) in chunk.threads.groups {
            let t = &mut thread_entry(&mut threads, gtid, thread_names).osrt;
            t.start.extend(calls.start);
            t.end.extend(calls.end);
            t.name.extend(calls.name);
            t.return_value.extend(calls.return_value);
        }
    }
    (
        threads.into_values().collect(),
        domains.into_iter().collect(),
        payloads,
    )
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
/// API call. One sorted key list and a binary search per op: no per-row SQL, no hash of
/// millions of entries.
fn link_launches(streams: &mut [(StreamKey, GpuOps)], threads: &[Thread]) {
    let mut keys: Vec<(u64, u32, u32)> =
        Vec::with_capacity(threads.iter().map(|t| t.api.len()).sum());
    for (ti, t) in threads.iter().enumerate() {
        for (ci, &corr) in t.api.correlation_id.iter().enumerate() {
            if corr != 0 {
                keys.push((((t.pid as u64) << 32) | corr as u64, ti as u32, ci as u32));
            }
        }
    }
    keys.par_sort_unstable();
    streams.par_iter_mut().for_each(|((_, pid, _), ops)| {
        let pid_bits = (*pid as u64) << 32;
        for i in 0..ops.len() {
            let corr = ops.correlation_id[i];
            if corr == 0 {
                continue;
            }
            let key = pid_bits | corr as u64;
            let at = keys.partition_point(|k| k.0 < key);
            if let Some(&(k, thread, call)) = keys.get(at)
                && k == key
            {
                ops.launch_thread[i] = thread;
                ops.launch_call[i] = call;
            }
        }
    });
}
