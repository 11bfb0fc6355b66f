#!/usr/bin/env bash
# A cold open of FILE in the window (no cache), as a person sees it: a shot at 2 s and 4 s
# (the GPU side drawn while the CPU tables are still read), then a minute of pointer moves
# with the RSS every 10 s, a last shot, and the peak (VmHWM) and what is held (VmRSS).
# Needs Xvfb, xdotool, ImageMagick and a release build. Usage: scripts/screenshots-cold-open.sh FILE
set -euo pipefail
FILE=${1:?usage: $0 FILE.sqlite}
BIN=${BIN:-target/release/nsys-explorer}
OUT=${OUT:-screenshots}
. "$(dirname "$0")/xdo-lib.sh"
start_display 96
"$BIN" --no-cache "$FILE" & APP=$!
kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$APP/status"; }
sleep 2; shot cold-open-2s
sleep 2; shot cold-open-4s
for t in 14 24 34 44 54 64; do
  hover_for 10
  printf 't=%4d s  RSS %5d MB\n' "$t" $(( $(kib VmRSS) / 1000 ))
done
park; shot cold-open-after-60s
printf 'peak (VmHWM) %d MB, held at the end (VmRSS) %d MB\n' \
  $(( $(kib VmHWM) / 1000 )) $(( $(kib VmRSS) / 1000 ))
quit
