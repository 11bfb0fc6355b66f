#!/usr/bin/env bash
# Screenshots of the real window under Xvfb, into screenshots/. Needs xvfb, xdotool and
# x11-apps (xwd) + imagemagick (convert), and xdg-utils for the desktop-entry shot.
# Usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${BIN:-target/release/nsys-explorer}")
LARGE=${1:?usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite}
REAL=${2:?usage: scripts/screenshots.sh LARGE.sqlite REAL_EXPORT.sqlite}
OUT=screenshots
mkdir -p "$OUT"
export DISPLAY=:97
Xvfb "$DISPLAY" -screen 0 1400x900x24 >/dev/null 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null || true' EXIT
sleep 1
export LIBGL_ALWAYS_SOFTWARE=1 WINIT_UNIX_BACKEND=x11 XDG_CONFIG_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d)

shot() { xdotool mousemove 1395 895; sleep 0.4; xwd -root -silent | /usr/bin/convert xwd:- "$OUT/$1.png"; echo "wrote $OUT/$1.png"; }
# Waits until the window's title names the file, then for the load and analyses.
wait_loaded() { for _ in $(seq 60); do sleep 1; xdotool search --name "^$1" >/dev/null 2>&1 && break; done; sleep "$2"; }
quit() { kill "$APP"; wait "$APP" 2>/dev/null || true; }
drag() { xdotool mousemove "$1" "$3" mousedown 1; sleep 0.3; xdotool mousemove $(( ($1 + $2) / 2 )) "$3"; sleep 0.3; xdotool mousemove "$2" "$3"; sleep 0.3; xdotool mouseup 1; sleep 1; }

# Layout at 1400×900: summary panel on the left (to x≈335), tabs below (from y≈580);
# the timeline's ruler at y≈44, its plot from x≈530; GPU 0's first stream at y≈85.
RULER_Y=44

# 1. Start page.
$BIN --start-page & APP=$!
sleep 3; shot start-page; quit

# 2. Loading the large trace (progress bar), then 3. the whole trace zoomed out.
$BIN "$LARGE" & APP=$!
sleep 2.5; shot loading
wait_loaded large 14; shot large-zoomed-out

# 4. One iteration zoomed in: drag on the ruler across a small part of the view, twice
#    (a few iterations in view), then double-click one iteration's NVTX range (y≈310).
drag 940 960 $RULER_Y
drag 700 1200 $RULER_Y
xdotool mousemove 780 310 click --repeat 2 --delay 80 1; sleep 1
shot iteration-zoomed-in

# 5. A kernel selected, with the arrow from its launch: zoom further on the ruler, fold
#    GPUs 1–3 by their headers (each moves up as the one above folds) so the launching
#    thread's API row is in view, then click GPU 0's first stream.
drag 940 955 $RULER_Y
for y in 122 142 162; do xdotool mousemove 300 "$y" click 1; sleep 0.6; done
xdotool mousemove 980 85 click 1; sleep 1.5
shot kernel-selected
quit

# 6–8. The panels, each opened as its click would (--show), once the analyses are in.
for view in idle-overlay recurring-gap slow-iteration; do
  $BIN --show "$view" "$LARGE" & APP=$!
  wait_loaded large 16; shot "panel-$view"; quit
done

# 9. The desktop entry: install it, then run the command line its Exec gives for a real
#    export, as a file manager would on a double-click.
"$BIN" install-desktop --default >/dev/null
ENTRY="$XDG_DATA_HOME/applications/nsys-explorer.desktop"
EXEC=$(sed -n 's/^Exec=//p' "$ENTRY")
echo "Exec line: $EXEC; default for .sqlite: $(xdg-mime query default application/vnd.sqlite3)"
CMD=${EXEC//%f/$(realpath "$REAL")}
$CMD & APP=$!
wait_loaded "$(basename "$REAL")" 4; shot desktop-double-click; quit
"$BIN" uninstall-desktop >/dev/null
