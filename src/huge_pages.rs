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

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks from this size on are advised: glibc maps them on their own (the threshold
/// `memory::LoadMemoryGuard` sets).
const ADVISED_FROM: usize = nsys_explorer_core::memory::MMAP_FROM_BYTES;

pub struct HugePages;

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

/// Asks for huge pages over the whole 4 KiB pages of `[p, p + len)`.
fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < ADVISED_FROM {
        return;
    }
    const PAGE: usize = 4096;
    let start = (p as usize).next_multiple_of(PAGE);
    let end = (p as usize + len) & !(PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside a block just allocated; MADV_HUGEPAGE changes no
        // contents. A failure (THP off) leaves ordinary pages: nothing to do.
        #[expect(unsafe_code, reason = "libc's madvise has no safe wrapper")]
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}
