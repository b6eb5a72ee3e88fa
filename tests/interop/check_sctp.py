#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The lab's DDP-over-SCTP captures (scenarios/sctp.sh: `ddpscope rping --llp sctp -C 10 -S 4096`
# between the guest kernel's SCTP and usrsctp, both directions): each lab-sctp-*.pcap in DIR
# analyses as one SCTP DDP stream in full operation, set up by session control with the DDP
# adaptation indication, with no warning or error finding, and with rping's messages: 20 Sends
# each way, 10 RDMA Writes of 4096 octets (server to client), 10 Read Requests (server to
# client) answered by 10 Read Responses of 4096 octets. Read with tshark's own SCTP dissector (not
# our decoder), as RFC 5043 §4, §5.2.1 and §6.1 want it: every DATA chunk unordered (U = 1), every
# user message opening with its sender's DDP-SSN (0, 1, 2, ... with no gap), the session set up by
# PPID 17 function codes Initiate/Accept (1/2, or 5/6 enhanced) and ended by a Terminate (4).
#   check_sctp.py DDPSCOPE DIR
import glob
import json
import os
import shutil
import subprocess
import sys

TSHARK = shutil.which("tshark")


def tshark_problems(pcap):
    """What tshark's SCTP fields show against RFC 5043 (an independent reading of the capture)."""
    if not TSHARK:
        return ["tshark not installed"]
    out = subprocess.run([TSHARK, "-r", pcap, "-o", "sctp.checksum:CRC-32C", "-T", "fields",
                          "-e", "sctp.srcport", "-e", "sctp.data_u_bit",
                          "-e", "sctp.data_payload_proto_id", "-e", "data.data",
                          "-Y", "sctp.chunk_type == 0"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return [f"tshark: {out.stderr.strip()}"]
    problems, ssns, control = [], {}, []
    for line in out.stdout.splitlines():
        port, ubits, ppids, datas = (line.split("\t") + ["", "", "", ""])[:4]
        for u in ubits.split(","):
            if u != "1":
                problems.append(f"a DATA chunk from port {port} with U = {u}")
        for ppid, data in zip(ppids.split(","), datas.split(",")):
            if ppid not in ("16", "17") or len(data) < 4:
                continue
            ssns.setdefault(port, set()).add(int(data[:4], 16))
            if ppid == "17" and len(data) >= 8:
                control.append(int(data[4:8], 16))
    for port, seen in ssns.items():
        if sorted(seen) != list(range(len(seen))):
            problems.append(f"port {port}: DDP-SSNs {sorted(seen)[:5]}... not 0..{len(seen) - 1}")
    if len(control) < 3 or control[0] not in (1, 5) or control[1] not in (2, 6) or 4 not in control:
        problems.append(f"session control function codes {control}")
    return problems


def main():
    ddpscope, folder = sys.argv[1], sys.argv[2]
    pcaps = sorted(glob.glob(os.path.join(folder, "lab-sctp-*.pcap")))
    if not pcaps:
        print(f"FAIL: no lab-sctp-*.pcap in {folder}")
        return 1
    failed = 0
    for pcap in pcaps:
        name = os.path.basename(pcap)
        p = subprocess.run([ddpscope, "analyze", "--json", pcap], capture_output=True, text=True,
                           timeout=120)
        r = json.loads(p.stdout)
        bad = [(f["code"], f["frame"]) for f in r["findings"] if f["severity"] != "note"]
        streams = r["streams"]
        problems = []
        if len(streams) != 1:
            problems.append(f"{len(streams)} streams")
        for s in streams:
            if s.get("llp") != "sctp" or s["state"] != "full-operation":
                problems.append(f"stream {s['id']}: llp {s.get('llp')}, state {s['state']}")
                continue
            if not s["sctp"].get("adaptation"):
                problems.append("no DDP adaptation indication")
            want = [{"send": 20, "read_response": 10}, {"send": 20, "rdma_write": 10,
                                                       "read_request": 10}]
            for d, expect in enumerate(want):
                ops = s["directions"][d]["opcodes"]
                for op, n in expect.items():
                    got = ops.get(op, {}).get("messages")
                    if got != n:
                        problems.append(f"direction {d}: {op} messages {got}, expected {n}")
        if bad:
            problems.append(f"findings {bad}")
        problems += tshark_problems(pcap)
        if problems:
            print(f"FAIL {name}: " + "; ".join(problems))
            failed += 1
        else:
            print(f"{name}: one SCTP DDP stream, rping's messages, no finding; tshark: U = 1, "
                  "DDP-SSNs without a gap, Initiate/Accept/Terminate")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
