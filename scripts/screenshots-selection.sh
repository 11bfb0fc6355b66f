#!/usr/bin/env bash
# Screenshots of a Shift+drag selection in the real window under Xvfb (xdotool input), at
# the default 1400×900 on a fresh user, with the built-in sample trace (no file given: a
# generated 4-GPU run of ~4 s). Once loaded, the Kernels tab of the whole trace is shot; then
# a range over the first ~third of the run is Shift+dragged on GPU 1's stream 7 row: the
# "Selection: … from …" banner appears above the tables, which are then of the selection,
# and the Kernels tab is shot. "copy summary" in the banner is clicked, the clipboard read
# with xclip and saved; then the pointer is moved over the timeline and the tables for 30 s
# (one small move a second), shot again and compared with the shot before (ImageMagick
# `compare -metric AE`; Xvfb does not draw the pointer, so 0 means nothing changed); then
# Escape is pressed with the pointer over the timeline, which clears the selection. Last,
# Ctrl+F then Ctrl+V pastes what the app holds as its clipboard into the Find field.
# Output: screenshots/selection-kernels-whole.png, selection-kernels.png,
# selection-copied.png, selection-summary.txt (the X clipboard), selection-after-30s.png,
# selection-cleared.png, selection-pasted-in-app.png; the pixel difference is printed.
# Exits 1 (after every shot) when the X clipboard is empty after "copy summary".
# Usage: scripts/screenshots-selection.sh   (needs Xvfb, xdotool, xwd, ImageMagick, xclip)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
command -v xclip >/dev/null || { echo "xclip is missing (apt-get install -y xclip)" >&2; exit 1; }
. scripts/xdo-lib.sh
start_display 92

# Coordinates on a fresh layout at 1400×900. The timeline's time axis starts at x≈529 (0 s)
# with ≈217 px a second with the whole ~4 s run in view (1 s at x≈750, 2 s at x≈963); GPU 1's
# stream 7 row is at y≈143 (the timeline spans y≈30..510). SEL_X0..SEL_X1 is thus ≈0.01 s to
# ≈1.34 s, the first third (the compute and NCCL steps before the long Memcpy DtoH).
# The bottom panel is 380 px tall: its tab labels at y≈533 (Kernels at x≈571); the
# Selection banner is the first row under them, its "copy summary" button at (800, 565).
SEL_X0=${SEL_X0:-530}; SEL_X1=${SEL_X1:-818}; SEL_Y=${SEL_Y:-143}
KERNELS_X=571; TAB_Y=533
COPY_X=800; COPY_Y=565
TIMELINE_X=900; TIMELINE_Y=300   # a point inside the timeline, for Escape

"$BIN" & APP=$!
wait_loaded wan2.1 15; park
click "$KERNELS_X" "$TAB_Y" 1.5; park; shot selection-kernels-whole

# 1. The range Shift+dragged on GPU 1's stream 7; the Kernels tab (clicked again: it stays).
drag "$SEL_X0" "$SEL_X1" "$SEL_Y" shift; park; sleep 1
click "$KERNELS_X" "$TAB_Y" 1.5; park; shot selection-kernels

# 2. "copy summary": the clipboard (owned by the app, so read while it runs) saved.
click "$COPY_X" "$COPY_Y" 1.5; park
COPIED=0
if timeout 5 xclip -o -selection clipboard >"$OUT/selection-summary.txt.new" && [ -s "$OUT/selection-summary.txt.new" ]; then
  mv "$OUT/selection-summary.txt.new" "$OUT/selection-summary.txt"; COPIED=1
  echo "clipboard: $(wc -c <"$OUT/selection-summary.txt") bytes in $OUT/selection-summary.txt"
else
  rm -f "$OUT/selection-summary.txt.new" "$OUT/selection-summary.txt"
  echo "FAIL: nothing on the X clipboard after \"copy summary\" (no selection-summary.txt written)" >&2
fi
shot selection-copied

# 3. 30 s of small moves, one a second: 15 over the timeline, 15 over the Kernels table.
for i in $(seq 0 29); do
  if [ "$i" -lt 15 ]; then
    xdotool mousemove $((560 + i * 50)) $((90 + (i % 5) * 80))
  else
    xdotool mousemove $((360 + (i - 15) * 50)) $((610 + (i % 5) * 40))
  fi
  sleep 1
done
park; sleep 1; shot selection-after-30s
DIFF=$(compare -metric AE "$OUT/selection-copied.png" "$OUT/selection-after-30s.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of moving the pointer: $DIFF"

# 4. Escape with the pointer over the timeline: the selection cleared, the banner gone.
xdotool mousemove "$TIMELINE_X" "$TIMELINE_Y"; sleep 0.5
xdotool key Escape; sleep 1.5
park; shot selection-cleared

# 5. Where the copy went: Ctrl+F, Ctrl+V pastes egui's clipboard into the Find field (one
# line: the summary's newlines dropped, its end in view). With the OS clipboard working
# this is the summary too; without it, egui keeps the text inside the app only.
xdotool key ctrl+f; sleep 1; xdotool key ctrl+v; sleep 1.5; park; shot selection-pasted-in-app
quit
[ "$COPIED" = 1 ] || exit 1
