//! `synth --memory-usage`: device memory allocated and freed as `--cuda-memory-usage=true`
//! records it, with the truth of each GPU's peak, end and growth. Each rank allocates its
//! weights in the first step and frees a block allocated before the capture began; every
//! step allocates its activations and frees them at its end, and a pinned host buffer
//! (host memory, which a GPU's count must leave out), and a workspace of a size that
//! varies with the step (1 GiB + (step mod 3) × 128 MiB), freed stream-ordered: on the GPU's
//! timeline, after the CPU's step has ended; rank 1 leaks a block a step.

use serde::Serialize;

pub const GIB: i64 = 1 << 30;
pub const MIB: i64 = 1 << 20;
const WEIGHTS: i64 = 10 * GIB;
const PRE_CAPTURE: i64 = GIB;
const ACTIVATIONS: i64 = 2 * GIB;
const PINNED: i64 = 4 * MIB;
pub const LEAK: i64 = 64 * MIB;
const WORKSPACE: i64 = GIB;
const WORKSPACE_STEP: i64 = 128 * MIB;
/// How long after the CPU's step ends the GPU frees the workspace.
const WORKSPACE_FREE_LAG_NS: i64 = 300_000;
/// The rank that leaks.
pub const LEAKY_RANK: u32 = 1;

/// One event: (time, bytes signed, address, memKind).
pub type Event = (i64, i64, u64, u8);

/// The memory calls' correlation ids start here (the simulation's own stay below).
pub const CORRELATION_BASE: u32 = 0x4000_0000;
/// How long a memory call takes.
pub const CALL_NS: i64 = 400;

/// The CUDA call that made `e`.
pub fn call_name(e: Event) -> &'static str {
    match (e.1 > 0, e.3 < 2) {
        (true, false) => "cudaMalloc",
        (false, false) => "cudaFree",
        (true, true) => "cudaHostAlloc",
        (false, true) => "cudaFreeHost",
    }
}

/// The events of `rank`'s step `step` whose CPU span is `(s, e)`.
pub fn step_events(rank: u32, step: u32, (s, e): (i64, i64)) -> Vec<Event> {
    let base = (rank as u64 + 1) << 40;
    let mut out = Vec::new();
    if step == 0 {
        out.push((s + 1_000, WEIGHTS, base, 2));
        out.push((s + 2_000, -PRE_CAPTURE, base + 0x7000_0000, 2));
    }
    let act = base + 0x1_0000_0000 + step as u64 * 0x1000_0000;
    out.push((s + 3_000, ACTIVATIONS, act, 2));
    out.push((s + 4_000, PINNED, base + 0x2000, 1));
    if rank == LEAKY_RANK {
        out.push((
            s + 5_000,
            LEAK,
            base + 0x10_0000_0000 + step as u64 * 0x1000_0000,
            2,
        ));
    }
    let workspace = base + 0x8_0000_0000 + step as u64 * 0x1000_0000;
    let workspace_bytes = WORKSPACE + (step % 3) as i64 * WORKSPACE_STEP;
    out.push((s + (e - s) / 2, workspace_bytes, workspace, 2));
    out.push((e - 2_000, -PINNED, base + 0x2000, 1));
    out.push((e - 1_000, -ACTIVATIONS, act, 2));
    out.push((e + WORKSPACE_FREE_LAG_NS, -workspace_bytes, workspace, 2));
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryTruth {
    pub device: u32,
    pub peak_bytes: i64,
    pub peak_at_ns: i64,
    pub end_bytes: i64,
    pub before_capture_bytes: i64,
    pub growth_per_iteration_bytes: i64,
    pub host_events: u64,
}

/// The truth of one GPU from its events (all steps, by time) and its steps' CPU ends. Its
/// growth is what was never freed: the device blocks allocated after the first step and
/// still allocated at the end, per step after the first.
pub fn truth(device: u32, events: &[Event], step_ends: &[i64]) -> MemoryTruth {
    let mut balance = PRE_CAPTURE;
    let (mut peak, mut peak_at) = (balance, events.first().map_or(0, |e| e.0));
    let mut host = 0;
    let mut live: std::collections::HashMap<u64, (i64, i64)> = Default::default();
    for &(t, b, address, kind) in events {
        if kind < 2 {
            host += 1;
            continue;
        }
        balance += b;
        if b > 0 {
            live.insert(address, (t, b));
        } else {
            live.remove(&address);
        }
        if balance > peak {
            (peak, peak_at) = (balance, t);
        }
    }
    let steps = step_ends.len() as i64;
    let kept_after_first: i64 = step_ends.first().map_or(0, |&first| {
        live.values()
            .filter(|&&(t, _)| t > first)
            .map(|&(_, b)| b)
            .sum()
    });
    MemoryTruth {
        device,
        peak_bytes: peak,
        peak_at_ns: peak_at,
        end_bytes: balance,
        before_capture_bytes: PRE_CAPTURE,
        growth_per_iteration_bytes: if steps >= 2 {
            kept_after_first / (steps - 1)
        } else {
            0
        },
        host_events: host,
    }
}
