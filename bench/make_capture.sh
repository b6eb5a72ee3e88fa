#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The benchmark captures shared by bench/run_*.sh: one connection, CRC on, MSS 1460, about
# SIZE_MB of payload in one of three shapes (SHAPE, default "write"):
#   write  MPA rev 2: RDMA Writes of 1 MiB into an rping-advertised 1 GiB region, each octet
#          placed once per GiB (every segment is bounds-checked and placed): MSS-sized FPDUs.
#   reuse  MPA rev 1: RDMA Writes of 64 KiB that rewrite one 4 MiB region over and over (buffer
#          reuse, as rping/perftest/NVMe do: each placement compares with and replaces retained
#          content), a 1 KiB Send every 8 Writes, a 64 KiB RDMA Read (Request + Response) every
#          16 Writes.
#   small  MPA rev 2: Sends of 64 octets, one FPDU per TCP segment: per-frame cost.
#   esp    the write shape in ESP tunnel mode, AES-GCM-16 with a 128-bit key (RFC 4106): the ESP
#          layer's cost (decryption with the keys synth writes to OUT.esp_sa, given to analyze
#          with --esp-sa).
# CONNS (default 1) spreads the same operations over that many connections between the same two
# hosts (client ports 40001, 40002, ...), taking turns one operation each; each connection
# advertises its own region and uses its own STags (one rping per connection, as a multi-queue
# ULP registers memory per queue): what `analyze --threads N` shards across its engines.
#   bench/make_capture.sh DDPSCOPE_BIN SIZE_MB OUT.pcap [SHAPE] [CONNS]
set -euo pipefail
ddpscope="${1:?usage: make_capture.sh DDPSCOPE_BIN SIZE_MB OUT.pcap [SHAPE]}"
size_mb="${2:?}"
out="${3:?}"
shape="${4:-write}"
conns="${5:-1}"
scenario="$(mktemp)"
trap 'rm -f "$scenario"' EXIT
python3 - "$size_mb" "$shape" "$conns" > "$scenario" <<'PY'
import json, sys
mb, shape, conns = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ops = [{"op": "advertise_rping", "from": "client", "buf": "0x10000000", "rkey": "0x100", "size": 1 << 30}]
revision = 2
esp = shape == "esp"
if esp:
    shape = "write"
if shape == "write":
    for i in range(mb):
        ops.append({"op": "write", "from": "server", "stag": "0x100", "to": hex(0x10000000 + (i % 1024) * (1 << 20)),
                    "size": 1 << 20, "pattern": "counter", "seed": i & 255})
elif shape == "reuse":
    revision = 1
    for i in range(mb * 16):  # 64 KiB each
        ops.append({"op": "write", "from": "server", "stag": "0x100", "to": hex(0x10000000 + (i % 64) * (1 << 16)),
                    "size": 1 << 16, "pattern": "counter", "seed": i & 255})
        if i % 8 == 7:
            ops.append({"op": "send", "from": "client", "size": 1024, "pattern": "counter", "seed": i & 255})
        if i % 16 == 15:
            ops.append({"op": "read", "from": "client", "sink_stag": "0x200", "sink_to": "0x20000000",
                        "source_stag": "0x300", "source_to": "0x30000000", "size": 1 << 16,
                        "pattern": "counter", "seed": i & 255})
elif shape == "small":
    for i in range(mb * 4096):  # 64 octets each, ~230 octets a frame
        ops.append({"op": "send", "from": "server" if i % 2 else "client", "size": 64,
                    "pattern": "counter", "seed": i & 255})
else:
    sys.exit(f"unknown shape {shape!r} (write, reuse, small, esp)")
if conns > 1:
    # Operation i on connection i % conns, its STags moved by 0x1000 per connection.
    def restag(op, c):
        op = dict(op, connection=c)
        for k in ("rkey", "stag", "sink_stag", "source_stag"):
            if k in op:
                op[k] = hex(int(op[k], 16) + 0x1000 * c)
        return op
    ops = ([restag(ops[0], c) for c in range(conns)] +
           [restag(op, i % conns) for i, op in enumerate(ops[1:])])
doc = {"name": "bench-" + sys.argv[2], "description": "benchmark, shape " + sys.argv[2],
       "connections": [{"client": {"ip": "10.0.0.1", "port": 40001 + c, "mss": 1460},
                        "server": {"ip": "10.0.0.2", "port": 4791, "mss": 1460},
                        "mpa": {"revision": revision, "enhanced": revision == 2, "crc": True}}
                       for c in range(conns)],
       "operations": ops}
if esp:
    doc["esp"] = {"mode": "tunnel", "encryption": "aes-gcm-16", "key_bits": 128}
print(json.dumps(doc))
PY
"$ddpscope" synth "$scenario" -o "$out" >/dev/null
