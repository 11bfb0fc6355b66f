use super::*;
use crate::trace::builder::TraceBuilder;

/// One thread launching onto one stream, with a sync, a late launch and an early one.
fn trace() -> Trace {
    let mut b = TraceBuilder::new();
    let t = b.thread(1, 1);
    b.range(t, "step_0", 0, 10_000);
    b.range(t, "forward", 5, 2_500);
    let c0 = b.call(t, "cudaLaunchKernel", 10, 20);
    b.kernel(0, 7, "a", (100, 1_000), Some(c0));
    // The CPU waits for "a", returns at 1_050, launches "b" at 1_100: host sync.
    b.call(t, "cudaStreamSynchronize", 30, 1_050);
    let c1 = b.call(t, "cudaLaunchKernel", 1_100, 1_110);
    b.kernel(0, 7, "b", (1_200, 2_000), Some(c1));
    // Launched after "b" ended, no sync: host bound.
    let c2 = b.call(t, "cudaLaunchKernel", 3_000, 3_010);
    b.kernel(0, 7, "c", (3_100, 3_500), Some(c2));
    // Launched long before "c" ended, yet it waited: dependency.
    let c3 = b.call(t, "cudaLaunchKernel", 3_020, 3_030);
    b.kernel(0, 7, "d", (4_500, 5_000), Some(c3));
    // No launch known.
    b.kernel(0, 7, "e", (5_500, 6_000), None);
    b.build()
}

fn all_gaps(trace: &Trace, min: i64) -> Vec<Gap> {
    let cpu = CpuIndex::new(trace);
    let d = &trace.devices[0];
    gaps(trace, &cpu, d, Window::new(100, 6_000), min)
}

#[test]
fn each_kind_of_wait_gets_its_cause() {
    let trace = trace();
    let causes: Vec<(i64, Cause)> = all_gaps(&trace, 1)
        .iter()
        .map(|g| (g.start_ns, g.cause))
        .collect();
    assert_eq!(
        causes,
        vec![
            (1_000, Cause::HostSync),
            (2_000, Cause::HostBound),
            (3_500, Cause::Dependency),
            (5_000, Cause::Unknown)
        ]
    );
}

#[test]
fn a_syncs_place_found_from_the_last_is_where_a_search_finds_it() {
    let ends: Vec<i64> = (0..200).map(|i| i * 100 + (i % 3) * 40).collect();
    let cpu = CpuIndex {
        sync_ends: vec![Vec::new(), ends.clone()],
        sync_lengths: vec![Vec::new(), vec![0; ends.len()]],
        call_range: vec![Vec::new(), Vec::new()],
    };
    let mut cursor = SyncCursor::default();
    // In order (most gaps), equal to an end, back, far ahead, far back, past the end.
    let asks = (-50..21_000)
        .step_by(37)
        .chain([5_000, 5_000, 4_940, 19_999, 10, 25_000, -1, 12_345]);
    for t in asks {
        let found = cpu.sync_position(&mut cursor, 1, t);
        assert_eq!(found, ends.partition_point(|&e| e < t), "t = {t}");
        assert_eq!(cpu.sync_position(&mut cursor, 0, t), 0);
    }
}

/// Real exports show a sync returning a few µs before the op it waited for ends: the
/// gap after it is still the sync's, but not a gap after an op launched after the sync.
#[test]
fn a_sync_returning_just_before_the_gap_is_its_cause() {
    let mut b = TraceBuilder::new();
    let t = b.thread(1, 1);
    let c0 = b.call(t, "cudaLaunchKernel", 0, 10);
    b.kernel(0, 7, "a", (100, 1_000_000), Some(c0));
    // Returns 3 µs before "a"'s recorded end; Python, then the next launch.
    b.call(t, "cudaDeviceSynchronize", 20, 997_000);
    let c1 = b.call(t, "cudaLaunchKernel", 3_000_000, 3_000_010);
    b.kernel(0, 7, "b", (3_005_000, 3_500_000), Some(c1));
    // A sync, then a kernel launched after it, then a late launch: the thread never got
    // ahead again (after the sync, within the 0.5 ms it waited).
    b.call(t, "cudaDeviceSynchronize", 3_000_020, 3_500_000);
    let c2 = b.call(t, "cudaLaunchKernel", 3_500_100, 3_500_110);
    b.kernel(0, 7, "c", (3_505_000, 3_506_000), Some(c2));
    let c3 = b.call(t, "cudaLaunchKernel", 4_000_000, 4_000_010);
    b.kernel(0, 7, "d", (4_005_000, 4_100_000), Some(c3));
    let trace = b.build();
    let cpu = CpuIndex::new(&trace);
    let found = gaps(
        &trace,
        &cpu,
        &trace.devices[0],
        Window::new(0, 5_000_000),
        1_000,
    );
    let causes: Vec<(i64, Cause)> = found.iter().map(|g| (g.start_ns, g.cause)).collect();
    assert_eq!(
        causes,
        vec![
            (1_000_000, Cause::HostSync),
            (3_500_000, Cause::HostSync),
            (3_506_000, Cause::AfterSync)
        ]
    );
}

/// After a sync the thread launches just in time: each gap one op from the last is the
/// sync's until the CPU gets ahead (a kernel queued behind another), a gap outlasts the
/// lead the sync cost (its wait), or another thread launches.
#[test]
fn the_gaps_after_a_sync_are_its_own_until_the_cpu_gets_ahead() {
    let mut b = TraceBuilder::new();
    let t = b.thread(1, 1);
    let other = b.thread(1, 2);
    let c0 = b.call(t, "cudaLaunchKernel", 0, 10);
    b.kernel(0, 7, "long", (100, 100_000), Some(c0));
    // Waits 99 µs for it: the lead the sync cost.
    b.call(t, "cudaStreamSynchronize", 1_000, 100_000);
    let launch = |b: &mut TraceBuilder, th: usize, at: i64, run: (i64, i64)| {
        let c = b.call(th, "cudaLaunchKernel", at, at + 5);
        b.kernel(0, 7, "small", run, Some(c));
    };
    launch(&mut b, t, 110_000, (115_000, 120_000)); // host sync
    launch(&mut b, t, 130_000, (135_000, 140_000)); // after sync (15 µs)
    launch(&mut b, t, 150_000, (155_000, 160_000)); // after sync (15 µs)
    // Queued: launched before "small" ends, it runs back to back 2 µs later.
    launch(&mut b, t, 158_000, (162_000, 170_000)); // dependency: the CPU got ahead
    launch(&mut b, t, 180_000, (185_000, 190_000)); // host bound again
    // A second sync whose 20 µs of waiting covers one gap, not the next.
    b.call(t, "cudaStreamSynchronize", 185_100, 205_000);
    launch(&mut b, t, 210_000, (215_000, 220_000)); // host sync
    launch(&mut b, t, 230_000, (235_000, 240_000)); // after sync (15 of 20 µs)
    launch(&mut b, t, 250_000, (255_000, 260_000)); // 15 µs more: host bound
    b.call(t, "cudaStreamSynchronize", 255_100, 300_000);
    launch(&mut b, t, 310_000, (315_000, 320_000)); // host sync
    launch(&mut b, other, 330_000, (335_000, 340_000)); // another thread: host bound
    let trace = b.build();
    let cpu = CpuIndex::new(&trace);
    let found = gaps(
        &trace,
        &cpu,
        &trace.devices[0],
        Window::new(0, 400_000),
        1_000,
    );
    let causes: Vec<Cause> = found.iter().map(|g| g.cause).collect();
    use Cause::*;
    assert_eq!(
        causes,
        vec![
            HostSync, AfterSync, AfterSync, Dependency, HostBound, HostSync, AfterSync, HostBound,
            HostSync, HostBound
        ]
    );
}

#[test]
fn gaps_shorter_than_the_minimum_are_left_out() {
    let trace = trace();
    let long: Vec<i64> = all_gaps(&trace, 600)
        .iter()
        .map(|g| g.duration_ns)
        .collect();
    assert_eq!(long, vec![1_100, 1_000]);
}

#[test]
fn a_gaps_enclosing_range_is_the_deepest_around_both_launches() {
    let trace = trace();
    let found = all_gaps(&trace, 1);
    let name = |g: &Gap| g.enclosing().map(|id| trace.strings.get(id).into_owned());
    // "a" and "b" were launched inside step_0 > forward; "c" only inside step_0.
    assert_eq!(name(&found[0]).as_deref(), Some("forward"));
    assert_eq!(name(&found[1]).as_deref(), Some("step_0"));
    assert_eq!(name(&found[3]), None, "no launch, no path");
}

#[test]
fn gaps_written_in_place_are_the_gaps_found() {
    let trace = trace();
    let cpu = CpuIndex::new(&trace);
    let d = &trace.devices[0];
    for (window, min) in [(Window::new(100, 6_000), 1), (Window::new(0, 4_000), 600)] {
        let found = gaps(&trace, &cpu, d, window, min);
        let n = count_gaps(d, window, min);
        assert_eq!(n, found.len());
        let mut placed = vec![Gap::EMPTY; n];
        gaps_into(&trace, &cpu, d, window, min, &mut placed);
        let key = |g: &Gap| {
            (
                g.start_ns,
                g.duration_ns,
                g.before,
                g.after,
                g.cause,
                g.enclosing,
            )
        };
        assert_eq!(
            placed.iter().map(key).collect::<Vec<_>>(),
            found.iter().map(key).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_sweep_finds_each_calls_innermost_range_as_a_search_does() {
    let trace = trace();
    let t = &trace.threads[0];
    let swept = innermost_range_at_calls(t);
    for (i, &r) in swept.iter().enumerate() {
        let searched = t
            .nvtx
            .path_at(t.api.start[i])
            .last()
            .copied()
            .unwrap_or(NONE);
        assert_eq!(r, searched, "call {i}");
    }
}

#[test]
fn synchronising_calls_are_recognised_by_name() {
    for name in [
        "cudaStreamSynchronize_v3020",
        "cudaDeviceSynchronize",
        "cudaMemcpy_v3020",
        "cuMemcpyDtoH_v2",
    ] {
        assert!(is_synchronizing(name), "{name}");
    }
    for name in [
        "cudaLaunchKernel_v7000",
        "cudaMemcpyAsync_v3020",
        "cudaMalloc",
    ] {
        assert!(!is_synchronizing(name), "{name}");
    }
}
