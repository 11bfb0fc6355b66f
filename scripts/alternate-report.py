#!/usr/bin/env python3
"""Alternated runs of `report --json --no-cache` against the narrow sqlite3 scan.

Usage: scripts/alternate-report.py ROUNDS EXPORT BINARY [BINARY ...]

Each round runs every binary's report once (their order reversed every other round), then
the narrow scan; a report's ratio is over the mean of the scans just before and after its
round, so a machine whose speed moves is compared with itself. Prints, per binary, the
median report time, the median (and range) of its ratios, its median CPU time and the
median core-seconds its cores stood idle. The narrow scan is the one
`nsys-explorer bench report` runs (`NARROW_SQL` in src/bench/mod.rs).
"""
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def narrow_sql() -> str:
    source = (ROOT / "src/bench/mod.rs").read_text()
    return re.search(r'const NARROW_SQL: &str = "(.*?)";', source, re.S).group(1)


def seconds(cmd) -> float:
    return timed(cmd)[0]


def timed(cmd) -> tuple:
    """(wall seconds, CPU seconds) of a run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    rounds, export, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    scan = ["sqlite3", "-readonly", f"file:{export}?immutable=1", narrow_sql()]
    runs = {b: [] for b in binaries}
    before = seconds(scan)
    for r in range(rounds):
        order = binaries if r % 2 == 0 else binaries[::-1]
        took = {b: timed([b, "report", "--json", "--no-cache", export]) for b in order}
        after = seconds(scan)
        for b in binaries:
            wall, cpu = took[b]
            runs[b].append((wall, wall / ((before + after) / 2), cpu))
        before = after
    cores = os.cpu_count() or 1
    for b, v in runs.items():
        times, ratios = [x[0] for x in v], [x[1] for x in v]
        # Core-seconds no thread of the report used: steadier than wall time on a machine
        # whose speed moves, for changes that fill idle cores.
        idle = [cores * x[0] - x[2] for x in v]
        print(
            f"{export} {b}: report median {statistics.median(times):.2f} s, "
            f"ratio to the narrow scan median {statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}-{max(ratios):.2f}), CPU median "
            f"{statistics.median(x[2] for x in v):.2f} s, idle median "
            f"{statistics.median(idle):.2f} core-s, {len(v)} rounds"
        )


if __name__ == "__main__":
    main()
