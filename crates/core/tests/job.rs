//! Jobs of many ranks from per-rank summaries: the reduce agrees with the exports loaded
//! whole, names a straggler hidden among many ranks (from summaries and from the exports),
//! keeps each summary under 2 % of its export, and refuses a damaged summary or one whose
//! export changed.

use std::path::{Path, PathBuf};

use nsys_explorer_core::job::{self, RankSummary};
use nsys_explorer_core::overview::Options;
use nsys_explorer_core::session::{self, Hooks, Source};
use nsys_explorer_core::synth::{self, Preset, SynthOptions};
use serde_json::Value;

#[path = "../../../tests/common/mod.rs"]
mod common;

/// Every rank's summary written into `out`: (summary path, summary).
fn summarise_into(exports: &[PathBuf], out: &Path) -> Vec<(PathBuf, RankSummary)> {
    exports
        .iter()
        .map(|e| {
            let s = session::summarize_export(e, &Options::default(), false).unwrap();
            let path = job::summary_path(out, e);
            let bytes = job::write_summary(&s, &path).unwrap();
            let export = std::fs::metadata(e).unwrap().len();
            assert!(
                bytes * 50 <= export,
                "{}: {bytes} bytes, over 2 % of {export}",
                path.display()
            );
            (path, s)
        })
        .collect()
}

#[test]
fn summaries_reduce_to_what_the_exports_loaded_whole_say() {
    nsys_explorer_core::cache::disable();
    let dir = tempfile::tempdir().unwrap();
    let split =
        synth::generate_split(&dir.path().join("ranks"), SynthOptions::new(Preset::Tiny)).unwrap();
    let exports: Vec<PathBuf> = split.files.iter().map(|f| f.path.clone()).collect();
    let written = summarise_into(&exports, &dir.path().join("summaries"));
    let paths: Vec<PathBuf> = written.iter().map(|w| w.0.clone()).collect();
    let summaries = job::read_all(&paths).unwrap();
    assert_eq!(summaries, written);
    let job = job::reduce(&summaries, 10);

    let cancel = std::sync::atomic::AtomicBool::new(false);
    let opened = session::open(
        &Source::Many {
            paths: exports.clone(),
            manual: Vec::new(),
        },
        Hooks::quiet(&cancel),
    )
    .unwrap();
    let answers = session::answer(&opened, &Options::default(), &cancel).unwrap();
    let (trace, full) = (&opened.trace, &answers.overview);

    // The same clocks.
    assert_eq!(opened.files.len(), job.files.len());
    for (f, j) in opened.files.iter().zip(&job.files) {
        assert_eq!(f.offset_ns, j.clock.offset_ns, "{}", f.name);
        assert_eq!(f.alignment, j.clock.alignment);
    }
    // Wait vs transfer, to the nanosecond, GPU by GPU.
    assert_eq!(
        full.nccl_wait.per_device.len(),
        job.nccl_wait.per_device.len()
    );
    for (f, j) in full
        .nccl_wait
        .per_device
        .iter()
        .zip(&job.nccl_wait.per_device)
    {
        assert_eq!(trace.gpu_name(f.device), j.device);
        assert_eq!(
            (f.collectives, f.wait_ns, f.transfer_ns, f.last_arrivals),
            (j.collectives, j.wait_ns, j.transfer_ns, j.last_arrivals),
            "{}",
            j.device
        );
    }
    // The collectives held back longest, and what the last rank's thread was in.
    assert!(job.nccl_wait.late.len() >= full.nccl_wait.late.len().min(5));
    for (f, j) in full.nccl_wait.late.iter().zip(&job.nccl_wait.late).take(5) {
        assert_eq!(trace.gpu_name(f.last_device), j.last_device);
        assert_eq!((f.held_back_ns, f.start_ns), (j.held_back_ns, j.start_ns));
        assert_eq!(f.last_thread_call, j.last_thread_call);
    }
    let truth = &split.run.iterations;
    let straggler = format!("rank{:02}.sqlite:0", truth.straggler_device);
    assert_eq!(job.nccl_wait.late[0].last_device, straggler);
    // Per collective the last rank: as often last as each GPU's count says.
    let w = &job.nccl_wait;
    assert_eq!(w.last_by_collective.len(), w.collectives);
    for (g, d) in w.per_device.iter().enumerate() {
        let last = w
            .last_by_collective
            .iter()
            .filter(|&&x| x as usize == g)
            .count();
        assert_eq!(last, d.last_arrivals, "{}", d.device);
    }
    // The straggler: the same rank, words and saving as the full replay's finding.
    let full_straggler = answers
        .findings
        .iter()
        .find(|f| f.kind.label() == "straggler")
        .expect("the exports' straggler finding");
    let found = &job.findings[0];
    assert_eq!(found.kind, full_straggler.kind);
    assert_eq!(found.devices, vec![straggler.clone()]);
    assert_eq!(found.title, full_straggler.title);
    let full_saving = full_straggler.saving_ns.unwrap();
    assert!(
        (found.saving_ns - full_saving).abs() * 50 <= full_saving,
        "collective replay {} against the full replay {full_saving}",
        found.saving_ns
    );
    // The heatmap's iteration times are the iteration analysis's.
    assert_eq!(job.iterations.slowest_index, full.iterations.slowest_index);
    for it in &full.iterations.per_device {
        let row = job
            .heatmap
            .devices
            .iter()
            .position(|d| *d == trace.gpu_name(it.device))
            .unwrap();
        assert_eq!(job.heatmap.duration_ns[row], it.durations_ns);
    }
    // In the slowest iteration the straggler held the others back and waited least.
    let k = truth.slowest_index;
    let s = job
        .heatmap
        .devices
        .iter()
        .position(|d| *d == straggler)
        .unwrap();
    let held: Vec<i64> = job.heatmap.held_back_ns.iter().map(|r| r[k]).collect();
    assert_eq!(held.iter().enumerate().max_by_key(|x| x.1).unwrap().0, s);
    let waits: Vec<i64> = job.heatmap.wait_ns.iter().map(|r| r[k]).collect();
    assert_eq!(waits.iter().enumerate().min_by_key(|x| x.1).unwrap().0, s);
    // The critical path of the slowest iteration goes through the straggler's stall.
    let path = job.critical_path.as_ref().unwrap();
    assert_eq!(path.iteration, k);
    let worst = path.steps.iter().max_by_key(|s| s.lateness_ns).unwrap();
    assert_eq!(worst.last_device, straggler);
    assert!(
        worst.doing.contains(&truth.straggler_activity),
        "{}",
        worst.doing
    );
}

fn json_report(paths: &[PathBuf]) -> Value {
    let out = session::report_output(paths, true, &Options::default()).unwrap();
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_straggler_among_many_ranks_is_named_from_their_summaries_and_their_exports() {
    nsys_explorer_core::cache::disable();
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    let options = SynthOptions {
        ranks: Some(20),
        straggler_rank: Some(13),
        straggler_pause_ns: Some(1_200_000_000),
        ..SynthOptions::new(Preset::Tiny)
    };
    synth::generate_split(&ranks, options).unwrap();
    let exports = nsys_explorer_core::load::many::sqlite_files_in(&ranks).unwrap();
    assert_eq!(exports.len(), 20);
    // More ranks than a whole load takes: the exports are summarised one at a time.
    let from_exports = json_report(std::slice::from_ref(&ranks));
    let summaries = dir.path().join("summaries");
    summarise_into(&exports, &summaries);
    let from_summaries = json_report(std::slice::from_ref(&summaries));
    for report in [&from_exports, &from_summaries] {
        assert_eq!(report["files"].as_array().unwrap().len(), 20);
        assert_eq!(
            report["nccl_wait"]["late"][0]["last_device"],
            "rank13.sqlite:0"
        );
        let f = &report["findings"][0];
        assert_eq!(f["kind"], "straggler");
        assert_eq!(f["devices"][0], "rank13.sqlite:0");
        // The others waited the whole pause: taking it out saves nearly all of it.
        let saving = f["saving_ns"].as_i64().unwrap();
        assert!(
            (1_000_000_000..=1_200_000_000).contains(&saving),
            "{saving}"
        );
        assert!(f["title"].as_str().unwrap().contains("read()"));
    }
    assert_eq!(from_exports["nccl_wait"], from_summaries["nccl_wait"]);
    assert_eq!(from_exports["heatmap"], from_summaries["heatmap"]);
}

#[test]
fn a_healthy_job_gets_no_straggler() {
    nsys_explorer_core::cache::disable();
    let dir = tempfile::tempdir().unwrap();
    let options = SynthOptions {
        no_straggler: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let split = synth::generate_split(&dir.path().join("ranks"), options).unwrap();
    let exports: Vec<PathBuf> = split.files.iter().map(|f| f.path.clone()).collect();
    let job = job::reduce(&summarise_into(&exports, dir.path()), 10);
    assert!(job.findings.is_empty(), "{:?}", job.findings);
}

#[test]
fn a_damaged_summary_or_one_whose_export_changed_is_refused() {
    nsys_explorer_core::cache::disable();
    let dir = tempfile::tempdir().unwrap();
    let split =
        synth::generate_split(&dir.path().join("ranks"), SynthOptions::new(Preset::Tiny)).unwrap();
    let exports: Vec<PathBuf> = split.files.iter().map(|f| f.path.clone()).collect();
    let out = dir.path().join("summaries");
    let written = summarise_into(&exports, &out);
    // Nothing beside the exports: only they (and the truth) are in their folder.
    let beside: Vec<_> = std::fs::read_dir(dir.path().join("ranks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.extension().is_some_and(|e| e == "sqlite" || e == "json"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");

    let damaged = &written[1].0;
    let mut bytes = std::fs::read(damaged).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(damaged, &bytes).unwrap();
    let err =
        session::report_output(std::slice::from_ref(&out), false, &Options::default()).unwrap_err();
    assert!(err.contains("damaged") && err.contains("rank01"), "{err}");

    session::summarize_export(&exports[1], &Options::default(), false)
        .map(|s| job::write_summary(&s, damaged).unwrap())
        .unwrap();
    assert!(session::report_output(std::slice::from_ref(&out), false, &Options::default()).is_ok());
    // The export changes after it was summarised (another run written over it).
    let mut sqlite = std::fs::read(&exports[2]).unwrap();
    sqlite.extend_from_slice(&[0; 4096]);
    std::fs::write(&exports[2], &sqlite).unwrap();
    let err = session::report_output(&[out], false, &Options::default()).unwrap_err();
    assert!(err.contains("changed since"), "{err}");
}

/// Every real export summarises (no panic, under 2 %); one with two GPUs and NCCL reduces
/// to the same wait, transfer and late collectives as its full report.
#[test]
fn real_exports_summarise_and_a_two_gpu_one_reduces_as_its_full_report() {
    nsys_explorer_core::cache::disable();
    let dir = tempfile::tempdir().unwrap();
    let real = common::real_fixtures();
    let written = summarise_into(&real, dir.path());
    let (path, nccl) = written
        .iter()
        .find(|(_, s)| s.gpus.len() == 2 && s.collectives() > 0)
        .expect("a real export with two GPUs and NCCL");
    let job = job::reduce(&[(path.clone(), nccl.clone())], 10);
    let export = &nccl.source.path;
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let opened = session::open(&Source::One(export.clone()), Hooks::quiet(&cancel)).unwrap();
    let full = session::answer(&opened, &Options::default(), &cancel).unwrap();
    let name = export.file_name().unwrap().to_string_lossy().into_owned();
    assert!(job.nccl_wait.collectives > 0);
    assert_eq!(
        full.overview.nccl_wait.per_device.len(),
        job.nccl_wait.per_device.len()
    );
    for (f, j) in full
        .overview
        .nccl_wait
        .per_device
        .iter()
        .zip(&job.nccl_wait.per_device)
    {
        assert_eq!(j.device, format!("{name}:{}", f.device));
        assert_eq!(
            (f.wait_ns, f.transfer_ns, f.last_arrivals),
            (j.wait_ns, j.transfer_ns, j.last_arrivals)
        );
    }
    // The reduce lists the 10 held back longest.
    assert_eq!(
        full.overview.nccl_wait.late.len().min(10),
        job.nccl_wait.late.len()
    );
    for (f, j) in full.overview.nccl_wait.late.iter().zip(&job.nccl_wait.late) {
        assert_eq!((f.held_back_ns, f.start_ns), (j.held_back_ns, j.start_ns));
        assert_eq!(j.last_device, format!("{name}:{}", f.last_device));
    }
}
