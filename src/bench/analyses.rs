//! `bench analysis`: every analysis of a loaded trace, timed one by one.

use std::path::Path;
use std::time::Instant;

use super::print_peak_rss;
use crate::analysis;
use crate::load;
use crate::overview::Options;

/// Loads FILE, then times each analysis of all devices (best of 3 runs) and all together.
pub fn bench_analysis(file: &Path) -> Result<(), String> {
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let options = Options::default();
    let best_of_3 = |f: &dyn Fn()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let devices: Vec<_> = trace.devices.iter().collect();
    let windows: Vec<_> = devices
        .iter()
        .filter_map(|d| analysis::intervals::device_window(d))
        .collect();
    println!(
        "file: {} ({} kernels, {} devices)",
        file.display(),
        trace.kernel_count(),
        devices.len()
    );
    println!("threads: {}", rayon::current_num_threads());
    let cpu = analysis::gaps::CpuIndex::new(&trace);
    let found: Vec<_> = devices
        .iter()
        .zip(&windows)
        .flat_map(|(d, w)| analysis::gaps::gaps(&trace, &cpu, d, *w, options.min_gap_ns))
        .collect();
    let rows: [(&str, f64); 14] = [
        (
            "GPU time per NVTX range",
            best_of_3(&|| {
                std::hint::black_box(analysis::nvtx_gpu::nvtx_gpu(&trace, None));
            }),
        ),
        (
            "memory transfers",
            best_of_3(&|| {
                std::hint::black_box(analysis::memory::memory_by_kind(&trace, None));
            }),
        ),
        (
            "  gaps: CPU index",
            best_of_3(&|| {
                std::hint::black_box(analysis::gaps::CpuIndex::new(&trace));
            }),
        ),
        (
            "  gaps: found (no cause, no NVTX)",
            best_of_3(&|| {
                for (d, w) in devices.iter().zip(&windows) {
                    std::hint::black_box(analysis::gaps::find_gaps(d, *w, options.min_gap_ns));
                }
            }),
        ),
        (
            "  gaps: with cause and NVTX",
            best_of_3(&|| {
                for (d, w) in devices.iter().zip(&windows) {
                    std::hint::black_box(analysis::gaps::gaps(
                        &trace,
                        &cpu,
                        d,
                        *w,
                        options.min_gap_ns,
                    ));
                }
            }),
        ),
        (
            "  gaps: recurring patterns",
            best_of_3(&|| {
                std::hint::black_box(analysis::recurring::recurring(&trace, &found));
            }),
        ),
        (
            "breakdown + same-stream",
            best_of_3(&|| {
                for (d, w) in devices.iter().zip(&windows) {
                    std::hint::black_box((
                        analysis::breakdown(d, *w),
                        analysis::same_stream(d, *w),
                    ));
                }
            }),
        ),
        (
            "gaps (found, with cause and NVTX) + recurring",
            best_of_3(&|| {
                let cpu = analysis::gaps::CpuIndex::new(&trace);
                let found: Vec<_> = devices
                    .iter()
                    .zip(&windows)
                    .flat_map(|(d, w)| {
                        analysis::gaps::gaps(&trace, &cpu, d, *w, options.min_gap_ns)
                    })
                    .collect();
                std::hint::black_box(analysis::recurring::recurring(&trace, &found));
            }),
        ),
        (
            "iterations (auto marker)",
            best_of_3(&|| {
                std::hint::black_box(analysis::iterations::iterations(&trace, None));
            }),
        ),
        ("drill-down of the slowest", {
            let it = analysis::iterations::iterations(&trace, None);
            let cpu = analysis::gaps::CpuIndex::new(&trace);
            best_of_3(&|| {
                if let Some(k) = it.slowest_index {
                    std::hint::black_box(analysis::drilldown::drilldown(
                        &trace,
                        &cpu,
                        &it,
                        k,
                        options.min_gap_ns,
                        10,
                    ));
                }
            })
        }),
        (
            "kernel and NCCL summaries",
            best_of_3(&|| {
                std::hint::black_box(analysis::summary::kernels_by_name(&trace, &devices, None));
                std::hint::black_box(analysis::summary::nccl_by_type(&trace, &devices, None));
            }),
        ),
        (
            "NCCL bytes and bandwidth (report)",
            best_of_3(&|| {
                std::hint::black_box(analysis::nccl_payload::nccl_payload(&trace, options.top));
            }),
        ),
        (
            "NCCL per kernel + by size (window's worker)",
            best_of_3(&|| {
                let transfers = analysis::nccl_payload::kernel_transfers(&trace);
                std::hint::black_box(analysis::nccl_sizes::size_groups(&trace, &transfers, None));
            }),
        ),
        (
            "all (overview, in parallel)",
            best_of_3(&|| {
                std::hint::black_box(crate::overview::overview(&trace, &options));
            }),
        ),
    ];
    for (name, secs) in rows {
        println!("{name:<30} {:>8.1} ms", secs * 1e3);
    }
    let overview = crate::overview::overview(&trace, &options);
    println!(
        "found: {} gaps, {} recurring patterns, {} iterations (slowest {:?})",
        overview.gaps.len(),
        overview.recurring.len(),
        overview.iterations.count(),
        overview.iterations.slowest_index
    );
    print_peak_rss();
    Ok(())
}
