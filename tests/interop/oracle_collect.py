#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Host side of the siw Data Sink oracle (lab.sh oracle), stdlib only.

  oracle_collect.py next OUT BOOT   after boot BOOT: prints the index of the next case to run, or
                                    "done"; a case the guest did not finish (it died or hung:
                                    progress names it, no record has it) is recorded "vm-died"
  oracle_collect.py collect OUT     merges the boots' records into OUT/cases.json (sorted by
                                    case index, each with the per-case capture it was cut to) and
                                    writes OUT/cases/NN-NAME.pcap: the boot's capture filtered to
                                    the case's TCP connections (by the peer's local ports)"""
import glob
import json
import os
import re
import struct
import sys
import time


def records(out):
    recs = {}
    for path in sorted(glob.glob(os.path.join(out, "boot-*", "cases.jsonl")),
                       key=lambda p: int(re.search(r"boot-(\d+)", p).group(1))):
        boot = int(re.search(r"boot-(\d+)", path).group(1))
        for line in open(path):
            line = line.strip()
            if line:
                r = json.loads(line)
                r["boot"] = boot
                recs[r["index"]] = r
    return recs


def next_case(out, boot):
    d = os.path.join(out, f"boot-{boot}")
    prog = open(os.path.join(d, "progress")).read().split() if os.path.exists(
        os.path.join(d, "progress")) else []
    if len(prog) >= 2 and prog[1] == "done":
        return "done"
    recs = records(out)
    if not prog:
        # the guest never reached the first case: run from after the last record
        if boot >= 2 and not any(r["boot"] >= boot - 1 for r in recs.values()):
            raise SystemExit("two boots without a case")
        return str(max(recs) + 1 if recs else 0)
    i, name = int(prog[0]), prog[1]
    if i not in recs:
        console = ""
        try:
            console = "\n".join(l for l in open(os.path.join(d, "console.log"), errors="replace")
                                if "BUG" in l or "Oops" in l)[-2000:]
        except OSError:
            pass
        rec = {"index": i, "name": name, "answer": "vm-died", "kernel": console,
               "note": "the guest stopped during this case (no record written)"}
        with open(os.path.join(d, "cases.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
    return str(i + 1)


def read_pcap(path):
    data = open(path, "rb").read()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    pos, frames = 24, []
    while pos + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[pos + 8:pos + 12])[0]
        frames.append((data[pos:pos + 16], data[pos + 16:pos + 16 + incl]))
        pos += 16 + incl
    return data[:24], endian, linktype, frames


def tcp_ports(linktype, pkt):
    if linktype == 1:        # Ethernet (Linux lo)
        if len(pkt) < 14 or pkt[12:14] != b"\x08\x00":
            return None
        ip = pkt[14:]
    elif linktype == 113:    # Linux cooked
        ip = pkt[16:]
    elif linktype in (12, 101):
        ip = pkt
    else:
        return None
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
        return None
    ihl = (ip[0] & 0x0F) * 4
    return struct.unpack(">HH", ip[ihl:ihl + 4])


def collect(out):
    recs = records(out)
    os.makedirs(os.path.join(out, "cases"), exist_ok=True)
    caps = {}
    for r in sorted(recs.values(), key=lambda r: r["index"]):
        cap = os.path.join(out, f"boot-{r['boot']}", f"oracle-boot-{r['boot']}.pcap")
        ports = set(r.get("ports") or [])
        if not ports or not os.path.exists(cap):
            r["capture"] = None
            continue
        if cap not in caps:
            caps[cap] = read_pcap(cap)
        head, _, linktype, frames = caps[cap]
        keep = [h + p for h, p in frames if (tcp_ports(linktype, p) or (0, 0))[0] in ports
                or (tcp_ports(linktype, p) or (0, 0))[1] in ports]
        name = f"{r['index']:02d}-{r['name']}.pcap"
        with open(os.path.join(out, "cases", name), "wb") as f:
            f.write(head + b"".join(keep))
        r["capture"] = f"cases/{name}"
        r["frames"] = len(keep)
    kernel = ""
    for p in glob.glob(os.path.join(out, "boot-*", "kernel-release")):
        kernel = open(p).read().strip()
    doc = {"generated": time.strftime("%Y-%m-%d", time.gmtime()), "kernel": kernel,
           "target": "Linux siw (drivers/infiniband/sw/siw), rping -s -P -S 64",
           "cases": sorted(recs.values(), key=lambda r: r["index"])}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    died = sum(1 for r in recs.values() if r["answer"] == "vm-died")
    print(f"oracle: {len(recs)} cases, {died} vm-died, kernel {kernel or '?'}", file=sys.stderr)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "next":
        print(next_case(sys.argv[2], int(sys.argv[3])))
    elif len(sys.argv) >= 3 and sys.argv[1] == "collect":
        collect(sys.argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
