//! When each GPU reached each collective, and what its lateness cost the others. A
//! collective's kernels start as each rank launches it and end together once every rank
//! is in: a kernel's time before the last rank's kernel starts is waiting, the rest
//! transfer. Computed once here over [`Members`], the view both sources give: a loaded
//! trace (`nccl_wait`) and a job's rank summaries (`job::reduce`). The straggler's choice,
//! what its thread did (`stall`) and its title are shared here too: the drill-down and the
//! job match an iteration's collectives each their own way, then choose alike.

use crate::format::format_ns;

/// The collectives matched across the GPUs that ran NCCL, each with a kernel on every GPU
/// ("slot"), their times on one clock.
pub trait Members {
    /// GPUs a collective has a kernel on.
    fn width(&self) -> usize;
    /// Collectives.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Collective `c`'s kernel on `slot`: (start, end).
    fn times(&self, c: usize, slot: usize) -> (i64, i64);
}

/// How a collective's kernels started: the last one (the latest start; of equal ones the
/// later slot) and when, and the median and first starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub slot: usize,
    pub last: i64,
    pub median: i64,
    pub first: i64,
}

impl Arrival {
    /// How long after the median rank the last one started: what it held the others back.
    pub fn held_back_ns(&self) -> i64 {
        self.last - self.median
    }

    /// How long after the first rank the last one started.
    pub fn lateness_ns(&self) -> i64 {
        self.last - self.first
    }
}

/// Every collective's arrival, in the members' order.
pub fn arrivals(m: &impl Members) -> Vec<Arrival> {
    let mut starts = Vec::with_capacity(m.width());
    (0..m.len())
        .map(|c| {
            starts.clear();
            let mut last = (0, i64::MIN);
            for slot in 0..m.width() {
                let s = m.times(c, slot).0;
                starts.push(s);
                if s >= last.1 {
                    last = (slot, s);
                }
            }
            starts.sort_unstable();
            Arrival {
                slot: last.0,
                last: last.1,
                median: crate::sorted::middle(&starts).unwrap_or(last.1),
                first: starts.first().copied().unwrap_or(last.1),
            }
        })
        .collect()
}

/// A kernel's wait for the last rank: its time before the last rank's kernel started.
pub fn wait_ns(start: i64, end: i64, last_start: i64) -> i64 {
    (last_start - start).max(0).min(end - start)
}

/// One GPU's NCCL time over every collective.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    pub collectives: usize,
    pub wait_ns: i64,
    pub transfer_ns: i64,
    /// How often its kernel started last: it held the others back.
    pub last_arrivals: usize,
}

/// Each slot's NCCL time split into waiting for the last rank and transfer.
pub fn splits(m: &impl Members, arrivals: &[Arrival]) -> Vec<Split> {
    let mut out = vec![Split::default(); m.width()];
    for (c, a) in arrivals.iter().enumerate() {
        for (slot, w) in out.iter_mut().enumerate() {
            let (s, e) = m.times(c, slot);
            let wait = wait_ns(s, e, a.last);
            w.collectives += 1;
            w.wait_ns = w.wait_ns.saturating_add(wait);
            w.transfer_ns = w.transfer_ns.saturating_add(e - s - wait);
            if slot == a.slot {
                w.last_arrivals += 1;
            }
        }
    }
    out
}

/// The `top` collectives their last rank held back longest (indices), longest first; of
/// equal ones the earlier.
pub fn most_held_back(arrivals: &[Arrival], top: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..arrivals.len()).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(arrivals[c].held_back_ns()));
    order.truncate(top);
    order
}

/// The straggler's collective among `candidates` (its place, how long after the first
/// rank its last one started): the latest-arriving, of equal ones the earliest; `None` when
/// none came late. The slowest iteration's straggler, for a trace and a job alike.
pub fn straggler_collective(
    candidates: impl IntoIterator<Item = (usize, i64)>,
) -> Option<(usize, i64)> {
    candidates
        .into_iter()
        .max_by_key(|&(place, late)| (late, std::cmp::Reverse(place)))
        .filter(|&(_, late)| late > 0)
}

/// "ncclDevKernel_SendRecv at 53.796 s, 1.200 s after the median rank, by GPU 2 (its
/// thread was in read())": the collective held back longest, as the report and the job say
/// it (`at_ns` from the run's start).
pub fn late_sentence(
    name: &str,
    at_ns: i64,
    held_back_ns: i64,
    by: &str,
    call: Option<&str>,
) -> String {
    format!(
        "{name} at {}, {} after the median rank, by {by}{}",
        format_ns(at_ns),
        format_ns(held_back_ns),
        call.map_or(String::new(), |c| format!(" (its thread was in {c})"))
    )
}

/// What a late rank's launching thread did before its collective, as the drill-down (a
/// loaded trace) and a rank's summary record it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadActivity<'a> {
    /// Its longest call: name, start, length.
    pub call: Option<(&'a str, i64, i64)>,
    /// Its longest stretch of CPU time with no call: start, length.
    pub cpu: Option<(i64, i64)>,
    /// The innermost NVTX range it was in.
    pub range: Option<&'a str>,
}

/// The stall in words ("in read()", "computing in attention (no CUDA or OS call)"), its
/// start and length: the longest call or the longest stretch of CPU time with no call,
/// whichever was longer; `None` when neither was recorded.
pub fn stall(a: ThreadActivity) -> Option<(String, i64, i64)> {
    let cpu_ns = a.cpu.map_or(0, |c| c.1);
    match (a.call, a.cpu) {
        (Some((call, start, ns)), _) if ns >= cpu_ns => Some((format!("in {call}"), start, ns)),
        (_, Some((start, ns))) => Some((
            match a.range {
                Some(range) => format!("computing in {range} (no CUDA or OS call)"),
                None => "computing (no CUDA or OS call)".to_string(),
            },
            start,
            ns,
        )),
        _ => None,
    }
}

/// The straggler finding's title, for a trace and a job alike.
pub fn straggler_title(
    gpu: &str,
    lateness_ns: i64,
    iteration: usize,
    what: &str,
    stall_ns: i64,
) -> String {
    format!(
        "{gpu} holds the others back: {} late at a collective of iteration {iteration}, its thread {what} for {}",
        format_ns(lateness_ns),
        format_ns(stall_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collectives as rows of (start, end) per slot.
    struct Rows(Vec<Vec<(i64, i64)>>);

    impl Members for Rows {
        fn width(&self) -> usize {
            self.0.first().map_or(0, Vec::len)
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn times(&self, c: usize, slot: usize) -> (i64, i64) {
            self.0[c][slot]
        }
    }

    #[test]
    fn the_last_rank_holds_back_and_the_others_wait_for_it() {
        let m = Rows(vec![
            vec![(100, 1_000), (150, 1_000), (900, 1_000)],
            vec![(2_600, 3_000), (2_200, 3_000), (2_100, 3_000)],
            // Equal starts: the later slot is the last.
            vec![(4_000, 4_500), (4_000, 4_500), (3_900, 4_500)],
        ]);
        let a = arrivals(&m);
        assert_eq!(
            (a[0].slot, a[0].held_back_ns(), a[0].lateness_ns()),
            (2, 750, 800)
        );
        assert_eq!((a[1].slot, a[1].held_back_ns()), (0, 400));
        assert_eq!(a[2].slot, 1);
        let s = splits(&m, &a);
        assert_eq!(s[0].wait_ns, 800);
        assert_eq!(s[0].transfer_ns, 100 + 400 + 500);
        assert_eq!(s[1].wait_ns, 750 + 400);
        assert_eq!((s[2].wait_ns, s[2].last_arrivals), (500 + 100, 1));
        assert!(s.iter().all(|x| x.collectives == 3));
        assert_eq!(most_held_back(&a, 2), vec![0, 1]);
    }

    #[test]
    fn the_longer_of_a_call_and_plain_cpu_time_is_the_stall() {
        let call = ThreadActivity {
            call: Some(("read()", 10, 500)),
            cpu: Some((0, 400)),
            range: Some("attention"),
        };
        assert_eq!(stall(call).unwrap(), ("in read()".to_string(), 10, 500));
        let cpu = ThreadActivity {
            cpu: Some((0, 600)),
            ..call
        };
        assert_eq!(
            stall(cpu).unwrap(),
            (
                "computing in attention (no CUDA or OS call)".to_string(),
                0,
                600
            )
        );
        assert!(stall(ThreadActivity::default()).is_none());
    }

    #[test]
    fn the_straggler_is_the_latest_arrival_of_equal_ones_the_earliest_and_none_when_none_late() {
        assert_eq!(
            straggler_collective([(0, 5), (1, 9), (2, 9), (3, 1)]),
            Some((1, 9))
        );
        assert_eq!(
            straggler_collective([(4, 9), (2, 9)]),
            Some((2, 9)),
            "by place"
        );
        assert_eq!(straggler_collective([(0, 0), (1, -3)]), None);
        assert_eq!(straggler_collective(std::iter::empty()), None);
    }
}
