//! Ranked findings as the cache keeps them: the fields the report shows as the report
//! writes them, and beside them those it does not (`#[serde(skip)]` in [`Finding`]), each
//! change as its `what-if` arguments.

use serde::{Deserialize, Serialize};

use super::{Finding, Where};
use crate::trace::DeviceId;
use crate::whatif::Change;

/// What the report leaves out of a finding.
#[derive(Serialize, Deserialize)]
struct Unshown {
    devices: Vec<DeviceId>,
    first_device: Option<DeviceId>,
    occurrences: Vec<(Option<DeviceId>, i64, i64)>,
    change: Option<Vec<String>>,
    upper_change: Option<Vec<String>>,
    explains_idle: Vec<(DeviceId, i64)>,
    info_only: bool,
}

#[derive(Serialize)]
struct KeptRef<'a> {
    #[serde(flatten)]
    shown: &'a Finding,
    unshown: Unshown,
}

#[derive(Deserialize)]
struct Kept {
    #[serde(flatten)]
    shown: Finding,
    unshown: Unshown,
}

pub fn to_json(findings: &[Finding]) -> Option<String> {
    let kept: Vec<KeptRef> = findings
        .iter()
        .map(|f| KeptRef {
            shown: f,
            unshown: Unshown {
                devices: f.devices.clone(),
                first_device: f.first.and_then(|w| w.device),
                occurrences: f
                    .occurrences
                    .iter()
                    .map(|w| (w.device, w.start_ns, w.end_ns))
                    .collect(),
                change: f.change.as_ref().map(Change::to_args),
                upper_change: f.upper_change.as_ref().map(Change::to_args),
                explains_idle: f.explains_idle.clone(),
                info_only: f.info_only,
            },
        })
        .collect();
    serde_json::to_string(&kept).ok()
}

/// The findings back from [`to_json`]'s text; `None` when any does not read back.
pub fn from_json(text: &str) -> Option<Vec<Finding>> {
    let kept: Vec<Kept> = serde_json::from_str(text).ok()?;
    let change = |args: Option<Vec<String>>| -> Option<Option<Change>> {
        match args {
            None => Some(None),
            Some(a) => Change::from_args(&a).ok().map(Some),
        }
    };
    kept.into_iter()
        .map(|Kept { shown, unshown: u }| {
            Some(Finding {
                group: shown.kind.group(),
                devices: u.devices,
                first: shown.first.map(|w| Where {
                    device: u.first_device,
                    ..w
                }),
                occurrences: u
                    .occurrences
                    .into_iter()
                    .map(|(device, start_ns, end_ns)| Where {
                        device,
                        start_ns,
                        end_ns,
                    })
                    .collect(),
                change: change(u.change)?,
                upper_change: change(u.upper_change)?,
                explains_idle: u.explains_idle,
                info_only: u.info_only,
                ..shown
            })
        })
        .collect()
}
