#!/usr/bin/env bash
# The critical path in the window, by real input under Xvfb: the large trace (re-opened
# from the cache a `report` filled), Iterations tab, "Slowest" (iteration 311: its
# drill-down lists the path's totals and top items, the timeline draws the path), then a
# click on the CPU range that holds most of it, and half a minute of hovering.
# Needs xvfb, xdotool, x11-apps (xwd) and imagemagick. Usage: scripts/screenshots-critical-path.sh LARGE.sqlite
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
LARGE=${1:?usage: scripts/screenshots-critical-path.sh LARGE.sqlite}
OUT=screenshots
. scripts/xdo-lib.sh
start_display 96
"$BIN" report "$LARGE" >/dev/null   # fills the cache: the window re-opens it
"$BIN" "$LARGE" & APP=$!
wait_loaded large 8
ITER_TAB=${ITER_TAB:-498}; TABS_Y=${TABS_Y:-533}
click "$ITER_TAB" "$TABS_Y"; click 500 587 3; park; shot critical-path
# The CPU range that holds most of the path (the straggler's stall): its link in the
# drill-down, found by its place in the list.
click "${CPU_X:-860}" "${CPU_Y:-861}" 2; park; shot critical-path-item
xdotool mousemove 900 300; sleep 1; shot critical-path-hover-before
hover_for 30
xdotool mousemove 900 300; sleep 1; shot critical-path-hover-after
DIFF=$(compare -metric AE "$OUT/critical-path-hover-before.png" "$OUT/critical-path-hover-after.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of hovering: $DIFF"
rm -f "$OUT/critical-path-hover-before.png" "$OUT/critical-path-hover-after.png"
quit
