//! CUDA graphs, both ways nsys records them: the generator's run whose blocks replay as
//! graphs, written at graph level (one row per launch, nsys's default) and at node level
//! (every node's kernel), read against plain SQL over the same file.

use std::path::Path;

use nsys_explorer_core::analysis::graphs::cuda_graphs;
use nsys_explorer_core::critical_path::Graph;
use nsys_explorer_core::load;
use nsys_explorer_core::overview::{Options, overview};
use nsys_explorer_core::synth::{self, GraphTrace, GroundTruth, Preset, SynthOptions};
use nsys_explorer_core::trace::{OpKind, Trace};
use nsys_explorer_core::whatif::{Change, measured_spans, predicted_spans};

fn generated(dir: &Path, mode: Option<GraphTrace>) -> (std::path::PathBuf, Trace, GroundTruth) {
    let path = dir.join(format!("{mode:?}.sqlite"));
    let options = SynthOptions {
        cuda_graphs: mode,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let trace = load::load(&path).unwrap().0;
    (path, trace, truth)
}

/// Per device, from SQL alone: (start, end, class) of every op, class 0 compute (kernels
/// and graph executions), 1 NCCL, 2 memory.
fn ops_from_sql(path: &Path) -> std::collections::BTreeMap<i64, Vec<(i64, i64, u8)>> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let has = |t: &str| {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            > 0
    };
    let mut sql = vec![
        "SELECT deviceId, start, end, CASE WHEN s.value LIKE '%nccl%' THEN 1 ELSE 0 END FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName".to_string(),
        "SELECT deviceId, start, end, 2 FROM CUPTI_ACTIVITY_KIND_MEMCPY".to_string(),
        "SELECT deviceId, start, end, 2 FROM CUPTI_ACTIVITY_KIND_MEMSET".to_string(),
    ];
    if has("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") {
        sql.push("SELECT deviceId, start, end, 0 FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE".into());
    }
    let mut out: std::collections::BTreeMap<i64, Vec<(i64, i64, u8)>> = Default::default();
    let mut stmt = conn.prepare(&sql.join(" UNION ALL ")).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get::<_, u8>(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (d, s, e, c) = row.unwrap();
        out.entry(d).or_default().push((s, e, c));
    }
    out
}

/// (compute only, NCCL only, overlap, memory only, idle) over the window from the first
/// compute op's start to the last one's end.
fn breakdown_of(ops: &[(i64, i64, u8)]) -> [i64; 5] {
    let compute = ops.iter().filter(|o| o.2 < 2);
    let lo = compute.clone().map(|o| o.0).min().unwrap();
    let hi = compute.map(|o| o.1).max().unwrap();
    let mut events: Vec<(i64, i32, u8)> = Vec::new();
    for &(s, e, c) in ops {
        let (s, e) = (s.max(lo), e.min(hi));
        if e > s {
            events.push((s, 1, c));
            events.push((e, -1, c));
        }
    }
    events.sort();
    let mut open = [0i32; 3];
    let mut out = [0i64; 5];
    let mut t = lo;
    for (at, delta, c) in events {
        let state = match (open[0] > 0, open[1] > 0, open[2] > 0) {
            (true, false, _) => 0,
            (false, true, _) => 1,
            (true, true, _) => 2,
            (false, false, true) => 3,
            _ => 4,
        };
        out[state] += at - t;
        t = at;
        open[c as usize] += delta;
    }
    out[4] += hi - t;
    out
}

#[test]
fn graph_executions_are_busy_compute_whichever_way_nsys_records_them() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [GraphTrace::Graph, GraphTrace::Node] {
        let (path, trace, truth) = generated(dir.path(), Some(mode));
        let o = overview(&trace, &Options::default());
        let sql = ops_from_sql(&path);
        for s in &o.devices {
            let b = s.breakdown;
            let got = [
                b.compute_only,
                b.nccl_only,
                b.overlap,
                b.memory_only,
                b.idle,
            ];
            let want = breakdown_of(&sql[&(s.device.0 as i64)]);
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() <= 1_000,
                    "{mode:?} {}: {got:?} against {want:?}",
                    s.device
                );
            }
        }
        // No gap inside an execution.
        for g in &o.gaps {
            let device = trace.device(g.device_id()).unwrap();
            for stream in &device.streams {
                let ops = &stream.ops;
                assert!(
                    (0..ops.len()).all(|i| ops.kind[i] != OpKind::Graph
                        || ops.end[i] <= g.start_ns
                        || ops.start[i] >= g.end_ns()),
                    "{mode:?}: a gap at {} inside a graph execution",
                    g.start_ns
                );
            }
        }
        let graphs = cuda_graphs(&trace).expect("graph launches");
        let t = truth.cuda_graphs.as_ref().unwrap();
        assert_eq!(graphs.launches, t.launches, "{mode:?}");
        match mode {
            GraphTrace::Graph => {
                assert_eq!(graphs.trace_level, "graph");
                assert_eq!(
                    graphs.launches,
                    truth.tables["CUPTI_ACTIVITY_KIND_GRAPH_TRACE"]
                );
                assert!(
                    graphs
                        .note
                        .as_deref()
                        .unwrap()
                        .contains("--cuda-graph-trace=node")
                );
                // The same graph id on every rank is one row (the same program).
                assert_eq!(graphs.graphs.len(), t.graphs as usize);
            }
            GraphTrace::Node => {
                assert_eq!(graphs.trace_level, "node");
                assert_eq!(graphs.kernels, t.kernels);
                // Each graph kernel's node, read from the file.
                let nodes: usize = trace.devices.iter().map(|d| d.graph_nodes.len()).sum();
                assert_eq!(nodes as u64, t.kernels);
                assert!(graphs.graphs.iter().all(|g| g.first_node.is_some()));
                let table = nsys_explorer_core::tables::ops(&trace, true);
                let in_graphs = match table.columns.iter().find(|c| c.0 == "graph_node") {
                    Some((_, nsys_explorer_core::tables::Column::I64(v))) => {
                        v.iter().filter(|&&n| n >= 0).count()
                    }
                    _ => panic!("a graph_node column"),
                };
                assert_eq!(in_graphs as u64, t.kernels);
                assert!(graphs.note.is_none());
                // The ffn graph: 5 kernels a launch.
                assert!(
                    graphs
                        .graphs
                        .iter()
                        .any(|g| g.kernels_per_launch == Some(5.0)
                            && g.nvtx.as_deref() == Some("ffn")),
                    "{:?}",
                    graphs.graphs
                );
            }
        }
        // Every kernel counted at node level: as many as the run without graphs.
        if mode == GraphTrace::Node {
            let (_, plain, _) = generated(dir.path(), None);
            let kernels = |t: &Trace| -> usize {
                t.devices
                    .iter()
                    .map(|d| d.count_of(OpKind::Compute) + d.count_of(OpKind::Nccl))
                    .sum()
            };
            assert_eq!(kernels(&trace), kernels(&plain));
        }
        // The critical path and the replay run over them.
        let k = o.iterations.slowest_index.expect("iterations");
        let path = Graph::new(&trace).path(&o.iterations, k).expect("a path");
        assert!(!path.segments.is_empty());
        let change = Change {
            remove_sync: vec!["aten::item".into()],
            ..Default::default()
        };
        let saved = measured_spans(&trace)
            .iter()
            .zip(predicted_spans(&trace, &change, None))
            .map(|(m, p)| m - p)
            .max()
            .unwrap();
        assert!(
            saved > 0,
            "{mode:?}: removing the step sync saves something"
        );
    }
}

/// A graph execution's launch is its `cudaGraphLaunch` call; at node level all of one
/// launch's kernels link to that one call.
#[test]
fn graph_launches_link_to_their_call() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [GraphTrace::Graph, GraphTrace::Node] {
        let (_, trace, _) = generated(dir.path(), Some(mode));
        let mut per_call: std::collections::HashMap<(u32, u32), usize> = Default::default();
        for d in &trace.devices {
            for s in &d.streams {
                let ops = &s.ops;
                for i in 0..ops.len() {
                    if ops.launch_call[i] == u32::MAX {
                        continue;
                    }
                    let api = &trace.threads[ops.launch_thread[i] as usize].api;
                    let name = trace.strings.get(api.name[ops.launch_call[i] as usize]);
                    if ops.kind[i] == OpKind::Graph {
                        assert!(name.contains("GraphLaunch"), "{name}");
                    }
                    if name.contains("GraphLaunch") {
                        *per_call
                            .entry((ops.launch_thread[i], ops.launch_call[i]))
                            .or_default() += 1;
                    }
                }
            }
        }
        let most = per_call.values().copied().max().unwrap();
        assert_eq!(
            most,
            if mode == GraphTrace::Graph { 1 } else { 5 },
            "{mode:?}: ops per launch call"
        );
    }
}

/// At node level a graph kernel names its node, and following the node back to its capture
/// gives the op it was captured in, which its replays no longer show.
#[test]
fn a_graph_kernel_names_the_op_it_was_captured_in() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace, _) = generated(dir.path(), Some(GraphTrace::Node));
    let mut checked = 0;
    for d in &trace.devices {
        for s in &d.streams {
            let ops = &s.ops;
            for i in 0..ops.len() {
                if ops.launch_call[i] == u32::MAX {
                    continue;
                }
                let api = &trace.threads[ops.launch_thread[i] as usize].api;
                if !trace
                    .strings
                    .get(api.name[ops.launch_call[i] as usize])
                    .contains("GraphLaunch")
                {
                    continue;
                }
                let config = load::launch_config(&trace, d, ops, i).unwrap().unwrap();
                assert!(config.graph_node.is_some());
                let path = load::captured_nvtx(&trace, &config);
                let op = path.last().expect("captured inside NVTX ranges");
                assert!(op.starts_with("aten::"), "{path:?}");
                let name = trace.strings.get(ops.name[i]);
                if name.contains("flash") {
                    assert_eq!(op, "aten::_flash_attention_forward");
                }
                checked += 1;
                if checked > 40 {
                    return;
                }
            }
        }
    }
    panic!("only {checked} graph kernels");
}

/// Issue 67, bug 4: the whole attention captured as one graph at node level, its two
/// all-to-alls inside and a device sync after each launch. One launch call releases both
/// collectives, so the one before a collective ended its call after this one's began: the
/// drill-down of every iteration, the critical path and the findings read it without a
/// panic, and what a collective's thread did "since the one before" is never negative.
#[test]
fn a_graph_that_holds_its_collectives_is_drilled_into_like_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attention.sqlite");
    let options = SynthOptions {
        cuda_graphs: Some(GraphTrace::Node),
        graph_attention: true,
        sync_after_collective: true,
        ..SynthOptions::new(Preset::Tiny)
    };
    let truth = synth::generate(&path, options).unwrap();
    let trace = load::load(&path).unwrap().0;
    // Collectives are graph nodes: two of them launched by one call.
    let mut launches = std::collections::HashMap::new();
    for s in trace.devices.iter().flat_map(|d| &d.streams) {
        for i in (0..s.ops.len()).filter(|&i| s.ops.kind[i] == OpKind::Nccl) {
            *launches
                .entry((s.ops.launch_thread[i], s.ops.launch_call[i]))
                .or_insert(0) += 1;
        }
    }
    assert!(
        launches.values().any(|&n| n == 2),
        "the generator put both all-to-alls in one graph launch"
    );
    let o = overview(&trace, &Options::default());
    let cpu = nsys_explorer_core::analysis::gaps::CpuIndex::new(&trace);
    for k in 0..o.iterations.count() {
        let d = nsys_explorer_core::analysis::drilldown::drilldown(
            &trace,
            &cpu,
            &o.iterations,
            k,
            1_000,
            5,
        );
        for c in &d.collectives {
            let a = &c.activity;
            assert!(a.since_previous_collective_ns >= 0, "iteration {k}: {a:?}");
            assert!(
                a.cpu_ns >= 0 && a.longest_call_ns >= 0,
                "iteration {k}: {a:?}"
            );
        }
    }
    assert_eq!(
        o.drilldown
            .as_ref()
            .and_then(|d| d.straggler_device)
            .map(|d| d.0),
        Some(truth.iterations.straggler_device),
        "the straggler found through the graphs"
    );
    let graph = Graph::new(&trace);
    assert!(
        graph
            .path(&o.iterations, truth.iterations.slowest_index)
            .is_some()
    );
    let found = nsys_explorer_core::findings::findings(&trace, &o);
    assert!(!found.is_empty());
}
