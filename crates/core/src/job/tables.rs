//! A rank summary as flat tables (`summarize --format parquet`), so that Spark or DuckDB
//! can run the cross-rank query themselves: `collectives`, `iterations`, `gpus`, `gaps`.
//! Times are ns on the export's own clock (add `utc_start_ns` for the wall clock).

use std::sync::Arc;

use super::summary::{CollectiveColumn, CollectiveColumns, NO_TEXT, RankSummary};
use crate::tables::{Column, Table};

/// The tables' names, as the files are named (`STEM.NAME.parquet`).
pub const NAMES: [&str; 4] = ["collectives", "iterations", "gpus", "gaps"];

/// A column of a summary's names (its strings, [`NO_TEXT`] for none).
fn names(ids: impl Iterator<Item = u32>, texts: &Arc<Vec<String>>) -> Column {
    Column::Names {
        ids: ids
            .map(|i| if i == NO_TEXT { -1 } else { i as i32 })
            .collect(),
        texts: texts.clone(),
    }
}

/// The table `name` of `summary` (see [`NAMES`]).
pub fn table(summary: &RankSummary, name: &str) -> Option<Table> {
    Some(match name {
        "collectives" => collectives(summary),
        "iterations" => iterations(summary),
        "gpus" => gpus(summary),
        "gaps" => gaps(summary),
        _ => return None,
    })
}

/// Every GPU's collectives, a row each: the device, `start_ns`, then the columns as
/// [`CollectiveColumns::columns`] lists them.
fn collectives(s: &RankSummary) -> Table {
    let texts = Arc::new(s.strings.clone());
    let device = s
        .gpus
        .iter()
        .flat_map(|g| std::iter::repeat_n(g.device as i32, g.collectives.len()))
        .collect();
    // Copies, as `columns` lends them to be read or written alike (a summary is small);
    // the list's names and kinds from an empty one, so that a rank without NCCL has them.
    let mut gpus: Vec<CollectiveColumns> = s.gpus.iter().map(|g| g.collectives.clone()).collect();
    let start = gpus.iter().flat_map(|c| c.start.iter().copied()).collect();
    let mut listed = CollectiveColumns::default();
    let (_, list) = listed.columns();
    let per_gpu: Vec<_> = gpus.iter_mut().map(|c| c.columns().1).collect();
    let mut columns = vec![
        ("device", Column::I32(device)),
        ("start_ns", Column::I64(start)),
    ];
    for (k, (name, kind)) in list.iter().enumerate() {
        let parts = || per_gpu.iter().map(move |gpu| &gpu[k].1);
        let column = match kind {
            CollectiveColumn::Name(_) => {
                names(parts().flat_map(|p| p.ids().iter().copied()), &texts)
            }
            _ => Column::I64(parts().flat_map(CollectiveColumn::values).collect()),
        };
        columns.push((*name, column));
    }
    Table { columns }
}

/// Every GPU's iterations, a row each (-1 where a time is not known).
fn iterations(s: &RankSummary) -> Table {
    let rows = || {
        s.gpus.iter().flat_map(|g| {
            g.iteration_durations_ns
                .iter()
                .enumerate()
                .map(move |(k, &d)| (g, k, d))
        })
    };
    let span =
        |k: usize, g: &super::summary::GpuSummary| g.iteration_spans.get(k).copied().flatten();
    Table {
        columns: vec![
            (
                "device",
                Column::I32(rows().map(|r| r.0.device as i32).collect()),
            ),
            (
                "iteration",
                Column::I64(rows().map(|r| r.1 as i64).collect()),
            ),
            (
                "start_ns",
                Column::I64(rows().map(|r| span(r.1, r.0).map_or(-1, |w| w.0)).collect()),
            ),
            (
                "end_ns",
                Column::I64(rows().map(|r| span(r.1, r.0).map_or(-1, |w| w.1)).collect()),
            ),
            ("duration_ns", Column::I64(rows().map(|r| r.2).collect())),
            (
                "warmup",
                Column::Bool(rows().map(|r| r.1 < r.0.iteration_warmup).collect()),
            ),
        ],
    }
}

/// A row a GPU: its window and where its time went.
fn gpus(s: &RankSummary) -> Table {
    let utc = s.utc_start_ns.unwrap_or(-1);
    let b = |f: &dyn Fn(&crate::analysis::breakdown::Breakdown) -> i64| {
        Column::I64(s.gpus.iter().map(|g| f(&g.breakdown_ns)).collect())
    };
    Table {
        columns: vec![
            (
                "device",
                Column::I32(s.gpus.iter().map(|g| g.device as i32).collect()),
            ),
            (
                "model",
                Column::of_texts(s.gpus.iter().map(|g| g.model.clone())),
            ),
            ("utc_start_ns", Column::I64(vec![utc; s.gpus.len()])),
            (
                "window_start_ns",
                Column::I64(s.gpus.iter().map(|g| g.window_ns.0).collect()),
            ),
            (
                "window_end_ns",
                Column::I64(s.gpus.iter().map(|g| g.window_ns.1).collect()),
            ),
            ("compute_only_ns", b(&|b| b.compute_only)),
            ("nccl_only_ns", b(&|b| b.nccl_only)),
            ("overlap_ns", b(&|b| b.overlap)),
            ("memory_only_ns", b(&|b| b.memory_only)),
            ("idle_ns", b(&|b| b.idle)),
            (
                "iteration_median_ns",
                Column::I64(s.gpus.iter().map(|g| g.iteration_median_ns).collect()),
            ),
        ],
    }
}

/// Every GPU's longest gaps, a row each.
fn gaps(s: &RankSummary) -> Table {
    let rows = || {
        s.gpus
            .iter()
            .flat_map(|g| g.top_gaps.iter().map(move |x| (g.device, x)))
    };
    Table {
        columns: vec![
            ("device", Column::I32(rows().map(|r| r.0 as i32).collect())),
            (
                "start_ns",
                Column::I64(rows().map(|r| r.1.start_ns).collect()),
            ),
            (
                "duration_ns",
                Column::I64(rows().map(|r| r.1.duration_ns).collect()),
            ),
            (
                "cause",
                Column::of_texts(rows().map(|r| Some(r.1.cause.clone()))),
            ),
            (
                "before",
                Column::of_texts(rows().map(|r| Some(r.1.before.clone()))),
            ),
            (
                "after",
                Column::of_texts(rows().map(|r| Some(r.1.after.clone()))),
            ),
            ("nvtx", Column::of_texts(rows().map(|r| r.1.nvtx.clone()))),
        ],
    }
}
