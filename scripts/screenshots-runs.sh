#!/usr/bin/env bash
# Screenshots of several runs and files in the real window under Xvfb (xdotool input):
# 1. two runs compared: the Diff tab, a kernel clicked there (found in both timelines), an
#    iteration opened (both runs aligned at it, the plot overlaying them);
# 2. one job's per-rank files opened as one: the merged timeline at the slowest iteration
#    (its straggler), and the ranks × iterations heatmap.
# 3. What if: the What-if tab, a sync removed by typing the NVTX range around it, the replay,
#    and GPU 0's predicted idle time drawn over the real timeline.
# Makes its traces with `synth` (a before/after pair with flash attention twice as fast, and
# a run split one file per rank) unless given a pair.
# Usage: scripts/screenshots-runs.sh [BEFORE.sqlite AFTER.sqlite]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=screenshots
mkdir -p "$OUT"
DIR=$(mktemp -d)
"$BIN" synth --preset medium --split-ranks "$DIR/ranks" >/dev/null
if [ $# -ge 2 ]; then
  BEFORE=$1 AFTER=$2
else
  BEFORE=$DIR/before.sqlite AFTER=$DIR/after.sqlite
  "$BIN" synth --preset medium --out "$BEFORE" >/dev/null
  "$BIN" synth --preset medium --scale-kernel flash_fwd_kernel=0.5 --out "$AFTER" >/dev/null
fi
export DISPLAY=:98
Xvfb "$DISPLAY" -screen 0 1400x900x24 >/dev/null 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null || true' EXIT
sleep 1
export LIBGL_ALWAYS_SOFTWARE=1 WINIT_UNIX_BACKEND=x11 XDG_CONFIG_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d)
. scripts/xdo-lib.sh

TABS_Y=533; ITER_TAB=498; RANKS_TAB=883; WHATIF_TAB=944

"$BIN" "$BEFORE" --compare "$AFTER" & APP=$!
wait_loaded "$(basename "$BEFORE")" 14; park; shot compare-diff
# The kernel that changed most (first row of the kernels table): found in both timelines.
click 609 787 2; park; shot compare-kernel-found
# The slowest iteration opened: both runs aligned at it, the plot overlays both.
click $ITER_TAB $TABS_Y; click 500 587 2; park; shot compare-iteration
hover_for 30; xdotool mousemove 900 300; sleep 1; shot compare-after-hover
quit

# 2. The ranks' files as one trace: the slowest iteration, then the heatmap.
"$BIN" "$DIR/ranks" & APP=$!
wait_loaded "4 files" 14; park; shot many-files
click $ITER_TAB $TABS_Y; click 500 587 2; park; shot many-files-straggler
click $RANKS_TAB $TABS_Y 1; xdotool mousemove 900 620; sleep 1; shot many-files-heatmap
quit

# 2b. The same ranks as per-rank `report --json` summaries, side by side.
for f in "$DIR"/ranks/rank*.sqlite; do "$BIN" report "$f" --json > "${f%.sqlite}.json"; done
"$BIN" "$DIR"/ranks/rank*.json & APP=$!
wait_loaded "4 GPUs" 3; park; shot rank-summaries
quit

# 3. What if the per-step sync (inside `aten::item`) were removed?
"$BIN" "$BEFORE" & APP=$!
wait_loaded "$(basename "$BEFORE")" 12
click $WHATIF_TAB $TABS_Y 1; click 531 564 0.5; xdotool type --delay 60 "aten::item"; sleep 0.5
click 1156 564 10; park; shot what-if
click 778 629 1; drag 900 960 42; park; shot what-if-ghost
quit
