//! Jobs of many ranks, map-reduce: each export summarised where it is (`summarize`, run by
//! a Slurm array or `xargs -P` on the cluster), the small summaries reduced into one job
//! on a laptop (`report DIR/*.summary`). A `report` over many exports goes the same way,
//! one export at a time (`session::rank_summaries`), so that its memory does not grow with
//! the ranks.

pub mod file;
pub mod reduce;
pub mod summary;
pub mod tables;
mod text;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use file::{
    FileIdentity, read as read_summary, summary_names, summary_path, write as write_summary,
};
pub use reduce::{Job, reduce};
pub use summary::{RankSummary, summarize};
pub use text::text;

/// The summaries' extension.
pub const EXTENSION: &str = "summary";

/// Whether `path` names a summary (by its extension).
pub fn is_summary(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == EXTENSION)
}

/// The summaries at `paths`, read in parallel; the first that cannot be read (another
/// version, damaged, its export changed) fails them all, with its reason.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<(PathBuf, RankSummary)>, String> {
    paths
        .par_iter()
        .map(|p| read_summary(p).map(|s| (p.clone(), s)))
        .collect()
}
