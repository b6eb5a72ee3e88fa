#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeds for fuzz_ulp from the synthetic ULP scenarios: each scenario's Sends, in order, in the
target's input format (see fuzz_ulp.cpp).  Usage: fuzz/ulp_seeds.py OUT_DIR SCENARIO.json..."""
import json
import os
import struct
import sys

DECODER = {"fault-nvmeof": 0, "fault-iser": 1, "fault-rpcrdma": 2, "fault-smbdirect": 3}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        sc = json.load(open(path))
        if not isinstance(sc, dict) or sc.get("name") not in DECODER:
            continue
        msgs = b""
        for op in sc["operations"]:
            if op["op"] != "send" or op.get("connection", 0) != 0:
                continue
            body = bytes.fromhex(op["hex"])
            flags = (1 if op["from"] == "server" else 0) | (2 if "invalidate_stag" in op else 0)
            msgs += struct.pack(">BH", flags, len(body)) + body
        for name, config in (("", 0x10), ("-setup", 0x14)):
            cfg = DECODER[sc["name"]] | config
            setup = b""
            if config & 0x04:
                pd = sc["connections"][0].get("mpa", {}).get("client_private_data", {}).get("hex", "")
                setup = struct.pack(">B", len(pd) // 2) + bytes.fromhex(pd)
            with open(os.path.join(out, sc["name"] + name), "wb") as f:
                f.write(bytes([cfg]) + setup + msgs)


if __name__ == "__main__":
    main()
