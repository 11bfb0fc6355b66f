//! Process memory: the peak RSS for benchmarks (Linux `/proc`; `None` elsewhere), and the
//! allocator thresholds a load holds.
#![expect(
    unsafe_code,
    reason = "glibc's mallopt and getrusage, which have no safe wrapper"
)]

/// Resident set size of this process now, in bytes (`VmRSS`).
pub fn rss_bytes() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

/// A `/proc/self/status` line's figure, in kB.
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Peak resident set size of this process, in bytes (`VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// While alive, keeps glibc's threshold for serving large blocks by `mmap` at its default
/// (128 KiB); loads hold one, and so does the command line's `report` while it analyses
/// (it draws no frames), so that the analyses' and replays' freed temporaries go back. glibc raises the threshold whenever a large block is freed —
/// after a load stage frees its per-range columns, later multi-MB columns then come from
/// the heap, between long-lived ones, and are never given back: the two-stage load peaked
/// at 804–872 MB instead of 626 MB on `large` (see README).
///
/// Between loads the thresholds are set high instead: a frame builds and frees meshes of
/// a few hundred KB, and mapping them afresh each frame cost more in page faults than the
/// drawing (large, mid zoom: 0.93 ms a frame with 128 KiB, 0.5 ms with 1 MiB).
pub struct LoadMemoryGuard(());

/// Loads running now (a cancelled one may still be finishing while the next starts).
static LOADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl LoadMemoryGuard {
    pub fn hold() -> Self {
        if LOADS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            set_thresholds(128 * 1024, 128 * 1024);
        }
        Self(())
    }
}

impl Drop for LoadMemoryGuard {
    fn drop(&mut self) {
        if LOADS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            // glibc's largest dynamic mmap threshold; frees below 64 MiB stay for reuse.
            set_thresholds(32 << 20, 64 << 20);
            // What the load freed in the middle of the heap is given back at once.
            trim();
        }
    }
}

fn set_thresholds(mmap_bytes: i32, trim_bytes: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters, which glibc reads under its lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, mmap_bytes);
        libc::mallopt(libc::M_TRIM_THRESHOLD, trim_bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (mmap_bytes, trim_bytes);
}

/// Gives the free pages of glibc's arenas back to the system (`malloc_trim`).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The largest peak RSS of this process's children that have ended (`RUSAGE_CHILDREN`), in
/// bytes: a benchmark's figure for a command run in a process of its own.
pub fn children_peak_rss_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getrusage writes into the zeroed struct it is given, nothing else.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
        (rc == 0).then(|| usage.ru_maxrss as u64 * 1024)
    }
    #[cfg(not(target_os = "linux"))]
    None
}
