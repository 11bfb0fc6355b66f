use super::*;
use crate::job::file::FileIdentity;
use crate::job::summary::{CollectiveColumns, GpuSummary};

/// A rank of ten collectives ending at 1,000·j + 900, two an iteration, each starting
/// 800 before its end but collective `late`'s, `lateness` later; with `extra` an
/// iteration before the first (a rank that synchronised once more).
fn rank(name: &str, late: Option<(usize, i64)>, extra: bool) -> RankSummary {
    let end: Vec<i64> = (0..10).map(|j| 1_000 * j + 900).collect();
    let start: Vec<i64> = end
        .iter()
        .enumerate()
        .map(|(j, e)| e - 800 + late.filter(|l| l.0 == j).map_or(0, |l| l.1))
        .collect();
    let n = end.len();
    let mut spans: Vec<Option<(i64, i64)>> = (0..5)
        .map(|k| Some((2_000 * k, 2_000 * k + 1_999)))
        .collect();
    if extra {
        spans.insert(0, Some((-3_000, -2_000)));
    }
    let durations = spans.iter().map(|w| w.map_or(0, |w| w.1 - w.0)).collect();
    RankSummary {
        source: FileIdentity {
            path: format!("/nowhere/{name}.sqlite").into(),
            size: 1,
            mtime_ns: 0,
            head_hash: 0,
        },
        tool_version: String::new(),
        nsys_version: None,
        utc_start_ns: Some(0),
        iteration_marker: None,
        gpus: vec![GpuSummary {
            device: 0,
            model: None,
            window_ns: (0, 10_000),
            breakdown_ns: Breakdown::default(),
            top_gaps: Vec::new(),
            iteration_spans: spans,
            iteration_durations_ns: durations,
            iteration_warmup: 0,
            iteration_median_ns: 1_999,
            collectives: CollectiveColumns {
                start,
                end,
                name: vec![0; n],
                comm: vec![NO_TEXT; n],
                seq: (0..n as u32).collect(),
                bytes: vec![0; n],
                call: vec![NO_TEXT; n],
                call_start: vec![0; n],
                call_ns: vec![0; n],
                cpu_start: vec![0; n],
                cpu_ns: vec![0; n],
                nvtx: vec![NO_TEXT; n],
                since_ns: vec![0; n],
            },
        }],
        strings: vec!["ncclDevKernel_AllReduce".into()],
    }
}

#[test]
fn a_rank_with_an_extra_leading_iteration_is_numbered_as_the_others() {
    let job = reduce(
        &[
            ("a".into(), rank("a", None, false)),
            ("b".into(), rank("b", Some((5, 500)), true)),
            ("c".into(), rank("c", None, false)),
        ],
        10,
    );
    assert_eq!(job.nccl_wait.collectives, 10);
    assert_eq!(job.iterations.count, 5);
    // Collective 5 is in iteration 2 on every rank; b held it back 500 ns past the others.
    assert_eq!(job.heatmap.held_back_ns[1], vec![0, 0, 500, 0, 0]);
    assert_eq!(job.heatmap.wait_ns[0][2], 500);
    assert_eq!(job.heatmap.duration_ns[1], vec![1_999; 5]);
    assert_eq!(job.nccl_wait.late[0].last_device, "b.sqlite:0");
    assert_eq!(job.nccl_wait.late[0].held_back_ns, 500);
}

#[test]
fn the_collective_replay_moves_the_end_by_what_the_last_rank_no_longer_holds() {
    let summaries: [(PathBuf, RankSummary); 3] = [
        ("a".into(), rank("a", Some((5, 300)), false)),
        ("b".into(), rank("b", Some((5, 500)), false)),
        ("c".into(), rank("c", None, false)),
    ];
    let mut gpus: Vec<RankGpu> = summaries
        .iter()
        .map(|(_, s)| RankGpu {
            summary: s,
            gpu: 0,
            offset: 0,
            shift: 0,
            spans: Vec::new(),
        })
        .collect();
    let m = Matched::of(&gpus);
    iteration_shifts(&mut gpus, &m);
    let remove = |ns| Removal {
        gpu: 1,
        collective: 5,
        ns,
    };
    // b started 500 after c and 200 after a: taking out 100 of its stall saves 100,
    // taking out all 500 saves only 200 (then a is last).
    assert_eq!(replay(&gpus, &m, &[remove(100)]), 100);
    assert_eq!(replay(&gpus, &m, &[remove(500)]), 200);
    assert_eq!(replay(&gpus, &m, &[]), 0);
}
