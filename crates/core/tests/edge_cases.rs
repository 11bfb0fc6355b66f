//! Hand-built small traces whose every number is worked out by hand in the comments:
//! concurrency across streams, memcpys under kernels, NVTX nesting and start/end ranges,
//! correlationIds repeated across processes, windows cutting through kernels, a device
//! without kernels, and exports without NVTX.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nsys_explorer_core::analysis::{self, Window, gaps, iterations::Source};
use nsys_explorer_core::load;
use nsys_explorer_core::synth::{Flavour, empty_export, global_pid};
use nsys_explorer_core::trace::{DeviceId, RangeKind, Trace};
use rusqlite::{Connection, params};

/// Rows of a hand-built export; strings are interned into `StringIds` on `finish`.
struct Builder {
    conn: Connection,
    strings: HashMap<String, i64>,
    correlation: i64,
}

impl Builder {
    fn new(path: &Path) -> Self {
        let conn = empty_export(path, Flavour::Nsys2024).unwrap();
        Self {
            conn,
            strings: HashMap::new(),
            correlation: 0,
        }
    }

    fn id(&mut self, s: &str) -> i64 {
        let next = self.strings.len() as i64 + 1;
        *self.strings.entry(s.to_string()).or_insert(next)
    }

    fn tid(pid: u32, tid: u32) -> i64 {
        global_pid(pid) | tid as i64
    }

    /// A launch call on (pid, tid) at [call_start, call_start + 5) and its kernel.
    fn kernel(
        &mut self,
        pid: u32,
        device: u32,
        stream: u32,
        name: &str,
        call_start: i64,
        span: (i64, i64),
    ) {
        self.correlation += 1;
        self.kernel_with_corr(
            pid,
            device,
            stream,
            name,
            call_start,
            span,
            self.correlation,
            "cudaLaunchKernel_v7000",
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn kernel_with_corr(
        &mut self,
        pid: u32,
        device: u32,
        stream: u32,
        name: &str,
        call_start: i64,
        span: (i64, i64),
        corr: i64,
        api: &str,
    ) {
        let name_id = self.id(name);
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?7, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, ?5)",
                params![span.0, span.1, device, stream, corr, global_pid(pid), name_id],
            )
            .unwrap();
        self.api(pid, pid, api, call_start, call_start + 5, corr);
    }

    fn api(&mut self, pid: u32, tid: u32, name: &str, start: i64, end: i64, corr: i64) {
        let name_id = self.id(name);
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?1, ?2, 0, ?3, ?4, ?5, 0)",
                params![start, end, Self::tid(pid, tid), corr, name_id],
            )
            .unwrap();
    }

    fn memcpy(&mut self, pid: u32, device: u32, stream: u32, span: (i64, i64)) {
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind) VALUES (?1, ?2, ?3, 1, ?4, 0, ?5, 4096, 1)",
                params![span.0, span.1, device, stream, global_pid(pid)],
            )
            .unwrap();
    }

    fn memset(&mut self, pid: u32, device: u32, span: (i64, i64)) {
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, memKind) VALUES (?1, ?2, ?3, 1, 9, 0, ?4, 0, 64, 1)",
                params![span.0, span.1, device, global_pid(pid)],
            )
            .unwrap();
    }

    /// Push/pop (eventType 59) or start/end (60, ending on `end_tid`).
    fn nvtx(&mut self, pid: u32, tid: u32, end_tid: Option<u32>, text: &str, span: (i64, i64)) {
        let event_type = if end_tid.is_some() { 60 } else { 59 };
        self.conn
            .execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, domainId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)",
                params![span.0, span.1, event_type, text, Self::tid(pid, tid), end_tid.map(|t| Self::tid(pid, t))],
            )
            .unwrap();
    }

    fn finish(self) {
        for (s, id) in &self.strings {
            self.conn
                .execute(
                    "INSERT INTO StringIds (id, value) VALUES (?1, ?2)",
                    params![id, s],
                )
                .unwrap();
        }
    }
}

fn built(dir: &Path, name: &str, build: impl FnOnce(&mut Builder)) -> (PathBuf, Trace) {
    let path = dir.join(name);
    let mut b = Builder::new(&path);
    build(&mut b);
    b.finish();
    let (trace, _) = load::load(&path).unwrap();
    (path, trace)
}

/// Device 0 of pid 100:
///   stream 1 compute  [0, 100)      stream 2 compute [50, 150)
///   stream 3 NCCL     [120, 200)    stream 4 memcpy  [190, 260)
///   stream 1 compute  [300, 400)
/// compute only [0,120) + [300,400) = 220, overlap [120,150) = 30, NCCL only [150,200) = 50
/// (the memcpy under the NCCL kernel does not count), memory only [200,260) = 60,
/// idle [260,300) = 40.
fn streams_trace(b: &mut Builder) {
    b.nvtx(100, 100, None, "step_1", (0, 1000));
    b.nvtx(100, 100, None, "inner", (5, 40));
    b.nvtx(100, 100, Some(101), "io_request", (20, 700));
    b.kernel(100, 0, 1, "gemm", 10, (0, 100));
    b.kernel(100, 0, 2, "softmax", 30, (50, 150));
    b.kernel(
        100,
        0,
        3,
        "ncclDevKernel_AllReduce_Sum_bf16",
        60,
        (120, 200),
    );
    b.memcpy(100, 0, 4, (190, 260));
    b.kernel(100, 0, 1, "gemm", 280, (300, 400));
    // Device 2 has a memset and no kernel.
    b.memset(100, 2, (50, 60));
}

#[test]
fn concurrent_streams_and_a_memcpy_under_a_kernel_break_down_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "streams.sqlite", streams_trace);
    let device = trace.device(DeviceId(0)).unwrap();
    let window = analysis::intervals::device_window(device).unwrap();
    assert_eq!(window, Window::new(0, 400));
    let b = analysis::breakdown(device, window);
    assert_eq!(
        (
            b.compute_only,
            b.overlap,
            b.nccl_only,
            b.memory_only,
            b.idle
        ),
        (220, 30, 50, 60, 40)
    );
    // Same stream: all NCCL time on stream 3, which has no compute.
    let ss = analysis::same_stream(device, window).unwrap();
    assert_eq!((ss.stream, ss.nccl_pct, ss.compute_pct), (3, 100.0, 0.0));

    let cpu = gaps::CpuIndex::new(&trace);
    let found = gaps::gaps(&trace, &cpu, device, window, 1);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].start_ns, found[0].duration_ns), (260, 40));
    let detail = analysis::recurring::describe(&trace, &found[0], 3);
    assert_eq!(detail.before_name, "Memcpy HtoD");
    assert_eq!(detail.after_name, "gemm");
    // The last gemm was launched at 280, after the memcpy ended at 260, with no sync.
    assert_eq!(found[0].cause, gaps::Cause::HostBound);
}

#[test]
fn a_window_cutting_through_kernels_counts_only_the_inside() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "cut.sqlite", streams_trace);
    let device = trace.device(DeviceId(0)).unwrap();
    // [50, 130): compute only [50,120) = 70, overlap [120,130) = 10.
    let b = analysis::breakdown(device, Window::new(50, 130));
    assert_eq!(
        (
            b.compute_only,
            b.overlap,
            b.nccl_only,
            b.memory_only,
            b.idle
        ),
        (70, 10, 0, 0, 0)
    );
    // [250, 350): memory only [250,260), idle [260,300), compute [300,350).
    let b = analysis::breakdown(device, Window::new(250, 350));
    assert_eq!((b.memory_only, b.idle, b.compute_only), (10, 40, 50));
    let cpu = gaps::CpuIndex::new(&trace);
    let inside = gaps::gaps(&trace, &cpu, device, Window::new(270, 350), 1);
    assert_eq!(
        (inside[0].start_ns, inside[0].duration_ns),
        (270, 30),
        "a gap clipped to the window"
    );
}

#[test]
fn nested_and_start_end_ranges_give_the_launch_path() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "nvtx.sqlite", streams_trace);
    let device = trace.device(DeviceId(0)).unwrap();
    let thread = &trace.threads[trace.thread_index(Builder::tid(100, 100)).unwrap()];
    let kinds: Vec<RangeKind> = thread.nvtx.kind.clone();
    assert_eq!(
        kinds.iter().filter(|k| **k == RangeKind::StartEnd).count(),
        1,
        "the start/end range is kept"
    );
    // The first gemm was launched at 10, inside step_1 > inner; the start/end range that
    // ends on another thread is not part of a push/pop path.
    let gemm = gaps::OpRef {
        stream: device.streams.iter().position(|s| s.id == 1).unwrap() as u32,
        op: 0,
    };
    let path: Vec<String> = gaps::launch_nvtx_path(&trace, device, gemm)
        .into_iter()
        .map(|id| trace.strings.get(id).into_owned())
        .collect();
    assert_eq!(path, ["step_1", "inner"]);
    let second = gaps::OpRef { op: 1, ..gemm };
    let path: Vec<String> = gaps::launch_nvtx_path(&trace, device, second)
        .into_iter()
        .map(|id| trace.strings.get(id).into_owned())
        .collect();
    assert_eq!(path, ["step_1"]);
}

#[test]
fn a_device_with_no_kernels_is_listed_but_not_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "nokernels.sqlite", streams_trace);
    let device = trace.device(DeviceId(2)).expect("device 2 has a memset");
    assert!(analysis::intervals::device_window(device).is_none());
    let overview = nsys_explorer_core::overview::overview(
        &trace,
        &nsys_explorer_core::overview::Options::default(),
    );
    assert!(overview.devices.iter().all(|d| d.device != DeviceId(2)));
    assert!(overview.devices.iter().any(|d| d.device == DeviceId(0)));
}

#[test]
fn correlation_ids_repeated_across_processes_link_to_their_own_process() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "corr.sqlite", |b| {
        // Both processes use correlationId 7; their launch calls have different names.
        b.kernel_with_corr(100, 0, 7, "gemm", 10, (20, 50), 7, "cudaLaunchKernel_v7000");
        b.kernel_with_corr(200, 1, 7, "gemm", 12, (22, 52), 7, "cuLaunchKernelEx");
    });
    for (device, expected) in [(0, "cudaLaunchKernel_v7000"), (1, "cuLaunchKernelEx")] {
        let ops = &trace.device(DeviceId(device)).unwrap().streams[0].ops;
        let thread = &trace.threads[ops.launch_thread[0] as usize];
        assert_eq!(thread.pid, if device == 0 { 100 } else { 200 });
        assert_eq!(
            trace
                .strings
                .get(thread.api.name[ops.launch_call[0] as usize]),
            expected
        );
    }
}

/// Four steps of one kernel each, every step ending in a synchronize.
fn steps_without_nvtx(b: &mut Builder, with_syncs: bool) {
    for step in 0..4i64 {
        let t = step * 1000;
        b.kernel(100, 0, 7, "gemm", t + 10, (t + 20, t + 500 + step * 10));
        if with_syncs {
            b.api(
                100,
                100,
                "cudaStreamSynchronize_v3020",
                t + 30,
                t + 510 + step * 10,
                0,
            );
        }
    }
}

#[test]
fn without_nvtx_iterations_are_heuristic_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "sync.sqlite", |b| steps_without_nvtx(b, true));
    let it = analysis::iterations::iterations(&trace, None);
    assert_eq!(it.source, Source::Heuristic);
    assert!(it.heuristic);
    // Syncs end at 510, 1520, 2530, 3540: three iterations between them, holding the
    // kernels of steps 1, 2 and 3 (launched at 1010, 2010, 3010).
    let d = &it.per_device[0];
    assert_eq!(d.durations_ns, vec![1510 - 1020, 2520 - 2020, 3530 - 3020]);

    let (_, trace) = built(dir.path(), "nothing.sqlite", |b| {
        steps_without_nvtx(b, false)
    });
    let it = analysis::iterations::iterations(&trace, None);
    assert_eq!(it.source, Source::None);
    assert!(it.marker.is_none() && it.per_device.is_empty());
}

#[test]
fn marker_detection_prefers_the_group_holding_most_launches() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "marker.sqlite", |b| {
        for step in 0..4i64 {
            let t = step * 1000;
            b.nvtx(100, 100, None, &format!("step_{step}"), (t, t + 900));
            b.nvtx(100, 100, None, "forward", (t + 5, t + 100));
            b.kernel(100, 0, 7, "gemm", t + 10, (t + 20, t + 300));
            b.kernel(100, 0, 7, "gelu", t + 200, (t + 300, t + 400));
        }
        // Two ranges only: not an iteration marker even though it holds everything.
        b.nvtx(100, 100, None, "phase_1", (0, 1999));
        b.nvtx(100, 100, None, "phase_2", (2000, 4000));
    });
    let it = analysis::iterations::iterations(&trace, None);
    assert_eq!(it.marker.as_deref(), Some("step_#"));
    assert_eq!(it.per_device[0].durations_ns, vec![380; 4]);
    assert_eq!(it.per_device[0].cpu_durations_ns, vec![900; 4]);
    let given = analysis::iterations::iterations(&trace, Some("forward"));
    assert_eq!(given.source, Source::Given);
    assert_eq!(
        given.per_device[0].durations_ns,
        vec![280; 4],
        "only the gemm is launched inside `forward`"
    );
}

#[test]
fn steady_state_finds_warm_up_and_slow_iterations() {
    use analysis::iterations::steady_state;
    let ms = 1_000_000;
    let d = [200, 150, 100, 101, 99, 100, 180, 100, 102].map(|x| x * ms / 10);
    let s = steady_state(&d);
    assert_eq!(
        s.warmup, 2,
        "20 and 15 ms are more than 10 % off the median (10.1 ms)"
    );
    assert_eq!(s.median_ns, 10 * ms);
    assert_eq!(
        s.slow,
        vec![6],
        "18 ms is a robust outlier (MAD-based z-score > 3)"
    );
    assert_eq!(s.slowest, Some(6));
    // The same shape in microseconds is not slow: less than 1 ms over the median.
    let us = d.map(|x| x / 1_000);
    assert!(steady_state(&us).slow.is_empty());
}

/// Issue 67, bug 7: DLProf records NVTX as one range an operator whose text is a Python
/// dict (`{'traceMarker': [N], 'funcStack': 'file.py:LINE'}`: the ops of one file one template), and nothing else. No such
/// range is an iteration: the iterations come from the syncs, as without NVTX; neither the
/// records' shape nor a 21 ms attention kernel alone in its range makes one a step.
#[test]
fn per_operator_records_are_never_an_iteration_marker() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dlprof.sqlite");
    let options = nsys_explorer_core::synth::SynthOptions {
        dlprof_markers: true,
        ..nsys_explorer_core::synth::SynthOptions::new(nsys_explorer_core::synth::Preset::Tiny)
    };
    let truth = nsys_explorer_core::synth::generate(&path, options).unwrap();
    let trace = load::load(&path).unwrap().0;
    let texts: Vec<String> = trace
        .threads
        .iter()
        .flat_map(|t| {
            t.nvtx
                .text
                .iter()
                .map(|&s| trace.strings.get(s).into_owned())
        })
        .filter(|t| !t.starts_with("nccl"))
        .collect();
    assert!(texts.len() > 100 && texts.iter().all(|t| t.starts_with("{'traceMarker'")));
    let it = analysis::iterations::iterations(&trace, None);
    assert!(
        it.marker.as_deref().is_none_or(|m| !m.starts_with('{')),
        "{:?} taken for the step",
        it.marker
    );
    // What is left to go by are the syncs, as without NVTX.
    assert!(
        matches!(it.source, Source::None | Source::Heuristic),
        "{:?}",
        it.source
    );
    let _ = truth;
}

/// One operator's range around the run's longest kernel holds most of the GPU time but a
/// sliver of the launches: not a step, however well it covers the kernel time.
#[test]
fn an_operator_holding_most_gpu_time_but_few_launches_is_not_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = built(dir.path(), "big-op.sqlite", |b| {
        for step in 0..5i64 {
            let t = step * 1_000_000;
            // Ten short kernels launched outside any range, then the long one inside.
            for k in 0..10 {
                let at = t + k * 1_000;
                b.kernel(100, 0, 7, "elementwise", at, (at + 500, at + 900));
            }
            b.nvtx(100, 100, None, "big_op", (t + 20_000, t + 21_000));
            b.kernel(100, 0, 7, "gemm", t + 20_500, (t + 21_000, t + 900_000));
        }
    });
    let it = analysis::iterations::iterations(&trace, None);
    assert_ne!(it.marker.as_deref(), Some("big_op"), "{:?}", it.marker);
}
