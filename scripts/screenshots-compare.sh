#!/usr/bin/env bash
# Screenshots of two runs compared in the real window under Xvfb (xdotool input): the Diff
# tab, a kernel clicked there (found in both timelines), and an iteration opened (both runs
# aligned at it, the iteration plot overlaying them). Makes a before/after pair with
# `synth` (same seed, flash attention twice as fast) unless given one.
# Usage: scripts/screenshots-compare.sh [BEFORE.sqlite AFTER.sqlite]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=screenshots
mkdir -p "$OUT"
if [ $# -ge 2 ]; then
  BEFORE=$1 AFTER=$2
else
  DIR=$(mktemp -d)
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

TABS_Y=533; ITER_TAB=425; DIFF_TAB=804

"$BIN" "$BEFORE" --compare "$AFTER" & APP=$!
wait_loaded "$(basename "$BEFORE")" 14; park; shot compare-diff
# The kernel that changed most (first row of the kernels table): found in both timelines.
click 609 787 2; park; shot compare-kernel-found
# The slowest iteration opened: both runs aligned at it, the plot overlays both.
click $ITER_TAB $TABS_Y; click 500 587 2; park; shot compare-iteration
hover_for 30; xdotool mousemove 900 300; sleep 1; shot compare-after-hover
quit
