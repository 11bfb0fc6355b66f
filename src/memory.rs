//! Process memory figures for benchmarks (Linux `/proc`; `None` elsewhere).

/// Peak resident set size of this process, in bytes (`VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Keeps glibc's threshold for serving large blocks by `mmap` fixed at its default
/// (128 KiB). glibc raises it whenever a large block is freed — after a load stage frees
/// its per-range columns, later multi-MB columns then come from the heap, between
/// long-lived ones, and are never given back: the two-stage load peaked at 804–872 MB
/// instead of 629 MB on `large` (measured with `MALLOC_MMAP_THRESHOLD_`, see README).
pub fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called once at start-up.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
