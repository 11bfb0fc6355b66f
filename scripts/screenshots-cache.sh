#!/usr/bin/env bash
# The window re-opening a trace from the cache, as a person sees it: FILE opened once
# (cold, into a cache of this script's own), closed, opened again; shots 1, 1.5, 2 and 4 s
# after the second launch. Needs Xvfb, xdotool, x11-apps (xwd), imagemagick and a release
# build. Usage: scripts/screenshots-cache.sh FILE.sqlite
set -euo pipefail
FILE=${1:?usage: $0 FILE.sqlite}
BIN=${BIN:-target/release/nsys-explorer}
OUT=${OUT:-screenshots}
. "$(dirname "$0")/xdo-lib.sh"
start_display 97
export XDG_CACHE_HOME=$(mktemp -d)
NAME=$(basename "$FILE")

"$BIN" "$FILE" & APP=$!
# Long enough for the load, the analyses and the replays to end and be kept.
wait_loaded "$NAME" 45
quit
echo "cache after the first open: $(du -sh "$XDG_CACHE_HOME" | cut -f1)"

START=$(date +%s.%N)
"$BIN" "$FILE" & APP=$!
for _ in $(seq 100); do xdotool search --name "^$NAME" >/dev/null 2>&1 && break; sleep 0.05; done
echo "window titled after $(echo "$(date +%s.%N) - $START" | bc) s"
for t in 1 1.5 2 4; do
  wait_s=$(echo "$START + $t - $(date +%s.%N)" | bc)
  [[ $wait_s == -* ]] || sleep "$wait_s"
  shot "reopen-${t}s"
  echo "  taken $(echo "$(date +%s.%N) - $START" | bc) s after the launch"
done
quit
rm -rf "$XDG_CACHE_HOME"
