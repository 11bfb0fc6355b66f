//! What a generated run looks like: the preset's size and every option that gives it a
//! shape (syncs, graphs, stalls, sampling), and the step shape each preset stands for.

use super::program::StragglerStall;
use super::sim::GraphTrace;
use super::writer::Flavour;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// 4 ranks × 8 steps × 2 blocks: ~1k kernels, for tests.
    Tiny,
    /// 4 ranks × 60 steps × 40 blocks: ~210k kernels.
    Medium,
    /// The seed trace's size: 4 ranks × 1250 steps × 40 blocks: 4.4M kernels, 7.2M NVTX ranges.
    Large,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NcclStream {
    /// NCCL on the compute stream, as in the Wan2.1 trace: no overlap possible.
    Same,
    /// NCCL on its own stream; an all-to-all's result is the next kernel's input, so it
    /// overlaps compute only as gradient all-reduces (`gradient_all_reduce`).
    Separate,
}

#[derive(Debug, Clone, Copy)]
pub struct SynthOptions {
    pub preset: Preset,
    pub flavour: Flavour,
    pub nccl_stream: NcclStream,
    pub seed: u64,
    /// The old, kinder shape, for comparison: repeated NVTX texts, sub-µs spacing between
    /// kernels (few gaps), no JIT stall and no checkpoint. By default traces are shaped
    /// like real PyTorch exports: record_shapes op texts (a distinct text per shaped op,
    /// ~2M in `large`), 1–3 µs between back-to-back kernels with launch-latency jitter (a
    /// gap at nearly every kernel boundary), a 340 ms JIT compile stall in the first step
    /// and a multi-second blocking checkpoint copy.
    pub clean: bool,
    /// One kernel of `program::KERNELS` (by index) made to take `factor` times as long: the
    /// "after" of a kernel optimisation, with every other random draw the same.
    pub scale_kernel: Option<(usize, f64)>,
    /// Without the scheduler's per-step `cudaStreamSynchronize` after `.item()` (the copy
    /// stays, asynchronous): the "after" of removing a host sync.
    pub no_step_sync: bool,
    /// Ranks (GPUs) instead of the preset's 4 (at least 3: rank 2 is the straggler).
    pub ranks: Option<u32>,
    /// Without the straggler's stall (its `cudaDeviceSynchronize` and slow `cudaMalloc`
    /// in the slow step): the "after" of fixing the straggler.
    pub no_straggler: bool,
    /// NCCL's calls as NVTX ranges in its domain (2024 flavour only): `Some(true)` with
    /// their payloads (`--include-blobs=true`), `Some(false)` without, `None` none at all.
    pub nccl_calls: Option<bool>,
    /// What the straggler's thread does while the others wait.
    pub straggler_stall: StragglerStall,
    /// The straggler's rank instead of 2 (a job of many ranks hides it anywhere).
    pub straggler_rank: Option<u32>,
    /// Steps and blocks a step instead of the preset's (a job of hundreds of ranks made
    /// small enough to write: each rank's file shrinks with them).
    pub steps: Option<u32>,
    pub blocks: Option<u32>,
    /// The straggler's pause instead of two fifths of a step (e.g. 1.2 s).
    pub straggler_pause_ns: Option<i64>,
    /// A device sync after each all-to-all and 2–3 ms of Python before the next launch
    /// (the seed's Ulysses attention with `use_sync=True`).
    pub sync_after_collective: bool,
    /// The blocking checkpoint copy of realistic traces (off: an inference run, as the
    /// seed's, saves no weights).
    pub checkpoint: bool,
    /// The blocks' compute replayed as CUDA graphs, recorded as nsys's
    /// `--cuda-graph-trace` says.
    pub cuda_graphs: Option<GraphTrace>,
    /// The Python of each aten op before its launch (default 6 µs): past about a
    /// millisecond a block's CPU time outgrows its GPU time and the run is launch-bound,
    /// as small-batch inference is.
    pub host_per_op_ns: Option<i64>,
    /// CPU samples of each rank's main thread at 1 kHz and a backtrace on every OS runtime
    /// call (`COMPOSITE_EVENTS`, `SAMPLING_CALLCHAINS`, `OSRT_CALLCHAINS`).
    pub cpu_samples: bool,
    /// Device memory allocations and frees (`CUDA_GPU_MEMORY_USAGE_EVENTS`), with the
    /// truth of each GPU's peak, end and growth per step (rank 1 leaks).
    pub memory_usage: bool,
    /// The GPUs' counters sampled at 10 kHz (`GPU_METRICS`), their levels by kernel class.
    pub gpu_metrics: bool,
    /// With `cuda_graphs`: each block's whole attention, its all-to-alls inside, captured
    /// as one graph (and its ffn as another).
    pub graph_attention: bool,
    /// Small ops (17–41 µs kernels) after each all-to-all, each after 60–100 µs of Python:
    /// with a sync after the collective the GPU waits at every one of them until the next
    /// long kernel (the seed's shape, issue 68).
    pub small_ops: u32,
    /// With `sync_after_collective`: the device syncs left out, the Python after them kept
    /// (the "after" of removing them, every other draw the same).
    pub sync_removed: bool,
    /// The collectives are gradient all-reduces (`ncclDevKernel_AllReduce_…`) launched in
    /// a `backward` range, each result needed only after the next collective (DDP's
    /// buckets); NCCL's payload ranges left out.
    pub gradient_all_reduce: bool,
    /// With the ranks in files of their own: every rank's process has the same pid and
    /// tids (containers start each node's training process as pid 1).
    pub same_pids: bool,
    /// NVTX as DLProf records it: no step, block or module ranges, one range an operator
    /// whose text is a Python dict (`{'traceMarker': [N], 'funcStack': 'wan/modules/model.py:LINE'}`).
    pub dlprof_markers: bool,
}

impl SynthOptions {
    pub fn new(preset: Preset) -> Self {
        Self {
            preset,
            flavour: Flavour::Nsys2024,
            nccl_stream: NcclStream::Same,
            seed: 311,
            clean: false,
            scale_kernel: None,
            no_step_sync: false,
            ranks: None,
            no_straggler: false,
            nccl_calls: Some(true),
            straggler_stall: StragglerStall::Read,
            straggler_rank: None,
            straggler_pause_ns: None,
            steps: None,
            blocks: None,
            sync_after_collective: false,
            checkpoint: true,
            cuda_graphs: None,
            host_per_op_ns: None,
            cpu_samples: false,
            memory_usage: false,
            gpu_metrics: false,
            same_pids: false,
            dlprof_markers: false,
            graph_attention: false,
            small_ops: 0,
            sync_removed: false,
            gradient_all_reduce: false,
        }
    }
}

pub(super) struct Shape {
    pub(super) ranks: u32,
    pub(super) steps: u32,
    pub(super) blocks: u32,
    pub(super) warmup: u32,
    pub(super) slow_step: u32,
    pub(super) straggler: u32,
    /// After this step every rank saves a checkpoint (realistic traces).
    pub(super) checkpoint_step: u32,
}

pub(super) fn shape_of(options: &SynthOptions) -> Shape {
    let mut s = shape(options.preset);
    if let Some(r) = options.ranks {
        s.ranks = r.max(3);
    }
    if let Some(r) = options.straggler_rank {
        s.straggler = r.min(s.ranks - 1);
    }
    if let Some(steps) = options.steps {
        // The slow step and the checkpoint keep their place in the run.
        let at = |step: u32| (step * steps.max(4) / s.steps).max(s.warmup + 1);
        s.slow_step = at(s.slow_step);
        s.checkpoint_step = at(s.checkpoint_step)
            .max(s.slow_step + 1)
            .min(steps.max(4) - 1);
        s.steps = steps.max(4);
    }
    if let Some(blocks) = options.blocks {
        s.blocks = blocks.max(1);
    }
    s
}

fn shape(preset: Preset) -> Shape {
    match preset {
        Preset::Tiny => Shape {
            ranks: 4,
            steps: 8,
            blocks: 2,
            warmup: 1,
            slow_step: 5,
            straggler: 2,
            checkpoint_step: 6,
        },
        Preset::Medium => Shape {
            ranks: 4,
            steps: 60,
            blocks: 40,
            warmup: 2,
            slow_step: 37,
            straggler: 2,
            checkpoint_step: 45,
        },
        Preset::Large => Shape {
            ranks: 4,
            steps: 1250,
            blocks: 40,
            warmup: 2,
            slow_step: 311,
            straggler: 2,
            checkpoint_step: 1000,
        },
    }
}
