#!/usr/bin/env bash
# Screenshots of the real window under Xvfb, into screenshots/, taken the way a person uses
# it: every view is reached by real input (xdotool: move, click, drag, keys), in one running
# window per trace, and the window is hovered for half a minute to check that its layout
# holds. Needs xvfb, xdotool, x11-apps (xwd), imagemagick (convert, compare) and xdg-utils.
# Usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite API_ONLY.sqlite
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
LARGE=${1:?usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite API_ONLY.sqlite}
REAL=${2:?usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite API_ONLY.sqlite}
API_ONLY=${3:?usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite API_ONLY.sqlite}
OUT=screenshots
mkdir -p "$OUT"
export DISPLAY=:97
Xvfb "$DISPLAY" -screen 0 1400x900x24 >/dev/null 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null || true' EXIT
sleep 1
# A fresh user: no remembered files or panel sizes.
export LIBGL_ALWAYS_SOFTWARE=1 WINIT_UNIX_BACKEND=x11 XDG_CONFIG_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d)

. scripts/xdo-lib.sh

# Layout at 1400×900 on a fresh start: summary on the left (to x≈330), tabs below (top edge
# at y≈522, tab labels at y≈533), the ruler at y≈42, the plot from x≈528.
RULER_Y=42
TABS_Y=533
GAPS_TAB=432; ITER_TAB=498; KERNELS_TAB=571; NCCL_TAB=633; DETAILS_TAB=821

# 1. Start page.
$BIN --start-page & APP=$!
wait_loaded nsys-explorer 2; park; shot start-page; quit

# 2. Loading the large trace (progress bar), 3. the whole trace.
$BIN "$LARGE" & APP=$!
sleep 2.5; shot loading
wait_loaded large 16; park; shot large-zoomed-out

# 4. Half a minute of hovering: the layout holds (same picture before and after).
xdotool mousemove 900 300; sleep 1; shot hover-before
hover_for 30
xdotool mousemove 900 300; sleep 1; shot hover-after
DIFF=$(compare -metric AE "$OUT/hover-before.png" "$OUT/hover-after.png" null: 2>&1 || true)
echo "pixels that differ after 30 s of hovering: $DIFF"

# 5. GPU 0's idle time overlaid: click "idle" under GPU 0 in the summary, then the
#    longest idle interval in the list that opens under it (the timeline zooms to it).
click 70 229 2; click 66 289 2; park; shot panel-idle-overlay
click 70 229 1   # clear it again

# 6. The slowest iteration and its drill-down: Iterations tab, then the "Slowest" button.
click $ITER_TAB $TABS_Y; click 500 587 2; park; shot panel-slow-iteration

# 7. One iteration zoomed in: double-click the outermost NVTX range of the first thread
#    (the slowest step fills the view after 6, so its range is under the pointer).
drag 700 1100 $RULER_Y
xdotool mousemove 800 310 click --repeat 2 --delay 80 1; sleep 1; park
shot iteration-zoomed-in

# 8. The recurring gaps: Gaps tab, Recurring, then the top pattern's first gap.
click $GAPS_TAB $TABS_Y; click 443 564; click 600 663 1; click 600 663 2; park
shot panel-recurring-gap

# 9. A kernel selected, with the arrow from its launch: Fit, zoom on the ruler, fold GPUs
#    1–3 by their headers, click a kernel of GPU 0.
xdotool mousemove 900 300 key f; sleep 1
drag 940 948 $RULER_Y
drag 700 900 $RULER_Y
for y in 122 142 162; do click 400 "$y" 0.6; done
click 980 86 1.5; park
shot kernel-selected

# 10. A span measured with Ctrl+drag, and the keyboard help (F1).
drag 700 1000 300 ctrl; xdotool mousemove 1100 200; sleep 0.5; shot measure
xdotool key F1; sleep 1; shot keyboard-help; xdotool key F1
quit

# 11. An export without GPU activity (API calls and NVTX only).
$BIN "$API_ONLY" & APP=$!
wait_loaded "$(basename "$API_ONLY")" 4; park; shot api-only
click $ITER_TAB $TABS_Y; park; shot api-only-iterations
quit

# 12. The desktop entry: install it, then run the command line its Exec gives for a real
#     export, as a file manager would on a double-click.
"$BIN" install-desktop --default >/dev/null
ENTRY="$XDG_DATA_HOME/applications/nsys-explorer.desktop"
EXEC=$(sed -n 's/^Exec=//p' "$ENTRY")
echo "Exec line: $EXEC; default for .sqlite: $(xdg-mime query default application/vnd.sqlite3)"
CMD=${EXEC//%f/$(realpath "$REAL")}
$CMD & APP=$!
wait_loaded "$(basename "$REAL")" 4; park; shot desktop-double-click; quit
"$BIN" uninstall-desktop >/dev/null
