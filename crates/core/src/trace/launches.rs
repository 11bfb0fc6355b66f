//! Which ops each thread launched, per stream, and which of them a synchronising call
//! waited for: shared by the replay and the critical path.

use super::{NONE, Trace};

/// The ops a thread launched, per stream: ((device, stream), its (launch call, op) pairs in
/// call order).
pub type Launched = Vec<((u32, u32), Vec<(u32, u32)>)>;

/// Every thread's launches (see [`Launched`]), each list in call order.
pub fn launched_by_thread(trace: &Trace) -> Vec<Launched> {
    let mut out: Vec<Launched> = vec![Vec::new(); trace.threads.len()];
    for (di, d) in trace.devices.iter().enumerate() {
        for (si, s) in d.streams.iter().enumerate() {
            let key = (di as u32, si as u32);
            // Each thread's launches into this stream counted first: its list is sized once.
            let mut counts: Vec<u32> = vec![0; out.len()];
            for i in 0..s.ops.len() {
                let (th, call) = (s.ops.launch_thread[i], s.ops.launch_call[i]);
                if th != NONE && call != NONE {
                    counts[th as usize] += 1;
                }
            }
            for (streams, &n) in out.iter_mut().zip(&counts) {
                if n > 0 {
                    streams.push((key, Vec::with_capacity(n as usize)));
                }
            }
            for i in 0..s.ops.len() {
                let (th, call) = (s.ops.launch_thread[i], s.ops.launch_call[i]);
                if th == NONE || call == NONE {
                    continue;
                }
                // This stream's entry is the thread's last, pushed above.
                out[th as usize]
                    .last_mut()
                    .expect("pushed")
                    .1
                    .push((call, i as u32));
            }
        }
    }
    for streams in &mut out {
        for (_, list) in streams.iter_mut() {
            list.sort_unstable();
        }
    }
    out
}

/// The ops a synchronising call of a thread (`call`, returning at `end`) may have waited
/// for: per stream the thread launched to, its last op launched up to this call that ended
/// before the call returned (or the stream's last op to end by then). (device, stream, op).
pub fn waited_ops<'a>(
    trace: &'a Trace,
    launched: &'a Launched,
    call: u32,
    end: i64,
) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
    launched.iter().filter_map(move |((d, s), list)| {
        let n = list.partition_point(|l| l.0 <= call);
        if n == 0 {
            return None;
        }
        let (d, s) = (*d as usize, *s as usize);
        let ops = &trace.devices[d].streams[s].ops;
        let i = list[n - 1].1 as usize;
        let i = if ops.end[i] <= end {
            i
        } else {
            // Not waited for; an earlier op of this stream may have been.
            ops.end[..i].partition_point(|&e| e <= end).checked_sub(1)?
        };
        Some((d, s, i))
    })
}

/// [`waited_ops`] for one thread's synchronising calls taken in call order (as a replay
/// walks them): each stream's place in the thread's launches and in its ops' ends is kept
/// and moved forward, not searched anew at every call (a run that synchronises after every
/// collective made 800 k searches of million-long lists, most of a replay's time).
pub struct WaitedCursor {
    /// Per stream of the thread's launches: (launches up to the last call, ops of the
    /// stream ended by the last call's end), and that call and end.
    at: Vec<(usize, usize)>,
    last: (u32, i64),
}

impl WaitedCursor {
    pub fn new(launched: &Launched) -> Self {
        Self {
            at: vec![(0, 0); launched.len()],
            last: (0, i64::MIN),
        }
    }

    /// What [`waited_ops`] gives for `call` returning at `end`.
    pub fn waited<'a>(
        &'a mut self,
        trace: &'a Trace,
        launched: &'a Launched,
        call: u32,
        end: i64,
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        // Back in time (not a walk in call order): start the places over.
        if call < self.last.0 || end < self.last.1 {
            self.at.iter_mut().for_each(|a| *a = (0, 0));
        }
        self.last = (call, end);
        launched
            .iter()
            .zip(self.at.iter_mut())
            .filter_map(move |(((d, s), list), at)| {
                while at.0 < list.len() && list[at.0].0 <= call {
                    at.0 += 1;
                }
                if at.0 == 0 {
                    return None;
                }
                let (d, s) = (*d as usize, *s as usize);
                let ops = &trace.devices[d].streams[s].ops;
                while at.1 < ops.end.len() && ops.end[at.1] <= end {
                    at.1 += 1;
                }
                let i = list[at.0 - 1].1 as usize;
                let i = if ops.end[i] <= end {
                    i
                } else {
                    at.1.min(i).checked_sub(1)?
                };
                Some((d, s, i))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_waits_for_what_the_search_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny.sqlite");
        let options = crate::synth::SynthOptions {
            sync_after_collective: true,
            ..crate::synth::SynthOptions::new(crate::synth::Preset::Tiny)
        };
        crate::synth::generate(&path, options).unwrap();
        let (trace, _) = crate::load::load(&path).unwrap();
        let launched = launched_by_thread(&trace);
        let mut checked = 0;
        for (ti, thread) in trace.threads.iter().enumerate() {
            let mut cursor = WaitedCursor::new(&launched[ti]);
            for k in 0..thread.api.len() {
                let (call, end) = (k as u32, thread.api.end[k]);
                let searched: Vec<_> = waited_ops(&trace, &launched[ti], call, end).collect();
                let walked: Vec<_> = cursor.waited(&trace, &launched[ti], call, end).collect();
                assert_eq!(walked, searched, "thread {ti} call {k}");
                checked += searched.len();
            }
        }
        assert!(checked > 1000);
    }
}
