#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeds for fuzz_esp from the IPsec samples (samples/ipsec): their SA files (selector 0 and 1)
and runs of their frames (selector 2 + 4 * SA set, see fuzz_esp.cpp).
Usage: fuzz/esp_seeds.py OUT_DIR SAMPLES_IPSEC_DIR"""
import os
import struct
import sys


def frames(pcap, limit):
    data = open(pcap, "rb").read()
    off, out = 24, []
    while off + 16 <= len(data) and len(out) < limit:
        incl = struct.unpack_from("<I", data, off + 8)[0]
        out.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return out


def main():
    out, here = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    runs = {"esp-gcm128-tunnel": 2, "esp-cbc-sha256-transport": 6, "esp-legacy-3des": 10,
            "esp-gcm256-esn-transport": 14, "esp-faults": 2 | 0x40, "esp-udp-encap": 2}
    for name, sel in runs.items():
        blob = bytes([sel]) + b"".join(struct.pack(">H", len(f)) + f
                                       for f in frames(os.path.join(here, name + ".pcap"), 40))
        open(os.path.join(out, f"frames-{name}"), "wb").write(blob)
    for name in ("esp-gcm128-tunnel", "esp-cbc-sha256-tunnel-v6", "esp-unprotected"):
        open(os.path.join(out, f"esp_sa-{name}"), "wb").write(
            b"\x00" + open(os.path.join(here, name + ".esp_sa"), "rb").read())
        open(os.path.join(out, f"xfrm-{name}"), "wb").write(
            b"\x01" + open(os.path.join(here, name + ".xfrm"), "rb").read())


if __name__ == "__main__":
    main()
