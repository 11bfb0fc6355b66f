#!/usr/bin/env bash
# A fuzzing campaign (docs/contributing.md): each named target in turn, until it has run
# RUNS executions or SECS seconds, whichever comes first, over its seeds plus a corpus kept
# in target/fuzz-corpus/TARGET (the shared real exports added for export_bytes). Prints
# libFuzzer's final stats a target, and the report of a crash (the campaign goes on to the
# next target; the script then fails).
# One allocation past 2 GB is a finding (-malloc_limit_mb); the process may hold more, as
# libFuzzer keeps the corpus in memory (export_bytes' real exports: 1.7 GB after 7,000 runs).
# Usage: scripts/fuzz-campaign.sh [TARGET...]   (default: all five; SECS=3600 RUNS=10000000
# PRUNE_MB=500)
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
  log="target/fuzz-corpus/$target.log"
  # A corpus grown past PRUNE_MB is first cut to the inputs that add coverage (libFuzzer's
  # -merge=1): export_bytes' had grown to 5.2 GB (1,188 inputs of up to 3.7 MB), and a
  # campaign of 6 minutes only re-ran it (2,075 runs); pruned to 41 inputs (12 MB) with the
  # same coverage, the next one ran 10,784 (docs/contributing.md).
  if [ "$(du -sm "$corpus" | cut -f1)" -gt "${PRUNE_MB:-500}" ]; then
    echo "== $target: pruning its corpus ($(du -sh "$corpus" | cut -f1))"
    pruned="$corpus.pruned"
    rm -rf "$pruned" && mkdir -p "$pruned"
    if "$bin/$target" -merge=1 "$pruned" "$corpus" -rss_limit_mb=6144 -malloc_limit_mb=2048 \
      -timeout=20 >"$log.merge" 2>&1; then
      rm -rf "$corpus" && mv "$pruned" "$corpus"
      echo "== $target: corpus pruned to $(ls "$corpus" | wc -l) inputs ($(du -sh "$corpus" | cut -f1))"
    else
      rm -rf "$pruned"
      echo "== $target: pruning failed (see $log.merge); the corpus is kept"
    fi
  fi
  echo "== $target: up to $RUNS runs or $SECS s, from $(date -u +%H:%M:%S)"
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
