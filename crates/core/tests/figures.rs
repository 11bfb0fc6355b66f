//! The five figures of a generated run: the files exist, decode as PNG and parse as SVG,
//! `figures.json` holds the generator's true numbers (and the report's), a trace without
//! iterations or NCCL skips those figures, and one figure is compared with its snapshot.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::Path;

use nsys_explorer_core::figures::{self, Format, NAMES, figure_data, write_figures};
use nsys_explorer_core::load;
use nsys_explorer_core::overview::Options;
use nsys_explorer_core::synth::{self, Preset, SynthOptions};
use serde_json::Value;

fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).expect("PNG pixels");
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels)
}

#[test]
fn the_five_figures_of_a_generated_run_are_written_with_their_true_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, report) = load::load(&path).unwrap();
    let options = Options::default();
    let overview = nsys_explorer_core::overview::overview(&trace, &options);
    let data = figure_data(&trace, &overview, None, None);
    let out = dir.path().join("figures");
    let written = write_figures(&data, &out, &[Format::Png, Format::Svg], &NAMES).unwrap();
    assert!(written.skipped.is_empty(), "{:?}", written.skipped);
    assert_eq!(written.files.len(), 2 * NAMES.len() + 1);
    for name in NAMES {
        let (w, h, pixels) = decode_png(&out.join(format!("{name}.png")));
        assert!(w >= 1600 && h >= 900, "{name}: {w}×{h}");
        // Something was drawn: not one colour.
        assert!(
            pixels.chunks(3).any(|p| p != &pixels[..3]),
            "{name} is blank"
        );
        let svg = std::fs::read_to_string(out.join(format!("{name}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(
            doc.descendants().any(|n| n.has_tag_name("text")),
            "{name} has text"
        );
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("figures.json")).unwrap()).unwrap();

    // Where each GPU's time goes: the generator's breakdown.
    for d in &truth.devices {
        let w = &json["per_device_walltime"][d.id.to_string()];
        let b = &d.breakdown_ns;
        let all = (b.compute_only + b.nccl_only + b.overlap + b.memory_only + b.idle) as f64;
        let share = |ns: i64| 100.0 * ns as f64 / all;
        for (field, ns) in [
            ("compute_only_pct", b.compute_only),
            ("nccl_only_pct", b.nccl_only),
            ("overlap_pct", b.overlap),
            ("idle_pct", b.idle),
        ] {
            let got = w[field].as_f64().unwrap();
            assert!(
                (got - share(ns)).abs() < 0.01,
                "{field} of GPU {}: {got}",
                d.id
            );
        }
    }
    // Iterations over time: every step of every GPU, with its true duration.
    for d in &truth.iterations.per_device {
        let series = json["iter_duration_over_time"]["series"][d.device.to_string()]
            .as_array()
            .unwrap();
        let durations: Vec<i64> = series.iter().map(|p| p[1].as_i64().unwrap()).collect();
        assert_eq!(durations, d.durations_ns, "GPU {}", d.device);
        let starts: Vec<i64> = series.iter().map(|p| p[0].as_i64().unwrap()).collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "in time order");
    }
    // The histogram: the steady steps of every GPU, their true median.
    let mut steady: Vec<i64> = truth
        .iterations
        .per_device
        .iter()
        .flat_map(|d| d.durations_ns.iter().skip(truth.iterations.warmup as usize))
        .copied()
        .collect();
    steady.sort_unstable();
    let h = &json["iter_duration_histogram"];
    assert_eq!(h["count"].as_u64().unwrap() as usize, steady.len());
    assert_eq!(
        h["median_ns"].as_i64().unwrap(),
        steady[(steady.len() - 1) / 2]
    );
    let binned: u64 = h["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(binned as usize, steady.len());
    // NCCL: every kernel, binned; the tallest bin is the first mode.
    let nccl: u64 = truth.devices.iter().map(|d| d.nccl_kernels).sum();
    let n = &json["nccl_kernel_duration_hist"];
    assert_eq!(n["count"].as_u64().unwrap(), nccl);
    let bins = n["bins"].as_array().unwrap();
    let binned: u64 = bins.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    let outside = n["below"].as_u64().unwrap() + n["above"].as_u64().unwrap();
    assert_eq!(binned + outside, nccl);
    let tallest = bins
        .iter()
        .max_by_key(|b| b["count"].as_u64().unwrap())
        .unwrap();
    let middle = (tallest["from_ns"].as_i64().unwrap() + tallest["to_ns"].as_i64().unwrap()) / 2;
    assert_eq!(n["modes_ns"][0].as_i64(), Some(middle), "{n}");
    // One iteration: the median one of GPU 0, its kernels all inside its span.
    let s = &json["streams_one_iter"];
    assert_eq!(s["device"], "0");
    let k = s["iteration"].as_u64().unwrap() as usize;
    assert_eq!(
        overview.iterations.per_device[0].median_index,
        Some(k),
        "the median iteration by default"
    );
    let (start, end) = (
        s["start_ns"].as_i64().unwrap(),
        s["end_ns"].as_i64().unwrap(),
    );
    assert_eq!(end - start, truth.iterations.per_device[0].durations_ns[k]);
    let ops: Vec<&Value> = s["spans"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap())
        .collect();
    assert!(!ops.is_empty());
    assert!(
        ops.iter()
            .all(|o| o["start_ns"].as_i64().unwrap() >= start
                && o["end_ns"].as_i64().unwrap() <= end)
    );

    // The same numbers as `report --json`.
    let findings = nsys_explorer_core::findings::findings(&trace, &overview);
    let r =
        nsys_explorer_core::report::report_json(&trace, &report, &overview, &findings, &options);
    for d in r["devices"].as_array().unwrap() {
        let id = d["id"].to_string();
        let b = &d["breakdown_ns"];
        let all: f64 = [
            "compute_only",
            "nccl_only",
            "overlap",
            "memory_only",
            "idle",
        ]
        .iter()
        .map(|f| b[*f].as_f64().unwrap())
        .sum();
        let idle = 100.0 * b["idle"].as_f64().unwrap() / all;
        let got = json["per_device_walltime"][&id]["idle_pct"]
            .as_f64()
            .unwrap();
        assert!((got - idle).abs() < 1e-9, "idle of GPU {id}");
    }
    for d in r["iterations"]["per_device"].as_array().unwrap() {
        let id = d["device"].to_string();
        let from_report: Vec<i64> = d["durations_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let drawn: Vec<i64> = json["iter_duration_over_time"]["series"][&id]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_i64().unwrap())
            .collect();
        assert_eq!(drawn, from_report);
    }
}

#[test]
fn a_trace_without_iterations_or_nccl_skips_those_figures_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    // Kernels only: no NVTX ranges, no API calls, no NCCL.
    let mut b = nsys_explorer_core::trace::builder::TraceBuilder::new();
    for k in 0..50 {
        b.kernel(0, 7, "gemm", (k * 10_000, k * 10_000 + 6_000), None);
    }
    let trace = b.build();
    let overview = nsys_explorer_core::overview::overview(&trace, &Options::default());
    let data = figure_data(&trace, &overview, None, None);
    let out = dir.path().join("figures");
    let written = write_figures(&data, &out, &[Format::Png], &NAMES).unwrap();
    let skipped: Vec<&str> = written.skipped.iter().map(|s| s.0).collect();
    assert!(
        skipped.contains(&"5_nccl_kernel_duration_hist"),
        "{skipped:?}"
    );
    assert!(skipped.contains(&"3_streams_one_iter"), "{skipped:?}");
    assert!(written.skipped.iter().all(|(_, why)| !why.is_empty()));
    assert!(out.join("4_per_device_walltime.png").exists());
    for name in &skipped {
        assert!(
            !out.join(format!("{name}.png")).exists(),
            "no empty picture for {name}"
        );
    }
}

/// `UPDATE_SNAPSHOTS=1 cargo test -p nsys-explorer-core --test figures` rewrites it.
#[test]
fn the_walltime_figure_of_tiny_matches_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let overview = nsys_explorer_core::overview::overview(&trace, &Options::default());
    let data = figure_data(&trace, &overview, None, None);
    let png = figures::render("4_per_device_walltime", &data, Format::Png, figures::SIZE).unwrap();
    let got = dir.path().join("got.png");
    std::fs::write(&got, &png).unwrap();
    let snapshot =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/4_per_device_walltime.png");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
        std::fs::write(&snapshot, &png).unwrap();
    }
    let (w, h, a) = decode_png(&got);
    let (sw, sh, b) = decode_png(&snapshot);
    assert_eq!((w, h), (sw, sh));
    // Anti-aliasing may differ by a shade across platforms: count clearly different pixels.
    let differing = a
        .chunks(3)
        .zip(b.chunks(3))
        .filter(|(p, q)| p.iter().zip(*q).any(|(x, y)| x.abs_diff(*y) > 24))
        .count();
    assert!(
        differing * 1000 <= (w * h) as usize,
        "{differing} pixels differ from the snapshot (more than 0.1 %): {}",
        got.display()
    );
}

#[test]
fn a_timeline_view_keeps_its_ops_joins_those_under_a_pixel_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let origin = trace.time_origin().unwrap();
    let (_, end) = trace.time_span().unwrap();
    // The whole trace: far more ops than pixels, joined.
    let whole = figures::data::timeline_view(&trace, (origin, end));
    let streams: usize = trace.devices.iter().map(|d| d.streams.len()).sum();
    assert_eq!(whole.rows.len(), streams);
    let ops: usize = trace
        .devices
        .iter()
        .flat_map(|d| &d.streams)
        .map(|s| s.ops.len())
        .sum();
    let spans: usize = whole.rows.iter().map(|r| r.spans.len()).sum();
    assert!(spans < ops, "{spans} spans for {ops} ops");
    assert!(whole.rows.iter().all(|r| r.spans.len() <= 2 * 1600));
    // 1 ms around GPU 0's first kernel: every op there, one span each.
    let first = trace.devices[0].streams[0].ops.start[0];
    let near = figures::data::timeline_view(&trace, (first, first + 1_000_000));
    let in_view = trace.devices[0].streams[0]
        .ops
        .start
        .iter()
        .filter(|&&s| s >= first && s <= first + 1_000_000)
        .count();
    let row = &near.rows[0];
    assert!(row.name.starts_with("GPU 0 · stream"), "{}", row.name);
    assert_eq!(row.spans[0].start_ns, first - origin);
    assert!(row.spans.len() <= in_view && !row.spans.is_empty());
    let written =
        figures::write_view(&whole, &dir.path().join("v"), &[Format::Png, Format::Svg]).unwrap();
    assert_eq!(written.files.len(), 3);
    let (w, h, _) = decode_png(&dir.path().join("v/timeline_view.png"));
    assert_eq!((w, h), figures::SIZE);
}

#[test]
fn figures_of_one_job_in_several_files_have_a_series_per_file_and_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = dir.path().join("ranks");
    synth::generate_split(&ranks, SynthOptions::new(Preset::Tiny)).unwrap();
    let paths = load::many::expand_paths(&[ranks]).unwrap();
    let (trace, _, _) = nsys_explorer_core::session::load_many(&paths).unwrap();
    let overview = nsys_explorer_core::overview::overview(&trace, &Options::default());
    let data = figure_data(&trace, &overview, None, None);
    let keys: Vec<&String> = data.per_device_walltime.keys().collect();
    assert_eq!(keys.len(), paths.len());
    assert!(keys.iter().all(|k| k.contains(".sqlite:")), "{keys:?}");
    let series = &data.iter_duration_over_time.as_ref().unwrap().series;
    assert_eq!(series.keys().collect::<Vec<_>>(), keys);
}
