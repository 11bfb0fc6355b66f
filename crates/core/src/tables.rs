//! The trace and its analyses as flat tables, one row per kernel, copy, API call, NVTX
//! range, gap or iteration: what the Python package hands to pyarrow and `export` writes as
//! Arrow or Parquet files. Times are ns on the export's clock; names are indices into a
//! dictionary of the texts the column uses (a trace holds millions of strings, a column a
//! few), `-1` for none.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::analysis::gaps::{Gap, gaps as find_gaps};
use crate::analysis::intervals::device_window;
use crate::overview::Overview;
use crate::trace::{NONE, StrId, Trace};

/// One column's values.
#[derive(Debug, Clone)]
pub enum Column {
    I64(Vec<i64>),
    I32(Vec<i32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    /// Dictionary-encoded texts: each row's index into `texts`, or `-1` for none.
    Names {
        ids: Vec<i32>,
        texts: Arc<Vec<String>>,
    },
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::I64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::I32(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Names { ids, .. } => ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Texts dictionary-encoded, each distinct one once (`None`: -1).
    pub fn of_texts(values: impl IntoIterator<Item = Option<String>>) -> Column {
        let mut texts: Vec<String> = Vec::new();
        let mut index: FxHashMap<String, i32> = FxHashMap::default();
        let ids = values
            .into_iter()
            .map(|v| match v {
                Some(t) => *index.entry(t).or_insert_with_key(|t| {
                    texts.push(t.clone());
                    texts.len() as i32 - 1
                }),
                None => -1,
            })
            .collect();
        Column::Names {
            ids,
            texts: Arc::new(texts),
        }
    }
}

/// Named columns of equal length.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.1.len())
    }

    fn add(&mut self, name: &'static str, column: Column) {
        debug_assert!(
            self.columns.is_empty() || column.len() == self.rows(),
            "{name}: equal lengths"
        );
        self.columns.push((name, column));
    }
}

/// The tables by name, as `export` writes them.
pub const NAMES: [&str; 11] = [
    "kernels",
    "memory",
    "api_calls",
    "nvtx",
    "gaps",
    "iterations",
    "graphs",
    "cpu_samples",
    "stacks",
    "gpu_metrics",
    "memory_events",
];

/// The table called `name` (one of [`NAMES`]); gaps of at least `min_gap_ns`.
pub fn by_name(trace: &Trace, overview: &Overview, name: &str, min_gap_ns: i64) -> Option<Table> {
    Some(match name {
        "kernels" => ops(trace, true),
        "memory" => ops(trace, false),
        "api_calls" => api_calls(trace),
        "nvtx" => nvtx(trace),
        "gaps" => gaps(trace, overview, min_gap_ns),
        "iterations" => iterations(overview),
        "graphs" => graphs(trace),
        "cpu_samples" => cpu_samples(trace),
        "stacks" => stacks(trace),
        "gpu_metrics" => gpu_metrics(trace),
        "memory_events" => memory_events(trace),
        _ => return None,
    })
}

/// A column's own dictionary of the trace's strings it uses.
struct Dictionary<'t> {
    trace: &'t Trace,
    index: FxHashMap<StrId, i32>,
    texts: Vec<String>,
}

impl<'t> Dictionary<'t> {
    fn new(trace: &'t Trace) -> Self {
        Self {
            trace,
            index: FxHashMap::default(),
            texts: Vec::new(),
        }
    }

    fn id(&mut self, s: StrId) -> i32 {
        if s == NONE {
            return -1;
        }
        let (texts, trace) = (&mut self.texts, self.trace);
        *self.index.entry(s).or_insert_with(|| {
            texts.push(trace.strings.get(s).into_owned());
            (texts.len() - 1) as i32
        })
    }

    /// A fixed text (a kind, a cause): few per column.
    fn text(&mut self, text: &str) -> i32 {
        match self.texts.iter().position(|t| t == text) {
            Some(i) => i as i32,
            None => {
                self.texts.push(text.to_string());
                (self.texts.len() - 1) as i32
            }
        }
    }

    fn column(self, ids: Vec<i32>) -> Column {
        Column::Names {
            ids,
            texts: Arc::new(self.texts),
        }
    }
}

/// Kernels (`kernels`) or copies and memsets: device, stream, start_ns, end_ns,
/// duration_ns, name, kind, correlation_id (kernels: graph_node and graph_id, -1 outside
/// CUDA graphs; copies: bytes, pageable).
pub fn ops(trace: &Trace, kernels: bool) -> Table {
    let (mut device, mut stream, mut start, mut end, mut dur, mut corr) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut names, mut kinds, mut bytes, mut pageable) = (vec![], vec![], vec![], vec![]);
    let (mut graph_node, mut graph_id) = (vec![], vec![]);
    let mut name_dict = Dictionary::new(trace);
    let mut kind_dict = Dictionary::new(trace);
    for d in &trace.devices {
        for s in &d.streams {
            let ops = &s.ops;
            for i in 0..ops.len() {
                if ops.kind[i].is_kernel() != kernels {
                    continue;
                }
                device.push(d.id.0 as i64);
                stream.push(s.id as i64);
                start.push(ops.start[i]);
                end.push(ops.end[i]);
                dur.push(ops.end[i] - ops.start[i]);
                corr.push(ops.correlation_id[i] as i64);
                names.push(name_dict.id(ops.name[i]));
                kinds.push(kind_dict.text(ops.kind[i].label()));
                if !kernels {
                    let info = d.mem_info.get(ops.detail[i] as usize);
                    bytes.push(info.map_or(0, |m| m.bytes as i64));
                    pageable.push(info.is_some_and(|m| m.pageable));
                } else if ops.kind[i] == crate::trace::OpKind::Graph {
                    // A graph execution recorded whole: its graph's id, no node.
                    graph_node.push(-1);
                    graph_id.push(
                        crate::load::graphs::graph_id_of(&trace.strings.get(ops.name[i]))
                            .unwrap_or(-1),
                    );
                } else {
                    let node = d.graph_node(ops, i);
                    graph_node.push(node.map_or(-1, |g| g.node as i64));
                    graph_id.push(
                        node.filter(|g| g.graph != NONE)
                            .map_or(-1, |g| g.graph as i64),
                    );
                }
            }
        }
    }
    let mut t = Table::default();
    t.add("device", Column::I64(device));
    t.add("stream", Column::I64(stream));
    t.add("start_ns", Column::I64(start));
    t.add("end_ns", Column::I64(end));
    t.add("duration_ns", Column::I64(dur));
    t.add("name", name_dict.column(names));
    t.add("kind", kind_dict.column(kinds));
    t.add("correlation_id", Column::I64(corr));
    if !kernels {
        t.add("bytes", Column::I64(bytes));
        t.add("pageable", Column::Bool(pageable));
    } else {
        t.add("graph_node", Column::I64(graph_node));
        t.add("graph_id", Column::I64(graph_id));
    }
    t
}

/// CUDA API calls: pid, tid, start_ns, end_ns, duration_ns, name, correlation_id.
pub fn api_calls(trace: &Trace) -> Table {
    let n = trace.api_call_count();
    let mut cols: [Vec<i64>; 6] = Default::default();
    for c in &mut cols {
        c.reserve(n);
    }
    let mut names = Vec::with_capacity(n);
    let mut dict = Dictionary::new(trace);
    for th in &trace.threads {
        let api = &th.api;
        for k in 0..api.len() {
            let row = [
                th.pid as i64,
                th.tid as i64,
                api.start[k],
                api.end[k],
                api.end[k] - api.start[k],
                api.correlation_id[k] as i64,
            ];
            for (c, v) in cols.iter_mut().zip(row) {
                c.push(v);
            }
            names.push(dict.id(api.name[k]));
        }
    }
    let [pid, tid, start, end, dur, corr] = cols;
    let mut t = Table::default();
    t.add("pid", Column::I64(pid));
    t.add("tid", Column::I64(tid));
    t.add("start_ns", Column::I64(start));
    t.add("end_ns", Column::I64(end));
    t.add("duration_ns", Column::I64(dur));
    t.add("name", dict.column(names));
    t.add("correlation_id", Column::I64(corr));
    t
}

/// NVTX ranges: pid, tid, start_ns, end_ns, duration_ns, text, depth.
pub fn nvtx(trace: &Trace) -> Table {
    let n = trace.nvtx_range_count();
    let mut cols: [Vec<i64>; 5] = Default::default();
    for c in &mut cols {
        c.reserve(n);
    }
    let (mut texts, mut depth) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut dict = Dictionary::new(trace);
    for th in &trace.threads {
        let r = &th.nvtx;
        for i in 0..r.len() {
            let row = [
                th.pid as i64,
                th.tid as i64,
                r.start[i],
                r.end[i],
                r.end[i] - r.start[i],
            ];
            for (c, v) in cols.iter_mut().zip(row) {
                c.push(v);
            }
            texts.push(dict.id(r.text[i]));
            depth.push(r.depth[i] as i32);
        }
    }
    let [pid, tid, start, end, dur] = cols;
    let mut t = Table::default();
    t.add("pid", Column::I64(pid));
    t.add("tid", Column::I64(tid));
    t.add("start_ns", Column::I64(start));
    t.add("end_ns", Column::I64(end));
    t.add("duration_ns", Column::I64(dur));
    t.add("text", dict.column(texts));
    t.add("depth", Column::I32(depth));
    t
}

/// Gaps of at least `min_ns` (the analyses' own when that is their minimum): device,
/// start_ns, end_ns, duration_ns, before, after, nvtx (the range around both), cause.
pub fn gaps(trace: &Trace, overview: &Overview, min_ns: i64) -> Table {
    let own: Vec<Gap>;
    let list: &[Gap] = if min_ns == overview.options.min_gap_ns {
        &overview.gaps
    } else {
        own = trace
            .devices
            .iter()
            .filter_map(|d| {
                Some(find_gaps(
                    trace,
                    &overview.cpu,
                    d,
                    device_window(d)?,
                    min_ns.max(0),
                ))
            })
            .flatten()
            .collect();
        &own
    };
    let n = list.len();
    let mut cols: [Vec<i64>; 4] = Default::default();
    for c in &mut cols {
        c.reserve(n);
    }
    let mut ids: [Vec<i32>; 4] = Default::default();
    for c in &mut ids {
        c.reserve(n);
    }
    let mut names = Dictionary::new(trace);
    let mut ranges = Dictionary::new(trace);
    let mut causes = Dictionary::new(trace);
    for g in list {
        for (c, v) in cols
            .iter_mut()
            .zip([g.device as i64, g.start_ns, g.end_ns(), g.duration_ns])
        {
            c.push(v);
        }
        let row = [
            names.id(g.before_name(trace)),
            names.id(g.after_name(trace)),
            ranges.id(g.enclosing),
            causes.text(g.cause.label()),
        ];
        for (c, v) in ids.iter_mut().zip(row) {
            c.push(v);
        }
    }
    let [device, start, end, dur] = cols;
    let [before, after, nvtx, cause] = ids;
    let neighbours = Arc::new(names.texts);
    let mut t = Table::default();
    t.add("device", Column::I64(device));
    t.add("start_ns", Column::I64(start));
    t.add("end_ns", Column::I64(end));
    t.add("duration_ns", Column::I64(dur));
    t.add(
        "before",
        Column::Names {
            ids: before,
            texts: neighbours.clone(),
        },
    );
    t.add(
        "after",
        Column::Names {
            ids: after,
            texts: neighbours,
        },
    );
    t.add("nvtx", ranges.column(nvtx));
    t.add("cause", causes.column(cause));
    t
}

/// Iterations: device, index, start_ns, end_ns, duration_ns, slow (one row per iteration
/// and GPU that ran it).
pub fn iterations(overview: &Overview) -> Table {
    let mut cols: [Vec<i64>; 5] = Default::default();
    let mut slow = Vec::new();
    for d in &overview.iterations.per_device {
        for (k, span) in d.spans.iter().enumerate() {
            let Some(w) = span else { continue };
            let duration = d.durations_ns.get(k).copied().unwrap_or(w.end - w.start);
            for (c, v) in
                cols.iter_mut()
                    .zip([d.device.0 as i64, k as i64, w.start, w.end, duration])
            {
                c.push(v);
            }
            slow.push(d.slow_indices.contains(&k));
        }
    }
    let [device, index, start, end, dur] = cols;
    let mut t = Table::default();
    t.add("device", Column::I64(device));
    t.add("index", Column::I64(index));
    t.add("start_ns", Column::I64(start));
    t.add("end_ns", Column::I64(end));
    t.add("duration_ns", Column::I64(dur));
    t.add("slow", Column::Bool(slow));
    t
}

/// CUDA graphs, one row per graph (none without graph launches): graph_id, exec_id
/// (graph level; -1 where not recorded), launches, kernels_per_launch (node level; -1 at
/// graph level), gpu_ns, median_ns, launch_cpu_ns, nvtx.
pub fn graphs(trace: &Trace) -> Table {
    let stats = crate::analysis::graphs::cuda_graphs(trace)
        .map(|g| g.graphs)
        .unwrap_or_default();
    let mut nvtx = Dictionary::new(trace);
    let ids: Vec<i32> = stats
        .iter()
        .map(|g| g.nvtx.as_deref().map_or(-1, |t| nvtx.text(t)))
        .collect();
    let col = |f: &dyn Fn(&crate::analysis::graphs::GraphStat) -> i64| {
        Column::I64(stats.iter().map(f).collect())
    };
    let mut t = Table::default();
    t.add("graph_id", col(&|g| g.graph_id.unwrap_or(-1)));
    t.add("exec_id", col(&|g| g.exec_id.map_or(-1, i64::from)));
    t.add("launches", col(&|g| g.launches as i64));
    t.add(
        "kernels_per_launch",
        col(&|g| g.kernels_per_launch.map_or(-1, |k| k as i64)),
    );
    t.add("gpu_ns", col(&|g| g.gpu_ns));
    t.add("median_ns", col(&|g| g.median_ns));
    t.add("launch_cpu_ns", col(&|g| g.launch_cpu_ns));
    t.add("nvtx", nvtx.column(ids));
    t
}

/// One row per GPU metric sample (long form): device, time_ns, metric (as nsys names it),
/// value (clocks in MHz).
pub fn gpu_metrics(trace: &Trace) -> Table {
    let (mut device, mut time, mut metric, mut value) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut names = Dictionary::new(trace);
    for m in &trace.gpu_metrics {
        for (name, values) in &m.metrics {
            let id = names.text(name);
            for (k, v) in values.iter_range(0..values.len()).enumerate() {
                if !v.is_nan() {
                    device.push(m.device.0 as i64);
                    time.push(m.time[k]);
                    metric.push(id);
                    value.push(v as f64);
                }
            }
        }
    }
    let mut t = Table::default();
    t.add("device", Column::I64(device));
    t.add("time_ns", Column::I64(time));
    t.add("metric", names.column(metric));
    t.add("value", Column::F64(value));
    t
}

/// One row per device-memory event: device, time_ns, bytes (an allocation positive, a
/// free negative), address, correlation_id.
pub fn memory_events(trace: &Trace) -> Table {
    let m = &trace.memory_usage;
    let each = |f: &dyn Fn(&crate::trace::MemoryEvents, usize) -> i64| {
        Column::I64(
            m.iter()
                .flat_map(|e| (0..e.len()).map(move |i| f(e, i)))
                .collect(),
        )
    };
    let mut t = Table::default();
    t.add("device", each(&|e, _| e.device.0 as i64));
    t.add("time_ns", each(&|e, i| e.time[i]));
    t.add("bytes", each(&|e, i| e.bytes[i]));
    t.add("address", each(&|e, i| e.address[i] as i64));
    t.add("correlation_id", each(&|e, i| e.correlation_id[i] as i64));
    t
}

/// One row per CPU sample: time_ns, tid, thread, stack (a row of `stacks`: its innermost
/// frame; -1 without one), state (nsys's `threadState`).
pub fn cpu_samples(trace: &Trace) -> Table {
    let s = &trace.stacks().samples;
    let mut tid = Vec::with_capacity(s.len());
    let mut thread = Vec::with_capacity(s.len());
    let mut names = Dictionary::new(trace);
    for t in &s.threads {
        let name = names.text(&t.name);
        for _ in 0..t.count {
            tid.push(crate::trace::tid_of_global_id(t.global_tid) as i64);
            thread.push(name);
        }
    }
    let mut t = Table::default();
    t.add("time_ns", Column::I64(s.time.clone()));
    t.add("tid", Column::I64(tid));
    t.add("thread", names.column(thread));
    t.add(
        "stack",
        Column::I64(
            s.node
                .iter()
                .map(|&n| if n == NONE { -1 } else { n as i64 })
                .collect(),
        ),
    );
    t.add(
        "state",
        Column::I64(s.state.iter().map(|&x| x as i64).collect()),
    );
    t
}

/// The stacks' tree, a row per node: id (what `cpu_samples.stack` names), parent (its
/// caller's node, -1 for an outermost frame), symbol, module, unresolved, python.
pub fn stacks(trace: &Trace) -> Table {
    let s = &trace.stacks().stacks;
    let (mut symbols, mut modules) = (Dictionary::new(trace), Dictionary::new(trace));
    let frame = |n: usize| s.node_frame[n] as usize;
    let n = s.node_frame.len();
    let mut t = Table::default();
    t.add("id", Column::I64((0..n as i64).collect()));
    t.add(
        "parent",
        Column::I64(
            s.node_parent
                .iter()
                .map(|&p| if p == NONE { -1 } else { p as i64 })
                .collect(),
        ),
    );
    let symbol: Vec<i32> = (0..n)
        .map(|i| symbols.id(s.frame_symbol[frame(i)]))
        .collect();
    let module: Vec<i32> = (0..n)
        .map(|i| modules.id(s.frame_module[frame(i)]))
        .collect();
    t.add(
        "python",
        Column::Bool(
            (0..n)
                .map(|i| {
                    crate::trace::stacks::is_python_module(
                        &trace.strings.get(s.frame_module[frame(i)]),
                    )
                })
                .collect(),
        ),
    );
    t.add(
        "unresolved",
        Column::Bool((0..n).map(|i| s.frame_unresolved[frame(i)]).collect()),
    );
    t.add("symbol", symbols.column(symbol));
    t.add("module", modules.column(module));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    #[test]
    fn a_tables_names_are_its_own_dictionary_and_none_is_minus_one() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        b.range(t, "step", 0, 100);
        let c = b.call(t, "cudaLaunchKernel", 1, 2);
        b.kernel(0, 7, "a", (10, 20), Some(c));
        b.kernel(0, 7, "b", (30, 40), None);
        b.kernel(0, 7, "a", (50, 60), None);
        let trace = b.build();
        let k = ops(&trace, true);
        assert_eq!(k.rows(), 3);
        let (_, Column::Names { ids, texts }) = &k.columns[5] else {
            panic!("name is dictionary-encoded")
        };
        assert_eq!(ids, &vec![0, 1, 0]);
        assert_eq!(texts.as_slice(), ["a", "b"]);
        let o = crate::overview::overview(&trace, &Default::default());
        let g = gaps(&trace, &o, 1);
        assert_eq!(g.rows(), 2);
        let (_, Column::Names { ids, .. }) = &g.columns[6] else {
            panic!("nvtx is dictionary-encoded")
        };
        // The second gap's kernels were launched by no known call: no range around them.
        assert_eq!(ids[1], -1);
    }
}
