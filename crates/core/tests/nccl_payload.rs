//! NCCL's bytes and bandwidth from its NVTX payloads, against the generator's truth: one
//! file, the same run split into per-rank files on their own clocks, damaged blobs, an
//! export without blobs, and the shared real exports.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::Path;

use nsys_explorer_core::analysis::nccl_payload::{NcclPayload, kernel_transfers, nccl_payload};
use nsys_explorer_core::analysis::nccl_sizes::{SizeClass, size_groups};
use nsys_explorer_core::load;
use nsys_explorer_core::synth::{self, NcclPayloadTruth, Preset, SynthOptions};

fn check(p: &NcclPayload, truth: &NcclPayloadTruth) {
    assert_eq!(p.skipped_blobs, 0);
    assert_eq!(p.total_message_bytes, truth.total_message_bytes);
    assert_eq!(p.per_device.len(), truth.ranks as usize);
    for d in &p.per_device {
        assert_eq!(d.calls, truth.calls_per_device, "calls of {}", d.device);
        assert_eq!(d.message_bytes_total, truth.message_bytes_per_device);
        assert_eq!(d.message_bytes_p50, truth.message_bytes_p50);
        assert_eq!(d.message_bytes_p99, truth.message_bytes_p99);
        assert_eq!(d.collectives, truth.collectives_per_device);
        assert_eq!(d.by_collective.len(), 1);
        assert_eq!(d.by_collective[0].collective, "all-to-all");
        let bw = d.busbw_gbps_median.unwrap();
        assert!(
            (bw - truth.busbw_gbps_median).abs() <= 0.01 * truth.busbw_gbps_median,
            "bus bandwidth {bw} against {}",
            truth.busbw_gbps_median
        );
    }
    assert_eq!(p.communicators.len(), 1, "one communicator");
    let c = &p.communicators[0];
    assert_eq!(c.id, truth.communicator);
    assert_eq!(c.size, truth.ranks);
    assert_eq!(c.ranks, (0..truth.ranks).collect::<Vec<_>>());
    assert_eq!(c.devices.len(), truth.ranks as usize);
    assert_eq!(c.collectives, truth.collectives_per_device);
    assert_eq!(c.bytes, truth.total_message_bytes);
    assert!(p.slowest.iter().all(|t| t.of_best < 0.75));
}

#[test]
fn bytes_calls_and_bus_bandwidth_match_the_generator() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let (trace, _) = load::load(&path).unwrap();
    check(
        &nccl_payload(&trace, 10),
        truth.nccl_payload.as_ref().unwrap(),
    );
}

#[test]
fn each_kernel_has_its_transfer_and_the_table_splits_by_message_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let truth = truth.nccl_payload.unwrap();
    let (trace, _) = load::load(&path).unwrap();
    let transfers = kernel_transfers(&trace);
    assert_eq!(
        transfers.len(),
        truth.collectives_per_device * truth.ranks as usize
    );
    // Found again by place, each one on an NCCL kernel.
    for k in transfers.iter() {
        let (d, s, i) = (k.at.0 as usize, k.at.1 as usize, k.at.2 as usize);
        let ops = &trace.devices[d].streams[s].ops;
        assert_eq!(ops.kind[i], nsys_explorer_core::trace::OpKind::Nccl);
        assert_eq!(
            transfers
                .get(nsys_explorer_core::trace::DeviceIndex(d), s, i)
                .unwrap()
                .bytes,
            k.bytes
        );
        assert!(k.transfer_ns > 0 && k.transfer_ns <= ops.duration(i));
        assert_eq!(
            k.peers.len(),
            truth.ranks as usize,
            "an all-to-all sends to all"
        );
    }
    let groups = size_groups(&trace, &transfers, None);
    for device in &trace.devices {
        let mine: Vec<_> = groups.iter().filter(|g| g.device == device.id).collect();
        let all: Vec<_> = mine.iter().filter(|g| g.class == SizeClass::All).collect();
        let nccl_kernels = device.count_of(nsys_explorer_core::trace::OpKind::Nccl);
        assert_eq!(all.iter().map(|g| g.count).sum::<usize>(), nccl_kernels);
        // One class per size the generator sent, each holding just that size.
        let mut by_bytes = std::collections::BTreeMap::new();
        for g in mine
            .iter()
            .filter(|g| matches!(g.class, SizeClass::Bytes { .. }))
        {
            assert_eq!(g.bytes_min, g.bytes_max, "one size per class here");
            assert_eq!(g.transfers, g.count);
            assert_eq!(g.bytes_total, g.bytes_min * g.count as u64);
            assert!(g.busbw_gbps_median.unwrap() > 0.0);
            *by_bytes.entry(g.bytes_min).or_insert(0) += g.count;
        }
        assert_eq!(by_bytes, truth.collectives_by_bytes, "{}", device.id);
        let unknown: usize = mine
            .iter()
            .filter(|g| g.class == SizeClass::Unknown)
            .map(|g| g.count)
            .sum();
        assert_eq!(unknown + truth.collectives_per_device, nccl_kernels);
    }
}

#[test]
fn per_rank_files_make_one_communicator() {
    let dir = tempfile::tempdir().unwrap();
    let split = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    let paths: Vec<_> = split.files.iter().map(|f| f.path.clone()).collect();
    let (trace, _, _) = nsys_explorer_core::session::load_many(&paths).unwrap();
    check(
        &nccl_payload(&trace, 10),
        split.run.nccl_payload.as_ref().unwrap(),
    );
}

fn damage(path: &Path) -> u64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    let ids: Vec<i64> = conn
        .prepare(
            "SELECT rowid FROM NVTX_EVENTS WHERE binaryData IS NOT NULL ORDER BY rowid LIMIT 30",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut rng = fastrand::Rng::with_seed(9);
    for (k, id) in ids.iter().enumerate() {
        let blob: Vec<u8> = match k % 3 {
            0 => (0..rng.usize(0..80)).map(|_| rng.u8(..)).collect(), // random
            1 => {
                let b: Vec<u8> = conn
                    .query_row(
                        "SELECT binaryData FROM NVTX_EVENTS WHERE rowid = ?1",
                        [id],
                        |r| r.get(0),
                    )
                    .unwrap();
                b[..b.len() - 4].to_vec() // short
            }
            _ => load::payload::encode_blob(7, 12345, &[0; 24]), // a schema never declared
        };
        conn.execute(
            "UPDATE NVTX_EVENTS SET binaryData = ?1 WHERE rowid = ?2",
            rusqlite::params![blob, id],
        )
        .unwrap();
    }
    ids.len() as u64
}

#[test]
fn random_short_and_foreign_blobs_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let damaged = damage(&path);
    let (trace, _) = load::load(&path).unwrap();
    let p = nccl_payload(&trace, 10);
    assert_eq!(p.skipped_blobs, damaged);
    let truth = truth.nccl_payload.unwrap();
    assert!(p.total_message_bytes < truth.total_message_bytes);
    assert!(p.total_message_bytes > truth.total_message_bytes / 2);
}

#[test]
fn an_export_without_blobs_says_how_to_get_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite");
    let mut options = SynthOptions::new(Preset::Tiny);
    options.nccl_calls = Some(false);
    let truth = synth::generate(&path, options).unwrap();
    assert!(truth.nccl_payload.is_none());
    let (trace, _) = load::load(&path).unwrap();
    let p = nccl_payload(&trace, 10);
    assert!(p.per_device.is_empty());
    assert!(p.note.as_deref().unwrap().contains("--include-blobs=true"));
}

#[test]
fn the_shared_real_exports_read_without_payload_figures() {
    for path in common::real_fixtures() {
        let (trace, _) = load::load(&path).unwrap();
        let p = nccl_payload(&trace, 10);
        assert_eq!(p.skipped_blobs, 0, "{}", path.display());
        assert!(
            p.per_device.is_empty(),
            "{}: exported without blobs",
            path.display()
        );
        if path.to_string_lossy().contains("nccl") {
            assert!(p.note.as_deref().unwrap().contains("--include-blobs=true"));
        }
    }
}
