//! A small scope profiler: a named scope times itself into one table per process (count,
//! total, last, longest), which the window shows under Debug ▸ Profile. Meant for coarse
//! scopes — load phases, analyses, a frame, a replay — not per item: a scope costs two clock
//! reads and a lock. (puffin's viewer, `puffin_egui`, needs an older egui than ours.)

use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeStat {
    pub name: &'static str,
    pub count: u64,
    pub total_ns: u64,
    pub last_ns: u64,
    pub max_ns: u64,
}

static TABLE: Mutex<Vec<ScopeStat>> = Mutex::new(Vec::new());

/// Times itself until dropped.
pub struct Scope {
    name: &'static str,
    start: Instant,
}

/// Starts timing `name` (kept until the returned value is dropped).
pub fn scope(name: &'static str) -> Scope {
    trace_line('+', name);
    Scope {
        name,
        start: Instant::now(),
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        record(self.name, self.start.elapsed().as_nanos() as u64);
        trace_line('-', self.name);
    }
}

/// With `NSYS_EXPLORER_SCOPES=1`, every scope's start (`+`) and end (`-`) is written to
/// standard error with the process's time, its resident memory then, the most it held
/// since the line before (sampled every 5 ms) and its user and system CPU time: where a
/// peak of memory or the kernel's page zeroing sits, phase by phase
/// (the benchmarks give only the peak).
pub fn trace_line(sign: char, name: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static MOST: AtomicU64 = AtomicU64::new(0);
    static ON: std::sync::OnceLock<Option<Instant>> = std::sync::OnceLock::new();
    let on = ON.get_or_init(|| {
        std::env::var_os("NSYS_EXPLORER_SCOPES")?;
        std::thread::spawn(|| {
            loop {
                let rss = crate::memory::rss_bytes().unwrap_or(0);
                MOST.fetch_max(rss, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        Some(Instant::now())
    });
    let Some(t0) = on else { return };
    let rss = crate::memory::rss_bytes().unwrap_or(0);
    let most = MOST.swap(rss, Ordering::Relaxed).max(rss);
    let (user, sys) = cpu_seconds();
    eprintln!(
        "{:9.3} s {:8.1} MB (most {:8.1}) user {user:7.2} s sys {sys:6.2} s {sign} {name}",
        t0.elapsed().as_secs_f64(),
        rss as f64 / 1e6,
        most as f64 / 1e6
    );
}

/// Adds a time measured elsewhere (a load phase) under `name`.
pub fn record(name: &'static str, ns: u64) {
    let Ok(mut table) = TABLE.lock() else { return };
    match table.iter_mut().find(|s| s.name == name) {
        Some(s) => {
            s.count += 1;
            s.total_ns += ns;
            s.last_ns = ns;
            s.max_ns = s.max_ns.max(ns);
        }
        None => table.push(ScopeStat {
            name,
            count: 1,
            total_ns: ns,
            last_ns: ns,
            max_ns: ns,
        }),
    }
}

/// Every scope timed so far, in the order first seen.
pub fn snapshot() -> Vec<ScopeStat> {
    TABLE.lock().map(|t| t.clone()).unwrap_or_default()
}

/// Times the rest of the enclosing block as `name`.
#[macro_export]
macro_rules! profile_scope {
    ($name:expr) => {
        let _profile_scope = $crate::profile::scope($name);
    };
}

/// The process's user and system CPU time so far, in seconds (Linux; zero elsewhere).
fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // After the command name's closing parenthesis: fields 3 on; utime and stime are the
    // 14th and 15th, in clock ticks (100 a second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let field = |k: usize| {
        rest.split_whitespace()
            .nth(k - 3)
            .and_then(|v| v.parse::<f64>().ok())
    };
    (
        field(14).unwrap_or(0.0) / 100.0,
        field(15).unwrap_or(0.0) / 100.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_counts_and_times_each_time_it_is_left() {
        for _ in 0..3 {
            let _s = scope("profile test scope");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let s = snapshot()
            .into_iter()
            .find(|s| s.name == "profile test scope")
            .unwrap();
        assert_eq!(s.count, 3);
        assert!(s.total_ns >= 3_000_000 && s.max_ns >= s.last_ns.min(s.max_ns));
    }
}
