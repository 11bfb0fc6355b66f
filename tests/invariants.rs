//! Invariants: what must not change an answer. Each is checked on the generator's shapes
//! (plain, a sync after every collective, CUDA graphs recorded both ways, the whole
//! attention captured, GPU metrics and device memory, CPU samples, a job split into rank
//! files, rank files whose pids and tids coincide, DLProf's per-op NVTX) and on every real
//! export in `../shared/fixtures/`:
//! - pids and tids renumbered, or made equal across a job's files → the same findings and
//!   savings, critical path and drill-down;
//! - every table's rows in another order → the same report;
//! - the capture's clock started elsewhere → the same report but its times;
//! - one file split into rank files → the same answers as the file;
//! - rank summaries reduced → the same straggler, waits and iteration times as the exports;
//! - a what-if whose change selects a superset of another's saves at least as much, and
//!   every finding's `what_if` reproduces its saving;
//! - files renamed or laid out in other folders → nothing lost, nothing overwritten.
//!
//! Which bug of issue 67 each one caught before its fix is said at its test.

mod common;
#[path = "invariants/transform.rs"]
mod transform;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nsys_explorer::overview::Options;
use nsys_explorer::synth::{self, GraphTrace, Preset, SynthOptions};
use serde_json::Value;

/// A generated or real run: its files (one, or a job's rank files).
struct Shape {
    name: String,
    files: Vec<PathBuf>,
}

/// Where the shapes and the transformed copies live for this test process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn no_cache() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(nsys_explorer::cache::disable);
}

fn generated(name: &str, options: SynthOptions) -> Shape {
    let path = scratch().join("shapes").join(format!("{name}.sqlite"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    synth::generate(&path, options).unwrap();
    Shape {
        name: name.into(),
        files: vec![path],
    }
}

fn generated_split(name: &str, options: SynthOptions) -> Shape {
    let dir = scratch().join("shapes").join(name);
    let truth = synth::generate_split(&dir, options).unwrap();
    Shape {
        name: name.into(),
        files: truth.files.into_iter().map(|f| f.path).collect(),
    }
}

fn tiny() -> SynthOptions {
    SynthOptions::new(Preset::Tiny)
}

/// The generator's shapes, written once.
fn generated_shapes() -> &'static [Shape] {
    static SHAPES: OnceLock<Vec<Shape>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        vec![
            generated("plain", tiny()),
            generated(
                "sync-after-collective",
                SynthOptions {
                    sync_after_collective: true,
                    ..tiny()
                },
            ),
            generated(
                "graphs-graph-level",
                SynthOptions {
                    cuda_graphs: Some(GraphTrace::Graph),
                    ..tiny()
                },
            ),
            generated(
                "graphs-node-level-attention",
                SynthOptions {
                    cuda_graphs: Some(GraphTrace::Node),
                    graph_attention: true,
                    sync_after_collective: true,
                    ..tiny()
                },
            ),
            generated(
                "metrics-and-memory",
                SynthOptions {
                    gpu_metrics: true,
                    memory_usage: true,
                    ..tiny()
                },
            ),
            generated(
                "cpu-samples",
                SynthOptions {
                    cpu_samples: true,
                    ..tiny()
                },
            ),
            generated(
                "dlprof",
                SynthOptions {
                    dlprof_markers: true,
                    ..tiny()
                },
            ),
            generated_split("split", tiny()),
            generated_split(
                "split-same-pids",
                SynthOptions {
                    same_pids: true,
                    ..tiny()
                },
            ),
        ]
    })
}

fn real_shapes() -> Vec<Shape> {
    common::real_fixtures()
        .into_iter()
        .map(|p| Shape {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            files: vec![p],
        })
        .collect()
}

/// `report --json` of `files`, without what depends on when and where it ran (the load's
/// seconds, paths and file names).
fn report(files: &[PathBuf]) -> Value {
    no_cache();
    let text = nsys_explorer::session::report_output(files, true, &Options::default())
        .unwrap_or_else(|e| panic!("{files:?}: {e}"));
    let mut v: Value = serde_json::from_str(&text).unwrap();
    strip(&mut v, &|k| {
        matches!(
            k,
            "load_seconds" | "file" | "path" | "name_of_file" | "files" | "load" | "source"
        )
    });
    v
}

/// `v` without the keys `drop` names, at any depth.
fn strip(v: &mut Value, drop: &dyn Fn(&str) -> bool) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !drop(k));
            for x in map.values_mut() {
                strip(x, drop);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| strip(x, drop)),
        _ => {}
    }
}

/// Where `a` and `b` differ, as `path: a vs b` lines (at most 20), numbers allowed to
/// differ as `same_number` says.
fn differences(a: &Value, b: &Value, same_number: &dyn Fn(&str, f64, f64) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    walk(a, b, "", same_number, &mut out);
    out.truncate(20);
    out
}

fn walk(
    a: &Value,
    b: &Value,
    at: &str,
    same_number: &dyn Fn(&str, f64, f64) -> bool,
    out: &mut Vec<String>,
) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => walk(p, q, &format!("{at}.{k}"), same_number, out),
                    (p, q) => out.push(format!("{at}.{k}: {p:?} vs {q:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!("{at}: {} items vs {}", x.len(), y.len()));
            }
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                walk(p, q, &format!("{at}[{i}]"), same_number, out);
            }
        }
        (Value::Number(p), Value::Number(q)) => {
            let (p, q) = (p.as_f64().unwrap(), q.as_f64().unwrap());
            if p != q && !same_number(at, p, q) {
                out.push(format!("{at}: {p} vs {q}"));
            }
        }
        (Value::String(p), Value::String(q)) => {
            if p != q && !same_text(p, q, at, same_number) {
                out.push(format!("{at}: {p:?} vs {q:?}"));
            }
        }
        (p, q) if p == q => {}
        (p, q) => out.push(format!("{at}: {p} vs {q}")),
    }
}

/// Texts equal but for numbers that `same_number` lets differ (a what-if's span, a time).
fn same_text(p: &str, q: &str, at: &str, same_number: &dyn Fn(&str, f64, f64) -> bool) -> bool {
    let split = |s: &str| -> (Vec<String>, Vec<f64>) {
        let mut words = Vec::new();
        let mut numbers = Vec::new();
        let mut word = String::new();
        let mut number = String::new();
        for c in s.chars() {
            if c.is_ascii_digit() || (c == '-' && number.is_empty() && word.ends_with(':')) {
                number.push(c);
            } else {
                if !number.is_empty() {
                    numbers.push(number.parse().unwrap_or(f64::NAN));
                    number.clear();
                    word.push('#');
                }
                word.push(c);
            }
        }
        if !number.is_empty() {
            numbers.push(number.parse().unwrap_or(f64::NAN));
            word.push('#');
        }
        words.push(word);
        (words, numbers)
    };
    let ((wp, np), (wq, nq)) = (split(p), split(q));
    wp == wq
        && np.len() == nq.len()
        && np
            .iter()
            .zip(&nq)
            .all(|(x, y)| x == y || same_number(at, *x, *y))
}

fn assert_same(what: &str, a: &Value, b: &Value, same_number: &dyn Fn(&str, f64, f64) -> bool) {
    let diff = differences(a, b, same_number);
    assert!(diff.is_empty(), "{what}:\n{}", diff.join("\n"));
}

fn exactly(_: &str, _: f64, _: f64) -> bool {
    false
}

/// Savings and times that a replay over other thread numbers may put a few ns apart.
fn within_10_us(_: &str, a: f64, b: f64) -> bool {
    (a - b).abs() <= 10_000.0
}

/// `v` without the pids and tids it names: the keys, and a host span's tid in a what-if's
/// `--remove-stall` (`[FILE:]TID:START:END`).
fn without_ids(mut v: Value) -> Value {
    strip(&mut v, &|k| matches!(k, "pid" | "tid"));
    fn spans(v: &mut Value) {
        match v {
            Value::Object(map) => map.values_mut().for_each(spans),
            Value::Array(items) => {
                let mut after_stall = false;
                for x in items.iter_mut() {
                    if let (true, Value::String(s)) = (after_stall, &mut *x) {
                        let mut parts: Vec<&str> = s.split(':').collect();
                        let tid = parts.len() - 3;
                        parts[tid] = "TID";
                        *s = parts.join(":");
                    }
                    after_stall = x.as_str() == Some("--remove-stall");
                    spans(x);
                }
            }
            _ => {}
        }
    }
    spans(&mut v);
    v
}

/// Every shape, generated and real.
fn all_shapes() -> Vec<&'static Shape> {
    generated_shapes()
        .iter()
        .chain(REAL.get_or_init(real_shapes).iter())
        .collect()
}

fn copies_of(shape: &Shape, what: &str, make: &dyn Fn(&Path, &Path) -> PathBuf) -> Vec<PathBuf> {
    shape
        .files
        .iter()
        .map(|f| {
            let to = scratch()
                .join(what)
                .join(&shape.name)
                .join(f.file_name().unwrap());
            make(f, &to)
        })
        .collect()
}

// Issue 67, bug 2 (a replay keyed by tid changed other ranks' threads): `split-same-pids`
// reproduces it — the straggler's saving moved with the pids before `HostSpan` named its file.
#[test]
fn pids_and_tids_renumbered_or_made_equal_across_files_change_no_answer() {
    for shape in all_shapes() {
        let want = without_ids(report(&shape.files));
        let renumbered = copies_of(shape, "renumbered", &|f, to| {
            transform::renumbered(f, to, 3)
        });
        assert_same(
            &format!("{}: pids and tids renumbered", shape.name),
            &want,
            &without_ids(report(&renumbered)),
            &within_10_us,
        );
        if shape.files.len() > 1 {
            let common = copies_of(shape, "common-ids", &|f, to| {
                transform::with_common_ids(f, to)
            });
            assert_same(
                &format!(
                    "{}: every rank file with the same pids and tids",
                    shape.name
                ),
                &want,
                &without_ids(report(&common)),
                &within_10_us,
            );
        }
    }
}

#[test]
fn rows_in_another_order_change_no_answer() {
    for shape in all_shapes() {
        let want = report(&shape.files);
        let shuffled = copies_of(shape, "shuffled", &|f, to| transform::shuffled(f, to, 7));
        assert_same(
            &format!("{}: rows shuffled", shape.name),
            &want,
            &report(&shuffled),
            &exactly,
        );
    }
}

#[test]
fn a_clock_started_elsewhere_changes_only_the_times() {
    const BY: i64 = 1_234_567_890_123;
    for shape in all_shapes() {
        let want = report(&shape.files);
        let shifted = copies_of(shape, "shifted", &|f, to| transform::shifted(f, to, BY));
        let moved = |_: &str, a: f64, b: f64| (b - a - BY as f64).abs() < 0.5;
        assert_same(
            &format!("{}: the clock's origin moved", shape.name),
            &want,
            &report(&shifted),
            &moved,
        );
    }
}

/// What must agree however a job is split into files or named: per GPU in order its
/// breakdown and iteration times, the iteration marker and slowest iteration, the straggler
/// (by GPU position) and each finding's kind and saving.
fn digest(report: &Value) -> Value {
    let devices: Vec<Value> = report["devices"]
        .as_array()
        .map(|d| d.iter().map(|d| d["breakdown_ns"].clone()).collect())
        .unwrap_or_default();
    let iterations: Vec<Value> = report["iterations"]["per_device"]
        .as_array()
        .map(|d| d.iter().map(|d| d["durations_ns"].clone()).collect())
        .unwrap_or_default();
    let findings: Vec<Value> = report["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|f| {
                    serde_json::json!([
                        f["kind"],
                        f["saving_ns"],
                        f["devices"].as_array().map(Vec::len)
                    ])
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "devices": devices,
        "iterations": iterations,
        "marker": report["iterations"]["marker"],
        "slowest": report["iterations"]["slowest_index"],
        "straggler": straggler_position(report),
        "findings": findings,
    })
}

/// The straggler's place among the report's devices (a device is named by its id in one
/// file, by `FILE:ID` in several).
fn straggler_position(report: &Value) -> Value {
    let straggler = &report["drilldown"]["straggler_device"];
    let devices = report["devices"].as_array().cloned().unwrap_or_default();
    devices
        .iter()
        .position(|d| &d["id"] == straggler || d.get("key") == Some(straggler))
        .map_or(Value::Null, |k| k.into())
}

/// A replay across files set on one clock by their collectives: within 1 % or 100 µs.
fn to_the_alignment(_: &str, a: f64, b: f64) -> bool {
    (a - b).abs() <= (0.01 * a.abs()).max(100_000.0)
}

#[test]
fn a_run_split_into_rank_files_answers_as_the_one_file() {
    for (name, options) in [
        ("plain", tiny()),
        (
            "sync-after-collective",
            SynthOptions {
                sync_after_collective: true,
                ..tiny()
            },
        ),
    ] {
        let one = generated(&format!("whole-{name}"), options);
        let split = generated_split(&format!("split-{name}"), options);
        assert_same(
            &format!("{name}: split into rank files vs one file"),
            &digest(&report(&one.files)),
            &digest(&report(&split.files)),
            &to_the_alignment,
        );
    }
}

// Issue 67, bug 1 (`summarize` wrote every `report.sqlite` to one `report.summary`): the
// layout of one folder a node, each with `report.sqlite`, lost three ranks of four.
#[test]
fn files_renamed_or_laid_out_in_folders_lose_nothing() {
    for shape in generated_shapes().iter().filter(|s| s.files.len() > 1) {
        let want = digest(&report(&shape.files));
        // One folder a node, each export named as nsys names it.
        let nodes: Vec<PathBuf> = shape
            .files
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let to = scratch()
                    .join("layout")
                    .join(&shape.name)
                    .join(format!("n{k}"))
                    .join("report.sqlite");
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(f, &to).unwrap();
                to
            })
            .collect();
        assert_same(
            &format!("{}: exports in one folder a node", shape.name),
            &want,
            &digest(&report(&nodes)),
            &exactly,
        );
        // Their summaries side by side in one folder: one each, none written over another.
        let names = nsys_explorer::job::summary_names(&nodes).unwrap();
        let out = scratch().join("layout-summaries").join(&shape.name);
        let paths: Vec<PathBuf> = nodes
            .iter()
            .zip(&names)
            .map(|(export, name)| {
                let s =
                    nsys_explorer::session::summarize_export(export, &Options::default(), false)
                        .unwrap();
                let to = out.join(format!("{name}.summary"));
                nsys_explorer::job::write_summary(&s, &to).unwrap();
                to
            })
            .collect();
        let written = std::fs::read_dir(&out).unwrap().count();
        assert_eq!(written, nodes.len(), "{}: one summary a rank", shape.name);
        let job = nsys_explorer::job::reduce(&nsys_explorer::job::read_all(&paths).unwrap(), 10);
        assert_eq!(job.devices.len(), nodes.len(), "{}: every GPU", shape.name);
    }
}

/// The job's answers from the ranks' summaries, and from their exports loaded whole: per
/// GPU its NCCL wait and transfer, its iteration times, and the straggler.
#[test]
fn summaries_reduced_answer_as_the_exports_loaded() {
    no_cache();
    let shapes = generated_shapes()
        .iter()
        .filter(|s| s.files.len() > 1)
        .chain(REAL.get_or_init(real_shapes).iter());
    for shape in shapes {
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let summaries = nsys_explorer::session::rank_summaries(
            &shape.files,
            &Options::default(),
            false,
            &cancel,
            &|_, _| {},
        )
        .unwrap();
        let job = nsys_explorer::job::reduce(&summaries, 10);
        let source = nsys_explorer::session::Source::of(&shape.files).unwrap();
        let opened = nsys_explorer::session::open(
            &source,
            nsys_explorer::session::Hooks {
                use_cache: false,
                ..nsys_explorer::session::Hooks::quiet(&cancel)
            },
        )
        .unwrap();
        let full = nsys_explorer::session::answer(&opened, &Options::default(), &cancel).unwrap();
        let waits = |w: &[(i64, i64, usize)]| w.to_vec();
        let from_exports: Vec<(i64, i64, usize)> = full
            .overview
            .nccl_wait
            .per_device
            .iter()
            .map(|d| (d.wait_ns, d.transfer_ns, d.collectives))
            .collect();
        let from_summaries: Vec<(i64, i64, usize)> = job
            .nccl_wait
            .per_device
            .iter()
            .map(|d| (d.wait_ns, d.transfer_ns, d.collectives))
            .collect();
        assert_eq!(
            waits(&from_exports),
            waits(&from_summaries),
            "{}: NCCL wait and transfer per GPU",
            shape.name
        );
        // A GPU without iterations has a median of 0 in a summary.
        let medians: Vec<i64> = opened
            .trace
            .devices
            .iter()
            .map(|d| {
                full.overview
                    .iterations
                    .per_device
                    .iter()
                    .find(|x| x.device == d.id)
                    .map_or(0, |x| x.median_ns)
            })
            .collect();
        let job_medians: Vec<i64> = job.devices.iter().map(|d| d.iteration_median_ns).collect();
        assert_eq!(
            medians, job_medians,
            "{}: iteration medians per GPU",
            shape.name
        );
        assert_eq!(
            full.overview.iterations.slowest_index, job.iterations.slowest_index,
            "{}: the slowest iteration",
            shape.name
        );
        // One median across GPUs, whichever way the job was read (issue 69: four medians).
        let (longest, steady) = full.overview.iterations.across_gpus();
        assert_eq!(longest, job.iterations.durations_ns, "{}", shape.name);
        assert_eq!(steady.median_ns, job.iterations.median_ns, "{}", shape.name);
        // The straggler by its GPU's place (a job names GPUs `FILE:ID`).
        let straggler = full
            .overview
            .drilldown
            .as_ref()
            .and_then(|d| d.straggler_device)
            .and_then(|d| opened.trace.devices.iter().position(|x| x.id == d));
        let job_straggler = job
            .findings
            .iter()
            .find(|f| f.kind == nsys_explorer_core::findings::Kind::Straggler)
            .and_then(|f| f.devices.first())
            .and_then(|key| job.devices.iter().position(|d| &d.key == key));
        if let (Some(a), Some(b)) = (&straggler, &job_straggler) {
            assert_eq!(a, b, "{}: the straggler", shape.name);
        }
    }
}

static REAL: OnceLock<Vec<Shape>> = OnceLock::new();

/// Seconds a what-if saves, by the what-if command's own replay.
fn what_if_saving(
    trace: &nsys_explorer::trace::Trace,
    o: &nsys_explorer::overview::Overview,
    args: &[String],
) -> i64 {
    let change = nsys_explorer::whatif::Change::from_args(args).unwrap();
    let w = nsys_explorer::whatif::report::what_if(trace, o, &change, &Options::default());
    nsys_explorer::whatif::report::saving_ns(&w)
}

fn opened(files: &[PathBuf]) -> nsys_explorer::session::Opened {
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let source = nsys_explorer::session::Source::of(files).unwrap();
    nsys_explorer::session::open(
        &source,
        nsys_explorer::session::Hooks {
            use_cache: false,
            ..nsys_explorer::session::Hooks::quiet(&cancel)
        },
    )
    .unwrap()
}

// Issue 67, bug 3 (`--remove-sync TEXT` looked only at the 64 ranges before a call): with
// eight blocks a step, `denoising_step` (hundreds of ranges before each sync) saved less
// than `attention` (a few).
#[test]
fn a_what_if_that_selects_more_saves_at_least_as_much() {
    let shape = generated(
        "superset",
        SynthOptions {
            sync_after_collective: true,
            blocks: Some(8),
            ..tiny()
        },
    );
    let opened = opened(&shape.files);
    let o = nsys_explorer::overview::overview(&opened.trace, &Options::default());
    let saving =
        |text: &str| what_if_saving(&opened.trace, &o, &["--remove-sync".into(), text.into()]);
    // Each range encloses the next: every sync the inner one selects, the outer does too.
    let nested = [
        "denoising_step",
        "cfg_",
        "transformer_block",
        "attention",
        "nccl:all_to_all",
    ];
    let savings: Vec<i64> = nested.iter().map(|t| saving(t)).collect();
    assert!(savings[4] > 0, "{savings:?}");
    for k in 1..nested.len() {
        assert!(
            savings[k - 1] + 10_000 >= savings[k],
            "--remove-sync {} saves {} ns, less than {} ({} ns): {savings:?}",
            nested[k - 1],
            savings[k - 1],
            nested[k],
            savings[k]
        );
    }
    // An all-to-all's range holds a device sync and nothing else that synchronises: by
    // their name, those syncs and others (the straggler's drain).
    let by_name = saving("cudaDeviceSynchronize");
    assert!(
        by_name + 10_000 >= savings[4],
        "by name {by_name} ns, by the all-to-alls' range {} ns",
        savings[4]
    );
}

#[test]
fn every_findings_what_if_reproduces_its_saving() {
    no_cache();
    for shape in all_shapes() {
        let opened = opened(&shape.files);
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let answers =
            nsys_explorer::session::answer(&opened, &Options::default(), &cancel).unwrap();
        for f in &answers.findings {
            let (Some(saving), Some(change)) = (f.saving_ns, &f.change) else {
                continue;
            };
            let args = change.to_args();
            for span in &change.remove_stalls {
                span.check(&opened.trace)
                    .unwrap_or_else(|e| panic!("{}: {}: {e}", shape.name, f.title));
            }
            assert_eq!(
                what_if_saving(&opened.trace, &answers.overview, &args),
                saving,
                "{}: {}: what-if {args:?}",
                shape.name,
                f.title
            );
        }
    }
}
