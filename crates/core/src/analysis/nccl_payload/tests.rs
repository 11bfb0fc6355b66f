use super::*;

#[test]
fn counted_sizes_give_the_percentiles_of_the_whole_list() {
    // Runs of one size, sizes coming back later, and a few odd ones out.
    let mut calls: Vec<u64> = Vec::new();
    let mut x = 7u64;
    for _ in 0..2_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let size = [4096, 1 << 20, 13_819_904, 41_472_000, x >> 40][(x >> 61) as usize % 5];
        calls.extend(std::iter::repeat_n(size, 1 + (x >> 58) as usize % 6));
    }
    let mut counted = SizeCounts::default();
    calls.iter().for_each(|&c| counted.add(c));
    let counts = counted.sorted();
    calls.sort_unstable();
    assert_eq!(
        counts.iter().map(|c| c.1).sum::<u64>() as usize,
        calls.len()
    );
    for p in [0.0, 0.01, 0.5, 0.9, 0.99, 1.0] {
        assert_eq!(
            percentile_of_counts(&counts, p),
            percentile(&calls, p),
            "p = {p}"
        );
    }
    assert_eq!(percentile_of_counts(&[], 0.5), None);
}

#[test]
fn bus_factors_are_nccl_tests() {
    assert_eq!(CollectiveKind::AllReduce.bus_factor(4), 1.5);
    assert_eq!(CollectiveKind::AllGather.bus_factor(4), 0.75);
    assert_eq!(CollectiveKind::AllToAll.bus_factor(8), 0.875);
    assert_eq!(CollectiveKind::SendRecv.bus_factor(8), 1.0);
    assert_eq!(CollectiveKind::Broadcast.bus_factor(8), 1.0);
}

#[test]
fn percentiles_are_nearest_rank() {
    let v: Vec<u64> = (1..=100).collect();
    assert_eq!(percentile(&v, 0.5), Some(50));
    assert_eq!(percentile(&v, 0.99), Some(99));
    assert_eq!(percentile(&[7u64], 0.99), Some(7));
    assert_eq!(percentile::<u64>(&[], 0.5), None);
}

#[test]
fn call_names_read_as_collectives() {
    assert_eq!(
        call_kind("ncclAllReduce"),
        CallKind::Collective(CollectiveKind::AllReduce)
    );
    assert_eq!(call_kind("ncclSend"), CallKind::Send);
    assert_eq!(call_kind("ncclCommInitRank"), CallKind::Other);
    assert_eq!(call_kind("ncclGroupEnd"), CallKind::Other);
}
