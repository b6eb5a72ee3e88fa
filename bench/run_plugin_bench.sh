#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Wireshark plugin benchmark (target, issue 19: plugin <= 1.2x the built-in dissectors' time,
# on each shape of bench/make_capture.sh). On the capture bench/make_capture.sh generates
# (default: the write shape, ~SIZE_MB in all) it times `tshark -q -z expert -r FILE`
#   plugin    with the ddpscope plugin loaded (it switches the built-in iWARP dissectors off),
#   builtin   without the plugin (Wireshark's built-in iwarp_mpa / iwarp_ddp_rdmap),
#   deferred  with the plugin loaded but `-o iwarp.mpa.use_builtin:TRUE` (cost of having it
#             loaded while the built-ins decode),
# every run as the same user: Wireshark ignores per-user plugins when run as root, so as root
# tshark runs as user nobody (setpriv), with HOME pointing at a folder holding the plugin (or
# none). Runs are interleaved; the minimum over RUNS runs of wall clock and CPU time
# (user+system) is reported, with peak RSS.
#   bench/run_plugin_bench.sh BUILD_DIR [SIZE_MB] [RUNS]     (defaults 200, 3)
# BENCH_CAPTURE=FILE uses an existing capture instead of generating one.
set -euo pipefail
build="${1:?usage: run_plugin_bench.sh BUILD_DIR [SIZE_MB] [RUNS]}"
size_mb="${2:-200}"
runs="${3:-3}"
ddpscope="$build/analyzer/ddpscope"
plugin="$build/plugin/ddpscope.so"
[ -f "$plugin" ] || { echo "plugin not built: $plugin" >&2; exit 2; }
command -v tshark >/dev/null || { echo "tshark not found" >&2; exit 2; }

work="$(mktemp -d)"
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/home-plugin/.local/lib/wireshark/plugins/4.0/epan" "$work/home-none"
cp "$plugin" "$work/home-plugin/.local/lib/wireshark/plugins/4.0/epan/"
chmod -R a+rX "$work"

cap="$work/bench.pcap"
if [ -n "${BENCH_CAPTURE:-}" ]; then
  cp "$BENCH_CAPTURE" "$cap"
else
  "$(dirname "$0")/make_capture.sh" "$ddpscope" "$size_mb" "$cap"
fi
chmod 644 "$cap"
bytes=$(stat -c %s "$cap")

as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)

ts() {  # HOME-name, tshark args...
  local home="$work/$1"; shift
  (cd "$work" && env HOME="$home" "${as_user[@]}" tshark "$@")
}

# Each configuration decodes what it should (first 50 frames).
check_decodes() {  # home, field, extra args...
  local home="$1" field="$2"; shift 2
  local n
  n=$(ts "$home" -r "$cap" -c 50 -T fields -e "$field" "$@" 2>/dev/null | grep -c . || true)
  [ "$n" -gt 0 ] || { echo "no $field in the first 50 frames ($home $*)" >&2; exit 1; }
}
# DDP's version field: in every segment, tagged or untagged (the small shape has no STag).
check_decodes home-plugin iwarp.ddp.dv
check_decodes home-none iwarp_ddp.dv
check_decodes home-plugin iwarp_ddp.dv -o iwarp.mpa.use_builtin:TRUE
[ -z "$(ts home-plugin -r "$cap" -c 50 -T fields -e iwarp_ddp.dv 2>/dev/null | tr -d '\n')" ] ||
  { echo "built-in dissectors still decode while the plugin is active" >&2; exit 1; }

declare -A best_wall best_cpu rss
measure() {  # label, home, extra args...
  local label="$1" home="$2"; shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    env HOME="$work/$home" "${as_user[@]}" tshark -q -z expert -r "$cap" "$@" \
    > "$work/out-$label" 2> "$work/err-$label" || { cat "$work/err-$label" >&2; exit 1; }
  local wall user sys kib
  read -r wall user sys kib < <(tail -1 "$work/time")
  local cpu
  cpu=$(echo "$user + $sys" | bc -l)
  printf '  run %-8s wall %7.2f s  cpu %7.2f s  rss %7d KiB\n' "$label" "$wall" "$cpu" "$kib"
  if [ -z "${best_wall[$label]:-}" ] || (($(echo "$wall < ${best_wall[$label]}" | bc -l))); then
    best_wall[$label]=$wall
  fi
  if [ -z "${best_cpu[$label]:-}" ] || (($(echo "$cpu < ${best_cpu[$label]}" | bc -l))); then
    best_cpu[$label]=$cpu
  fi
  rss[$label]=$kib
}

echo "capture: $bytes octets ($(echo "$bytes/1048576" | bc) MiB), CRC on, MSS 1460; $runs runs each"
echo "tshark: $(tshark --version 2>/dev/null | head -1 | sed "s/ (Git.*//"); as user: $([ ${#as_user[@]} -gt 0 ] && echo "nobody (setpriv)" || id -un)"
cd "$work"
for ((i = 0; i < runs; ++i)); do
  measure plugin home-plugin
  measure builtin home-none
  measure deferred home-plugin -o iwarp.mpa.use_builtin:TRUE
done
# What each configuration reported (expert info summary), for the record.
for label in plugin builtin; do
  echo "expert infos ($label): $(grep -cE '^ +[0-9]+ +' "$work/out-$label" || true) summary rows," \
       "$(grep -ciE 'iwarp' "$work/out-$label" || true) lines naming iWARP"
done
report() {  # label, text
  printf '%-38s wall %7.2f s (%6.1f MB/s)  cpu %7.2f s  peak RSS %7d KiB\n' "$2" \
    "${best_wall[$1]}" "$(echo "$bytes/${best_wall[$1]}/1000000" | bc -l)" "${best_cpu[$1]}" "${rss[$1]}"
}
report builtin "built-in dissectors (no plugin):"
report plugin "ddpscope plugin:"
report deferred "plugin loaded, use_builtin:TRUE:"
ratio_wall=$(echo "${best_wall[plugin]}/${best_wall[builtin]}" | bc -l)
ratio_cpu=$(echo "${best_cpu[plugin]}/${best_cpu[builtin]}" | bc -l)
printf 'ratio plugin/built-in: wall %.2fx  cpu %.2fx  (target <= 1.2x: %s)\n' "$ratio_wall" \
  "$ratio_cpu" "$( (($(echo "$ratio_cpu <= 1.2" | bc -l))) && echo met || echo NOT met)"
