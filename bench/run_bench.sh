#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Engine throughput benchmark (issue: analysis engine, "Performance").
# Generates a capture of MSS-sized FPDUs with CRC on (RDMA Writes of 1 MiB, ~SIZE_MB in all),
# then times `ddpscope analyze --json` (CRC check, placement, all validation, payload
# retention off) and `tshark -q -z expert` (Wireshark's built-in iWARP dissectors) on the same
# file, RUNS times each, interleaved, and reports for each the minimum wall clock and the
# minimum CPU time (user + system), throughput, the ratios and peak RSS. The machine this was
# written on is shared: the minimum of interleaved runs is the figure that means something.
#   bench/run_bench.sh BUILD_DIR [SIZE_MB] [RUNS]      (defaults 200, 3)
# BENCH_CAPTURE=FILE uses an existing capture instead of generating one (no copy is made).
# When BUILD_DIR/bench/ddpscope_read_floor is built, the same runs also time the lower bound of
# any engine on this file: reading it through the same reader (libpcap), without and with
# CRC32C over the frames, and `dd` (the kernel's copy of the file alone).
set -euo pipefail
build="${1:?usage: run_bench.sh BUILD_DIR [SIZE_MB] [RUNS]}"
size_mb="${2:-200}"
runs="${3:-3}"
ddpscope="$build/analyzer/ddpscope"
floor="$build/bench/ddpscope_read_floor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cap="${BENCH_CAPTURE:-$work/bench.pcap}"
[ -n "${BENCH_CAPTURE:-}" ] || "$(dirname "$0")/make_capture.sh" "$ddpscope" "$size_mb" "$cap"
bytes=$(stat -c %s "$cap")
cat "$cap" > /dev/null  # both tools read it from the page cache

# One run: "wall_s cpu_s maxrss_kib". Wall clock and the child's own CPU time (user + system,
# from wait4: posix_spawn, so nothing of the Python parent is counted), microsecond clocks; peak
# RSS from /usr/bin/time in a separate run (wait4's figure includes the spawning parent's).
measure() {
  local rss
  rss=$(/usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1)
  python3 - "$rss" "$@" <<'PY'
import os, sys, time
rss, argv = sys.argv[1], sys.argv[2:]
null = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]
t0 = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=null)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
print(f"{wall:.4f} {ru.ru_utime + ru.ru_stime:.4f} {rss}")
PY
}

echo "capture: $bytes octets ($((bytes / 1048576)) MiB), CRC on, MSS 1460; $runs runs each, interleaved"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$work/d"; : > "$work/t"; : > "$work/f0"; : > "$work/f1"; : > "$work/dd"
for ((i = 1; i <= runs; i++)); do
  measure "$ddpscope" analyze "$cap" --json --retain-mib 0 >> "$work/d"
  measure tshark -q -z expert -r "$cap" >> "$work/t"
  if [ -x "$floor" ]; then
    measure "$floor" "$cap" >> "$work/f0"
    measure "$floor" "$cap" crc >> "$work/f1"
    measure dd if="$cap" of=/dev/null bs=256k >> "$work/dd"
  fi
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

summary() {  # file, label
  sort -n -k1 "$1" | head -1 | awk '{print $1}' > "$work/w"
  sort -n -k2 "$1" | head -1 | awk '{print $2}' > "$work/c"
  sort -n -k3 "$1" | tail -1 | awk '{print $3}' > "$work/m"
  local w c m
  w=$(cat "$work/w"); c=$(cat "$work/c"); m=$(cat "$work/m")
  printf '%-24s wall %7.3f s (%7.1f MB/s)  CPU %7.3f s (%7.1f MB/s)  peak RSS %6d KiB  [all wall: %s]\n' \
    "$2" "$w" "$(echo "$bytes/$w/1000000" | bc -l)" "$c" "$(echo "$bytes/$c/1000000" | bc -l)" "$m" \
    "$(awk '{printf "%s ", $1}' "$1")"
  eval "$3_w=$w; $3_c=$c"
}
summary "$work/d" "ddpscope analyze --json:" d
summary "$work/t" "tshark -q -z expert:" t
if [ -x "$floor" ]; then
  summary "$work/f0" "floor: reader only:" f0
  summary "$work/f1" "floor: reader + CRC32C:" f1
  summary "$work/dd" "floor: dd bs=256k:" dd
fi
printf 'ratio tshark/ddpscope:   wall %6.1fx  CPU %6.1fx\n' \
  "$(echo "$t_w/$d_w" | bc -l)" "$(echo "$t_c/$d_c" | bc -l)"
