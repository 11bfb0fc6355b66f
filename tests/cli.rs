//! The command line as a user runs it: `report --json` keys, errors on stderr with a
//! non-zero exit, and `synth` writing a trace and its truth.

mod common;

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nsys-explorer"))
}

#[test]
fn report_json_has_the_documented_keys_and_counts() {
    for path in common::real_fixtures() {
        let out = bin()
            .arg("report")
            .arg(&path)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
    let out = bin()
        .args(["synth", "--preset", "tiny", "--flavour", "2023", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
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
