//! A job of many ranks from their summaries: clocks aligned by the collectives (as for
//! exports loaded whole), collectives matched across GPUs by their ends, each GPU's NCCL
//! time split into waiting for the last rank and transfer, the collectives held back
//! longest, the straggler (with what removing its stall saves, replayed at collective
//! granularity), the ranks × iterations heatmap and the slowest iteration's critical path
//! from collective to collective. Memory is the summaries' (a few MB a rank) plus one
//! index a collective and GPU.

use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use super::summary::{GapSummary, NO_TEXT, RankSummary};
use crate::analysis::arrivals::{self, Members};
use crate::analysis::breakdown::Breakdown;
use crate::analysis::iterations::steady_state;
use crate::analysis::nccl_wait::match_by_ends;
use crate::findings::{Kind, NO_GAIN_PCT, Severity};
use crate::format::format_ns;
use crate::load::many::{Alignment, Offset, align_clocks, file_names};

/// One summary file of the job.
#[derive(Debug, Clone, Serialize)]
pub struct JobFile {
    pub summary: PathBuf,
    /// The export it was made from (on the machine that made it).
    pub export: PathBuf,
    pub name: String,
    /// How its clock was put on the first file's, as for exports.
    #[serde(flatten)]
    pub clock: Offset,
}

/// One GPU of the job: `FILE:ID` as a merged trace names it.
#[derive(Debug, Clone, Serialize)]
pub struct JobGpu {
    pub key: String,
    pub file: usize,
    pub model: Option<String>,
    /// On the first file's clock.
    pub window_ns: (i64, i64),
    pub breakdown_ns: Breakdown,
    pub iteration_median_ns: i64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct JobGpuWait {
    pub device: String,
    pub collectives: usize,
    pub wait_ns: i64,
    pub transfer_ns: i64,
    /// How often this GPU's kernel started last: it held the others back.
    pub last_arrivals: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobLateCollective {
    pub name: String,
    /// On the first file's clock.
    pub start_ns: i64,
    /// How long after the median rank's kernel the last rank's started.
    pub held_back_ns: i64,
    pub last_device: String,
    /// The call that filled at least half of that time on the last rank's launching thread.
    pub last_thread_call: Option<String>,
}

impl JobLateCollective {
    /// `ncclDevKernel_SendRecv at 53.796 s, 1.200 s after the median rank, by
    /// rank37.sqlite:0 (its thread was in read())`, its time from `origin`: as the report
    /// says it of a trace.
    pub fn describe(&self, origin: i64) -> String {
        arrivals::late_sentence(
            &self.name,
            self.start_ns - origin,
            self.held_back_ns,
            &self.last_device,
            self.last_thread_call.as_deref(),
        )
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct JobWaits {
    /// Collectives found on every GPU that ran NCCL.
    pub collectives: usize,
    pub per_device: Vec<JobGpuWait>,
    pub late: Vec<JobLateCollective>,
    /// Every collective in time order: the GPU that started it last (its index in the
    /// job's `devices`), and how long after the median rank.
    pub last_by_collective: Vec<u32>,
    pub held_back_by_collective_ns: Vec<i64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct JobIterations {
    pub count: usize,
    pub warmup: usize,
    /// Each iteration's longest GPU duration.
    pub durations_ns: Vec<i64>,
    pub median_ns: i64,
    pub slow_indices: Vec<usize>,
    pub slowest_index: Option<usize>,
}

/// Ranks × iterations: each GPU's iteration time, its NCCL wait in it, and the time it
/// held the others back (started a collective last, measured from the median rank).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Heatmap {
    pub devices: Vec<String>,
    pub duration_ns: Vec<Vec<i64>>,
    pub wait_ns: Vec<Vec<i64>>,
    pub held_back_ns: Vec<Vec<i64>>,
}

/// One step of the critical path at collective granularity: the rank the collective
/// waited for, and what it did since the collective before.
#[derive(Debug, Clone, Serialize)]
pub struct PathStep {
    pub collective: usize,
    pub name: String,
    pub start_ns: i64,
    pub last_device: String,
    /// From the previous collective's end to the last rank's start.
    pub segment_ns: i64,
    /// How long after the first rank the last one started.
    pub lateness_ns: i64,
    pub doing: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CriticalPath {
    pub iteration: usize,
    pub steps: Vec<PathStep>,
}

/// The straggler, as the exports' report names it, with its saving from the replay.
#[derive(Debug, Clone, Serialize)]
pub struct JobFinding {
    pub kind: Kind,
    pub severity: Severity,
    pub title: String,
    pub detail: String,
    pub devices: Vec<String>,
    pub saving_ns: i64,
    pub saving_pct: f64,
    /// What the replay assumes.
    pub assumes: String,
    #[serde(rename = "where")]
    pub at: (i64, i64),
}

#[derive(Debug, Clone, Serialize)]
pub struct GapRow {
    pub device: String,
    #[serde(flatten)]
    pub gap: GapSummary,
}

/// The job, reduced.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    pub kind: &'static str,
    pub files: Vec<JobFile>,
    pub devices: Vec<JobGpu>,
    /// First start to last end over every GPU, on the first file's clock.
    pub span_ns: (i64, i64),
    pub iterations: JobIterations,
    pub nccl_wait: JobWaits,
    pub findings: Vec<JobFinding>,
    pub critical_path: Option<CriticalPath>,
    pub top_gaps: Vec<GapRow>,
    pub heatmap: Heatmap,
}

impl Job {
    /// Files whose clock the collectives set (the first one, the reference, included).
    pub fn clocks_aligned(&self) -> usize {
        self.files
            .iter()
            .filter(|f| {
                matches!(
                    f.clock.alignment,
                    Alignment::Reference | Alignment::Collectives
                )
            })
            .count()
    }
}

/// A GPU of the job, as the reduce walks it.
struct RankGpu<'s> {
    summary: &'s RankSummary,
    gpu: usize,
    offset: i64,
    /// Added to its iterations' indices to number them as the first GPU's (a rank that
    /// synchronised once more before the first step has one iteration more).
    shift: i64,
    /// Its iterations' GPU spans (own clock), by start: (start, end, its own index).
    spans: Vec<(i64, i64, usize)>,
}

impl RankGpu<'_> {
    fn collectives(&self) -> &super::summary::CollectiveColumns {
        &self.summary.gpus[self.gpu].collectives
    }

    fn summary(&self) -> &super::summary::GpuSummary {
        &self.summary.gpus[self.gpu]
    }

    /// Its own index of the iteration whose span holds `t` (its own clock).
    fn own_iteration_at(&self, t: i64) -> Option<usize> {
        let k = self.spans.partition_point(|s| s.0 <= t).checked_sub(1)?;
        let (_, end, own) = self.spans[k];
        (t <= end).then_some(own)
    }

    /// The job's iteration (the first GPU's numbering) whose span holds `t`.
    fn iteration_at(&self, t: i64) -> Option<usize> {
        usize::try_from(self.own_iteration_at(t)? as i64 + self.shift).ok()
    }

    /// Its duration of the job's iteration `k` (0 when it has none).
    fn duration(&self, k: usize) -> i64 {
        usize::try_from(k as i64 - self.shift)
            .ok()
            .and_then(|own| self.summary().iteration_durations_ns.get(own))
            .copied()
            .unwrap_or(0)
    }

    /// Iterations it has, in the job's numbering.
    fn iteration_count(&self) -> usize {
        (self.summary().iteration_durations_ns.len() as i64 + self.shift).max(0) as usize
    }
}

/// Each GPU's iteration shift onto the first NCCL GPU's numbering: the difference most of
/// their shared collectives agree on (0 for a GPU without collectives).
fn iteration_shifts(gpus: &mut [RankGpu], m: &Matched) {
    let Some(&reference) = m.gpus.first() else {
        return;
    };
    let mut votes: Vec<rustc_hash::FxHashMap<i64, usize>> = vec![Default::default(); gpus.len()];
    for c in 0..m.len() {
        let mut members = m.group(c);
        let Some((_, ri)) = members.next() else {
            continue;
        };
        let Some(rk) = gpus[reference].own_iteration_at(gpus[reference].collectives().start[ri])
        else {
            continue;
        };
        for (g, i) in members {
            if let Some(k) = gpus[g].own_iteration_at(gpus[g].collectives().start[i]) {
                *votes[g].entry(rk as i64 - k as i64).or_default() += 1;
            }
        }
    }
    for (g, v) in votes.into_iter().enumerate() {
        if let Some((shift, _)) = v
            .into_iter()
            .max_by_key(|&(d, n)| (n, std::cmp::Reverse(d.abs())))
        {
            gpus[g].shift = shift;
        }
    }
}

/// The job of `summaries` (each with its file), the first one's clock the reference.
pub fn reduce(summaries: &[(PathBuf, RankSummary)], top: usize) -> Job {
    crate::profile_scope!("reduce summaries");
    let clocks: Vec<(Option<i64>, Vec<i64>)> = summaries
        .par_iter()
        .map(|(_, s)| {
            let ends = s
                .gpus
                .iter()
                .find(|g| !g.collectives.is_empty())
                .map_or_else(Vec::new, |g| g.collectives.end.clone());
            (s.utc_start_ns, ends)
        })
        .collect();
    let offsets = align_clocks(&clocks);
    drop(clocks);
    let exports: Vec<PathBuf> = summaries
        .iter()
        .map(|(_, s)| s.source.path.clone())
        .collect();
    let names = file_names(&exports);
    let files: Vec<JobFile> = summaries
        .iter()
        .zip(exports)
        .zip(&offsets)
        .zip(&names)
        .map(|((((path, _), export), &clock), name)| JobFile {
            summary: path.clone(),
            export,
            name: name.clone(),
            clock,
        })
        .collect();
    let mut gpus: Vec<RankGpu> = Vec::new();
    let mut devices: Vec<JobGpu> = Vec::new();
    for (f, (_, s)) in summaries.iter().enumerate() {
        let offset = offsets[f].offset_ns;
        for (g, gpu) in s.gpus.iter().enumerate() {
            let mut spans: Vec<(i64, i64, usize)> = gpu
                .iteration_spans
                .iter()
                .enumerate()
                .filter_map(|(k, w)| w.map(|(a, b)| (a, b, k)))
                .collect();
            spans.sort_unstable();
            gpus.push(RankGpu {
                summary: s,
                gpu: g,
                offset,
                shift: 0,
                spans,
            });
            devices.push(JobGpu {
                key: format!("{}:{}", names[f], gpu.device),
                file: f,
                model: gpu.model.clone(),
                window_ns: (gpu.window_ns.0 + offset, gpu.window_ns.1 + offset),
                breakdown_ns: gpu.breakdown_ns,
                iteration_median_ns: gpu.iteration_median_ns,
            });
        }
    }
    let span_ns = (
        devices.iter().map(|d| d.window_ns.0).min().unwrap_or(0),
        devices.iter().map(|d| d.window_ns.1).max().unwrap_or(0),
    );
    let matched = Matched::of(&gpus);
    iteration_shifts(&mut gpus, &matched);
    let iterations = job_iterations(&gpus);
    let arrivals = arrivals(&gpus, &matched);
    let nccl_wait = waits(&gpus, &devices, &matched, &arrivals, top);
    let heatmap = heatmap(&gpus, &devices, &matched, &arrivals);
    let critical_path = iterations
        .slowest_index
        .map(|k| critical_path(&gpus, &devices, &arrivals, k))
        .filter(|p| !p.steps.is_empty());
    let findings = straggler(&gpus, &devices, &matched, &arrivals, &iterations, span_ns)
        .into_iter()
        .collect();
    let mut top_gaps: Vec<GapRow> = gpus
        .iter()
        .zip(&devices)
        .flat_map(|(g, d)| {
            g.summary.gpus[g.gpu].top_gaps.iter().map(|gap| GapRow {
                device: d.key.clone(),
                gap: GapSummary {
                    start_ns: gap.start_ns + g.offset,
                    ..gap.clone()
                },
            })
        })
        .collect();
    top_gaps.sort_by_key(|r| (std::cmp::Reverse(r.gap.duration_ns), r.gap.start_ns));
    top_gaps.truncate(top);
    Job {
        kind: "job from rank summaries",
        files,
        devices,
        span_ns,
        iterations,
        nccl_wait,
        findings,
        critical_path,
        top_gaps,
        heatmap,
    }
}

/// The collectives found on every GPU that ran NCCL, flat: `width` members a collective
/// (each the index of the GPU's collective in its summary), in the first GPU's end order.
struct Matched {
    /// The GPUs (indices into the job's) that ran NCCL.
    gpus: Vec<usize>,
    members: Vec<u32>,
}

impl Matched {
    fn of(gpus: &[RankGpu]) -> Self {
        let with_nccl: Vec<usize> = (0..gpus.len())
            .filter(|&g| !gpus[g].collectives().is_empty())
            .collect();
        // Each GPU's collectives by end, on the reference clock: (ends, their indices).
        let by_end: Vec<(Vec<i64>, Vec<u32>)> = with_nccl
            .par_iter()
            .map(|&g| {
                let c = gpus[g].collectives();
                let mut order: Vec<u32> = (0..c.len() as u32).collect();
                order.sort_by_key(|&i| c.end[i as usize]);
                let ends = order
                    .iter()
                    .map(|&i| c.end[i as usize] + gpus[g].offset)
                    .collect();
                (ends, order)
            })
            .collect();
        let (ends, orders): (Vec<Vec<i64>>, Vec<Vec<u32>>) = by_end.into_iter().unzip();
        let mut members = Vec::new();
        match_by_ends(&ends, |group| {
            members.extend(group.iter().enumerate().map(|(g, &i)| orders[g][i]));
        });
        Self {
            gpus: with_nccl,
            members,
        }
    }

    fn width(&self) -> usize {
        self.gpus.len().max(1)
    }

    fn len(&self) -> usize {
        self.members.len() / self.width()
    }

    /// Collective `c`'s member on `slot`: (job GPU, its collective's index).
    fn member(&self, c: usize, slot: usize) -> (usize, usize) {
        (
            self.gpus[slot],
            self.members[c * self.width() + slot] as usize,
        )
    }

    /// Collective `c`: (job GPU, its collective's index) of each member.
    fn group(&self, c: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let w = self.width();
        self.gpus
            .iter()
            .zip(&self.members[c * w..(c + 1) * w])
            .map(|(&g, &i)| (g, i as usize))
    }
}

/// A member's start and end on the reference clock.
fn times(gpus: &[RankGpu], g: usize, i: usize) -> (i64, i64) {
    let c = gpus[g].collectives();
    (c.start[i] + gpus[g].offset, c.end[i] + gpus[g].offset)
}

/// How a collective's kernels started (on the reference clock), and its last member: the
/// job's GPU and that GPU's collective index.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: arrivals::Arrival,
    gpu: usize,
    i: usize,
}

/// A job's matched collectives as the arrivals see them, on the reference clock.
struct OfSummaries<'a, 's> {
    gpus: &'a [RankGpu<'s>],
    m: &'a Matched,
}

impl Members for OfSummaries<'_, '_> {
    fn width(&self) -> usize {
        self.m.gpus.len()
    }

    fn len(&self) -> usize {
        self.m.len()
    }

    fn times(&self, c: usize, slot: usize) -> (i64, i64) {
        let (g, i) = self.m.member(c, slot);
        times(self.gpus, g, i)
    }
}

/// Every collective's arrivals, worked out once for the waits, the heatmap, the path and
/// the straggler.
fn arrivals(gpus: &[RankGpu], m: &Matched) -> Vec<Arrival> {
    arrivals::arrivals(&OfSummaries { gpus, m })
        .into_iter()
        .enumerate()
        .map(|(c, a)| {
            let (gpu, i) = m.member(c, a.slot);
            Arrival { at: a, gpu, i }
        })
        .collect()
}

fn waits(
    gpus: &[RankGpu],
    devices: &[JobGpu],
    m: &Matched,
    arrivals: &[Arrival],
    top: usize,
) -> JobWaits {
    let view = OfSummaries { gpus, m };
    let shared: Vec<arrivals::Arrival> = arrivals.iter().map(|a| a.at).collect();
    let per_device = arrivals::splits(&view, &shared)
        .into_iter()
        .zip(&m.gpus)
        .map(|(w, &g)| JobGpuWait {
            device: devices[g].key.clone(),
            collectives: w.collectives,
            wait_ns: w.wait_ns,
            transfer_ns: w.transfer_ns,
            last_arrivals: w.last_arrivals,
        })
        .collect();
    let late = arrivals::most_held_back(&shared, top)
        .into_iter()
        .map(|c| {
            let Arrival { gpu: g, i, at } = arrivals[c];
            let start = at.last;
            let held_back_ns = shared[c].held_back_ns();
            let s = gpus[g].summary;
            let col = gpus[g].collectives();
            // The longest call before it, when it filled at least half of the hold-back.
            let (a, b) = (start - held_back_ns, start);
            let call_start = col.call_start[i] + gpus[g].offset;
            let overlap = ((call_start + col.call_ns[i]).min(b) - call_start.max(a)).max(0);
            JobLateCollective {
                name: s.text(col.name[i]).to_string(),
                start_ns: start,
                held_back_ns,
                last_device: devices[g].key.clone(),
                last_thread_call: (col.call[i] != NO_TEXT && 2 * overlap >= held_back_ns)
                    .then(|| s.text(col.call[i]).to_string()),
            }
        })
        .collect();
    JobWaits {
        collectives: m.len(),
        per_device,
        late,
        last_by_collective: arrivals.iter().map(|a| a.gpu as u32).collect(),
        held_back_by_collective_ns: shared.iter().map(arrivals::Arrival::held_back_ns).collect(),
    }
}

fn job_iterations(gpus: &[RankGpu]) -> JobIterations {
    let count = gpus.iter().map(RankGpu::iteration_count).max().unwrap_or(0);
    let warmup = gpus
        .iter()
        .map(|g| (g.summary().iteration_warmup as i64 + g.shift).max(0) as usize)
        .max()
        .unwrap_or(0)
        .min(count);
    let durations_ns: Vec<i64> = (0..count)
        .map(|k| gpus.iter().map(|g| g.duration(k)).max().unwrap_or(0))
        .collect();
    let steady = steady_state(&durations_ns);
    let slowest_index = (warmup..count).max_by_key(|&k| durations_ns[k]);
    JobIterations {
        count,
        warmup,
        median_ns: steady.median_ns,
        slow_indices: steady.slow,
        slowest_index,
        durations_ns,
    }
}

fn heatmap(gpus: &[RankGpu], devices: &[JobGpu], m: &Matched, arrivals: &[Arrival]) -> Heatmap {
    let count = gpus.iter().map(RankGpu::iteration_count).max().unwrap_or(0);
    let mut out = Heatmap {
        devices: devices.iter().map(|d| d.key.clone()).collect(),
        duration_ns: gpus
            .iter()
            .map(|g| (0..count).map(|k| g.duration(k)).collect())
            .collect(),
        wait_ns: vec![vec![0; count]; gpus.len()],
        held_back_ns: vec![vec![0; count]; gpus.len()],
    };
    for (c, a) in arrivals.iter().enumerate() {
        let (lg, li, last_start, median) = (a.gpu, a.i, a.at.last, a.at.median);
        for (g, i) in m.group(c) {
            let Some(k) = gpus[g]
                .iteration_at(gpus[g].collectives().start[i])
                .filter(|&k| k < count)
            else {
                continue;
            };
            let (s, e) = times(gpus, g, i);
            out.wait_ns[g][k] =
                out.wait_ns[g][k].saturating_add((last_start - s).max(0).min(e - s));
            if g == lg && i == li {
                out.held_back_ns[g][k] = out.held_back_ns[g][k].saturating_add(last_start - median);
            }
        }
    }
    out
}

/// The collectives of iteration `k` (by the last member's iteration), in time order.
fn collectives_in(gpus: &[RankGpu], arrivals: &[Arrival], k: usize) -> Vec<usize> {
    let mut out: Vec<(i64, usize)> = arrivals
        .iter()
        .enumerate()
        .filter(|(_, a)| gpus[a.gpu].iteration_at(gpus[a.gpu].collectives().start[a.i]) == Some(k))
        .map(|(c, a)| (a.at.last, c))
        .collect();
    out.sort_unstable();
    out.into_iter().map(|x| x.1).collect()
}

/// What a GPU's launching thread did before its collective `i`, in words, and the stall:
/// its longest call or its longest stretch of CPU time with no call, whichever was longer
/// (start on the reference clock, length).
fn doing(gpus: &[RankGpu], g: usize, i: usize) -> (String, i64, i64) {
    let (s, c) = (gpus[g].summary, gpus[g].collectives());
    let offset = gpus[g].offset;
    let text = |t: u32| (t != NO_TEXT).then(|| s.text(t));
    let activity = arrivals::ThreadActivity {
        call: text(c.call[i]).map(|name| (name, c.call_start[i] + offset, c.call_ns[i])),
        cpu: (c.cpu_ns[i] > 0).then(|| (c.cpu_start[i] + offset, c.cpu_ns[i])),
        range: text(c.nvtx[i]),
    };
    arrivals::stall(activity)
        .unwrap_or_else(|| ("busy on the CPU".to_string(), times(gpus, g, i).0, 0))
}

fn critical_path(
    gpus: &[RankGpu],
    devices: &[JobGpu],
    arrivals: &[Arrival],
    k: usize,
) -> CriticalPath {
    let mut previous_end: Option<i64> = None;
    let steps = collectives_in(gpus, arrivals, k)
        .into_iter()
        .map(|c| {
            let Arrival { gpu: g, i, at } = arrivals[c];
            let (start, first) = (at.last, at.first);
            let end = times(gpus, g, i).1;
            let segment = previous_end.map_or(0, |e| (start - e).max(0));
            previous_end = Some(end);
            let (what, _, ns) = doing(gpus, g, i);
            PathStep {
                collective: c,
                name: gpus[g]
                    .summary
                    .text(gpus[g].collectives().name[i])
                    .to_string(),
                start_ns: start,
                last_device: devices[g].key.clone(),
                segment_ns: segment,
                lateness_ns: start - first,
                doing: format!("{what} for {}", format_ns(ns)),
            }
        })
        .collect();
    CriticalPath {
        iteration: k,
        steps,
    }
}

/// A stall taken out of a GPU's time before one of its collectives.
#[derive(Debug, Clone, Copy)]
pub struct Removal {
    /// The job's GPU and the collective (its index in `Matched`).
    pub gpu: usize,
    pub collective: usize,
    pub ns: i64,
}

/// The job's end moved by taking `removals` out, replayed collective by collective: a
/// collective starts when its last rank arrives and takes as long once all are in; each
/// rank's work between two collectives takes as long as recorded and starts when the
/// collective before ends. Returns how much earlier the last collective ends.
fn replay(gpus: &[RankGpu], m: &Matched, removals: &[Removal]) -> i64 {
    let mut delta = 0i64;
    for c in 0..m.len() {
        let mut old_last = i64::MIN;
        let mut new_last = i64::MIN;
        for (slot, (g, i)) in m.group(c).enumerate() {
            let s = times(gpus, g, i).0;
            let removed: i64 = removals
                .iter()
                .filter(|r| r.collective == c && m.gpus[slot] == r.gpu)
                .map(|r| r.ns)
                .sum();
            old_last = old_last.max(s);
            new_last = new_last.max(s + delta - removed);
        }
        delta = new_last - old_last;
    }
    -delta
}

/// The straggler: of the slowest iteration's collectives, the one whose last rank started
/// latest after the first; that rank's stall before it taken out and replayed.
fn straggler(
    gpus: &[RankGpu],
    devices: &[JobGpu],
    m: &Matched,
    arrivals: &[Arrival],
    its: &JobIterations,
    span: (i64, i64),
) -> Option<JobFinding> {
    let k = its.slowest_index?;
    let (c, lateness) = arrivals::straggler_collective(
        collectives_in(gpus, arrivals, k)
            .into_iter()
            .map(|c| (c, arrivals[c].at.lateness_ns())),
    )?;
    let (g, i, start) = (arrivals[c].gpu, arrivals[c].i, arrivals[c].at.last);
    let (what, stall_start, stall_ns) = doing(gpus, g, i);
    // Only the part of the stall between the rank's previous collective and this one.
    let c_i = gpus[g].collectives();
    let previous_end = (0..c_i.len())
        .filter(|&j| c_i.end[j] <= c_i.start[i])
        .map(|j| c_i.end[j] + gpus[g].offset)
        .max()
        .unwrap_or(i64::MIN);
    let removed = ((stall_start + stall_ns).min(start) - stall_start.max(previous_end)).max(0);
    let saving = replay(
        gpus,
        m,
        &[Removal {
            gpu: g,
            collective: c,
            ns: removed,
        }],
    );
    let pct = 100.0 * saving as f64 / (span.1 - span.0).max(1) as f64;
    if pct < NO_GAIN_PCT {
        return None;
    }
    let key = &devices[g].key;
    let name = gpus[g].summary.text(c_i.name[i]);
    let duration = its.durations_ns.get(k).copied().unwrap_or(0);
    Some(JobFinding {
        kind: Kind::Straggler,
        severity: Severity::of_saving(pct),
        title: arrivals::straggler_title(key, lateness, k, &what, stall_ns),
        detail: format!(
            "Iteration {k} is the slowest ({} against a median of {} across GPUs). Its {name} started last on {key}, {} after the first rank; meanwhile its launching thread was {what} for {}. Every other rank waited in NCCL. Without that stall the job would end {} earlier.",
            format_ns(duration),
            format_ns(its.median_ns),
            format_ns(lateness),
            format_ns(stall_ns),
            format_ns(saving)
        ),
        devices: vec![key.clone()],
        saving_ns: saving,
        saving_pct: pct,
        assumes: "replayed collective by collective: each rank's work between two collectives takes as long as recorded and starts when the collective before ends; a collective takes as long once its last rank is in".into(),
        at: (stall_start, stall_start + stall_ns),
    })
}

#[cfg(test)]
mod tests;
