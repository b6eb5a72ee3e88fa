#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# GUI loading benchmark (issue: GUI, "Performance"; target: event-loop stalls < 100 ms while
# loading). Opens two captures in ddpscope-gui's main window offscreen (bench/gui_load_bench.cpp:
# time to a fully drawn region map, longest event-loop stall, per-view profile):
#   1. the engine benchmark capture (bench/make_capture.sh: MSS-sized FPDUs, CRC on, ~SIZE_MB);
#   2. a capture with big views: 30,000 Sends of 1400 octets, every tenth skipping an MSN
#      (3000 findings, one MSN series of 32,000 messages) and 2000 RDMA Writes of 4 KiB to
#      distinct STags (2000 regions), ~53 MiB.
#   bench/run_gui_bench.sh BUILD_DIR [SIZE_MB]      (default 200)
# BENCH_CAPTURE=FILE uses an existing capture instead of generating the first one.
set -euo pipefail
build="${1:?usage: run_gui_bench.sh BUILD_DIR [SIZE_MB]}"
size_mb="${2:-200}"
ddpscope="$build/analyzer/ddpscope"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"

cap="${BENCH_CAPTURE:-$work/bench.pcap}"
[ -n "${BENCH_CAPTURE:-}" ] || "$(dirname "$0")/make_capture.sh" "$ddpscope" "$size_mb" "$cap"
echo "== MSS-sized FPDUs"
"$build/bench/gui_load_bench" "$cap" --profile

python3 - > "$work/views.json" <<'PY'
import json
ops = []
for i in range(30000):
    op = {"op": "send", "from": "client", "size": 1400, "pattern": "counter", "seed": i & 255}
    if i % 10 == 5:
        op["fault"] = {"msn": "skip"}
    ops.append(op)
    if i % 15 == 0:
        ops.append({"op": "write", "from": "server", "stag": hex(0x1000 + i // 15),
                    "to": "0x10000000", "size": 4096})
print(json.dumps({"name": "gui-views", "description": "GUI benchmark: big views",
                  "connections": [{"client": {"ip": "10.0.0.1", "port": 40001, "mss": 1460},
                                   "server": {"ip": "10.0.0.2", "port": 4791, "mss": 1460},
                                   "mpa": {"revision": 2, "enhanced": True, "crc": True}}],
                  "operations": ops}))
PY
"$ddpscope" synth "$work/views.json" -o "$work/views.pcap" >/dev/null
echo
echo "== big views (3000 findings, 2000 regions, 32000 messages)"
"$build/bench/gui_load_bench" "$work/views.pcap" --profile
echo
echo "== big views, MSN view shown while loading (its chart paints with every snapshot)"
"$build/bench/gui_load_bench" "$work/views.pcap" --profile --view msn
