//! Generator of nsys-shaped SQLite exports, modelled on the Wan2.1 text-to-video run of the
//! seed documents: 4 ranks (one process and GPU each, correlationIds restarting in each),
//! compute and `ncclDevKernel_SendRecv` on one stream (or NCCL on its own stream), NVTX
//! `denoising_step_N > cfg_cond|cfg_uncond > transformer_block_N > attention|ffn > aten::…`,
//! a synchronising `.item()` per step, warm-up copies, and one straggler rank that makes one
//! step the slowest. Beside the file it writes the ground truth it knows (`*.truth.json`).

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

/// Where each rank goes: its file, its GPU's id there, its pid.
#[derive(Clone, Copy)]
struct Placement {
    /// A file a rank (else all in one).
    split: bool,
    /// Ranks in files of their own may all have the same pid (containers: pid 1 on every
    /// node); in one file each process has its own.
    same_pids: bool,
}

impl Placement {
    fn file(self, r: usize) -> usize {
        if self.split { r } else { 0 }
    }

    fn device(self, r: usize) -> u32 {
        if self.split { 0 } else { r as u32 }
    }

    fn pid(self, r: u32) -> u32 {
        if self.split && self.same_pids {
            pid_of_rank(0)
        } else {
            pid_of_rank(r)
        }
    }
}

/// The error of a write, naming the (first) file.
fn sql(out: &Path) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| format!("{}: {e}", out.display())
}

/// The files being written, with each file's clock shift.
struct Files<'a> {
    writers: Vec<writer::Writer>,
    shifts: &'a [i64],
    place: Placement,
    first: &'a Path,
}

impl<'a> Files<'a> {
    fn create(
        outs: &'a [PathBuf],
        shifts: &'a [i64],
        place: Placement,
        options: &SynthOptions,
    ) -> Result<Self, String> {
        let mut writers = outs
            .iter()
            .map(|out| {
                writer::Writer::create(out, options.flavour, outs.len())
                    .map_err(|e| format!("{}: {e}", out.display()))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let first = outs[0].as_path();
        let (nsys_version, schema_version) = match options.flavour {
            Flavour::Nsys2024 => ("2024.6.2.225", "3.16.1"),
            Flavour::Nsys2023 => ("2023.1.2.43", "3.1.2"),
        };
        for w in &mut writers {
            w.metadata(nsys_version, schema_version)
                .map_err(sql(first))?;
            if let Some(mode) = options.cuda_graphs {
                w.graph_trace_mode(mode).map_err(sql(first))?;
            }
        }
        Ok(Self {
            writers,
            shifts,
            place,
            first,
        })
    }

    /// Rank `r`'s file and the shift of its clock.
    fn of(&mut self, r: usize) -> (&mut writer::Writer, i64) {
        let f = self.place.file(r);
        (&mut self.writers[f], self.shifts[f])
    }

    /// Each rank's process, event-handler thread, NVTX domains and warm-up copies.
    fn write_processes(
        &mut self,
        ranks: &mut [RankSim],
        rank_count: u32,
        nccl_calls: Option<bool>,
    ) -> Result<(), String> {
        let sql = sql(self.first);
        for (r, rank) in ranks.iter_mut().enumerate() {
            let pid = self.place.pid(r as u32);
            let (w, shift) = self.of(r);
            w.process(pid, "python3", "pt_main_thread").map_err(&sql)?;
            w.thread_name(pid, pid + 2, "cuda-EvtHandlr")
                .map_err(&sql)?;
            w.nvtx_domain_and_mark(pid, 1, "wan2.1", rank.cpu + 500 - shift)
                .map_err(&sql)?;
            if let Some(blobs) = nccl_calls {
                w.nccl_domain(pid, rank.cpu + 200 - shift, r as u32, rank_count, blobs)
                    .map_err(&sql)?;
            }
            rank.warm_up_copies(4);
        }
        Ok(())
    }

    /// Writes rank `r`'s rows of the step just run.
    fn flush_rank(
        &mut self,
        r: usize,
        rank: &mut RankSim,
        options: &SynthOptions,
    ) -> Result<(), String> {
        let sql = sql(self.first);
        let (pid, device) = (self.place.pid(r as u32), self.place.device(r));
        let (w, shift) = self.of(r);
        flush_rows(
            w,
            pid,
            device,
            shift,
            rank,
            options.cuda_graphs,
            options.cpu_samples,
        )
        .map_err(sql)
    }

    /// Rank `r`'s device-memory events of `step`, each with the call that made it.
    fn write_memory_events(
        &mut self,
        r: usize,
        rank: &RankSim,
        step: u32,
        events: &mut Vec<memory::Event>,
    ) -> Result<(), String> {
        let Some(&span) = rank.step_cpu.get(step as usize) else {
            return Ok(());
        };
        let sql = sql(self.first);
        let (pid, device) = (self.place.pid(r as u32), self.place.device(r));
        let (w, shift) = self.of(r);
        for (k, e) in memory::step_events(r as u32, step, span)
            .into_iter()
            .enumerate()
        {
            // Each event's call (cudaMalloc, cudaFree, …), linked by correlation id as nsys
            // links them; ids above the simulation's own.
            let correlation_id =
                memory::CORRELATION_BASE + ((r as u32) << 20) + step * 16 + k as u32;
            // A free the GPU makes after the step's CPU time (stream-ordered) was asked for
            // by a `cudaFreeAsync` inside it.
            let (call_at, name) = if e.0 > span.1 {
                (span.1 - 1_500, "cudaFreeAsync")
            } else {
                (e.0, memory::call_name(e))
            };
            let call = sim::ApiRow {
                start: call_at - shift - memory::CALL_NS / 2,
                end: call_at - shift + memory::CALL_NS / 2,
                correlation_id,
                name,
            };
            w.api(pid, &call).map_err(&sql)?;
            w.memory_event(pid, device, (e.0 - shift, e.1, e.2, e.3), correlation_id)
                .map_err(&sql)?;
            events.push(e);
        }
        Ok(())
    }

    /// Each rank's CUDA event handler thread, in `poll` the whole run.
    fn write_polling_threads(
        &mut self,
        ranks: &mut [RankSim],
        cpu_samples: bool,
    ) -> Result<(), String> {
        let sql = sql(self.first);
        for (r, rank) in ranks.iter_mut().enumerate() {
            let end = rank.cpu;
            rank.polling_thread(TRACE_START_NS, end);
            let pid = self.place.pid(r as u32);
            let (w, shift) = self.of(r);
            let rows = std::mem::take(&mut rank.rows.osrt);
            for mut row in rows {
                row.start -= shift;
                row.end -= shift;
                let backtrace = if cpu_samples {
                    let mut frames = samples::os_call_frames(row.name);
                    frames.extend([("start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6")]);
                    frames
                } else {
                    Vec::new()
                };
                w.osrt(pid, &row, &backtrace).map_err(&sql)?;
            }
        }
        Ok(())
    }

    /// Each GPU's metrics sampled over the run, with their means over its kernels' span
    /// (the truth).
    fn write_gpu_metrics(
        &mut self,
        ranks: &[RankSim],
    ) -> Result<Vec<metrics::MetricsTruth>, String> {
        let sql = sql(self.first);
        let mut out = Vec::new();
        for (r, rank) in ranks.iter().enumerate() {
            let gpu = self.place.device(r);
            let (w, shift) = self.of(r);
            let mut ops = rank.truth.clone();
            ops.sort_by_key(|o| o.start);
            let names: Vec<(i64, &str)> = metrics::METRICS
                .iter()
                .enumerate()
                .map(|(k, n)| (metrics::metric_id(gpu, k), *n))
                .collect();
            w.gpu_metric_names(metrics::type_id(gpu), &names)
                .map_err(&sql)?;
            let kernels = || ops.iter().filter(|o| (o.op as usize) < KERNELS.len());
            let (first, last) = (
                kernels().map(|o| o.start).min().unwrap_or(0),
                kernels().map(|o| o.end).max().unwrap_or(0),
            );
            let (from, to) = (
                ops.first().map_or(0, |o| o.start),
                ops.iter().map(|o| o.end).max().unwrap_or(0),
            );
            let mut sums = [0.0f64; metrics::METRICS.len()];
            let mut n = 0usize;
            let mut t = from - from.rem_euclid(metrics::PERIOD_NS);
            while t <= to {
                let v = metrics::values_at(gpu, &ops, t);
                for (k, &value) in v.iter().enumerate() {
                    w.gpu_metric(
                        t - shift,
                        metrics::type_id(gpu),
                        metrics::metric_id(gpu, k),
                        metrics::raw(gpu, k, value),
                    )
                    .map_err(&sql)?;
                }
                if t >= first && t < last {
                    for (sum, value) in sums.iter_mut().zip(v) {
                        *sum += value;
                    }
                    n += 1;
                }
                t += metrics::PERIOD_NS;
            }
            out.push(metrics::MetricsTruth {
                device: gpu,
                samples: n,
                means: metrics::METRICS
                    .iter()
                    .zip(sums)
                    .map(|(name, s)| (name.to_string(), s / n.max(1) as f64))
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Writes each file's machine and capture window and closes it; the rows written, a
    /// table.
    fn finish(
        self,
        ranks: &[RankSim],
        rank_count: u32,
        utc: &[i64],
    ) -> Result<BTreeMap<&'static str, u64>, String> {
        let sql = sql(self.first);
        let last_end = ranks
            .iter()
            .flat_map(|r| r.truth.iter().map(|o| o.end))
            .max()
            .unwrap_or(TRACE_START_NS);
        let last_cpu = ranks.iter().map(|r| r.cpu).max().unwrap_or(0);
        let capture = (0, last_end.max(last_cpu) + 1_000_000);
        let gpus = if self.place.split {
            1
        } else {
            rank_count.max(8)
        };
        let mut tables: BTreeMap<&'static str, u64> = BTreeMap::new();
        for (f, mut w) in self.writers.into_iter().enumerate() {
            let shifted = (capture.0 - self.shifts[f], capture.1 - self.shifts[f]);
            w.machine(gpus, "NVIDIA H100 80GB HBM3", shifted, utc[f])
                .map_err(&sql)?;
            for (table, n) in w.finish().map_err(&sql)? {
                *tables.entry(table).or_default() += n;
            }
        }
        Ok(tables)
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

fn flush_rows(
    writer: &mut writer::Writer,
    pid: u32,
    device: u32,
    shift: i64,
    rank: &mut RankSim,
    graphs: Option<GraphTrace>,
    cpu_samples: bool,
) -> rusqlite::Result<()> {
    let mut rows = std::mem::take(&mut rank.rows);
    if shift != 0 {
        rows.shift(-shift);
    }
    if cpu_samples {
        // The main thread sampled up to where its step ended.
        let index = samples::StepIndex::new(&rows);
        while rank.next_sample < rank.cpu {
            let t = rank.next_sample;
            let stack = index.stack_at(t - shift);
            rank.sample_leaves.push((t, stack[0].0));
            writer.sample(pid, 0, t - shift, &stack)?;
            rank.next_sample += samples::SAMPLE_PERIOD_NS;
        }
    }
    for row in &rows.kernels {
        // At graph level a graph's kernels are not recorded: its execution is.
        if row.graph_node.is_none() || graphs == Some(GraphTrace::Node) {
            writer.kernel(pid, device, row)?;
        }
    }
    if graphs == Some(GraphTrace::Graph) {
        for row in &rows.graph_execs {
            writer.graph_exec(pid, device, row)?;
        }
    }
    for row in &rows.graph_events {
        writer.graph_event(pid, row)?;
    }
    for row in &rows.node_events {
        writer.node_event(pid, row)?;
    }
    for row in &rows.memcpys {
        writer.memcpy(pid, device, row)?;
    }
    for row in &rows.memsets {
        writer.memset(pid, device, row)?;
    }
    for row in &rows.api {
        writer.api(pid, row)?;
    }
    writer.sched_events(pid, &rows.api)?;
    // Ranges close child first, but nsys's exports list each thread's ranges by start (the
    // outer one first), as every shared real export does: written in that order.
    rows.nvtx
        .sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    for row in &rows.nvtx {
        writer.nvtx_range(pid, row)?;
    }
    for row in &rows.osrt {
        let backtrace = if cpu_samples {
            let mut frames = samples::os_call_frames(row.name);
            frames.extend([("generate", "/app/wan/generate.py")]);
            frames
        } else {
            Vec::new()
        };
        writer.osrt(pid, row, &backtrace)?;
    }
    Ok(())
}
