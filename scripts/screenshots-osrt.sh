#!/usr/bin/env bash
# Screenshots of OS runtime calls in the real window under Xvfb (xdotool input): the gap
# finder naming the OS runtime call a launching thread sat in, a gap clicked (the timeline
# at it, the thread's OS runtime row under its CUDA API row).
# Usage: scripts/screenshots-osrt.sh [TRACE.sqlite]   (default: a generated tiny run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=screenshots
mkdir -p "$OUT"
DIR=$(mktemp -d)
TRACE=${1:-$DIR/tiny.sqlite}
[ -f "$TRACE" ] || "$BIN" synth --preset tiny --out "$TRACE" >/dev/null
. scripts/xdo-lib.sh
start_display 95

TABS_Y=533; GAPS_TAB=432
ROW2_Y=${ROW2_Y:-747}

"$BIN" "$TRACE" & APP=$!
wait_loaded "$(basename "$TRACE")" 8
click $GAPS_TAB $TABS_Y 2; park; shot osrt-gap-finder
# The fifth longest gap (after the four JITs): a step's scheduler waiting for its data loader.
click 700 "$ROW2_Y" 2; park; shot osrt-gap-selected
quit
