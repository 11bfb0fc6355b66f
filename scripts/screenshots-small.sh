#!/usr/bin/env bash
# Screenshots of the real window on small screens under Xvfb (xdotool input): 1280×720 and
# 1024×680. On each, the built-in sample trace (no file given: a generated 4-GPU run) is
# opened on a fresh user, the whole window shot once loaded, then every tab of the bottom
# panel clicked and shot, then a range Shift+dragged on the timeline and the Kernels tab
# shot with the "Selection: …" banner. The window asks for 1400×900; on a smaller screen it
# gets the screen's size. Then a finding is clicked (the timeline zooms to it, its
# explanation shows under the list).
# Output: screenshots/small-<width>-<tab>.png (tab: timeline, findings, gaps, iterations,
# kernels, nccl, memory, nvtx, details, ranks, whatif, selection, findings-clicked).
# Usage: scripts/screenshots-small.sh [WxH ...]   (default: 1280x720 1024x680)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
. scripts/xdo-lib.sh

# The tab labels' x on a fresh layout with the summary 330 px wide (it takes at most 30 % of
# the width: 307 px at 1024, the labels shifted left by the difference); CPU, Graphs and Diff
# are not shown for the sample. The bottom panel is 380 px tall on a fresh layout but at
# most 45 % of the height under the 25 px menu bar; its tab labels 13 px under its top.
TABS="findings:369 gaps:432 iterations:498 kernels:571 nccl:633 memory:697 nvtx:761 details:821 ranks:882 whatif:945"
KERNELS_X=571

small_pass() {
  local size=$1 display=$2 w=${1%x*} h=${1#*x}
  (
    start_display "$display" "$size"
    # The pointer rests at the right end of the menu bar, over nothing.
    park() { xdotool mousemove $((w - 20)) 12; sleep 0.5; }
    local panel=$(( (h - 25) * 45 / 100 )); [ "$panel" -gt 380 ] && panel=380
    local tab_y=$((h - panel + 13))
    local summary=$(( w * 30 / 100 )); [ "$summary" -gt 330 ] && summary=330
    local dx=$((summary - 330))
    "$BIN" & APP=$!
    wait_loaded wan2.1 15; park
    xdotool search --name '^wan2.1' getwindowgeometry
    shot "small-$w-timeline"
    for t in $TABS; do
      click $(( ${t#*:} + dx )) "$tab_y" 1.5; park; shot "small-$w-${t%%:*}"
    done
    # A range on GPU 1's stream 7 row (y≈142 at both sizes), whole trace in view.
    click $((KERNELS_X + dx)) "$tab_y" 1
    drag 620 760 142 shift; park; sleep 1.5
    shot "small-$w-selection"
    # A finding clicked (under the Selection banner, the 4th row: NCCL shares stream 7 with
    # compute): the timeline zooms to it and its explanation is written under the list.
    click $((369 + dx)) "$tab_y" 1; click 800 $((tab_y + 147)) 2; park; shot "small-$w-findings-clicked"
    quit
  )
}

n=93
for size in "${@:-1280x720 1024x680}"; do
  for s in $size; do small_pass "$s" "$n"; n=$((n + 1)); done
done
