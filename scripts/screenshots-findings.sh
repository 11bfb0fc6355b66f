#!/usr/bin/env bash
# Screenshots of the Findings tab in the real window under Xvfb (xdotool input): the ranked
# findings of a generated run once every replay has ended, a finding clicked (the timeline
# at its first occurrence, every occurrence outlined), and "Try it" (the What-if tab with
# that change replayed).
# Usage: scripts/screenshots-findings.sh [TRACE.sqlite]   (default: a generated medium run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=screenshots
mkdir -p "$OUT"
DIR=$(mktemp -d)
TRACE=${1:-$DIR/medium.sqlite}
[ -f "$TRACE" ] || "$BIN" synth --preset medium --out "$TRACE" >/dev/null
. scripts/xdo-lib.sh
start_display 96

# Rows of the findings table (fresh layout at 1400×900): the first at y≈585, 22 px apart;
# "Try it" at x≈661, the titles from x≈700.
ROW1_Y=${ROW1_Y:-588}; ROW_H=${ROW_H:-22}; TRY_X=${TRY_X:-661}; TITLE_X=${TITLE_X:-900}

"$BIN" "$TRACE" & APP=$!
wait_loaded "$(basename "$TRACE")" 25; park; shot findings
# The second finding clicked: its first occurrence in view, every occurrence outlined.
click "$TITLE_X" $((ROW1_Y + ROW_H)) 2; park; shot findings-selected
hover_for 30; park; shot findings-after-hover  # compared, then removed
DIFF=$(compare -metric AE "$OUT/findings-selected.png" "$OUT/findings-after-hover.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of hovering: $DIFF"
# Try it: the What-if tab with the change filled in, replayed.
click "$TRY_X" $((ROW1_Y + ROW_H)) 12; park; shot findings-try-it
quit
rm -f "$OUT/findings-after-hover.png"
