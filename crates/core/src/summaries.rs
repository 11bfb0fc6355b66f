//! Per-rank `report --json` summaries read back: when a job has too many ranks to load in
//! one window, each rank's report runs where its file is (a Slurm array), and the window
//! opens the small JSON files side by side, one row per GPU, the slowest first.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One GPU of one rank's report.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRow {
    /// The JSON file, and the export it summarises (to open it).
    pub summary: PathBuf,
    pub export: PathBuf,
    pub device: String,
    pub median_ns: Option<i64>,
    /// The slowest steady iteration: (index, duration).
    pub slowest: Option<(usize, i64)>,
    pub idle_pct: f64,
    pub nccl_pct: f64,
    /// Share of its NCCL time spent waiting for the last rank.
    pub nccl_wait_pct: Option<f64>,
}

fn pct(part: i64, all: i64) -> f64 {
    if all > 0 {
        100.0 * part as f64 / all as f64
    } else {
        0.0
    }
}

/// The rows of one `report --json` output.
pub fn rows_of(summary: &Path, v: &Value) -> Result<Vec<RankRow>, String> {
    let devices = v["devices"].as_array().ok_or_else(|| {
        format!(
            "{}: not a `report --json` output (no devices)",
            summary.display()
        )
    })?;
    let export = match &v["file"] {
        Value::String(f) => PathBuf::from(f),
        _ => PathBuf::new(),
    };
    let same = |a: &Value, b: &Value| a == b;
    let mut rows = Vec::new();
    for d in devices {
        let id = &d["id"];
        let b = &d["breakdown_ns"];
        let part = |k: &str| b[k].as_i64().unwrap_or(0);
        let total: i64 = [
            "compute_only",
            "nccl_only",
            "overlap",
            "memory_only",
            "idle",
        ]
        .iter()
        .map(|k| part(k))
        .sum();
        let its = v["iterations"]["per_device"]
            .as_array()
            .and_then(|a| a.iter().find(|x| same(&x["device"], id)));
        let median_ns = its
            .filter(|x| !x["median_index"].is_null())
            .and_then(|x| x["median_ns"].as_i64());
        let slowest = its.and_then(|x| {
            let k = x["slowest_index"].as_u64()? as usize;
            Some((k, x["durations_ns"].get(k)?.as_i64()?))
        });
        let wait = v["nccl_wait"]["per_device"]
            .as_array()
            .and_then(|a| a.iter().find(|x| same(&x["device"], id)))
            .filter(|x| x["collectives"].as_u64().unwrap_or(0) > 0)
            .map(|x| {
                let w = x["wait_ns"].as_i64().unwrap_or(0);
                pct(w, w + x["transfer_ns"].as_i64().unwrap_or(0))
            });
        rows.push(RankRow {
            summary: summary.to_path_buf(),
            export: export.clone(),
            device: match id {
                Value::String(s) => s.clone(),
                other => format!("GPU {other}"),
            },
            median_ns,
            slowest,
            idle_pct: pct(part("idle"), total),
            nccl_pct: pct(part("nccl_only") + part("overlap"), total),
            nccl_wait_pct: wait,
        });
    }
    Ok(rows)
}

/// Every GPU of every summary, the slowest median iteration first.
pub fn read_summaries(paths: &[PathBuf]) -> Result<Vec<RankRow>, String> {
    let mut rows = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: not JSON ({e})", p.display()))?;
        rows.extend(rows_of(p, &v)?);
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.median_ns.unwrap_or(0)));
    Ok(rows)
}

/// Whether every path is a JSON file (a folder of them counts).
pub fn are_summaries(paths: &[PathBuf]) -> bool {
    !paths.is_empty()
        && paths.iter().all(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        })
}
