//! CUDA graphs: how many launches, how much GPU time they hold, per graph and per GPU.
//! Recorded at graph level (nsys's default) a launch is one op of kind `Graph`, its kernels
//! unknown; at node level its kernels are ordinary ops that share the launch's
//! `cudaGraphLaunch` call.

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::load::graphs::graph_id_of;
use crate::sorted::median;
use crate::trace::{DeviceId, NONE, OpKind, StrId, Trace};

#[derive(Debug, Clone, Serialize)]
pub struct CudaGraphs {
    /// `graph` (executions recorded whole), `node` (their kernels recorded) or `mixed`.
    pub trace_level: &'static str,
    pub launches: u64,
    /// Node level: the ops graph launches ran (kernels, copies, memsets).
    pub kernels: u64,
    /// The share of the GPUs' busy time inside graph launches.
    pub gpu_pct: f64,
    /// Graph level: what the user cannot see and how to see it.
    pub note: Option<String>,
    pub per_device: Vec<DeviceGraphs>,
    /// Most GPU time first.
    pub graphs: Vec<GraphStat>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceGraphs {
    pub device: DeviceId,
    pub launches: u64,
    pub gpu_ns: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphStat {
    /// `graphId` and `graphExecId` (graph level; unknown at node level).
    pub graph_id: Option<i64>,
    pub exec_id: Option<u32>,
    /// Node level: the first kernel's name and its node (`graphNodeId`), naming a graph
    /// whose id is not recorded.
    pub first_kernel: Option<String>,
    pub first_node: Option<u32>,
    pub launches: u64,
    /// Node level: ops per launch (`None` at graph level: not recorded).
    pub kernels_per_launch: Option<f64>,
    /// GPU time of its launches (first op's start to last op's end, summed).
    pub gpu_ns: i64,
    pub median_ns: i64,
    /// The CPU cost of its launches: the launch calls' time, counted once per launch.
    pub launch_cpu_ns: i64,
    /// The innermost NVTX range around its first launch.
    pub nvtx: Option<String>,
}

/// What tells one graph from another: (graph id, exec id) at graph level; at node level
/// the graph id where the export records it, the first kernel and its node, and the ops per
/// launch.
type GraphKey = (Option<i64>, Option<u32>, StrId, u64, Option<u32>);

impl CudaGraphs {
    /// `512 launches, 9.9 % of GPU time, recorded at graph level` (`, N ops in them` at
    /// node level).
    pub fn headline(&self) -> String {
        format!(
            "{} launches, {:.1} % of GPU time, recorded at {} level{}",
            self.launches,
            self.gpu_pct,
            self.trace_level,
            if self.kernels > 0 {
                format!(", {} ops in them", self.kernels)
            } else {
                String::new()
            }
        )
    }
}

/// One launch: its call, device, GPU span, op count, and what identifies its graph.
struct Launch {
    call: (u32, u32),
    device: DeviceId,
    start: i64,
    end: i64,
    ops: u64,
    key: (Option<i64>, Option<u32>, StrId),
    first_node: Option<u32>,
}

/// The trace's CUDA graph launches, `None` when it has none.
pub fn cuda_graphs(trace: &Trace) -> Option<CudaGraphs> {
    crate::profile_scope!("analysis: CUDA graphs");
    let (whole, nodes, busy) = graph_launches(trace);
    if whole.is_empty() && nodes.is_empty() {
        return None;
    }
    let trace_level = match (whole.is_empty(), nodes.is_empty()) {
        (false, true) => "graph",
        (true, false) => "node",
        _ => "mixed",
    };
    let node_ops: u64 = nodes.values().map(|l| l.ops).sum();
    let mut launches: Vec<Launch> = whole;
    // Node-level launches of one graph: the same first kernel and as many ops.
    launches.extend(nodes.into_values());
    let graph_ns: i64 = launches.iter().map(|l| l.end - l.start).sum();
    let (per_device, graphs) = graph_stats(trace, &launches);
    let mut per_device: Vec<DeviceGraphs> = per_device
        .into_iter()
        .map(|(device, (launches, gpu_ns))| DeviceGraphs {
            device,
            launches,
            gpu_ns,
        })
        .collect();
    per_device.sort_by_key(|d| d.device);
    let count = launches.len() as u64;
    let gpu_pct = crate::analysis::breakdown::pct(graph_ns, busy);
    let note = (trace_level != "node").then(|| {
        format!(
            "{count} graph launches hold {gpu_pct:.1} % of GPU time; their kernels were not recorded — profile with `nsys profile --cuda-graph-trace=node` to see them"
        )
    });
    Some(CudaGraphs {
        trace_level,
        launches: count,
        kernels: node_ops,
        gpu_pct,
        note,
        per_device,
        graphs,
    })
}

/// Every graph launch: those recorded whole (graph level), those put together from their
/// kernels by launch call (node level), and every op's GPU time in all.
fn graph_launches(trace: &Trace) -> (Vec<Launch>, FxHashMap<(u32, u32), Launch>, i64) {
    let is_graph_launch: Vec<bool> = { crate::load::graphs::graph_launch_names(trace) };
    let (mut whole, mut nodes) = (
        Vec::<Launch>::new(),
        FxHashMap::<(u32, u32), Launch>::default(),
    );
    let mut busy = 0i64;
    for device in &trace.devices {
        for stream in &device.streams {
            let ops = &stream.ops;
            for i in 0..ops.len() {
                busy += ops.duration(i);
                let call = (ops.launch_thread[i], ops.launch_call[i]);
                if ops.kind[i] == OpKind::Graph {
                    let name = trace.strings.get(ops.name[i]);
                    whole.push(Launch {
                        call,
                        device: device.id,
                        start: ops.start[i],
                        end: ops.end[i],
                        ops: 1,
                        key: (
                            graph_id_of(&name),
                            (ops.detail[i] != NONE).then_some(ops.detail[i]),
                            NONE,
                        ),
                        first_node: None,
                    });
                    continue;
                }
                if call.1 == NONE {
                    continue;
                }
                let name = trace.threads[call.0 as usize].api.name[call.1 as usize];
                if !is_graph_launch[name as usize] {
                    continue;
                }
                let l = nodes.entry(call).or_insert(Launch {
                    call,
                    device: device.id,
                    start: ops.start[i],
                    end: ops.end[i],
                    ops: 0,
                    key: (None, None, ops.name[i]),
                    first_node: None,
                });
                l.ops += 1;
                if l.ops == 1 || ops.start[i] < l.start {
                    l.start = ops.start[i];
                    l.key.2 = ops.name[i];
                    let node = device.graph_node(ops, i);
                    l.first_node = node.map(|g| g.node);
                    l.key.0 = node.filter(|g| g.graph != NONE).map(|g| g.graph as i64);
                }
                l.end = l.end.max(ops.end[i]);
            }
        }
    }
    (whole, nodes, busy)
}

/// Each device's launches and their GPU time, and each graph's figures (launches with the
/// same ids, first kernel, op count and first node), the most GPU time first.
fn graph_stats(
    trace: &Trace,
    launches: &[Launch],
) -> (FxHashMap<DeviceId, (u64, i64)>, Vec<GraphStat>) {
    let mut per_device: FxHashMap<DeviceId, (u64, i64)> = FxHashMap::default();
    let mut groups: FxHashMap<GraphKey, Vec<&Launch>> = FxHashMap::default();
    for l in launches {
        let d = per_device.entry(l.device).or_default();
        d.0 += 1;
        d.1 += l.end - l.start;
        // Graph level: the ids say it all (its ops are not known).
        let ops = if l.key.2 == NONE { 0 } else { l.ops };
        groups
            .entry((l.key.0, l.key.1, l.key.2, ops, l.first_node))
            .or_default()
            .push(l);
    }
    let mut graphs: Vec<GraphStat> = groups
        .into_iter()
        .map(|((graph_id, exec_id, first, ops, first_node), members)| {
            let durations: Vec<i64> = members.iter().map(|l| l.end - l.start).collect();
            let first_launch = members.iter().min_by_key(|l| l.start).expect("a launch");
            let launch_cpu_ns = members
                .iter()
                .filter(|l| l.call.1 != NONE)
                .map(|l| {
                    let api = &trace.threads[l.call.0 as usize].api;
                    api.end[l.call.1 as usize] - api.start[l.call.1 as usize]
                })
                .sum();
            GraphStat {
                graph_id,
                exec_id,
                first_kernel: (first != NONE).then(|| trace.strings.get(first).into_owned()),
                first_node,
                launches: members.len() as u64,
                kernels_per_launch: (first != NONE).then_some(ops as f64),
                gpu_ns: durations.iter().sum(),
                median_ns: median(&durations),
                launch_cpu_ns,
                nvtx: nvtx_around(trace, first_launch.call),
            }
        })
        .collect();
    graphs.sort_by_key(|g| (std::cmp::Reverse(g.gpu_ns), g.graph_id, g.exec_id));
    (per_device, graphs)
}

/// The innermost NVTX range around a launch call.
fn nvtx_around(trace: &Trace, (thread, call): (u32, u32)) -> Option<String> {
    if call == NONE {
        return None;
    }
    let t = &trace.threads[thread as usize];
    let r = *t.nvtx.path_at(t.api.start[call as usize]).last()?;
    Some(trace.strings.get(t.nvtx.text[r as usize]).into_owned())
}
