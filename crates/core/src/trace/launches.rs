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
