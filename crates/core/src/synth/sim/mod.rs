//! Simulates each rank's CPU thread and GPU streams through the step programs, producing
//! the rows nsys would record and, beside them, what the generator knows to be true
//! (which op waited for what, the NVTX path of each launch).
//!
//! The ranks are coupled by NCCL: a collective's kernels end together, `transfer` after
//! the last rank's kernel starts. Ranks therefore advance in lock-step, one collective at a
//! time.

use super::program::{Instr, KERNELS};

mod graphs;
use graphs::GraphInFlight;
mod rows;
pub use rows::*;

/// Device-side gap between back-to-back kernels on a stream. Clean traces: below the 1 µs
/// gap threshold. Realistic ones, as real exports show: 1–3 µs, so that nearly every
/// kernel boundary is a gap.
const MIN_SPACING_NS: i64 = 400;
const SPACING_JITTER_NS: u64 = 500;
const REAL_MIN_SPACING_NS: i64 = 1_000;
const REAL_SPACING_JITTER_NS: u64 = 2_000;
/// CPU side of `cudaLaunchKernel`, and the time until the GPU can start the kernel (with
/// up to this much jitter in realistic traces).
const LAUNCH_CALL_NS: i64 = 5_000;
const LAUNCH_LATENCY_NS: i64 = 3_000;
const LAUNCH_LATENCY_JITTER_NS: u64 = 2_000;
const NVTX_CALL_NS: i64 = 700;
/// The event handler thread's `poll` calls.
const POLL_NS: i64 = 100_000_000;

pub const COMPUTE_STREAM: u32 = 7;
pub const SEPARATE_NCCL_STREAM: u32 = 20;
pub const COPY_STREAM: u32 = 13;

/// Rows produced since the last flush.
#[derive(Default)]
pub struct Rows {
    pub kernels: Vec<KernelRow>,
    pub memcpys: Vec<MemRow>,
    pub memsets: Vec<MemRow>,
    pub api: Vec<ApiRow>,
    pub nvtx: Vec<NvtxRow>,
    pub osrt: Vec<OsrtRow>,
    pub graph_execs: Vec<GraphExecRow>,
    pub graph_events: Vec<GraphEventRow>,
    pub node_events: Vec<NodeEventRow>,
}

pub struct RankSim {
    rng: fastrand::Rng,
    pub cpu: i64,
    stream_free: [i64; 3],
    nccl_separate: bool,
    corr: u32,
    /// Open NVTX ranges: (text, start, id into `path_texts`).
    nvtx_stack: Vec<(String, i64, u32)>,
    synced_since_launch: bool,
    pending_extra_wait: i64,
    kernel_scale: f64,
    /// One kernel (by index) scaled on top of `kernel_scale`: see `SynthOptions::scale_kernel`.
    kernel_factor: Option<(usize, f64)>,
    pub step: u32,
    pub rows: Rows,
    pub truth: Vec<TruthOp>,
    pub path_arena: Vec<u32>,
    pub path_texts: Vec<String>,
    /// CPU (NVTX) extent of each denoising step.
    pub step_cpu: Vec<(i64, i64)>,
    path_text_ids: std::collections::HashMap<String, u32>,
    /// With NCCL on a stream of its own: the ends of the collective before the latest one
    /// and of the latest, `[before, latest]`.
    nccl_ends: [i64; 2],
    /// A launched NCCL kernel waiting for the other ranks: (start, correlation id, wait).
    pending_nccl: Option<(i64, u32, Wait, (u32, u8))>,
    /// Shaped like a real export (see `StepShape::realistic`).
    realistic: bool,
    /// The rank's aten op counter, for `seq =` / `op_id =` in record_shapes texts.
    op_id: u64,
    /// With NCCL's NVTX payloads: the job's ranks, this rank, and its collectives so far.
    pub nccl_calls: Option<(u32, u32, bool)>,
    pub collectives_launched: u64,
    /// Draws of `HostWorkBetween`, apart from `rng` (see there).
    python_rng: fastrand::Rng,
    /// The Python of one aten op (`Instr::OpHostWork`).
    pub op_host_ns: i64,
    /// The graphs captured so far (a graph is captured at its first launch).
    captured: Vec<u32>,
    /// Graph launches so far, and the kernels they ran.
    pub graph_launches: u64,
    pub graph_kernels: u64,
    /// With `--cpu-samples`: the next sample's time, and each sample's time with its
    /// innermost frame (the truth of what a gap's samples name).
    pub next_sample: i64,
    pub sample_leaves: Vec<(i64, &'static str)>,
    /// NVTX as DLProf records it (see `SynthOptions::dlprof_markers`).
    dlprof: bool,
    /// A graph launch whose nodes are still being run: it stopped at a collective node.
    graph_in_flight: Option<GraphInFlight>,
    /// With NCCL on a stream of its own: a collective's result is needed only after the
    /// next collective (gradient buckets); else by the next kernel (an all-to-all's output
    /// is the next op's input).
    nccl_late_consumers: bool,
    /// A sync emptied the queue and every op since waited for its launch, with the lead
    /// the last sync cost the CPU (its wait) not yet spent on their gaps.
    drained: bool,
    lead_left: i64,
    sync_lead: i64,
    /// The latest end of an op recorded so far.
    busy_until: i64,
}

impl Rows {
    /// Every time moved by `dt` (a rank's file on a clock of its own).
    pub fn shift(&mut self, dt: i64) {
        for k in &mut self.kernels {
            k.start += dt;
            k.end += dt;
        }
        for m in self.memcpys.iter_mut().chain(&mut self.memsets) {
            m.start += dt;
            m.end += dt;
        }
        for a in &mut self.api {
            a.start += dt;
            a.end += dt;
        }
        for n in &mut self.nvtx {
            n.start += dt;
            n.end += dt;
        }
        for o in &mut self.osrt {
            o.start += dt;
            o.end += dt;
        }
        for g in &mut self.graph_execs {
            g.start += dt;
            g.end += dt;
        }
        for g in &mut self.graph_events {
            g.start += dt;
            g.end += dt;
        }
        for n in &mut self.node_events {
            n.start += dt;
            n.end += dt;
        }
    }
}

/// What running a program did: finished, or stopped at an NCCL kernel.
pub enum Stop {
    Finished,
    AtCollective { start: i64 },
}

impl RankSim {
    pub fn new(rank: u32, seed: u64, start_ns: i64, nccl_separate: bool, realistic: bool) -> Self {
        Self {
            rng: fastrand::Rng::with_seed(
                seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(rank as u64 + 1)),
            ),
            cpu: start_ns,
            stream_free: [start_ns; 3],
            nccl_separate,
            corr: 0,
            nvtx_stack: Vec::new(),
            synced_since_launch: false,
            pending_extra_wait: 0,
            kernel_scale: 1.0,
            kernel_factor: None,
            step: u32::MAX,
            rows: Rows::default(),
            truth: Vec::new(),
            path_arena: Vec::new(),
            path_texts: Vec::new(),
            step_cpu: Vec::new(),
            path_text_ids: Default::default(),
            nccl_ends: [start_ns; 2],
            pending_nccl: None,
            realistic,
            // Ranks' op counters do not line up in real runs (data loading, warm-up differ):
            // each rank's texts are its own.
            op_id: rank as u64 * 1_000_003,
            nccl_calls: None,
            collectives_launched: 0,
            python_rng: fastrand::Rng::with_seed(seed.wrapping_add(rank as u64 * 7919 + 101)),
            captured: Vec::new(),
            op_host_ns: 6_000,
            graph_launches: 0,
            graph_kernels: 0,
            next_sample: start_ns,
            sample_leaves: Vec::new(),
            dlprof: false,
            graph_in_flight: None,
            nccl_late_consumers: false,
            drained: false,
            lead_left: 0,
            sync_lead: 0,
            busy_until: i64::MIN,
        }
    }

    /// NCCL's calls written as NVTX ranges: (this rank, ranks in the job, with payloads).
    pub fn with_nccl_calls(mut self, calls: Option<(u32, u32, bool)>) -> Self {
        self.nccl_calls = calls;
        self
    }

    /// An all-to-all's NCCL calls before its launch, as PyTorch makes them: a group of a
    /// send and a receive to every rank, itself included. (NCCL launches inside
    /// `ncclGroupEnd`; here the group closes just before the launch, so the program's NVTX
    /// ranges stay the innermost around it.)
    fn nccl_group(&mut self) {
        let Some((_, ranks, blobs)) = self.nccl_calls else {
            return;
        };
        let bytes = MESSAGE_BYTES[(self.collectives_launched % 2) as usize];
        self.collectives_launched += 1;
        let range = |sim: &mut Self, text: &str, nccl: Option<Vec<u8>>| {
            let start = sim.cpu;
            sim.cpu += 800;
            sim.rows.nvtx.push(NvtxRow {
                start,
                end: sim.cpu,
                text: text.to_string(),
                color: None,
                nccl: Some(nccl.filter(|_| blobs).unwrap_or_default()),
            });
        };
        range(self, "ncclGroupStart", None);
        for peer in 0..ranks {
            let send = nccl_payload(SCHEMA_SEND, NCCL_COMM, bytes, peer, 0);
            range(self, "ncclSend", Some(send));
            let recv = nccl_payload(SCHEMA_RECV, NCCL_COMM, bytes, peer, 0);
            range(self, "ncclRecv", Some(recv));
        }
        range(self, "ncclGroupEnd", None);
        self.cpu += 500; // an end is inside a range: the launch comes after it
    }

    pub fn with_late_nccl_consumers(mut self, late: bool) -> Self {
        self.nccl_late_consumers = late;
        self
    }

    /// The end of the collective whose result compute launched now needs (see
    /// `nccl_late_consumers`).
    fn needed_collective_end(&self) -> i64 {
        if self.nccl_late_consumers {
            self.nccl_ends[0]
        } else {
            self.nccl_ends[1]
        }
    }

    pub fn with_dlprof_markers(mut self, dlprof: bool) -> Self {
        self.dlprof = dlprof;
        self
    }

    pub fn with_op_host_ns(mut self, ns: Option<i64>) -> Self {
        if let Some(ns) = ns {
            self.op_host_ns = ns.max(1);
        }
        self
    }

    pub fn with_kernel_factor(mut self, factor: Option<(usize, f64)>) -> Self {
        self.kernel_factor = factor;
        self
    }

    pub fn set_kernel_scale(&mut self, scale: f64) {
        self.kernel_scale = scale;
    }

    fn stream_slot(stream: u32) -> usize {
        match stream {
            COMPUTE_STREAM => 0,
            SEPARATE_NCCL_STREAM => 1,
            _ => 2,
        }
    }

    fn stream_of(&self, kernel: usize) -> u32 {
        if KERNELS[kernel].nccl && self.nccl_separate {
            SEPARATE_NCCL_STREAM
        } else {
            COMPUTE_STREAM
        }
    }

    fn next_corr(&mut self) -> u32 {
        self.corr += 1;
        self.corr
    }

    fn jitter(&mut self, ns: i64, spread: f64) -> i64 {
        let f = 1.0 + (self.rng.f64() * 2.0 - 1.0) * spread;
        (ns as f64 * f).round().max(1.0) as i64
    }

    fn spacing(&mut self) -> i64 {
        if self.realistic {
            REAL_MIN_SPACING_NS + self.rng.u64(0..REAL_SPACING_JITTER_NS) as i64
        } else {
            MIN_SPACING_NS + self.rng.u64(0..SPACING_JITTER_NS) as i64
        }
    }

    fn launch_latency(&mut self) -> i64 {
        if self.realistic {
            LAUNCH_LATENCY_NS + self.rng.u64(0..LAUNCH_LATENCY_JITTER_NS) as i64
        } else {
            LAUNCH_LATENCY_NS
        }
    }

    /// Opens an NVTX range; texts seen before share their id (unique ones are not looked
    /// up: millions of them).
    fn push_range(&mut self, text: String, unique: bool) {
        self.cpu += NVTX_CALL_NS;
        let known = if unique {
            None
        } else {
            self.path_text_ids.get(&text).copied()
        };
        let id = known.unwrap_or_else(|| {
            let id = self.path_texts.len() as u32;
            self.path_texts.push(text.clone());
            if !unique {
                self.path_text_ids.insert(text.clone(), id);
            }
            id
        });
        self.nvtx_stack.push((text, self.cpu, id));
    }

    fn api(&mut self, name: &'static str, ns: i64, corr: u32) -> (i64, i64) {
        let start = self.cpu;
        self.cpu += ns;
        self.rows.api.push(ApiRow {
            start,
            end: self.cpu,
            correlation_id: corr,
            name,
        });
        (start, self.cpu)
    }

    fn current_path(&mut self) -> (u32, u8) {
        let offset = self.path_arena.len() as u32;
        for i in 0..self.nvtx_stack.len() {
            let id = self.nvtx_stack[i].2;
            self.path_arena.push(id);
        }
        (offset, self.nvtx_stack.len() as u8)
    }

    /// An op's truth kept, a wait for its launch told apart by whether a sync emptied the
    /// queue and every op since waited for its launch too (the thread never got ahead):
    /// an after-sync wait.
    /// The lead a sync cost the CPU is as long as it waited: gaps of after-sync waits add
    /// up to no more (a longer one is the host's own: a JIT compilation).
    fn record(&mut self, mut op: TruthOp) {
        let idle_before = op.start.saturating_sub(self.busy_until);
        match op.wait {
            Wait::HostSync => (self.drained, self.lead_left) = (true, self.sync_lead),
            Wait::HostBound if self.drained && idle_before <= self.lead_left => {
                op.wait = Wait::AfterSync;
                self.lead_left -= idle_before;
            }
            _ => self.drained = false,
        }
        self.busy_until = self.busy_until.max(op.end);
        self.truth.push(op);
    }

    /// The thread just returned from a synchronising call (the last API call): the next
    /// launch waited for it.
    fn mark_synced(&mut self) {
        self.synced_since_launch = true;
        self.sync_lead = self.rows.api.last().map_or(0, |c| c.end - c.start);
    }

    /// When an op on `slot` may start, and why it waited if it did.
    fn schedule(&mut self, slot: usize, ready: i64, dependency: i64) -> (i64, Wait) {
        let base = self.stream_free[slot] + self.spacing();
        let start = base.max(ready).max(dependency);
        let wait = if start == base {
            Wait::None
        } else if dependency >= ready {
            Wait::Dependency
        } else if self.synced_since_launch {
            Wait::HostSync
        } else {
            Wait::HostBound
        };
        (start, wait)
    }

    /// Runs `program[*pc..]` until it ends or reaches an NCCL launch.
    pub fn run(&mut self, program: &[Instr], pc: &mut usize) -> Stop {
        if let Some(stop) = self.graph_nodes() {
            return stop;
        }
        while *pc < program.len() {
            let instr = &program[*pc];
            *pc += 1;
            match instr {
                Instr::Push(text) => self.push_range(text.clone(), false),
                Instr::PushOp { op, sizes } => self.push_op(op, sizes),
                Instr::Pop => self.pop_range(),
                Instr::GraphLaunch { graph, nodes } => {
                    if let Some(stop) = self.graph_launch(*graph, nodes) {
                        return stop;
                    }
                }
                Instr::HostWork(ns) => {
                    let ns = self.jitter(*ns, 0.05);
                    self.cpu += ns;
                }
                Instr::OpHostWork => {
                    let ns = self.jitter(self.op_host_ns, 0.05);
                    self.cpu += ns;
                }
                Instr::HostWorkBetween(lo, hi) => self.cpu += self.python_rng.i64(*lo..=*hi),
                Instr::Stall(ns) => self.cpu += ns,
                Instr::OsCall { name, ns } => {
                    let start = self.cpu;
                    self.cpu += ns;
                    self.rows.osrt.push(OsrtRow {
                        start,
                        end: self.cpu,
                        name,
                        tid_offset: 0,
                        return_value: 1 << 20,
                    });
                }
                Instr::HostWorkIn { ns, os_call } => self.host_work_in(*ns, os_call),
                Instr::CrossDeviceWait { extra_ns } => {
                    let corr = self.next_corr();
                    self.api("cudaStreamWaitEvent_v3020", 2_000, corr);
                    self.pending_extra_wait = *extra_ns;
                }
                Instr::Launch { kernel } => {
                    if let Some(stop) = self.launch(*kernel) {
                        return stop;
                    }
                }
                Instr::CopyToHost { bytes } => self.copy_to_host(*bytes),
                Instr::BlockingCopyToHost { bytes, ns } => self.blocking_copy_to_host(*bytes, *ns),
                Instr::Synchronize { device_wide } => self.synchronize(*device_wide),
            }
        }
        Stop::Finished
    }

    /// Opens an op's NVTX range, its text as `emit_nvtx(record_shapes=True)` writes it.
    fn push_op(&mut self, op: &str, sizes: &str) {
        self.op_id += 1;
        let id = self.op_id;
        let text = format!(
            "{op}, seq = {id}, op_id = {id}, sizes = {sizes}, input_op_ids = [({}, 0)]",
            id - 1
        );
        self.push_range(text, true);
    }

    /// Host work of about `ns`, its middle two thirds waiting in `os_call`.
    fn host_work_in(&mut self, ns: i64, os_call: &'static str) {
        let ns = self.jitter(ns, 0.05);
        self.rows.osrt.push(OsrtRow {
            start: self.cpu + ns / 6,
            end: self.cpu + ns * 5 / 6,
            name: os_call,
            tid_offset: 0,
            return_value: 0,
        });
        self.cpu += ns;
    }

    /// Launches `kernel`; an NCCL kernel stops the run at its collective.
    fn launch(&mut self, kernel: usize) -> Option<Stop> {
        if KERNELS[kernel].nccl {
            self.nccl_group();
        }
        let corr = self.next_corr();
        let call_ns = self.jitter(LAUNCH_CALL_NS, 0.2);
        let (_, call_end) = self.api("cudaLaunchKernel_v7000", call_ns, corr);
        let ready = call_end + self.launch_latency();
        let stream = self.stream_of(kernel);
        let slot = Self::stream_slot(stream);
        let mut dependency = 0;
        if self.nccl_separate {
            if KERNELS[kernel].nccl {
                // NCCL consumes what the compute stream produced.
                dependency = self.stream_free[0];
            } else {
                // Compute reads the collective's result (`whatif::NcclDependencies`): the
                // latest's, or with late consumers the one before.
                dependency = self.needed_collective_end();
            }
        }
        if self.pending_extra_wait > 0 && slot == 0 {
            dependency = dependency.max(self.stream_free[0] + self.pending_extra_wait);
            self.pending_extra_wait = 0;
        }
        let (start, wait) = self.schedule(slot, ready, dependency);
        self.synced_since_launch = false;
        let path = self.current_path();
        if KERNELS[kernel].nccl {
            self.pending_nccl = Some((start, corr, wait, path));
            return Some(Stop::AtCollective { start });
        }
        let dur = self.kernel_ns(kernel);
        self.finish_kernel(kernel, stream, start, start + dur, corr, wait, path);
        None
    }

    /// How long `kernel` runs this time: its nominal length, scaled (warm-up, a kernel made
    /// faster) and jittered.
    pub(super) fn kernel_ns(&mut self, kernel: usize) -> i64 {
        let factor = match self.kernel_factor {
            Some((k, f)) if k == kernel => f,
            _ => 1.0,
        };
        self.jitter(
            (KERNELS[kernel].duration_ns as f64 * self.kernel_scale * factor) as i64,
            0.03,
        )
    }

    /// An asynchronous device-to-host copy on the compute stream.
    fn copy_to_host(&mut self, bytes: u64) {
        let corr = self.next_corr();
        let (_, call_end) = self.api("cudaMemcpyAsync_v3020", 4_000, corr);
        let (start, wait) = self.schedule(0, call_end + LAUNCH_LATENCY_NS, 0);
        self.synced_since_launch = false;
        let end = start + 2_500;
        let path = self.current_path();
        self.stream_free[0] = end;
        self.record_copy(start, end, corr, bytes, wait, path);
    }

    /// A device-to-host copy the CPU waits for (`cudaMemcpy`): it synchronises.
    fn blocking_copy_to_host(&mut self, bytes: u64, ns: i64) {
        let corr = self.next_corr();
        let call_start = self.cpu;
        let latency = self.launch_latency();
        let (start, wait) = self.schedule(0, call_start + latency, 0);
        let end = start + ns;
        let path = self.current_path();
        self.stream_free[0] = end;
        // The call returns once the copy is done.
        self.api("cudaMemcpy_v3020", end + 4_000 - call_start, corr);
        self.mark_synced();
        self.record_copy(start, end, corr, bytes, wait, path);
    }

    /// A copy's row and its truth.
    fn record_copy(
        &mut self,
        start: i64,
        end: i64,
        corr: u32,
        bytes: u64,
        wait: Wait,
        path: (u32, u8),
    ) {
        self.rows.memcpys.push(MemRow {
            start,
            end,
            stream: COMPUTE_STREAM,
            correlation_id: corr,
            bytes,
            kind: 2,
        });
        self.record(TruthOp {
            start,
            end,
            op: OP_MEMCPY_DTOH,
            stream: COMPUTE_STREAM,
            wait,
            path,
            step: self.step,
        });
    }

    /// `cudaStreamSynchronize` on the compute stream, or `cudaDeviceSynchronize`.
    fn synchronize(&mut self, device_wide: bool) {
        let drained = if device_wide {
            self.stream_free.iter().copied().max().unwrap()
        } else {
            self.stream_free[0]
        };
        let start = self.cpu;
        let end = (drained + 3_000).max(start + 2_000);
        let corr = self.next_corr();
        let name = if device_wide {
            "cudaDeviceSynchronize_v3020"
        } else {
            "cudaStreamSynchronize_v3020"
        };
        self.api(name, end - start, corr);
        self.mark_synced();
    }

    /// Closes the innermost NVTX range.
    fn pop_range(&mut self) {
        let (text, start, _) = self.nvtx_stack.pop().expect("balanced program");
        self.cpu += NVTX_CALL_NS;
        let color = if text.starts_with("denoising_step_") {
            Some(0xFF76_B900)
        } else if text == "attention" {
            Some(0xFF1F_77B4)
        } else if text == "ffn" {
            Some(0xFFFF_7F0E)
        } else {
            None
        };
        if text.starts_with("denoising_step_") {
            self.step_cpu.push((start, self.cpu));
        }
        let text = if self.dlprof {
            // Only operators, each a record of where it was called.
            if !text.starts_with("aten::") && !text.starts_with("nccl:") {
                return;
            }
            // Where the op was called from, as a file and line: every op of the model one
            // template (the numbers differ), as a model's ops mostly come from one file.
            let op = text.split(',').next().unwrap_or(&text);
            let line = 100 + op.bytes().map(u32::from).sum::<u32>() % 900;
            self.op_id += 1;
            format!(
                "{{'traceMarker': [{}], 'funcStack': 'wan/modules/model.py:{line}'}}",
                self.op_id
            )
        } else {
            text
        };
        self.rows.nvtx.push(NvtxRow {
            start,
            end: self.cpu,
            text,
            color,
            nccl: None,
        });
    }

    /// Completes the NCCL kernel this rank stopped at, now that all ranks' starts are known.
    pub fn finish_collective(&mut self, kernel: usize, end: i64) {
        let (start, corr, wait, path) = self
            .pending_nccl
            .take()
            .expect("rank stopped at a collective");
        let end = end + self.rng.i64(0..2_000);
        self.nccl_ends = [self.nccl_ends[1], end];
        // A collective node of a graph runs on the stream the graph was launched on.
        let stream = if self.graph_in_flight.is_some() {
            COMPUTE_STREAM
        } else {
            self.stream_of(kernel)
        };
        self.finish_kernel(kernel, stream, start, end, corr, wait, path);
        if let Some(g) = &self.graph_in_flight {
            if let Some(row) = self.rows.kernels.last_mut() {
                row.graph_node = Some((exec_node(g.graph, g.next - 1), g.graph));
            }
            self.graph_kernels += 1;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_kernel(
        &mut self,
        kernel: usize,
        stream: u32,
        start: i64,
        end: i64,
        corr: u32,
        wait: Wait,
        path: (u32, u8),
    ) {
        self.stream_free[Self::stream_slot(stream)] = end;
        self.rows.kernels.push(KernelRow {
            start,
            end,
            stream,
            correlation_id: corr,
            kernel,
            graph_node: None,
        });
        self.record(TruthOp {
            start,
            end,
            op: kernel as u16,
            stream,
            wait,
            path,
            step: self.step,
        });
    }

    /// The CUDA event handler thread of the rank: in `poll` all run long, 100 ms a call,
    /// from `start` to `end` (never a gap's cause: it launches nothing).
    pub fn polling_thread(&mut self, start: i64, end: i64) {
        let mut t = start;
        while t < end {
            let e = (t + POLL_NS).min(end);
            self.rows.osrt.push(OsrtRow {
                start: t,
                end: e,
                name: "poll",
                tid_offset: 2,
                return_value: 0,
            });
            t = e + 1_000;
        }
    }

    /// Model weights copied to the GPU before the first step (outside the device window).
    pub fn warm_up_copies(&mut self, copies: u32) {
        for _ in 0..copies {
            let corr = self.next_corr();
            let (_, call_end) = self.api("cudaMemcpyAsync_v3020", 6_000, corr);
            let (start, wait) = self.schedule(2, call_end + LAUNCH_LATENCY_NS, 0);
            let bytes: u64 = 512 << 20;
            let end = start + (bytes / 25) as i64; // ~25 GB/s
            self.stream_free[2] = end;
            self.rows.memcpys.push(MemRow {
                start,
                end,
                stream: COPY_STREAM,
                correlation_id: corr,
                bytes,
                kind: 1,
            });
            self.record(TruthOp {
                start,
                end,
                op: OP_MEMCPY_HTOD,
                stream: COPY_STREAM,
                wait,
                path: (0, 0),
                step: u32::MAX,
            });
        }
        let corr = self.next_corr();
        let (_, call_end) = self.api("cudaMemsetAsync_v3020", 3_000, corr);
        let (start, wait) = self.schedule(2, call_end + LAUNCH_LATENCY_NS, 0);
        let end = start + 40_000;
        self.stream_free[2] = end;
        self.rows.memsets.push(MemRow {
            start,
            end,
            stream: COPY_STREAM,
            correlation_id: corr,
            bytes: 64 << 20,
            kind: 1,
        });
        self.record(TruthOp {
            start,
            end,
            op: OP_MEMSET,
            stream: COPY_STREAM,
            wait,
            path: (0, 0),
            step: u32::MAX,
        });
        // The CPU waits for the weights before the first step.
        let drained = self.stream_free[2];
        let corr = self.next_corr();
        let start = self.cpu;
        self.api(
            "cudaStreamSynchronize_v3020",
            (drained + 3_000 - start).max(2_000),
            corr,
        );
        self.mark_synced();
    }

    pub fn path_string(&self, path: (u32, u8)) -> Vec<String> {
        self.path_arena[path.0 as usize..path.0 as usize + path.1 as usize]
            .iter()
            .map(|&id| self.path_texts[id as usize].clone())
            .collect()
    }
}
