#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Documentation step (not part of the build or the tests): renders Wireshark (Qt) with the
# ddpscope plugin on samples/synthetic/fault-bounds.pcap, twice (issue 18):
#   wireshark-menu.png   Tools › ddpscope › Open this capture in ddpscope-gui at the selected frame
#   wireshark-stats.png  Statistics › iWARP (ddpscope) Findings, the stat-tap table dialog
#
#   docs/screenshots/wireshark-integration-screenshot.sh [PLUGIN_SO] [OUT_DIR]
#     PLUGIN_SO defaults to build/dev/plugin/ddpscope.so, OUT_DIR to docs/screenshots.
#     GUI_DIR=DIR (a folder holding ddpscope-gui, e.g. build/dev/gui) also clicks the menu
#     entry and checks that Wireshark started `ddpscope-gui FILE --frame 14`.
#
# Needs (Debian 12): apt-get install --no-install-recommends wireshark-qt xvfb xauth imagemagick
# xdotool x11-utils. As root Wireshark runs as user nobody with a temporary HOME holding the
# plugin (Wireshark ignores personal plugins as root), on an Xvfb display with no window
# manager; menus are driven with the keyboard (xdotool).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
plugin="$(realpath "${1:-$repo/build/dev/plugin/ddpscope.so}")"
outdir="$(realpath -m "${2:-$repo/docs/screenshots}")"
capture="$repo/samples/synthetic/fault-bounds.pcap"
regions="$repo/samples/synthetic/fault-bounds.regions.json"
for tool in wireshark Xvfb xdotool import convert; do
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
cat > "$home/.config/wireshark/recent" <<'EOT'
gui.toolbar_main_show: TRUE
gui.filter_toolbar_show: TRUE
gui.packet_list_show: TRUE
gui.tree_view_show: TRUE
gui.byte_view_show: FALSE
gui.statusbar_show: TRUE
gui.time_format: RELATIVE
gui.geometry_main_upper_pane: 420
EOT
cat > "$home/.config/wireshark/recent_common" <<'EOT'
gui.geometry_main_x: 0
gui.geometry_main_y: 0
gui.geometry_main_width: 1280
gui.geometry_main_height: 860
gui.geometry_main_maximized: FALSE
privs.warn_if_elevated: FALSE
EOT
cat > "$home/.config/wireshark/preferences" <<'EOT'
gui.update.enabled: FALSE
gui.packet_list_show_minimap: FALSE
EOT
chmod -R a+rX "$work"
chown -R 65534:65534 "$home"
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)

display=":$((90 + RANDOM % 100))"
Xvfb "$display" -screen 0 1280x860x24 -ac -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
sleep 2
export DISPLAY="$display"
(cd "$work" && exec env HOME="$home" DISPLAY="$display" XDG_RUNTIME_DIR="$work" \
  PATH="${GUI_DIR:+$GUI_DIR:}$PATH" "${as_user[@]}" wireshark -r "$cap" -o "iwarp.mpa.regions_file:$reg" -g 14 \
  >"$work/wireshark.log" 2>&1) &
ws_pid=$!

win=""
for _ in $(seq 60); do
  win=$(xdotool search --name "fault-bounds" 2>/dev/null | head -1 || true)
  [ -n "$win" ] && break
  sleep 1
done
[ -n "$win" ] || { cat "$work/wireshark.log" >&2; echo "no Wireshark window" >&2; exit 1; }
sleep 3
xdotool windowsize "$win" 1280 860 windowmove "$win" 0 0 || true
xdotool windowactivate --sync "$win" 2>/dev/null || xdotool windowfocus "$win" || true
sleep 1
mkdir -p "$outdir"
shoot() {  # OUT.png
  sleep 1.5
  import -window root "$work/full.png"
  convert "$work/full.png" -trim +repage -strip -colors 192 "PNG8:$1"
  echo "wrote $1"
}
# Menus by mouse: the window sits at 0,0 with a fixed size, so the menu bar does too. Each
# position can be overridden (TOOLS_X, ...) for another Wireshark layout.
click() { xdotool mousemove --sync "$1" "$2" click 1; sleep "${3:-1}"; }
hover() { xdotool mousemove --sync "$1" "$2"; sleep "${3:-1}"; }
# Tools › ddpscope (a click opens the submenu; hovering its entry highlights it).
click "${TOOLS_X:-534}" 10
if [ -n "${SHOT_DEBUG:-}" ]; then import -window root "$SHOT_DEBUG-tools.png"; fi
click "${DDPSCOPE_X:-580}" "${DDPSCOPE_Y:-109}" 1.5
hover "${ENTRY_X:-780}" "${ENTRY_Y:-109}" 1
shoot "$outdir/wireshark-menu.png"
if [ -n "${GUI_DIR:-}" ]; then
  # The entry itself: Wireshark starts ddpscope-gui FILE --frame 14 (found in PATH).
  click "${ENTRY_X:-780}" "${ENTRY_Y:-109}" 1
  gui_win=""
  for _ in $(seq 30); do
    gui_win=$(xdotool search --name "^ddpscope" 2>/dev/null | head -1 || true)
    [ -n "$gui_win" ] && break
    sleep 1
  done
  [ -n "$gui_win" ] || { cat "$work/wireshark.log" >&2; echo "ddpscope-gui did not start" >&2; exit 1; }
  echo "ddpscope-gui started from the menu: $(xdotool getwindowname "$gui_win")"
  ps -eo args | grep '[d]dpscope-gui .*--frame' || true
  xdotool windowkill "$gui_win" || true
  sleep 1
  xdotool windowactivate "$win" 2>/dev/null || true
else
  xdotool key Escape Escape Escape
fi
sleep 1
# Statistics › iWARP (ddpscope) Findings.
click "${STATS_X:-325}" 10
if [ -n "${SHOT_DEBUG:-}" ]; then import -window root "$SHOT_DEBUG-stats.png"; fi
click "${FINDINGS_X:-400}" "${FINDINGS_Y:-311}" 4
dlg=$(xdotool search --name "Findings" 2>/dev/null | tail -1 || true)
if [ -n "$dlg" ]; then
  xdotool windowmove "$dlg" 330 160 windowsize "$dlg" 900 560 || true
  sleep 1
fi
shoot "$outdir/wireshark-stats.png"
