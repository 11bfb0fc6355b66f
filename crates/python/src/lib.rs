//! `nsys_explorer._native`: nsys-explorer's engine for Python. The loader and the analyses
//! are the core crate's, called as the command line calls them; this file only moves their
//! answers across: dicts as the CLI's JSON (parsed by Python's `json`), tables as columns
//! (NumPy arrays that own the Rust vectors, names as dictionary indices and their texts)
//! that `nsys_explorer` wraps into `pyarrow.Table`s without copying.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use nsys_explorer_core::findings;
use nsys_explorer_core::overview::Options;
use nsys_explorer_core::trace::OpKind;
use nsys_explorer_core::{compare, session, synth, tables, whatif};

create_exception!(
    _native,
    NsysExplorerError,
    pyo3::exceptions::PyException,
    "A trace that cannot be opened or analysed; the message says what to do (as the command line's)."
);

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
    // The one pipeline every front end runs, to the analyses (the findings on demand).
    let loaded = run_interruptible(py, cancel, move || {
        session::OpenTrace::open(
            &paths,
            options,
            session::Until::Analysed,
            cache,
            &session::Quiet,
            &flag,
        )
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

/// A job of many ranks from their summaries (`*.summary`, or a folder of them) or from
/// exports (each summarised in turn, one model in memory at a time): what `report` prints
/// for it, as a dict.
#[pyfunction]
#[pyo3(signature = (paths, top=10))]
fn job(py: Python<'_>, paths: Vec<PathBuf>, top: usize) -> PyResult<Py<PyAny>> {
    let value = py
        .detach(|| -> Result<serde_json::Value, String> {
            let files = nsys_explorer_core::load::many::expand_paths(&paths)?;
            let options = Options::default();
            let summaries = session::rank_summaries(
                &files,
                &options,
                true,
                &AtomicBool::new(false),
                &|_, _| {},
            )?;
            let job = nsys_explorer_core::job::reduce(&summaries, top);
            serde_json::to_value(&job).map_err(|e| e.to_string())
        })
        .map_err(NsysExplorerError::new_err)?;
    Ok(json_to_py(py, &value)?.unbind())
}

/// A loaded, analysed trace.
#[pyclass(frozen, module = "nsys_explorer._native")]
struct Trace {
    inner: Arc<session::OpenTrace>,
}

/// A table's columns for Python: `{"arrays": {name: ndarray}, "dictionaries": {name:
/// [text]}}`, each vector handed to NumPy as the array's own buffer (no copy).
fn columns_to_py(py: Python<'_>, table: tables::Table) -> PyResult<Py<PyAny>> {
    let arrays = PyDict::new(py);
    let dictionaries = PyDict::new(py);
    for (name, column) in table.columns {
        match column {
            tables::Column::I64(v) => arrays.set_item(name, v.into_pyarray(py))?,
            tables::Column::I32(v) => arrays.set_item(name, v.into_pyarray(py))?,
            tables::Column::F64(v) => arrays.set_item(name, v.into_pyarray(py))?,
            tables::Column::Bool(v) => arrays.set_item(name, v.into_pyarray(py))?,
            tables::Column::Names { ids, texts } => {
                arrays.set_item(name, ids.into_pyarray(py))?;
                dictionaries.set_item(name, PyList::new(py, texts.iter())?)?;
            }
        }
    }
    let out = PyDict::new(py);
    out.set_item("arrays", arrays)?;
    out.set_item("dictionaries", dictionaries)?;
    Ok(out.into_any().unbind())
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
        let value = py.detach(move || l.report_json());
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
        let change = whatif::ChangeSpec {
            remove_sync: remove_sync.unwrap_or_default(),
            scale_kernel: scale_kernel.unwrap_or_default(),
            nccl_own_stream,
            remove_cpu: remove_cpu.unwrap_or_default(),
            ..whatif::ChangeSpec::default()
        }
        .parse()
        .map_err(NsysExplorerError::new_err)?;
        let l = self.inner.clone();
        let value = py.detach(move || l.what_if_json(&change));
        Ok(json_to_py(py, &value)?.unbind())
    }

    /// An iteration's critical path (default: the slowest): `critical-path --json`'s answer.
    #[pyo3(signature = (iteration=None))]
    fn critical_path(&self, py: Python<'_>, iteration: Option<usize>) -> PyResult<Py<PyAny>> {
        let l = self.inner.clone();
        let value = py
            .detach(move || l.critical_path_json(iteration))
            .map_err(NsysExplorerError::new_err)?;
        Ok(json_to_py(py, &value)?.unbind())
    }

    /// The table called `name` (kernels, memory, api_calls, nvtx, gaps, iterations, graphs) as
    /// columns; gaps of at least `min_ns`.
    #[pyo3(signature = (name, min_ns=1000))]
    fn _table(&self, py: Python<'_>, name: &str, min_ns: i64) -> PyResult<Py<PyAny>> {
        let l = self.inner.clone();
        let name = name.to_string();
        let table = py
            .detach(move || tables::by_name(&l.trace, &l.overview, &name, min_ns))
            .ok_or_else(|| {
                NsysExplorerError::new_err(format!(
                    "no such table (they are: {})",
                    tables::NAMES.join(", ")
                ))
            })?;
        columns_to_py(py, table)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(job, m)?)?;
    m.add_class::<Trace>()?;
    m.add("NsysExplorerError", m.py().get_type::<NsysExplorerError>())?;
    Ok(())
}
