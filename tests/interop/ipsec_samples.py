#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# After the lab's IPsec scenario (scenarios/ipsec.sh), on the host: for each run in OUT,
#   NAME-in-a.pcap + NAME-in-b.pcap -> NAME-clear.pcap (mergecap, by timestamp; the parts removed)
#   NAME.xfrm -> NAME.esp_sa (Wireshark's ESP SA table, the `esp_sa` UAT file of a profile)
# so that each run is: the ESP capture, the same exchange in the clear, and its keys in both
# formats users have (`ip -s xfrm state` output and Wireshark's SA table).
#   tests/interop/ipsec_samples.py OUT
import glob
import os
import re
import subprocess
import sys

# `ip -s xfrm state` algorithm names -> Wireshark 4.0's labels, for the algorithms the lab
# negotiates (checked: tshark 4.0.17 decrypts both with these labels; others not needed here).
ENC = {
    "rfc4106(gcm(aes))": "AES-GCM with 16 octet ICV [RFC4106]",
    "cbc(aes)": "AES-CBC [RFC3602]",
}
AUTH = {
    "hmac(sha256)": "HMAC-SHA-256-128 [RFC4868]",
}


def esp_sa_lines(xfrm_text):
    lines = []
    for block in re.split(r"(?m)^(?=src )", xfrm_text):
        m = re.match(r"src (\S+) dst (\S+)", block)
        if not m:
            continue
        spi = re.search(r"proto esp spi (0x[0-9a-f]+)", block)
        if not spi:
            continue
        family = "IPv6" if ":" in m.group(1) else "IPv4"
        aead = re.search(r"aead (\S+) (0x[0-9a-f]+)", block)
        if aead:
            enc, key, auth, akey = ENC[aead.group(1)], aead.group(2), "NULL", ""
        else:
            e = re.search(r"enc (\S+) (0x[0-9a-f]+)", block)
            a = re.search(r"auth-trunc (\S+) (0x[0-9a-f]+)", block)
            enc, key = ENC[e.group(1)], e.group(2)
            auth, akey = AUTH[a.group(1)], a.group(2)
        fields = [family, m.group(1), m.group(2), spi.group(1), enc, key, auth, akey]
        lines.append(",".join('"%s"' % f for f in fields))
    return lines


def main():
    out = sys.argv[1]
    runs = sorted(p[: -len(".xfrm")] for p in glob.glob(os.path.join(out, "*.xfrm")))
    if not runs:
        print(f"no *.xfrm in {out}")
        return 1
    for run in runs:
        parts = [run + "-in-a.pcap", run + "-in-b.pcap"]
        if all(os.path.exists(p) for p in parts):
            subprocess.run(["mergecap", "-F", "pcap", "-w", run + "-clear.pcap", *parts], check=True)
            for p in parts:
                os.remove(p)
        with open(run + ".xfrm") as f:
            sa = esp_sa_lines(f.read())
        with open(run + ".esp_sa", "w") as f:
            f.write("# Wireshark ESP SA table (esp_sa UAT), from %s\n" % os.path.basename(run + ".xfrm"))
            f.write("\n".join(sa) + "\n")
        print(f"{os.path.basename(run)}: {len(sa)} SAs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
