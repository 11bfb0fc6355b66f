"""Benchmark: `nx.open(FILE)` + `.gaps()` against the CLI's `report FILE --json`, both cold
(no cache), alternating; prints each time, the ratio and this process's peak RSS.

    python crates/python/bench/open_gaps.py LARGE.sqlite [NSYS_EXPLORER_BIN] [ROUNDS]
"""

import resource
import subprocess
import sys
import time

import nsys_explorer as nx


def main():
    path = sys.argv[1]
    binary = sys.argv[2] if len(sys.argv) > 2 else "target/release/nsys-explorer"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    for r in range(rounds):
        t0 = time.monotonic()
        subprocess.run([binary, "--no-cache", "report", path, "--json"], check=True, stdout=subprocess.DEVNULL)
        cli = time.monotonic() - t0
        t0 = time.monotonic()
        t = nx.open(path, cache=False)
        opened = time.monotonic() - t0
        gaps = t.gaps()
        both = time.monotonic() - t0
        print(f"round {r}: report --json {cli:.2f} s; open {opened:.2f} s + gaps() {both - opened:.2f} s "
              f"= {both:.2f} s ({gaps.num_rows} gaps); ratio {both / cli:.2f}")
        del t, gaps
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"peak RSS of this Python process {peak:.0f} MB")


if __name__ == "__main__":
    main()
