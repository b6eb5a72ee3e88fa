#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Engine throughput benchmark (issue: analysis engine, "Performance").
# Generates a capture of MSS-sized FPDUs with CRC on (RDMA Writes of 1 MiB, ~SIZE_MB in all),
# then in one run times `ddpscope analyze --json` (CRC check, placement, all validation,
# payload retention off) and `tshark -q -z expert` (Wireshark's built-in iWARP dissectors) on
# the same file, and reports throughput, the ratio and peak RSS.
#   bench/run_bench.sh BUILD_DIR [SIZE_MB]      (default 200)
set -euo pipefail
build="${1:?usage: run_bench.sh BUILD_DIR [SIZE_MB]}"
size_mb="${2:-200}"
ddpscope="$build/analyzer/ddpscope"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$(dirname "$0")/make_capture.sh" "$ddpscope" "$size_mb" "$work/bench.pcap"
bytes=$(stat -c %s "$work/bench.pcap")

measure() {  # label, command...
  local label="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$work/rss" "$@" > /dev/null 2>"$work/stderr" || true
  t1=$(date +%s.%N)
  local secs rss
  secs=$(echo "$t1 - $t0" | bc -l)
  rss=$(tail -1 "$work/rss")
  printf '%s %.3f %s\n' "$label" "$secs" "$rss"
}

echo "capture: $bytes octets ($(echo "$bytes/1048576" | bc) MiB), CRC on, MSS 1460"
r1=$(measure ddpscope "$ddpscope" analyze "$work/bench.pcap" --json --retain-mib 0)
r2=$(measure tshark tshark -q -z expert -r "$work/bench.pcap")
s1=$(echo "$r1" | awk '{print $2}'); m1=$(echo "$r1" | awk '{print $3}')
s2=$(echo "$r2" | awk '{print $2}'); m2=$(echo "$r2" | awk '{print $3}')
printf 'ddpscope analyze --json: %8.3f s  %8.1f MB/s  peak RSS %6d KiB\n' "$s1" "$(echo "$bytes/$s1/1000000" | bc -l)" "$m1"
printf 'tshark -q -z expert:     %8.3f s  %8.1f MB/s  peak RSS %6d KiB\n' "$s2" "$(echo "$bytes/$s2/1000000" | bc -l)" "$m2"
printf 'ratio tshark/ddpscope:   %8.1fx\n' "$(echo "$s2/$s1" | bc -l)"
