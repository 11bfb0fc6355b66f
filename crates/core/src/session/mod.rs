//! One way to open and analyse, shared by the command line, the window and the Python
//! package: a file, several ranks' files or an `.nsys-rep`, through the cache; then the
//! overview, the findings with their savings and the slowest iteration's critical path.
//! Each caller adds only its own progress display and output.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

mod open_trace;
pub use open_trace::OpenTrace;

use crate::cache::{self, TraceKey};
use crate::findings::{self, Finding};
use crate::load::many::{self, FileInfo};
use crate::load::{self, LoadError, LoadReport, Phase, Progress};
use crate::overview::{Options, Overview};
use crate::trace::Trace;

/// What to open.
#[derive(Debug, Clone)]
pub enum Source {
    One(PathBuf),
    /// One export per rank, merged on the first one's clock; file `k` put at `manual[k]`
    /// when that is given (the user's nudge in the window).
    Many {
        paths: Vec<PathBuf>,
        manual: Vec<Option<i64>>,
    },
}

impl Source {
    /// The files named (folders stand for every `*.sqlite` in them): one, or several.
    pub fn of(paths: &[PathBuf]) -> Result<Source, String> {
        let mut paths = many::expand_paths(paths)?;
        Ok(match paths.len() {
            0 => return Err("no file to open".into()),
            1 => Source::One(paths.remove(0)),
            _ => Source::Many {
                paths,
                manual: Vec::new(),
            },
        })
    }
}

/// How an open reports and stops.
#[derive(Clone, Copy)]
pub struct Hooks<'a> {
    pub progress: &'a (dyn Fn(Progress) + Sync),
    pub cancel: &'a AtomicBool,
    /// Sees the GPU side of one file as soon as it is read (the CPU side still loading),
    /// or the first of several files as soon as it is in: a window shows it meanwhile.
    pub first_look: Option<&'a (dyn Fn(Trace) + Sync)>,
    /// Read from and keep in the cache (`false`: the file alone, as the Python
    /// package's `cache=False`).
    pub use_cache: bool,
}

impl<'a> Hooks<'a> {
    /// No progress shown, not cancelled, through the cache.
    pub fn quiet(cancel: &'a AtomicBool) -> Hooks<'a> {
        Hooks {
            progress: &|_| {},
            cancel,
            first_look: None,
            use_cache: true,
        }
    }
}

/// A trace opened.
pub struct Opened {
    /// Shared: a front end hands it to its own threads (the window's timeline indexes)
    /// while the analyses go on.
    pub trace: Arc<Trace>,
    /// The load's report (several files: combined).
    pub report: LoadReport,
    /// Each file's load report (one for one file).
    pub reports: Vec<LoadReport>,
    /// Several files: how each was put on the first one's clock (empty for one file).
    pub files: Vec<FileInfo>,
    /// One file's key in the cache (`None` with the cache off, or for several files):
    /// what to store answers under.
    pub key: Option<TraceKey>,
    /// Read from the cache, not from the file: nothing to store.
    pub from_cache: bool,
}

impl Opened {
    /// The model itself (copied only if someone else still holds it).
    pub fn into_trace(self) -> Trace {
        Arc::try_unwrap(self.trace).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The load's report with the call stacks' read in it (waiting for it to end).
    pub fn report_with_stacks(&self) -> LoadReport {
        let mut report = self.report.clone();
        report.add_stacks_read(&self.trace.stacks().read);
        report
    }

    /// Keeps the model for the next open, unless it came from there.
    pub fn store(&self) {
        if let (Some(key), false) = (&self.key, self.from_cache) {
            cache::store_model(key, &self.trace, &self.report);
        }
    }
}

/// Opens `source` (the caller keeps the model: see [`Opened::store`]; several files are
/// each kept as they load).
pub fn open(source: &Source, hooks: Hooks) -> Result<Opened, LoadError> {
    match source {
        Source::One(path) => open_file(path, hooks),
        Source::Many { paths, manual } => {
            let (trace, reports, files) = open_many(paths, manual, hooks)?;
            Ok(Opened {
                trace: Arc::new(trace),
                report: LoadReport::combined(&reports),
                reports,
                files,
                key: None,
                from_cache: false,
            })
        }
    }
}

/// One file from the cache when it holds this very file, else loaded as
/// [`load::load_staged`] does. A hit's load report is the first load's, with this read's
/// time. An `.nsys-rep` is exported first (into the cache folder, whatever `use_cache`
/// says: never beside it) and its export opened.
pub fn open_file(path: &Path, hooks: Hooks) -> Result<Opened, LoadError> {
    let Hooks {
        progress,
        cancel,
        first_look,
        use_cache,
    } = hooks;
    if crate::export::is_report(path) && crate::export::enabled() {
        let exported = crate::export::export(path, progress, cancel)?;
        let mut opened = open_file(&exported.sqlite, hooks)?;
        opened.report.file = path.to_owned();
        opened.report.export = Some(exported.how);
        opened.reports = vec![opened.report.clone()];
        return Ok(opened);
    }
    let t0 = Instant::now();
    let key = use_cache.then(|| TraceKey::of(path)).flatten();
    if let Some(key) = &key {
        progress(Progress {
            phase: Phase::ReadingCache,
            fraction: 0.0,
            rows_read: 0,
        });
        if let Some((trace, mut report)) = cache::read_model(key) {
            let seconds = t0.elapsed().as_secs_f64();
            report.file = path.to_owned();
            report.seconds = seconds;
            report.phases = vec![("read cache".to_string(), seconds)];
            progress(Progress {
                phase: Phase::Done,
                fraction: 1.0,
                rows_read: report.tables.values().sum(),
            });
            return Ok(Opened {
                trace: Arc::new(trace),
                reports: vec![report.clone()],
                report,
                files: Vec::new(),
                key: Some(key.clone()),
                from_cache: true,
            });
        }
    }
    let (trace, report) = load::load_staged(path, progress, cancel, first_look)?;
    Ok(Opened {
        trace: Arc::new(trace),
        reports: vec![report.clone()],
        report,
        files: Vec::new(),
        key,
        from_cache: false,
    })
}

/// [`open_file`] with no progress, and the model kept before it returns.
pub fn open_path(path: &Path) -> Result<(Trace, LoadReport), LoadError> {
    let opened = open_file(path, Hooks::quiet(&AtomicBool::new(false)))?;
    opened.store();
    let report = opened.report.clone();
    Ok((opened.into_trace(), report))
}

/// Several files loaded in parallel, each through the cache (a job's ranks re-open as
/// fast as one file), their clocks aligned and merged. `hooks.progress` hears of each
/// file as it is done.
pub fn open_many(
    paths: &[PathBuf],
    manual: &[Option<i64>],
    hooks: Hooks,
) -> Result<(Trace, Vec<LoadReport>, Vec<FileInfo>), LoadError> {
    let done = AtomicUsize::new(0);
    let one_file = Hooks {
        progress: &|_| {},
        first_look: None,
        ..hooks
    };
    let loaded: Vec<(Trace, LoadReport)> = paths
        .par_iter()
        .enumerate()
        .map(|(k, p)| {
            let r = open_file(p, one_file).map(|opened| {
                opened.store();
                let report = opened.report_with_stacks();
                (opened.into_trace(), report)
            });
            if k == 0
                && let (Some(f), Ok((t, _))) = (hooks.first_look, &r)
            {
                f(t.clone());
            }
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            (hooks.progress)(Progress {
                phase: Phase::ReadingTables,
                fraction: n as f32 / paths.len() as f32,
                rows_read: 0,
            });
            r
        })
        .collect::<Result<_, _>>()?;
    let merged = many::merge_loaded(paths, loaded, manual);
    (hooks.progress)(Progress {
        phase: Phase::Done,
        fraction: 1.0,
        rows_read: 0,
    });
    Ok(merged)
}

/// [`open_many`] with no progress, not cancelled.
pub fn load_many(paths: &[PathBuf]) -> Result<(Trace, Vec<LoadReport>, Vec<FileInfo>), LoadError> {
    open_many(paths, &[], Hooks::quiet(&AtomicBool::new(false)))
}

/// The analyses of an opened trace (from the cache what it kept), the model kept
/// meanwhile on a thread of its own. `None` when cancelled.
pub fn overview(opened: &Opened, options: &Options, cancel: &AtomicBool) -> Option<Arc<Overview>> {
    overview_staged(opened, options, cancel, &Quiet)
}

fn overview_staged(
    opened: &Opened,
    options: &Options,
    cancel: &AtomicBool,
    stages: &dyn Stages,
) -> Option<Arc<Overview>> {
    // Beside each other on rayon's pool, not a thread of the store's own: called from a
    // worker of that pool (`diff` analyses two runs at once), a blocked worker would wait
    // for a store that waits for a worker.
    rayon::join(
        || opened.store(),
        || {
            cache::overview(&opened.trace, options, cancel, opened.key.as_ref(), |o| {
                stages.analysed(o)
            })
        },
    )
    .1
}

/// Everything a report prints: the overview, the findings with their savings, and the
/// slowest iteration's critical path (kept in the overview).
pub struct Answers {
    pub overview: Arc<Overview>,
    pub findings: Vec<Finding>,
}

/// [`overview`], then the findings' replays beside the slowest iteration's critical path.
/// `None` when cancelled.
pub fn answer(opened: &Opened, options: &Options, cancel: &AtomicBool) -> Option<Answers> {
    answer_staged(opened, options, cancel, &Quiet)
}

fn answer_staged(
    opened: &Opened,
    options: &Options,
    cancel: &AtomicBool,
    stages: &dyn Stages,
) -> Option<Answers> {
    // No frames to draw: freed temporaries go back to the system (see the guard).
    let _memory = crate::memory::LoadMemoryGuard::hold();
    let trace = &opened.trace;
    // What the replays need of the trace alone, built beside the analyses (whose end leaves
    // a core idle while the gaps' patterns are grouped), unless the cache keeps the
    // findings.
    let replays_ahead = !opened
        .key
        .as_ref()
        .is_some_and(|k| findings::ranked_kept(k, options));
    let (overview, parts) = rayon::join(
        || overview_staged(opened, options, cancel, stages),
        || replays_ahead.then(|| crate::whatif::TraceParts::new(trace)),
    );
    let overview = overview?;
    // The front end's own work on the analyses, once: on the core the replays' walks leave
    // free first, or after the findings when none walked.
    let beside_once = std::sync::Once::new();
    let beside = || beside_once.call_once(|| stages.beside_replays(opened, &overview));
    // The critical path the report prints, worked out beside the detection.
    let key = opened.key.as_ref();
    let (findings, _) = rayon::join(
        || find_with(trace, &overview, key, cancel, stages, &beside, parts),
        || overview.slowest_path(trace),
    );
    let findings = findings.filter(|_| !cancel.load(Ordering::Relaxed))?;
    beside();
    Some(Answers { overview, findings })
}

/// One file (or several, or a folder) opened and analysed through [`run`], quietly: a
/// second run to compare with, say. `Err` says why, naming the file.
pub fn analysed(
    paths: &[PathBuf],
    options: &Options,
) -> Result<(Arc<Trace>, Arc<Overview>), String> {
    let cancel = AtomicBool::new(false);
    let source = Source::of(paths)?;
    let named = |e: LoadError| match paths {
        [one] if !e.to_string().contains(&one.display().to_string()) => {
            format!("{}: {e}", one.display())
        }
        _ => e.to_string(),
    };
    let ran = run(&source, options, Until::Analysed, &Quiet, &cancel, true).map_err(named)?;
    let overview = ran.overview.ok_or("cancelled")?;
    Ok((ran.opened.trace, overview))
}

/// The pipeline's last stage on its own, for analyses already in (the Python package's
/// findings, asked for later; a window's overview made another way): detection, then the
/// replays, `stages` told of each; from the cache when it keeps them. `None` when
/// cancelled.
pub fn find(
    trace: &Trace,
    overview: &Overview,
    key: Option<&TraceKey>,
    cancel: &AtomicBool,
    stages: &dyn Stages,
) -> Option<Vec<Finding>> {
    find_with(trace, overview, key, cancel, stages, &|| {}, None)
}

/// [`find`], with work to run beside the replays (see [`findings::replay_savings_with`])
/// and what the replays need of the trace alone built already.
fn find_with(
    trace: &Trace,
    overview: &Overview,
    key: Option<&TraceKey>,
    cancel: &AtomicBool,
    stages: &dyn Stages,
    beside: &(dyn Fn() + Sync),
    parts: Option<crate::whatif::TraceParts>,
) -> Option<Vec<Finding>> {
    findings::findings_staged(
        trace,
        overview,
        key,
        cancel,
        &|found, span| stages.detected(found, span),
        &|i, saving| stages.saved(i, saving),
        beside,
        parts,
    )
}

/// What a front end hears as [`run`] goes: each stage's result as soon as it is in (a
/// window shows each, a command line waits for the last). Every method's default ignores
/// it.
pub trait Stages: Sync {
    /// How far the open has got.
    fn progress(&self, _: Progress) {}
    /// Whether [`Stages::first_look`] is wanted (it costs a copy of the GPU side).
    fn wants_first_look(&self) -> bool {
        false
    }
    /// The GPU side of one file, or the first of several, while the CPU side loads.
    fn first_look(&self, _: Trace) {}
    /// The whole trace in (the analyses start at once: work of its own on it runs beside).
    fn opened(&self, _: &Opened) {}
    /// Every analysis; the findings' detection and replays start at once.
    fn analysed(&self, _: &Arc<Overview>) {}
    /// What the detectors found (no savings yet), and the run's span.
    fn detected(&self, _: &[Finding], _span: i64) {}
    /// Finding `i`'s saving, as its replay ends.
    fn saved(&self, _i: usize, _: findings::Saving) {}
    /// Work of the front end's own on the analyses, run once while the findings are
    /// replayed, on the first core their walks leave free (the report's JSON, say).
    fn beside_replays(&self, _: &Opened, _: &Arc<Overview>) {}
}

/// Hears nothing.
pub struct Quiet;

impl Stages for Quiet {}

/// How far [`run`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Until {
    /// The trace opened (and kept in the cache for the next open).
    Opened,
    /// Every analysis (the Python package's `open`, `export`).
    Analysed,
    /// The findings with their replayed savings and the slowest iteration's critical path
    /// (`report`, the window).
    Findings,
}

/// What [`run`] got to: the trace opened, its analyses, and its findings when asked for
/// (`None` where not asked for or cancelled).
pub struct Ran {
    pub opened: Opened,
    pub overview: Option<Arc<Overview>>,
    pub findings: Option<Vec<Finding>>,
}

/// The one way every front end — the command line, the window, the Python package, the
/// benchmarks, the MCP server — opens and analyses a trace: open (through the cache; the
/// GPU side first when asked) → the analyses → the findings' replays beside the critical
/// path, each stage told to `stages` as it ends, `cancel` stopping between and within
/// them, the model kept in the cache on a thread of its own. Nothing else opens a trace.
pub fn run(
    source: &Source,
    options: &Options,
    until: Until,
    stages: &dyn Stages,
    cancel: &AtomicBool,
    use_cache: bool,
) -> Result<Ran, LoadError> {
    let progress = |p| stages.progress(p);
    let first_look = |t| stages.first_look(t);
    let first_look: &(dyn Fn(Trace) + Sync) = &first_look;
    let hooks = Hooks {
        progress: &progress,
        cancel,
        first_look: stages.wants_first_look().then_some(first_look),
        use_cache,
    };
    let opened = open(source, hooks)?;
    stages.opened(&opened);
    let (overview, findings) = match until {
        Until::Opened => {
            opened.store();
            (None, None)
        }
        Until::Analysed => (overview_staged(&opened, options, cancel, stages), None),
        Until::Findings => match answer_staged(&opened, options, cancel, stages) {
            Some(a) => (Some(a.overview), Some(a.findings)),
            None => (None, None),
        },
    };
    Ok(Ran {
        opened,
        overview,
        findings,
    })
}

/// What `report FILE...` prints; for one file, from the cache when it holds this report
/// of this very file.
pub fn report_output(
    files: &[PathBuf],
    as_json: bool,
    options: &Options,
) -> Result<String, String> {
    let t0 = Instant::now();
    let paths = many::expand_paths(files)?;
    if paths.iter().any(|p| crate::job::is_summary(p)) || paths.len() > JOB_FROM_SUMMARIES_PAST {
        return job_output(&paths, as_json, options);
    }
    let source = Source::of(files)?;
    // The answer itself is kept, per format and options: a second report reads it alone.
    let what = match &source {
        Source::One(file) => format!("report json={as_json} {} {options:?}", file.display()),
        Source::Many { .. } => String::new(),
    };
    let key = match &source {
        Source::One(file) => cache::TraceKey::of(file),
        Source::Many { .. } => None,
    };
    if let Some(kept) = key.as_ref().and_then(|k| cache::read_text(k, &what)) {
        return Ok(with_load_seconds(
            &kept,
            as_json,
            t0.elapsed().as_secs_f64(),
        ));
    }
    let cancel = std::sync::atomic::AtomicBool::new(false);
    // A device asked for that the trace lacks stops the run once the trace is open.
    let many = matches!(source, Source::Many { .. });
    let check = DeviceCheck {
        device: options.device,
        files,
        cancel: &cancel,
        missing: std::sync::Mutex::new(None),
        json_beside: (as_json && !many).then_some(options),
        json: std::sync::Mutex::new(None),
    };
    let ran = run(&source, options, Until::Findings, &check, &cancel, true);
    if let Some(missing) = check
        .missing
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
    {
        return Err(missing);
    }
    let json_beside = check.json.into_inner().unwrap_or_else(|e| e.into_inner());
    let ran = ran.map_err(|e| e.to_string())?;
    let opened = &ran.opened;
    let trace = &opened.trace;
    let (Some(overview), Some(findings)) = (&ran.overview, &ran.findings) else {
        return Err("cancelled".into());
    };
    let (reports, files) = (&opened.reports, &opened.files);
    let load_report = opened.report_with_stacks();
    let output = if as_json {
        let json = if many {
            crate::report::many_json(trace, reports, files, overview, findings, options)
        } else if let Some(mut json) = json_beside {
            crate::report::set_findings_json(&mut json, trace, findings);
            json
        } else {
            crate::report::report_json(trace, &load_report, overview, findings, options)
        };
        serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"
    } else if many {
        crate::report::many_text(trace, reports, files, overview, findings, options)
    } else {
        crate::report::report_text(trace, &load_report, overview, findings, options)
    };
    if let Some(key) = &opened.key {
        cache::store_text(key, &what, &output);
    }
    Ok(output)
}

/// Stops a report whose device the trace does not have, saying which it has; writes a
/// JSON report's every part but its findings while they are replayed.
struct DeviceCheck<'a> {
    device: Option<crate::trace::DeviceId>,
    files: &'a [PathBuf],
    cancel: &'a AtomicBool,
    missing: std::sync::Mutex<Option<String>>,
    /// The options of a JSON report of one file, whose parts are written beside the
    /// replays (the findings' part once they end).
    json_beside: Option<&'a Options>,
    json: std::sync::Mutex<Option<serde_json::Value>>,
}

impl Stages for DeviceCheck<'_> {
    fn beside_replays(&self, opened: &Opened, overview: &Arc<Overview>) {
        let Some(options) = self.json_beside else {
            return;
        };
        let report = opened.report_with_stacks();
        let json = crate::report::report_json(&opened.trace, &report, overview, &[], options);
        *self.json.lock().unwrap_or_else(|e| e.into_inner()) = Some(json);
    }

    fn opened(&self, opened: &Opened) {
        let trace = &opened.trace;
        if let Some(id) = self.device
            && trace.device(id).is_none()
        {
            let ids: Vec<String> = trace.devices.iter().map(|d| d.id.to_string()).collect();
            let files: Vec<String> = self.files.iter().map(|f| f.display().to_string()).collect();
            *self.missing.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                "no device {id} in {} (devices: {})",
                files.join(", "),
                ids.join(", ")
            ));
            self.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// More exports than this are reported as a job (each summarised in turn, then reduced)
/// rather than merged whole: memory that does not grow with the ranks.
pub const JOB_FROM_SUMMARIES_PAST: usize = 16;

/// The report of a job from rank summaries (`*.summary`), or from many exports each
/// summarised in turn.
fn job_output(paths: &[PathBuf], as_json: bool, options: &Options) -> Result<String, String> {
    let t0 = Instant::now();
    let summaries = rank_summaries(paths, options, true, &AtomicBool::new(false), &|k, p| {
        eprintln!("[{}/{}] summarising {}", k + 1, paths.len(), p.display())
    })?;
    let job = crate::job::reduce(&summaries, options.top);
    if as_json {
        let mut json = serde_json::to_value(&job).map_err(|e| e.to_string())?;
        json["seconds"] = t0.elapsed().as_secs_f64().into();
        Ok(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n")
    } else {
        Ok(crate::job::text(&job, options.top))
    }
}

/// A kept report with this run's time in it (JSON: `load.seconds`; text: "loaded in").
fn with_load_seconds(kept: &str, as_json: bool, seconds: f64) -> String {
    if !as_json {
        let re = regex::Regex::new(r"loaded in [0-9.]+ s").expect("a valid pattern");
        let now = format!("loaded in {seconds:.2} s (from the cache)");
        return re.replace(kept, regex::NoExpand(&now)).into_owned();
    }
    let Ok(mut json) = serde_json::from_str::<serde_json::Value>(kept) else {
        return kept.to_string();
    };
    if let Some(load) = json.get_mut("load").and_then(|l| l.as_object_mut()) {
        load.insert("seconds".into(), seconds.into());
    }
    serde_json::to_string_pretty(&json).map_or_else(|_| kept.to_string(), |t| t + "\n")
}

/// The summary of the export at `path`, loaded (read from the cache when `use_cache`;
/// nothing is written there: a cluster's hundreds of ranks would only evict each other)
/// and analysed with `options`.
pub fn summarize_export(
    path: &Path,
    options: &Options,
    use_cache: bool,
) -> Result<crate::job::RankSummary, String> {
    let identity = crate::job::FileIdentity::of(path)?;
    let cancel = AtomicBool::new(false);
    let opened = open_file(
        path,
        Hooks {
            use_cache,
            ..Hooks::quiet(&cancel)
        },
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let overview = crate::overview::overview_cancellable(&opened.trace, options, &cancel)
        .ok_or_else(|| format!("{}: analysis cancelled", path.display()))?;
    Ok(crate::job::summarize(&opened.trace, &overview, identity))
}

/// The rank summaries of a job: `paths` all summaries, read in parallel (each checked);
/// or all exports, each summarised in turn (one model in memory at a time) and dropped,
/// `progress` hearing of each (its index, its path) and `cancel` stopping between them.
/// Summaries and exports mixed are refused. What `report`, the window, `bench job` and
/// Python's `job` reduce.
pub fn rank_summaries(
    paths: &[PathBuf],
    options: &Options,
    use_cache: bool,
    cancel: &AtomicBool,
    progress: &dyn Fn(usize, &Path),
) -> Result<Vec<(PathBuf, crate::job::RankSummary)>, String> {
    let summaries = paths.iter().filter(|p| crate::job::is_summary(p)).count();
    if summaries == paths.len() {
        return crate::job::read_all(paths);
    }
    if summaries > 0 {
        return Err("give either rank summaries (*.summary) or exports, not both".into());
    }
    let mut out = Vec::with_capacity(paths.len());
    for (k, p) in paths.iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err("cancelled".into());
        }
        progress(k, p);
        out.push((p.clone(), summarize_export(p, options, use_cache)?));
    }
    Ok(out)
}
