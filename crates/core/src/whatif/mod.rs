//! What if: the trace replayed with a change, to predict what the change would save — by
//! its dependencies, not by subtracting idle time.
//!
//! The model, per CPU thread: its API calls in order, the CPU time between them kept. A
//! launch releases its kernel or copy, which starts once both its launch (the call's start
//! plus the latency observed) and its stream's previous op allow (plus the spacing
//! observed, or, where the op waited longer than both — an event on another stream or GPU —
//! that wait). A synchronising call returns once the work its thread launched before it,
//! and that it really waited for, is done, plus its own time. An NCCL collective's kernels
//! end together, their transfer time after the last rank's kernel starts. Replaying the
//! trace unchanged reproduces it exactly; a change moves what depends on it.
//!
//! Events are replayed in the order they were recorded: every dependency above happened
//! before what depends on it, so one pass in time order sees each cause before its effect.

mod change;
mod cuts;
mod engine;
mod order;
mod rebuild;
mod replayed;
pub mod report;

use crate::analysis::gaps::{Gap, sync_call_names, sync_calls_by_thread};
use crate::analysis::nccl_wait::{Collectives, collectives};
use crate::sorted::Cursor;
use crate::trace::launches::{Launched, launched_by_thread};
use crate::trace::{NONE, Trace};

pub use change::{Change, ChangeSpec, HostSpan, NcclDependencies, parse_scale_kernel};
pub use cuts::HOST_GAP_OUTLIER_FACTOR;
use engine::{Keep, Times, UNSET, replay_times, replay_times_of};
use order::PackedOrder;

/// What every replay of a trace needs, whatever the change: built once, shared by the
/// replays of several changes (the findings replay theirs in parallel).
pub struct Prepared {
    sync_names: Vec<bool>,
    /// Per thread, its synchronising calls (indices, sorted).
    sync_calls: Vec<Vec<u32>>,
    groups: std::sync::Arc<Collectives>,
    /// Each op's collective (index into `groups`), or [`NONE`].
    member: Vec<Vec<Vec<u32>>>,
    launched: Vec<Launched>,
    /// Every event in recorded order, as the source it came from (see [`PackedOrder`]);
    /// `None` when the trace has more streams and threads than two bytes number (the order
    /// is then merged anew).
    order: Option<PackedOrder>,
}

impl Prepared {
    /// Where thread `ti`'s call `k` is among its synchronising calls (`Times::sync_start`'s
    /// index), if it is one.
    fn sync_slot(&self, ti: usize, k: usize) -> Option<usize> {
        self.sync_calls[ti].binary_search(&(k as u32)).ok()
    }

    /// [`Prepared::sync_slot`] found from where `cursor` stands (a replay meets a thread's
    /// syncs in order, and a search each was a large share of a replay of a run that
    /// synchronises after every collective: docs/benchmarks.md, "Figures behind the
    /// code").
    fn sync_slot_from(&self, ti: usize, k: usize, cursor: &mut Cursor) -> Option<usize> {
        cursor.find(&self.sync_calls[ti], &(k as u32))
    }

    pub fn new(trace: &Trace) -> Self {
        Self::build(trace, None)
    }

    /// Like [`Prepared::new`], with the trace's collectives worked out already (see
    /// [`crate::overview::Overview::collectives`]).
    pub fn with_collectives(trace: &Trace, groups: std::sync::Arc<Collectives>) -> Self {
        Self::build(trace, Some(groups))
    }

    fn build(trace: &Trace, groups: Option<std::sync::Arc<Collectives>>) -> Self {
        let (groups, parts) = rayon::join(
            || groups.unwrap_or_else(|| std::sync::Arc::new(collectives(trace))),
            || TraceParts::new(trace),
        );
        Self::from_parts(trace, parts, groups)
    }

    /// [`Prepared::with_collectives`], with the parts that need the trace alone built
    /// already (beside the analyses, say).
    pub fn from_parts(
        trace: &Trace,
        parts: TraceParts,
        groups: std::sync::Arc<Collectives>,
    ) -> Self {
        crate::profile_scope!("replays: collectives");
        let mut member: Vec<Vec<Vec<u32>>> = trace
            .devices
            .iter()
            .map(|d| d.streams.iter().map(|s| vec![NONE; s.ops.len()]).collect())
            .collect();
        for (g, c) in groups.iter().enumerate() {
            for &(d, s, o) in c {
                member[d][s][o] = g as u32;
            }
        }
        let TraceParts {
            sync_names,
            sync_calls,
            launched,
            order,
        } = parts;
        Self {
            sync_names,
            sync_calls,
            groups,
            member,
            launched,
            order,
        }
    }
}

/// What every replay needs of the trace alone, whatever its analyses: the synchronising
/// calls, each thread's launches and the recorded order (most of [`Prepared`]'s work).
pub struct TraceParts {
    sync_names: Vec<bool>,
    sync_calls: Vec<Vec<u32>>,
    launched: Vec<Launched>,
    order: Option<PackedOrder>,
}

impl TraceParts {
    pub fn new(trace: &Trace) -> Self {
        // Independent parts, worked out side by side.
        let (launched, (sync_names, sync_calls, order)) = rayon::join(
            || {
                crate::profile_scope!("replays: launches");
                launched_by_thread(trace)
            },
            || {
                let sync_names = sync_call_names(trace);
                let sync_calls = sync_calls_by_thread(trace, &sync_names);
                // The recorded order does not depend on the change: merged once.
                let order = {
                    crate::profile_scope!("replays: recorded order");
                    PackedOrder::new(trace, &sync_calls)
                };
                (sync_names, sync_calls, order)
            },
        );
        Self {
            sync_names,
            sync_calls,
            launched,
            order,
        }
    }
}

/// The trace replayed with `change`: a copy with every op's, call's and NVTX range's time
/// moved where the model puts it (NCCL moved to a stream of its own when asked), without
/// what the replay does not move (NCCL calls' payloads, GPU counters, device memory).
pub fn replay(trace: &Trace, change: &Change) -> Trace {
    replay_with_gaps(trace, change, None)
}

/// Like [`replay`], with the trace's gaps when the caller has them (`cut_host_gaps` finds
/// its gaps there; without them it finds them itself).
pub fn replay_with_gaps(trace: &Trace, change: &Change, gaps: Option<&[Gap]>) -> Trace {
    replay_with_progress(trace, change, gaps, &|_| {})
}

/// Like [`replay_with_gaps`], telling `progress` the share of the events replayed (0..=1).
pub fn replay_with_progress(
    trace: &Trace,
    change: &Change,
    gaps: Option<&[Gap]>,
    progress: &dyn Fn(f32),
) -> Trace {
    crate::profile_scope!("what-if replay");
    let prepared = Prepared::new(trace);
    let times = replay_times(trace, &prepared, change, gaps, Keep::Starts, progress);
    rebuild::rebuild(trace, &prepared, &times, change)
}

/// Each device's span (first kernel start to last kernel end, 0 without kernels) in the
/// trace replayed with `change`: what [`replay`] then `Device::kernel_window` give,
/// without building the replayed trace.
pub fn predicted_spans(trace: &Trace, change: &Change, gaps: Option<&[Gap]>) -> Vec<i64> {
    predicted_spans_with(trace, &Prepared::new(trace), change, gaps)
}

/// Like [`predicted_spans`], with what the replays share built once.
pub fn predicted_spans_with(
    trace: &Trace,
    prepared: &Prepared,
    change: &Change,
    gaps: Option<&[Gap]>,
) -> Vec<i64> {
    let never = std::sync::atomic::AtomicBool::new(false);
    predicted_spans_of(trace, prepared, &[change], gaps, &never)
        .and_then(|mut spans| spans.pop())
        .expect("a replay nobody cancels")
}

/// [`predicted_spans_with`] for each of `changes`, replayed together in one walk of the
/// trace (see [`engine::replay_times_of`]); `None` once `cancel` is set.
pub fn predicted_spans_of(
    trace: &Trace,
    prepared: &Prepared,
    changes: &[&Change],
    gaps: Option<&[Gap]>,
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<Vec<Vec<i64>>> {
    let times = {
        crate::profile_scope!("what-if walk (spans)");
        replay_times_of(trace, prepared, changes, gaps, Keep::Ends, &|_| {}, cancel)?
    };
    // One line a change replayed, for `bench report`'s count.
    changes
        .iter()
        .for_each(|_| crate::profile::trace_line('-', "what-if replay (spans)"));
    Some(times.iter().map(|t| spans_of(trace, t)).collect())
}

/// Each device's replayed span: a replayed op ends at or after its start; one the replay
/// never reached keeps its recorded times.
fn spans_of(trace: &Trace, t: &Times) -> Vec<i64> {
    trace
        .devices
        .iter()
        .enumerate()
        .map(|(d, device)| {
            let mut window: Option<(i64, i64)> = None;
            for (s, stream) in device.streams.iter().enumerate() {
                let ops = &stream.ops;
                for i in 0..ops.len() {
                    if !ops.kind[i].is_kernel() {
                        continue;
                    }
                    let (a, b) = match t.op_end[d][s][i] {
                        UNSET => (ops.start[i], ops.end[i]),
                        b => (t.first_kernel_start[d], b),
                    };
                    window = Some(window.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                }
            }
            window.map_or(0, |(a, b)| b - a)
        })
        .collect()
}

pub use crate::trace::measured_spans;

#[cfg(test)]
mod tests {
    use super::order::{Event, RecordedOrder, merged_in_pieces};
    use super::*;

    #[test]
    fn the_packed_order_gives_back_the_recorded_order() {
        let dir = std::env::temp_dir().join(format!("nx-packed-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny.sqlite");
        let options = crate::synth::SynthOptions::new(crate::synth::Preset::Tiny);
        crate::synth::generate(&path, options).unwrap();
        let (trace, _) = crate::load::load(&path).unwrap();
        let merged = packed_is_recorded(&trace);
        assert!(merged.len() > 1000 && merged.iter().any(|e| matches!(e, Event::SyncEnd { .. })));
        std::fs::remove_dir_all(&dir).ok();
        // Real exports too: their equal times (a call and the op it waits for ending
        // together) are where the two orders could part.
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
        let mut real = 0;
        for sub in ["real", "real-round3", "real-round4"] {
            for entry in std::fs::read_dir(fixtures.join(sub)).expect("the shared real exports") {
                let (trace, _) = crate::load::load(&entry.unwrap().path()).unwrap();
                packed_is_recorded(&trace);
                real += 1;
            }
        }
        assert!(real >= 6);
    }

    /// Asserts the packed order gives back the recorded order, merged in one piece or cut
    /// in several; returns it.
    fn packed_is_recorded(trace: &Trace) -> Vec<Event> {
        let mut prep = Prepared::new(trace);
        let merged: Vec<Event> = RecordedOrder::new(trace, &prep.sync_names).collect();
        for pieces in [None, Some(1), Some(2), Some(3), Some(7)] {
            if let Some(pieces) = pieces {
                let order = prep.order.as_mut().expect("a few streams and threads");
                order.ids = merged_in_pieces(trace, &prep.sync_calls, &order.sources, pieces);
            }
            let packed: Vec<Event> = prep
                .order
                .as_ref()
                .expect("a few streams and threads")
                .events(&prep.sync_calls)
                .collect();
            assert!(packed == merged, "in {pieces:?} pieces");
        }
        merged
    }
}
