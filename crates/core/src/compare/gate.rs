//! `diff --fail-if-slower PCT`: is the after run slower than the before run, beyond the
//! threshold and beyond the runs' own noise? The measure is the step time (each iteration's
//! slowest GPU, its median over the steady iterations), or the span without iterations; the
//! noise is the steady iterations' spread (interquartile range over the median), the larger
//! of the two runs'. A noise larger than the threshold makes any verdict a coin toss:
//! inconclusive.

use serde::Serialize;

use super::Run;
use crate::sorted::median;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Slower,
    NotSlower,
    Inconclusive,
}

#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    pub verdict: Verdict,
    /// `median_iteration` (step time) or `span` (no iterations in a run).
    pub measure: &'static str,
    pub before_ns: i64,
    pub after_ns: i64,
    /// After against before, in percent (positive: slower).
    pub change_pct: f64,
    /// The larger of the two runs' iteration spreads, in percent of their medians (0 for
    /// spans: one figure, no spread).
    pub noise_pct: f64,
    pub threshold_pct: f64,
    /// The verdict in words.
    pub reason: String,
}

/// A run's step time and its spread (percent), or `None` without iterations.
fn step_time(run: &Run) -> Option<(i64, f64)> {
    let its = &run.overview.iterations;
    let warmup = its.per_device.iter().map(|d| d.warmup).max().unwrap_or(0);
    // Iteration k's time: its slowest GPU's (the ranks wait for one another).
    let steps: Vec<i64> = (warmup..its.count())
        .filter_map(|k| {
            its.per_device
                .iter()
                .filter_map(|d| d.durations_ns.get(k).copied())
                .max()
        })
        .collect();
    if steps.len() < 3 {
        return None;
    }
    let mut sorted = steps.clone();
    sorted.sort_unstable();
    let q = |p: usize| sorted[(sorted.len() - 1) * p / 4];
    let m = median(&steps);
    let spread = if m > 0 {
        100.0 * (q(3) - q(1)) as f64 / m as f64
    } else {
        0.0
    };
    Some((m, spread))
}

pub fn gate(before: &Run, after: &Run, threshold_pct: f64) -> Gate {
    let (measure, (b, bn), (a, an)) = match (step_time(before), step_time(after)) {
        (Some(b), Some(a)) => ("median_iteration", b, a),
        _ => (
            "span",
            (crate::trace::run_span(before.trace), 0.0),
            (crate::trace::run_span(after.trace), 0.0),
        ),
    };
    let change_pct = if b > 0 {
        100.0 * (a - b) as f64 / b as f64
    } else {
        0.0
    };
    let noise_pct = bn.max(an);
    let what = if measure == "span" {
        "the span"
    } else {
        "the median step"
    };
    let (verdict, reason) = if noise_pct > threshold_pct {
        (
            Verdict::Inconclusive,
            format!(
                "inconclusive: the runs' own iterations spread {noise_pct:.1} %, more than the {threshold_pct} % asked; {what} changed {change_pct:+.1} %"
            ),
        )
    } else if change_pct > threshold_pct && change_pct > noise_pct {
        (
            Verdict::Slower,
            format!(
                "slower: {what} grew {change_pct:+.1} %, past the {threshold_pct} % allowed and the runs' spread of {noise_pct:.1} %"
            ),
        )
    } else {
        (
            Verdict::NotSlower,
            format!(
                "not slower: {what} changed {change_pct:+.1} % (allowed {threshold_pct} %, the runs' spread {noise_pct:.1} %)"
            ),
        )
    };
    Gate {
        verdict,
        measure,
        before_ns: b,
        after_ns: a,
        change_pct,
        noise_pct,
        threshold_pct,
        reason,
    }
}
