//! `bench window` and `bench reopen`: the window's own path to its findings (no frame
//! drawn), cold and from the cache.

use std::path::Path;
use std::time::Instant;

use super::BenchCache;
use super::report::cold_report_process;
use crate::overview::Options;

/// `bench reopen`: a cold open through a cache of its own, then the window's re-open from
/// it three times.
pub fn bench_reopen(file: &Path) -> Result<(), String> {
    let _dir = BenchCache::new()?;
    let t = Instant::now();
    crate::session::report_output(
        std::slice::from_ref(&file.to_path_buf()),
        true,
        &Options::default(),
    )?;
    window_reopen(file)?;
    println!(
        "cold open through the cache: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    for _ in 0..3 {
        window_reopen(file)?;
    }
    println!("scopes of the last re-open:");
    for s in crate::profile::snapshot() {
        println!("  {:<40} {:>8.3} s", s.name, s.last_ns as f64 / 1e9);
    }
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS {:.1} MB", peak as f64 / 1e6);
    }
    Ok(())
}

/// The window's re-open, in this process, from the cache the caller filled.
pub(super) fn window_reopen(file: &Path) -> Result<(), String> {
    let times = window_path(file)?;
    println!("the window's re-open (in process): {times}");
    Ok(())
}

/// The window's own path to its findings — the load job it runs, the same stages, no
/// frame drawn — each message's time since the start.
pub struct WindowTimes {
    pub gpu_ready: Option<f64>,
    pub whole_trace: f64,
    pub analysed: f64,
    pub findings: f64,
    pub found: usize,
}

impl std::fmt::Display for WindowTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(t) = self.gpu_ready {
            write!(f, "GPU rows {t:.3} s, ")?;
        }
        write!(
            f,
            "whole trace with its timeline {:.3} s, analyses {:.3} s, {} findings ranked {:.3} s",
            self.whole_trace, self.analysed, self.found, self.findings
        )
    }
}

/// Runs the window's load of `file` (its worker, polled as a frame would) to the end.
pub fn window_path(file: &Path) -> Result<WindowTimes, String> {
    use crate::ui::load_job::Message;
    let t = Instant::now();
    let job = crate::ui::loading::spawn_load(crate::session::Source::One(file.to_path_buf()), None);
    let mut times = WindowTimes {
        gpu_ready: None,
        whole_trace: 0.0,
        analysed: 0.0,
        findings: 0.0,
        found: 0,
    };
    loop {
        let Some(m) = job.poll() else {
            std::thread::sleep(std::time::Duration::from_millis(2));
            continue;
        };
        let now = t.elapsed().as_secs_f64();
        match m {
            Message::GpuReady(_) => times.gpu_ready = Some(now),
            Message::Done(result) => {
                result.map_err(|e| e.to_string())?;
                times.whole_trace = now;
            }
            Message::Analysed(_) => times.analysed = now,
            Message::AnalysesCancelled => return Err("analyses cancelled".into()),
            Message::Ranked(found) => {
                times.findings = now;
                times.found = found.len();
                return Ok(times);
            }
            _ => {}
        }
    }
}

/// `bench window`: the window's time to its findings on a cold open (no cache) against
/// `report --json --no-cache` in a fresh process, alternated, then a re-open from the
/// cache: what issue 69 measures, without drawing.
pub fn bench_window(file: &Path) -> Result<(), String> {
    println!("file: {}", file.display());
    let mut ratios = Vec::new();
    for round in 1..=2 {
        let report = cold_report_process(file)?.seconds;
        // Cold, as the report: nothing read from the cache nor kept in it.
        crate::cache::disable();
        let window = window_path(file)?;
        ratios.push(window.findings / report);
        println!(
            "round {round}: report --json --no-cache {report:.3} s; the window cold: {window} ({:.2}× the report)",
            window.findings / report
        );
    }
    let _dir = BenchCache::new()?;
    window_path(file)?;
    let reopen = window_path(file)?;
    println!("the window's re-open from the cache: {reopen}");
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS {:.1} MB", peak as f64 / 1e6);
    }
    Ok(())
}
