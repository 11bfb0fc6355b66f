# Helpers of the screenshot scripts: real input with xdotool, shots with xwd. Sourced, with
# BIN and OUT set and an X server on $DISPLAY.
park() { xdotool mousemove 1395 895; sleep 0.5; }
shot() { xwd -root -silent | /usr/bin/convert xwd:- "$OUT/$1.png"; echo "wrote $OUT/$1.png"; }
click() { xdotool mousemove "$1" "$2"; sleep 0.3; xdotool click 1; sleep "${3:-1}"; }
# Waits until the window's title names the file, then for the load and analyses.
# Without a window manager the window gets the keyboard only when given it.
wait_loaded() {
  for _ in $(seq 60); do sleep 1; xdotool search --name "^$1" >/dev/null 2>&1 && break; done
  xdotool search --name "^$1" windowfocus 2>/dev/null || true
  sleep "$2"
}
quit() { kill "$APP"; wait "$APP" 2>/dev/null || true; }
# drag X0 X1 Y [MODIFIER]: press, move in steps, release.
drag() {
  [ -n "${4:-}" ] && xdotool keydown "$4"
  xdotool mousemove "$1" "$3" mousedown 1; sleep 0.3
  xdotool mousemove $(( ($1 + $2) / 2 )) "$3"; sleep 0.3
  xdotool mousemove "$2" "$3"; sleep 0.3; xdotool mouseup 1
  [ -n "${4:-}" ] && xdotool keyup "$4"
  sleep 1
}
# Moves the pointer over the whole window for $1 seconds, as a person reading it does.
hover_for() {
  local end=$((SECONDS + $1)) i=0
  while [ $SECONDS -lt $end ]; do
    xdotool mousemove $(( 40 + (i * 137) % 1340 )) $(( 30 + (i * 71) % 860 )); sleep 0.05; i=$((i + 1))
  done
}

# start_display N [WxH]: an Xvfb display :N of WxH (default 1400x900) for this script (ended
# on exit), and a fresh user: no remembered files or panel sizes.
start_display() {
  export DISPLAY=":$1"
  Xvfb "$DISPLAY" -screen 0 "${2:-1400x900}x24" >/dev/null 2>&1 &
  XVFB=$!
  trap 'kill $XVFB 2>/dev/null || true' EXIT
  sleep 1
  export LIBGL_ALWAYS_SOFTWARE=1 WINIT_UNIX_BACKEND=x11 XDG_CONFIG_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d)
}
