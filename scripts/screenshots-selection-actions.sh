#!/usr/bin/env bash
# Screenshots of the selection banner's actions in the real window under Xvfb (xdotool
# input), at the default 1400×900 on a fresh user, with the built-in sample trace (no file
# given: a generated 4-GPU run of ~4 s). Its first step begins with a ~340 ms JIT-compile
# stall (nvrtc_compile) where every GPU is idle and the CPU busy.
#  1. A range from a bit before the stall to a bit after it (≈0.056 s to ≈0.52 s) is
#     Shift+dragged on GPU 1's stream 7 row: the banner "Selection: … from …" with its
#     buttons "copy summary", "critical path", "what if the CPU had not spent it" and
#     "clear: whole trace" above the tables. Shot: selection-actions-1-banner.png.
#  2. "critical path" is clicked; once the banner reads "critical path: <length> — <kind>
#     <time>, …" (the path worked out on a worker) the window is shot with the yellow line
#     on the timeline: selection-actions-2-critical-path.png. Its CPU piece lies on a thread
#     below the fold, so the timeline is then scrolled down (5 wheel steps) and shot again,
#     selection-actions-2b-critical-path-scrolled.png, and scrolled back up.
#  3. "what if the CPU had not spent it" is clicked: the bottom panel switches to the
#     What if tab, which replays the run without the launching threads' CPU time in the
#     range; shot once its table stops changing: selection-actions-3-what-if.png.
#  4. The pointer is moved to the left summary panel (away from the timeline), F (fit) and
#     then W three times are pressed: the timeline zooms in about its centre although the
#     pointer is not over it (ruler "view 4.004 s" before, ≈1.69 s after).
#     Shot: selection-actions-4-keys-away.png.
#  5. 30 s of small pointer moves, one a second: 15 over the timeline, 15 over the What if
#     table; then shot, selection-actions-5-after-30s.png, and compared with shot 4 (taken
#     just before, pointer parked the same way) with ImageMagick `compare -metric AE`
#     (Xvfb does not draw the pointer, so 0 means nothing changed). Whether the app is
#     still running is printed.
#  6. With the pointer back over the left panel, F alone: the whole run in view again
#     (ruler "view 4.004 s"), F too acts away from the timeline.
#     Shot: selection-actions-6-fit-away.png.
# Output: $OUT/selection-actions-{1-banner,2-critical-path,2b-critical-path-scrolled,
# 3-what-if,4-keys-away,5-after-30s,6-fit-away}.png; the pixel difference is printed.
# Exits 1 (after every shot) when the app is no longer running at the end.
# Usage: scripts/screenshots-selection-actions.sh   (needs Xvfb, xdotool, xwd, ImageMagick)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
mkdir -p "$OUT"
. scripts/xdo-lib.sh
start_display 93

# Coordinates on a fresh layout at 1400×900. The timeline's time axis starts at x≈528 (0 s)
# with ≈218 px a second with the whole ~4 s run in view; GPU 1's stream 7 row is at y≈143
# (the timeline spans y≈30..510). On the sample the GPUs are idle from ≈0.09 s to ≈0.41 s
# (the nvrtc_compile stall): SEL_X0..SEL_X1 is ≈0.056 s to ≈0.52 s, which takes in the
# first burst of kernels after it.
# The bottom panel is 380 px tall, its tab labels at y≈533; the banner is the first row
# under them (y≈565), wrapped on two lines: before the path is worked out, "critical path"
# is at x≈921 on the first; once it is, its words take the button's place and the second
# line holds "save as figure", "what if the CPU had not spent it" (x≈540, y≈588) and
# "clear: whole trace".
SEL_X0=${SEL_X0:-540}; SEL_X1=${SEL_X1:-640}; SEL_Y=${SEL_Y:-143}
BANNER_Y=565
PATH_X=${PATH_X:-921}
WHATIF_X=${WHATIF_X:-540}; WHATIF_Y=${WHATIF_Y:-588}
TIMELINE_X=900; TIMELINE_Y=300   # a point inside the timeline, for the wheel
AWAY_X=150; AWAY_Y=450           # a point in the left summary panel

# region_sum X Y W H: a checksum of that part of the screen.
region_sum() { xwd -root -silent | /usr/bin/convert xwd:- -crop "${3}x${4}+${1}+${2}" +repage rgb:- | md5sum; }
# wait_settled X Y W H BEFORE TIMEOUT: waits until the region differs from BEFORE and has
# stayed the same for a second (a spinner keeps it changing), or TIMEOUT seconds.
wait_settled() {
  local last="" now end=$((SECONDS + $6))
  while [ $SECONDS -lt $end ]; do
    now=$(region_sum "$1" "$2" "$3" "$4")
    [ "$now" != "$5" ] && [ "$now" = "$last" ] && return 0
    last=$now; sleep 1
  done
  echo "note: the region $3x$4+$1+$2 had not settled after $6 s" >&2
}

"$BIN" & APP=$!
wait_loaded wan2.1 15; park

# 1. The range around the stall, Shift+dragged on GPU 1's stream 7.
drag "$SEL_X0" "$SEL_X1" "$SEL_Y" shift; park; sleep 1
shot selection-actions-1-banner

# 2. "critical path": waits for the banner's words in place of the button, then the line.
BEFORE=$(region_sum 700 555 700 20)
click "$PATH_X" "$BANNER_Y" 0.5; park
wait_settled 700 555 700 20 "$BEFORE" 30
shot selection-actions-2-critical-path
xdotool mousemove "$TIMELINE_X" "$TIMELINE_Y"; sleep 0.3
for _ in 1 2 3 4 5; do xdotool click 5; sleep 0.2; done
park; sleep 0.5; shot selection-actions-2b-critical-path-scrolled
xdotool mousemove "$TIMELINE_X" "$TIMELINE_Y"; sleep 0.3
for _ in 1 2 3 4 5 6 7 8; do xdotool click 4; sleep 0.2; done
park; sleep 0.5

# 3. "what if the CPU had not spent it": the What if tab, once its answer is in.
BEFORE=$(region_sum 330 575 800 220)
click "$WHATIF_X" "$WHATIF_Y" 0.5; park
wait_settled 330 575 800 220 "$BEFORE" 60
shot selection-actions-3-what-if

# 4. F, then W three times, with the pointer over the left panel: the timeline moves.
xdotool mousemove "$AWAY_X" "$AWAY_Y"; sleep 0.5
xdotool key f; sleep 1
for _ in 1 2 3; do xdotool key w; sleep 0.7; done
sleep 1; park; sleep 0.5; shot selection-actions-4-keys-away

# 5. 30 s of small moves, one a second: 15 over the timeline, 15 over the What if table.
for i in $(seq 0 29); do
  if [ "$i" -lt 15 ]; then
    xdotool mousemove $((560 + i * 50)) $((90 + (i % 5) * 80))
  else
    xdotool mousemove $((360 + (i - 15) * 50)) $((610 + (i % 5) * 40))
  fi
  sleep 1
done
park; sleep 1; shot selection-actions-5-after-30s
DIFF=$(compare -metric AE "$OUT/selection-actions-4-keys-away.png" "$OUT/selection-actions-5-after-30s.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of moving the pointer: $DIFF"
# 6. F alone, the pointer over the left panel: back to the whole run.
xdotool mousemove "$AWAY_X" "$AWAY_Y"; sleep 0.5
xdotool key f; sleep 1.5; park; sleep 0.5; shot selection-actions-6-fit-away
ALIVE=0
if kill -0 "$APP" 2>/dev/null; then ALIVE=1; echo "the app is still running"; else echo "FAIL: the app is no longer running" >&2; fi
quit
[ "$ALIVE" = 1 ] || exit 1
