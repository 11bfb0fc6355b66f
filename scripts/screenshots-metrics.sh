#!/usr/bin/env bash
# Screenshots of the GPU metric rows and the device-memory row under each GPU's streams in
# the real window under Xvfb (xdotool input), at 1400×900 on a fresh user with an empty cache
# (a cold open, ~10–15 s), on a generated 4-GPU run with 20 GPU counters sampled at 10 kHz
# (100 µs a sample) and device memory recorded (`synth --preset medium --gpu-metrics
# --memory-usage`, ~86 s, ~1.8 GB):
#   metrics-1-whole-run.png       the whole run as it opens: GPU 0's stream 7 and 13, then
#                                 its default rows DRAM Read Bandwidth %, DRAM Write Bandwidth %,
#                                 SMs Active %, Tensor Active % (per pixel the min–max area, the
#                                 mean a lighter line) and "Device memory (top …)" (a step line
#                                 over a brown area); GPU 1's the same under it. The summary on
#                                 the left has "GPU metrics: SMs active NN %, Tensor active NN %"
#                                 under each GPU's breakdown (in every shot; this one checked).
#   metrics-2-zoomed-kernel.png   zoomed by two drags on the ruler (~1.2 s, then ~19 ms)
#                                 and a double-click on a flash_fwd_kernel of GPU 0 (3.5 ms,
#                                 selected, the Details tab open): the charts rise and fall
#                                 at the 100 µs samples next to the kernel's ends.
#   metrics-3b-tooltip-sample.png at that zoom the pointer on GPU 0's SMs Active row: one
#                                 sample's value and time ("95.0 % at …").
#   metrics-3-tooltip.png         F (fit) back to the whole run, the pointer on the same
#                                 row: the pixel's mean, min and max over ~100 ms.
#   metrics-4-view-menu.png       View open: a checkbox per metric of the capture (20, four
#                                 ticked) and "Device memory row".
#   metrics-5-after-30s.png       after 30 s of pointer moves over the timeline's rows (a move
#                                 every 50 ms) with W, S, A, D pressed in between, then F: compared
#                                 with the shot taken before the 30 s (ImageMagick `compare
#                                 -metric AE`, 0 = drawn the same; Xvfb draws no pointer), and
#                                 whether the app still answers a key and is still alive.
#   metrics-6-kernels-table.png   the bottom panel's Kernels tab: the kernel table with its
#                                 "SMs active" and "Tensor active" columns (each kernel's
#                                 time-weighted means, worked out on a worker: "…" until then;
#                                 the shot waits for the numbers).
# Usage: scripts/screenshots-metrics.sh [TRACE.sqlite]   (default: /tmp/mgm20.sqlite when it
# exists, else generated into a temporary folder and removed after; BIN overridable:
# BIN=/tmp/nx-shots scripts/screenshots-metrics.sh; WARM=1 keeps the user's cache, for a
# warm open). Needs Xvfb, xdotool, xwd, ImageMagick.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
DIR=$(mktemp -d)
DEFAULT_TRACE=$DIR/metrics.sqlite
[ -f /tmp/mgm20.sqlite ] && DEFAULT_TRACE=/tmp/mgm20.sqlite
TRACE=${1:-$DEFAULT_TRACE}
if [ ! -f "$TRACE" ]; then
  echo "generating $TRACE (~1.8 GB)"
  "$BIN" synth --preset medium --gpu-metrics --memory-usage --out "$TRACE" >/dev/null
fi
. scripts/xdo-lib.sh
start_display 91
# A cold open: the analyses' cache (and Mesa's) in the temporary folder, removed after.
[ -n "${WARM:-}" ] || export XDG_CACHE_HOME=$DIR/cache

# Coordinates on a fresh layout at 1400×900, medium run (86.2 s in view, ≈10 px a second,
# 0 s at x≈529, 20 s at x≈730, the 2.5 s copies at 64.5–67.0 s at x≈1175..1199; the timeline
# spans x≈529..1390, y≈30..508; the ruler at y≈42; the bottom panel's tab bar at y≈533, its
# Kernels tab at x≈571). GPU 0's group: header y≈66, stream 7 y≈87, stream 13 y≈105, then
# 36 px chart rows (the chart 32 px inside): DRAM Read Bandwidth % y≈112..148, DRAM Write
# Bandwidth % y≈148..184, SMs Active % y≈184..220, Tensor Active % y≈220..256, device memory
# y≈256..292; GPU 1's header at y≈302.
# Zoom: a ruler drag RULER1_X0→RULER1_X1 (≈17.2–18.4 s), then RULER2_X0→RULER2_X1 in that
# view (≈19 ms from 17.674 s; a drag under ~10 px is not taken as one), where GPU 0's
# flash_fwd_kernel spans x≈665..822 on stream 7: double-clicked at (KERNEL_X, KERNEL_Y).
# The timeline takes keys (F, W, S, A, D) only with the pointer over it: KEY_X, KEY_Y.
# HOVER_X, HOVER_Y: a point of GPU 0's SMs Active row. The View menu at (55, 12); a click at
# (700, 12), the empty menu bar, closes it (Escape does not). The Kernels table's "SMs
# active" column at x≈1186..1262 and "Tensor active" at x≈1270..1346, its ten rows at
# y≈596..800 (TABLE_*).
RULER_Y=${RULER_Y:-42}
RULER1_X0=${RULER1_X0:-700}; RULER1_X1=${RULER1_X1:-712}
RULER2_X0=${RULER2_X0:-900}; RULER2_X1=${RULER2_X1:-914}
KERNEL_X=${KERNEL_X:-745}; KERNEL_Y=${KERNEL_Y:-88}
HOVER_X=${HOVER_X:-950}; HOVER_Y=${HOVER_Y:-203}
KEY_X=${KEY_X:-1000}; KEY_Y=${KEY_Y:-300}
VIEW_X=55; MENU_Y=12; MENUBAR_X=700
KERNELS_TAB_X=${KERNELS_TAB_X:-571}; TAB_Y=${TAB_Y:-533}
TABLE_SM_X=1186; TABLE_TENSOR_X=1270; TABLE_Y=596; TABLE_W=76; TABLE_H=205
# A pixel of GPU 0's SMs Active chart at the whole run (≈27 s): the chart's blue once loaded.
READY_X=800; READY_Y=212; READY_HEX=4783BF

pixel() { xwd -root -silent | /usr/bin/convert xwd:- -crop "1x1+$1+$2" -format '%[hex:p]' info:; }
# text_pixels X: the pixels of text (lighter than 35 % grey) in the table's column at X: the
# ten rows' percentages make ~740; "…" (three dots a row) far fewer. (On this trace the
# worker is done before the table first shows: no "…" was seen.)
text_pixels() {
  xwd -root -silent | /usr/bin/convert xwd:- -crop "${TABLE_W}x${TABLE_H}+$1+$TABLE_Y" \
    -colorspace gray -threshold 35% -format '%[fx:round(mean*w*h)]' info:
}
# key_over K...: keys pressed with the pointer over the timeline.
key_over() { xdotool mousemove "$KEY_X" "$KEY_Y"; sleep 0.3; for k in "$@"; do xdotool key "$k"; sleep 0.4; done; }
# hover_rows SECONDS: the pointer over the timeline's rows (a move every 50 ms), with a key
# pressed every 60 moves (W W, then S S, then D, then A: the view zooms and pans meanwhile).
hover_rows() {
  local end=$((SECONDS + $1)) i=0 keys=(w w s s d a)
  while [ $SECONDS -lt $end ]; do
    xdotool mousemove $(( 530 + (i * 137) % 860 )) $(( 60 + (i * 71) % 445 )); sleep 0.05
    if [ $((i % 60)) = 59 ]; then xdotool key "${keys[$(( (i / 60) % 6 ))]}"; fi
    i=$((i + 1))
  done
  echo "pointer moves: $i"
}

START=$SECONDS
"$BIN" "$TRACE" & APP=$!
wait_loaded "$(basename "$TRACE")" 2
park
for _ in $(seq 90); do [ "$(pixel $READY_X $READY_Y)" = "$READY_HEX" ] && break; sleep 1; done
echo "metric rows drawn $((SECONDS - START)) s after launch"
sleep 2; park

# 1. The whole run.
shot metrics-1-whole-run

# 2. Two ruler drags, then a double-click on the kernel: zoomed to it.
drag "$RULER1_X0" "$RULER1_X1" "$RULER_Y"; sleep 1
drag "$RULER2_X0" "$RULER2_X1" "$RULER_Y"; sleep 1
xdotool mousemove "$KERNEL_X" "$KERNEL_Y"; sleep 0.4
xdotool click --repeat 2 --delay 80 1; sleep 1.5
park; shot metrics-2-zoomed-kernel

# 3. The tooltips: one sample at this zoom; a pixel's summary at the whole run (F).
xdotool mousemove "$HOVER_X" "$HOVER_Y"; sleep 1.5; shot metrics-3b-tooltip-sample
key_over f; sleep 1
xdotool mousemove "$HOVER_X" "$HOVER_Y"; sleep 1.5; shot metrics-3-tooltip

# 4. The View menu.
park; click "$VIEW_X" "$MENU_Y" 1.2; shot metrics-4-view-menu
click "$MENUBAR_X" "$MENU_Y" 1; park; sleep 1
shot metrics-before-30s  # compared, then removed

# 5. 30 s over the rows with keys in between, back to the whole run, compared.
hover_rows 30
key_over f; sleep 1; park; sleep 1
shot metrics-5-after-30s
DIFF=$(compare -metric AE "$OUT/metrics-before-30s.png" "$OUT/metrics-5-after-30s.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of moving the pointer (0: drawn the same): $DIFF"
# Still answering: W over the timeline must change what is drawn (then F back).
key_over w; sleep 1; park; sleep 0.5; shot metrics-after-w  # compared, then removed
MOVED=$(compare -metric AE "$OUT/metrics-5-after-30s.png" "$OUT/metrics-after-w.png" null: 2>&1 || true)
echo "pixels changed by one W after the 30 s (non-zero: the app answers): $MOVED"
key_over f; sleep 1; park

# 6. The Kernels tab: the table with the kernels' SMs and Tensor Active, once worked out.
click "$KERNELS_TAB_X" "$TAB_Y" 1; park
for _ in $(seq 60); do
  SM_PX=$(text_pixels $TABLE_SM_X); TENSOR_PX=$(text_pixels $TABLE_TENSOR_X)
  [ "$SM_PX" -gt 300 ] && [ "$TENSOR_PX" -gt 300 ] && break; sleep 1
done
echo "kernel table's activity columns: $SM_PX and $TENSOR_PX text pixels (over 300: filled)"
shot metrics-6-kernels-table

if kill -0 "$APP" 2>/dev/null; then
  echo "app alive: $(ps -o rss=,pcpu= -p "$APP" | awk '{printf "RSS %.0f MiB, %s %% CPU", $1/1024, $2}')"
else
  echo "FAIL: the app is gone" >&2
fi
quit
rm -f "$OUT/metrics-before-30s.png" "$OUT/metrics-after-w.png"
rm -rf "$DIR"
