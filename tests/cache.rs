//! The cache under `$XDG_CACHE_HOME/nsys-explorer`: a second report is the first one; a
//! model read back is the model loaded; a damaged, foreign, stale or unwritable cache
//! never gives a wrong answer; processes at once leave it whole; nothing beside the trace.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nsys_explorer::load;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::{cache, findings};
use serde_json::Value;

fn report(cache_home: &Path, file: &Path, extra: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
        .env("XDG_CACHE_HOME", cache_home)
        .env_remove("NSYS_EXPLORER_CACHE_LIMIT")
        .arg("report")
        .arg("--json")
        .args(extra)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The report's JSON without its one timing (`load.seconds`).
fn answer(out: &Output) -> Value {
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["load"]
        .as_object_mut()
        .expect("a load section")
        .remove("seconds");
    v
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn entries(cache_home: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cache_home.join("nsys-explorer"))
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn tiny(dir: &Path, name: &str, seed: u64) -> PathBuf {
    let path = dir.join(name);
    synth::generate(
        &path,
        SynthOptions {
            seed,
            ..SynthOptions::new(Preset::Tiny)
        },
    )
    .unwrap();
    path
}

/// A generated tiny trace, then every shared real export.
fn tiny_and_real(dir: &Path, name: &str, seed: u64) -> Vec<PathBuf> {
    let mut files = vec![tiny(dir, name, seed)];
    files.extend(common::real_fixtures());
    files
}

#[test]
fn a_second_report_is_the_first_one_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let files = tiny_and_real(dir.path(), "tiny.sqlite", 311);
    for file in files {
        let home = tempfile::tempdir().unwrap();
        let before = common::snapshot(&file);
        let cold = report(home.path(), &file, &[]);
        let kept = entries(home.path());
        assert!(
            kept.iter()
                .any(|p| p.extension().is_some_and(|e| e == "nxc")),
            "{}: nothing kept: {kept:?}",
            file.display()
        );
        let warm = report(home.path(), &file, &[]);
        assert_eq!(answer(&cold), answer(&warm), "{}", file.display());
        // Other options: the model comes from the cache, the analyses run again.
        let from_model = report(home.path(), &file, &["--top", "3"]);
        let fresh = report(home.path(), &file, &["--top", "3", "--no-cache"]);
        assert_eq!(answer(&from_model), answer(&fresh), "{}", file.display());
        assert_eq!(common::snapshot(&file), before, "{}", file.display());
    }
}

/// A run replaying CUDA graphs, both recordings: the model read back from the cache keeps
/// the graph executions and each node-level kernel's graph node (the report's CUDA graph
/// section, first nodes included, is the same warm as cold).
#[test]
fn a_graph_launched_run_reads_back_whole_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [synth::GraphTrace::Graph, synth::GraphTrace::Node] {
        let file = dir.path().join(format!("{mode:?}.sqlite"));
        synth::generate(
            &file,
            SynthOptions {
                cuda_graphs: Some(mode),
                ..SynthOptions::new(Preset::Tiny)
            },
        )
        .unwrap();
        let home = tempfile::tempdir().unwrap();
        let cold = answer(&report(home.path(), &file, &[]));
        // Another option: the model from the cache, the analyses worked out again.
        let from_model = answer(&report(home.path(), &file, &["--top", "3"]));
        let fresh = answer(&report(home.path(), &file, &["--top", "3", "--no-cache"]));
        assert_eq!(from_model, fresh, "{mode:?}");
        let graphs = &cold["cuda_graphs"]["graphs"];
        assert!(!graphs.as_array().unwrap().is_empty());
        if mode == synth::GraphTrace::Node {
            assert!(
                graphs
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|g| g["first_node"].is_u64()),
                "{graphs}"
            );
        }
    }
}

/// In-process cache tests share one folder (the setting is the process's).
fn in_process_cache() {
    cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
}

#[test]
fn a_model_read_back_from_the_cache_is_the_model_loaded() {
    in_process_cache();
    let dir = tempfile::tempdir().unwrap();
    let files = tiny_and_real(dir.path(), "model.sqlite", 5);
    for file in files {
        let (trace, mut report) = load::load(&file).unwrap();
        let key = cache::TraceKey::of(&file).unwrap();
        cache::store_model(&key, &trace, &report);
        let Some((back, back_report)) = cache::read_model(&key) else {
            panic!("{}: not kept", file.display());
        };
        let name = file.display();
        // The call stacks, read after the load, are kept with it, and their rows reported.
        report.add_stacks_read(&trace.stacks().read);
        assert_eq!(
            format!("{:?}", back.stacks().stacks),
            format!("{:?}", trace.stacks().stacks),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", back.stacks().samples),
            format!("{:?}", trace.stacks().samples),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", back.devices),
            format!("{:?}", trace.devices),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", back.threads),
            format!("{:?}", trace.threads),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", back.info),
            format!("{:?}", trace.info),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", back.processes),
            format!("{:?}", trace.processes)
        );
        assert_eq!(back.sources, trace.sources, "{name}");
        assert_eq!(back.nvtx_domains, trace.nvtx_domains, "{name}");
        assert_eq!(back.capture_window, trace.capture_window, "{name}");
        assert_eq!(back.strings.len(), trace.strings.len(), "{name}");
        for id in 0..trace.strings.len() as u32 {
            assert_eq!(
                back.strings.get(id),
                trace.strings.get(id),
                "{name}: string {id}"
            );
            assert_eq!(back.strings.template_of(id), trace.strings.template_of(id));
        }
        // Lookups by text work on the table read back (its template index is rebuilt).
        if let Some(name_id) = trace
            .devices
            .first()
            .and_then(|d| d.streams[0].ops.name.first())
        {
            let text = trace.strings.get(*name_id);
            assert_eq!(back.strings.find(&text), Some(*name_id), "{name}: {text}");
        }
        assert_eq!(back_report.tables, report.tables, "{name}");
        assert_eq!(back_report.notes, report.notes, "{name}");
        assert_eq!(back_report.missing_tables, report.missing_tables, "{name}");
    }
}

#[test]
fn a_model_whose_call_stacks_failed_to_read_is_not_kept() {
    in_process_cache();
    let dir = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "stacks-failed.sqlite", 6);
    let (mut trace, report) = load::load(&file).unwrap();
    let mut failed = nsys_explorer::trace::CallStacks::default();
    failed.read.error = Some("the file changed since it was loaded".into());
    trace.call_stacks = nsys_explorer::trace::StacksSlot::ready(failed);
    let key = cache::TraceKey::of(&file).unwrap();
    cache::store_model(&key, &trace, &report);
    assert!(cache::read_model(&key).is_none(), "kept without its stacks");
}

#[test]
fn a_damaged_or_foreign_cache_is_rebuilt_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "damaged.sqlite", 311);
    let home = tempfile::tempdir().unwrap();
    let truth = answer(&report(home.path(), &file, &[]));
    type Damage = fn(&mut Vec<u8>);
    let damages: [(&str, Damage); 4] = [
        ("one flipped bit in the middle", |b| {
            let mid = b.len() / 2;
            b[mid] ^= 0x10;
        }),
        ("truncated", |b| b.truncate(b.len() - 10)),
        ("another program's file", |b| {
            let mut rng = fastrand::Rng::with_seed(9);
            b.iter_mut().for_each(|x| *x = rng.u8(..));
        }),
        ("another format version", |b| b[8] = b[8].wrapping_add(1)),
    ];
    for (what, damage) in damages {
        let kept = entries(home.path());
        // The model's head, a part per GPU (4) and the threads'; the gap findings' head
        // and a part per GPU (4); the other analyses; the replayed savings; the ranked
        // findings; the report.
        assert_eq!(kept.len(), 15, "{what}: {kept:?}");
        for path in &kept {
            let mut bytes = std::fs::read(path).unwrap();
            damage(&mut bytes);
            std::fs::write(path, bytes).unwrap();
        }
        let first = report(home.path(), &file, &[]);
        assert_eq!(answer(&first), truth, "{what}");
        assert!(
            stderr(&first).contains("damaged"),
            "{what}: {}",
            stderr(&first)
        );
        // Rebuilt: the next one is answered from a sound cache, and says nothing.
        let again = report(home.path(), &file, &[]);
        assert_eq!(answer(&again), truth, "{what}");
        assert_eq!(stderr(&again), "", "{what}");
        // The model entry too: other options read it and say nothing.
        let sound = entries(home.path());
        let top = report(home.path(), &file, &["--top", "4"]);
        assert_eq!(stderr(&top), "", "{what}");
        for extra in entries(home.path()) {
            if !sound.contains(&extra) {
                std::fs::remove_file(extra).unwrap();
            }
        }
    }
}

#[test]
fn a_changed_trace_is_never_answered_from_the_old_cache() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "run.sqlite", 311);
    let first = answer(&report(home.path(), &file, &[]));
    // The run written again at the same path, another seed (another run).
    std::fs::remove_file(&file).unwrap();
    tiny(dir.path(), "run.sqlite", 12);
    let second = answer(&report(home.path(), &file, &[]));
    let fresh = answer(&report(home.path(), &file, &["--no-cache"]));
    assert_eq!(second, fresh);
    assert_ne!(first["gaps"], second["gaps"], "the two runs differ");
    // A copy elsewhere is a file of its own, with the same answer.
    let copy = dir.path().join("copy.sqlite");
    std::fs::copy(&file, &copy).unwrap();
    let mut copied = answer(&report(home.path(), &copy, &[]));
    copied["file"] = fresh["file"].clone();
    assert_eq!(copied, fresh);
}

#[test]
fn an_unwritable_cache_folder_means_no_cache_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "ro.sqlite", 311);
    // A cache home under a plain file cannot be created, even by root.
    let blocker = dir.path().join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    let home = blocker.join("cache");
    let out = report(&home, &file, &[]);
    let said = stderr(&out);
    assert_eq!(said.matches("working without a cache").count(), 1, "{said}");
    let fresh = report(dir.path(), &file, &["--no-cache"]);
    assert_eq!(answer(&out), answer(&fresh));
}

#[test]
fn processes_opening_one_trace_at_once_leave_a_sound_cache() {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "shared.sqlite", 311);
    let home = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
                .env("XDG_CACHE_HOME", home.path())
                .args(["report", "--json"])
                .arg(&file)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for out in &outs {
        assert!(out.status.success(), "{}", stderr(out));
        assert_eq!(answer(out), answer(&outs[0]));
    }
    let kept = entries(home.path());
    assert!(
        kept.iter()
            .all(|p| p.extension().is_some_and(|e| e == "nxc")),
        "a temporary file left: {kept:?}"
    );
    let after = report(home.path(), &file, &[]);
    assert_eq!(stderr(&after), "");
    assert_eq!(answer(&after), answer(&outs[0]));
}

#[test]
fn the_size_limit_evicts_and_no_cache_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "limit.sqlite", 311);
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
        .env("XDG_CACHE_HOME", home.path())
        .env("NSYS_EXPLORER_CACHE_LIMIT", "1K")
        .args(["report", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        entries(home.path()),
        Vec::<PathBuf>::new(),
        "over 1 KiB: evicted"
    );
    let none = tempfile::tempdir().unwrap();
    report(none.path(), &file, &["--no-cache"]);
    assert!(!none.path().join("nsys-explorer").exists());
}

#[test]
fn any_entry_evicted_alone_still_gives_the_right_answer() {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny(dir.path(), "evicted.sqlite", 311);
    let fresh = answer(&report(dir.path(), &file, &["--top", "5", "--no-cache"]));
    let home = tempfile::tempdir().unwrap();
    report(home.path(), &file, &["--top", "5"]);
    let kept = entries(home.path());
    assert!(kept.len() >= 3, "{kept:?}");
    for gone in &kept {
        // One entry (a part of the model, the savings, the report) evicted, the rest kept.
        let sound = std::fs::read(gone).unwrap();
        std::fs::remove_file(gone).unwrap();
        let out = report(home.path(), &file, &["--top", "5"]);
        assert_eq!(answer(&out), fresh, "without {}", gone.display());
        assert_eq!(stderr(&out), "");
        std::fs::write(gone, sound).unwrap();
    }
}

#[test]
fn gap_findings_read_back_are_the_ones_found() {
    use nsys_explorer::overview::{Options, overview};
    in_process_cache();
    let dir = tempfile::tempdir().unwrap();
    let files = tiny_and_real(dir.path(), "gaps.sqlite", 8);
    let options = Options::default();
    for file in files {
        let (trace, _) = load::load(&file).unwrap();
        let found = overview(&trace, &options);
        let key = cache::TraceKey::of(&file).unwrap();
        cache::store_gap_findings(&key, &options, &found);
        let back = cache::read_gap_findings(&key, &options).expect("kept");
        let name = file.display();
        assert_eq!(
            format!("{:?}", back.gaps),
            format!("{:?}", found.gaps),
            "{name}"
        );
        assert_eq!(
            format!("{:?}", back.recurring),
            format!("{:?}", found.recurring)
        );
        assert_eq!(back.single_gaps, found.single_gaps, "{name}");
        assert_eq!(
            format!("{:?}", back.nvtx_gpu),
            format!("{:?}", found.nvtx_gpu)
        );
        // Other options are another entry.
        let other = Options {
            min_gap_ns: options.min_gap_ns + 1,
            ..Options::default()
        };
        assert!(cache::read_gap_findings(&key, &other).is_none(), "{name}");
    }
}

#[test]
fn an_overview_from_what_the_cache_kept_is_the_one_worked_out() {
    use nsys_explorer::overview::{Options, overview, overview_with};
    in_process_cache();
    let dir = tempfile::tempdir().unwrap();
    let files = tiny_and_real(dir.path(), "kept.sqlite", 9);
    let options = Options {
        top: 20,
        ..Options::default()
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    for file in files {
        let name = file.display();
        let (trace, report) = load::load(&file).unwrap();
        let found = overview(&trace, &options);
        let key = cache::TraceKey::of(&file).unwrap();
        assert!(cache::read_kept(&key, &options, &trace).analyses.is_none());
        cache::store_gap_findings(&key, &options, &found);
        cache::store_analyses(&key, &options, &found);
        let kept = cache::read_kept(&key, &options, &trace);
        assert!(
            kept.gap_findings.is_some() && kept.analyses.is_some(),
            "{name}"
        );
        let back = overview_with(&trace, &options, &cancel, kept).unwrap();
        // Every field the report and the panels read, the skipped ones included.
        let json = |o| {
            let findings = findings::findings(&trace, o);
            nsys_explorer::report::report_json(&trace, &report, o, &findings, &options)
        };
        assert_eq!(json(&back), json(&found), "{name}");
        let parts = |o: &nsys_explorer::overview::Overview| {
            let it: Vec<_> = o
                .iterations
                .per_device
                .iter()
                .map(|d| (d.thread, d.cpu.clone(), d.spans.clone()))
                .collect();
            let threads: Vec<usize> = o.cpu_sync.iter().map(|t| t.thread).collect();
            format!("{it:?} {threads:?} {:?}", o.devices)
        };
        assert_eq!(parts(&back), parts(&found), "{name}");
        // The ranked findings read back: every field, the changes replayed included.
        let ranked = findings::findings(&trace, &found);
        assert!(findings::read_ranked(&key, &found).is_none(), "{name}");
        findings::store_ranked(&key, &found, &ranked);
        let again = findings::read_ranked(&key, &back).expect("kept");
        assert_eq!(format!("{again:?}"), format!("{ranked:?}"), "{name}");
        for f in &ranked {
            for c in [&f.change, &f.upper_change].into_iter().flatten() {
                let args = c.to_args();
                let parsed = nsys_explorer::whatif::Change::from_args(&args).unwrap();
                assert_eq!(parsed.to_args(), args, "{name}");
            }
        }
        // The report's `top` (10) reads the window's entry (20): the same answer as worked
        // out afresh with 10, so a window opened after a `report` reads what it kept.
        let report_options = Options::default();
        assert!(report_options.top < options.top);
        let kept = cache::read_kept(&key, &report_options, &trace);
        assert!(kept.analyses.is_some(), "{name}");
        let from_window = overview_with(&trace, &report_options, &cancel, kept).unwrap();
        let fresh = overview(&trace, &report_options);
        let json = |o| {
            let findings = findings::findings(&trace, o);
            nsys_explorer::report::report_json(&trace, &report, o, &findings, &report_options)
        };
        assert_eq!(json(&from_window), json(&fresh), "{name}");
        assert!(findings::read_ranked(&key, &fresh).is_some(), "{name}");
        // Longer lists are another entry.
        let other = Options {
            top: 21,
            ..options.clone()
        };
        assert!(
            cache::read_kept(&key, &other, &trace).analyses.is_none(),
            "{name}"
        );
    }
}
