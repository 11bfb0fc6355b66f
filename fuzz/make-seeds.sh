#!/usr/bin/env bash
# Writes the fuzz targets' seed corpora into fuzz/seeds/TARGET/ (committed; small):
# a minimal export of nsys's tables with a few rows and the bad-input shapes (empty, text,
# a truncated header) for export_bytes; a generated run's rank summary for summary; a
# generated run's cached model (the payload after the entry's header) for cache_entry;
# a few random inputs for the structure-aware targets. A campaign adds the shared real
# exports itself (scripts in docs/contributing.md).
# Usage: fuzz/make-seeds.sh [BINARY]   (default target/release/nsys-explorer)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/nsys-explorer}")
S=fuzz/seeds
rm -rf "$S" && mkdir -p "$S"/{export_bytes,odd_export,summary,cache_entry,nvtx_payload}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# export_bytes: nsys 2024's tables in 512-byte pages, a kernel, a launch and a range.
{
  echo "PRAGMA page_size = 512;"
  cat crates/core/src/synth/ddl_2024.sql
  echo "INSERT INTO StringIds VALUES (0, 'flash_fwd_kernel'), (1, 'cudaLaunchKernel'), (2, 'step');"
  echo "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) VALUES (2000, 5000, 0, 1, 7, 1, 1677721600, 0, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 0);"
  echo "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (1000, 1500, 1, 1677721601, 1, 1, 0);"
  echo "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (900, 6000, 59, 'step_1', 1677721601);"
  echo "VACUUM;"
} | sqlite3 "$S/export_bytes/minimal-export"
: > "$S/export_bytes/empty"
echo "not an export" > "$S/export_bytes/text"
head -c 100 "$S/export_bytes/minimal-export" > "$S/export_bytes/truncated-header"

# summary and cache_entry: a tiny generated run, summarised and cached.
"$BIN" synth --preset tiny --steps 4 --blocks 1 --no-cache --out "$TMP/tiny.sqlite" >/dev/null
"$BIN" summarize --no-cache "$TMP/tiny.sqlite" --out "$TMP/sum" >/dev/null
cp "$TMP"/sum/*.summary "$S/summary/tiny.summary"
XDG_CACHE_HOME="$TMP/cache" "$BIN" report --json "$TMP/tiny.sqlite" >/dev/null
python3 - "$TMP/cache" "$S/cache_entry" <<'PY'
import pathlib, struct, sys
# A cache entry: magic (8), version (4), byte order (4), key length (4), the key, payload
# length (8), checksum (8), then the payload the decoders read.
for i, entry in enumerate(sorted(pathlib.Path(sys.argv[1]).rglob("*"))):
    data = entry.read_bytes() if entry.is_file() else b""
    if data[:8] != b"NSYSXCA\x01":
        continue
    key_len = struct.unpack_from("<I", data, 16)[0]
    key, payload = data[20:20 + key_len], data[20 + key_len + 16:]
    if b"model" in key and len(payload) < 200_000:
        (pathlib.Path(sys.argv[2]) / f"model-{i}").write_bytes(payload)
PY

# The structure-aware targets: a few random descriptions to start from.
for t in odd_export nvtx_payload; do
  for n in 1 2 3 4; do head -c $((64 * n)) /dev/urandom > "$S/$t/random-$n"; done
done
du -sh "$S"/*
