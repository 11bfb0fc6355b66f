//! A loaded trace and its load report as a cache file's payload: every column of the
//! model as it is in memory (so reading one back is a copy per column), the few small,
//! nested parts as JSON. The order here is the format: change it, bump
//! [`super::FORMAT_VERSION`].

use std::io::Write;

use super::codec::{Bad, Reader, Result, Writer};
use crate::load::LoadReport;
use crate::trace::{
    ApiCalls, ApiClass, CommCreation, CpuSamples, Device, DeviceId, DeviceMetrics, ExportInfo,
    GpuOps, GraphNode, MemInfo, MemoryEvents, MetricValues, NcclCalls, NvtxMarks, NvtxRanges,
    OpKind, OsCalls, PayloadStats, Process, RangeKind, ReachIndex, Scheduling, Stacks, Stream,
    StringTable, Thread, Trace,
};

/// The small parts, as JSON.
#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    info: ExportInfo,
    processes: Vec<Process>,
    nvtx_domains: Vec<(u32, String)>,
    capture_window: Option<(i64, i64)>,
    nccl_payloads: PayloadStats,
    /// The exports read (where kernels' launch configurations stay).
    sources: Vec<std::path::PathBuf>,
    report: LoadReport,
    devices: usize,
    /// The threads of each thread part, as index ranges.
    thread_parts: Vec<(usize, usize)>,
    /// The CPU samples' threads (their samples' columns follow the strings).
    sampled_threads: Vec<crate::trace::SampledThread>,
}

/// A model is kept as several entries, read and written in parallel: the head (the small
/// parts, the strings, and how many parts of each kind there
/// are), one per device, and one per run of threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Head,
    Device(usize),
    Threads(usize, usize),
}

impl Part {
    pub fn name(&self) -> String {
        match self {
            Part::Head => "model".to_string(),
            Part::Device(i) => format!("model device {i}"),
            Part::Threads(a, b) => format!("model threads {a}..{b}"),
        }
    }
}

/// Events a part of threads holds at most (unless one thread holds more): parts of tens
/// of MB, small enough that a large trace has enough of them to keep every core busy.
const EVENTS_PER_PART: usize = 1 << 20;

/// The parts of `trace`, the head last (a reader that finds it finds the rest written).
pub fn parts(trace: &Trace) -> Vec<Part> {
    let mut parts: Vec<Part> = (0..trace.devices.len()).map(Part::Device).collect();
    let (mut start, mut events) = (0, 0);
    for (i, t) in trace.threads.iter().enumerate() {
        events +=
            t.api.len() + t.nvtx.len() + t.marks.time.len() + t.osrt.len() + t.scheduling.len();
        if events >= EVENTS_PER_PART || i + 1 == trace.threads.len() {
            parts.push(Part::Threads(start, i + 1));
            (start, events) = (i + 1, 0);
        }
    }
    parts.push(Part::Head);
    parts
}

pub fn write_part<W: Write>(
    w: &mut Writer<W>,
    trace: &Trace,
    report: &LoadReport,
    part: &Part,
    thread_parts: &[(usize, usize)],
) -> std::io::Result<()> {
    match *part {
        Part::Head => write_head(w, trace, report, thread_parts),
        Part::Device(i) => write_device(w, &trace.devices[i]),
        Part::Threads(a, b) => trace.threads[a..b]
            .iter()
            .try_for_each(|t| write_thread(w, t)),
    }
}

fn write_head<W: Write>(
    w: &mut Writer<W>,
    trace: &Trace,
    report: &LoadReport,
    thread_parts: &[(usize, usize)],
) -> std::io::Result<()> {
    w.json(&Meta {
        info: trace.info.clone(),
        processes: trace.processes.clone(),
        nvtx_domains: trace.nvtx_domains.clone(),
        capture_window: trace.capture_window,
        nccl_payloads: trace.nccl_payloads,
        sources: trace.sources.clone(),
        report: report.clone(),
        devices: trace.devices.len(),
        thread_parts: thread_parts.to_vec(),
        sampled_threads: trace.stacks().samples.threads.clone(),
    })?;
    let strings = trace.strings.columns();
    w.column(strings.template_bytes)?;
    w.column(strings.template_ends)?;
    w.column(strings.template)?;
    w.column(strings.number_bytes)?;
    w.column(strings.number_ends)?;
    let s = &trace.stacks().stacks;
    w.column(&s.frame_symbol)?;
    w.column(&s.frame_module)?;
    w.codes(&s.frame_unresolved, |u| u as u8)?;
    w.column(&s.node_parent)?;
    w.column(&s.node_frame)?;
    let c = &trace.stacks().samples;
    w.column(&c.time)?;
    w.column(&c.node)?;
    w.column(&c.state)?;
    w.u64(trace.gpu_metrics.len() as u64)?;
    for m in &trace.gpu_metrics {
        w.u32(m.device.0)?;
        w.column(&m.time)?;
        w.u64(m.metrics.len() as u64)?;
        for (name, values) in &m.metrics {
            w.str(name)?;
            match values {
                MetricValues::Byte(v) => {
                    w.u32(1)?;
                    w.column(v)?;
                }
                MetricValues::Short(v) => {
                    w.u32(2)?;
                    w.column(v)?;
                }
                MetricValues::Float(v) => {
                    w.u32(4)?;
                    w.column(v)?;
                }
            }
        }
    }
    w.u64(trace.memory_usage.len() as u64)?;
    for m in &trace.memory_usage {
        w.u32(m.device.0)?;
        w.column(&m.time)?;
        w.column(&m.bytes)?;
        w.column(&m.address)?;
        w.column(&m.correlation_id)?;
    }
    Ok(())
}

/// The head: a trace with no devices and no threads yet, its load report, and the parts
/// still to read.
pub fn read_head<R: std::io::Read>(r: &mut Reader<R>) -> Result<(Trace, LoadReport, Vec<Part>)> {
    let meta: Meta = r.json()?;
    let strings = StringTable::from_columns(
        r.column()?,
        r.column()?,
        r.column()?,
        r.column()?,
        r.column()?,
    )
    .ok_or(Bad::Damaged("string table"))?;
    let stacks = Stacks {
        frame_symbol: r.column()?,
        frame_module: r.column()?,
        frame_unresolved: r.codes(|c| Some(c != 0))?,
        node_parent: r.column()?,
        node_frame: r.column()?,
    };
    let samples = CpuSamples {
        threads: meta.sampled_threads,
        time: r.column()?,
        node: r.column()?,
        state: r.column()?,
    };
    let gpu_metrics = (0..r.count(16)?)
        .map(|_| {
            let device = crate::trace::DeviceId(r.u32()?);
            let time = r.column()?;
            let metrics = (0..r.count(8)?)
                .map(|_| {
                    let name = r.str()?;
                    let values = match r.u32()? {
                        1 => MetricValues::Byte(r.column()?),
                        2 => MetricValues::Short(r.column()?),
                        4 => MetricValues::Float(r.column()?),
                        _ => return Err(Bad::Damaged("GPU metric values")),
                    };
                    Ok((name, values))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(DeviceMetrics {
                device,
                time,
                metrics,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if !gpu_metrics.iter().all(DeviceMetrics::consistent) {
        return Err(Bad::Damaged("GPU metrics"));
    }
    let memory_usage = (0..r.count(16)?)
        .map(|_| {
            Ok(MemoryEvents {
                device: crate::trace::DeviceId(r.u32()?),
                time: r.column()?,
                bytes: r.column()?,
                address: r.column()?,
                correlation_id: r.column()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if !memory_usage.iter().all(MemoryEvents::consistent) {
        return Err(Bad::Damaged("memory events"));
    }
    let frames = stacks.frame_symbol.len();
    let nodes = stacks.node_frame.len();
    let stacks_ok = stacks.frame_module.len() == frames
        && stacks.frame_unresolved.len() == frames
        && stacks.node_parent.len() == nodes
        && stacks.node_frame.iter().all(|&f| (f as usize) < frames)
        && stacks
            .node_parent
            .iter()
            .all(|&p| p == crate::trace::NONE || (p as usize) < nodes)
        && samples.consistent()
        && samples
            .node
            .iter()
            .all(|&n| n == crate::trace::NONE || (n as usize) < nodes);
    if !stacks_ok {
        return Err(Bad::Damaged("call stacks"));
    }
    let contiguous = meta
        .thread_parts
        .iter()
        .zip(meta.thread_parts.iter().skip(1))
        .all(|(x, y)| x.1 == y.0 && x.0 < x.1)
        && meta.thread_parts.first().is_none_or(|p| p.0 == 0);
    if !contiguous {
        return Err(Bad::Damaged("thread parts"));
    }
    let mut parts: Vec<Part> = (0..meta.devices).map(Part::Device).collect();
    parts.extend(meta.thread_parts.iter().map(|&(a, b)| Part::Threads(a, b)));
    let trace = Trace {
        info: meta.info,
        strings: strings.into(),
        devices: Vec::new(),
        threads: Vec::new(),
        processes: meta.processes,
        sources: meta.sources,
        nvtx_domains: meta.nvtx_domains,
        capture_window: meta.capture_window,
        nccl_payloads: meta.nccl_payloads,
        call_stacks: crate::trace::StacksSlot::ready(crate::trace::CallStacks {
            stacks,
            samples,
            read: Default::default(),
        }),
        memory_usage,
        gpu_metrics,
    };
    Ok((trace, meta.report, parts))
}

/// A device or threads part read back.
pub enum ReadPart {
    Device(Device),
    Threads(Vec<Thread>),
}

pub fn read_part<R: std::io::Read>(r: &mut Reader<R>, part: &Part) -> Result<ReadPart> {
    match *part {
        Part::Head => Err(Bad::Damaged("the head read as a part")),
        Part::Device(_) => Ok(ReadPart::Device(read_device(r)?)),
        Part::Threads(a, b) => Ok(ReadPart::Threads(
            (a..b).map(|_| read_thread(r)).collect::<Result<Vec<_>>>()?,
        )),
    }
}

fn op_kind(code: u8) -> Option<OpKind> {
    [
        OpKind::Compute,
        OpKind::Nccl,
        OpKind::Memcpy,
        OpKind::Memset,
        OpKind::Graph,
    ]
    .into_iter()
    .find(|&k| k as u8 == code)
}

fn api_class(code: u8) -> Option<ApiClass> {
    [ApiClass::Runtime, ApiClass::Driver]
        .into_iter()
        .find(|&k| k as u8 == code)
}

fn range_kind(code: u8) -> Option<RangeKind> {
    [RangeKind::PushPop, RangeKind::StartEnd]
        .into_iter()
        .find(|&k| k as u8 == code)
}

fn flag(code: u8) -> Option<bool> {
    (code < 2).then_some(code == 1)
}

fn write_device<W: Write>(w: &mut Writer<W>, d: &Device) -> std::io::Result<()> {
    w.u32(d.id.0)?;
    w.str(&d.name)?;
    w.json(&d.key)?;
    let bytes: Vec<u64> = d.mem_info.iter().map(|m| m.bytes).collect();
    w.column(&bytes)?;
    w.codes(&d.mem_info, |m| m.kind)?;
    w.codes(&d.mem_info, |m| u8::from(m.pageable))?;
    w.u64(d.streams.len() as u64)?;
    for s in &d.streams {
        w.u32(s.id)?;
        w.u32(s.pid)?;
        w.i64(s.longest_op_ns)?;
        let o = &s.ops;
        w.times(&o.start)?;
        w.ends(&o.start, &o.end)?;
        w.codes(&o.kind, |k| k as u8)?;
        w.column(&o.name)?;
        w.column(&o.correlation_id)?;
        w.column(&o.launch_thread)?;
        w.column(&o.launch_call)?;
        w.column(&o.detail)?;
    }
    let g = &d.graph_nodes;
    w.column(&g.iter().map(|g| g.rowid).collect::<Vec<u32>>())?;
    w.column(&g.iter().map(|g| g.node).collect::<Vec<u32>>())?;
    w.column(&g.iter().map(|g| g.graph).collect::<Vec<u32>>())?;
    Ok(())
}

fn read_device<R: std::io::Read>(r: &mut Reader<R>) -> Result<Device> {
    let id = r.u32()?;
    let name = r.str()?;
    let key: Option<String> = r.json()?;
    let bytes: Vec<u64> = r.column()?;
    let kinds: Vec<u8> = r.column()?;
    let pageable = r.codes(flag)?;
    if kinds.len() != bytes.len() || pageable.len() != bytes.len() {
        return Err(Bad::Damaged("memory info"));
    }
    let mem_info = (0..bytes.len())
        .map(|i| MemInfo {
            bytes: bytes[i],
            kind: kinds[i],
            pageable: pageable[i],
        })
        .collect();
    let streams = (0..r.count(16)?)
        .map(|_| {
            let (id, pid, longest_op_ns) = (r.u32()?, r.u32()?, r.i64()?);
            let start = r.times()?;
            let end = r.ends(&start)?;
            let ops = GpuOps {
                start,
                end,
                kind: r.codes(op_kind)?,
                name: r.column()?,
                correlation_id: r.column()?,
                launch_thread: r.column()?,
                launch_call: r.column()?,
                detail: r.column()?,
            };
            if !ops.columns_agree(&[]) {
                return Err(Bad::Damaged("a stream's columns differ in length"));
            }
            Ok(Stream {
                id,
                pid,
                ops,
                longest_op_ns,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (rowids, nodes, graphs): (Vec<u32>, Vec<u32>, Vec<u32>) =
        (r.column()?, r.column()?, r.column()?);
    if nodes.len() != rowids.len() || graphs.len() != rowids.len() {
        return Err(Bad::Damaged("graph nodes"));
    }
    let graph_nodes = (0..rowids.len())
        .map(|i| GraphNode {
            rowid: rowids[i],
            node: nodes[i],
            graph: graphs[i],
        })
        .collect();
    Ok(Device {
        id: DeviceId(id),
        name,
        streams,
        mem_info,
        key,
        source: 0,
        graph_nodes,
    })
}

fn write_thread<W: Write>(w: &mut Writer<W>, t: &Thread) -> std::io::Result<()> {
    w.i64(t.global_tid)?;
    w.u32(t.pid)?;
    w.u32(t.tid)?;
    w.str(&t.name)?;
    let a = &t.api;
    w.times(&a.start)?;
    w.ends(&a.start, &a.end)?;
    w.column(&a.name)?;
    w.column(&a.correlation_id)?;
    w.codes(&a.class, |c| c as u8)?;
    let n = &t.nvtx;
    w.times(&n.start)?;
    w.ends(&n.start, &n.end)?;
    w.column(&n.text)?;
    w.codes(&n.kind, |k| k as u8)?;
    w.column(&n.depth)?;
    w.column(&n.parent)?;
    w.column(&n.color)?;
    w.column(&n.palette)?;
    w.times(&t.marks.time)?;
    w.column(&t.marks.text)?;
    let o = &t.osrt;
    w.times(&o.start)?;
    w.ends(&o.start, &o.end)?;
    w.column(&o.name)?;
    w.column(&o.return_value)?;
    w.column(&o.stack)?;
    let s = &t.scheduling;
    w.times(&s.start)?;
    w.ends(&s.start, &s.end)?;
    w.column(&s.cpu)?;
    let c = &t.nccl;
    w.times(&c.start)?;
    w.column(&c.name)?;
    w.column(&c.comm)?;
    w.column(&c.comms)?;
    w.column(&c.bytes)?;
    w.column(&c.peer)?;
    w.u64(c.creations.len() as u64)?;
    for k in &c.creations {
        w.i64(k.start)?;
        w.u64(k.comm)?;
        w.u32(k.nranks)?;
        w.u32(k.rank)?;
        w.u32(k.cuda_device)?;
    }
    w.i64(t.longest_call_ns)?;
    w.column(t.api_reach.block_ends())?;
    w.i64(t.longest_osrt_ns)?;
    w.column(t.osrt_reach.block_ends())
}

fn start_end<R: std::io::Read>(r: &mut Reader<R>) -> Result<(Vec<i64>, Vec<i64>)> {
    let start = r.times()?;
    let end = r.ends(&start)?;
    Ok((start, end))
}

fn read_thread<R: std::io::Read>(r: &mut Reader<R>) -> Result<Thread> {
    let (global_tid, pid, tid, name) = (r.i64()?, r.u32()?, r.u32()?, r.str()?);
    let (start, end) = start_end(r)?;
    let api = ApiCalls {
        start,
        end,
        name: r.column()?,
        correlation_id: r.column()?,
        class: r.codes(api_class)?,
    };
    let (start, end) = start_end(r)?;
    let nvtx = NvtxRanges {
        start,
        end,
        text: r.column()?,
        kind: r.codes(range_kind)?,
        depth: r.column()?,
        parent: r.column()?,
        color: r.column()?,
        palette: r.column()?,
    };
    let marks = NvtxMarks {
        time: r.times()?,
        text: r.column()?,
    };
    let (start, end) = start_end(r)?;
    let osrt = OsCalls {
        start,
        end,
        name: r.column()?,
        return_value: r.column()?,
        stack: r.column()?,
    };
    let (start, end) = start_end(r)?;
    let scheduling = Scheduling {
        start,
        end,
        cpu: r.column()?,
    };
    let start = r.times()?;
    let (names, comm, comms) = (r.column()?, r.column()?, r.column()?);
    let (bytes, peer) = (r.column()?, r.column()?);
    let creations = (0..r.count(28)?)
        .map(|_| {
            Ok(CommCreation {
                start: r.i64()?,
                comm: r.u64()?,
                nranks: r.u32()?,
                rank: r.u32()?,
                cuda_device: r.u32()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let nccl = NcclCalls {
        start,
        name: names,
        comm,
        comms,
        bytes,
        peer,
        creations,
    };
    if !nccl.consistent() {
        return Err(Bad::Damaged("a thread's NCCL calls differ in length"));
    }
    let same = |lens: &[usize]| lens.windows(2).all(|w| w[0] == w[1]);
    let ok = api.columns_agree(&[])
        && nvtx.columns_agree(&[])
        && same(&[marks.time.len(), marks.text.len()])
        && osrt.columns_agree(&["stack"])
        && same(&[scheduling.len(), scheduling.end.len(), scheduling.cpu.len()]);
    if !ok {
        return Err(Bad::Damaged("a thread's columns differ in length"));
    }
    let longest_call_ns = r.i64()?;
    let api_reach = ReachIndex::from_block_ends(r.column()?);
    let longest_osrt_ns = r.i64()?;
    let osrt_reach = ReachIndex::from_block_ends(r.column()?);
    Ok(Thread {
        global_tid,
        pid,
        tid,
        // A cached model is of one file.
        source: 0,
        name,
        api,
        nvtx,
        marks,
        osrt,
        nccl,
        scheduling,
        longest_call_ns,
        api_reach,
        longest_osrt_ns,
        osrt_reach,
    })
}
