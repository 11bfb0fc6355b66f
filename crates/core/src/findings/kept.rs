//! Ranked findings as the cache keeps them: every field, the skipped-by-the-report ones
//! included, with each change as its `what-if` arguments.

use serde::{Deserialize, Serialize};

use super::{Finding, Kind, Severity, Where};
use crate::trace::DeviceId;
use crate::whatif::Change;

#[derive(Serialize, Deserialize)]
struct KeptFinding {
    kind: Kind,
    severity: Severity,
    title: String,
    detail: String,
    devices: Vec<DeviceId>,
    saving_ns: Option<i64>,
    saving_pct: Option<f64>,
    upper_bound_ns: Option<i64>,
    what_if: Vec<String>,
    first: Option<(Option<DeviceId>, i64, i64)>,
    occurrences: Vec<(Option<DeviceId>, i64, i64)>,
    change: Option<Vec<String>>,
    upper_change: Option<Vec<String>>,
    explains_idle: Vec<(DeviceId, i64)>,
    info_only: bool,
}

fn place(w: &Where) -> (Option<DeviceId>, i64, i64) {
    (w.device, w.start_ns, w.end_ns)
}

fn unplace((device, start_ns, end_ns): (Option<DeviceId>, i64, i64)) -> Where {
    Where {
        device,
        start_ns,
        end_ns,
    }
}

pub fn to_json(findings: &[Finding]) -> Option<String> {
    let kept: Vec<KeptFinding> = findings
        .iter()
        .map(|f| KeptFinding {
            kind: f.kind,
            severity: f.severity,
            title: f.title.clone(),
            detail: f.detail.clone(),
            devices: f.devices.clone(),
            saving_ns: f.saving_ns,
            saving_pct: f.saving_pct,
            upper_bound_ns: f.upper_bound_ns,
            what_if: f.what_if.clone(),
            first: f.first.as_ref().map(place),
            occurrences: f.occurrences.iter().map(place).collect(),
            change: f.change.as_ref().map(Change::to_args),
            upper_change: f.upper_change.as_ref().map(Change::to_args),
            explains_idle: f.explains_idle.clone(),
            info_only: f.info_only,
        })
        .collect();
    serde_json::to_string(&kept).ok()
}

/// The findings back from [`to_json`]'s text; `None` when any does not read back.
pub fn from_json(text: &str) -> Option<Vec<Finding>> {
    let kept: Vec<KeptFinding> = serde_json::from_str(text).ok()?;
    let change = |args: Option<Vec<String>>| -> Option<Option<Change>> {
        match args {
            None => Some(None),
            Some(a) => Change::from_args(&a).ok().map(Some),
        }
    };
    kept.into_iter()
        .map(|k| {
            Some(Finding {
                kind: k.kind,
                group: k.kind.group(),
                severity: k.severity,
                title: k.title,
                detail: k.detail,
                devices: k.devices,
                saving_ns: k.saving_ns,
                saving_pct: k.saving_pct,
                upper_bound_ns: k.upper_bound_ns,
                what_if: k.what_if,
                first: k.first.map(unplace),
                occurrences: k.occurrences.into_iter().map(unplace).collect(),
                change: change(k.change)?,
                upper_change: change(k.upper_change)?,
                explains_idle: k.explains_idle,
                info_only: k.info_only,
            })
        })
        .collect()
}
