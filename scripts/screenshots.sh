#!/usr/bin/env bash
# Screenshots of the real window under Xvfb, into screenshots/. Needs xvfb, xdotool and
# x11-apps (xwd) + imagemagick (convert). Usage: scripts/screenshots.sh LARGE.sqlite
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/nsys-explorer}
LARGE=${1:?usage: scripts/screenshots.sh LARGE.sqlite}
OUT=screenshots
mkdir -p "$OUT"
export DISPLAY=:97
Xvfb "$DISPLAY" -screen 0 1400x900x24 >/dev/null 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null || true' EXIT
sleep 1
export LIBGL_ALWAYS_SOFTWARE=1 WINIT_UNIX_BACKEND=x11 XDG_CONFIG_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d)

shot() { xwd -root -silent | /usr/bin/convert xwd:- "$OUT/$1.png"; echo "wrote $OUT/$1.png"; }
window() { xdotool search --sync --name "nsys-explorer" | head -1; }

# 1. Start page.
$BIN --start-page & APP=$!
sleep 3; shot start-page; kill $APP; wait $APP 2>/dev/null || true

# 2. Loading the large trace (progress bar), then 3. the whole trace zoomed out.
$BIN "$LARGE" & APP=$!
sleep 2.5; shot loading
for _ in $(seq 60); do sleep 1; xdotool search --name "^large" >/dev/null 2>&1 && break; done
sleep 12; shot large-zoomed-out

# 4. One iteration zoomed in: drag on the ruler across a small part of the view, twice.
W=$(window)
drag() { xdotool mousemove "$1" "$3" mousedown 1; sleep 0.3; xdotool mousemove $(( ($1 + $2) / 2 )) "$3"; sleep 0.3; xdotool mousemove "$2" "$3"; sleep 0.3; xdotool mouseup 1; sleep 1; }
drag 600 640 42
drag 300 1000 42
shot iteration-zoomed-in

# 5. A kernel selected: zoom further on the ruler, then click GPU 0's first stream.
drag 600 615 42
xdotool mousemove 650 87 click 1; sleep 1.5
shot kernel-selected
kill $APP; wait $APP 2>/dev/null || true
