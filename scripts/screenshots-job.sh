#!/usr/bin/env bash
# Screenshots of the job page (a folder of per-rank summaries opened as one job) in the real
# window under Xvfb (xdotool input), at the default 1400×900 on a fresh user. JOB is a folder
# of 64 `rankNN.summary` files (default /tmp/r64s) whose exports lie in another folder
# (/tmp/r64m/rankNN.sqlite, as the summaries name them): a 64-GPU run of 60 iterations where
# rank37 is 1.200 s late at a collective of iteration 37 (its thread in read()).
#  1. The folder is opened (`nsys-explorer JOB`); once the title reads "job of 64 ranks" and
#     a few seconds more, the pointer parked on empty page at the bottom: the heading "Job of
#     64 ranks (64 GPUs), … long", the [info] finding card "rank37.sqlite:0 holds the others
#     back: 1.200 s late …", the row "Ranks × iterations" with its toggles "held the others
#     back" (on), "waited in NCCL" and "iteration time", the line "64 GPUs, the hottest first;
#     60 iterations left to right. Hover a cell for its times.", the heatmap's scroll area
#     with its rows hottest first (rank37.sqlite:0 the first row, its iteration-37 cell the
#     one red cell) and the top of the table "GPUs, most NCCL waiting first" (rank37's row
#     first). Shot: job-1-page.png.
#  2. Nothing is scrolled: the pointer is put on rank37's cell at iteration 37 in the
#     heatmap's first row (its y is looked up as the first red run in that column of the
#     screen, the fixed HOT_Y if none), moved by 1 px and left to rest 1.5 s: the tooltip
#     "rank37.sqlite:0 · iteration 37: this GPU's iteration …, it waited … in NCCL and held the
#     others back 1.200 s". Shot: job-2-heatmap-hover.png.
#  3. The "iteration time" toggle is clicked and the pointer parked: cells coloured by
#     iteration time against each GPU's median, the rows re-sorted hottest first for it
#     (iteration 0, the warm-up, and iteration 37 red on every rank).
#     Shot: job-3-iteration-time.png.
#  4. The page is scrolled down with 6 wheel steps over the GPU table (below the heatmap, so
#     the wheel moves the page, not the heatmap), then the pointer parked: the heatmap's last
#     rows at the top, "GPUs, most NCCL waiting first", its header, rank37's row then the 15
#     most waiting GPUs, each with an Open button, the button "show all 64 GPUs", and below
#     "Collectives held back longest" and "Iteration 37's path by collective".
#     Shot: job-4-gpu-table.png.
#  5. The first row's Open (rank37's) is clicked: its export is loaded in full (title
#     "rank37.sqlite — nsys-explorer", printed); once the timeline is drawn (its dark
#     background at a point of the timeline, then the screen unchanged for 2 s; up to 40 s)
#     the window is shot: timeline, "Where time goes", Findings tab.
#     Shot: job-5-rank-opened.png.
#  6. 30 s of pointer moves over the whole window (hover_for), then, pointer parked, shot
#     job-6-after-30s.png; the pixels that differ from shot 5 are printed (Xvfb draws no
#     pointer) and whether the app is still running.
# Output: $OUT/job-{1-page,2-heatmap-hover,3-iteration-time,4-gpu-table,5-rank-opened,
# 6-after-30s}.png. Exits 1 (after every shot) when the app is no longer running at the end.
# Usage: [BIN=…] [OUT=…] [JOB=/tmp/r64s] [DISPLAY_NO=95] scripts/screenshots-job.sh
# (needs Xvfb, xdotool, xwd, ImageMagick)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
OUT=${OUT:-screenshots}
JOB=${JOB:-/tmp/r64s}
mkdir -p "$OUT"
. scripts/xdo-lib.sh
start_display "${DISPLAY_NO:-95}"

# Coordinates on a fresh layout at 1400×900, the page scrolled to its top. The heatmap's
# toggles are on the row at y≈180 ("iteration time" at x≈419). The heatmap's scroll area
# starts at y≈205 (below the line "64 GPUs, the hottest first; …"): a row is 14 px (12 px of
# cell, the first at y≈212..223), the label column x≈8..177, then 60 pixel-aligned cells of
# ≈20 px (x≈178..1376; the page's and the heatmap's thin scroll bars at x≈1374..1375):
# iteration k's centre is at x≈178 + (k + 0.5) × 19.97, iteration 37 at x≈927.
# The GPU table's header is at y≈610 with the page at its top, y≈130 after 6 wheel steps
# (80 px each) over the page (heading "GPUs, most NCCL waiting first" at y≈109); its first
# row is then at y≈153, its Open button at x≈464..510, y≈143..163.
TOGGLE_Y=180; ITER_TIME_X=${ITER_TIME_X:-419}
HEAT_TOP=205; HEAT_H=360
HOT_X=${HOT_X:-927}; HOT_Y=${HOT_Y:-218}
PAGE_X=700; PAGE_Y=800                 # a point on the page below the heatmap, for the wheel
OPEN_X=${OPEN_X:-487}; OPEN_Y=${OPEN_Y:-153}
TL_X=1000; TL_Y=400                    # a point of the loaded trace's timeline (empty, #0A0A0A)
# Where the pointer rests for the job page's shots: empty page right of the GPU table. In
# park's corner it would widen the page's scroll bar over the heatmap's last column.
park_page() { xdotool mousemove 1000 885; sleep 0.5; }

# region_sum X Y W H: a checksum of that part of the screen.
region_sum() { xwd -root -silent | /usr/bin/convert xwd:- -crop "${3}x${4}+${1}+${2}" +repage rgb:- | md5sum; }
pixel() { xwd -root -silent | /usr/bin/convert xwd:- -crop "1x1+$1+$2" +repage -depth 8 txt:- | grep -o '#[0-9A-F]\{6\}'; }
# hot_y X TOP H: the middle of the first red run in column X from TOP down H px, or nothing.
hot_y() {
  xwd -root -silent | /usr/bin/convert xwd:- -crop "1x${3}+${1}+${2}" +repage -depth 8 txt:- |
    awk -v top="$2" -F'[ ,:()]+' 'NR > 1 && !done { red = $3 > 200 && $4 < 100 && $5 < 100
      if (red) { if (first == "") first = $2; last = $2 } else if (first != "") done = 1 }
      END { if (first != "") print top + int((first + last) / 2) }'
}

"$BIN" "$JOB" & APP=$!
wait_loaded "job of 64 ranks" 4; park_page

# 1. The page as it opens.
shot job-1-page

# 2. No scrolling: the pointer on rank37's cell at iteration 37, the heatmap's first row.
Y=$(hot_y "$HOT_X" "$HEAT_TOP" "$HEAT_H")
if [ -n "$Y" ]; then HOT_Y=$Y; else echo "note: no red cell at x=$HOT_X, hovering y=$HOT_Y" >&2; fi
echo "hovering the hot cell at $HOT_X,$HOT_Y"
xdotool mousemove "$HOT_X" "$HOT_Y"; sleep 0.4
xdotool mousemove $((HOT_X + 1)) "$HOT_Y"; sleep 1.5   # a tooltip waits for the pointer to rest
shot job-2-heatmap-hover

# 3. "iteration time".
click "$ITER_TIME_X" "$TOGGLE_Y" 1; park_page
shot job-3-iteration-time

# 4. The page scrolled down to the GPU table, the wheel below the heatmap.
xdotool mousemove "$PAGE_X" "$PAGE_Y"; sleep 0.3
for _ in 1 2 3 4 5 6; do xdotool click 5; sleep 0.3; done
sleep 1; park_page
shot job-4-gpu-table

# 5. The first row's (rank37's) Open: waits for the timeline's dark background, then for a
#    still screen.
click "$OPEN_X" "$OPEN_Y" 0.2; park
START=$SECONDS
while [ $((SECONDS - START)) -lt 40 ] && [ "$(pixel "$TL_X" "$TL_Y")" != "#0A0A0A" ]; do sleep 0.5; done
LAST="" STILL=0
while [ $((SECONDS - START)) -lt 40 ] && [ "$STILL" -lt 2 ]; do
  NOW=$(region_sum 0 0 1400 900)
  if [ "$NOW" = "$LAST" ]; then STILL=$((STILL + 1)); else STILL=0; fi
  LAST=$NOW; sleep 1
done
echo "loaded in about $((SECONDS - START)) s; title: $(xdotool search --name 'nsys-explorer' getwindowname 2>/dev/null | head -1)"
shot job-5-rank-opened

# 6. 30 s of pointer moves, then the same view again.
hover_for 30
park; sleep 1; shot job-6-after-30s
DIFF=$(compare -metric AE "$OUT/job-5-rank-opened.png" "$OUT/job-6-after-30s.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of moving the pointer: $DIFF"
ALIVE=0
if kill -0 "$APP" 2>/dev/null; then ALIVE=1; echo "the app is still running"; else echo "FAIL: the app is no longer running" >&2; fi
quit
[ "$ALIVE" = 1 ] || exit 1
