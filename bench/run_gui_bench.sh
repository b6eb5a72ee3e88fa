#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# GUI loading benchmark (issue: GUI, "Performance"; targets: event-loop stalls < 100 ms while
# loading). Generates the benchmark capture (bench/make_capture.sh: MSS-sized FPDUs, CRC on,
# ~SIZE_MB) and opens it in ddpscope-gui's main window offscreen (bench/gui_load_bench.cpp):
# time to a fully drawn region map, longest event-loop stall, and a per-view profile.
#   bench/run_gui_bench.sh BUILD_DIR [SIZE_MB]      (default 200)
# BENCH_CAPTURE=FILE uses an existing capture instead of generating one.
set -euo pipefail
build="${1:?usage: run_gui_bench.sh BUILD_DIR [SIZE_MB]}"
size_mb="${2:-200}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cap="${BENCH_CAPTURE:-$work/bench.pcap}"
[ -n "${BENCH_CAPTURE:-}" ] ||
  "$(dirname "$0")/make_capture.sh" "$build/analyzer/ddpscope" "$size_mb" "$cap"
QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" "$build/bench/gui_load_bench" "$cap" --profile
