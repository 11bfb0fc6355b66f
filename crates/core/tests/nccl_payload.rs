//! NCCL's bytes and bandwidth from its NVTX payloads, against the generator's truth: one
//! file, the same run split into per-rank files on their own clocks, damaged blobs, an
//! export without blobs, and the shared real exports.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use nsys_explorer_core::analysis::nccl_payload::{NcclPayload, nccl_payload};
use nsys_explorer_core::load::{self, many::load_many};
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
fn per_rank_files_make_one_communicator() {
    let dir = tempfile::tempdir().unwrap();
    let split = synth::generate_split(dir.path(), SynthOptions::new(Preset::Tiny)).unwrap();
    let paths: Vec<_> = split.files.iter().map(|f| f.path.clone()).collect();
    let (trace, _, _) = load_many(&paths, &|_| {}, &AtomicBool::new(false)).unwrap();
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
