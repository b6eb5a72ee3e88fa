#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 17, the plugin under Wireshark's own ESP decryption: with a sample's esp_sa table in the
profile and esp.enable_encryption_decode / esp.enable_authentication_check on, Wireshark 4.0
decrypts the ESP packets of samples/ipsec and our plugin decodes the inner TCP: the same DDP
segments (opcode, QN, MSN) as in the same exchange in the clear, and Wireshark finds every ICV
good. ESN samples are left out (a Wireshark 4.0 table cannot say ESN), so are the ones whose
keys the analysis is not given.
Usage: esp_test.py --plugin ddpscope.so --analyzer ddpscope esp_decrypt SAMPLE.pcap..."""
import copy
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plugin_tests as pt  # noqa: E402  (tests/plugin/plugin_tests.py)

ESP_PREFS = ["-o", "esp.enable_encryption_decode:TRUE",
             "-o", "esp.enable_authentication_check:TRUE"]
FIELDS = ["iwarp.rdmap.opcode", "iwarp.ddp.qn", "iwarp.ddp.msn", "esp.icv_good", "esp.icv_bad"]


def segments(rows):
    out = []
    for frame in sorted(rows):
        r = rows[frame]
        if r["iwarp.rdmap.opcode"]:
            out.append((r["iwarp.rdmap.opcode"], r["iwarp.ddp.qn"], r["iwarp.ddp.msn"]))
    return out


def test_esp_decrypt(ts, args):
    pt.check(args.analyzer, "needs --analyzer (to generate the exchange in the clear)")
    conf = os.path.join(ts.home, ".config", "wireshark")
    os.makedirs(conf, exist_ok=True)
    for d in (os.path.join(ts.home, ".config"), conf):
        os.chmod(d, 0o755)
    tried = 0
    for pcap in args.captures:
        base = pcap[: -len(".pcap")]
        name = os.path.basename(base)
        if not os.path.exists(base + ".json"):
            # A real capture (samples/ipsec/lab-esp-*: no scenario to make its clear twin from);
            # capture.ipsec-lab and its findings_match check it against the recorded clear one.
            continue
        scen = json.load(open(base + ".json"))
        if scen["esp"].get("esn") or scen["esp"].get("keys_given") is False:
            continue
        tried += 1
        sa = os.path.join(conf, "esp_sa")
        shutil.copy(base + ".esp_sa", sa)
        os.chmod(sa, 0o644)
        clear_scen = copy.deepcopy(scen)
        del clear_scen["esp"]
        # receiver_drop: an ICV-failed packet and TCP's retransmission; in the clear, sent once.
        drops = [f for f in clear_scen.get("tcp_faults", []) if f["kind"] == "receiver_drop"]
        clear_scen["tcp_faults"] = [f for f in clear_scen.get("tcp_faults", [])
                                    if f["kind"] != "receiver_drop"]
        clear_json = os.path.join(ts.tmp, name + "-clear.json")
        json.dump(clear_scen, open(clear_json, "w"))
        clear = os.path.join(ts.tmp, name + "-clear.pcap")
        subprocess.run([args.analyzer, "synth", clear_json, "-o", clear], check=True,
                       capture_output=True)
        os.chmod(clear, 0o644)
        want = segments(ts.fields(clear, FIELDS))
        rows = ts.fields(ts.stage(pcap), FIELDS, ESP_PREFS)
        got = segments(rows)
        pt.check(len(want) > 10 and got == want,
                 f"{name}: {len(got)} DDP segments decoded after Wireshark's ESP decryption, "
                 f"{len(want)} in the clear")
        integrity = scen["esp"].get("integrity", "null") != "null" or \
            scen["esp"].get("encryption", "aes-gcm-16").startswith("aes-gcm")
        if integrity:
            bad = [f for f, r in rows.items() if r["esp.icv_bad"] == "1"]
            faults = {f["kind"] for f in scen["esp"].get("faults", [])}
            pt.check(bool(bad) == ("icv" in faults or bool(drops)),
                     f"{name}: Wireshark's ICV check fails at frames {bad}")
        print(f"ok {name}: {len(got)} DDP segments")
        # Without the table the same capture shows none of ours.
        os.remove(sa)
        bare = segments(ts.fields(ts.stage(pcap), FIELDS, ESP_PREFS))
        partial = "connections" in scen["esp"]  # some connections in the clear
        pt.check(len(bare) < len(got) if partial else not bare,
                 f"{name}: {len(bare)} DDP segments decoded without keys")
    pt.check(tried >= 5, f"only {tried} samples tried")


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--analyzer")
    ap.add_argument("test", choices=["esp_decrypt"])
    ap.add_argument("captures", nargs="+")
    args = ap.parse_args()
    return pt.run_test({"esp_decrypt": test_esp_decrypt}, args)


if __name__ == "__main__":
    sys.exit(main())
