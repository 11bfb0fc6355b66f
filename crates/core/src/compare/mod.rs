//! Two runs of the same job, before and after a change, analysed with the same definitions
//! and set side by side: per GPU the median iteration and where its time went (the parts add
//! up to the iteration's delta, so a faster kernel whose saving moved into idle reads as
//! such), kernels by name, recurring gap patterns, and a verdict in words.

pub mod gate;
pub mod report;

use std::collections::HashMap;
use std::path::Path;

use crate::analysis::breakdown::{Breakdown, breakdown};
use crate::analysis::gaps::{Cause, Gap};
use crate::analysis::intervals::Window;
use crate::overview::Overview;
use crate::trace::{DeviceId, Trace};

/// One run: its file, trace and analyses.
pub struct Run<'a> {
    pub path: &'a Path,
    pub trace: &'a Trace,
    pub overview: &'a Overview,
}

/// Idle time by the cause of the gap it belongs to, and idle too short to be a gap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleByCause {
    pub host_sync: i64,
    /// In the run of just-in-time launches after a sync emptied the queue.
    pub after_sync: i64,
    pub host_bound: i64,
    pub dependency: i64,
    pub unknown: i64,
    /// Idle in stretches shorter than the shortest gap counted: no cause is given to them.
    pub under_min_gap: i64,
}

impl IdleByCause {
    pub fn minus(&self, o: &IdleByCause) -> IdleByCause {
        IdleByCause {
            host_sync: self.host_sync - o.host_sync,
            after_sync: self.after_sync - o.after_sync,
            host_bound: self.host_bound - o.host_bound,
            dependency: self.dependency - o.dependency,
            unknown: self.unknown - o.unknown,
            under_min_gap: self.under_min_gap - o.under_min_gap,
        }
    }

    pub fn total(&self) -> i64 {
        self.host_sync
            + self.after_sync
            + self.host_bound
            + self.dependency
            + self.unknown
            + self.under_min_gap
    }

    /// (label, value) in a fixed order, for tables and JSON.
    pub fn parts(&self) -> [(&'static str, i64); 6] {
        [
            ("host_sync", self.host_sync),
            ("after_sync", self.after_sync),
            ("host_bound", self.host_bound),
            ("dependency", self.dependency),
            ("unknown", self.unknown),
            ("under_min_gap", self.under_min_gap),
        ]
    }
}

/// A stretch of one GPU's time in one run: the median iteration, or the whole run.
#[derive(Debug, Clone, Copy)]
pub struct Stretch {
    /// The iteration's index (0 for the whole run).
    pub index: usize,
    pub span: Window,
    pub breakdown: Breakdown,
    pub idle: IdleByCause,
}

/// After minus before, part by part (compute only, NCCL only, overlap, memory only, idle):
/// sums to the difference of the two stretches' lengths.
pub fn breakdown_delta(before: &Stretch, after: &Stretch) -> [(&'static str, i64); 5] {
    let (b, a) = (before.breakdown, after.breakdown);
    [
        ("compute_only", a.compute_only - b.compute_only),
        ("nccl_only", a.nccl_only - b.nccl_only),
        ("overlap", a.overlap - b.overlap),
        ("memory_only", a.memory_only - b.memory_only),
        ("idle", a.idle - b.idle),
    ]
}

/// One GPU in both runs.
#[derive(Debug, Clone)]
pub struct DeviceDiff {
    pub device: DeviceId,
    /// The device it is paired with in the after run (the same id, or the same position).
    pub after_device: DeviceId,
    /// The median steady-state iteration in each run.
    pub before: Option<Stretch>,
    pub after: Option<Stretch>,
    /// The whole run on this GPU (first op start to last op end): time saved between
    /// iterations (a sync after each step, say) shows here, not in the iterations.
    pub before_run: Option<Stretch>,
    pub after_run: Option<Stretch>,
}

impl DeviceDiff {
    pub fn before_median_ns(&self) -> Option<i64> {
        self.before.map(|m| m.span.len())
    }

    pub fn after_median_ns(&self) -> Option<i64> {
        self.after.map(|m| m.span.len())
    }

    pub fn delta_ns(&self) -> Option<i64> {
        Some(self.after_median_ns()? - self.before_median_ns()?)
    }

    /// After minus before, part by part (compute only, NCCL only, overlap, memory only,
    /// idle): sums to [`Self::delta_ns`].
    pub fn breakdown_delta(&self) -> Option<[(&'static str, i64); 5]> {
        Some(breakdown_delta(self.before.as_ref()?, self.after.as_ref()?))
    }

    /// After minus before, idle by cause: sums to the idle part of [`Self::breakdown_delta`].
    pub fn idle_delta(&self) -> Option<IdleByCause> {
        Some(self.after?.idle.minus(&self.before?.idle))
    }

    /// The whole run's span, after minus before.
    pub fn run_delta_ns(&self) -> Option<i64> {
        Some(self.after_run?.span.len() - self.before_run?.span.len())
    }

    pub fn run_breakdown_delta(&self) -> Option<[(&'static str, i64); 5]> {
        Some(breakdown_delta(
            self.before_run.as_ref()?,
            self.after_run.as_ref()?,
        ))
    }

    pub fn run_idle_delta(&self) -> Option<IdleByCause> {
        Some(self.after_run?.idle.minus(&self.before_run?.idle))
    }
}

/// One kernel name in both runs (all GPUs together).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelDiff {
    pub name: String,
    pub before_count: usize,
    pub after_count: usize,
    pub before_total_ns: i64,
    pub after_total_ns: i64,
}

impl KernelDiff {
    pub fn delta_ns(&self) -> i64 {
        self.after_total_ns - self.before_total_ns
    }
}

/// One recurring gap pattern in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternDiff {
    pub signature: String,
    pub before_count: usize,
    pub after_count: usize,
    pub before_total_ns: i64,
    pub after_total_ns: i64,
}

impl PatternDiff {
    pub fn delta_ns(&self) -> i64 {
        self.after_total_ns - self.before_total_ns
    }
}

pub struct Comparison {
    pub before_iterations: usize,
    pub after_iterations: usize,
    pub devices: Vec<DeviceDiff>,
    /// Largest |delta| first.
    pub kernels: Vec<KernelDiff>,
    /// Largest |delta| first.
    pub patterns: Vec<PatternDiff>,
    /// What could not be compared, and why.
    pub warnings: Vec<String>,
}

/// Compares `before` with `after`. GPUs are paired by id when both runs have the same ids,
/// else by position; iterations by index (each run's own median iteration is compared,
/// so a different number of iterations still compares).
pub fn compare(before: &Run, after: &Run) -> Comparison {
    let mut warnings = Vec::new();
    let (bt, at) = (before.trace, after.trace);
    if bt.devices.len() != at.devices.len() {
        warnings.push(format!(
            "the runs have different GPU counts ({} before, {} after): only GPUs with the same id are compared",
            bt.devices.len(),
            at.devices.len()
        ));
    }
    let same_ids = bt.devices.len() == at.devices.len()
        && bt.devices.iter().all(|d| at.device(d.id).is_some());
    let pairs: Vec<(usize, usize)> = if same_ids || bt.devices.len() != at.devices.len() {
        bt.devices
            .iter()
            .enumerate()
            .filter_map(|(i, d)| Some((i, at.device_index(d.id)?.0)))
            .collect()
    } else {
        warnings.push("the runs' GPU ids differ: GPUs are paired in order".to_string());
        (0..bt.devices.len()).map(|i| (i, i)).collect()
    };
    let (bi, ai) = (&before.overview.iterations, &after.overview.iterations);
    if bi.count() == 0 || ai.count() == 0 {
        warnings.push(format!(
            "no iterations found in {}: per-GPU iteration times are not compared (the whole runs are)",
            match (bi.count(), ai.count()) {
                (0, 0) => "either run",
                (0, _) => "the before run",
                _ => "the after run",
            }
        ));
    } else if bi.marker != ai.marker {
        warnings.push(format!(
            "the runs' iterations come from different markers ({} before, {} after)",
            bi.marker.as_deref().unwrap_or("none"),
            ai.marker.as_deref().unwrap_or("none")
        ));
    }
    let devices = pairs
        .into_iter()
        .map(|(b, a)| {
            let (bd, ad) = (&bt.devices[b], &at.devices[a]);
            DeviceDiff {
                device: bd.id,
                after_device: ad.id,
                before: median_iteration(before, bd.id),
                after: median_iteration(after, ad.id),
                before_run: whole_run(before, bd.id),
                after_run: whole_run(after, ad.id),
            }
        })
        .collect();
    Comparison {
        before_iterations: bi.count(),
        after_iterations: ai.count(),
        devices,
        kernels: kernel_diffs(before.overview, after.overview),
        patterns: pattern_diffs(before.overview, after.overview),
        warnings,
    }
}

/// The median steady-state iteration of GPU `device`: its span, breakdown and idle by cause.
pub fn median_iteration(run: &Run, device: DeviceId) -> Option<Stretch> {
    let its = run
        .overview
        .iterations
        .per_device
        .iter()
        .find(|d| d.device == device)?;
    let index = its.median_index?;
    let span = its.spans.get(index).copied().flatten()?;
    let dev = run.trace.device(device)?;
    let b = breakdown(dev, span);
    let idle = idle_by_cause(&run.overview.gaps, device, span, b.idle);
    Some(Stretch {
        index,
        span,
        breakdown: b,
        idle,
    })
}

/// GPU `device`'s whole run as the analyses saw it (its window, breakdown and gaps).
pub fn whole_run(run: &Run, device: DeviceId) -> Option<Stretch> {
    let summary = run.overview.devices.iter().find(|d| d.device == device)?;
    let idle = idle_by_cause(
        &run.overview.gaps,
        device,
        summary.window,
        summary.breakdown.idle,
    );
    Some(Stretch {
        index: 0,
        span: summary.window,
        breakdown: summary.breakdown,
        idle,
    })
}

/// The idle time of `window` on GPU `device` split by the cause of the gaps it lies in;
/// what no gap covers (stretches shorter than the minimum gap) apart.
pub fn idle_by_cause(gaps: &[Gap], device: DeviceId, window: Window, idle_ns: i64) -> IdleByCause {
    let mut out = IdleByCause::default();
    for g in gaps.iter().filter(|g| g.device_id() == device) {
        let overlap = g.end_ns().min(window.end) - g.start_ns.max(window.start);
        if overlap <= 0 {
            continue;
        }
        match g.cause {
            Cause::HostSync => out.host_sync += overlap,
            Cause::AfterSync => out.after_sync += overlap,
            Cause::HostBound => out.host_bound += overlap,
            Cause::Dependency => out.dependency += overlap,
            Cause::Unknown => out.unknown += overlap,
        }
    }
    out.under_min_gap = idle_ns - out.total();
    out
}

fn kernel_diffs(before: &Overview, after: &Overview) -> Vec<KernelDiff> {
    let mut by_name: HashMap<&str, KernelDiff> = HashMap::new();
    let blank = |name: &str| KernelDiff {
        name: name.to_string(),
        before_count: 0,
        after_count: 0,
        before_total_ns: 0,
        after_total_ns: 0,
    };
    for k in &before.kernels {
        let d = by_name.entry(&k.name).or_insert_with(|| blank(&k.name));
        d.before_count += k.count;
        d.before_total_ns += k.total_ns;
    }
    for k in &after.kernels {
        let d = by_name.entry(&k.name).or_insert_with(|| blank(&k.name));
        d.after_count += k.count;
        d.after_total_ns += k.total_ns;
    }
    let mut out: Vec<KernelDiff> = by_name.into_values().collect();
    out.sort_by(|a, b| {
        b.delta_ns()
            .abs()
            .cmp(&a.delta_ns().abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

fn pattern_diffs(before: &Overview, after: &Overview) -> Vec<PatternDiff> {
    let mut by_sig: HashMap<&str, PatternDiff> = HashMap::new();
    let blank = |sig: &str| PatternDiff {
        signature: sig.to_string(),
        before_count: 0,
        after_count: 0,
        before_total_ns: 0,
        after_total_ns: 0,
    };
    for p in &before.recurring {
        let d = by_sig
            .entry(&p.signature)
            .or_insert_with(|| blank(&p.signature));
        d.before_count += p.count;
        d.before_total_ns += p.total_ns;
    }
    for p in &after.recurring {
        let d = by_sig
            .entry(&p.signature)
            .or_insert_with(|| blank(&p.signature));
        d.after_count += p.count;
        d.after_total_ns += p.total_ns;
    }
    let mut out: Vec<PatternDiff> = by_sig.into_values().collect();
    out.sort_by(|a, b| {
        b.delta_ns()
            .abs()
            .cmp(&a.delta_ns().abs())
            .then_with(|| a.signature.cmp(&b.signature))
    });
    out
}
