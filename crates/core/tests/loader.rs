//! The loader on real exports of four nsys versions and on generated traces of both
//! schema flavours: row counts against plain SQL or the generator's truth, kernel → API
//! links, per-device counts, and that nothing is written near the file.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::Path;

use nsys_explorer_core::load::{self, KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME};
use nsys_explorer_core::synth::{self, Flavour, GroundTruth, NcclStream, Preset, SynthOptions};
use nsys_explorer_core::trace::{DeviceId, NONE, OpKind, Trace, pid_of_global_id};
use rusqlite::Connection;

fn sql_count(conn: &Connection, sql: &str) -> u64 {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

#[test]
fn every_real_export_loads_with_the_row_counts_plain_sql_gives() {
    for path in common::real_fixtures() {
        let before = common::snapshot(&path);
        let (trace, report) =
            load::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            common::snapshot(&path),
            before,
            "{} changed",
            path.display()
        );
        let conn = common::open_plain(&path);
        let name = path.display();

        for table in [KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX, "StringIds"] {
            if common::has_table(&conn, table) {
                let rows = sql_count(&conn, &format!("SELECT count(*) FROM {table}"));
                assert_eq!(
                    report.tables.get(table),
                    Some(&rows),
                    "{name}: rows of {table}"
                );
            } else {
                assert!(
                    report.missing_tables.iter().any(|t| t == table),
                    "{name}: {table} reported missing"
                );
            }
        }
        let valid = |table: &str, extra: &str| {
            if common::has_table(&conn, table) {
                sql_count(
                    &conn,
                    &format!(
                        "SELECT count(*) FROM {table} WHERE start IS NOT NULL AND end >= start {extra}"
                    ),
                )
            } else {
                0
            }
        };
        let kernels = valid(KERNEL, "");
        assert_eq!(
            trace.kernel_count() as u64,
            kernels,
            "{name}: kernels in the model"
        );
        let memcpys: usize = trace
            .devices
            .iter()
            .map(|d| d.count_of(OpKind::Memcpy))
            .sum();
        assert_eq!(memcpys as u64, valid(MEMCPY, ""), "{name}: memcpys");
        let memsets: usize = trace
            .devices
            .iter()
            .map(|d| d.count_of(OpKind::Memset))
            .sum();
        assert_eq!(memsets as u64, valid(MEMSET, ""), "{name}: memsets");
        assert_eq!(
            trace.api_call_count() as u64,
            valid(RUNTIME, ""),
            "{name}: API calls"
        );
        assert_eq!(
            trace.nvtx_range_count() as u64,
            valid(NVTX, "AND eventType IN (59, 60)"),
            "{name}: NVTX ranges"
        );
        let skipped_nvtx: u64 = report
            .skipped_rows
            .iter()
            .filter(|s| s.table == NVTX)
            .map(|s| s.rows)
            .sum();
        let rows_nvtx = report.tables.get(NVTX).copied().unwrap_or(0);
        // Exports without NVTX have no table to count in.
        let nvtx_rows = |event_type: i64| {
            if common::has_table(&conn, NVTX) {
                sql_count(
                    &conn,
                    &format!("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = {event_type}"),
                )
            } else {
                0
            }
        };
        let (marks, domains) = (nvtx_rows(34), nvtx_rows(75));
        assert_eq!(
            rows_nvtx,
            trace.nvtx_range_count() as u64 + skipped_nvtx + marks + domains,
            "{name}: NVTX rows accounted for"
        );

        // Devices: exactly those with GPU activity, with per-device kernel counts from SQL.
        let mut per_device: HashMap<u32, u64> = HashMap::new();
        if common::has_table(&conn, KERNEL) {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT deviceId, count(*) FROM {KERNEL} GROUP BY deviceId"
                ))
                .unwrap();
            for row in stmt
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .unwrap()
            {
                let (d, n) = row.unwrap();
                per_device.insert(d as u32, n as u64);
            }
        }
        for (device, n) in &per_device {
            let d = trace
                .device(DeviceId(*device))
                .unwrap_or_else(|| panic!("{name}: device {device}"));
            assert_eq!(
                (d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl)) as u64,
                *n,
                "{name}: device {device}"
            );
        }
        for d in &trace.devices {
            for s in &d.streams {
                assert!(s.ops.start.is_sorted(), "{name}: stream {} sorted", s.id);
                assert!(s.ops.start.iter().zip(&s.ops.end).all(|(a, b)| b >= a));
            }
        }
        // Versions, where the export records them (exports before 2021 record none).
        let recorded = common::has_table(&conn, "META_DATA_EXPORT")
            || common::has_table(&conn, "EXPORT_META_DATA");
        assert_eq!(
            trace.info.nsys_version.is_some() && trace.info.schema_version.is_some(),
            recorded,
            "{name}: versions"
        );
    }
}

/// Kernel → API links match an SQL join on (pid, correlationId), kernel by kernel.
#[test]
fn real_kernels_link_to_the_api_call_sql_finds_by_pid_and_correlation_id() {
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let conn = common::open_plain(&path);
        let name = path.display();
        // (start, deviceId, streamId) → launch API call name and start, by SQL.
        let sql = "SELECT k.start, k.deviceId, k.streamId, s.value, r.start
                   FROM CUPTI_ACTIVITY_KIND_KERNEL k
                   JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                     ON r.correlationId = k.correlationId
                    AND ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)
                   JOIN StringIds s ON s.id = r.nameId";
        let mut stmt = conn.prepare(sql).unwrap();
        let expected: Vec<(i64, u32, u32, String, i64)> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, i64>(1)? as u32,
                    r.get::<_, i64>(2)? as u32,
                    r.get(3)?,
                    r.get(4)?,
                ))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!expected.is_empty(), "{name}: SQL finds links");
        let linked: usize = trace
            .devices
            .iter()
            .flat_map(|d| &d.streams)
            .map(|s| {
                s.ops
                    .kind
                    .iter()
                    .zip(&s.ops.launch_call)
                    .filter(|(k, c)| k.is_kernel() && **c != NONE)
                    .count()
            })
            .sum();
        assert_eq!(linked, expected.len(), "{name}: number of linked kernels");
        for (start, device, stream, api_name, api_start) in expected {
            let d = trace.device(DeviceId(device)).unwrap();
            let (s, i) = d
                .streams
                .iter()
                .filter(|s| s.id == stream)
                .find_map(|s| {
                    let i = s.ops.first_starting_at_or_after(start);
                    (i < s.ops.len() && s.ops.start[i] == start && s.ops.kind[i].is_kernel())
                        .then_some((s, i))
                })
                .unwrap_or_else(|| panic!("{name}: kernel at {start}"));
            let thread = &trace.threads[s.ops.launch_thread[i] as usize];
            let call = s.ops.launch_call[i] as usize;
            assert_eq!(
                trace.strings.get(thread.api.name[call]),
                api_name,
                "{name}: launch name"
            );
            assert_eq!(thread.api.start[call], api_start, "{name}: launch start");
            assert_eq!(thread.pid, s.pid, "{name}: launch in the kernel's process");
        }
    }
}

#[test]
fn real_nvtx_text_comes_from_text_or_text_id() {
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("flashattn"))
        .unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let conn = common::open_plain(&path);
    // Rows whose text is only in StringIds (textId) must still get their text.
    let by_id: String = conn
        .query_row(
            "SELECT s.value FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId WHERE n.text IS NULL AND n.eventType = 59 LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let found = trace
        .threads
        .iter()
        .any(|t| t.nvtx.text.iter().any(|&id| trace.strings.get(id) == by_id));
    assert!(found, "range text {by_id:?} from textId");
    let nested = trace
        .threads
        .iter()
        .any(|t| t.nvtx.depth.iter().any(|&d| d > 0));
    assert!(nested, "aten ranges nest");
}

fn generate(dir: &Path, flavour: Flavour, nccl: NcclStream) -> (std::path::PathBuf, GroundTruth) {
    let path = dir.join(format!("tiny-{flavour:?}-{nccl:?}.sqlite"));
    let mut options = SynthOptions::new(Preset::Tiny);
    options.flavour = flavour;
    options.nccl_stream = nccl;
    let truth = synth::generate(&path, options).unwrap();
    (path, truth)
}

fn check_against_truth(trace: &Trace, report: &load::LoadReport, truth: &GroundTruth) {
    // The generator also writes tables the loader has no use for (SCHED_EVENTS).
    let read = |t: &str| load::READ_TABLES.iter().any(|(name, _)| *name == t);
    assert!(truth.tables.contains_key("SCHED_EVENTS"));
    for (table, rows) in truth.tables.iter().filter(|(t, _)| read(t)) {
        assert_eq!(report.tables.get(table), Some(rows), "rows of {table}");
    }
    assert!(!report.tables.contains_key("SCHED_EVENTS"));
    assert!(report.skipped_rows.is_empty(), "{:?}", report.skipped_rows);
    assert_eq!(trace.nvtx_range_count() as u64, truth.nvtx_ranges);
    assert_eq!(
        trace.devices.len(),
        truth.devices.len(),
        "only the GPUs in use, not all 8 of TARGET_INFO_GPU"
    );
    for (d, t) in trace.devices.iter().zip(&truth.devices) {
        assert_eq!(d.id, DeviceId(t.id));
        assert_eq!(d.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(
            (d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl)) as u64,
            t.kernels
        );
        assert_eq!(d.count_of(OpKind::Nccl) as u64, t.nccl_kernels);
        assert_eq!(d.count_of(OpKind::Memcpy) as u64, t.memcpys);
        assert_eq!(d.count_of(OpKind::Memset) as u64, t.memsets);
        assert_eq!(d.kernel_window(), Some((t.window_ns[0], t.window_ns[1])));
        // correlationIds restart in every process: every op links to a call of its own pid.
        for s in &d.streams {
            assert_eq!(s.pid, t.pid);
            for i in 0..s.ops.len() {
                assert_ne!(
                    s.ops.launch_call[i], NONE,
                    "op {i} of device {} linked",
                    d.id
                );
                let thread = &trace.threads[s.ops.launch_thread[i] as usize];
                assert_eq!(thread.pid, t.pid);
                let call = s.ops.launch_call[i] as usize;
                assert_eq!(thread.api.correlation_id[call], s.ops.correlation_id[i]);
                // A blocking copy's call returns after its op (the checkpoint's cudaMemcpy).
                let blocking =
                    s.ops.kind[i] == OpKind::Memcpy && thread.api.end[call] > s.ops.end[i];
                assert!(
                    thread.api.end[call] <= s.ops.start[i]
                        || (blocking && thread.api.start[call] <= s.ops.start[i]),
                    "launch precedes its op"
                );
            }
        }
    }
    // One launching thread per rank, its name from ThreadNames, NVTX nested 5 deep at least;
    // beside it the rank's CUDA event handler, with OS runtime calls only (`poll`).
    let (launching, handlers): (Vec<_>, Vec<_>) =
        trace.threads.iter().partition(|t| !t.api.is_empty());
    assert_eq!(launching.len(), truth.devices.len());
    assert_eq!(handlers.len(), truth.devices.len());
    for t in &handlers {
        assert_eq!(t.name, "cuda-EvtHandlr");
        assert!(!t.osrt.is_empty() && t.nvtx.is_empty());
        let poll = trace.strings.find("poll").unwrap();
        assert!(t.osrt.name.iter().all(|&n| n == poll));
    }
    // The main threads' OS runtime calls: a pthread_cond_wait per step, a read() once.
    let waits: usize = launching.iter().map(|t| t.osrt.len()).sum();
    assert_eq!(
        waits as u64 + handlers.iter().map(|t| t.osrt.len() as u64).sum::<u64>(),
        truth.tables["OSRT_API"]
    );
    for t in launching {
        assert_eq!(t.name, "pt_main_thread");
        assert!(t.nvtx.depth.iter().any(|&d| d >= 4));
        assert_eq!(pid_of_global_id(t.global_tid), t.pid);
    }
    // NCCL's domain beside the program's when the generator wrote NCCL's calls (2024).
    let mut domains = vec![(1, "wan2.1".to_string())];
    if truth.nccl_payload.is_some() {
        domains.push((7, "NCCL".to_string()));
    }
    assert_eq!(trace.nvtx_domains, domains);
}

#[test]
fn generated_traces_of_both_flavours_load_with_the_generators_counts() {
    let dir = tempfile::tempdir().unwrap();
    for flavour in [Flavour::Nsys2024, Flavour::Nsys2023] {
        let (path, truth) = generate(dir.path(), flavour, NcclStream::Same);
        let (trace, report) = load::load(&path).unwrap();
        check_against_truth(&trace, &report, &truth);
        assert_eq!(
            trace.info.nvtx_text_in_string_ids,
            flavour == Flavour::Nsys2023
        );
        let step = trace.threads[0]
            .nvtx
            .text
            .iter()
            .any(|&id| trace.strings.get(id) == "denoising_step_3");
        assert!(step, "{flavour:?}: NVTX text readable");
    }
    let (path, truth) = generate(dir.path(), Flavour::Nsys2024, NcclStream::Separate);
    let (trace, report) = load::load(&path).unwrap();
    check_against_truth(&trace, &report, &truth);
    assert!(
        trace.devices.iter().all(|d| d.streams.len() == 3),
        "compute, NCCL and copy streams"
    );
}

#[test]
fn generator_truth_is_self_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let (_, truth) = generate(dir.path(), Flavour::Nsys2024, NcclStream::Same);
    for d in &truth.devices {
        let b = &d.breakdown_ns;
        let sum = b.compute_only + b.nccl_only + b.overlap + b.memory_only + b.idle;
        assert_eq!(
            sum,
            d.window_ns[1] - d.window_ns[0],
            "breakdown adds up to the window"
        );
        assert_eq!(b.overlap, 0, "same-stream NCCL cannot overlap");
        assert_eq!(d.same_stream.nccl_pct, 100.0);
    }
    let causes: std::collections::BTreeSet<&str> =
        truth.gaps.iter().map(|g| g.cause.as_str()).collect();
    assert_eq!(
        causes,
        ["after_sync", "dependency", "host_bound", "host_sync"]
            .into_iter()
            .collect()
    );
    let it = &truth.iterations;
    for d in &it.per_device {
        assert_eq!(d.slowest_index, it.slowest_index, "device {}", d.device);
    }
    // On a stream of its own an all-to-all overlaps nothing (the next kernel reads its
    // result); a gradient all-reduce, read only after the next one, overlaps compute.
    let (_, separate) = generate(dir.path(), Flavour::Nsys2024, NcclStream::Separate);
    assert!(
        separate.devices.iter().all(|d| d.breakdown_ns.overlap == 0),
        "an all-to-all's result is the next kernel's input"
    );
    let gradient = synth::generate(
        &dir.path().join("gradient.sqlite"),
        SynthOptions {
            nccl_stream: NcclStream::Separate,
            gradient_all_reduce: true,
            ..SynthOptions::new(Preset::Tiny)
        },
    )
    .unwrap();
    assert!(
        gradient.devices.iter().all(|d| d.breakdown_ns.overlap > 0),
        "gradient all-reduces on their own stream overlap compute"
    );
}

/// The GUI's first timeline: the GPU side arrives, sorted and complete, before the CPU side
/// (API calls, NVTX) is read.
#[test]
fn a_staged_load_hands_over_the_gpu_side_first() {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("staged.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let first: Mutex<Option<nsys_explorer_core::trace::Trace>> = Mutex::new(None);
    let on_gpu = |t: nsys_explorer_core::trace::Trace| *first.lock().unwrap() = Some(t);
    let (full, _) =
        load::load_staged(&path, &|_| {}, &AtomicBool::new(false), Some(&on_gpu)).unwrap();
    let gpu = first.into_inner().unwrap().expect("GPU side handed over");
    assert!(gpu.threads.is_empty(), "before the CPU side");
    assert_eq!(gpu.kernel_count(), full.kernel_count());
    assert_eq!(gpu.devices.len(), full.devices.len());
    for (a, b) in gpu.devices.iter().zip(&full.devices) {
        for (s, t) in a.streams.iter().zip(&b.streams) {
            assert_eq!(s.ops.start, t.ops.start);
            assert_eq!(s.ops.name, t.ops.name);
        }
    }
}

/// An export without `ENUM_CUDA_MEMCPY_OPER` (nsys 2022.2, and every enum before 2021):
/// copy kinds are named by the values nsys uses, unified-memory copies apart, and the load
/// report says so.
#[test]
fn copies_of_an_export_without_enum_tables_are_named_by_the_built_in_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-enum.sqlite");
    nsys_explorer_core::synth::generate(
        &path,
        nsys_explorer_core::synth::SynthOptions::new(nsys_explorer_core::synth::Preset::Tiny),
    )
    .unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE ENUM_CUDA_MEMCPY_OPER;
             UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 11 WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 LIMIT 3);
             UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 12 WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2 LIMIT 2);",
        )
        .unwrap();
    }
    let (trace, report) = load::load(&path).unwrap();
    let stats = nsys_explorer_core::analysis::memory::memory_by_kind(&trace, None);
    let count = |kind: &str| -> usize {
        stats
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.count)
            .sum()
    };
    assert_eq!(count("UVM HtoD"), 3, "{stats:?}");
    assert_eq!(count("UVM DtoH"), 2, "{stats:?}");
    assert!(count("HtoD") > 0 && count("DtoH") > 0);
    assert_eq!(count("unknown"), 0);
    assert!(
        report
            .missing_tables
            .iter()
            .any(|t| t == "ENUM_CUDA_MEMCPY_OPER")
    );
    assert!(report.missing_effects["ENUM_CUDA_MEMCPY_OPER"].contains("values nsys uses"));
}

/// Kernels of `trace` (every `step`-th), with the launch configuration plain SQL gives for
/// the row of that device, start and end (several rows may match: any of theirs will do).
fn kernels_with_sql_configs(
    trace: &Trace,
    path: &Path,
    step: usize,
) -> Vec<(usize, usize, usize, Vec<String>)> {
    let conn = common::open_plain(path);
    let mut stmt = conn
        .prepare(
            "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, \
             staticSharedMemory, dynamicSharedMemory, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds s ON s.id = k.demangledName WHERE deviceId = ?1 AND start = ?2 AND end = ?3",
        )
        .unwrap();
    let mut out = Vec::new();
    for (d, dev) in trace.devices.iter().enumerate() {
        for (s, stream) in dev.streams.iter().enumerate() {
            let ops = &stream.ops;
            for i in (0..ops.len()).step_by(step) {
                if !ops.kind[i].is_kernel() {
                    continue;
                }
                let rows = stmt
                    .query_map((dev.id.0, ops.start[i], ops.end[i]), |r| {
                        Ok(format!(
                            "grid {:?} block {:?} regs {} shared {} {} {}",
                            [r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?],
                            [r.get::<_, i64>(3)?, r.get(4)?, r.get(5)?],
                            r.get::<_, i64>(6)?,
                            r.get::<_, i64>(7)?,
                            r.get::<_, i64>(8)?,
                            r.get::<_, String>(9)?
                        ))
                    })
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
                out.push((d, s, i, rows));
            }
        }
    }
    out
}

fn config_text(c: &nsys_explorer_core::trace::LaunchConfig) -> String {
    format!(
        "grid {:?} block {:?} regs {} shared {} {} {}",
        c.grid.map(i64::from),
        c.block.map(i64::from),
        c.registers_per_thread,
        c.static_shared_bytes,
        c.dynamic_shared_bytes,
        c.demangled_name
    )
}

#[test]
fn a_kernels_launch_configuration_is_read_from_its_row_when_shown() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = common::real_fixtures();
    for flavour in [Flavour::Nsys2024, Flavour::Nsys2023] {
        files.push(generate(dir.path(), flavour, NcclStream::Same).0);
    }
    for path in files {
        let (trace, _) = load::load(&path).unwrap();
        let before = common::snapshot(&path);
        let step = (trace.gpu_op_count() / 300).max(1);
        let expected = kernels_with_sql_configs(&trace, &path, step);
        assert!(
            expected.len() >= trace.kernel_count().min(100),
            "{}: {} kernels sampled",
            path.display(),
            expected.len()
        );
        for (d, s, i, sql) in expected {
            let dev = &trace.devices[d];
            let ops = &dev.streams[s].ops;
            let config = load::launch_config(&trace, dev, ops, i)
                .expect("a kernel of an export has one")
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                sql.contains(&config_text(&config)),
                "{}: kernel {i} of GPU {} read {:?}, SQL gives {sql:?}",
                path.display(),
                dev.id,
                config_text(&config)
            );
        }
        assert_eq!(
            common::snapshot(&path),
            before,
            "{} changed",
            path.display()
        );
    }
}

#[test]
fn a_launch_configuration_of_a_file_changed_since_it_was_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sqlite");
    synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let mut other = SynthOptions::new(Preset::Tiny);
    other.seed += 1;
    std::fs::remove_file(&path).unwrap();
    synth::generate(&path, other).unwrap();
    let conn = common::open_plain(&path);
    let (mut refused, mut kept) = (0, 0);
    for dev in &trace.devices {
        for stream in &dev.streams {
            let ops = &stream.ops;
            for i in (0..ops.len()).step_by(13) {
                let Some(answer) = load::launch_config(&trace, dev, ops, i) else {
                    continue;
                };
                let now: Option<i64> = conn
                    .query_row(
                        "SELECT end - start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?1",
                        [ops.detail[i]],
                        |r| r.get(0),
                    )
                    .ok();
                match answer {
                    Err(why) => {
                        assert_ne!(now, Some(ops.duration(i)), "refused a row that matches");
                        assert!(why.contains("changed"), "{why}");
                        refused += 1;
                    }
                    Ok(_) => {
                        assert_eq!(now, Some(ops.duration(i)), "answered from another kernel");
                        kept += 1;
                    }
                }
            }
        }
    }
    assert!(refused > 0, "{refused} refused, {kept} answered");
    std::fs::remove_file(&path).unwrap();
    let dev = trace
        .devices
        .iter()
        .find(|d| d.count_of(OpKind::Compute) > 0)
        .unwrap();
    let (s, i) = dev
        .streams
        .iter()
        .enumerate()
        .find_map(|(s, st)| {
            (0..st.ops.len())
                .find(|&i| st.ops.kind[i].is_kernel())
                .map(|i| (s, i))
        })
        .unwrap();
    let gone = load::launch_config(&trace, dev, &dev.streams[s].ops, i).unwrap();
    assert!(
        gone.is_err(),
        "a deleted file gives a reason, not a configuration"
    );
}

/// The big tables read straight from the file's pages give the model SQL gives: every real
/// export, and generated ones of both schema flavours (NVTX text inline or by id).
#[test]
fn the_page_reader_gives_the_model_sql_gives() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = common::real_fixtures();
    for flavour in [Flavour::Nsys2024, Flavour::Nsys2023] {
        files.push(generate(dir.path(), flavour, NcclStream::Separate).0);
    }
    for path in files {
        let name = path.display();
        let (pages, pages_report) = load::load(&path).unwrap();
        let (sql, sql_report) = load::load_through_sqlite(&path).unwrap();
        // Every big table the export has went through the page reader.
        let big: Vec<&String> = (pages_report.tables.keys())
            .filter(|t| {
                [
                    KERNEL,
                    MEMCPY,
                    MEMSET,
                    RUNTIME,
                    NVTX,
                    load::OSRT,
                    load::stacks::SAMPLES,
                    load::stacks::SAMPLING_CALLCHAINS,
                    load::stacks::OSRT_CALLCHAINS,
                ]
                .contains(&t.as_str())
            })
            .collect();
        assert!(!big.is_empty(), "{name}");
        let mut read = pages_report.read_from_pages.iter().collect::<Vec<_>>();
        read.sort();
        assert_eq!(read, big, "{name}");
        assert!(sql_report.read_from_pages.is_empty(), "{name}");
        assert!(pages_report.tables.values().sum::<u64>() > 0, "{name}");
        for (what, a, b) in [
            (
                "devices",
                format!("{:?}", pages.devices),
                format!("{:?}", sql.devices),
            ),
            (
                "threads",
                format!("{:?}", pages.threads),
                format!("{:?}", sql.threads),
            ),
            (
                "domains",
                format!("{:?}", pages.nvtx_domains),
                format!("{:?}", sql.nvtx_domains),
            ),
            (
                "stacks",
                format!("{:?}", pages.stacks().stacks),
                format!("{:?}", sql.stacks().stacks),
            ),
            (
                "samples",
                format!("{:?}", pages.stacks().samples),
                format!("{:?}", sql.stacks().samples),
            ),
            (
                "payloads",
                format!("{:?}", pages.nccl_payloads),
                format!("{:?}", sql.nccl_payloads),
            ),
            (
                "rows",
                format!("{:?}", pages_report.tables),
                format!("{:?}", sql_report.tables),
            ),
            (
                "skipped",
                format!("{:?}", pages_report.skipped_rows),
                format!("{:?}", sql_report.skipped_rows),
            ),
        ] {
            assert!(a == b, "{name}: {what} differ");
        }
        assert_eq!(pages.strings.len(), sql.strings.len(), "{name}");
        for id in 0..sql.strings.len() as u32 {
            assert_eq!(
                pages.strings.get(id),
                sql.strings.get(id),
                "{name}: string {id}"
            );
        }
    }
}
