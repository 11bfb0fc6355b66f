#!/usr/bin/env bash
# Screenshots of NCCL's bytes and of saving figures, in the real window under Xvfb (xdotool
# input): the NCCL tab with bytes and bus bandwidth, split by message size, a collective
# clicked and its Details (bytes, communicator, peers, transfer time, bandwidth); then the
# iteration plot's right-click ▸ Save as…, the folder typed, Write, and File ▸ Export figures….
# Usage: scripts/screenshots-nccl-figures.sh [TRACE.sqlite]   (default: a generated tiny run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=screenshots
mkdir -p "$OUT"
DIR=$(mktemp -d)
TRACE=${1:-$DIR/tiny.sqlite}
[ -f "$TRACE" ] || "$BIN" synth --preset tiny --out "$TRACE" >/dev/null
. scripts/xdo-lib.sh
start_display 96
export XDG_CACHE_HOME=$DIR/cache

TABS_Y=533; ITERATIONS_TAB=498; NCCL_TAB=632; DETAILS_TAB=821

# The window's default folder is STEM-figures in its current folder.
(cd "$DIR" && exec "$BIN" "$TRACE") & APP=$!
wait_loaded "$(basename "$TRACE")" 8
click $NCCL_TAB $TABS_Y 2; park; shot nccl-bytes
click 787 564 2; park; shot nccl-split-by-size
# The first row's collective: its first kernel selected and brought into view.
click 414 608 2
# Its tooltip: what it moved.
xdotool mousemove 950 165; sleep 0.5; xdotool mousemove 959 166; sleep 2; shot nccl-kernel-tooltip
click $DETAILS_TAB $TABS_Y 2; park; shot nccl-kernel-details
# Right-click the iteration plot, Save as…, a folder typed, Write.
click $ITERATIONS_TAB $TABS_Y 2; park
xdotool mousemove 650 665; sleep 0.5; xdotool click 3; sleep 1; shot figure-save-menu
xdotool mousemove 690 677; sleep 0.5; xdotool click 1; sleep 1
click 250 85 0.5; xdotool key ctrl+a; xdotool type --delay 20 "$DIR/saved"; sleep 0.5
click 46 131 3; park; shot figure-saved
ls "$DIR/saved"
# File ▸ Export figures…: all five.
click 518 34 1
click 19 12 1; shot figure-file-menu
click "${EXPORT_X:-64}" "${EXPORT_Y:-154}" 1
click 47 164 4; park; shot figure-export-all
ls "$DIR/saved"
# Right-click the timeline ▸ Save view as…: the view as a figure.
click 518 34 1
xdotool mousemove 900 200; sleep 0.5; xdotool click 3; sleep 1; shot figure-view-menu
xdotool mousemove 940 212; sleep 0.5; xdotool click 1; sleep 1; park; shot figure-view-dialog
click 47 "${VIEW_WRITE_Y:-147}" 3; park; shot figure-view-saved
ls "$DIR/saved"
cp "$DIR/saved/timeline_view.png" "$OUT/figures/timeline_view.png"
quit
