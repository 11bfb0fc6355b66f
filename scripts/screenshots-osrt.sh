#!/usr/bin/env bash
# Screenshots of OS runtime calls in the real window under Xvfb (xdotool input): the gap
# finder naming the OS runtime call a launching thread sat in, a gap clicked (the timeline
# at it, the thread's OS runtime row under its CUDA API row), a tooltip of that call.
# Usage: scripts/screenshots-osrt.sh [TRACE.sqlite]   (default: a generated tiny run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=screenshots
mkdir -p "$OUT"
DIR=$(mktemp -d)
TRACE=${1:-$DIR/tiny.sqlite}
[ -f "$TRACE" ] || "$BIN" synth --preset tiny --out "$TRACE" >/dev/null
export DISPLAY=:95
Xvfb "$DISPLAY" -screen 0 1400x900x24 >/dev/null 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null || true' EXIT
sleep 1
export LIBGL_ALWAYS_SOFTWARE=1 WINIT_UNIX_BACKEND=x11 XDG_CONFIG_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d)
. scripts/xdo-lib.sh

TABS_Y=533; GAPS_TAB=432
ROW_Y=${ROW_Y:-610}; ROW2_Y=${ROW2_Y:-747}

"$BIN" "$TRACE" & APP=$!
wait_loaded "$(basename "$TRACE")" 8
click $GAPS_TAB $TABS_Y 2; park; shot osrt-gap-finder
# The fifth longest gap (after the four JITs): a step's scheduler waiting for its data loader.
click 700 "$ROW2_Y" 2; park; shot osrt-gap-selected
quit
