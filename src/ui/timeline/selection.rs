//! What is chosen on the timeline: the selected item, and the overlay of a summary
//! category's intervals.

use crate::analysis::breakdown::State;
use crate::analysis::gaps::OpRef;
use crate::trace::{DeviceIndex, Trace};

/// The selected item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    /// A time a thread ran on a CPU.
    Running {
        thread: usize,
        slice: usize,
    },
    Op {
        device: DeviceIndex,
        op: OpRef,
    },
    Range {
        thread: usize,
        range: usize,
    },
    Call {
        thread: usize,
        call: usize,
    },
    /// An OS runtime call of a thread.
    OsCall {
        thread: usize,
        call: usize,
    },
}

impl Selection {
    /// When the item starts and ends (ns).
    pub fn span(self, trace: &Trace) -> (i64, i64) {
        match self {
            Selection::Op { device, op } => {
                let ops = &trace.devices[device].streams[op.stream as usize].ops;
                (ops.start[op.op as usize], ops.end[op.op as usize])
            }
            Selection::Range { thread, range } => {
                let n = &trace.threads[thread].nvtx;
                (n.start[range], n.end[range])
            }
            Selection::OsCall { thread, call } => {
                let o = &trace.threads[thread].osrt;
                (o.start[call], o.end[call])
            }
            Selection::Running { thread, slice } => {
                let s = &trace.threads[thread].scheduling;
                (s.start[slice], s.end[slice])
            }
            Selection::Call { thread, call } => {
                let a = &trace.threads[thread].api;
                (a.start[call], a.end[call])
            }
        }
    }
}

/// Intervals of one device's state (a clicked summary category), drawn as a band over
/// the device's rows.
pub struct Overlay {
    pub device: DeviceIndex,
    pub state: State,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    /// Prefix sums of the intervals' lengths.
    pub covered: Vec<i64>,
    pub longest: i64,
    /// The longest intervals (at most `LISTED_INTERVALS`), longest first, for the list.
    pub longest_first: Vec<u32>,
    /// Intervals of a what-if replay, drawn over the real ones (not the summary's list).
    pub predicted: bool,
}

impl Overlay {
    pub fn new(device: DeviceIndex, state: State, starts: Vec<i64>, ends: Vec<i64>) -> Self {
        let mut covered = Vec::with_capacity(starts.len() + 1);
        covered.push(0);
        let mut longest = 0;
        for (s, e) in starts.iter().zip(&ends) {
            covered.push(covered.last().unwrap() + (e - s));
            longest = longest.max(e - s);
        }
        // The longest few in O(n): a full sort of a million idle moments took longer
        // than a click may.
        let mut longest_first: Vec<u32> = (0..starts.len() as u32).collect();
        let len = |i: &u32| std::cmp::Reverse(ends[*i as usize] - starts[*i as usize]);
        if longest_first.len() > LISTED_INTERVALS {
            longest_first.select_nth_unstable_by_key(LISTED_INTERVALS, len);
            longest_first.truncate(LISTED_INTERVALS);
        }
        longest_first.sort_by_key(|i| (len(i), *i));
        Self {
            device,
            state,
            starts,
            ends,
            covered,
            longest,
            longest_first,
            predicted: false,
        }
    }
}

/// How many of an overlay's intervals are listed: the longest ones.
pub const LISTED_INTERVALS: usize = 200;
