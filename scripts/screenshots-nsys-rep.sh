#!/usr/bin/env bash
# Double-clicking an .nsys-rep, as a person sees it: the window exporting it with a
# stand-in `nsys` (a script that takes 6 s, then writes a generated trace where --output
# says), the trace once open (a kernel clicked, its launch configuration read from the
# export), hovering half a minute, and the page without any nsys. Needs Xvfb, xdotool,
# x11-apps (xwd), imagemagick and a release build. Usage: scripts/screenshots-nsys-rep.sh
set -euo pipefail
BIN=${BIN:-target/release/nsys-explorer}
OUT=${OUT:-screenshots}
. "$(dirname "$0")/xdo-lib.sh"
start_display 96
export XDG_CACHE_HOME=$(mktemp -d)
WORK=$(mktemp -d)
"$BIN" synth --preset tiny --out "$WORK/generated.sqlite" >/dev/null
mkdir "$WORK/reports"
echo "stand-in report" > "$WORK/reports/wan21-4gpu.nsys-rep"
cat > "$WORK/nsys" <<SCRIPT
#!/bin/bash
if [ "\$1" = "--version" ]; then echo "NVIDIA Nsight Systems version 2099.1.0-standin"; exit 0; fi
out=""; prev=""; for a in "\$@"; do [ "\$prev" = "--output" ] && out="\$a"; prev="\$a"; done
sleep 6; cp "$WORK/generated.sqlite" "\$out"
SCRIPT
chmod +x "$WORK/nsys"

NSYS="$WORK/nsys" "$BIN" "$WORK/reports/wan21-4gpu.nsys-rep" & APP=$!
sleep 4; shot nsys-rep-exporting
wait_loaded wan21-4gpu 8
park; shot nsys-rep-opened
# A kernel found and selected: its Details read the launch configuration from the export.
click 900 300 0.5
xdotool key ctrl+f; sleep 0.5; xdotool type --delay 80 flash_fwd_kernel; sleep 0.5
xdotool key Return; sleep 1.5
click 821 533 1.5
park; shot nsys-rep-kernel-details
hover_for 30
shot nsys-rep-after-30s
quit
echo "beside the report: $(ls "$WORK/reports")"
echo "exports kept: $(ls "$XDG_CACHE_HOME/nsys-explorer/exports")"

NSYS="$WORK/no-such-nsys" "$BIN" "$WORK/reports/wan21-4gpu.nsys-rep" & APP=$!
wait_loaded wan21-4gpu 2
park; shot nsys-rep-no-nsys
quit
rm -rf "$WORK" "$XDG_CACHE_HOME"
