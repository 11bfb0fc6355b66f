#!/usr/bin/env bash
# Screenshots of the real window under Xvfb (xdotool input) of the NCCL, Memory, Gaps, CPU and
# Findings tabs of the bottom panel, each with a time window selected on the timeline, at two
# screen sizes: 1024×680 and 1600×1000. On each, the given trace is opened on a fresh user and
# the window made the screen's size (it asks for 1400×900: a smaller screen gives it its own
# size, a larger one is filled here with xdotool); once loaded, about the middle third of the
# timeline's plot is Shift+dragged (the "Selection: …" banner appears and the tabs show the
# selection's numbers), then each tab clicked and shot. Last, the pointer is moved over the
# window for 30 s and the Findings tab shot again, to check that the layout holds.
# The trace should have every tab populated, e.g.:
#   target/release/nsys-explorer synth --preset medium --memory-usage --cpu-samples \
#     --no-cache --out /tmp/shots/wan-medium.sqlite
# Output: screenshots/tabs-<width>-<tab>.png (tab: nccl, memory, gaps, cpu, findings,
# after-30s).
# Usage: scripts/screenshots-tabs-selection.sh TRACE.sqlite [WxH ...]
#        (default sizes: 1024x680 1600x1000; displays :91, :92, …)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
TRACE=$(realpath "${1:?usage: $0 TRACE.sqlite [WxH ...]}"); shift
STEM=$(basename "${TRACE%.*}")
mkdir -p "$OUT"
. scripts/xdo-lib.sh

# The tab labels' x on a fresh layout with the summary 330 px wide (it takes at most 30 % of
# the width: 307 px at 1024, the labels shifted left by the difference). With CPU samples the
# CPU tab follows "What if". The bottom panel is 380 px tall on a fresh layout but at most
# 45 % of the height under the 25 px menu bar; its tab labels 13 px under its top.
TABS="nccl:633 memory:697 gaps:432 cpu:1001 findings:369"

tabs_pass() {
  local size=$1 display=$2 w=${1%x*} h=${1#*x}
  (
    start_display "$display" "$size"
    # The pointer rests at the right end of the menu bar, over nothing.
    park() { xdotool mousemove $((w - 20)) 12; sleep 0.5; }
    local panel=$(( (h - 25) * 45 / 100 )); [ "$panel" -gt 380 ] && panel=380
    local tab_y=$((h - panel + 13))
    local summary=$(( w * 30 / 100 )); [ "$summary" -gt 330 ] && summary=330
    local dx=$((summary - 330))
    # The timeline's plot runs from 199 px right of the summary (past the row labels) to 8 px
    # from the window's right edge; GPU 0's stream 7 row is at y≈87 at both sizes.
    local x0=$((summary + 199)) x1=$((w - 8))
    local s0=$((x0 + (x1 - x0) / 3)) s1=$((x0 + 2 * (x1 - x0) / 3))
    "$BIN" "$TRACE" & APP=$!
    wait_loaded "$STEM" 2
    xdotool search --name "^$STEM" windowsize "$w" "$h"
    sleep 18
    xdotool search --name "^$STEM" getwindowgeometry
    drag "$s0" "$s1" 87 shift; park; sleep 1.5
    for t in $TABS; do
      click $(( ${t#*:} + dx )) "$tab_y" 1.5; park; shot "tabs-$w-${t%%:*}"
    done
    # Findings is the tab shown last: read the window for 30 s, then shoot it again.
    hover_for 30; park; sleep 1; shot "tabs-$w-after-30s"
    quit
  )
}

n=91
for size in "${@:-1024x680 1600x1000}"; do
  for s in $size; do tabs_pass "$s" "$n"; n=$((n + 1)); done
done
