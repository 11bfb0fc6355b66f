//! `nsys_explorer._native`: nsys-explorer's engine for Python. The loader and the analyses
//! are the core crate's, called as the command line calls them; this file only moves their
//! answers across: dicts as the CLI's JSON (parsed by Python's `json`), tables as columns
//! (NumPy arrays that own the Rust vectors, names as dictionary indices and their texts)
//! that `nsys_explorer` wraps into `pyarrow.Table`s without copying.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use numpy::{IntoPyArray, PyArray1};
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rustc_hash::FxHashMap;

use nsys_explorer_core::analysis::{self, Options, overview::Overview};
use nsys_explorer_core::cache::{self, TraceKey};
use nsys_explorer_core::findings::{self, Finding};
use nsys_explorer_core::load::{self, LoadReport, many::FileInfo};
use nsys_explorer_core::trace::{NONE, OpKind, StrId, Trace as Model};
use nsys_explorer_core::{compare, critical_path, report, synth, whatif};

create_exception!(
    _native,
    NsysExplorerError,
    pyo3::exceptions::PyException,
    "A trace that cannot be opened or analysed; the message says what to do (as the command line's)."
);

/// A loaded trace with its analyses.
struct Loaded {
    trace: Model,
    overview: Arc<Overview>,
    options: Options,
    reports: Vec<LoadReport>,
    files: Vec<FileInfo>,
    paths: Vec<PathBuf>,
    key: Option<TraceKey>,
    findings: OnceLock<Vec<Finding>>,
}

impl Loaded {
    fn findings(&self) -> &[Finding] {
        self.findings
            .get_or_init(|| findings::findings_kept(&self.trace, &self.overview, self.key.as_ref()))
    }

    fn name(&self) -> String {
        let names: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    }
}

/// Loads `paths` (one export, several ranks' exports, or a folder of them) and analyses
/// it, as `report` does; `cancel` stops the load.
fn load_and_analyse(
    paths: &[PathBuf],
    options: Options,
    use_cache: bool,
    cancel: &AtomicBool,
) -> Result<Loaded, String> {
    let paths = load::many::expand_paths(paths)?;
    let cancelled = || "cancelled".to_string();
    if paths.len() > 1 {
        let (trace, reports, files) =
            load::many::load_many(&paths, &|_| {}, cancel).map_err(|e| e.to_string())?;
        let overview = Arc::new(analysis::overview(&trace, &options));
        return Ok(Loaded {
            trace,
            overview,
            options,
            reports,
            files,
            paths,
            key: None,
            findings: OnceLock::new(),
        });
    }
    let path = &paths[0];
    // An .nsys-rep is exported into the cache folder whatever `cache` says (never beside it).
    if use_cache || nsys_explorer_core::export::is_report(path) {
        let opened = cache::open_staged(path, &|_| {}, cancel, None).map_err(|e| e.to_string())?;
        let key = if use_cache { opened.key.clone() } else { None };
        let overview = std::thread::scope(|s| {
            if use_cache {
                s.spawn(|| opened.store());
            }
            cache::overview(&opened.trace, &options, cancel, key.as_ref(), |_| {})
        })
        .ok_or_else(cancelled)?;
        return Ok(Loaded {
            trace: opened.trace,
            overview,
            options,
            reports: vec![opened.report],
            files: Vec::new(),
            paths,
            key,
            findings: OnceLock::new(),
        });
    }
    let (trace, report) =
        load::load_staged(path, &|_| {}, cancel, None).map_err(|e| e.to_string())?;
    if cancel.load(Ordering::Relaxed) {
        return Err(cancelled());
    }
    let overview = Arc::new(analysis::overview(&trace, &options));
    Ok(Loaded {
        trace,
        overview,
        options,
        reports: vec![report],
        files: Vec::new(),
        paths,
        key: None,
        findings: OnceLock::new(),
    })
}

/// Runs `work` on a thread of its own with the GIL released, checking for Ctrl+C every
/// 50 ms: then `cancel` is set and the KeyboardInterrupt raised at once.
fn run_interruptible<T: Send + 'static>(
    py: Python<'_>,
    cancel: Arc<AtomicBool>,
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|_| Err("internal error while loading (please report it)".into()));
        let _ = tx.send(result);
    });
    let mut rx = rx;
    loop {
        // The receiver goes into the GIL-free closure and comes back (it is not `Sync`).
        let (answer, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
        rx = back;
        match answer {
            Ok(result) => return result.map_err(NsysExplorerError::new_err),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    cancel.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(NsysExplorerError::new_err(
                    "the load stopped without an answer",
                ));
            }
        }
    }
}

fn json_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    let text =
        serde_json::to_string(value).map_err(|e| NsysExplorerError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// Opens an export (or several ranks' exports, or a folder of them) and analyses it.
#[pyfunction]
#[pyo3(signature = (paths, marker=None, cache=true))]
fn open(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    marker: Option<String>,
    cache: bool,
) -> PyResult<Trace> {
    let options = Options {
        iteration_marker: marker,
        ..Options::default()
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let loaded = run_interruptible(py, cancel, move || {
        load_and_analyse(&paths, options, cache, &flag)
    })?;
    Ok(Trace {
        inner: Arc::new(loaded),
    })
}

/// Two runs compared (before, after): `diff --json`'s answer.
#[pyfunction]
fn diff(py: Python<'_>, before: &Trace, after: &Trace) -> PyResult<Py<PyAny>> {
    let (b, a) = (before.inner.clone(), after.inner.clone());
    let value = py.detach(|| {
        let before_run = compare::Run {
            path: &b.paths[0],
            trace: &b.trace,
            overview: &b.overview,
        };
        let after_run = compare::Run {
            path: &a.paths[0],
            trace: &a.trace,
            overview: &a.overview,
        };
        let c = compare::compare(&before_run, &after_run);
        compare::report::diff_json(&before_run, &after_run, &c)
    });
    Ok(json_to_py(py, &value)?.unbind())
}

/// Writes a generated 4-GPU run (the `synth` command's) to `path`; returns its truth.
#[pyfunction]
#[pyo3(signature = (path, preset="tiny"))]
fn generate(py: Python<'_>, path: PathBuf, preset: &str) -> PyResult<Py<PyAny>> {
    let preset = match preset {
        "tiny" => synth::Preset::Tiny,
        "medium" => synth::Preset::Medium,
        "large" => synth::Preset::Large,
        other => {
            return Err(NsysExplorerError::new_err(format!(
                "unknown preset {other:?} (tiny, medium, large)"
            )));
        }
    };
    let truth = py
        .detach(|| synth::generate(&path, synth::SynthOptions::new(preset)))
        .map_err(NsysExplorerError::new_err)?;
    let value =
        serde_json::to_value(&truth).map_err(|e| NsysExplorerError::new_err(e.to_string()))?;
    Ok(json_to_py(py, &value)?.unbind())
}

/// A loaded, analysed trace.
#[pyclass(frozen, module = "nsys_explorer._native")]
struct Trace {
    inner: Arc<Loaded>,
}

/// Column builders: NumPy arrays that take the vectors over, and names as indices into a
/// dictionary of the texts a column uses.
struct Columns<'py> {
    py: Python<'py>,
    arrays: Bound<'py, PyDict>,
    dictionaries: Bound<'py, PyDict>,
}

impl<'py> Columns<'py> {
    fn new(py: Python<'py>) -> Self {
        Self {
            py,
            arrays: PyDict::new(py),
            dictionaries: PyDict::new(py),
        }
    }

    fn add<T: numpy::Element>(&self, name: &str, values: Vec<T>) -> PyResult<()> {
        let array: Bound<'py, PyArray1<T>> = values.into_pyarray(self.py);
        self.arrays.set_item(name, array)
    }

    /// A column of texts as dictionary indices (`-1` for none) and the texts.
    fn add_names(&self, name: &str, ids: Vec<i32>, texts: Vec<String>) -> PyResult<()> {
        self.add(name, ids)?;
        self.dictionaries
            .set_item(name, PyList::new(self.py, texts)?)
    }

    fn finish(self) -> PyResult<Py<PyAny>> {
        let out = PyDict::new(self.py);
        out.set_item("arrays", self.arrays)?;
        out.set_item("dictionaries", self.dictionaries)?;
        Ok(out.into_any().unbind())
    }
}

/// Maps the trace's string ids (millions) to a column's own dictionary (the few it uses).
struct Dictionary<'t> {
    trace: &'t Model,
    index: FxHashMap<StrId, i32>,
    texts: Vec<String>,
}

impl<'t> Dictionary<'t> {
    fn new(trace: &'t Model) -> Self {
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
        let texts = &mut self.texts;
        let trace = self.trace;
        *self.index.entry(s).or_insert_with(|| {
            texts.push(trace.strings.get(s).into_owned());
            (texts.len() - 1) as i32
        })
    }

    fn text(&mut self, text: &str) -> i32 {
        match self.texts.iter().position(|t| t == text) {
            Some(i) => i as i32,
            None => {
                self.texts.push(text.to_string());
                (self.texts.len() - 1) as i32
            }
        }
    }
}

#[pymethods]
impl Trace {
    /// The GPUs: id, name, key (`FILE:ID` in a trace of several files), kernels, streams.
    #[getter]
    fn devices(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = &self.inner.trace;
        let list: Vec<serde_json::Value> = t
            .devices
            .iter()
            .map(|d| {
                serde_json::json!({
                    "id": d.id,
                    "name": d.name,
                    "key": d.key,
                    "kernels": d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl),
                    "nccl_kernels": d.count_of(OpKind::Nccl),
                    "streams": d.streams.len(),
                })
            })
            .collect();
        Ok(json_to_py(py, &serde_json::Value::from(list))?.unbind())
    }

    /// The files it was read from.
    #[getter]
    fn paths(&self) -> Vec<PathBuf> {
        self.inner.paths.clone()
    }

    /// `report --json`'s answer (the findings replayed on the first call, then kept).
    fn report(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let l = self.inner.clone();
        let value = py.detach(move || {
            let findings = l.findings();
            if l.paths.len() > 1 {
                report::many_json(
                    &l.trace,
                    &l.reports,
                    &l.files,
                    &l.overview,
                    findings,
                    &l.options,
                )
            } else {
                report::report_json(&l.trace, &l.reports[0], &l.overview, findings, &l.options)
            }
        });
        Ok(json_to_py(py, &value)?.unbind())
    }

    /// What to fix first, ranked by the saving a replay predicts (`report`'s `findings`).
    fn findings(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let l = self.inner.clone();
        let value = py.detach(move || findings::text::findings_json(&l.trace, l.findings()));
        Ok(json_to_py(py, &value)?.unbind())
    }

    /// A change replayed: `what-if --json`'s answer.
    #[pyo3(signature = (remove_sync=None, scale_kernel=None, nccl_own_stream=false, remove_cpu=None))]
    fn what_if(
        &self,
        py: Python<'_>,
        remove_sync: Option<Vec<String>>,
        scale_kernel: Option<Vec<String>>,
        nccl_own_stream: bool,
        remove_cpu: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let scale_kernels = scale_kernel
            .unwrap_or_default()
            .iter()
            .map(|s| whatif::parse_scale_kernel(s))
            .collect::<Result<Vec<_>, String>>()
            .map_err(NsysExplorerError::new_err)?;
        let change = whatif::Change {
            remove_sync: remove_sync.unwrap_or_default(),
            scale_kernels,
            nccl_own_stream,
            remove_cpu: remove_cpu.unwrap_or_default(),
            ..whatif::Change::default()
        };
        if change.is_empty() {
            return Err(NsysExplorerError::new_err(
                "no change to replay: give remove_sync, scale_kernel, nccl_own_stream or remove_cpu",
            ));
        }
        let l = self.inner.clone();
        let value = py.detach(move || {
            let w = whatif::report::what_if(&l.trace, &l.overview, &change, &l.options);
            whatif::report::what_if_json(&l.trace, &l.name(), &change, &w)
        });
        Ok(json_to_py(py, &value)?.unbind())
    }

    /// An iteration's critical path (default: the slowest): `critical-path --json`'s answer.
    #[pyo3(signature = (iteration=None))]
    fn critical_path(&self, py: Python<'_>, iteration: Option<usize>) -> PyResult<Py<PyAny>> {
        let l = self.inner.clone();
        let its = &l.overview.iterations;
        let count = its.count();
        let k = match iteration.or(its.slowest_index) {
            Some(k) if k < count => k,
            Some(k) => {
                return Err(NsysExplorerError::new_err(format!(
                    "no iteration {k}: the trace has {count}"
                )));
            }
            None if count > 0 => count / 2,
            None => {
                return Err(NsysExplorerError::new_err(
                    "no iterations found, so no critical path (open with marker=TEXT)",
                ));
            }
        };
        let value = py.detach(move || {
            let graph = critical_path::Graph::new(&l.trace);
            critical_path::report::summarise(&graph, &l.overview.iterations, k)
                .map(|p| critical_path::report::path_json(&l.trace, &p))
        });
        match value {
            Some(v) => Ok(json_to_py(py, &v)?.unbind()),
            None => Err(NsysExplorerError::new_err(format!(
                "iteration {k} ran no kernel on any GPU"
            ))),
        }
    }

    /// Kernels: device, stream, start_ns, end_ns, duration_ns, name, kind, correlation_id.
    fn _kernels(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.ops(py, true)
    }

    /// Copies and memsets: device, stream, start_ns, end_ns, duration_ns, name, kind,
    /// correlation_id, bytes, pageable.
    fn _memory(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.ops(py, false)
    }

    /// CUDA API calls: pid, tid, start_ns, end_ns, duration_ns, name, correlation_id.
    fn _api_calls(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = &self.inner.trace;
        let n = t.api_call_count();
        let (mut pid, mut tid, mut start, mut end, mut dur, mut corr) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut names = Vec::with_capacity(n);
        let mut dict = Dictionary::new(t);
        for th in &t.threads {
            let api = &th.api;
            for k in 0..api.len() {
                pid.push(th.pid as i64);
                tid.push(th.tid as i64);
                start.push(api.start[k]);
                end.push(api.end[k]);
                dur.push(api.end[k] - api.start[k]);
                corr.push(api.correlation_id[k] as i64);
                names.push(dict.id(api.name[k]));
            }
        }
        let c = Columns::new(py);
        c.add("pid", pid)?;
        c.add("tid", tid)?;
        c.add("start_ns", start)?;
        c.add("end_ns", end)?;
        c.add("duration_ns", dur)?;
        c.add_names("name", names, dict.texts)?;
        c.add("correlation_id", corr)?;
        c.finish()
    }

    /// NVTX ranges: pid, tid, start_ns, end_ns, duration_ns, text, depth.
    fn _nvtx(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = &self.inner.trace;
        let n = t.nvtx_range_count();
        let (mut pid, mut tid, mut start, mut end, mut dur, mut depth) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut texts = Vec::with_capacity(n);
        let mut dict = Dictionary::new(t);
        for th in &t.threads {
            let r = &th.nvtx;
            for i in 0..r.len() {
                pid.push(th.pid as i64);
                tid.push(th.tid as i64);
                start.push(r.start[i]);
                end.push(r.end[i]);
                dur.push(r.end[i] - r.start[i]);
                depth.push(r.depth[i] as i32);
                texts.push(dict.id(r.text[i]));
            }
        }
        let c = Columns::new(py);
        c.add("pid", pid)?;
        c.add("tid", tid)?;
        c.add("start_ns", start)?;
        c.add("end_ns", end)?;
        c.add("duration_ns", dur)?;
        c.add_names("text", texts, dict.texts)?;
        c.add("depth", depth)?;
        c.finish()
    }

    /// Gaps of at least `min_ns`: device, start_ns, end_ns, duration_ns, before, after,
    /// nvtx (the enclosing range), cause — as `report` finds them.
    #[pyo3(signature = (min_ns=1000))]
    fn _gaps(&self, py: Python<'_>, min_ns: i64) -> PyResult<Py<PyAny>> {
        let l = self.inner.clone();
        let own;
        let gaps: &[analysis::gaps::Gap] = if min_ns == l.overview.options.min_gap_ns {
            &l.overview.gaps
        } else {
            own = py.detach(|| {
                let cpu = &l.overview.cpu;
                l.trace
                    .devices
                    .iter()
                    .filter_map(|d| {
                        let w = analysis::intervals::device_window(d)?;
                        Some(analysis::gaps::gaps(&l.trace, cpu, d, w, min_ns.max(0)))
                    })
                    .flatten()
                    .collect::<Vec<_>>()
            });
            &own
        };
        let n = gaps.len();
        let (mut device, mut start, mut end, mut dur) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut before, mut after, mut nvtx, mut cause) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut names = Dictionary::new(&l.trace);
        let mut ranges = Dictionary::new(&l.trace);
        let mut causes = Dictionary::new(&l.trace);
        for g in gaps {
            device.push(g.device as i64);
            start.push(g.start_ns);
            end.push(g.end_ns());
            dur.push(g.duration_ns);
            before.push(names.id(g.before_name));
            after.push(names.id(g.after_name));
            nvtx.push(ranges.id(g.enclosing));
            cause.push(causes.text(g.cause.label()));
        }
        let c = Columns::new(py);
        c.add("device", device)?;
        c.add("start_ns", start)?;
        c.add("end_ns", end)?;
        c.add("duration_ns", dur)?;
        c.add("before", before)?;
        c.add("after", after)?;
        c.dictionaries
            .set_item("before", PyList::new(py, &names.texts)?)?;
        c.dictionaries
            .set_item("after", PyList::new(py, &names.texts)?)?;
        c.add_names("nvtx", nvtx, ranges.texts)?;
        c.add_names("cause", cause, causes.texts)?;
        c.finish()
    }

    /// Iterations: device, index, start_ns, end_ns, duration_ns, slow.
    fn _iterations(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let its = &self.inner.overview.iterations;
        let (mut device, mut index, mut start, mut end, mut dur, mut slow) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        for d in &its.per_device {
            for (k, span) in d.spans.iter().enumerate() {
                let Some(w) = span else { continue };
                device.push(d.device.0 as i64);
                index.push(k as i64);
                start.push(w.start);
                end.push(w.end);
                dur.push(d.durations_ns.get(k).copied().unwrap_or(w.end - w.start));
                slow.push(d.slow_indices.contains(&k));
            }
        }
        let c = Columns::new(py);
        c.add("device", device)?;
        c.add("index", index)?;
        c.add("start_ns", start)?;
        c.add("end_ns", end)?;
        c.add("duration_ns", dur)?;
        c.add("slow", slow)?;
        c.finish()
    }
}

impl Trace {
    fn ops(&self, py: Python<'_>, kernels: bool) -> PyResult<Py<PyAny>> {
        let t = &self.inner.trace;
        let (mut device, mut stream, mut start, mut end, mut dur, mut corr) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        let (mut names, mut kinds, mut bytes, mut pageable) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut dict = Dictionary::new(t);
        let mut kind_dict = Dictionary::new(t);
        for d in &t.devices {
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
                    names.push(dict.id(ops.name[i]));
                    kinds.push(kind_dict.text(ops.kind[i].label()));
                    if !kernels {
                        let info = d.mem_info.get(ops.detail[i] as usize);
                        bytes.push(info.map_or(0, |m| m.bytes as i64));
                        pageable.push(info.is_some_and(|m| m.pageable));
                    }
                }
            }
        }
        let c = Columns::new(py);
        c.add("device", device)?;
        c.add("stream", stream)?;
        c.add("start_ns", start)?;
        c.add("end_ns", end)?;
        c.add("duration_ns", dur)?;
        c.add_names("name", names, dict.texts)?;
        c.add_names("kind", kinds, kind_dict.texts)?;
        c.add("correlation_id", corr)?;
        if !kernels {
            c.add("bytes", bytes)?;
            c.add("pageable", pageable)?;
        }
        c.finish()
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_class::<Trace>()?;
    m.add("NsysExplorerError", m.py().get_type::<NsysExplorerError>())?;
    Ok(())
}
