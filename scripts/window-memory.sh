#!/usr/bin/env bash
# The window's memory on a cold open, as a person uses it: FILE opened without the cache,
# the pointer moved over the window for SECONDS (default 120: load, analyses, findings'
# replays, the gap table's sorts and the NCCL figures all end well within it), the RSS
# printed every 10 s, then the peak (VmHWM) and what the window holds at the end (VmRSS).
# Needs Xvfb, xdotool and a release build. Usage: scripts/window-memory.sh FILE [SECONDS]
set -euo pipefail
FILE=${1:?usage: $0 FILE.sqlite [SECONDS]}
SECONDS_TOTAL=${2:-120}
BIN=${BIN:-target/release/nsys-explorer}
OUT=${OUT:-$(mktemp -d)}
. "$(dirname "$0")/xdo-lib.sh"
start_display 97
"$BIN" --no-cache "$FILE" & APP=$!
kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$APP/status"; }
for t in $(seq 10 10 "$SECONDS_TOTAL"); do
  hover_for 10
  printf 't=%4d s  RSS %5d MB\n' "$t" $(( $(kib VmRSS) / 1000 ))
done
printf 'peak (VmHWM) %d MB, held at the end (VmRSS) %d MB\n' \
  $(( $(kib VmHWM) / 1000 )) $(( $(kib VmRSS) / 1000 ))
quit
