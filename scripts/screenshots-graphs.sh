#!/usr/bin/env bash
# Screenshots of CUDA-graph support in the real window under Xvfb (xdotool input), on a
# generated run whose blocks replay as CUDA graphs recorded at graph level (nsys's default,
# `--cuda-graph-trace=graph`: one row per launch, its kernels not recorded): the whole run
# with the summary's note on the graphs' share of GPU time, one graph execution's tooltip in
# a denoising step zoomed in (graph executions drawn in their own, deeper blue), and the
# Graphs tab.
# Usage: scripts/screenshots-graphs.sh [TRACE.sqlite]   (default: a generated medium run,
# `synth --preset medium --cuda-graphs graph`; the coordinates below are for that run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
DIR=$(mktemp -d)
TRACE=${1:-$DIR/graphs.sqlite}
[ -f "$TRACE" ] || "$BIN" synth --preset medium --cuda-graphs graph --out "$TRACE" >/dev/null
. scripts/xdo-lib.sh
start_display 98

# Fresh layout at 1400×900, medium run (86.2 s in view): the first thread's NVTX depth-0 row
# at y≈310, where x≈740 is 20 s in (denoising_step_14); a double click there zooms to that
# step (1.5 s in view), then a drag on the ruler (y≈45) from x≈600 to x≈620 to 35 ms of it,
# where GPU 0's stream 7 (y≈87) holds "CUDA graph 4" from x≈690 to x≈830. The Graphs tab at
# x≈1010 in the tab bar (y≈533).
STEP_X=${STEP_X:-740}; STEP_Y=${STEP_Y:-310}
RULER_Y=${RULER_Y:-45}; ZOOM_X0=${ZOOM_X0:-600}; ZOOM_X1=${ZOOM_X1:-620}
GRAPH_X=${GRAPH_X:-738}; GRAPH_Y=${GRAPH_Y:-87}
TAB_Y=${TAB_Y:-533}; GRAPHS_TAB_X=${GRAPHS_TAB_X:-1010}
dblclick() { xdotool mousemove "$1" "$2"; sleep 0.3; xdotool click --repeat 2 --delay 80 1; sleep "${3:-1}"; }

"$BIN" "$TRACE" & APP=$!
# The whole run: graph executions hold the compute stream; the summary's note names their
# share of GPU time and --cuda-graph-trace=node.
wait_loaded "$(basename "$TRACE")" 25; park; shot graphs-timeline
# One denoising step, then 35 ms of it: single graph executions wide; one hovered.
dblclick "$STEP_X" "$STEP_Y" 2
drag "$ZOOM_X0" "$ZOOM_X1" "$RULER_Y"
xdotool mousemove "$GRAPH_X" "$GRAPH_Y"; sleep 1.5; shot graphs-tooltip
# The Graphs tab: per GPU, then per graph.
click "$GRAPHS_TAB_X" "$TAB_Y" 1.5; park; shot graphs-tab
hover_for 30; park; shot graphs-after-hover  # compared, then removed
DIFF=$(compare -metric AE "$OUT/graphs-tab.png" "$OUT/graphs-after-hover.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of hovering: $DIFF"
quit
rm -f "$OUT/graphs-after-hover.png"
rm -rf "$DIR"
