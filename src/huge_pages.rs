//! The system allocator, with large blocks backed by transparent huge pages.
//!
//! A load fills hundreds of MB of columns and a re-open from the cache as much again, all
//! freshly mapped: with 4 KiB pages that is a page fault per 4 KiB, a fifth of a re-open's
//! time on a VM. Linux here gives huge pages only where asked (`madvise` mode, Debian's
//! default), so a block of 32 MiB or more is advised to take them: the same as glibc's
//! `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which a program cannot set for itself. Smaller
//! blocks come from glibc's heaps (see `memory::LoadMemoryGuard`), where a huge page would
//! fill 2 MiB around any byte touched and keep pages the heap has freed: advising blocks
//! from 4 MiB there held 70 MB more after a cold open of the 2 GB export in the window.
//! mimalloc was tried: as fast, but ~100 MB more at peak on the 2 GB trace.
//!
//! Only in the processes that open trace after trace (the window, the MCP server): there a
//! block freed by the last trace is taken again while the system still backs it. A one-shot
//! command's pages are all fresh, and on a VM whose host takes free memory back
//! (virtio-balloon free page reporting, as on the project's machine) a fresh huge page
//! waits for the host to back 2 MiB: its first touch was slower than 4 KiB pages' there, a
//! cold `report` faster without the advice (docs/benchmarks.md, "Figures behind the code").

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Blocks from this size on are advised: glibc maps them on their own (the threshold
/// `memory::LoadMemoryGuard` sets).
const ADVISED_FROM: usize = nsys_explorer_core::memory::MMAP_FROM_BYTES;

pub struct HugePages;

/// 4 KiB pages, as on x86-64 Linux (where pages are larger, `madvise` refuses a range not
/// aligned to them and nothing is advised).
const PAGE: usize = 4096;

/// Whether large blocks are advised from now on (see the module's text).
static ADVISED: AtomicBool = AtomicBool::new(true);

/// Advises large blocks allocated from now on to take huge pages, or not: a one-shot
/// command turns it off before it starts.
pub fn set_advised(on: bool) {
    ADVISED.store(on, Ordering::Relaxed);
}

// SAFETY: every call goes to `System` unchanged; `advise` only sets a paging hint on
// memory the block owns.
#[expect(unsafe_code, reason = "a global allocator is an unsafe trait")]
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

/// Asks for huge pages over the block's whole mapping, or over the whole 4 KiB pages of
/// `[p, p + len)` where the block is not a mapping of its own.
///
/// The whole mapping, glibc's header page included: advising only the pages inside
/// `[p, p + len)` split the mapping in two areas, and `mremap` refuses to grow a range over
/// two (`EFAULT`), so glibc's `realloc` of a large block fell back to a new block and a copy
/// of all the old one, its untouched pages made resident (docs/benchmarks.md, "Figures
/// behind the code").
fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < ADVISED_FROM || !ADVISED.load(Ordering::Relaxed) {
        return;
    }
    let (start, end) = match own_mapping_end(p) {
        // glibc puts a block it maps on its own at a header's length into the mapping,
        // and the block's usable size runs to the mapping's end.
        Some(end) => ((p as usize) & !(PAGE - 1), end),
        None => (
            (p as usize).next_multiple_of(PAGE),
            (p as usize + len) & !(PAGE - 1),
        ),
    };
    if end > start {
        // SAFETY: MADV_HUGEPAGE is a paging hint on the block's pages (its mapping's, or
        // the whole pages inside it) and changes no contents. A failure (THP off) leaves
        // ordinary pages: nothing to do.
        #[expect(unsafe_code, reason = "libc's madvise has no safe wrapper")]
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Where the mapping of a block glibc mapped on its own ends: its usable size runs there,
/// a page boundary (a block carved from a heap ends elsewhere: `None`).
fn own_mapping_end(p: *mut u8) -> Option<usize> {
    // SAFETY: `p` is a live block from glibc's malloc (`System` on linux-gnu).
    #[expect(unsafe_code, reason = "libc's malloc_usable_size has no safe wrapper")]
    let usable = unsafe { libc::malloc_usable_size(p.cast()) };
    let end = p as usize + usable;
    end.is_multiple_of(PAGE).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapping `/proc/self/maps` lists around `addr`: its start and end.
    fn mapping_of(addr: usize) -> Option<(usize, usize)> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        maps.lines().find_map(|line| {
            let (a, b) = line.split_whitespace().next()?.split_once('-')?;
            let a = usize::from_str_radix(a, 16).ok()?;
            let b = usize::from_str_radix(b, 16).ok()?;
            (a <= addr && addr < b).then_some((a, b))
        })
    }

    /// Whether `[p, p + len)` lies in one mapping: what `mremap` needs to grow it.
    fn in_one_mapping(p: *mut u8, len: usize) -> bool {
        mapping_of(p as usize).is_some_and(|(_, end)| p as usize + len <= end)
    }

    #[test]
    #[expect(
        unsafe_code,
        reason = "the allocator's own calls, as Rust's Vec makes them"
    )]
    fn a_large_block_stays_one_mapping_when_advised_and_when_grown() {
        if std::fs::read_to_string("/proc/self/maps").is_err() {
            return; // Nothing to tell the mappings by (a sandbox without /proc).
        }
        let old = Layout::from_size_align(40 << 20, 8).unwrap();
        let new_size = 90 << 20;
        // SAFETY: each block is used only within its size and freed once with its layout.
        unsafe {
            let p = HugePages.alloc(old);
            assert!(!p.is_null());
            assert!(
                in_one_mapping(p, old.size()),
                "advice split the block's mapping"
            );
            p.write_bytes(7, 4096);
            let q = HugePages.realloc(p, old, new_size);
            assert!(!q.is_null());
            assert_eq!(*q.add(100), 7, "the contents moved with the block");
            assert!(in_one_mapping(q, new_size));
            HugePages.dealloc(q, Layout::from_size_align(new_size, 8).unwrap());
        }
    }
}
