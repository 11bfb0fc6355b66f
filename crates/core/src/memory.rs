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

/// Blocks under this size come from glibc's heaps, and are reused there once freed; glibc
/// maps larger ones on their own (the binary's allocator advises those to take huge
/// pages). The largest threshold glibc takes, fixed (glibc's own moves with what is freed).
pub const MMAP_FROM_BYTES: usize = 32 << 20;
/// Free memory a heap's top may keep before glibc gives it back by itself.
const TRIM_FROM_BYTES: usize = 64 << 20;
/// While a guard is held, the free memory a thread's heap keeps at its top when it could
/// go (glibc's `M_TOP_PAD`): without it, a heap emptied by a freed chunk is unmapped at
/// once and mapped afresh for the next, a fault per page each time. The figures:
/// docs/benchmarks.md, "Figures behind the code".
const TOP_PAD_BYTES: usize = 64 << 20;
/// glibc's own `M_TOP_PAD`, put back when the last guard goes.
const DEFAULT_TOP_PAD_BYTES: usize = 128 << 10;

/// While alive, freed blocks under 32 MiB stay in glibc's heaps for reuse; when the last
/// guard goes (a load ends, or the command line's analyses), what is free in the heaps
/// goes back to the system (`malloc_trim`). Loads hold one, and so does the command line's
/// `report` while it analyses.
///
/// Why reuse: a fresh page costs a fault and its zeroing. With every block from 128 KiB
/// mapped afresh (as loads had it before), each chunk of a table read and each analysis'
/// temporaries were faulted in anew, a large share of a cold report's CPU; reused, a
/// report is faster for a slightly higher peak. Frames gain too: a frame builds and frees
/// meshes of a few hundred KB. The figures: docs/benchmarks.md, "Figures behind the code".
pub struct LoadMemoryGuard(());

/// Guards alive now (a cancelled load may still be finishing while the next starts).
static LOADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl LoadMemoryGuard {
    pub fn hold() -> Self {
        if LOADS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            set_thresholds(MMAP_FROM_BYTES, TRIM_FROM_BYTES);
            set_top_pad(TOP_PAD_BYTES);
        }
        Self(())
    }
}

impl Drop for LoadMemoryGuard {
    fn drop(&mut self) {
        if LOADS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            // The chunks and temporaries freed in the middle of the heaps go back at once.
            set_top_pad(DEFAULT_TOP_PAD_BYTES);
            trim();
        }
    }
}

fn set_thresholds(mmap_bytes: usize, trim_bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters, which glibc reads under its lock.
    unsafe {
        // Both fit an int (32 and 64 MiB).
        libc::mallopt(libc::M_MMAP_THRESHOLD, mmap_bytes as i32);
        libc::mallopt(libc::M_TRIM_THRESHOLD, trim_bytes as i32);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (mmap_bytes, trim_bytes);
}

fn set_top_pad(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: as in `set_thresholds`.
    unsafe {
        // Fits an int (64 MiB).
        libc::mallopt(libc::M_TOP_PAD, bytes as i32);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
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
