//! `bench many` and `bench job`: several ranks opened as one trace, and a job of many ranks
//! from their summaries.

use std::time::Instant;

use super::{BenchCache, print_peak_rss};
use crate::load;

/// Times opening several per-rank files as one trace: each file alone first (its load time
/// and model size), then all of them together (parallel load, alignment, merge), with the
/// merged model's size against the sum of the files' and the process's peak RSS.
pub fn bench_many(paths: &[std::path::PathBuf]) -> Result<(), String> {
    // The files are loaded from themselves (a cache of the bench's own, empty, removed after).
    let _cache = BenchCache::new()?;
    let files = load::many::expand_paths(paths)?;
    println!(
        "files: {} (threads: {})",
        files.len(),
        rayon::current_num_threads()
    );
    let mut single_bytes = 0usize;
    let mut single_seconds = 0.0;
    for f in &files {
        let t = Instant::now();
        let (trace, report) = load::load(f).map_err(|e| e.to_string())?;
        let s = t.elapsed().as_secs_f64();
        single_seconds += s;
        single_bytes += trace.heap_bytes();
        println!(
            "file={} mb={:.1} load_s={s:.3} model_mb={:.1} events={}",
            f.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            report.file_bytes as f64 / 1e6,
            trace.heap_bytes() as f64 / 1e6,
            trace.event_count()
        );
    }
    let t = Instant::now();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let (trace, _, infos) =
        crate::session::open_many(&files, &[], crate::session::Hooks::quiet(&cancel))
            .map_err(|e| e.to_string())?;
    let together = t.elapsed().as_secs_f64();
    let worst_residual = infos
        .iter()
        .filter_map(|i| i.residual_ns)
        .max()
        .unwrap_or(0);
    println!(
        "all together: load_s={together:.3} (one after another: {single_seconds:.3}) model_mb={:.1} (sum of files: {:.1}, ratio {:.2}) worst_alignment_residual_ns={worst_residual}",
        trace.heap_bytes() as f64 / 1e6,
        single_bytes as f64 / 1e6,
        trace.heap_bytes() as f64 / single_bytes.max(1) as f64
    );
    let t = Instant::now();
    let o = crate::overview::overview(&trace, &Default::default());
    println!(
        "analyses of the merged trace: {:.3} s ({} GPUs, {} gaps, {} iterations)",
        t.elapsed().as_secs_f64(),
        trace.devices.len(),
        o.gaps.len(),
        o.iterations.count()
    );
    print_peak_rss();
    Ok(())
}

/// Times a job of many ranks: its summaries read (in parallel, checksums and exports
/// checked), then reduced (alignment, matching, waits, heatmap, straggler replay), with
/// the summaries' sizes and the peak RSS. Exports given instead are summarised first, one
/// at a time, as `report` does past 16 of them.
pub fn bench_job(paths: &[std::path::PathBuf]) -> Result<(), String> {
    let files = load::many::expand_paths(paths)?;
    let t = Instant::now();
    let summaries = crate::session::rank_summaries(
        &files,
        &Default::default(),
        false,
        &std::sync::atomic::AtomicBool::new(false),
        &|_, _| {},
    )?;
    let read_s = t.elapsed().as_secs_f64();
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let collectives: usize = summaries.iter().map(|s| s.1.collectives()).sum();
    println!(
        "ranks: {} files, {:.1} MB, {collectives} NCCL kernels; read/summarised in {read_s:.3} s (threads: {})",
        files.len(),
        bytes as f64 / 1e6,
        rayon::current_num_threads()
    );
    let t = Instant::now();
    let job = crate::job::reduce(&summaries, 10);
    let reduce_s = t.elapsed().as_secs_f64();
    let straggler = job.findings.first().map_or("none".to_string(), |f| {
        format!(
            "{} ({})",
            f.devices.join(","),
            crate::format::format_ns(f.saving_ns)
        )
    });
    println!(
        "reduce_s={reduce_s:.3} total_s={:.3} collectives_matched={} aligned_by_collectives={} late0={} straggler={straggler}",
        read_s + reduce_s,
        job.nccl_wait.collectives,
        job.files
            .iter()
            .filter(|f| f.clock.alignment == crate::load::many::Alignment::Collectives)
            .count(),
        job.nccl_wait
            .late
            .first()
            .map_or("none", |l| l.last_device.as_str()),
    );
    print_peak_rss();
    Ok(())
}
