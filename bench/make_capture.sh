#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The benchmark capture shared by bench/run_*.sh: one connection, MPA rev 2, CRC on, MSS 1460,
# carrying SIZE_MB RDMA Writes of 1 MiB into an rping-advertised region (every segment is
# bounds-checked and placed), i.e. MSS-sized FPDUs.
#   bench/make_capture.sh DDPSCOPE_BIN SIZE_MB OUT.pcap
set -euo pipefail
ddpscope="${1:?usage: make_capture.sh DDPSCOPE_BIN SIZE_MB OUT.pcap}"
size_mb="${2:?}"
out="${3:?}"
scenario="$(mktemp)"
trap 'rm -f "$scenario"' EXIT
python3 - "$size_mb" > "$scenario" <<'PY'
import json, sys
mb = int(sys.argv[1])
ops = [{"op": "advertise_rping", "from": "client", "buf": "0x10000000", "rkey": "0x100", "size": 1 << 30}]
for i in range(mb):
    ops.append({"op": "write", "from": "server", "stag": "0x100", "to": hex(0x10000000 + (i % 1024) * (1 << 20)),
                "size": 1 << 20, "pattern": "counter", "seed": i & 255})
print(json.dumps({"name": "bench", "description": "benchmark",
                  "connections": [{"client": {"ip": "10.0.0.1", "port": 40001, "mss": 1460},
                                   "server": {"ip": "10.0.0.2", "port": 4791, "mss": 1460},
                                   "mpa": {"revision": 2, "enhanced": True, "crc": True}}],
                  "operations": ops}))
PY
"$ddpscope" synth "$scenario" -o "$out" >/dev/null
