#!/usr/bin/env bash
# Screenshots of the CPU tab (CPU samples: a flame graph, callers on top, and a bottom-up
# table) in the real window under Xvfb (xdotool input), on a generated 4-GPU run whose
# ranks' main threads are sampled at 1 kHz and whose first denoising step stalls ~340 ms in
# a JIT compile (NVTX `KernelExecutor::compileFusion > nvrtc_compile`, the GPUs idle): the
# whole run's profile; the profile of a window set by Shift+drag over the stall (the
# bottom-up table's first row nvrtcCompileProgram, the header the window's length); that
# frame clicked, its samples marked in green along the bottom of the threads' CUDA API rows
# (the timeline scrolled to its end: the API rows of ranks 1-3's main threads; rank 0's is
# above, out of view); and, after 30 s of moving the pointer over the flame graph, one
# cell's tooltip (its samples).
# Usage: scripts/screenshots-cpu.sh [TRACE.sqlite]   (default: a generated tiny run,
# `synth --preset tiny --cpu-samples`; the coordinates below are for that run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
DIR=$(mktemp -d)
TRACE=${1:-$DIR/cpu.sqlite}
[ -f "$TRACE" ] || "$BIN" synth --preset tiny --cpu-samples --out "$TRACE" >/dev/null
. scripts/xdo-lib.sh
start_display 96

# Fresh layout at 1400×900, tiny run (4.004 s in view, ≈216 px a second, 0 s at x≈528):
# the CPU tab at x≈1002 in the tab bar (y≈533), after Graphs' place (the run has no
# graphs). The stall: the GPUs idle from x≈547 to x≈620 (GPU 0's stream 7 at y≈87, the
# thread's nvrtc_compile range under it); a Shift+drag there from x≈549 to x≈617 sets a
# window of ≈315 ms inside it. Then the bottom-up table's first row, nvrtcCompileProgram, at
# (602, 746); the wheel, 12 clicks down over the timeline (x≈900, y≈300), scrolls its rows
# to the end (7 reach it; the rows stop there), the API rows of ranks 1-3's main threads at
# y≈97, 281 and 465. The flame graph's rows from y≈603 (the root) down to y≈694
# (nvrtcCompileProgram in the window's profile), x 340 to 1390; the cell hovered last,
# nvfuser::KernelExecutor::compileFusion, at (700, 676).
TAB_Y=${TAB_Y:-533}; CPU_TAB_X=${CPU_TAB_X:-1002}
STALL_Y=${STALL_Y:-87}; STALL_X0=${STALL_X0:-549}; STALL_X1=${STALL_X1:-617}
ROW_X=${ROW_X:-602}; ROW_Y=${ROW_Y:-746}
WHEEL_X=${WHEEL_X:-900}; WHEEL_Y=${WHEEL_Y:-300}; WHEEL_CLICKS=${WHEEL_CLICKS:-12}
FLAME_Y0=${FLAME_Y0:-603}; FLAME_Y1=${FLAME_Y1:-694}
CELL_X=${CELL_X:-700}; CELL_Y=${CELL_Y:-676}
# hover_flame SECONDS: the pointer over the flame graph's cells, as a person reading it.
hover_flame() {
  local end=$((SECONDS + $1)) i=0
  while [ $SECONDS -lt $end ]; do
    xdotool mousemove $(( 340 + (i * 137) % 1050 )) $(( FLAME_Y0 + (i * 7) % (FLAME_Y1 - FLAME_Y0 + 1) ))
    sleep 0.05; i=$((i + 1))
  done
}

"$BIN" "$TRACE" & APP=$!
wait_loaded "$(basename "$TRACE")" 15; park
# The whole run: copies and synchronisation on top; the JIT compile a narrower tower.
click "$CPU_TAB_X" "$TAB_Y" 2; park; shot cpu-tab-run
# A window over the stall: the profile is of its samples only.
drag "$STALL_X0" "$STALL_X1" "$STALL_Y" shift; sleep 2; park; shot cpu-tab-window
# nvrtcCompileProgram clicked: its samples marked on the threads' API rows.
click "$ROW_X" "$ROW_Y" 2
xdotool mousemove "$WHEEL_X" "$WHEEL_Y"; sleep 0.3
for _ in $(seq "$WHEEL_CLICKS"); do xdotool click 5; sleep 0.2; done
sleep 1; park; shot cpu-tab-frame-marked
# 30 s over the flame graph, then one cell hovered: its tooltip.
hover_flame 30
xdotool mousemove "$CELL_X" "$CELL_Y"; sleep 1.5; shot cpu-tab-hover
park; shot cpu-after-hover  # compared, then removed
DIFF=$(compare -metric AE "$OUT/cpu-tab-frame-marked.png" "$OUT/cpu-after-hover.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of hovering: $DIFF"
quit
rm -f "$OUT/cpu-after-hover.png"
rm -rf "$DIR"
