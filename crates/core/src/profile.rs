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
    Scope {
        name,
        start: Instant::now(),
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        record(self.name, self.start.elapsed().as_nanos() as u64);
    }
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
