#!/usr/bin/env python3
"""How fast this machine hands a process fresh memory, in 4 KiB pages and in huge pages.

Usage: scripts/first-touch.py [MB] [PAUSE_S]

Maps MB (160) of anonymous memory, advised MADV_NOHUGEPAGE or MADV_HUGEPAGE, writes a
byte a page and prints the rate; each after PAUSE_S (6) seconds idle, as a one-shot
command finds memory. On a VM whose host takes free memory back (virtio-balloon free page
reporting) a fresh huge page waits for the host: docs/benchmarks.md has the figures behind
`huge_pages::set_advised`.
"""
import mmap
import sys
import time

MB = int(sys.argv[1]) if len(sys.argv) > 1 else 160
PAUSE = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
N = MB << 20

for _ in range(2):
    for huge in (False, True):
        time.sleep(PAUSE)
        m = mmap.mmap(-1, N, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        m.madvise(mmap.MADV_HUGEPAGE if huge else mmap.MADV_NOHUGEPAGE)
        t = time.perf_counter()
        for off in range(0, N, 4096):
            m[off] = 1
        dt = time.perf_counter() - t
        kind = "huge pages" if huge else "4 KiB pages"
        print(f"after {PAUSE:g} s idle, {kind}: {dt:.3f} s, {N / dt / 1e9:.2f} GB/s", flush=True)
        m.close()
