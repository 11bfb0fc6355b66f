//! Generator of nsys-shaped SQLite exports, modelled on the Wan2.1 text-to-video run of the
//! seed documents: 4 ranks (one process and GPU each, correlationIds restarting in each),
//! compute and `ncclDevKernel_SendRecv` on one stream (or NCCL on its own stream), NVTX
//! `denoising_step_N > cfg_cond|cfg_uncond > transformer_block_N > attention|ffn > aten::…`,
//! a synchronising `.item()` per step, warm-up copies, and one straggler rank that makes one
//! step the slowest. Beside the file it writes the ground truth it knows (`*.truth.json`).

mod files;
pub mod memory;
pub mod metrics;
mod options;
pub mod program;
mod samples;
mod sim;
mod truth;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use truth::{
    Breakdown, DeviceTruth, GapSummary, GapTruth, GroundTruth, IterationTruth, NcclPayloadTruth,
};
pub use writer::{Flavour, empty_export, global_pid};

use files::{Files, Placement};
use options::shape_of;
pub use options::{NcclStream, Preset, SynthOptions};
pub use program::StragglerStall;
use program::{ALL_REDUCE, KERNELS, SEND_RECV, StepShape};
pub use sim::GraphTrace;
use sim::{RankSim, Stop};

/// The kernel of `program::KERNELS` whose short name contains `name` (the first).
pub fn kernel_index(name: &str) -> Option<usize> {
    program::KERNELS.iter().position(|k| k.short.contains(name))
}

const FIRST_PID: u32 = 48_211;
const TRACE_START_NS: i64 = 2_000_000_000;
const SCHEDULER_HOST_NS: i64 = 60_000_000;
const TIME_EMBEDDING_HOST_NS: i64 = 1_500_000;
const CROSS_DEVICE_WAIT_NS: i64 = 25_000;
/// Realistic traces: nvFuser's JIT compilation in the first step, and the checkpoint's
/// blocking copy of the weights.
const JIT_COMPILE_NS: i64 = 340_000_000;
const CHECKPOINT_COPY_NS: i64 = 2_500_000_000;
/// Warm-up steps run their kernels this much slower (autotuning, cold caches).
const WARMUP_KERNEL_SCALE: f64 = 1.35;

/// Writes the built-in sample trace (the `tiny` preset) into `dir` and returns its path:
/// what the app opens when it is given no file.
pub fn write_sample_trace(dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join("wan2.1-sample-4gpu.sqlite");
    generate(&path, SynthOptions::new(Preset::Tiny))?;
    Ok(path)
}

pub fn truth_path(sqlite_path: &Path) -> PathBuf {
    sqlite_path.with_extension("truth.json")
}

fn pid_of_rank(rank: u32) -> u32 {
    FIRST_PID + rank * 37
}

/// Writes a trace to `out` and its ground truth to [`truth_path`]; returns the truth.
pub fn generate(out: &Path, options: SynthOptions) -> Result<GroundTruth, String> {
    let truth = generate_into(&[out.to_path_buf()], &[0], &[UTC_START_NS], options)?;
    let json = serde_json::to_string_pretty(&truth).map_err(|e| e.to_string())?;
    std::fs::write(truth_path(out), json)
        .map_err(|e| format!("{}: {e}", truth_path(out).display()))?;
    Ok(truth)
}

/// The wall clock at a generated file's time 0.
const UTC_START_NS: i64 = 1_764_504_000_000_000_000;

/// One file of a run written rank by rank, and what the generator knows of its clock.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SplitFile {
    pub path: PathBuf,
    pub rank: u32,
    /// The file's times are the run's minus this.
    pub shift_ns: i64,
    /// Added to the file's times to put them on the first file's clock: the truth the
    /// alignment is tested against.
    pub offset_ns: i64,
    /// Its `utcEpochNs`, a few ms off the truth as real clocks are.
    pub utc_start_ns: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SplitTruth {
    pub files: Vec<SplitFile>,
    /// On the run's own clock, devices numbered by rank.
    pub run: GroundTruth,
}

/// Writes the run one file per rank into `dir` (`rank00.sqlite`, …): each with its own
/// clock (seconds apart), a UTC start a few ms off, and its GPU as device 0; the truth,
/// offsets included, in `dir/truth.json`.
pub fn generate_split(dir: &Path, options: SynthOptions) -> Result<SplitTruth, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ranks = shape_of(&options).ranks;
    let mut rng = fastrand::Rng::with_seed(options.seed.wrapping_add(20));
    let shifts: Vec<i64> = (0..ranks)
        .map(|r| -(r as i64 * 1_100_000_000 + rng.i64(0..400_000_000)))
        .collect();
    // Clocks are synchronised to milliseconds at best (NTP): up to ±5 ms off.
    let utc: Vec<i64> = shifts
        .iter()
        .map(|s| UTC_START_NS + s + rng.i64(-5_000_000..=5_000_000))
        .collect();
    let paths: Vec<PathBuf> = (0..ranks)
        .map(|r| dir.join(format!("rank{r:02}.sqlite")))
        .collect();
    let run = generate_into(&paths, &shifts, &utc, options)?;
    let files = paths
        .into_iter()
        .enumerate()
        .map(|(r, path)| SplitFile {
            path,
            rank: r as u32,
            shift_ns: shifts[r],
            offset_ns: shifts[r] - shifts[0],
            utc_start_ns: utc[r],
        })
        .collect();
    let truth = SplitTruth { files, run };
    let json = serde_json::to_string_pretty(&truth).map_err(|e| e.to_string())?;
    let path = dir.join("truth.json");
    std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(truth)
}

/// Simulates the run and writes it: all ranks into one file (`outs` has one), or rank r
/// into `outs[r]` with its times less `shifts[r]` and its GPU as device 0.
fn generate_into(
    outs: &[PathBuf],
    shifts: &[i64],
    utc: &[i64],
    options: SynthOptions,
) -> Result<GroundTruth, String> {
    let shape = shape_of(&options);
    let place = Placement {
        split: outs.len() > 1,
        same_pids: options.same_pids,
    };
    let mut files = Files::create(outs, shifts, place, &options)?;
    let nccl_calls = options
        .nccl_calls
        .filter(|_| options.flavour == Flavour::Nsys2024 && !options.gradient_all_reduce);
    let mut ranks = new_ranks(&shape, &options, nccl_calls);
    files.write_processes(&mut ranks, shape.ranks, nccl_calls)?;
    let collective = if options.gradient_all_reduce {
        ALL_REDUCE
    } else {
        SEND_RECV
    };
    // Each all-to-all's message per peer and transfer time: the payload truth.
    let mut transfers: Vec<(u64, i64)> = Vec::new();
    // With --memory-usage, each rank's device-memory events so far (for the truth).
    let mut memory_events: Vec<Vec<memory::Event>> = vec![Vec::new(); ranks.len()];
    let straggler_pause_ns = options
        .straggler_pause_ns
        .unwrap_or(nominal_step_ns(shape.blocks) * 2 / 5);
    let mut collective_rng = fastrand::Rng::with_seed(options.seed.wrapping_add(7));
    for step in 0..shape.steps {
        let programs: Vec<Vec<program::Instr>> = (0..shape.ranks)
            .map(|r| {
                let shape = step_shape(&options, &shape, step, r, straggler_pause_ns);
                program::step_program(step, &shape)
            })
            .collect();
        for rank in ranks.iter_mut() {
            rank.step = step;
            rank.set_kernel_scale(if step < shape.warmup {
                WARMUP_KERNEL_SCALE
            } else {
                1.0
            });
        }
        run_step(
            &mut ranks,
            &programs,
            collective,
            &mut collective_rng,
            &mut transfers,
        );
        for (r, rank) in ranks.iter_mut().enumerate() {
            files.flush_rank(r, rank, &options)?;
            if options.memory_usage {
                files.write_memory_events(r, rank, step, &mut memory_events[r])?;
            }
        }
    }
    files.write_polling_threads(&mut ranks, options.cpu_samples)?;
    let gpu_metrics = if options.gpu_metrics {
        Some(files.write_gpu_metrics(&ranks)?)
    } else {
        None
    };
    let tables = files.finish(&ranks, shape.ranks, utc)?;
    Ok(ground_truth(Written {
        options: &options,
        shape: &shape,
        place,
        ranks: &ranks,
        tables,
        transfers: &transfers,
        memory_events,
        gpu_metrics,
        nccl_calls,
        straggler_pause_ns,
    }))
}

/// The ranks' simulations, before their first step.
fn new_ranks(
    shape: &options::Shape,
    options: &SynthOptions,
    nccl_calls: Option<bool>,
) -> Vec<RankSim> {
    (0..shape.ranks)
        .map(|r| {
            RankSim::new(
                r,
                options.seed,
                TRACE_START_NS + r as i64 * 37_000,
                options.nccl_stream == NcclStream::Separate,
                !options.clean,
            )
            .with_kernel_factor(options.scale_kernel)
            .with_op_host_ns(options.host_per_op_ns)
            .with_dlprof_markers(options.dlprof_markers)
            .with_late_nccl_consumers(options.gradient_all_reduce)
            .with_nccl_calls(nccl_calls.map(|blobs| (r, shape.ranks, blobs)))
        })
        .collect()
}

/// A step's GPU time as planned, before noise: the base of the straggler's pause.
fn nominal_step_ns(blocks: u32) -> i64 {
    2 * blocks as i64
        * [0usize, 1, 2, 3, 2, 4, 0, 5, 6, 7, 8]
            .iter()
            .map(|&k| KERNELS[k].duration_ns)
            .sum::<i64>()
}

/// What rank `r` runs in `step`, as the options ask.
fn step_shape(
    options: &SynthOptions,
    shape: &options::Shape,
    step: u32,
    r: u32,
    straggler_pause_ns: i64,
) -> StepShape {
    StepShape {
        realistic: !options.clean,
        step_sync: !options.no_step_sync,
        jit_ns: (!options.clean && step == 0).then_some(JIT_COMPILE_NS),
        checkpoint_ns: (!options.clean && options.checkpoint && step == shape.checkpoint_step)
            .then_some(CHECKPOINT_COPY_NS),
        blocks: shape.blocks,
        scheduler_ns: SCHEDULER_HOST_NS,
        time_embedding_host_ns: TIME_EMBEDDING_HOST_NS,
        cross_device_wait_ns: CROSS_DEVICE_WAIT_NS,
        straggler_pause_ns: (step == shape.slow_step
            && r == shape.straggler
            && !options.no_straggler)
            .then_some(straggler_pause_ns),
        straggler_stall: options.straggler_stall,
        sync_after_collective: options.sync_after_collective,
        cuda_graphs: options.cuda_graphs.is_some(),
        graph_attention: options.graph_attention,
        small_ops: options.small_ops,
        sync_removed: options.sync_removed,
        gradient_all_reduce: options.gradient_all_reduce,
    }
}

/// Runs every rank through its step's program, collective by collective: each collective
/// ends a transfer after its last rank arrives.
fn run_step(
    ranks: &mut [RankSim],
    programs: &[Vec<program::Instr>],
    collective: usize,
    rng: &mut fastrand::Rng,
    transfers: &mut Vec<(u64, i64)>,
) {
    let mut pcs = vec![0usize; ranks.len()];
    loop {
        let stops: Vec<Stop> = ranks
            .iter_mut()
            .zip(programs)
            .zip(pcs.iter_mut())
            .map(|((rank, p), pc)| rank.run(p, pc))
            .collect();
        let starts: Vec<i64> = stops
            .iter()
            .filter_map(|s| match s {
                Stop::AtCollective { start } => Some(*start),
                Stop::Finished => None,
            })
            .collect();
        if starts.is_empty() {
            return;
        }
        assert_eq!(
            starts.len(),
            ranks.len(),
            "every rank joins every collective"
        );
        let transfer = KERNELS[collective].duration_ns as f64 * (0.97 + 0.06 * rng.f64());
        let end = starts.iter().max().unwrap() + transfer as i64;
        let k = ranks[0].collectives_launched.saturating_sub(1);
        transfers.push((sim::MESSAGE_BYTES[(k % 2) as usize], transfer as i64));
        for rank in ranks.iter_mut() {
            rank.finish_collective(collective, end);
        }
    }
}

/// What a run wrote, for its ground truth.
struct Written<'a> {
    options: &'a SynthOptions,
    shape: &'a options::Shape,
    place: Placement,
    ranks: &'a [RankSim],
    tables: BTreeMap<&'static str, u64>,
    transfers: &'a [(u64, i64)],
    memory_events: Vec<Vec<memory::Event>>,
    gpu_metrics: Option<Vec<metrics::MetricsTruth>>,
    nccl_calls: Option<bool>,
    straggler_pause_ns: i64,
}

/// The numbers the run was made to have: what the analyses are checked against.
fn ground_truth(run: Written) -> GroundTruth {
    let Written {
        options,
        shape,
        place,
        ranks,
        tables,
        transfers,
        mut memory_events,
        gpu_metrics,
        nccl_calls,
        straggler_pause_ns,
    } = run;
    let mut devices = Vec::new();
    let mut raw_gaps = Vec::new();
    let mut per_device = Vec::new();
    for (r, rank) in ranks.iter().enumerate() {
        let (device, device_gaps) = truth::device_truth(rank, r as u32, place.pid(r as u32));
        devices.push(device);
        raw_gaps.push(device_gaps);
        let durations_ns = truth::step_spans(rank, shape.steps);
        // Among the steady-state steps: the first is slow on purpose (warm-up, JIT).
        let slowest_index = (shape.warmup as usize..durations_ns.len())
            .max_by_key(|&i| durations_ns[i])
            .unwrap_or(0);
        per_device.push(truth::IterationDevice {
            device: r as u32,
            cpu_durations_ns: rank.step_cpu.iter().map(|(s, e)| e - s).collect(),
            durations_ns,
            slowest_index,
        });
    }
    let all_gaps: usize = raw_gaps.iter().map(Vec::len).sum();
    let gaps_listed_from_ns = if all_gaps <= truth::LIST_ALL_GAPS_UP_TO {
        0
    } else {
        truth::LISTED_GAP_MIN_NS
    };
    let mut gaps = Vec::new();
    let mut gap_summary = Vec::new();
    for (r, (rank, device_gaps)) in ranks.iter().zip(&raw_gaps).enumerate() {
        gap_summary.push(truth::summarise_gaps(rank, r as u32, device_gaps));
        gaps.extend(
            device_gaps
                .iter()
                .filter(|g| g.duration_ns >= gaps_listed_from_ns)
                .map(|g| {
                    let mut t = truth::describe_gap(rank, r as u32, g);
                    if options.cpu_samples {
                        (t.cpu_samples, t.cpu_top_frame) = truth::top_sampled_frame(
                            &rank.sample_leaves,
                            t.start_ns,
                            t.duration_ns,
                        );
                    }
                    t
                }),
        );
    }
    let not_ranges = if nccl_calls.is_some() { 3 } else { 2 };
    let nvtx_ranges =
        tables.get("NVTX_EVENTS").copied().unwrap_or(0) - not_ranges * shape.ranks as u64;
    let cuda_graphs = options.cuda_graphs.map(|trace_level| truth::GraphsTruth {
        trace_level,
        launches: ranks.iter().map(|r| r.graph_launches).sum(),
        kernels: ranks.iter().map(|r| r.graph_kernels).sum(),
        graphs: if options.graph_attention { 2 } else { 4 },
    });
    let memory_usage = options.memory_usage.then(|| {
        ranks
            .iter()
            .zip(&mut memory_events)
            .enumerate()
            .map(|(r, (rank, events))| {
                events.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1 > 0)));
                let ends: Vec<i64> = rank.step_cpu.iter().map(|s| s.1).collect();
                memory::truth(place.device(r), events, &ends)
            })
            .collect()
    });
    GroundTruth {
        gpu_metrics,
        memory_usage,
        cuda_graphs,
        preset: format!("{:?}", options.preset).to_lowercase(),
        flavour: match options.flavour {
            Flavour::Nsys2024 => "2024".into(),
            Flavour::Nsys2023 => "2023".into(),
        },
        nccl_stream: format!("{:?}", options.nccl_stream).to_lowercase(),
        tables: tables
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        nvtx_ranges,
        kernels: truth::kernel_totals(ranks),
        nccl_wait: truth::nccl_wait_truth(ranks),
        nccl_payload: (nccl_calls == Some(true))
            .then(|| truth::nccl_payload_truth(transfers, shape.ranks)),
        devices,
        gap_summary,
        gaps_listed_from_ns,
        gaps,
        iterations: IterationTruth {
            marker: "denoising_step_#".into(),
            count: shape.steps as usize,
            warmup: shape.warmup,
            per_device,
            slowest_index: shape.slow_step as usize,
            straggler_device: shape.straggler,
            straggler_pause_ns,
            straggler_activity: match options.straggler_stall {
                StragglerStall::Read => "read()".into(),
                StragglerStall::Cpu => "attention".into(),
            },
        },
    }
}
