//! Call stacks on every real export that has them, against plain SQL over the same file:
//! the samples' count, the most sampled innermost symbol, the longest OS runtime call's
//! backtrace; and the stacks through the cache and a merge of files.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::Path;

use nsys_explorer_core::analysis::cpu_samples::{cpu_profile, longest_os_calls};
use nsys_explorer_core::load;
use nsys_explorer_core::trace::Trace;

fn load(path: &Path) -> Trace {
    load::load(path).unwrap().0
}

#[test]
fn samples_and_backtraces_match_sql_on_every_real_export_that_has_them() {
    let mut with_samples = 0;
    let mut with_backtraces = 0;
    for path in common::real_fixtures() {
        let conn = common::open_plain(&path);
        let trace = load(&path);
        let name = path.display();
        if common::has_table(&conn, "COMPOSITE_EVENTS")
            && common::has_table(&conn, "SAMPLING_CALLCHAINS")
        {
            with_samples += 1;
            let rows: i64 = conn
                .query_row("SELECT count(*) FROM COMPOSITE_EVENTS", [], |r| r.get(0))
                .unwrap();
            let profile = cpu_profile(&trace, 5).expect("a profile");
            assert_eq!(profile.count as i64, rows, "{name}");
            // The most sampled innermost frame, by SQL (ties: by symbol, as the report).
            let (symbol, module, count): (String, String, i64) = conn
                .query_row(
                    "SELECT s.value, m.value, count(*) AS n FROM SAMPLING_CALLCHAINS c \
                     JOIN StringIds s ON s.id = c.symbol JOIN StringIds m ON m.id = c.module \
                     WHERE c.stackDepth = 0 GROUP BY c.symbol, c.module, c.unresolved \
                     ORDER BY n DESC, s.value, m.value LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            let top = &profile.top_self[0];
            assert_eq!(
                (
                    top.frame.symbol.as_str(),
                    top.frame.module.as_str(),
                    top.count as i64
                ),
                (symbol.as_str(), module.as_str(), count),
                "{name}"
            );
            let per_thread: u64 = profile.threads.iter().map(|t| t.count).sum();
            assert_eq!(per_thread, profile.count, "{name}");
        }
        if common::has_table(&conn, "OSRT_CALLCHAINS") {
            with_backtraces += 1;
            let (duration, chain): (i64, i64) = conn
                .query_row(
                    "SELECT end - start, callchainId FROM OSRT_API WHERE eventClass = 27 \
                     AND callchainId IN (SELECT id FROM OSRT_CALLCHAINS) \
                     ORDER BY end - start DESC LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            let mut stmt = conn
                .prepare(
                    "SELECT s.value FROM OSRT_CALLCHAINS c JOIN StringIds s ON s.id = c.symbol \
                     WHERE c.id = ?1 ORDER BY c.stackDepth",
                )
                .unwrap();
            let frames: Vec<String> = stmt
                .query_map([chain], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let longest = &longest_os_calls(&trace, 3)[0];
            assert_eq!(longest.duration_ns, duration, "{name}");
            let got: Vec<&str> = longest
                .backtrace
                .iter()
                .map(|f| f.symbol.as_str())
                .collect();
            assert_eq!(got, frames, "{name}");
            assert!(!got.is_empty());
        } else {
            assert!(longest_os_calls(&trace, 3).is_empty(), "{name}");
        }
    }
    assert!(
        with_samples >= 1 && with_backtraces >= 1,
        "the round-4 export has both"
    );
}

#[test]
fn stacks_survive_the_cache_and_a_merge_of_files() {
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("callchains"))
        .expect("the round-4 export");
    let plain = load(&path);
    nsys_explorer_core::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    // Twice: the second open reads the model back from the cache.
    let _ = nsys_explorer_core::session::open_path(&path).unwrap();
    let (cached, report) = nsys_explorer_core::session::open_path(&path).unwrap();
    assert_eq!(report.phases[0].0, "read cache");
    assert_eq!(
        cpu_profile(&cached, 5).unwrap().top_self,
        cpu_profile(&plain, 5).unwrap().top_self
    );
    assert_eq!(
        longest_os_calls(&cached, 2)[0].backtrace,
        longest_os_calls(&plain, 2)[0].backtrace
    );
    // The same file twice as a job of two: every sample and backtrace twice, named alike.
    let (merged, _, _) =
        nsys_explorer_core::session::load_many(&[path.clone(), path.clone()]).unwrap();
    let one = cpu_profile(&plain, 3).unwrap();
    let two = cpu_profile(&merged, 3).unwrap();
    assert_eq!(two.count, 2 * one.count);
    assert_eq!(two.top_self[0].frame, one.top_self[0].frame);
    assert_eq!(two.top_self[0].count, 2 * one.top_self[0].count);
    assert_eq!(
        longest_os_calls(&merged, 2)[1].backtrace,
        longest_os_calls(&plain, 1)[0].backtrace
    );
}

/// Each gap the generator lists with samples: the loader's launching-thread samples in it
/// count the same and name the same innermost frame; the injected stalls' frames are in
/// their findings.
#[test]
fn each_gaps_top_frame_matches_the_generators_truth_and_is_in_its_finding() {
    use nsys_explorer_core::analysis::recurring::describe;
    use nsys_explorer_core::synth::{self, Preset, StragglerStall, SynthOptions};
    use nsys_explorer_core::trace::DeviceId;
    let dir = tempfile::tempdir().unwrap();
    for stall in [StragglerStall::Read, StragglerStall::Cpu] {
        let path = dir.path().join(format!("{stall:?}.sqlite"));
        let options = SynthOptions {
            cpu_samples: true,
            straggler_stall: stall,
            ..SynthOptions::new(Preset::Tiny)
        };
        let truth = synth::generate(&path, options).unwrap();
        let trace = load(&path);
        let overview = nsys_explorer_core::overview::overview(&trace, &Default::default());
        let mut checked = 0;
        for t in truth
            .gaps
            .iter()
            .filter(|t| t.cpu_samples.unwrap_or(0) >= 5)
        {
            let g = overview
                .gaps
                .iter()
                .find(|g| g.start_ns == t.start_ns && g.device_id() == DeviceId(t.device))
                .unwrap_or_else(|| panic!("gap at {} on {}", t.start_ns, t.device));
            let samples = describe(&trace, g, 0)
                .cpu_samples
                .expect("samples in the gap");
            assert_eq!(Some(samples.count as u32), t.cpu_samples, "{t:?}");
            assert_eq!(
                Some(&samples.top_self[0].frame.symbol),
                t.cpu_top_frame.as_ref(),
                "{t:?}"
            );
            checked += 1;
        }
        assert!(checked >= 8, "{checked} gaps with samples");
        let findings = nsys_explorer_core::findings::findings(&trace, &overview);
        let text = |kind: &str| {
            findings
                .iter()
                .filter(|f| format!("{:?}", f.kind) == kind)
                .map(|f| f.detail.clone())
                .collect::<String>()
        };
        // The JIT stall's gaps sample the compiler, and its finding says so.
        assert!(
            text("OneOffStall").contains("nvrtcCompileProgram"),
            "{}",
            text("OneOffStall")
        );
        match stall {
            StragglerStall::Read => assert!(
                text("Straggler").contains("`read` called from load_next_batch"),
                "{}",
                text("Straggler")
            ),
            StragglerStall::Cpu => assert!(
                text("Straggler").contains("slow_attention_mask"),
                "{}",
                text("Straggler")
            ),
        }
    }
}

#[test]
fn the_flame_graph_and_bottom_up_table_add_up_to_the_samples() {
    use nsys_explorer_core::analysis::cpu_samples::{Flame, samples_of};
    let path = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("callchains"))
        .expect("the round-4 export");
    let trace = load(&path);
    let all = samples_of(&trace, &[], i64::MIN, i64::MAX);
    assert_eq!(all.len(), trace.stacks().samples.len());
    let flame = Flame::of(&trace, all.iter().copied());
    assert_eq!(flame.count as usize, trace.stacks().samples.len());
    let with_stack = trace
        .stacks()
        .samples
        .node
        .iter()
        .filter(|&&n| n != u32::MAX)
        .count() as u64;
    let roots: u64 = flame.roots.iter().map(|&r| flame.nodes[r].total).sum();
    assert_eq!(roots, with_stack);
    // Each node's width is its own samples and its callees'.
    for n in &flame.nodes {
        let below: u64 = n.children.iter().map(|&c| flame.nodes[c].total).sum();
        assert_eq!(n.total, n.own + below);
    }
    let rows = flame.bottom_up();
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), with_stack);
    let top = &cpu_profile(&trace, 1).unwrap().top_self[0];
    assert_eq!(rows[0].1, top.count);
    // One thread, one window: fewer samples, all of that thread.
    let t = &trace.stacks().samples.threads[0];
    let mid = trace.stacks().samples.time[t.first + t.count / 2];
    let some = samples_of(&trace, &[t.global_tid], i64::MIN, mid);
    assert!(!some.is_empty() && some.len() < t.count);
}

/// Where a frame ran, by thread, as a walk of every thread's samples finds it: what
/// `samples_holding` must give with its search by sample.
#[test]
fn samples_holding_a_frame_are_those_whose_stack_holds_it_on_every_real_export() {
    use nsys_explorer_core::analysis::cpu_samples::{samples_holding, samples_of};
    let mut checked = 0;
    for path in common::real_fixtures() {
        let trace = load(&path);
        let s = &trace.stacks().samples;
        let stacks = &trace.stacks().stacks;
        if s.time.is_empty() {
            continue;
        }
        let all = samples_of(&trace, &[], i64::MIN, i64::MAX);
        // A few frames: the innermost and outermost of samples spread over the run.
        let frames: Vec<u32> = (0..all.len())
            .step_by(all.len().div_ceil(4).max(1))
            .flat_map(|k| {
                let f: Vec<u32> = stacks.frames(s.node[all[k]]).collect();
                [f.first().copied(), f.last().copied()]
            })
            .flatten()
            .collect();
        for frame in frames {
            let mut want: std::collections::BTreeMap<usize, Vec<i64>> = Default::default();
            for t in &s.threads {
                let Some(thread) = trace.thread_index(t.global_tid) else {
                    continue;
                };
                for &i in all
                    .iter()
                    .filter(|&&i| (t.first..t.first + t.count).contains(&i))
                {
                    if stacks.frames(s.node[i]).any(|f| f == frame) {
                        want.entry(thread).or_default().push(s.time[i]);
                    }
                }
            }
            let got = samples_holding(&trace, &all, frame);
            assert!(!got.is_empty(), "{}: frame {frame} seen", path.display());
            assert_eq!(
                got,
                want.into_iter().collect::<Vec<_>>(),
                "{}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no real export with CPU samples");
}
