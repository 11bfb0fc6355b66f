//! `bench load` (a full load phase by phase against a plain sqlite3 scan) and the warm loads
//! it times through the cache.

use std::path::Path;
use std::time::Instant;

use super::BenchCache;
use crate::load;

pub fn bench_load(file: &Path) -> Result<(), String> {
    // Read the file once so both contenders start from a warm page cache (streamed, so
    // that the peak RSS printed below is the load's own).
    let mut reader = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    std::io::copy(&mut reader, &mut std::io::sink())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let baseline = crate::bench::sqlite3_scan(file);
    let narrow = crate::bench::sqlite3_narrow_scan(file);

    let t = Instant::now();
    let (trace, report) = load::load(file).map_err(|e| e.to_string())?;
    let seconds = t.elapsed().as_secs_f64();
    let rows: u64 = report.tables.values().sum();
    println!(
        "file: {} ({:.1} MB)",
        file.display(),
        report.file_bytes as f64 / 1e6
    );
    println!("threads: {}", rayon::current_num_threads());
    for (phase, secs) in &report.phases {
        println!("phase {phase:<22} {secs:>8.3} s");
    }
    println!("load total             {seconds:>8.3} s");
    println!(
        "rows read              {rows:>10}  ({:.1} M rows/s)",
        rows as f64 / seconds / 1e6
    );
    let events = trace.event_count();
    println!(
        "events in model        {events:>10}  ({} kernels+memory ops, {} API calls, {} NVTX ranges)",
        trace.gpu_op_count(),
        trace.api_call_count(),
        trace.nvtx_range_count()
    );
    println!(
        "model size             {:>8.1} MB  ({:.1} bytes/event)",
        trace.heap_bytes() as f64 / 1e6,
        trace.heap_bytes() as f64 / events.max(1) as f64
    );
    if !trace.gpu_metrics.is_empty() {
        let samples = report.tables.get("GPU_METRICS").copied().unwrap_or(0);
        let bytes: usize = trace.gpu_metrics.iter().map(|m| m.heap_bytes()).sum();
        println!(
            "GPU metrics            {samples} samples on {} GPUs: {:.1} MB, {:.2} bytes a sample (a time per instant, each value in the narrowest type that holds it)",
            trace.gpu_metrics.len(),
            bytes as f64 / 1e6,
            bytes as f64 / samples.max(1) as f64
        );
    }
    // The call stacks come after the load (its trace is handed over without them).
    let waited = Instant::now();
    let call_stacks = trace.stacks();
    let waited = waited.elapsed().as_secs_f64();
    if !call_stacks.samples.is_empty() || !call_stacks.stacks.is_empty() {
        let n = call_stacks.samples.len();
        let tree = &call_stacks.stacks;
        println!(
            "call stacks            {n} CPU samples ({} bytes each) + a tree of {} frames and {} stacks ({:.1} MB): {:.1} bytes a sample in all",
            crate::trace::CpuSamples::BYTES_PER_SAMPLE,
            tree.frame_symbol.len(),
            tree.node_frame.len(),
            tree.bytes() as f64 / 1e6,
            call_stacks.bytes() as f64 / n.max(1) as f64
        );
        println!(
            "call stacks read       {:>8.3} s  after the load, on a thread of their own ({:.3} s more until they were in: the trace complete at {:.3} s)",
            call_stacks.read.seconds,
            waited,
            seconds + waited
        );
    }
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS               {:>8.1} MB", peak as f64 / 1e6);
    }
    match baseline {
        Ok(b) => println!(
            "sqlite3 scan of the same columns of kernels, API calls and NVTX: {:.3} s ({})\nratio load/sqlite3     {:>8.2}",
            b.seconds,
            b.how,
            seconds / b.seconds
        ),
        Err(e) => println!("sqlite3 baseline not run: {e}"),
    }
    if let Ok(b) = narrow {
        println!(
            "sqlite3 scan of only the columns the first answer needs: {:.3} s\nratio load/narrow scan {:>8.2}",
            b.seconds,
            seconds / b.seconds
        );
    }
    warm_load(file, &trace, &report)?;
    // The GUI's staged load: when the first timeline (GPU side) can be drawn. Run after
    // the figures above, since its GPU-side copy raises the peak RSS.
    drop(trace);
    let t = Instant::now();
    let gpu_ready = std::sync::Mutex::new(0.0);
    let on_gpu = |_: crate::trace::Trace| *gpu_ready.lock().unwrap() = t.elapsed().as_secs_f64();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    load::load_staged(file, &|_| {}, &cancel, Some(&on_gpu)).map_err(|e| e.to_string())?;
    println!(
        "staged load (GUI)      GPU side ready at {:.3} s, whole trace at {:.3} s",
        gpu_ready.into_inner().unwrap(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The re-open: the model written to the cache, then read back.
fn warm_load(
    file: &Path,
    trace: &crate::trace::Trace,
    report: &load::LoadReport,
) -> Result<(), String> {
    let dir = BenchCache::new()?;
    let key = crate::cache::TraceKey::of(file).ok_or("the cache is off")?;
    let t = Instant::now();
    crate::cache::store_model(&key, trace, report);
    let written = t.elapsed().as_secs_f64();
    let bytes: u64 = std::fs::read_dir(dir.0.join("nsys-explorer"))
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    // Three reads: the first may meet the write's pages still going to disk.
    let mut reads = Vec::new();
    let mut events = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let back =
            crate::cache::read_model(&key).ok_or("the model did not come back from the cache")?;
        reads.push(t.elapsed().as_secs_f64());
        events = back.0.event_count();
        if reads.len() == 3 {
            let t = Instant::now();
            let timeline = crate::ui::timeline::Timeline::new(&back.0);
            std::hint::black_box(&timeline);
            println!(
                "timeline indexes       {:>8.3} s  (what the window builds before it draws)",
                t.elapsed().as_secs_f64()
            );
        }
    }
    let read = reads.iter().copied().fold(f64::MAX, f64::min);
    println!(
        "cache write            {written:>8.3} s  ({:.1} MB, {:.0} % of the file)",
        bytes as f64 / 1e6,
        100.0 * bytes as f64 / report.file_bytes.max(1) as f64
    );
    println!(
        "re-open from the cache {read:>8.3} s  (best of {}: {}; {events} events; {:.0}x faster than the load)",
        reads.len(),
        reads
            .iter()
            .map(|s| format!("{s:.3}"))
            .collect::<Vec<_>>()
            .join(" / "),
        report.seconds / read
    );
    Ok(())
}
