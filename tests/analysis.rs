//! Analyses against the generator's ground truth (to the nanosecond) and against plain SQL
//! on the real exports.

mod common;

use nsys_explorer::analysis::{self, Window, intervals::device_window};
use nsys_explorer::load;
use nsys_explorer::synth::{self, NcclStream, Preset, SynthOptions};
use nsys_explorer::trace::DeviceId;

#[test]
fn breakdown_matches_the_generators_truth_for_same_and_separate_nccl_streams() {
    let dir = tempfile::tempdir().unwrap();
    for nccl in [NcclStream::Same, NcclStream::Separate] {
        let path = dir.path().join(format!("{nccl:?}.sqlite"));
        let mut options = SynthOptions::new(Preset::Tiny);
        options.nccl_stream = nccl;
        let truth = synth::generate(&path, options).unwrap();
        let (trace, _) = load::load(&path).unwrap();
        for (device, expected) in trace.devices.iter().zip(&truth.devices) {
            let window = device_window(device).unwrap();
            assert_eq!([window.start, window.end], expected.window_ns);
            let b = analysis::breakdown(device, window);
            let e = &expected.breakdown_ns;
            assert_eq!(
                (
                    b.compute_only,
                    b.nccl_only,
                    b.overlap,
                    b.memory_only,
                    b.idle
                ),
                (
                    e.compute_only,
                    e.nccl_only,
                    e.overlap,
                    e.memory_only,
                    e.idle
                ),
                "{nccl:?} device {}",
                device.id
            );
        }
    }
}

#[test]
fn breakdown_of_a_window_cutting_through_kernels_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let device = &trace.devices[0];
    let full = device_window(device).unwrap();
    let mid = full.start + full.len() / 3;
    let halves = [Window::new(full.start, mid), Window::new(mid, full.end)];
    let parts: Vec<_> = halves
        .iter()
        .map(|w| analysis::breakdown(device, *w))
        .collect();
    let whole = analysis::breakdown(device, full);
    assert_eq!(
        parts[0].compute_only + parts[1].compute_only,
        whole.compute_only
    );
    assert_eq!(parts[0].nccl_only + parts[1].nccl_only, whole.nccl_only);
    assert_eq!(parts[0].idle + parts[1].idle, whole.idle);
    assert_eq!(parts[0].total(), halves[0].len());
}

/// Kernel-busy time by plain SQL and an interval union written here, against the breakdown.
#[test]
fn real_exports_kernel_busy_time_matches_sql_and_a_simple_union() {
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let conn = rusqlite::Connection::open_with_flags(
            format!("file:{}?immutable=1", path.display()),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        for device in &trace.devices {
            let mut stmt = conn
                .prepare("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = ?1 AND end >= start ORDER BY start")
                .unwrap();
            let intervals: Vec<(i64, i64)> = stmt
                .query_map([device.id.0], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let Some(window) = device_window(device) else {
                continue;
            };
            let (mut busy, mut cur): (i64, Option<(i64, i64)>) = (0, None);
            for (s, e) in intervals {
                cur = match cur {
                    Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
                    Some((cs, ce)) => {
                        busy += ce - cs;
                        Some((s, e))
                    }
                    None => Some((s, e)),
                };
            }
            if let Some((cs, ce)) = cur {
                busy += ce - cs;
            }
            let b = analysis::breakdown(device, window);
            assert_eq!(
                b.compute_only + b.nccl_only + b.overlap,
                busy,
                "{} device {}",
                path.display(),
                device.id
            );
            assert_eq!(b.total(), window.len());
        }
    }
}

#[test]
fn every_injected_gap_is_found_with_neighbours_nvtx_and_cause() {
    use nsys_explorer::analysis::gaps::{self, DEFAULT_MIN_GAP_NS};
    let dir = tempfile::tempdir().unwrap();
    for nccl in [NcclStream::Same, NcclStream::Separate] {
        let path = dir.path().join(format!("gaps-{nccl:?}.sqlite"));
        let mut options = SynthOptions::new(Preset::Tiny);
        options.nccl_stream = nccl;
        let truth = synth::generate(&path, options).unwrap();
        let (trace, _) = load::load(&path).unwrap();
        let cpu = gaps::CpuIndex::new(&trace);
        let mut found = Vec::new();
        for device in &trace.devices {
            let window = device_window(device).unwrap();
            for g in gaps::gaps(&trace, &cpu, device, window, DEFAULT_MIN_GAP_NS) {
                let name = |r: gaps::OpRef| {
                    trace
                        .strings
                        .get(device.streams[r.stream as usize].ops.name[r.op as usize])
                        .to_string()
                };
                let texts = |p: Vec<u32>| {
                    p.into_iter()
                        .map(|id| trace.strings.get(id).to_string())
                        .collect::<Vec<_>>()
                };
                let before_path = gaps::launch_nvtx_path(&trace, device, g.before);
                let after_path = gaps::launch_nvtx_path(&trace, device, g.after);
                // The gap's own enclosing range (found by a sweep) is the one its
                // neighbours' paths (found by search) give.
                assert_eq!(gaps::enclosing(&before_path, &after_path), g.enclosing());
                let enclosing = g.enclosing().map(|id| trace.strings.get(id).to_string());
                found.push((
                    g.device_id(),
                    g.start_ns,
                    g.duration_ns,
                    name(g.before),
                    name(g.after),
                    texts(before_path),
                    texts(after_path),
                    enclosing,
                    g.cause.label().to_string(),
                ));
            }
        }
        let expected: Vec<_> = truth
            .gaps
            .iter()
            .map(|g| {
                (
                    DeviceId(g.device),
                    g.start_ns,
                    g.duration_ns,
                    g.before.clone(),
                    g.after.clone(),
                    g.before_nvtx.clone(),
                    g.after_nvtx.clone(),
                    g.enclosing_nvtx.clone(),
                    g.cause.clone(),
                )
            })
            .collect();
        assert_eq!(found.len(), expected.len(), "{nccl:?}: number of gaps");
        for (f, e) in found.iter().zip(&expected) {
            assert_eq!(f, e, "{nccl:?}");
        }
    }
}

#[test]
fn iterations_slowest_step_and_straggler_match_the_truth() {
    use nsys_explorer::analysis::{
        drilldown::drilldown,
        iterations::{Source, iterations},
    };
    use nsys_explorer::synth::Flavour;
    let dir = tempfile::tempdir().unwrap();
    for (flavour, nccl) in [
        (Flavour::Nsys2024, NcclStream::Same),
        (Flavour::Nsys2023, NcclStream::Separate),
    ] {
        let path = dir.path().join(format!("it-{flavour:?}-{nccl:?}.sqlite"));
        let mut options = SynthOptions::new(Preset::Tiny);
        options.flavour = flavour;
        options.nccl_stream = nccl;
        let truth = synth::generate(&path, options).unwrap();
        let (trace, _) = load::load(&path).unwrap();
        let it = iterations(&trace, None);
        let t = &truth.iterations;
        assert_eq!(
            (it.source, it.marker.as_deref()),
            (Source::Detected, Some(t.marker.as_str()))
        );
        assert_eq!(it.per_device.len(), t.per_device.len());
        for (d, e) in it.per_device.iter().zip(&t.per_device) {
            assert_eq!(d.device, DeviceId(e.device));
            assert_eq!(
                d.durations_ns, e.durations_ns,
                "GPU spans of device {}",
                d.device
            );
            assert_eq!(
                d.cpu_durations_ns, e.cpu_durations_ns,
                "CPU lengths of device {}",
                d.device
            );
            assert_eq!(d.warmup, t.warmup as usize);
            assert_eq!(d.slowest_index, Some(t.slowest_index));
            assert!(d.slow_indices.contains(&t.slowest_index));
        }
        assert_eq!(it.slowest_index, Some(t.slowest_index));
        let cpu = analysis::gaps::CpuIndex::new(&trace);
        let drill = drilldown(
            &trace,
            &cpu,
            &it,
            t.slowest_index,
            analysis::gaps::DEFAULT_MIN_GAP_NS,
            10,
        );
        assert_eq!(
            drill.straggler_device,
            Some(DeviceId(t.straggler_device)),
            "{flavour:?} {nccl:?}"
        );
        let activity = drill.straggler_activity.unwrap();
        assert_eq!(
            activity.longest_call.as_deref(),
            Some(t.straggler_activity.as_str())
        );
        assert_eq!(activity.longest_call_ns, t.straggler_pause_ns);
        // The slow iteration is longer than its reference on every device.
        for d in &drill.devices {
            assert!(d.duration_ns > d.reference_ns);
            assert_eq!(d.breakdown_ns.total(), d.span.len());
        }
    }
}

#[test]
fn recurring_gaps_partition_the_gaps_and_come_largest_total_first() {
    use nsys_explorer::analysis::recurring::recurring;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let cpu = analysis::gaps::CpuIndex::new(&trace);
    let mut found = Vec::new();
    for device in &trace.devices {
        let window = device_window(device).unwrap();
        found.extend(analysis::gaps::gaps(&trace, &cpu, device, window, 1000));
    }
    let (groups, singles) = recurring(&trace, &found);
    // Patterns are seen at least twice; the gaps seen once are listed apart, longest first.
    assert!(groups.iter().all(|g| g.count >= 2));
    assert_eq!(
        groups.iter().map(|g| g.count).sum::<usize>() + singles.len(),
        truth.gaps.len()
    );
    assert!(
        singles
            .windows(2)
            .all(|w| found[w[0] as usize].duration_ns >= found[w[1] as usize].duration_ns)
    );
    assert!(groups.windows(2).all(|w| w[0].total_ns >= w[1].total_ns));
    for g in &groups {
        let total: i64 = g
            .members
            .iter()
            .map(|&i| found[i as usize].duration_ns)
            .sum();
        assert_eq!(total, g.total_ns);
    }
    // The signature of each gap, computed from the truth's names, groups the same way.
    let expected = |g: &synth::GapTruth| {
        let enclosing = g
            .enclosing_nvtx
            .as_deref()
            .map(analysis::iterations::numbers_to_hash)
            .unwrap_or_else(|| "(no NVTX)".into());
        format!("{} → {} in {} [{}]", g.before, g.after, enclosing, g.cause)
    };
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    for g in &truth.gaps {
        *counts.entry(expected(g)).or_default() += 1;
    }
    for g in &groups {
        assert_eq!(counts.get(&g.signature), Some(&g.count), "{}", g.signature);
    }
    for &i in &singles {
        let s = analysis::recurring::signature(&trace, &found[i as usize]);
        assert_eq!(counts.get(&s), Some(&1), "{s}");
    }
}

/// The gap finder's table: filters count what the truth counts, sorts hold their order, and
/// the CSV export reads back row for row.
#[test]
fn the_gap_table_filters_sorts_and_exports_the_truths_gaps() {
    use nsys_explorer::analysis::gaps::Cause;
    use nsys_explorer::overview::{Options, overview};
    use nsys_explorer::ui::gap_table::{Column, Filter, filtered_order, to_csv};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = overview(&trace, &Options::default());
    let all = filtered_order(
        &trace,
        &o.gaps,
        &o.recurring,
        &Filter::default(),
        Column::Duration,
        true,
    );
    assert_eq!(all.len(), truth.gaps.len());
    let durations: Vec<i64> = all
        .iter()
        .map(|&i| o.gaps[i as usize].duration_ns)
        .collect();
    assert!(durations.windows(2).all(|w| w[0] >= w[1]), "longest first");

    for cause in [Cause::HostSync, Cause::HostBound, Cause::Dependency] {
        let filter = Filter {
            cause: Some(cause),
            ..Default::default()
        };
        let expected = truth
            .gaps
            .iter()
            .filter(|g| g.cause == cause.label())
            .count();
        let rows = filtered_order(&trace, &o.gaps, &o.recurring, &filter, Column::Start, false);
        assert_eq!(rows.len(), expected, "{cause:?}");
    }
    let device = trace.devices[1].id;
    let on_device = Filter {
        device: Some(device),
        min_duration_ns: 10_000,
        ..Default::default()
    };
    let expected = truth
        .gaps
        .iter()
        .filter(|g| DeviceId(g.device) == device && g.duration_ns >= 10_000)
        .count();
    let rows = filtered_order(
        &trace,
        &o.gaps,
        &o.recurring,
        &on_device,
        Column::Start,
        false,
    );
    assert_eq!(rows.len(), expected);
    let starts: Vec<i64> = rows.iter().map(|&i| o.gaps[i as usize].start_ns).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "by start");

    let name = truth.gaps[0].after.to_uppercase();
    let by_name = Filter {
        text: name.clone(),
        ..Default::default()
    };
    let expected = truth
        .gaps
        .iter()
        .filter(|g| {
            let n = name.to_lowercase();
            g.before.to_lowercase().contains(&n)
                || g.after.to_lowercase().contains(&n)
                || g.enclosing_nvtx
                    .as_deref()
                    .is_some_and(|e| e.to_lowercase().contains(&n))
        })
        .count();
    assert_eq!(
        filtered_order(
            &trace,
            &o.gaps,
            &o.recurring,
            &by_name,
            Column::Duration,
            true
        )
        .len(),
        expected
    );
    let group = Filter {
        recurring: Some(0),
        ..Default::default()
    };
    assert_eq!(
        filtered_order(
            &trace,
            &o.gaps,
            &o.recurring,
            &group,
            Column::Duration,
            true
        )
        .len(),
        o.recurring[0].count
    );

    let csv = to_csv(&trace, &o.gaps, &all, 0).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    assert_eq!(reader.headers().unwrap().get(3), Some("duration_ns"));
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), all.len());
    for (r, &i) in records.iter().zip(&all) {
        let g = &o.gaps[i as usize];
        assert_eq!(r[3].parse::<i64>().unwrap(), g.duration_ns);
        assert_eq!(&r[5], trace.strings.get(g.after_name(&trace)));
    }
}

/// The truth's count of every gap per device and cause (what it keeps for traces whose gaps
/// are too many to list) is what the analysis finds.
#[test]
fn the_truths_gap_summary_matches_the_gaps_found_per_device_and_cause() {
    use nsys_explorer::overview::{Options, overview};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = overview(&trace, &Options::default());
    assert_eq!(truth.gap_summary.len(), trace.devices.len());
    for s in &truth.gap_summary {
        let mine: Vec<_> = o
            .gaps
            .iter()
            .filter(|g| g.device_id() == DeviceId(s.device))
            .collect();
        assert_eq!(mine.len() as u64, s.count, "device {}", s.device);
        assert_eq!(mine.iter().map(|g| g.duration_ns).sum::<i64>(), s.total_ns);
        for (cause, &(count, total)) in &s.by_cause {
            let of_cause: Vec<_> = mine.iter().filter(|g| g.cause.label() == cause).collect();
            assert_eq!(of_cause.len() as u64, count, "device {} {cause}", s.device);
            assert_eq!(of_cause.iter().map(|g| g.duration_ns).sum::<i64>(), total);
        }
    }
    // Realistic: a gap at nearly every kernel boundary, most of them the GPU's own 1–3 µs.
    let kernels: u64 = truth.devices.iter().map(|d| d.kernels).sum();
    let gaps: u64 = truth.gap_summary.iter().map(|s| s.count).sum();
    assert!(
        gaps as f64 > 0.9 * kernels as f64,
        "{gaps} gaps for {kernels} kernels"
    );
}

#[test]
fn cancelled_analyses_stop_and_say_so() {
    use nsys_explorer::overview::{Options, overview_cancellable};
    use std::sync::atomic::AtomicBool;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cancel.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let options = Options::default();
    assert!(overview_cancellable(&trace, &options, &AtomicBool::new(true)).is_none());
    assert!(overview_cancellable(&trace, &options, &AtomicBool::new(false)).is_some());
}

/// On every shared real export the iterations are sensible: no op-level marker, no median
/// iteration of microseconds from a detected marker, no 0 ns "slowest".
#[test]
fn real_exports_get_a_sensible_iteration_outcome() {
    use analysis::iterations::{Source, iterations};
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let it = iterations(&trace, None);
        let name = path.display();
        if let Some(marker) = &it.marker {
            assert!(!marker.starts_with("aten::"), "{name}: {marker}");
            assert!(!marker.contains("op_id"), "{name}: {marker}");
            if it.source == Source::Detected {
                for d in &it.per_device {
                    assert!(
                        d.median_ns >= 100_000,
                        "{name}: {marker} median {} ns",
                        d.median_ns
                    );
                }
            }
        }
        for d in &it.per_device {
            assert!(
                d.durations_ns.iter().all(|&ns| ns > 0),
                "{name}: an empty iteration"
            );
            if let Some(k) = d.slowest_index {
                assert!(d.durations_ns[k] > 0, "{name}");
            }
        }
    }
}

/// Memory transfers per device and kind add up to what plain SQL sums.
#[test]
fn memory_bytes_per_device_and_kind_match_sql_on_every_real_export() {
    use analysis::memory::memory_by_kind;
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let stats = memory_by_kind(&trace, None);
        let db = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        // Copy kinds by their id; named by the file's enum table when it has one, else by
        // the values nsys uses (exports before 2021 and from 2022.2 lack the table).
        let has_enum = db
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'ENUM_CUDA_MEMCPY_OPER'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            > 0;
        let names: std::collections::HashMap<i64, String> = if has_enum {
            let mut q = db
                .prepare("SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER")
                .unwrap();
            q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        } else {
            [
                (1, "HTOD"),
                (2, "DTOH"),
                (8, "DTOD"),
                (10, "PTOP"),
                (11, "UVM_HTOD"),
                (12, "UVM_DTOH"),
            ]
            .into_iter()
            .map(|(id, n)| (id, format!("CUDA_MEMCPY_KIND_{n}")))
            .collect()
        };
        let mut sql = db
            .prepare(
                "SELECT deviceId, copyKind, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY \
                 WHERE end >= start GROUP BY 1, 2",
            )
            .unwrap();
        let rows: Vec<(u32, String, usize, u64)> = sql
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    names[&r.get::<_, i64>(1)?].clone(),
                    r.get::<_, i64>(2)? as usize,
                    r.get::<_, i64>(3)? as u64,
                ))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!rows.is_empty(), "{}", path.display());
        for (device, kind, count, bytes) in rows {
            // CUDA_MEMCPY_KIND_HTOD → HtoD, as the loader names them.
            let short = kind
                .trim_start_matches("CUDA_MEMCPY_KIND_")
                .replace("TO", "to");
            let mine = stats
                .iter()
                .find(|s| s.device == DeviceId(device) && s.kind.replace(' ', "_") == short)
                .unwrap_or_else(|| panic!("{}: no {short} on {device}: {stats:?}", path.display()));
            assert_eq!(
                (mine.count, mine.bytes),
                (count, bytes),
                "{}: {short}",
                path.display()
            );
        }
        let memsets: i64 = db
            .query_row(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE end >= start",
                [],
                |r| r.get(0),
            )
            .unwrap_or(0);
        let mine: usize = stats
            .iter()
            .filter(|s| s.kind == "memset")
            .map(|s| s.count)
            .sum();
        assert_eq!(mine as i64, memsets, "{}", path.display());
    }
}

/// The drill-down of the slowest step leads, on the straggler's GPU, with its stall (a
/// gap), and on every other GPU with the time its NCCL kernels waited for the straggler.
#[test]
fn the_drilldown_leads_with_what_made_the_slowest_step_slow() {
    use nsys_explorer::overview::{Options, overview};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drill.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = overview(&trace, &Options::default());
    let drill = o.drilldown.as_ref().expect("a slowest iteration");
    let t = &truth.iterations;
    assert_eq!(drill.iteration, t.slowest_index);
    let pause = t.straggler_pause_ns as f64;
    for d in &drill.devices {
        let lead = &d.contributors[0];
        if d.device == DeviceId(t.straggler_device) {
            assert_eq!(lead.kind, "gap", "{lead:?}");
            assert!(lead.description.contains(&t.straggler_activity), "{lead:?}");
        } else {
            assert_eq!(lead.kind, "nccl_wait", "GPU {}: {lead:?}", d.device);
        }
        assert!(
            (lead.delta_ns as f64 - pause).abs() < 0.25 * pause,
            "GPU {}: {} against the stall's {}",
            d.device,
            lead.delta_ns,
            pause
        );
    }
    assert!(
        drill
            .contributors
            .windows(2)
            .all(|w| w[0].delta_ns.abs() >= w[1].delta_ns.abs())
    );
}

/// GPU time per NVTX range: the steps' summed span is the truth's, step by step.
#[test]
fn nvtx_gpu_time_of_the_step_ranges_is_the_truths_step_spans() {
    use analysis::nvtx_gpu::nvtx_gpu;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvtx.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let ranges = nvtx_gpu(&trace, None);
    let steps = ranges
        .iter()
        .find(|r| r.name == "denoising_step_#")
        .unwrap();
    assert_eq!(
        steps.count as usize,
        truth.iterations.count * trace.devices.len()
    );
    for d in &truth.iterations.per_device {
        let mine = steps
            .per_device
            .iter()
            .find(|p| p.device == DeviceId(d.device))
            .unwrap();
        assert_eq!(
            mine.gpu_span_ns,
            d.durations_ns.iter().sum::<i64>(),
            "GPU {}",
            d.device
        );
    }
    assert!(steps.share_pct > 99.0, "every kernel runs inside a step");
}

/// The longest gaps of a JIT compilation name it: the NVTX range open on the launching
/// thread during the gap, not just "host_bound".
#[test]
fn a_jit_stall_gap_names_the_compilation_range() {
    use nsys_explorer::analysis::recurring::{cause_text, describe};
    use nsys_explorer::overview::{Options, overview};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jit.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = overview(&trace, &Options::default());
    // The truth's gaps of the first step lasting the compilation (300 ms and more).
    let jit: Vec<_> = truth
        .gaps
        .iter()
        .filter(|g| g.duration_ns >= 300_000_000)
        .collect();
    assert_eq!(jit.len(), trace.devices.len(), "one JIT stall per rank");
    for t in jit {
        let g = o
            .gaps
            .iter()
            .find(|g| g.start_ns == t.start_ns && g.device_id() == DeviceId(t.device))
            .unwrap();
        assert_eq!(g.cause.label(), t.cause);
        let text = cause_text(&trace, g);
        assert!(
            text.starts_with("host_bound: in KernelExecutor::compileFusion > nvrtc_compile"),
            "{text}"
        );
        let a = describe(&trace, g, 3).activity.unwrap();
        assert!(a.nvtx_ns as f64 > 0.9 * g.duration_ns as f64, "{a:?}");
    }
}

/// NCCL on a stream of its own: the share of its time hidden under compute is given, and
/// matches the breakdown.
#[test]
fn nccl_on_its_own_stream_reports_how_much_of_it_is_hidden() {
    use nsys_explorer::overview::{Options, overview};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sep.sqlite");
    let mut options = SynthOptions::new(Preset::Tiny);
    options.nccl_stream = NcclStream::Separate;
    synth::generate(&path, options).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = overview(&trace, &Options::default());
    for d in &o.devices {
        let ss = d.same_stream.unwrap();
        let b = d.breakdown;
        let want = 100.0 * b.overlap as f64 / (b.overlap + b.nccl_only) as f64;
        assert!((ss.hidden_pct.unwrap() - want).abs() < 1e-9);
        assert!(
            ss.sentence().contains("hidden under compute"),
            "{}",
            ss.sentence()
        );
    }
}

/// OS runtime calls: a gap's cause names the launching thread's (the scheduler's
/// `pthread_cond_wait`), never another thread's (the event handler sits in `poll` all run
/// long), and the straggler's stall is its `read()`.
#[test]
fn gaps_name_the_os_runtime_calls_of_the_launching_thread() {
    use analysis::recurring::{cause_text, describe};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("osrt.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, report) = load::load(&path).unwrap();
    assert_eq!(report.tables["OSRT_API"], truth.tables["OSRT_API"]);
    let o = nsys_explorer_core::overview::overview(&trace, &Default::default());
    // The gaps after each step's sync: the CPU then waits for the data loader.
    let scheduler: Vec<_> = o
        .gaps
        .iter()
        .filter(|g| g.duration_ns > 50_000_000 && g.cause == analysis::gaps::Cause::HostSync)
        .collect();
    assert!(!scheduler.is_empty());
    for g in &scheduler {
        let text = cause_text(&trace, g);
        // The sync it waited in first (not a launch that followed it), then what came next.
        assert!(
            text.starts_with("host_sync: waited in cudaStreamSynchronize"),
            "{text}"
        );
        assert!(text.contains("in pthread_cond_wait() for"), "{text}");
        assert!(text.ends_with("(scheduler_step)"), "{text}");
        let d = describe(&trace, g, 10);
        assert!(d.calls_during.iter().any(|c| c.kind == "osrt"), "{d:?}");
    }
    for g in o.gaps.iter().take(2_000) {
        let d = describe(&trace, g, 10);
        assert!(d.calls_during.iter().all(|c| c.name != "poll()"), "{d:?}");
    }
    let drill = o.drilldown.as_ref().unwrap();
    assert_eq!(
        drill
            .straggler_activity
            .as_ref()
            .unwrap()
            .longest_call
            .as_deref(),
        Some("read()")
    );
}

/// The real export with OS runtime calls: every call (event class 27) is on its thread.
#[test]
fn os_runtime_calls_of_a_real_export_match_sql() {
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("osrt"))
        .unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let db =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let want: i64 = db
        .query_row(
            "SELECT count(*) FROM OSRT_API WHERE eventClass = 27 AND end >= start",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let got: usize = trace.threads.iter().map(|t| t.osrt.len()).sum();
    assert_eq!(got as i64, want);
    for t in &trace.threads {
        assert!(t.osrt.start.is_sorted());
    }
}

/// The CuPy export synchronises three times a step and has no NVTX: its iterations are
/// inferred three intervals at a time, and only its one 2.1 s stretch is slow.
#[test]
fn iterations_of_a_real_export_without_nvtx_come_from_its_cycle_of_syncs() {
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("three-syncs-per-step"))
        .unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let it = analysis::iterations::iterations(&trace, None);
    assert!(it.heuristic);
    assert!(
        it.marker.as_deref().unwrap().contains("3 per iteration"),
        "{:?}",
        it.marker
    );
    let d = &it.per_device[0];
    assert!(d.durations_ns.len() >= 10, "{:?}", d.durations_ns);
    assert_eq!(d.slow_indices.len(), 1, "{:?}", d.durations_ns);
    assert!(d.durations_ns[d.slow_indices[0]] > 2_000_000_000);
    // The one with OS runtime calls repeats in no cycle where it launches: no ranking.
    let osrt = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("osrt"))
        .unwrap();
    let (trace, _) = load::load(&osrt).unwrap();
    let it = analysis::iterations::iterations(&trace, None);
    assert_eq!(it.count(), 0);
    assert!(
        it.marker
            .as_deref()
            .unwrap()
            .contains("no repeating pattern")
    );
}

/// The drill-down's grown kernels grew: a kernel that shrank did not make the iteration slow.
#[test]
fn the_drilldown_lists_only_kernels_that_grew() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = nsys_explorer_core::overview::overview(&trace, &Default::default());
    let drill = o.drilldown.unwrap();
    assert!(drill.devices.iter().any(|d| !d.kernels_grown.is_empty()));
    for d in &drill.devices {
        assert!(
            d.kernels_grown.iter().all(|k| k.growth_ns > 0),
            "{:?}",
            d.kernels_grown
        );
    }
}

/// A memset has no transfer rate, and a copy rate no hardware reaches is said to be suspect
/// (the pre-2021 export records a 4 GB memset as lasting about a microsecond).
#[test]
fn memsets_have_no_bandwidth_and_impossible_rates_are_suspect() {
    use analysis::memory::{SUSPECT_GBPS, memory_by_kind};
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        for m in memory_by_kind(&trace, None) {
            if m.kind == "memset" {
                assert_eq!(m.gbps, 0.0);
                assert!(m.rate_text().is_empty());
            } else {
                assert_eq!(m.gbps_suspect, m.gbps > SUSPECT_GBPS);
                assert_eq!(m.rate_text().contains("suspect"), m.gbps_suspect);
            }
        }
    }
}

/// The window's kept orders (every column sorted once) give the very rows a fresh sort
/// gives, for every column, direction and kind of filter.
#[test]
fn gap_orders_kept_give_the_rows_a_fresh_sort_gives() {
    use nsys_explorer::analysis::gaps::Cause;
    use nsys_explorer::overview::{Options, overview};
    use nsys_explorer::ui::gap_table::{Column, Filter, GapOrders, filtered_order_with};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let o = overview(&trace, &Options::default());
    assert!(o.gaps.len() > 1000 && !o.recurring.is_empty());
    let orders = GapOrders::default();
    let span = (o.gaps[100].start_ns, o.gaps[900].start_ns);
    let filters = [
        Filter::default(),
        Filter {
            cause: Some(Cause::HostBound),
            ..Default::default()
        },
        Filter {
            text: "gemm".into(),
            min_duration_ns: 2_000,
            ..Default::default()
        },
        Filter {
            recurring: Some(0),
            device: Some(DeviceId(1)),
            ..Default::default()
        },
        Filter {
            window: Some(span),
            ..Default::default()
        },
    ];
    for filter in &filters {
        for column in Column::ALL {
            for descending in [false, true] {
                let args = (
                    &trace,
                    &o.gaps[..],
                    &o.recurring[..],
                    filter,
                    column,
                    descending,
                );
                let fresh =
                    filtered_order_with(args.0, args.1, args.2, args.3, args.4, args.5, None);
                let kept = filtered_order_with(
                    args.0,
                    args.1,
                    args.2,
                    args.3,
                    args.4,
                    args.5,
                    Some(&orders),
                );
                assert_eq!(
                    kept, fresh,
                    "{filter:?} by {column:?} descending {descending}"
                );
            }
        }
    }
}

/// Iterations between syncs on the real 2-GPU export: its GPUs' threads synchronised 16 and
/// 17 times, so without matching, "iteration 5" was two different steps. Lined up by their
/// collectives, iteration k holds the same collectives on both GPUs, and the slowest
/// iteration's straggler is the rank `nccl_wait` finds held the others back longest.
#[test]
fn iterations_from_syncs_line_up_across_gpus_by_their_collectives() {
    use nsys_explorer_core::overview::{Options, overview};
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("2gpu-nccl-flashattn"))
        .unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let options = Options {
        iteration_marker: Some(analysis::iterations::HEURISTIC_MARKER.into()),
        ..Options::default()
    };
    let o = overview(&trace, &options);
    let it = &o.iterations;
    assert_eq!(it.per_device.len(), 2);
    assert!(
        it.aligned.is_some(),
        "the GPUs' syncs differ: {:?}",
        it.aligned
    );
    // Each NCCL kernel's collective, by (device index, stream, op).
    let collectives = o.collectives(&trace);
    let mut group_of = std::collections::HashMap::new();
    for (g, members) in collectives.iter().enumerate() {
        for &m in members {
            group_of.insert(m, g);
        }
    }
    let group_of = &group_of;
    let held = |d: &analysis::iterations::DeviceIterations, k: usize| -> Vec<usize> {
        let di = trace.device_index(d.device).unwrap().0;
        let w = d.spans[k].unwrap();
        let mut gs: Vec<usize> = trace.devices[di]
            .streams
            .iter()
            .enumerate()
            .flat_map(|(s, stream)| {
                (0..stream.ops.len())
                    .filter(move |&i| {
                        stream.ops.start[i] >= w.start && stream.ops.start[i] <= w.end
                    })
                    .filter_map(move |i| group_of.get(&(di, s, i)).copied())
            })
            .collect();
        gs.sort_unstable();
        gs
    };
    let (a, b) = (&it.per_device[0], &it.per_device[1]);
    let both = a.spans.len().min(b.spans.len());
    assert!(both >= 10, "{both} iterations");
    for k in 0..both {
        let (ga, gb) = (held(a, k), held(b, k));
        assert!(!ga.is_empty(), "iteration {k} holds collectives");
        assert_eq!(ga, gb, "iteration {k} is one step on both GPUs");
    }
    let d = o.drilldown.as_ref().expect("a slowest iteration");
    let late = &o.nccl_wait.late[0];
    assert_eq!(d.straggler_device, Some(late.last_device));
    let lateness = d.collectives[0].lateness_ns;
    assert!(
        lateness <= 2 * late.held_back_ns,
        "the drill-down's lateness {lateness} against nccl_wait's {}",
        late.held_back_ns
    );
}
