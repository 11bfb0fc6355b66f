#!/usr/bin/env bash
# A fuzzing campaign (docs/contributing.md): each named target in turn, until it has run
# RUNS executions or SECS seconds, whichever comes first, over its seeds plus a corpus kept
# in target/fuzz-corpus/TARGET (the shared real exports added for export_bytes). Prints
# libFuzzer's final stats a target, and the report of a crash (the campaign goes on to the
# next target; the script then fails).
# One allocation past 2 GB is a finding (-malloc_limit_mb); the process may hold more, as
# libFuzzer keeps the corpus in memory (export_bytes' real exports: 1.7 GB after 7,000 runs).
# Usage: scripts/fuzz-campaign.sh [TARGET...]   (default: all five; SECS=3600 RUNS=10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-3600}
RUNS=${RUNS:-10000000}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(nvtx_payload cache_entry summary odd_export export_bytes)
# Built once, then each binary run as it is (a source edited meanwhile does not rebuild).
(cd fuzz && cargo +nightly fuzz build)
bin=fuzz/target/x86_64-unknown-linux-gnu/release
for target in "${targets[@]}"; do
  corpus="target/fuzz-corpus/$target"
  mkdir -p "$corpus"
  if [ "$target" = export_bytes ]; then
    cp -n ../shared/fixtures/real*/*.sqlite "$corpus/" 2>/dev/null || true
  fi
  echo "== $target: up to $RUNS runs or $SECS s, from $(date -u +%H:%M:%S)"
  log="target/fuzz-corpus/$target.log"
  rc=0
  mkdir -p "fuzz/artifacts/$target"
  "$bin/$target" -artifact_prefix="fuzz/artifacts/$target/" "$corpus" "fuzz/seeds/$target" \
    -runs="$RUNS" -max_total_time="$SECS" -rss_limit_mb=6144 -malloc_limit_mb=2048 -timeout=20 \
    -max_len=4194304 -print_final_stats=1 >"$log" 2>&1 || rc=$?
  grep -E '^(stat::|#[0-9]+ +DONE)' "$log" || true
  if [ "$rc" != 0 ]; then
    echo "== $target FAILED (exit $rc): the end of $log"
    tail -40 "$log"
    failed=1
  fi
  echo "== $target ended $(date -u +%H:%M:%S)"
done
exit "${failed:-0}"
