//! The files a generated run is written to: each rank's rows flushed into its file's
//! writer, on that file's clock.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::program::KERNELS;
use super::sim::{self, RankSim};
use super::writer::{self, Flavour};
use super::{GraphTrace, SynthOptions, TRACE_START_NS, memory, metrics, pid_of_rank, samples};

/// Where each rank goes: its file, its GPU's id there, its pid.
#[derive(Clone, Copy)]
pub(super) struct Placement {
    /// A file a rank (else all in one).
    pub(super) split: bool,
    /// Ranks in files of their own may all have the same pid (containers: pid 1 on every
    /// node); in one file each process has its own.
    pub(super) same_pids: bool,
}

impl Placement {
    pub(super) fn file(self, r: usize) -> usize {
        if self.split { r } else { 0 }
    }

    pub(super) fn device(self, r: usize) -> u32 {
        if self.split { 0 } else { r as u32 }
    }

    pub(super) fn pid(self, r: u32) -> u32 {
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
pub(super) struct Files<'a> {
    writers: Vec<writer::Writer>,
    shifts: &'a [i64],
    place: Placement,
    first: &'a Path,
}

impl<'a> Files<'a> {
    pub(super) fn create(
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
    pub(super) fn write_processes(
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
    pub(super) fn flush_rank(
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
    pub(super) fn write_memory_events(
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
    pub(super) fn write_polling_threads(
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
                let outermost = ("start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6");
                let backtrace = os_call_backtrace(cpu_samples, row.name, outermost);
                w.osrt(pid, &row, &backtrace).map_err(&sql)?;
            }
        }
        Ok(())
    }

    /// Each GPU's metrics sampled over the run, with their means over its kernels' span
    /// (the truth).
    pub(super) fn write_gpu_metrics(
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
    pub(super) fn finish(
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
        let backtrace =
            os_call_backtrace(cpu_samples, row.name, ("generate", "/app/wan/generate.py"));
        writer.osrt(pid, row, &backtrace)?;
    }
    Ok(())
}

/// An OS call's backtrace when CPU samples are written (none otherwise): its frames, then
/// `outermost`.
fn os_call_backtrace(
    cpu_samples: bool,
    name: &str,
    outermost: samples::Frame,
) -> Vec<samples::Frame> {
    if !cpu_samples {
        return Vec::new();
    }
    let mut frames = samples::os_call_frames(name);
    frames.push(outermost);
    frames
}
