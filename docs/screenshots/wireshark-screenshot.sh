#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Documentation step (not part of the build or the tests): renders
# docs/screenshots/wireshark-bounds.png, Wireshark (Qt) with the ddpscope plugin showing the
# frame of samples/synthetic/fault-bounds.pcap that holds the ddp.tagged.bounds finding, with
# the iWARP tree expanded and the expert info visible.
#
#   docs/screenshots/wireshark-screenshot.sh [PLUGIN_SO] [OUT.png]
#     PLUGIN_SO defaults to build/dev/plugin/ddpscope.so, OUT.png to
#     docs/screenshots/wireshark-bounds.png.
#
# Needs (Debian 12): apt-get install --no-install-recommends wireshark-qt xvfb xauth imagemagick
# xdotool x11-utils (answer "no" to non-root capture: the script only reads a file).
# Wireshark ignores per-user plugins when run as root, so as root it runs as user nobody with a
# temporary HOME holding the plugin (like tests/plugin), on an Xvfb display.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
plugin="$(realpath "${1:-$repo/build/dev/plugin/ddpscope.so}")"
out="$(realpath -m "${2:-$repo/docs/screenshots/wireshark-bounds.png}")"
capture="$repo/samples/synthetic/fault-bounds.pcap"
regions="$repo/samples/synthetic/fault-bounds.regions.json"
for tool in wireshark tshark Xvfb xdotool import convert; do
  command -v "$tool" >/dev/null || { echo "missing $tool (see the header of $0)" >&2; exit 2; }
done
[ -f "$plugin" ] || { echo "plugin not built: $plugin" >&2; exit 2; }

work="$(mktemp -d)"
xvfb_pid=""
ws_pid=""
cleanup() {
  [ -z "$ws_pid" ] || kill "$ws_pid" 2>/dev/null || true
  [ -z "$xvfb_pid" ] || kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
home="$work/home"
mkdir -p "$home/.local/lib/wireshark/plugins/4.0/epan" "$home/.config/wireshark"
cp "$plugin" "$home/.local/lib/wireshark/plugins/4.0/epan/"
cp "$capture" "$regions" "$work/"
cap="$work/$(basename "$capture")"
reg="$work/$(basename "$regions")"
# A layout with room for the packet details; no byte view; the window fills the screen.
cat > "$home/.config/wireshark/recent" <<'EOF'
gui.toolbar_main_show: TRUE
gui.filter_toolbar_show: TRUE
gui.packet_list_show: TRUE
gui.tree_view_show: TRUE
gui.byte_view_show: FALSE
gui.statusbar_show: TRUE
gui.time_format: RELATIVE
gui.geometry_main_upper_pane: 300
EOF
cat > "$home/.config/wireshark/recent_common" <<'EOF'
gui.geometry_main_x: 0
gui.geometry_main_y: 0
gui.geometry_main_width: 1400
gui.geometry_main_height: 1220
gui.geometry_main_maximized: FALSE
privs.warn_if_elevated: FALSE
EOF
cat > "$home/.config/wireshark/preferences" <<'EOF'
gui.update.enabled: FALSE
gui.packet_list_show_minimap: FALSE
EOF
chmod -R a+rX "$work"
chown -R 65534:65534 "$home"

as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# The frame holding the first ddp.tagged.bounds finding.
frame=$(cd "$work" && env HOME="$home" "${as_user[@]}" tshark -r "$cap" \
          -o "iwarp.mpa.regions_file:$reg" -Y iwarp.ddp.tagged.bounds -T fields -e frame.number |
        head -1)
[ -n "$frame" ] || { echo "no ddp.tagged.bounds finding found by the plugin" >&2; exit 1; }
echo "frame with ddp.tagged.bounds: $frame"

display=":$((90 + RANDOM % 100))"
Xvfb "$display" -screen 0 1400x1220x24 -ac -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
sleep 2
export DISPLAY="$display"

(cd "$work" && exec env HOME="$home" DISPLAY="$display" XDG_RUNTIME_DIR="$work" \
  "${as_user[@]}" wireshark -r "$cap" -o "iwarp.mpa.regions_file:$reg" -g "$frame" \
  >"$work/wireshark.log" 2>&1) &
ws_pid=$!

# Wait for the main window, then expand the packet details (View > Expand All, Ctrl+Right).
win=""
for _ in $(seq 60); do
  win=$(xdotool search --name "fault-bounds" 2>/dev/null | head -1 || true)
  [ -n "$win" ] && break
  sleep 1
done
[ -n "$win" ] || { cat "$work/wireshark.log" >&2; echo "no Wireshark window" >&2; exit 1; }
sleep 3
xdotool windowsize "$win" 1400 1220 windowmove "$win" 0 0 || true
xdotool windowactivate --sync "$win" 2>/dev/null || xdotool windowfocus "$win" || true
sleep 1
xdotool key --window "$win" ctrl+Right
sleep 2
if [ -n "${SHOT_DEBUG:-}" ]; then import -window root "$SHOT_DEBUG"; fi
# Collapse the first four top-level items (Frame, Ethernet, IP, TCP): click the first row of
# the packet details, then Left (collapse) and Down (next sibling).
xdotool mousemove --sync "${DETAILS_X:-300}" "${DETAILS_Y:-403}" click 1
sleep 0.5
for _ in 1 2 3 4; do
  xdotool key Left
  sleep 0.2
  xdotool key Down
  sleep 0.2
done
xdotool key Home
sleep 1
mkdir -p "$(dirname "$out")"
import -window root "$work/full.png"
convert "$work/full.png" -trim +repage -strip -colors 128 "PNG8:$out"
echo "wrote $out"
