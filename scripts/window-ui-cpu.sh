#!/usr/bin/env bash
# The UI thread's CPU time while the window opens FILE cold (no cache), the pointer left
# alone: every second, the main thread's CPU seconds (utime + stime of /proc/PID/task/PID)
# and the whole process's, for SECONDS (default 30: the load, the analyses and the
# findings' replays end within it on a 1.8 GB export), then both over the last 10 s
# (the window idle with its findings shown: it should repaint on change, not at every
# vsync). Needs Xvfb and a release build. Usage: scripts/window-ui-cpu.sh FILE [SECONDS]
set -euo pipefail
FILE=${1:?usage: $0 FILE.sqlite [SECONDS]}
SECONDS_TOTAL=${2:-30}
BIN=${BIN:-target/release/nsys-explorer}
OUT=${OUT:-$(mktemp -d)}
. "$(dirname "$0")/xdo-lib.sh"
start_display 96
xdotool mousemove 1395 895
"$BIN" --no-cache "$FILE" & APP=$!
TICK=$(getconf CLK_TCK)
cpu() { awk -v t="$TICK" '{ printf "%.2f", ($14 + $15) / t }' "$1"; }
ui_at=(); all_at=()
for t in $(seq 1 "$SECONDS_TOTAL"); do
  sleep 1
  ui=$(cpu "/proc/$APP/task/$APP/stat"); all=$(cpu "/proc/$APP/stat")
  ui_at[$t]=$ui; all_at[$t]=$all
  printf 't=%3d s  UI thread %6.2f s CPU, process %6.2f s CPU\n' "$t" "$ui" "$all"
done
last=$SECONDS_TOTAL; before=$((SECONDS_TOTAL - 10))
awk -v a="${ui_at[$before]}" -v b="${ui_at[$last]}" -v c="${all_at[$before]}" -v d="${all_at[$last]}" \
  'BEGIN { printf "last 10 s: UI thread %.2f s CPU (%.0f %%), process %.2f s\n", b - a, 10 * (b - a), d - c }'
# Where the process's CPU went, by thread name (llvmpipe-N: the software renderer's).
for task in /proc/$APP/task/*; do printf '%s %s\n' "$(cat "$task/comm")" "$(cpu "$task/stat")"; done |
  awk '{ sub(/-?[0-9]+$/, "", $1); s[$1] += $2 } END { for (n in s) if (s[n] >= 0.05) printf "  %-20s %6.2f s CPU\n", n, s[n] }' | sort -k2 -nr
shot window-ui-cpu-end; quit
