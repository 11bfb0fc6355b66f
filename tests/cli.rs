//! The command line as a user runs it: `report --json` keys, errors on stderr with a
//! non-zero exit, and `synth` writing a trace and its truth.

mod common;

use std::process::Command;

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nsys-explorer"));
    cmd.env("XDG_CACHE_HOME", common::test_cache_home());
    cmd
}

/// The generated `tiny` run in `dir`, and its truth.
fn tiny(dir: &std::path::Path) -> (std::path::PathBuf, nsys_explorer::synth::GroundTruth) {
    let path = dir.join("tiny.sqlite");
    let options = nsys_explorer::synth::SynthOptions::new(nsys_explorer::synth::Preset::Tiny);
    let truth = nsys_explorer::synth::generate(&path, options).unwrap();
    (path, truth)
}

/// Runs `cmd`, which must succeed; its output.
fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn report_json_has_the_documented_keys_and_counts() {
    for path in common::real_fixtures() {
        let v = report_json(&[path.to_str().unwrap()]);
        for key in ["file", "nsys_version", "schema_version", "load", "devices"] {
            assert!(v.get(key).is_some(), "{key}");
        }
        for key in ["seconds", "tables", "missing_tables", "skipped_rows"] {
            assert!(v["load"].get(key).is_some(), "load.{key}");
        }
        let devices = v["devices"].as_array().unwrap();
        assert!(!devices.is_empty(), "{}", path.display());
        for d in devices {
            for key in [
                "id",
                "name",
                "kernels",
                "nccl_kernels",
                "memcpys",
                "memsets",
                "window_ns",
            ] {
                assert!(d.get(key).is_some(), "devices[].{key}");
            }
            let w = d["window_ns"].as_array().unwrap();
            assert!(w[0].as_i64().unwrap() <= w[1].as_i64().unwrap());
        }
        if path.to_string_lossy().contains("flashattn") {
            let nccl: u64 = devices
                .iter()
                .map(|d| d["nccl_kernels"].as_u64().unwrap())
                .sum();
            assert!(nccl > 0, "ncclDevKernel_SendRecv counted as NCCL");
        }
    }
}

#[test]
fn report_text_names_devices_and_tables() {
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("h100"))
        .unwrap();
    let out = bin().arg("report").arg(&path).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("CUPTI_ACTIVITY_KIND_KERNEL"), "{text}");
    assert!(text.contains("GPU 0"), "{text}");
    assert!(
        text.contains("TARGET_INFO_GPU"),
        "absent table listed: {text}"
    );
    // Without TARGET_INFO_GPU a device is "GPU 0", not "GPU 0 GPU 0"; counts read as words.
    assert!(!text.contains("GPU 0 GPU 0"), "{text}");
    assert!(
        !text.contains(" 1 streams") && !text.contains(" 1 memsets"),
        "{text}"
    );
}

#[test]
fn help_says_what_happens_without_a_file() {
    let out = succeeded(bin().arg("--help"));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("built-in sample trace"), "{text}");
    assert!(text.contains("--start-page"), "{text}");
}

#[test]
fn errors_exit_non_zero_with_the_message_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.nsys-rep");
    std::fs::write(&path, b"not sqlite").unwrap();
    let out = bin()
        .arg("report")
        .arg(&path)
        .arg("--json")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("nsys export --type sqlite"), "{stderr}");
}

#[test]
fn synth_writes_a_trace_and_its_truth_that_report_agrees_with() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    succeeded(
        bin()
            .args(["synth", "--preset", "tiny", "--flavour", "2023", "--out"])
            .arg(&path),
    );
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("tiny.truth.json")).unwrap())
            .unwrap();
    let out = bin()
        .arg("report")
        .arg(&path)
        .arg("--json")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["nsys_version"], "2023.1.2.43");
    let devices = report["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 4);
    for (d, t) in devices.iter().zip(truth["devices"].as_array().unwrap()) {
        assert_eq!(d["kernels"], t["kernels"]);
        assert_eq!(d["nccl_kernels"], t["nccl_kernels"]);
        assert_eq!(d["window_ns"], t["window_ns"]);
    }
}

fn report_json(args: &[&str]) -> serde_json::Value {
    let out = bin()
        .arg("report")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn report_json_carries_every_analysis_and_honours_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let (path, truth) = tiny(dir.path());
    let file = path.to_str().unwrap();
    let v = report_json(&[file]);
    for key in [
        "gaps",
        "recurring_gaps",
        "iterations",
        "drilldown",
        "kernels_top",
        "nccl",
    ] {
        assert!(!v[key].is_null(), "{key}");
    }
    for d in v["devices"].as_array().unwrap() {
        for key in [
            "compute_only",
            "nccl_only",
            "overlap",
            "memory_only",
            "idle",
        ] {
            assert!(d["breakdown_ns"][key].is_i64(), "breakdown_ns.{key}");
        }
        assert_eq!(d["same_stream"]["stream"], 7);
    }
    assert_eq!(
        v["gaps"]["count"].as_u64().unwrap() as usize,
        truth.gaps.len()
    );
    let top = v["gaps"]["top"].as_array().unwrap();
    assert!(
        top.windows(2)
            .all(|w| w[0]["duration_ns"].as_i64() >= w[1]["duration_ns"].as_i64()),
        "longest first"
    );
    let longest = truth.gaps.iter().map(|g| g.duration_ns).max().unwrap();
    assert_eq!(top[0]["duration_ns"].as_i64().unwrap(), longest);
    let recurring = v["recurring_gaps"].as_array().unwrap();
    assert!(recurring[0]["signature"].as_str().unwrap().contains('→'));
    let it = &v["iterations"];
    assert_eq!(it["marker"], "denoising_step_#");
    assert_eq!(it["heuristic"], false);
    assert_eq!(
        it["slowest_index"].as_u64().unwrap() as usize,
        truth.iterations.slowest_index
    );
    assert_eq!(
        v["drilldown"]["straggler_device"].as_u64().unwrap() as u32,
        truth.iterations.straggler_device
    );

    // --device, --top, --min-gap-ns, --window and --iteration-marker.
    let one = report_json(&[
        file,
        "--device",
        "1",
        "--top",
        "2",
        "--min-gap-ns",
        "1000000",
    ]);
    assert_eq!(one["devices"].as_array().unwrap().len(), 1);
    assert_eq!(one["iterations"]["per_device"].as_array().unwrap().len(), 1);
    assert!(one["gaps"]["top"].as_array().unwrap().len() <= 2);
    let big = truth
        .gaps
        .iter()
        .filter(|g| g.device == 1 && g.duration_ns >= 1_000_000)
        .count();
    assert_eq!(one["gaps"]["count"].as_u64().unwrap() as usize, big);
    let [start, end] = truth.devices[0].window_ns;
    let mid = (start + (end - start) / 2).to_string();
    let half = report_json(&[file, "--device", "0", "--window", &start.to_string(), &mid]);
    let b = &half["devices"][0]["breakdown_ns"];
    let sum: i64 = [
        "compute_only",
        "nccl_only",
        "overlap",
        "memory_only",
        "idle",
    ]
    .iter()
    .map(|k| b[k].as_i64().unwrap())
    .sum();
    assert_eq!(sum, (end - start) / 2);
    let marked = report_json(&[file, "--iteration-marker", "cfg_uncond"]);
    assert_eq!(marked["iterations"]["marker"], "cfg_uncond");
    assert_eq!(
        marked["iterations"]["count"].as_u64().unwrap() as usize,
        truth.iterations.count
    );
}

#[test]
fn report_text_reads_like_a_diagnosis_and_rejects_unknown_devices() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = tiny(dir.path());
    let out = bin().arg("report").arg(&path).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "Where the time goes",
        "stream 7",
        "recurring",
        "Slowest: iter 5",
        "straggler: GPU 2",
        "read()",
    ] {
        assert!(text.contains(needle), "{needle} in:\n{text}");
    }
    let out = bin()
        .arg("report")
        .arg(&path)
        .args(["--device", "9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no device 9"));
}

/// The `zoom=` lines of `bench frame` as (key, value) pairs, checked to be one per level.
fn bench_frame_lines(args: &[&std::ffi::OsStr]) -> Vec<Vec<(String, String)>> {
    let out = succeeded(
        bin()
            .args(["bench", "frame"])
            .args(args)
            .env("NSYS_BENCH_FRAMES", "6"),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<(String, String)>> = text
        .lines()
        .filter(|l| l.starts_with("zoom="))
        .map(|l| {
            l.split_whitespace()
                .map(|f| f.split_once('=').unwrap())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect();
    let zooms: Vec<&str> = lines.iter().map(|l| l[0].1.as_str()).collect();
    assert_eq!(zooms, ["full", "mid", "deep"], "{text}");
    lines
}

#[test]
fn bench_frame_prints_one_line_per_zoom_level_with_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    succeeded(
        bin()
            .args(["synth", "--preset", "tiny", "--out"])
            .arg(&path),
    );
    for line in bench_frame_lines(&[path.as_os_str()]) {
        let keys: Vec<&str> = line.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            keys,
            ["zoom", "median_ms", "quads", "zoom_step_ms"],
            "{line:?}"
        );
        let ms: f64 = line[1].1.parse().unwrap();
        let step_ms: f64 = line[3].1.parse().unwrap();
        assert!(ms > 0.0 && step_ms > 0.0, "{line:?}");
        assert!(
            line[2].1.parse::<usize>().unwrap() > 0,
            "something drawn: {line:?}"
        );
    }
    // Against a base trace (here the same one): its medians, and the ratios to them.
    let against = [path.as_os_str(), "--against".as_ref(), path.as_os_str()];
    for line in bench_frame_lines(&against) {
        let keys: Vec<&str> = line.iter().map(|f| f.0.as_str()).collect();
        let tail = [
            "against_median_ms",
            "ratio",
            "against_zoom_step_ms",
            "zoom_step_ratio",
        ];
        assert_eq!(keys[4..], tail, "{line:?}");
        let value = |k: usize| line[k].1.parse::<f64>().unwrap();
        assert!(
            (value(5) - value(1) / value(4)).abs() < 0.01 + 0.01 * value(5),
            "{line:?}"
        );
        assert!(
            (value(7) - value(3) / value(6)).abs() < 0.01 + 0.01 * value(7),
            "{line:?}"
        );
    }
}

#[test]
fn diff_json_has_the_documented_keys_and_the_changed_kernel_first() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.sqlite"),
        dir.path().join("after.sqlite"),
    );
    succeeded(
        bin()
            .args(["synth", "--preset", "tiny", "--out"])
            .arg(&before),
    );
    succeeded(
        bin()
            .args([
                "synth",
                "--preset",
                "tiny",
                "--scale-kernel",
                "flash_fwd_kernel=0.5",
                "--out",
            ])
            .arg(&after),
    );
    let out = succeeded(bin().arg("diff").arg(&before).arg(&after).arg("--json"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "before",
        "after",
        "per_device",
        "kernels",
        "recurring_gaps",
        "verdict",
        "warnings",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
    for key in ["file", "iterations", "median_ns"] {
        assert!(v["before"].get(key).is_some(), "before.{key}");
    }
    let devices = v["per_device"].as_array().unwrap();
    assert_eq!(devices.len(), 4);
    for d in devices {
        for key in [
            "device",
            "before_median_ns",
            "after_median_ns",
            "delta_ns",
            "breakdown_delta_ns",
            "idle_by_cause_delta_ns",
        ] {
            assert!(d.get(key).is_some(), "per_device.{key}");
        }
        let parts: i64 = d["breakdown_delta_ns"]
            .as_object()
            .unwrap()
            .values()
            .map(|x| x.as_i64().unwrap())
            .sum();
        assert_eq!(parts, d["delta_ns"].as_i64().unwrap());
        for cause in ["host_sync", "host_bound", "dependency", "unknown"] {
            assert!(d["idle_by_cause_delta_ns"].get(cause).is_some(), "{cause}");
        }
    }
    let first = &v["kernels"][0];
    assert!(first["name"].as_str().unwrap().contains("flash_fwd_kernel"));
    assert!(first["delta_ns"].as_i64().unwrap() < 0);
    for key in [
        "before_count",
        "after_count",
        "before_total_ns",
        "after_total_ns",
    ] {
        assert!(first.get(key).is_some(), "kernels.{key}");
    }
    let text = succeeded(bin().arg("diff").arg(&before).arg(&after));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("faster") && text.contains("Kernels by |delta|"),
        "{text}"
    );
}

#[test]
fn synth_rejects_an_unknown_kernel_to_scale_with_the_names_it_knows() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["synth", "--scale-kernel", "nope=2", "--out"])
        .arg(dir.path().join("x.sqlite"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("flash_fwd_kernel"), "{err}");
}

#[test]
fn each_findings_what_if_arguments_reproduce_its_saving() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    succeeded(
        bin()
            .args(["synth", "--preset", "tiny", "--out"])
            .arg(&path),
    );
    let file = path.to_str().unwrap();
    let v = report_json(&[file]);
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.len() >= 4, "{findings:?}");
    let keys = [
        "kind",
        "severity",
        "title",
        "detail",
        "devices",
        "saving_ns",
        "saving_pct",
        "upper_bound_ns",
        "what_if",
        "where",
    ];
    for f in findings {
        for key in keys {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
        let args: Vec<&str> = f["what_if"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        if args.is_empty() {
            continue;
        }
        let out = succeeded(bin().args(["what-if", file, "--json"]).args(&args));
        let w: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(w["saving_ns"], f["saving_ns"], "{}", f["title"]);
    }
    // The text report starts with them.
    let out = succeeded(bin().args(["report", file]));
    let text = String::from_utf8_lossy(&out.stdout);
    let head: String = text.lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(head.contains("What to fix first:"), "{head}");
}

#[test]
fn an_export_from_before_2021_says_its_version_was_not_recorded() {
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("pre2021"))
        .unwrap();
    let out = succeeded(bin().arg("report").arg(&path));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nsys version not recorded"), "{text}");
    assert!(!text.contains("unknown (schema unknown)"), "{text}");
    assert!(text.contains("absent: no capture window"), "{text}");
}

#[test]
fn the_top_level_help_lists_what_users_run_and_the_benchmarks_under_one_command() {
    let out = succeeded(bin().arg("--help"));
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(!help.contains("bench-"), "{help}");
    for command in [
        "report",
        "diff",
        "what-if",
        "critical-path",
        "bench",
        "completions",
        "synth",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from\n{help}"
        );
    }
    let out = succeeded(bin().args(["bench", "--help"]));
    let help = String::from_utf8(out.stdout).unwrap();
    for which in [
        "load", "analysis", "report", "many", "what-if", "findings", "frame", "panels", "reopen",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(which)),
            "bench {which} missing from\n{help}"
        );
    }
}

#[test]
fn a_bash_completion_script_is_printed_and_parses() {
    let out = succeeded(bin().args(["completions", "bash"]));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("nsys-explorer") && script.contains("complete"));
    assert!(script.contains("what-if") && script.contains("reopen"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nsys-explorer.bash");
    std::fs::write(&path, &script).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "bash -n rejects the script");
    for shell in ["zsh", "fish"] {
        let out = succeeded(bin().args(["completions", shell]));
        assert!(!out.stdout.is_empty(), "{shell}");
    }
    let out = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn figures_are_written_into_the_current_folder_never_beside_the_trace() {
    let traces = tempfile::tempdir().unwrap();
    let trace = traces.path().join("run.sqlite");
    succeeded(
        bin()
            .args(["synth", "--preset", "tiny", "--out"])
            .arg(&trace),
    );
    let beside = common::snapshot(&trace);
    let cwd = tempfile::tempdir().unwrap();
    let out = succeeded(bin().current_dir(cwd.path()).arg("figures").arg(&trace));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("wrote 11 files"), "{text}");
    let dir = cwd.path().join("run-figures");
    for name in [
        "1_iter_duration_over_time",
        "3_streams_one_iter",
        "5_nccl_kernel_duration_hist",
    ] {
        assert!(dir.join(format!("{name}.png")).exists(), "{name}.png");
        assert!(dir.join(format!("{name}.svg")).exists(), "{name}.svg");
    }
    assert_eq!(
        common::snapshot(&trace),
        beside,
        "nothing written beside the trace"
    );
    // --format and --iteration are followed; a wrong value is a clear error.
    let only = cwd.path().join("only");
    succeeded(
        bin()
            .args(["figures", "--format", "svg", "--iteration", "5", "--out"])
            .arg(&only)
            .arg(&trace),
    );
    assert!(!only.join("4_per_device_walltime.png").exists());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(only.join("figures.json")).unwrap()).unwrap();
    assert_eq!(json["streams_one_iter"]["iteration"], 5);
    let bad = bin()
        .args(["figures", "--format", "gif"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown format"));
}

#[test]
fn critical_path_json_tiles_the_slowest_iteration_and_report_gives_its_totals() {
    let dir = tempfile::tempdir().unwrap();
    let (path, truth) = tiny(dir.path());
    let file = path.to_str().unwrap();
    let out = succeeded(bin().args(["critical-path", file, "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["iteration"], truth.iterations.slowest_index);
    let segments = v["segments"].as_array().unwrap();
    let mut at = v["start_ns"].as_i64().unwrap();
    for s in segments {
        assert_eq!(
            s["start_ns"].as_i64().unwrap(),
            at,
            "segments follow each other"
        );
        at = s["end_ns"].as_i64().unwrap();
        for key in ["kind", "device", "name"] {
            assert!(s.get(key).is_some(), "segments[].{key}");
        }
    }
    assert_eq!(at, v["end_ns"].as_i64().unwrap());
    let by_kind: i64 = v["by_kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_i64().unwrap())
        .sum();
    assert_eq!(by_kind, v["wall_ns"].as_i64().unwrap());
    for key in ["by_device", "top_kernels", "top_cpu", "top_api", "slack"] {
        assert!(v[key].is_array(), "{key}");
    }
    // The straggler's GPU holds the most CPU time on the path.
    let cpu_of = |d: &serde_json::Value| d["by_kind"]["cpu"].as_i64().unwrap();
    let most = v["by_device"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|d| cpu_of(d))
        .unwrap();
    assert_eq!(most["device"], truth.iterations.straggler_device);
    // report --json gives the same totals.
    let r = report_json(&[file]);
    assert_eq!(r["critical_path"]["by_kind"], v["by_kind"]);
    assert_eq!(r["critical_path"]["iteration"], v["iteration"]);
    // The whole run's table, and an iteration that is not there.
    let out = succeeded(bin().args(["critical-path", file, "--all", "--json"]));
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        t["iterations"],
        truth.iterations.per_device[0].durations_ns.len()
    );
    assert!(!t["by_kernel"].as_array().unwrap().is_empty());
    let out = bin()
        .args(["critical-path", file, "--iteration", "999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no iteration 999"));
}

#[test]
fn export_writes_every_table_as_parquet_or_arrow_with_the_analyses_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = tiny(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let file = path.to_str().unwrap();
    let report = report_json(&[file]);
    let out = dir.path().join("tables");
    succeeded(bin().args(["export", file, "--out", out.to_str().unwrap()]));
    let rows = |name: &str| {
        let f = std::fs::File::open(out.join(format!("tiny.{name}.parquet"))).unwrap();
        let reader = parquet::file::reader::SerializedFileReader::new(f).unwrap();
        use parquet::file::reader::FileReader;
        reader.metadata().file_metadata().num_rows()
    };
    let kernels: u64 = report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kernels"].as_u64().unwrap())
        .sum();
    assert_eq!(rows("kernels") as u64, kernels);
    assert_eq!(
        rows("gaps") as u64,
        report["gaps"]["count"].as_u64().unwrap()
    );
    for name in nsys_explorer::tables::NAMES {
        assert!(out.join(format!("tiny.{name}.parquet")).exists(), "{name}");
    }
    // Arrow IPC files read back with the same schema.
    let arrow = dir.path().join("arrow");
    succeeded(bin().args([
        "export",
        file,
        "--out",
        arrow.to_str().unwrap(),
        "--format",
        "arrow",
    ]));
    let f = std::fs::File::open(arrow.join("tiny.gaps.arrow")).unwrap();
    let reader = arrow_ipc::reader::FileReader::try_new(f, None).unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        [
            "file",
            "device",
            "start_ns",
            "end_ns",
            "duration_ns",
            "before",
            "after",
            "nvtx",
            "cause"
        ]
    );
    let n: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(n as u64, report["gaps"]["count"].as_u64().unwrap());
    // Only what was asked for was written: the trace's folder holds the trace (unchanged),
    // its truth and the two folders.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let mut listing: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    listing.sort();
    assert_eq!(
        listing,
        ["arrow", "tables", "tiny.sqlite", "tiny.truth.json"]
    );
    let bad = bin()
        .args([
            "export",
            file,
            "--out",
            arrow.to_str().unwrap(),
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// A run replaying CUDA graphs, recorded both ways: every command runs on it, `report`
/// says how many launches there were and, at graph level, that their kernels were not
/// recorded; `diff` compares the two recordings of one run.
#[test]
fn every_command_runs_on_a_graph_launched_run_recorded_either_way() {
    use nsys_explorer::synth::{GraphTrace, Preset, SynthOptions, generate};
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for mode in [GraphTrace::Graph, GraphTrace::Node] {
        let path = dir.path().join(format!("{mode:?}.sqlite"));
        let truth = generate(
            &path,
            SynthOptions {
                cuda_graphs: Some(mode),
                ..SynthOptions::new(Preset::Tiny)
            },
        )
        .unwrap();
        let out = succeeded(bin().arg("report").arg(&path).arg("--json"));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let g = &json["cuda_graphs"];
        assert_eq!(g["launches"], truth.cuda_graphs.as_ref().unwrap().launches);
        assert_eq!(g["note"].is_string(), mode == GraphTrace::Graph, "{g}");
        succeeded(bin().arg("critical-path").arg(&path).arg("--json"));
        succeeded(
            bin()
                .arg("what-if")
                .arg(&path)
                .args(["--remove-sync", "aten::item", "--json"]),
        );
        succeeded(
            bin()
                .arg("figures")
                .arg(&path)
                .arg("--out")
                .arg(dir.path().join(format!("figures-{mode:?}"))),
        );
        files.push(path);
    }
    let text = succeeded(bin().arg("report").arg(&files[0]));
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("their kernels were not recorded"),
        "the graph-level note in the text report"
    );
    succeeded(
        bin()
            .arg("diff")
            .arg(&files[0])
            .arg(&files[1])
            .arg("--json"),
    );
    // A run without graphs has no `cuda_graphs` key.
    let (plain, _) = tiny(dir.path());
    let out = succeeded(bin().arg("report").arg(&plain).arg("--json"));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json.get("cuda_graphs").is_none());
}

/// `diff --fail-if-slower`: a run against a copy of itself passes, a run whose hottest
/// kernel got 2× faster passes, the other way round fails (exit 1); a threshold under the
/// runs' own spread is inconclusive (exit 0, or 3 with --strict). The JSON carries the
/// verdict, the figures and the noise.
#[test]
fn diff_gates_on_a_slowdown_beyond_the_runs_noise() {
    use nsys_explorer::synth::{Preset, SynthOptions, generate, kernel_index};
    let dir = tempfile::tempdir().unwrap();
    let (before, _) = tiny(dir.path());
    let copy = dir.path().join("copy.sqlite");
    std::fs::copy(&before, &copy).unwrap();
    let fast = dir.path().join("fast.sqlite");
    generate(
        &fast,
        SynthOptions {
            scale_kernel: Some((kernel_index("flash_fwd_kernel").unwrap(), 0.5)),
            ..SynthOptions::new(Preset::Tiny)
        },
    )
    .unwrap();
    let code = |a: &std::path::Path, b: &std::path::Path, extra: &[&str]| {
        bin()
            .arg("diff")
            .arg(a)
            .arg(b)
            .args(extra)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&before, &copy, &["--fail-if-slower", "3"]), Some(0));
    assert_eq!(code(&before, &fast, &["--fail-if-slower", "3"]), Some(0));
    assert_eq!(code(&fast, &before, &["--fail-if-slower", "3"]), Some(1));
    let out = bin()
        .arg("diff")
        .arg(&fast)
        .arg(&before)
        .args(["--fail-if-slower", "3", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gate = &json["gate"];
    assert_eq!(gate["verdict"], "slower");
    assert_eq!(gate["measure"], "median_iteration");
    let change = gate["change_pct"].as_f64().unwrap();
    let noise = gate["noise_pct"].as_f64().unwrap();
    assert!(change > 3.0 && change > noise, "{gate}");
    // Asked for less than the runs' own spread: no verdict can be trusted.
    let tight = format!("{}", (noise / 4.0).max(0.01));
    assert_eq!(code(&fast, &before, &["--fail-if-slower", &tight]), Some(0));
    assert_eq!(
        code(&fast, &before, &["--fail-if-slower", &tight, "--strict"]),
        Some(3)
    );
}

/// `summarize` writes into the current folder when no `--out` is given (never beside the
/// exports), a `.summary` that `report` reads, and with `--format parquet` the same tables
/// as Parquet with one row a collective.
#[test]
fn summarize_writes_summaries_report_reads_and_parquet_tables() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    let truth = nsys_explorer::synth::generate_split(
        &ranks,
        nsys_explorer::synth::SynthOptions::new(nsys_explorer::synth::Preset::Tiny),
    )
    .unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = succeeded(bin().current_dir(&work).arg("summarize").arg(&ranks));
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.lines().count(), truth.files.len(), "{said}");
    for f in &truth.files {
        let stem = f.path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(work.join(format!("{stem}.summary")).is_file(), "{stem}");
    }
    let beside = std::fs::read_dir(&ranks)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "summary")
        })
        .count();
    assert_eq!(beside, 0, "a summary beside the exports");
    let report = succeeded(bin().arg("report").arg(&work).arg("--json"));
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let straggler = format!("rank{:02}.sqlite:0", truth.run.iterations.straggler_device);
    assert_eq!(
        json["nccl_wait"]["late"][0]["last_device"],
        straggler.as_str()
    );
    assert_eq!(json["findings"][0]["devices"][0], straggler.as_str());

    let parquet_dir = dir.path().join("parquet");
    succeeded(
        bin()
            .arg("summarize")
            .arg(&truth.files[0].path)
            .args(["--format", "parquet", "--out"])
            .arg(&parquet_dir),
    );
    use parquet::file::reader::FileReader;
    let rows = |name: &str| {
        let f = std::fs::File::open(parquet_dir.join(format!("rank00.{name}.parquet"))).unwrap();
        parquet::file::reader::SerializedFileReader::new(f)
            .unwrap()
            .metadata()
            .file_metadata()
            .num_rows()
    };
    let collectives = json["nccl_wait"]["per_device"][0]["collectives"]
        .as_i64()
        .unwrap();
    assert_eq!(rows("collectives"), collectives);
    assert_eq!(rows("iterations"), truth.run.iterations.count as i64);
    assert_eq!(rows("gpus"), 1);
    assert!(rows("gaps") > 0);
}

/// Issue 67, bugs 1 and 2 at the command line: every node's `report.sqlite` summarised
/// side by side keeps one summary a rank (named by its folder), the same file twice is
/// refused before anything is written; a job whose rank files repeat pids and tids takes a
/// stall as `FILE:TID:START:END`, refuses a bare tid found in several files, and the
/// straggler finding's `what_if` over the files reproduces its saving.
#[test]
fn a_jobs_files_named_alike_or_with_the_same_pids_keep_their_ranks_apart() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    let truth = nsys_explorer::synth::generate_split(
        &ranks,
        nsys_explorer::synth::SynthOptions {
            same_pids: true,
            ..nsys_explorer::synth::SynthOptions::new(nsys_explorer::synth::Preset::Tiny)
        },
    )
    .unwrap();
    let nodes: Vec<std::path::PathBuf> = truth
        .files
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let to = dir.path().join(format!("n{k}")).join("report.sqlite");
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&f.path, &to).unwrap();
            to
        })
        .collect();
    let out_dir = dir.path().join("summaries");
    let out = succeeded(
        bin()
            .arg("summarize")
            .args(&nodes)
            .arg("--out")
            .arg(&out_dir),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    for k in 0..nodes.len() {
        assert!(
            out_dir.join(format!("n{k}_report.summary")).is_file(),
            "{said}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_slice(&succeeded(bin().arg("report").arg(&out_dir).arg("--json")).stdout)
            .unwrap();
    assert_eq!(json["devices"].as_array().unwrap().len(), nodes.len());
    // The same export twice: refused, and nothing written.
    let twice = dir.path().join("twice");
    let refused = bin()
        .arg("summarize")
        .args([&nodes[0], &nodes[0]])
        .arg("--out")
        .arg(&twice)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("both be summarised"));
    assert!(!twice.exists(), "nothing written");

    // The straggler's stall on its own file's thread.
    let files: Vec<&str> = truth
        .files
        .iter()
        .map(|f| f.path.to_str().unwrap())
        .collect();
    let mut args = files.clone();
    args.push("--no-cache");
    let v = report_json(&args);
    let straggler = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "straggler")
        .expect("a straggler finding");
    let what_if: Vec<&str> = straggler["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let span = what_if[1];
    assert_eq!(span.split(':').count(), 4, "FILE:TID:START:END, not {span}");
    let w: serde_json::Value = serde_json::from_slice(
        &succeeded(
            bin()
                .arg("what-if")
                .args(&files)
                .args(["--json", "--no-cache"])
                .args(&what_if),
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(w["saving_ns"], straggler["saving_ns"]);
    // Without the file, the tid names a thread in every file: refused.
    let bare = span.split_once(':').unwrap().1;
    let refused = bin()
        .arg("what-if")
        .args(&files)
        .args(["--no-cache", "--remove-stall", bare])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("name the file"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
