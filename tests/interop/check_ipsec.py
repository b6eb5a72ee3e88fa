#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The lab's IPsec captures (scenarios/ipsec.sh, samples/ipsec/lab-esp-*): for each NAME.pcap with
# NAME.xfrm, NAME.esp_sa and NAME-clear.pcap beside it,
#   - the exchange in the clear analyses as a whole iWARP stream with no warning or error;
#   - tshark with NAME.esp_sa as its ESP SA table decrypts every ESP frame to TCP (the keys are
#     the capture's, and the capture is real ESP);
#   - when `ddpscope analyze` takes --xfrm (issue 17): the ESP capture with NAME.xfrm analyses
#     like the clear one (streams, per-opcode segment and message counts, finding codes), and a
#     copy with a replayed ESP packet and a flipped ICV bit draws esp.replay and
#     esp.icv-mismatch at those frames.
#   check_ipsec.py DDPSCOPE DIR
import collections
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def analyze(ddpscope, *args):
    p = subprocess.run([ddpscope, "analyze", "--json", *args], capture_output=True, text=True,
                       timeout=120)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"analyze {args}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def shape(report):
    """What must be equal between the ESP capture decrypted and the clear one."""
    streams = []
    for s in report["streams"]:
        dirs = []
        for d in s["directions"]:
            dirs.append(sorted((op, v.get("segments"), v.get("messages"))
                               for op, v in d.get("opcodes", {}).items()))
        streams.append((s["state"], dirs))
    codes = collections.Counter(f["code"] for f in report["findings"]
                                if not f["code"].startswith("esp."))
    return streams, codes


def tshark_decrypts(pcap, esp_sa):
    if not shutil.which("tshark"):
        return None
    with tempfile.TemporaryDirectory() as home:
        prof = os.path.join(home, ".config", "wireshark", "profiles", "ipsec")
        os.makedirs(prof)
        shutil.copy(esp_sa, os.path.join(prof, "esp_sa"))
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
        counts = []
        for flt in ("esp", "esp && tcp"):
            p = subprocess.run(["tshark", "-C", "ipsec", "-n", "-r", pcap,
                                "-o", "esp.enable_encryption_decode:TRUE",
                                "-o", "esp.enable_authentication_check:TRUE",
                                "-Y", flt, "-T", "fields", "-e", "frame.number"],
                               capture_output=True, text=True, env=env, timeout=120)
            counts.append(len(p.stdout.split()))
        return counts


def esp_frames(path):
    """The pcap's global header and records; for each record whether it is IPv4 ESP (Ethernet)
    and its source address."""
    with open(path, "rb") as f:
        data = f.read()
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    records, at = [], 24
    while at + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[at + 8:at + 12])[0]
        rec = bytearray(data[at:at + 16 + incl])
        pkt = rec[16:]
        esp = len(pkt) > 34 and pkt[12:14] == b"\x08\x00" and pkt[23] == 50
        records.append((rec, esp, bytes(pkt[26:30]) if esp else None))
        at += 16 + incl
    return data[:24], records


def injected_faults(ddpscope, run):
    """A copy of the ESP capture with one ESP packet of 192.0.2.2 -> 192.0.2.1 sent twice (that
    SA's replay window is 32; the other direction's, seen from its sender, is 0) and one ICV bit
    of a 192.0.2.1 -> 192.0.2.2 packet flipped: esp.replay and esp.icv-mismatch at those frames."""
    header, records = esp_frames(run + ".pcap")
    from_b = [i for i, (_, esp, src) in enumerate(records) if esp and src == bytes([192, 0, 2, 2])]
    from_a = [i for i, (_, esp, src) in enumerate(records) if esp and src == bytes([192, 0, 2, 1])]
    dup, flip = from_b[10], from_a[5]
    out = []
    for i, (rec, _, _) in enumerate(records):
        if i == flip:
            rec = bytearray(rec)
            rec[-1] ^= 0x01
        out.append(bytes(rec))
        if i == dup:
            out.append(bytes(rec))
    replay_frame = dup + 2  # frames count from 1; the copy follows its original
    icv_frame = flip + 1 + (1 if flip > dup else 0)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "faults.pcap")
        with open(copy, "wb") as f:
            f.write(header + b"".join(out))
        r = analyze(ddpscope, copy, "--xfrm", run + ".xfrm")
    got = {(f["code"], f["frame"]) for f in r["findings"] if f["code"].startswith("esp.")}
    want = {("esp.replay", replay_frame), ("esp.icv-mismatch", icv_frame)}
    return want, got


def main():
    ddpscope, folder = sys.argv[1], sys.argv[2]
    has_xfrm = "--xfrm" in subprocess.run([ddpscope, "analyze", "--help"], capture_output=True,
                                          text=True).stdout
    runs = sorted(p[: -len(".xfrm")] for p in glob.glob(os.path.join(folder, "lab-esp-*.xfrm")))
    if not runs:
        print(f"FAIL: no IPsec runs (lab-esp-*.xfrm) in {folder}")
        return 1
    failed = 0
    for run in runs:
        name = os.path.basename(run)
        clear = analyze(ddpscope, run + "-clear.pcap")
        bad = [(f["code"], f["frame"]) for f in clear["findings"] if f["severity"] != "note"]
        if not clear["streams"] or clear["streams"][0]["state"] != "full-operation" or bad:
            print(f"FAIL {name}: the clear exchange: {len(clear['streams'])} streams, {bad}")
            failed += 1
        counts = tshark_decrypts(run + ".pcap", run + ".esp_sa")
        if counts is not None:
            if counts[0] == 0 or counts[0] != counts[1]:
                print(f"FAIL {name}: tshark decrypted {counts[1]} of {counts[0]} ESP frames to TCP")
                failed += 1
            else:
                print(f"{name}: tshark decrypts all {counts[0]} ESP frames with {name}.esp_sa")
        if has_xfrm:
            esp = analyze(ddpscope, run + ".pcap", "--xfrm", run + ".xfrm")
            if shape(esp) != shape(clear):
                print(f"FAIL {name}: decrypted {shape(esp)} != clear {shape(clear)}")
                failed += 1
            else:
                print(f"{name}: decrypted analysis equals the clear one")
            want, got = injected_faults(ddpscope, run)
            if got != want:
                print(f"FAIL {name}: injected replay and ICV flip: esp findings {sorted(got)}, "
                      f"expected {sorted(want)}")
                failed += 1
            else:
                print(f"{name}: a replayed packet and a flipped ICV bit: {sorted(got)}")
        else:
            print(f"{name}: (ddpscope analyze has no --xfrm yet: decrypted analysis not compared)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
