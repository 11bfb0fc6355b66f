//! Opening an `.nsys-rep` directly, with a stand-in `nsys` (a script that writes a
//! generated trace where `--output` says): the same answer as the export, a second open
//! without an export, a failing and a hanging `nsys`, and nothing beside the report.

mod common;
#[path = "gui_support/mod.rs"]
mod gui_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use egui_kittest::kittest::Queryable;
use nsys_explorer::load::LoadError;
use nsys_explorer::synth::{self, Preset, SynthOptions};

/// A folder with a generated trace, a stand-in `nsys` and its log of calls. The stand-in
/// behaves by the report's name: `*fail*` fails, `*hang*` never ends, others export after
/// a short delay.
struct StandIn {
    dir: tempfile::TempDir,
    trace: PathBuf,
    nsys: PathBuf,
    log: PathBuf,
}

impl StandIn {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("generated.sqlite");
        synth::generate(&trace, SynthOptions::new(Preset::Tiny)).unwrap();
        let nsys = dir.path().join("nsys");
        let log = dir.path().join("calls.log");
        let script = format!(
            r#"#!/bin/bash
if [ "$1" = "--version" ]; then echo "NVIDIA Nsight Systems version 2099.1.0-standin"; exit 0; fi
echo "$$ $*" >> '{log}'
out=""; prev=""
for a in "$@"; do [ "$prev" = "--output" ] && out="$a"; prev="$a"; done
report="${{@: -1}}"
case "$report" in
  *fail*) echo "Importing the report..." >&2; echo "ERROR: cannot read section 3 of $report" >&2; exit 3;;
  *hang*) exec sleep 600;;
esac
sleep 0.3
cp '{trace}' "$out"
"#,
            log = log.display(),
            trace = trace.display()
        );
        std::fs::write(&nsys, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nsys, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self {
            dir,
            trace,
            nsys,
            log,
        }
    }

    /// A report file (not SQLite: the stand-in does not read it) in a folder of its own.
    fn report(&self, name: &str) -> PathBuf {
        let folder = self.dir.path().join(format!("reports-{name}"));
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join(name);
        std::fs::write(&path, b"NSYS report stand-in").unwrap();
        path
    }

    fn calls(&self) -> usize {
        std::fs::read_to_string(&self.log).map_or(0, |t| t.lines().count())
    }

    /// `report --json FILES` with the cache at `cache`, which must succeed: its stdout.
    fn report_json(&self, cache: &Path, files: &[&Path]) -> Vec<u8> {
        let out = self
            .cli(cache)
            .args(["report", "--json"])
            .args(files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    fn cli(&self, cache: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nsys-explorer"));
        cmd.env("XDG_CACHE_HOME", cache).env("NSYS", &self.nsys);
        cmd
    }
}

/// The stand-in the in-process tests share (`export::use_nsys` is the process's).
fn shared() -> &'static StandIn {
    static SHARED: std::sync::OnceLock<StandIn> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        let s = StandIn::new();
        nsys_explorer::export::use_nsys(&s.nsys);
        s
    })
}

fn files_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|l| {
            l.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `report --json` without what differs between opening a report and its export.
fn comparable(json: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(json).unwrap();
    v.as_object_mut().unwrap().remove("file");
    let load = v["load"].as_object_mut().unwrap();
    load.remove("seconds");
    load.remove("export");
    v
}

#[test]
fn a_report_opens_through_nsys_with_the_answer_of_its_export_and_once_exported_runs_none() {
    let s = StandIn::new();
    let report = s.report("run.nsys-rep");
    let cache = s.dir.path().join("cache");
    let out = s.report_json(&cache, &[&report]);
    assert_eq!(s.calls(), 1);
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["file"], report.display().to_string());
    let how = json["load"]["export"].as_str().unwrap();
    assert!(how.contains("exported with nsys 2099.1.0-standin"), "{how}");
    // The export went under the cache folder, nothing beside the report.
    assert_eq!(files_in(report.parent().unwrap()), ["run.nsys-rep"]);
    let exports = files_in(&cache.join("nsys-explorer/exports"));
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(exports[0].starts_with("run-") && exports[0].ends_with(".sqlite"));

    let direct = s.report_json(&s.dir.path().join("other-cache"), &[&s.trace]);
    assert_eq!(comparable(&out), comparable(&direct));

    // Again: the kept export, no second run of nsys; and in text, the export is named.
    let again = s.cli(&cache).arg("report").arg(&report).output().unwrap();
    assert!(again.status.success());
    assert_eq!(s.calls(), 1, "the second open exported again");
    let text = String::from_utf8(again.stdout).unwrap();
    assert!(
        text.contains("SQLite: exported with nsys 2099.1.0-standin before"),
        "{text}"
    );

    // --no-export: today's advice, no nsys run.
    let off = s
        .cli(&s.dir.path().join("third-cache"))
        .args(["--no-export", "report"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(off.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&off.stderr).contains("nsys export --type sqlite"));
    assert_eq!(s.calls(), 1);
}

#[test]
fn a_failing_nsys_gives_its_message_and_leaves_nothing_and_no_nsys_says_where_it_looked() {
    let s = StandIn::new();
    let report = s.report("broken-fail.nsys-rep");
    let cache = s.dir.path().join("cache");
    let out = s.cli(&cache).arg("report").arg(&report).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot read section 3"), "{stderr}");
    assert!(stderr.contains("nsys 2099.1.0-standin failed"), "{stderr}");
    assert!(files_in(&cache.join("nsys-explorer/exports")).is_empty());
    assert_eq!(files_in(report.parent().unwrap()), ["broken-fail.nsys-rep"]);

    let missing = s.dir.path().join("no/such/nsys");
    let out = s
        .cli(&cache)
        .env("NSYS", &missing)
        .arg("report")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no `nsys` was found"), "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(stderr.contains("NSYS="), "{stderr}");
}

#[test]
fn an_export_beside_the_report_and_newer_is_opened_without_nsys() {
    let s = StandIn::new();
    let report = s.report("beside.nsys-rep");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::copy(&s.trace, report.with_extension("sqlite")).unwrap();
    let out = s.report_json(&s.dir.path().join("cache"), &[&report]);
    assert_eq!(s.calls(), 0);
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(
        json["load"]["export"]
            .as_str()
            .unwrap()
            .contains("the export beside the report")
    );
}

#[test]
fn a_cancelled_export_ends_nsys_and_leaves_no_file() {
    let s = shared();
    // The cache folder the window's test uses too (the folder is the process's).
    let cache = common::test_cache_home().join("nsys-explorer");
    nsys_explorer::cache::set_folder(&cache);
    let report = s.report("stuck-hang.nsys-rep");
    let calls = || {
        std::fs::read_to_string(&s.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("stuck-hang"))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let cancel = AtomicBool::new(false);
    let t0 = Instant::now();
    let result = std::thread::scope(|scope| {
        let run = scope.spawn(|| {
            nsys_explorer::session::open_file(
                &report,
                nsys_explorer::session::Hooks::quiet(&cancel),
            )
            .map(|_| ())
        });
        while calls().is_empty() && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        cancel.store(true, Ordering::Relaxed);
        run.join().unwrap()
    });
    assert!(matches!(result, Err(LoadError::Cancelled)), "{result:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the cancel waited for nsys"
    );
    let pid = calls()[0].clone();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "nsys (pid {pid}) still runs"
    );
    let left: Vec<String> = files_in(&cache.join("exports"))
        .into_iter()
        .filter(|f| f.starts_with("stuck-hang"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(files_in(report.parent().unwrap()), ["stuck-hang.nsys-rep"]);
}

#[test]
fn the_window_opens_a_report_through_nsys_and_shows_its_trace() {
    let s = shared();
    let report = s.report("window.nsys-rep");
    let mut h = gui_support::harness(Some(&report));
    let mut saw_exporting = false;
    let t0 = Instant::now();
    while !matches!(h.state().state, nsys_explorer::ui::State::Loaded(_))
        && t0.elapsed() < Duration::from_secs(60)
    {
        h.step();
        saw_exporting |= h
            .query_by_label_contains("Exporting with nsys 2099.1.0-standin")
            .is_some();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        saw_exporting,
        "the loading view never said it was exporting"
    );
    gui_support::wait_for_load(&mut h);
    let loaded = gui_support::loaded(&h);
    let (direct, _) = nsys_explorer::load::load(&s.trace).unwrap();
    assert_eq!(loaded.trace.kernel_count(), direct.kernel_count());
    assert!(
        h.query_by_label_contains("Read as SQLite: exported with nsys")
            .is_some()
    );
    assert_eq!(files_in(report.parent().unwrap()), ["window.nsys-rep"]);
}

#[test]
fn several_reports_are_exported_and_opened_as_one_job() {
    let s = StandIn::new();
    let (a, b) = (s.report("rank0.nsys-rep"), s.report("rank1.nsys-rep"));
    let out = s.report_json(&s.dir.path().join("cache"), &[&a, &b]);
    assert_eq!(s.calls(), 2);
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let (one, _) = nsys_explorer::load::load(&s.trace).unwrap();
    assert_eq!(
        json["devices"].as_array().unwrap().len(),
        2 * one.devices.len()
    );
}

#[test]
fn the_windows_cancel_ends_a_hanging_export() {
    let s = shared();
    let report = s.report("window-hang.nsys-rep");
    let mut h = gui_support::harness(Some(&report));
    // The label shows once nsys is spawned; the stand-in logs its pid a moment later,
    // so wait for both (on a busy CI machine the gap is visible).
    let hang_pids = || -> Vec<String> {
        std::fs::read_to_string(&s.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("window-hang"))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    let t0 = Instant::now();
    while (h
        .query_by_label_contains("Exporting with nsys 2099.1.0-standin")
        .is_none()
        || hang_pids().is_empty())
        && t0.elapsed() < Duration::from_secs(20)
    {
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let pids = hang_pids();
    assert_eq!(pids.len(), 1, "nsys started once");
    h.get_by_label("Cancel").click();
    let t0 = Instant::now();
    while Path::new(&format!("/proc/{}", pids[0])).exists()
        && t0.elapsed() < Duration::from_secs(10)
    {
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !Path::new(&format!("/proc/{}", pids[0])).exists(),
        "nsys still runs after Cancel"
    );
    h.run_steps(3);
    assert!(
        !matches!(h.state().state, nsys_explorer::ui::State::Loading { .. }),
        "the window still loads"
    );
    assert_eq!(files_in(report.parent().unwrap()), ["window-hang.nsys-rep"]);
}
