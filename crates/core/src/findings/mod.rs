//! What to fix first: detectors turn the analyses' evidence into findings, each with the
//! change that would fix it as a what-if [`Change`]; the change is replayed and the
//! finding ranked by what the replay predicts it saves of the run's span. A finding
//! whose saving is small stays `info`; severity never comes from counts.

mod detect;
mod kept;
pub mod text;

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::overview::Overview;
use crate::trace::measured_spans;
use crate::trace::{DeviceId, Trace};
use crate::whatif::{Change, Prepared, TraceParts, predicted_spans_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Recurring host-sync gaps: a synchronising call starves the GPU.
    HostSync,
    /// NCCL and compute on one stream.
    NcclSameStream,
    /// A rank the others wait for at a collective.
    Straggler,
    /// Recurring host-bound gaps: the CPU does not launch fast enough.
    HostBound,
    /// A one-off stall of the launching thread (a JIT compilation, a slow call).
    OneOffStall,
    /// Copies that hold the GPU: a blocking checkpoint, host-to-device transfers.
    Copies,
    /// The kernel that takes most GPU time (an opportunity, not a fault: always `info`).
    HotKernel,
    /// Launch-bound ranges whose kernels repeat as a fixed sequence without syncs: captured
    /// in a CUDA graph each would be one launch (an opportunity).
    GraphCapture,
    /// Idle that no detector explains (a fact: no saving).
    UnexplainedIdle,
    /// Device memory that rises iteration after iteration (a fact: a leak costs memory,
    /// not time).
    MemoryGrowth,
}

/// What a finding is: something wrong with the run, a way to make a sound run faster, or
/// a fact without a change. Listed in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Fault,
    Opportunity,
    Fact,
}

impl Group {
    pub fn label(self) -> &'static str {
        match self {
            Group::Fault => "What is wrong",
            Group::Opportunity => "Opportunities",
            Group::Fact => "Facts",
        }
    }
}

impl Kind {
    /// Faults come first whatever an opportunity would save: a speed-up wish is no fault.
    pub fn group(self) -> Group {
        match self {
            Kind::HotKernel | Kind::GraphCapture => Group::Opportunity,
            Kind::UnexplainedIdle | Kind::MemoryGrowth => Group::Fact,
            _ => Group::Fault,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::HostSync => "host sync",
            Kind::NcclSameStream => "NCCL on the compute stream",
            Kind::Straggler => "straggler",
            Kind::HostBound => "host-bound",
            Kind::OneOffStall => "one-off stall",
            Kind::Copies => "copies",
            Kind::HotKernel => "hot kernel",
            Kind::GraphCapture => "capture in a CUDA graph",
            Kind::UnexplainedIdle => "unexplained idle",
            Kind::MemoryGrowth => "device memory growth",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    /// From the saving's share of the run's span: critical at 10 %, warning at 3 %.
    pub fn of_saving(pct: f64) -> Self {
        if pct >= CRITICAL_PCT {
            Severity::Critical
        } else if pct >= WARNING_PCT {
            Severity::Warning
        } else {
            Severity::Info
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

pub const CRITICAL_PCT: f64 = 10.0;
pub const WARNING_PCT: f64 = 3.0;
/// At most this many findings, the largest savings first.
pub const MAX_FINDINGS: usize = 15;

/// Where a finding happens: a device and a time span (the export's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Where {
    /// The device's id (its index in the trace is looked up where needed).
    #[serde(skip)]
    pub device: Option<DeviceId>,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Serialized as the report shows it (the skipped fields are the window's and the replay's;
/// the cache keeps them beside: `kept.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    /// Fault, opportunity or fact (from the kind): the report lists them in that order.
    pub group: Group,
    pub severity: Severity,
    /// One line a person reads.
    pub title: String,
    /// The evidence: counts, total, where first seen, what the CPU was doing.
    pub detail: String,
    /// The GPUs it concerns (`FILE:ID` in merged traces): filled by the report.
    #[serde(skip)]
    pub devices: Vec<DeviceId>,
    /// Predicted reduction of the run's span (the largest over the GPUs); `None` until the
    /// replay ends, and for facts that no change is proposed for.
    pub saving_ns: Option<i64>,
    pub saving_pct: Option<f64>,
    /// Where the model assumes something optimistic: the saving under that assumption.
    pub upper_bound_ns: Option<i64>,
    /// The `what-if` arguments that reproduce `saving_ns`.
    pub what_if: Vec<String>,
    /// The first occurrence.
    #[serde(rename = "where")]
    pub first: Option<Where>,
    /// Every occurrence (at most [`MAX_OCCURRENCES`]), for the window to mark.
    #[serde(skip)]
    pub occurrences: Vec<Where>,
    /// The change replayed for `saving_ns`, and the optimistic one for `upper_bound_ns`.
    #[serde(skip)]
    pub change: Option<Change>,
    #[serde(skip)]
    pub upper_change: Option<Change>,
    /// Idle time of each device (id, ns) this finding accounts for: what is left is
    /// "unexplained".
    #[serde(skip)]
    pub explains_idle: Vec<(DeviceId, i64)>,
    /// Never above `info` (an opportunity or a fact, not a fault).
    #[serde(skip)]
    pub info_only: bool,
}

pub const MAX_OCCURRENCES: usize = 5_000;

pub use crate::trace::run_span;

/// The findings without their savings: fast, no replay.
pub fn detect(trace: &Trace, overview: &Overview) -> Vec<Finding> {
    crate::profile_scope!("findings: detect");
    detect::all(trace, overview)
}

/// A finding's saving, once replayed: (saving, upper bound).
pub type Saving = (i64, Option<i64>);

/// The savings of `findings`' changes (in their order); `done` is told of each as it ends
/// (index, saving). A change that gains nothing (below [`NO_GAIN_PCT`]) has no upper bound
/// replayed: its finding is dropped. `None` when cancelled. The changes are replayed a few
/// to a walk of the trace (a walk reads each event's rows once for all its changes) and
/// the walks run in parallel: as many walks as threads, at most [`CHANGES_PER_WALK`]
/// changes each (each change holds every op's replayed end while it walks).
pub fn replay_savings(
    trace: &Trace,
    overview: &Overview,
    findings: &[Finding],
    cancel: &AtomicBool,
    done: impl Fn(usize, Saving) + Sync,
) -> Option<Vec<Option<Saving>>> {
    let prepared = prepare(trace, overview);
    replay_savings_with(trace, overview, &prepared, findings, cancel, done, &|| {})
}

/// What the replays of `trace`'s changes share, built once (see [`Prepared`]).
pub fn prepare(trace: &Trace, overview: &Overview) -> Prepared {
    crate::profile_scope!("findings: replays prepared");
    Prepared::with_collectives(trace, overview.collectives(trace))
}

/// [`replay_savings`], with what the replays share built already; `beside` is run once, on
/// the thread whose walk ends first (not at all when nothing walks: the caller's to run).
pub fn replay_savings_with(
    trace: &Trace,
    overview: &Overview,
    prepared: &Prepared,
    findings: &[Finding],
    cancel: &AtomicBool,
    done: impl Fn(usize, Saving) + Sync,
    beside: &(dyn Fn() + Sync),
) -> Option<Vec<Option<Saving>>> {
    crate::profile_scope!("findings: replays");
    let measured = measured_spans(trace);
    let span = measured.iter().copied().max().unwrap_or(0);
    let saving_of = |spans: &[i64]| -> i64 {
        measured
            .iter()
            .zip(spans)
            .map(|(m, p)| m - p)
            .max()
            .unwrap_or(0)
    };
    // A finding's saving once its change's walk, and its upper bound's where one is
    // wanted, have ended. An upper bound is replayed only for a change that gains: a
    // finding that gains nothing is dropped unread (`drop_idle_advice`).
    let ended = |f: &Finding, (saving, upper): (Option<i64>, Option<i64>)| -> Option<Saving> {
        let saving = saving?;
        if f.upper_change.is_some() && gains(saving, span) {
            Some((saving, Some(upper?.max(saving))))
        } else {
            Some((saving, None))
        }
    };
    // Per finding: its saving and its upper bound's, as their walks end.
    let found = std::sync::Mutex::new(vec![(None, None); findings.len()]);
    // `beside` follows the walk that ends first, on its thread (the walks are seldom even:
    // three changes on two threads walk two and one).
    let beside_taken = std::sync::atomic::AtomicBool::new(false);
    // Replays `changes` (finding, whether its upper bound's, the change), a few to a walk.
    let walk_all = |changes: &[(usize, bool, &Change)]| -> Option<()> {
        if changes.is_empty() {
            return Some(());
        }
        let per_walk = changes_per_walk(
            changes.len(),
            rayon::current_num_threads(),
            trace.gpu_op_count(),
        );
        let walked: Option<Vec<()>> = changes
            .par_chunks(per_walk)
            .map(|walk| {
                let these: Vec<&Change> = walk.iter().map(|&(_, _, c)| c).collect();
                let spans =
                    predicted_spans_of(trace, prepared, &these, Some(&overview.gaps), cancel)?;
                let mut ended_now = Vec::new();
                {
                    let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                    for (&(i, upper, _), spans) in walk.iter().zip(&spans) {
                        let slot = &mut found[i];
                        *(if upper { &mut slot.1 } else { &mut slot.0 }) = Some(saving_of(spans));
                        ended_now.extend(ended(&findings[i], *slot).map(|saving| (i, saving)));
                    }
                }
                // Told outside the lock: the other walks' ends do not wait on the listener.
                for (i, saving) in ended_now {
                    done(i, saving);
                }
                if !beside_taken.swap(true, Ordering::Relaxed) {
                    beside();
                }
                Some(())
            })
            .collect();
        walked?;
        (!cancel.load(Ordering::Relaxed)).then_some(())
    };
    // Every finding's change first, then the upper bounds of those that gain.
    let changes: Vec<(usize, bool, &Change)> = findings
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.change.as_ref().map(|c| (i, false, c)))
        .collect();
    walk_all(&changes)?;
    let uppers: Vec<(usize, bool, &Change)> = {
        let found = found.lock().unwrap_or_else(|e| e.into_inner());
        findings
            .iter()
            .enumerate()
            .filter(|(i, _)| found[*i].0.is_some_and(|saving| gains(saving, span)))
            .filter_map(|(i, f)| f.upper_change.as_ref().map(|c| (i, true, c)))
            .collect()
    };
    walk_all(&uppers)?;
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    Some(
        findings
            .iter()
            .zip(found)
            .map(|(f, slot)| ended(f, slot))
            .collect(),
    )
}

/// At most this many changes replayed in one walk of the trace, unless
/// [`WIDER_WALKS_BYTES`] allows more: each holds every op's replayed end while it walks
/// (8 bytes an op), and the walks run side by side.
pub const CHANGES_PER_WALK: usize = 2;

/// What the walks side by side may hold beyond [`CHANGES_PER_WALK`] changes each, so that
/// the changes take one walk a thread instead of a further walk after them (a walk reads
/// every event of the trace). Its figures: docs/benchmarks.md, "Figures behind the code".
pub const WIDER_WALKS_BYTES: usize = 96 << 20;

/// How many changes a walk replays: the changes spread evenly over the threads, when the
/// ops' replayed ends that asks for beyond [`CHANGES_PER_WALK`] a walk fit
/// [`WIDER_WALKS_BYTES`]; else [`CHANGES_PER_WALK`].
pub fn changes_per_walk(changes: usize, threads: usize, ops: usize) -> usize {
    let threads = threads.max(1);
    let even = changes.div_ceil(threads).max(1);
    if even <= CHANGES_PER_WALK {
        return even;
    }
    let beyond = threads.min(changes.div_ceil(even)) * (even - CHANGES_PER_WALK);
    if beyond.saturating_mul(ops).saturating_mul(8) <= WIDER_WALKS_BYTES {
        even
    } else {
        CHANGES_PER_WALK
    }
}

/// A saving's share of the span, in percent (none of an empty span).
fn saving_pct(saving: i64, span: i64) -> f64 {
    if span > 0 {
        100.0 * saving.max(0) as f64 / span as f64
    } else {
        0.0
    }
}

/// Whether a change that saves this much is advice: below [`NO_GAIN_PCT`] of the span its
/// finding is dropped.
pub(crate) fn gains(saving: i64, span: i64) -> bool {
    saving_pct(saving, span) >= NO_GAIN_PCT
}

/// Sets a finding's saving and the severity it earns.
pub fn apply_saving(finding: &mut Finding, saving: Saving, span: i64) {
    let (saving, upper) = saving;
    let saving = saving.max(0);
    let pct = saving_pct(saving, span);
    finding.saving_ns = Some(saving);
    finding.saving_pct = Some(pct);
    finding.upper_bound_ns = upper.map(|u| u.max(saving));
    finding.severity = if finding.info_only {
        Severity::Info
    } else {
        Severity::of_saving(pct)
    };
}

/// Faults, then opportunities, then facts; in each group the largest saving first; at
/// most [`MAX_FINDINGS`].
pub fn rank(findings: &mut Vec<Finding>) {
    findings.sort_by_key(|f| {
        (
            f.group,
            std::cmp::Reverse(f.saving_ns.unwrap_or(i64::MIN)),
            f.kind as u8,
        )
    });
    findings.truncate(MAX_FINDINGS);
}

/// Every finding with its replayed saving, ranked: what `report` prints.
pub fn findings(trace: &Trace, overview: &Overview) -> Vec<Finding> {
    findings_kept(trace, overview, None)
}

/// [`findings`], with the replays' savings kept in the cache under `key` (the trace's):
/// an unchanged trace with the same changes to replay is not replayed again.
pub fn findings_kept(
    trace: &Trace,
    overview: &Overview,
    key: Option<&crate::cache::TraceKey>,
) -> Vec<Finding> {
    findings_staged(
        trace,
        overview,
        key,
        &AtomicBool::new(false),
        &|_, _| {},
        &|_, _| {},
        &|| {},
        None,
    )
    .unwrap_or_default()
}

/// [`findings_kept`], telling `detected` what was found (with the run's span) before the
/// replays and `saved` each saving as its walk ends; `None` when cancelled. What the window
/// shows as the findings arrive, and what `report` prints: one path. `parts`: what the
/// replays need of the trace alone, when built already (see [`TraceParts`]).
#[allow(clippy::too_many_arguments)]
pub fn findings_staged(
    trace: &Trace,
    overview: &Overview,
    key: Option<&crate::cache::TraceKey>,
    cancel: &AtomicBool,
    detected: &(dyn Fn(&[Finding], i64) + Sync),
    saved: &(dyn Fn(usize, Saving) + Sync),
    beside: &(dyn Fn() + Sync),
    parts: Option<TraceParts>,
) -> Option<Vec<Finding>> {
    if let Some(ranked) = key.and_then(|k| read_ranked(k, overview)) {
        return Some(ranked);
    }
    // What the replays share is built beside the detection (unused when the cache keeps
    // these replays' savings).
    let (found, prepared) = rayon::join(
        || detect(trace, overview),
        || match parts {
            Some(parts) => Prepared::from_parts(trace, parts, overview.collectives(trace)),
            None => prepare(trace, overview),
        },
    );
    detected(&found, run_span(trace));
    let savings = replay_savings_kept(
        trace, overview, &prepared, &found, cancel, saved, key, beside,
    )?;
    let ranked = finish(trace, overview, found, &savings);
    if let Some(key) = key {
        store_ranked(key, overview, &ranked);
    }
    Some(ranked)
}

fn ranked_entry(options: &crate::overview::Options) -> String {
    // Findings read the ranked lists' first entries only: `top` changes none of them.
    // "v2": the findings kept as the report writes them, the rest beside (kept.rs).
    format!("ranked findings v2 {:?}", options.kept_key())
}

/// The ranked findings an earlier run kept for an overview with these options (detection
/// and replays skipped).
pub fn read_ranked(key: &crate::cache::TraceKey, overview: &Overview) -> Option<Vec<Finding>> {
    kept::from_json(&crate::cache::read_text(
        key,
        &ranked_entry(&overview.options),
    )?)
}

/// Whether the cache keeps ranked findings of the trace with `key` for these options (then
/// neither detection nor replays run).
pub fn ranked_kept(key: &crate::cache::TraceKey, options: &crate::overview::Options) -> bool {
    crate::cache::read_text(key, &ranked_entry(options)).is_some()
}

pub fn store_ranked(key: &crate::cache::TraceKey, overview: &Overview, ranked: &[Finding]) {
    if let Some(text) = kept::to_json(ranked) {
        crate::cache::store_text(key, &ranked_entry(&overview.options), &text);
    }
}

/// [`replay_savings`] answered from the cache when these very changes of the trace with
/// `key` were replayed before (`done` is then told of each at once), else replayed and
/// kept.
#[allow(clippy::too_many_arguments)]
pub fn replay_savings_kept(
    trace: &Trace,
    overview: &Overview,
    prepared: &Prepared,
    findings: &[Finding],
    cancel: &AtomicBool,
    done: impl Fn(usize, Saving) + Sync,
    key: Option<&crate::cache::TraceKey>,
    beside: &(dyn Fn() + Sync),
) -> Option<Vec<Option<Saving>>> {
    // The entry names every change replayed: other findings, another entry.
    let what: String = std::iter::once("replayed savings".to_string())
        .chain(findings.iter().map(|f| {
            let args = |c: &Option<Change>| c.as_ref().map(|c| c.to_args().join(" "));
            format!("{:?} | {:?}", args(&f.change), args(&f.upper_change))
        }))
        .collect::<Vec<_>>()
        .join("\n");
    let kept = key
        .and_then(|k| crate::cache::read_text(k, &what))
        .and_then(|text| serde_json::from_str::<Vec<Option<Saving>>>(&text).ok())
        .filter(|v| v.len() == findings.len());
    if let Some(savings) = kept {
        for (i, s) in savings.iter().enumerate() {
            if let Some(s) = s {
                done(i, *s);
            }
        }
        return Some(savings);
    }
    let savings = replay_savings_with(trace, overview, prepared, findings, cancel, done, beside)?;
    if let (Some(key), Ok(text)) = (key, serde_json::to_string(&savings)) {
        crate::cache::store_text(key, &what, &text);
    }
    Some(savings)
}

/// The detected findings with their savings: graded, those that gain nothing dropped, the
/// idle no finding explains added, ranked.
pub fn finish(
    trace: &Trace,
    overview: &Overview,
    mut found: Vec<Finding>,
    savings: &[Option<Saving>],
) -> Vec<Finding> {
    let span = run_span(trace);
    for (f, s) in found.iter_mut().zip(savings) {
        if let Some(s) = s {
            apply_saving(f, *s, span);
        }
    }
    drop_idle_advice(&mut found);
    say_where_more_comes_from(&mut found);
    detect::device::add_unexplained_idle(trace, overview, &mut found);
    rank(&mut found);
    found
}

/// A sync's replayed saving can outgrow the idle of its own gaps: without it the CPU gets
/// ahead, and later launch gaps close too. Said where it happens, with the host-bound
/// findings that share that part (their savings are not to be added to it).
fn say_where_more_comes_from(found: &mut [Finding]) {
    let host_bound: Vec<(Vec<DeviceId>, i64)> = found
        .iter()
        .filter(|f| f.kind == Kind::HostBound)
        .map(|f| (f.devices.clone(), f.saving_ns.unwrap_or(0)))
        .collect();
    for f in found.iter_mut().filter(|f| f.kind == Kind::HostSync) {
        let own = f.explains_idle.iter().map(|e| e.1).max().unwrap_or(0);
        let Some(saving) = f.saving_ns.filter(|&s| s > own + own / 5) else {
            continue;
        };
        let shared = host_bound
            .iter()
            .filter(|(d, _)| d.iter().any(|d| f.devices.contains(d)))
            .count();
        f.detail.push_str(&format!(
            " The replay gives back {}, more than these gaps' own idle ({} on the GPU with most): with the sync gone the CPU gets ahead, so later launch gaps close and collectives wait less for the other ranks{}.",
            crate::format::format_ns(saving),
            crate::format::format_ns(own),
            if shared > 0 {
                format!(
                    " — the {} below share that part: their savings and this one are not to be added",
                    crate::format::plural(shared, "host-bound finding")
                )
            } else {
                String::new()
            }
        ));
    }
}

/// Below this share of the span a replayed change is no advice: fixing it gains nothing.
pub const NO_GAIN_PCT: f64 = 0.1;

/// Findings whose replay says fixing them would gain (next to) nothing are dropped: a tool
/// that names what does not matter is not read.
fn drop_idle_advice(found: &mut Vec<Finding>) {
    found.retain(|f| f.change.is_none() || f.saving_pct.is_some_and(|p| p >= NO_GAIN_PCT));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overview::{Options, overview};
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn changes_take_one_walk_a_thread_while_their_ends_fit_the_budget() {
        // Four changes on two threads: two walks of two, whatever the size.
        assert_eq!(changes_per_walk(4, 2, 100_000_000), 2);
        // Five: walks of three and two when one more change a walk fits…
        assert_eq!(changes_per_walk(5, 2, 4_000_000), 3);
        // …and of two (three walks) when it would not.
        assert_eq!(changes_per_walk(5, 2, 7_000_000), 2);
        assert_eq!(changes_per_walk(1, 2, 7_000_000), 1);
        assert_eq!(changes_per_walk(0, 2, 7_000_000), 1);
        assert_eq!(changes_per_walk(3, 1, 1_000), 3);
    }

    /// A healthy run: 20 steps of 100 kernels of 100 µs, launched well ahead, 1 µs apart
    /// (dispatch), and once a step a 40 µs host-bound gap: about 1 % idle, no NCCL.
    fn healthy() -> Trace {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let mut gpu = 1_000_000i64;
        let mut cpu = 0i64;
        for step in 0..20 {
            let step_start = cpu;
            for k in 0..100 {
                if k == 0 && step > 0 {
                    // The CPU fell behind once a step: the launch comes after the GPU ran dry.
                    cpu = gpu + 35_000;
                    gpu += 40_000;
                }
                let call = b.call(t, "cudaLaunchKernel", cpu, cpu + 4_000);
                let start = gpu.max(cpu + 5_000);
                b.kernel(
                    0,
                    7,
                    if k % 2 == 0 { "gemm" } else { "softmax" },
                    (start, start + 100_000),
                    Some(call),
                );
                gpu = start + 101_000;
                cpu += 30_000;
            }
            b.range(t, &format!("step_{step}"), step_start, cpu);
        }
        b.build()
    }

    #[test]
    fn a_healthy_run_gets_no_warning() {
        let trace = healthy();
        let o = overview(&trace, &Options::default());
        let b = o.devices[0].breakdown;
        let idle_pct = 100.0 * b.idle as f64 / b.total() as f64;
        assert!((0.5..2.0).contains(&idle_pct), "about 1 % idle: {idle_pct}");
        let found = findings(&trace, &o);
        for f in &found {
            assert_eq!(
                f.severity,
                Severity::Info,
                "{}: {:?}",
                f.title,
                f.saving_pct
            );
            assert!(
                f.kind != Kind::NcclSameStream && f.kind != Kind::Straggler,
                "no communication finding without NCCL"
            );
        }
    }

    #[test]
    fn severity_comes_from_the_share_of_the_span() {
        assert_eq!(Severity::of_saving(0.9), Severity::Info);
        assert_eq!(Severity::of_saving(3.0), Severity::Warning);
        assert_eq!(Severity::of_saving(9.99), Severity::Warning);
        assert_eq!(Severity::of_saving(10.0), Severity::Critical);
    }
}
