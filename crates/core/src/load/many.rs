//! Several exports opened as one trace: one file per rank (`nsys profile -o rank%q{RANK}`),
//! each with its own clock and usually every GPU as device 0. Files load in parallel; each
//! is put on the first file's clock, first by its UTC session start (milliseconds at best),
//! then by its NCCL collectives — the k-th collective ends at nearly the same instant on
//! every rank — and merged: devices renamed `FILE:ID`, threads, strings and launch
//! configurations joined.

use std::path::{Path, PathBuf};

use super::LoadReport;
use crate::trace::{
    DeviceId, NONE, OpKind, StacksBuilder, StringTable, Trace, global_tid_sort_key,
};

/// How a file was put on the first file's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Alignment {
    /// The first file: the clock the others are put on.
    Reference,
    /// By its NCCL collectives' ends (after the UTC start).
    Collectives,
    /// By its UTC session start alone (no collectives to line up).
    Utc,
    /// Neither: no UTC start and no collectives; times are taken as they are.
    Unaligned,
    /// An offset the user gave (nudged in the window).
    Manual,
}

impl Alignment {
    pub fn label(self) -> &'static str {
        match self {
            Alignment::Reference => "reference",
            Alignment::Collectives => "collectives",
            Alignment::Utc => "utc",
            Alignment::Unaligned => "unaligned",
            Alignment::Manual => "manual",
        }
    }
}

/// One file of a trace of several.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileInfo {
    pub path: PathBuf,
    /// The file's base name, the `FILE` of its devices' `FILE:ID`.
    pub name: String,
    /// Added to the file's times to put it on the first file's clock.
    pub offset_ns: i64,
    /// From the UTC session starts alone.
    pub utc_offset_ns: Option<i64>,
    pub alignment: Alignment,
    /// Median distance of its collectives' ends from the first file's, once aligned.
    pub residual_ns: Option<i64>,
    /// Collectives lined up.
    pub collectives: usize,
    /// Ids of its devices in the merged trace.
    pub devices: Vec<DeviceId>,
}

/// Every `*.sqlite` in `dir`, sorted by name (or every `*.summary` when it holds no export).
pub fn sqlite_files_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    let with = |ext: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .cloned()
            .collect();
        v.sort();
        v
    };
    // A folder of rank summaries (`summarize --out DIR`) stands for them.
    let chosen = match with("sqlite") {
        exports if exports.is_empty() => with("summary"),
        exports => exports,
    };
    if chosen.is_empty() {
        return Err(format!(
            "no .sqlite files (nor .summary files) in {}",
            dir.display()
        ));
    }
    Ok(chosen)
}

/// The files named: folders stand for every `*.sqlite` in them.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            out.extend(sqlite_files_in(p)?);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Files loaded one by one (see `crate::session::open_many`), their clocks aligned and
/// merged into one trace: file `k` put at `manual[k]` when that is given (the user's nudge)
/// instead of where its clock alignment puts it.
pub fn merge_loaded(
    paths: &[PathBuf],
    loaded: Vec<(Trace, LoadReport)>,
    manual: &[Option<i64>],
) -> (Trace, Vec<LoadReport>, Vec<FileInfo>) {
    let (traces, reports): (Vec<Trace>, Vec<LoadReport>) = loaded.into_iter().unzip();
    let names = file_names(paths);
    let mut offsets = align(&traces);
    for (o, m) in offsets.iter_mut().zip(manual) {
        if let Some(m) = *m {
            o.offset_ns = m;
            o.alignment = Alignment::Manual;
        }
    }
    let mut files: Vec<FileInfo> = offsets
        .into_iter()
        .zip(paths.iter().zip(names))
        .map(|(a, (path, name))| FileInfo {
            path: path.clone(),
            name,
            offset_ns: a.offset_ns,
            utc_offset_ns: a.utc_offset_ns,
            alignment: a.alignment,
            residual_ns: a.residual_ns,
            collectives: a.collectives,
            devices: Vec::new(),
        })
        .collect();
    let trace = merge(traces, &mut files);
    (trace, reports, files)
}

/// Base names, made unique with their folder when two are alike (a job's summaries name
/// their exports so too).
pub fn file_names(paths: &[PathBuf]) -> Vec<String> {
    let base = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let names: Vec<String> = paths.iter().map(base).collect();
    names
        .iter()
        .zip(paths)
        .map(|(n, p)| {
            if names.iter().filter(|m| *m == n).count() > 1 {
                p.display().to_string()
            } else {
                n.clone()
            }
        })
        .collect()
}

/// One file's clock against the first's.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Offset {
    pub offset_ns: i64,
    pub utc_offset_ns: Option<i64>,
    pub alignment: Alignment,
    pub residual_ns: Option<i64>,
    pub collectives: usize,
}

/// Collectives needed to trust an alignment by them.
const MIN_COLLECTIVES: usize = 3;
/// Collectives one file may have recorded before or after another (a profile started a
/// little later on one rank): index shifts tried when lining them up.
const MAX_LAG: i64 = 16;

/// Each trace's offset onto the first's clock.
pub fn align(traces: &[Trace]) -> Vec<Offset> {
    let clocks: Vec<(Option<i64>, Vec<i64>)> = traces
        .iter()
        .map(|t| (t.info.utc_start_ns, nccl_ends(t)))
        .collect();
    align_clocks(&clocks)
}

/// Each file's offset onto the first's clock, from its UTC start and the ends of its first
/// GPU's NCCL kernels in start order (the rank summaries' reduce aligns with it too).
pub fn align_clocks(clocks: &[(Option<i64>, Vec<i64>)]) -> Vec<Offset> {
    let Some((first_utc, reference)) = clocks.first() else {
        return Vec::new();
    };
    let mut out = vec![Offset {
        offset_ns: 0,
        utc_offset_ns: Some(0),
        alignment: Alignment::Reference,
        residual_ns: None,
        collectives: reference.len(),
    }];
    for (utc_start, ends) in &clocks[1..] {
        let utc = match (first_utc, utc_start) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        let coarse = utc.unwrap_or(0);
        out.push(match collective_offset(reference, ends, coarse) {
            Some((offset, residual, n)) => Offset {
                offset_ns: offset,
                utc_offset_ns: utc,
                alignment: Alignment::Collectives,
                residual_ns: Some(residual),
                collectives: n,
            },
            None => Offset {
                offset_ns: coarse,
                utc_offset_ns: utc,
                alignment: if utc.is_some() {
                    Alignment::Utc
                } else {
                    Alignment::Unaligned
                },
                residual_ns: None,
                collectives: 0,
            },
        });
    }
    out
}

/// The ends of the NCCL kernels of a trace's first GPU that ran any, in start order.
fn nccl_ends(trace: &Trace) -> Vec<i64> {
    let Some(device) = trace.devices.iter().find(|d| d.count_of(OpKind::Nccl) > 0) else {
        return Vec::new();
    };
    let mut spans: Vec<(i64, i64)> = device
        .ops_of(OpKind::Nccl)
        .map(|(s, i)| (device.streams[s].ops.start[i], device.streams[s].ops.end[i]))
        .collect();
    spans.sort_unstable();
    spans.into_iter().map(|s| s.1).collect()
}

/// The offset that puts `ends` (another file's collective ends, `coarse` its UTC offset)
/// on `reference`'s: for each index shift the median of the differences, and how far they
/// stray from it (median absolute deviation). Shifts by whole periods of a repeating step
/// fit as well as the right one; of those that fit (residual near the best), the one
/// closest to the UTC estimate wins. Returns (offset, residual, collectives matched).
pub fn collective_offset(
    reference: &[i64],
    ends: &[i64],
    coarse: i64,
) -> Option<(i64, i64, usize)> {
    let mut fits: Vec<(i64, i64, i64, usize)> = Vec::new();
    for lag in -MAX_LAG..=MAX_LAG {
        let diffs: Vec<i64> = (0..reference.len())
            .filter_map(|i| {
                let j = i as i64 + lag;
                let e = *ends.get(usize::try_from(j).ok()?)?;
                Some(reference[i] - (e + coarse))
            })
            .collect();
        if diffs.len() < MIN_COLLECTIVES {
            continue;
        }
        let m = crate::sorted::median(&diffs);
        let mut deviations: Vec<i64> = diffs.iter().map(|d| (d - m).abs()).collect();
        deviations.sort_unstable();
        let residual = crate::sorted::middle(&deviations).unwrap_or(0);
        // A wrong shift of a step whose collectives are unevenly spaced fits half of them
        // (the median deviation is small); the 80th percentile is not fooled.
        let spread = deviations[(deviations.len() - 1) * 4 / 5];
        fits.push((m, residual, spread, diffs.len()));
    }
    let best = fits.iter().map(|f| f.2).min()?;
    let good = (best * 4).max(20_000);
    fits.into_iter()
        .filter(|f| f.2 <= good)
        .min_by_key(|f| f.0.abs())
        .map(|(m, residual, _, n)| (coarse + m, residual, n))
}

/// The traces joined, each shifted by its offset; `files` get their devices' new ids.
fn merge(traces: Vec<Trace>, files: &mut [FileInfo]) -> Trace {
    let mut out = Trace {
        info: traces.first().map(|t| t.info.clone()).unwrap_or_default(),
        ..Default::default()
    };
    let mut strings = StringTable::new();
    let mut stacks = StacksBuilder::default();
    let mut samples = crate::trace::CpuSamples::default();
    let mut stacks_error = None;
    let mut next_device = 0u32;
    // Each file's threads, before they are sorted: (file, old index) → position.
    let mut thread_file: Vec<usize> = Vec::new();
    for (k, (mut t, file)) in traces.into_iter().zip(files.iter_mut()).enumerate() {
        let dt = file.offset_ns;
        let remap = strings.absorb(&t.strings);
        let id = |s: u32| remap[s as usize];
        let thread_base = out.threads.len() as u32;
        let nodes = append_stacks(&mut samples, &mut stacks, &t, file, k, &id);
        if let Some(e) = &t.stacks().read.error {
            stacks_error.get_or_insert_with(|| format!("{}: {e}", file.name));
        }
        // Devices index their file among all the files read.
        let source = out.sources.len() as u32;
        out.sources.extend(std::mem::take(&mut t.sources));
        append_devices(
            &mut out,
            &mut t,
            file,
            source,
            thread_base,
            &mut next_device,
            &id,
        );
        for mut th in std::mem::take(&mut t.threads) {
            on_job_clock(&mut th, dt, &id, &nodes);
            // Files' pids and tids may repeat (ranks on different nodes): the file's index
            // above the bits nsys uses keeps every thread apart.
            th.global_tid += (k as i64) << 48;
            th.source += source;
            th.name = format!("{}: {}", file.name, th.name);
            th.index_calls();
            out.threads.push(th);
            thread_file.push(k);
        }
        for mut p in std::mem::take(&mut t.processes) {
            p.name = format!("{}: {}", file.name, p.name);
            out.processes.push(p);
        }
        out.nccl_payloads.add(t.nccl_payloads);
        for d in std::mem::take(&mut t.nvtx_domains) {
            if !out.nvtx_domains.contains(&d) {
                out.nvtx_domains.push(d);
            }
        }
        out.capture_window = match (out.capture_window, t.capture_window) {
            (Some(a), Some(b)) => Some((a.0.min(b.0 + dt), a.1.max(b.1 + dt))),
            (a, b) => a.or(b.map(|b| (b.0 + dt, b.1 + dt))),
        };
    }
    strings.freeze();
    out.strings = strings.into();
    out.call_stacks = crate::trace::StacksSlot::ready(crate::trace::CallStacks {
        stacks: stacks.stacks,
        samples,
        read: crate::trace::StacksRead {
            error: stacks_error,
            ..Default::default()
        },
    });
    sort_threads(&mut out);
    out
}

/// File `t`'s devices added to `out` under new ids (after those of the files before), on
/// the first file's clock (`file.offset_ns`), their names through `id` and their launching
/// threads after `thread_base`; the GPU metrics and device memory of those devices with
/// them.
fn append_devices(
    out: &mut Trace,
    t: &mut Trace,
    file: &mut FileInfo,
    source: u32,
    thread_base: u32,
    next_device: &mut u32,
    id: &impl Fn(u32) -> u32,
) {
    let dt = file.offset_ns;
    let mut renamed: Vec<(DeviceId, DeviceId)> = Vec::new();
    for mut d in std::mem::take(&mut t.devices) {
        d.key = Some(format!("{}:{}", file.name, d.id));
        renamed.push((d.id, DeviceId(*next_device)));
        d.id = DeviceId(*next_device);
        d.source += source;
        file.devices.push(DeviceId(*next_device));
        *next_device += 1;
        for s in &mut d.streams {
            let ops = &mut s.ops;
            for i in 0..ops.len() {
                ops.start[i] += dt;
                ops.end[i] += dt;
                ops.name[i] = id(ops.name[i]);
                if ops.launch_thread[i] != NONE {
                    ops.launch_thread[i] += thread_base;
                }
            }
        }
        out.devices.push(d);
    }
    // GPU metrics and device memory on the renamed GPUs, on the first file's clock.
    for mut m in std::mem::take(&mut t.gpu_metrics) {
        let Some(&(_, id)) = renamed.iter().find(|r| r.0 == m.device) else {
            continue;
        };
        m.device = id;
        m.time.iter_mut().for_each(|x| *x += dt);
        out.gpu_metrics.push(m);
    }
    for mut m in std::mem::take(&mut t.memory_usage) {
        let Some(&(_, id)) = renamed.iter().find(|r| r.0 == m.device) else {
            continue;
        };
        m.device = id;
        m.time.iter_mut().for_each(|x| *x += dt);
        out.memory_usage.push(m);
    }
}

/// A thread's calls, ranges, marks and NCCL calls moved by `dt` onto the first file's
/// clock, its names through `id` and its OS calls' stacks through `nodes`.
fn on_job_clock(th: &mut crate::trace::Thread, dt: i64, id: &impl Fn(u32) -> u32, nodes: &[u32]) {
    for i in 0..th.api.len() {
        th.api.start[i] += dt;
        th.api.end[i] += dt;
        th.api.name[i] = id(th.api.name[i]);
    }
    for i in 0..th.nvtx.len() {
        th.nvtx.start[i] += dt;
        th.nvtx.end[i] += dt;
        th.nvtx.text[i] = id(th.nvtx.text[i]);
    }
    for i in 0..th.marks.time.len() {
        th.marks.time[i] += dt;
        th.marks.text[i] = id(th.marks.text[i]);
    }
    th.nccl.shift(dt);
    for name in &mut th.nccl.name {
        *name = id(*name);
    }
    for i in 0..th.osrt.len() {
        th.osrt.start[i] += dt;
        th.osrt.end[i] += dt;
        th.osrt.name[i] = id(th.osrt.name[i]);
    }
    for s in &mut th.osrt.stack {
        if *s != NONE {
            *s = nodes[*s as usize];
        }
    }
}

/// File `k`'s call stacks and CPU samples added to `samples` and `stacks` (its strings
/// through `id`, its times put on the first file's clock; frames and stacks the files
/// share kept once); each of its stacks' nodes in the tree built. Waits for the file's
/// stacks to be read.
fn append_stacks(
    samples: &mut crate::trace::CpuSamples,
    stacks: &mut StacksBuilder,
    t: &Trace,
    file: &FileInfo,
    k: usize,
    id: &dyn Fn(u32) -> u32,
) -> Vec<u32> {
    let s = &t.stacks().stacks;
    let frames: Vec<u32> = (0..s.frame_symbol.len())
        .map(|f| {
            stacks.frame(
                id(s.frame_symbol[f]),
                id(s.frame_module[f]),
                s.frame_unresolved[f],
            )
        })
        .collect();
    // A node's caller comes before it: mapped in one pass.
    let mut nodes: Vec<u32> = Vec::with_capacity(s.node_frame.len());
    for n in 0..s.node_frame.len() {
        let p = s.node_parent[n];
        let parent = if p == NONE { NONE } else { nodes[p as usize] };
        nodes.push(stacks.child(parent, frames[s.node_frame[n] as usize]));
    }
    let node = |n: u32| if n == NONE { NONE } else { nodes[n as usize] };
    let c = &t.stacks().samples;
    let sample_base = samples.len();
    for th in &c.threads {
        samples.threads.push(crate::trace::SampledThread {
            global_tid: th.global_tid + ((k as i64) << 48),
            name: format!("{}: {}", file.name, th.name),
            first: th.first + sample_base,
            count: th.count,
        });
    }
    samples
        .time
        .extend(c.time.iter().map(|&x| x + file.offset_ns));
    samples.node.extend(c.node.iter().map(|&n| node(n)));
    samples.state.extend_from_slice(&c.state);
    nodes
}

/// Threads sorted by (pid, tid) as the model promises, launch links following them.
fn sort_threads(trace: &mut Trace) {
    let mut order: Vec<usize> = (0..trace.threads.len()).collect();
    order.sort_by_key(|&i| global_tid_sort_key(trace.threads[i].global_tid));
    let mut new_index = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }
    let mut threads: Vec<Option<crate::trace::Thread>> = std::mem::take(&mut trace.threads)
        .into_iter()
        .map(Some)
        .collect();
    trace.threads = order
        .iter()
        .map(|&i| threads[i].take().unwrap_or_default())
        .collect();
    for d in &mut trace.devices {
        for s in &mut d.streams {
            for t in &mut s.ops.launch_thread {
                if *t != NONE {
                    *t = new_index[*t as usize];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collectives every 5 ms, alternating 3 and 7 ms apart, the second file's clock 2.345 s
    /// behind with ±3 µs of noise; its UTC start 4 ms off.
    #[test]
    fn collectives_find_the_offset_that_utc_only_approximates() {
        let mut t = 0;
        let reference: Vec<i64> = (0..200)
            .map(|k| {
                t += if k % 2 == 0 { 3_000_000 } else { 7_000_000 };
                t
            })
            .collect();
        let true_offset = 2_345_000_000;
        let ends: Vec<i64> = reference
            .iter()
            .enumerate()
            .skip(2) // this rank's profile started two collectives late
            .map(|(k, e)| e - true_offset + [0, 3_000, -2_000][k % 3])
            .collect();
        let utc = true_offset + 4_000_000;
        let (offset, residual, n) = collective_offset(&reference, &ends, utc).unwrap();
        assert!((offset - true_offset).abs() <= 3_000, "{offset}");
        assert!(residual <= 3_000, "{residual}");
        assert!(n >= 190);
        // Too few collectives: no alignment by them.
        assert_eq!(collective_offset(&reference[..2], &ends[..2], utc), None);
    }
}
