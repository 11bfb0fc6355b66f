#!/usr/bin/env bash
# The gap table of a re-opened trace, driven as a person would: FILE opened (into a cache
# of this script's own) and closed, opened again; the Gaps tab clicked, the "start" header
# (a sort of every gap), the host_sync filter, a row; then 30 s of hovering. Needs Xvfb,
# xdotool, x11-apps, imagemagick and a release build. Usage: scripts/screenshots-reopen-gaps.sh FILE
set -euo pipefail
FILE=${1:?usage: $0 FILE.sqlite}
BIN=${BIN:-target/release/nsys-explorer}
OUT=${OUT:-screenshots}
. "$(dirname "$0")/xdo-lib.sh"
start_display 96
export XDG_CACHE_HOME=$(mktemp -d)
NAME=$(basename "$FILE")
"$BIN" "$FILE" & APP=$!
wait_loaded "$NAME" 30
quit
"$BIN" "$FILE" & APP=$!
wait_loaded "$NAME" 8
click 432 533 2          # Gaps
click 417 643 1          # sort by start
shot reopen-gaps-sorted
click 898 564 1          # host_sync only
click 700 684 1          # a row: the timeline zooms to it
hover_for 30
park
shot reopen-gap-clicked
quit
rm -rf "$XDG_CACHE_HOME"
