//! Each GPU's NCCL time split into waiting for the last rank and transfer (see
//! [`super::arrivals`], shared with a job's summaries), and the collectives matched across
//! GPUs by their ends (equal to microseconds, on one clock: after the files' alignment
//! when the ranks come from several files).

use rayon::prelude::*;
use serde::Serialize;

use super::arrivals::{Members, arrivals, most_held_back, splits};
use crate::trace::{DeviceId, OpKind, Trace};

/// Ends closer than this are one collective's.
const SAME_END_NS: i64 = 100_000;

#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct NcclWait {
    pub device: DeviceId,
    /// Collectives found on every GPU.
    pub collectives: usize,
    pub wait_ns: i64,
    pub transfer_ns: i64,
    /// How often this GPU's kernel started last: it held the others back.
    pub last_arrivals: usize,
}

/// A collective the last rank held back longest.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct LateCollective {
    /// The collective's kernel name (on the last rank).
    pub name: String,
    /// When the last rank's kernel started, and how long after the median rank's.
    pub start_ns: i64,
    pub held_back_ns: i64,
    pub last_device: DeviceId,
    /// What the last rank's launching thread was doing meanwhile: the API call that filled
    /// most of that time (at least half), when there is one.
    pub last_thread_call: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct NcclWaits {
    pub per_device: Vec<NcclWait>,
    /// Largest hold-back first (at most `Options::lists_top`).
    pub late: Vec<LateCollective>,
}

/// One NCCL kernel: device index, stream, op, and its end (what collectives match by).
#[derive(Clone, Copy)]
struct Kernel {
    device: usize,
    stream: usize,
    op: usize,
    end: i64,
}

fn nccl_kernels(trace: &Trace, device: usize) -> Vec<Kernel> {
    let d = &trace.devices[device];
    let mut out: Vec<Kernel> = d
        .ops_of(OpKind::Nccl)
        .map(|(stream, op)| Kernel {
            device,
            stream,
            op,
            end: d.streams[stream].ops.end[op],
        })
        .collect();
    out.sort_unstable_by_key(|k| k.end);
    out
}

/// One collective: its kernel on each GPU that ran NCCL (device index, stream, op), in the
/// order of [`Collectives::devices`].
pub type Collective = [(usize, usize, usize)];

/// The collectives found on every GPU that ran NCCL: the kernel of each GPU whose end is
/// nearest the first GPU's, within `SAME_END_NS`, in the first GPU's end order. Worked out
/// once a report (the NCCL analyses, the replays and the critical path share it: worked out
/// by each, it cost each a visible share of a report) and kept flat, not a list per
/// collective.
#[derive(Debug, Default)]
pub struct Collectives {
    /// The GPUs that ran NCCL (device indices); a collective has a kernel on each.
    pub devices: Vec<usize>,
    /// `devices.len()` members a collective, one collective after another.
    members: Vec<(usize, usize, usize)>,
}

impl Collectives {
    pub fn len(&self) -> usize {
        self.members.len() / self.devices.len().max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn get(&self, g: usize) -> &Collective {
        let w = self.devices.len();
        &self.members[g * w..(g + 1) * w]
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, (usize, usize, usize)> {
        self.members.chunks_exact(self.devices.len().max(1))
    }
}

pub fn collectives(trace: &Trace) -> Collectives {
    crate::profile_scope!("analysis: collectives");
    let per_gpu = per_gpu(trace);
    let mut members = Vec::new();
    matched(&per_gpu, |group| {
        members.extend(group.iter().map(|k| (k.device, k.stream, k.op)));
    });
    Collectives {
        devices: per_gpu.iter().map(|k| k[0].device).collect(),
        members,
    }
}

/// The NCCL kernels of each GPU that ran any.
fn per_gpu(trace: &Trace) -> Vec<Vec<Kernel>> {
    (0..trace.devices.len())
        .into_par_iter()
        .map(|d| nccl_kernels(trace, d))
        .filter(|k| !k.is_empty())
        .collect()
}

/// Calls `found` with each collective's kernels, one per GPU in `per_gpu`'s order.
fn matched(per_gpu: &[Vec<Kernel>], mut found: impl FnMut(&[Kernel])) {
    let ends: Vec<Vec<i64>> = per_gpu
        .iter()
        .map(|k| k.iter().map(|k| k.end).collect())
        .collect();
    let mut group = Vec::with_capacity(per_gpu.len());
    match_by_ends(&ends, |members| {
        group.clear();
        group.extend(members.iter().enumerate().map(|(g, &i)| per_gpu[g][i]));
        found(&group);
    });
}

/// The collectives found on every GPU, from each GPU's NCCL kernel ends (sorted, on one
/// clock): for each of the first GPU's kernels, the kernel of every other GPU whose end is
/// nearest, within `SAME_END_NS`. Calls `found` with each collective's kernel index on
/// each GPU, in the first GPU's end order. The rank summaries' reduce matches with it too,
/// so that a job read from summaries pairs its collectives as its exports loaded whole do.
pub fn match_by_ends(ends: &[Vec<i64>], mut found: impl FnMut(&[usize])) {
    if ends.len() < 2 {
        return;
    }
    let mut cursors = vec![0usize; ends.len()];
    let mut group = Vec::with_capacity(ends.len());
    for (i, &end) in ends[0].iter().enumerate() {
        group.clear();
        group.push(i);
        // The kernel of every other GPU whose end is nearest (ends are sorted: walk on).
        for (g, other) in ends.iter().enumerate().skip(1) {
            let c = &mut cursors[g];
            while *c + 1 < other.len() && other[*c + 1] <= end {
                *c += 1;
            }
            let nearest = [*c, *c + 1]
                .into_iter()
                .filter(|&j| j < other.len())
                .min_by_key(|&j| (other[j] - end).abs())
                .filter(|&j| (other[j] - end).abs() <= SAME_END_NS);
            match nearest {
                Some(j) => group.push(j),
                None => break,
            }
        }
        if group.len() == ends.len() {
            found(&group);
        }
    }
}

/// A loaded trace's collectives as the arrivals see them.
struct OfTrace<'a> {
    trace: &'a Trace,
    collectives: &'a Collectives,
}

impl Members for OfTrace<'_> {
    fn width(&self) -> usize {
        self.collectives.devices.len()
    }

    fn len(&self) -> usize {
        self.collectives.len()
    }

    fn times(&self, c: usize, slot: usize) -> (i64, i64) {
        let (device, stream, op) = self.collectives.get(c)[slot];
        let ops = &self.trace.devices[device].streams[stream].ops;
        (ops.start[op], ops.end[op])
    }
}

/// Each GPU's NCCL wait and transfer, over `collectives` (see [`collectives`]).
pub fn nccl_waits(trace: &Trace, collectives: &Collectives, top: usize) -> NcclWaits {
    crate::profile_scope!("analysis: NCCL wait");
    let m = OfTrace { trace, collectives };
    let arrivals = arrivals(&m);
    let per_device = splits(&m, &arrivals)
        .into_iter()
        .zip(&collectives.devices)
        .map(|(w, &d)| NcclWait {
            device: trace.devices[d].id,
            collectives: w.collectives,
            wait_ns: w.wait_ns,
            transfer_ns: w.transfer_ns,
            last_arrivals: w.last_arrivals,
        })
        .collect();
    let late = most_held_back(&arrivals, top)
        .into_iter()
        .map(|c| {
            let a = arrivals[c];
            let held_back_ns = a.held_back_ns();
            let (d, stream, op) = collectives.get(c)[a.slot];
            let device = &trace.devices[d];
            let ops = &device.streams[stream].ops;
            let last_thread_call =
                trace
                    .threads
                    .get(ops.launch_thread[op] as usize)
                    .and_then(|t| {
                        // The CUDA or OS runtime call that filled most of the hold-back (a
                        // thread computing in Python between calls has none).
                        super::recurring::longest_call(trace, t, a.last - held_back_ns, a.last)
                            .filter(|(ns, _)| 2 * ns >= held_back_ns)
                            .map(|(_, name)| name)
                    });
            LateCollective {
                name: trace.strings.get(ops.name[op]).to_string(),
                start_ns: a.last,
                held_back_ns,
                last_device: device.id,
                last_thread_call,
            }
        })
        .collect();
    NcclWaits { per_device, late }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn the_time_before_the_last_rank_arrives_is_waiting_and_the_rest_transfer() {
        let mut b = TraceBuilder::new();
        // Two collectives on three GPUs ending together; GPU 2 late in the first, GPU 0 in
        // the second.
        for (d, starts) in [(0u32, [100, 2_600]), (1, [150, 2_200]), (2, [900, 2_100])] {
            for (k, s) in starts.into_iter().enumerate() {
                let end = [1_000, 3_000][k];
                b.kernel(d, 7, "ncclDevKernel_AllReduce", (s, end), None);
            }
        }
        let trace = b.build();
        let w = nccl_waits(&trace, &collectives(&trace), 10);
        let by = |d: u32| {
            w.per_device
                .iter()
                .find(|x| x.device == DeviceId(d))
                .unwrap()
                .clone()
        };
        assert_eq!(by(0).wait_ns, 800); // 100 → 900, then last itself
        assert_eq!(by(0).transfer_ns, 100 + 400);
        assert_eq!(by(1).wait_ns, 750 + 400);
        assert_eq!(by(2).wait_ns, 500);
        assert_eq!(by(2).last_arrivals, 1);
        assert_eq!(by(0).last_arrivals, 1);
        assert!(w.per_device.iter().all(|x| x.collectives == 2));
        // The most held-back collective first: GPU 2, 750 ns after the median start.
        assert_eq!(w.late[0].last_device, DeviceId(2));
        assert_eq!(w.late[0].held_back_ns, 750);
    }
}
