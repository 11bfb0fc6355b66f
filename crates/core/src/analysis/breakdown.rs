//! Time breakdown of a device in a window: compute only, NCCL only, overlap, memory only,
//! idle. At each instant the device is in exactly one state, so the five add up to the
//! window. Unions, not sums: concurrent kernels on several streams count once.

use serde::Serialize;

use super::intervals::{Class, Window, boundary_events};
use crate::trace::{Device, OpKind};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Breakdown {
    pub compute_only: i64,
    pub nccl_only: i64,
    pub overlap: i64,
    pub memory_only: i64,
    pub idle: i64,
}

impl Breakdown {
    pub fn total(&self) -> i64 {
        self.compute_only + self.nccl_only + self.overlap + self.memory_only + self.idle
    }
}

/// What a device is doing at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    ComputeOnly,
    NcclOnly,
    Overlap,
    MemoryOnly,
    Idle,
}

impl State {
    pub const ALL: [State; 5] = [
        State::ComputeOnly,
        State::NcclOnly,
        State::Overlap,
        State::MemoryOnly,
        State::Idle,
    ];

    pub fn label(self) -> &'static str {
        match self {
            State::ComputeOnly => "compute only",
            State::NcclOnly => "NCCL only",
            State::Overlap => "overlap",
            State::MemoryOnly => "memory only",
            State::Idle => "idle",
        }
    }

    pub fn of(&self, b: &Breakdown) -> i64 {
        match self {
            State::ComputeOnly => b.compute_only,
            State::NcclOnly => b.nccl_only,
            State::Overlap => b.overlap,
            State::MemoryOnly => b.memory_only,
            State::Idle => b.idle,
        }
    }
}

/// Calls `visit(state, start, end)` for consecutive spans covering `window` (a state may
/// repeat in neighbouring spans).
fn sweep(device: &Device, window: Window, mut visit: impl FnMut(State, i64, i64)) {
    let mut active = [0i32; 3];
    let mut t = window.start;
    let state = |active: &[i32; 3]| match (
        active[Class::Compute as usize] > 0,
        active[Class::Nccl as usize] > 0,
        active[Class::Memory as usize] > 0,
    ) {
        (true, true, _) => State::Overlap,
        (true, false, _) => State::ComputeOnly,
        (false, true, _) => State::NcclOnly,
        (false, false, true) => State::MemoryOnly,
        (false, false, false) => State::Idle,
    };
    for (time, delta, class) in boundary_events(device, window) {
        if time > t {
            visit(state(&active), t, time);
        }
        active[class as usize] += delta as i32;
        t = time;
    }
    if window.end > t {
        visit(State::Idle, t, window.end);
    }
}

pub fn breakdown(device: &Device, window: Window) -> Breakdown {
    crate::profile_scope!("analysis: breakdown of one GPU");
    let mut out = Breakdown::default();
    sweep(device, window, |state, s, e| {
        let slot = match state {
            State::Overlap => &mut out.overlap,
            State::ComputeOnly => &mut out.compute_only,
            State::NcclOnly => &mut out.nccl_only,
            State::MemoryOnly => &mut out.memory_only,
            State::Idle => &mut out.idle,
        };
        *slot += e - s;
    });
    debug_assert_eq!(out.total(), window.len());
    out
}

/// Every maximal interval of `window` in which `device` is in `state`, as (starts, ends).
pub fn state_intervals(device: &Device, window: Window, wanted: State) -> (Vec<i64>, Vec<i64>) {
    let (mut starts, mut ends): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    sweep(device, window, |state, s, e| {
        if state != wanted {
            return;
        }
        if ends.last() == Some(&s) {
            *ends.last_mut().unwrap() = e;
        } else {
            starts.push(s);
            ends.push(e);
        }
    });
    (starts, ends)
}

/// The first `n` maximal intervals of `window` in which `device` is in `wanted`, swept over
/// a doubling prefix of the window: a finding's first occurrences need not cost a sweep
/// of the whole run.
pub fn first_state_intervals(
    device: &Device,
    window: Window,
    wanted: State,
    n: usize,
) -> Vec<(i64, i64)> {
    let mut len = (window.len() / 64).max(1);
    loop {
        let prefix = Window::new(
            window.start,
            window.start.saturating_add(len).min(window.end),
        );
        let whole = prefix.end == window.end;
        let (starts, ends) = state_intervals(device, prefix, wanted);
        // One cut at the prefix's end may go on past it: not counted until it ends.
        let done: Vec<(i64, i64)> = starts
            .into_iter()
            .zip(ends)
            .filter(|&(_, e)| whole || e < prefix.end)
            .take(n)
            .collect();
        if whole || done.len() >= n {
            return done;
        }
        len = len.saturating_mul(2);
    }
}

/// `part` as a percentage of `all` (0 when `all` is 0).
pub fn pct(part: i64, all: i64) -> f64 {
    if all > 0 {
        100.0 * part as f64 / all as f64
    } else {
        0.0
    }
}

/// The same-stream diagnosis: the stream with the most NCCL time, and the shares of the
/// device's NCCL and compute time that run on it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct SameStream {
    pub stream: u32,
    pub nccl_pct: f64,
    pub compute_pct: f64,
    /// The share of NCCL time during which compute ran too (overlap / all NCCL time),
    /// once known from the breakdown of the same window.
    pub hidden_pct: Option<f64>,
}

/// Below this share of NCCL time hidden under compute, NCCL on a stream of its own is
/// said to be mostly serialised all the same.
const SERIALISED_BELOW_PCT: f64 = 30.0;

impl SameStream {
    /// With the share of NCCL time hidden under compute, from `b` (the same window).
    pub fn with_hidden(mut self, b: &Breakdown) -> Self {
        self.hidden_pct = Some(pct(b.overlap, b.overlap + b.nccl_only));
        self
    }

    /// The diagnosis in one sentence.
    pub fn sentence(&self) -> String {
        if self.nccl_pct >= 99.5 && self.compute_pct >= 99.5 {
            format!(
                "All NCCL and all compute kernels run on stream {}: communication cannot overlap compute as launched, so every NCCL nanosecond adds to step time.",
                self.stream
            )
        } else if self.compute_pct >= 50.0 {
            format!(
                "Stream {} carries {:.0} % of NCCL time and {:.0} % of compute time: most communication is serialised with compute.",
                self.stream, self.nccl_pct, self.compute_pct
            )
        } else {
            match self.hidden_pct {
                Some(h) if h < SERIALISED_BELOW_PCT => format!(
                    "NCCL runs on its own stream {} ({:.0} % of NCCL time), yet only {h:.1} % of NCCL time is hidden under compute: mostly serialised all the same.",
                    self.stream, self.nccl_pct
                ),
                Some(h) => format!(
                    "NCCL runs mostly on stream {} ({:.0} % of NCCL time) with {:.0} % of compute time on it; {h:.1} % of NCCL time is hidden under compute.",
                    self.stream, self.nccl_pct, self.compute_pct
                ),
                None => format!(
                    "NCCL runs mostly on stream {} ({:.0} % of NCCL time) with {:.0} % of compute time on it: communication can overlap compute.",
                    self.stream, self.nccl_pct, self.compute_pct
                ),
            }
        }
    }
}

/// `None` when the device ran no NCCL kernel in the window. Times are clipped to the window;
/// ops of one stream never overlap, so per-stream sums are unions.
pub fn same_stream(device: &Device, window: Window) -> Option<SameStream> {
    crate::profile_scope!("analysis: same stream of one GPU");
    let mut nccl = Vec::with_capacity(device.streams.len());
    let mut compute = Vec::with_capacity(device.streams.len());
    for stream in &device.streams {
        let ops = &stream.ops;
        let (mut n, mut c) = (0i64, 0i64);
        for i in super::intervals::ops_touching(stream, window) {
            let Some((s, e)) = window.clip(ops.start[i], ops.end[i]) else {
                continue;
            };
            match ops.kind[i] {
                OpKind::Nccl => n += e - s,
                OpKind::Compute | OpKind::Graph => c += e - s,
                _ => {}
            }
        }
        nccl.push((stream.id, n));
        compute.push(c);
    }
    let (best, &(stream, nccl_on)) = nccl
        .iter()
        .enumerate()
        .max_by_key(|(_, (s, t))| (*t, std::cmp::Reverse(*s)))?;
    if nccl_on == 0 {
        return None;
    }
    Some(SameStream {
        stream,
        nccl_pct: pct(nccl_on, nccl.iter().map(|p| p.1).sum()),
        compute_pct: pct(compute[best], compute.iter().sum()),
        hidden_pct: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    /// Compute on stream 1 over [0, 100), NCCL on stream 2 over [50, 150), a copy over
    /// [200, 250), nothing until 300.
    fn two_streams() -> crate::trace::Trace {
        let mut b = TraceBuilder::new();
        b.kernel(0, 1, "gemm", (0, 100), None);
        b.kernel(0, 2, "ncclDevKernel_AllReduce", (50, 150), None);
        b.memcpy(0, 3, "HtoD", 1_000, (200, 250), false, None);
        b.kernel(0, 1, "gemm", (299, 300), None);
        b.build()
    }

    #[test]
    fn concurrent_kernels_on_two_streams_count_once_and_the_states_add_up() {
        let trace = two_streams();
        let b = breakdown(&trace.devices[0], Window::new(0, 300));
        assert_eq!(
            (
                b.compute_only,
                b.overlap,
                b.nccl_only,
                b.memory_only,
                b.idle
            ),
            (51, 50, 50, 50, 99)
        );
        assert_eq!(b.total(), 300);
    }

    #[test]
    fn a_window_cuts_the_ops_it_crosses() {
        let trace = two_streams();
        let b = breakdown(&trace.devices[0], Window::new(75, 225));
        assert_eq!(
            (
                b.compute_only,
                b.overlap,
                b.nccl_only,
                b.memory_only,
                b.idle
            ),
            (0, 25, 50, 25, 50)
        );
    }

    #[test]
    fn state_intervals_are_the_breakdowns_moments() {
        let trace = two_streams();
        let (starts, ends) = state_intervals(&trace.devices[0], Window::new(0, 300), State::Idle);
        assert_eq!(starts, vec![150, 250]);
        assert_eq!(ends, vec![200, 299]);
    }

    #[test]
    fn the_first_intervals_are_those_of_the_whole_sweep() {
        // Kernels with irregular gaps, and NCCL over some of them on a second stream.
        let mut b = TraceBuilder::new();
        let mut t = 0;
        for k in 0..500i64 {
            b.kernel(0, 1, "gemm", (t, t + 10 + k % 7), None);
            if k % 5 == 0 {
                b.kernel(0, 2, "ncclDevKernel_AllReduce", (t + 5, t + 30), None);
            }
            t += 40 + (k * 37) % 23;
        }
        let trace = b.build();
        let device = &trace.devices[0];
        let window = Window::new(0, t);
        let (starts, ends) = state_intervals(device, window, State::Idle);
        let all: Vec<(i64, i64)> = starts.into_iter().zip(ends).collect();
        assert!(all.len() > 100, "{} idle intervals", all.len());
        for n in [1, 7, 100, all.len(), all.len() + 5] {
            let first = first_state_intervals(device, window, State::Idle, n);
            assert_eq!(first[..], all[..n.min(all.len())], "n = {n}");
        }
    }

    #[test]
    fn nccl_on_its_own_stream_says_how_much_of_it_compute_hides() {
        let trace = two_streams();
        let device = &trace.devices[0];
        let w = Window::new(0, 300);
        let s = same_stream(device, w)
            .unwrap()
            .with_hidden(&breakdown(device, w));
        assert_eq!(s.stream, 2);
        assert_eq!(s.hidden_pct, Some(50.0));
        assert!(
            s.sentence().contains("50.0 % of NCCL time is hidden"),
            "{}",
            s.sentence()
        );
    }
}
