//! The CPU samples and their stacks, read after the rest of the trace. Their chains are the
//! biggest table of an export that has them (a row per frame of every sample), bigger than
//! kernels, API calls and NVTX together, and nothing on the timeline needs them: the load
//! hands the trace over, and a thread of its own reads `COMPOSITE_EVENTS` and
//! `SAMPLING_CALLCHAINS` into the tree the OS runtime backtraces began, then fills the
//! trace's [`StacksSlot`]. Whoever asks for the stacks meanwhile waits (`Trace::stacks`),
//! or, drawing a frame, shows that they are on their way.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use rustc_hash::FxHashMap as HashMap;

use super::scan::{self, ScanContext, TablePlan};
use super::schema::Schema;
use super::small_tables::IdMap;
use super::stacks::{self, StackMerger};
use super::{ChunkOut, LoadError, Task, pages, read_merging, sniff};
use crate::trace::{CallStacks, StacksRead, StacksSlot};

/// What the read needs from the load.
pub struct Pending {
    pub path: PathBuf,
    /// The file as the load saw it: a file changed since is not read.
    pub bytes: u64,
    pub modified: Option<SystemTime>,
    /// Read through pages where SQLite's leaves allow (as the load did).
    pub pages: bool,
    /// The tree so far (the OS runtime calls' backtraces).
    pub merger: StackMerger,
    /// nsys string id → the trace's string id.
    pub ids: IdMap,
    /// Global thread id → name.
    pub thread_names: HashMap<i64, String>,
}

/// Starts reading on a thread of its own; the slot is filled when it ends, with the error
/// in [`StacksRead::error`] if it failed (a trace dropped meanwhile stops it).
pub fn spawn(pending: Pending) -> StacksSlot {
    let slot = StacksSlot::pending();
    let filled = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("call stacks".into())
        .spawn(move || fill(&filled, pending));
    if let Err(e) = spawned {
        let mut stacks = CallStacks::default();
        stacks.read.error = Some(format!("no thread to read the call stacks on: {e}"));
        slot.set(stacks);
    }
    slot
}

fn fill(slot: &StacksSlot, pending: Pending) {
    let t0 = Instant::now();
    let cancel = AtomicBool::new(false);
    // Its own pool: threads of the global one may be the very ones waiting on the slot.
    let read = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("call stacks {i}"))
        .build()
        .map_err(|e| e.to_string())
        .and_then(|pool| {
            pool.install(|| read(pending, slot, &cancel))
                .map_err(|e| e.to_string())
        });
    let mut stacks = read.unwrap_or_else(|error| CallStacks {
        read: StacksRead {
            error: Some(error),
            ..Default::default()
        },
        ..Default::default()
    });
    stacks.read.seconds = t0.elapsed().as_secs_f64();
    slot.set(stacks);
}

/// Reads the samples and their chains now (the load's own thread, or [`spawn`]'s).
fn read(pending: Pending, slot: &StacksSlot, cancel: &AtomicBool) -> Result<CallStacks, LoadError> {
    let Pending {
        path,
        bytes,
        modified,
        pages,
        mut merger,
        ids,
        thread_names,
    } = pending;
    let path = path.as_path();
    if !unchanged(path, bytes, modified) {
        return Err(LoadError::Corrupt {
            path: path.to_owned(),
            detail: "the file changed since it was loaded: open it again to see its call stacks"
                .into(),
        });
    }
    let conn = sniff::open_read_only(path)?;
    let schema = Schema::read(&conn, path)?;
    let db = if pages {
        pages::DbFile::open(path).map_err(|e| super::io_error(path, e))?
    } else {
        None
    };
    let mut plans: Vec<TablePlan> = Vec::new();
    let mut tasks = Vec::new();
    for table in [stacks::SAMPLING_CALLCHAINS, stacks::SAMPLES] {
        let plan = scan::plan(
            &conn,
            db.as_ref(),
            &schema,
            path,
            table,
            stacks::columns(table),
            &[],
        )?;
        tasks.extend(plan.spans.iter().map(|&span| Task {
            plan: plans.len(),
            span,
        }));
        plans.push(plan);
    }
    // Stops once nobody holds the trace.
    let progress = |_| {
        if slot.abandoned() {
            cancel.store(true, Ordering::Relaxed);
        }
    };
    let ctx = ScanContext {
        path,
        db: db.as_ref(),
        cancel,
        rows_read: AtomicU64::new(0),
        rows_expected: plans.iter().map(|p| p.rows).sum(),
        progress: &progress,
    };
    let read_one = |task: &Task| -> Result<ChunkOut, LoadError> {
        ctx.check_cancel()?;
        let conn = sniff::open_read_only(path)?;
        let plan = &plans[task.plan];
        Ok(match plan.table {
            stacks::SAMPLES => {
                ChunkOut::Samples(stacks::read_samples(&ctx, &conn, plan, task.span)?)
            }
            _ => ChunkOut::Chains(Box::new(stacks::read_chains(
                &ctx, &conn, plan, &ids, task.span,
            )?)),
        })
    };
    let mut rows = [0u64; 2];
    read_merging(&tasks, &read_one, |out| match out {
        ChunkOut::Chains(chunk) => {
            rows[0] += chunk.rows;
            merger.add_chains(*chunk);
        }
        ChunkOut::Samples(chunk) => {
            rows[1] += chunk.rows;
            merger.add_samples(chunk);
        }
        _ => unreachable!("only the call stacks' tasks"),
    })?;
    if merger.out_of_order(stacks::SAMPLING_CALLCHAINS) {
        merger.read_sorted(path, &conn, stacks::SAMPLING_CALLCHAINS, &ids)?;
    }
    let (mut stacks, skips) = merger.finish(&thread_names);
    stacks.read.tables = vec![
        (stacks::SAMPLING_CALLCHAINS, rows[0]),
        (stacks::SAMPLES, rows[1]),
    ];
    stacks.read.skips = skips.0.into_iter().collect();
    Ok(stacks)
}

/// The file's size and modification time are still those the load saw.
fn unchanged(path: &Path, bytes: u64, modified: Option<SystemTime>) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == bytes && m.modified().ok() == modified)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(path: &Path, bytes: u64) -> Pending {
        Pending {
            path: path.to_owned(),
            bytes,
            modified: std::fs::metadata(path).and_then(|m| m.modified()).ok(),
            pages: true,
            merger: StackMerger::default(),
            ids: IdMap::Dense(Vec::new()),
            thread_names: HashMap::default(),
        }
    }

    #[test]
    fn a_file_changed_since_the_load_is_not_read() {
        let dir =
            std::env::temp_dir().join(format!("nsys-explorer-deferred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.sqlite");
        std::fs::write(&path, b"not what the load saw").unwrap();
        let slot = StacksSlot::pending();
        let err = read(pending(&path, 5), &slot, &AtomicBool::new(false)).unwrap_err();
        assert!(
            err.to_string().contains("changed since it was loaded"),
            "{err}"
        );
        // The same size and time: read (and here refused as not SQLite, not as changed).
        let bytes = std::fs::metadata(&path).unwrap().len();
        let err = read(pending(&path, bytes), &slot, &AtomicBool::new(false)).unwrap_err();
        assert!(!err.to_string().contains("changed since"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_read_fills_the_slot_with_its_error() {
        let missing = std::env::temp_dir().join("nsys-explorer-deferred-missing.sqlite");
        let slot = spawn(pending(&missing, 1));
        let stacks = slot.wait();
        assert!(stacks.read.error.is_some());
        assert!(stacks.samples.is_empty());
    }
}
