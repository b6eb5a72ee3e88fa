#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The lab's DDP-over-SCTP captures (scenarios/sctp.sh: `ddpscope rping --llp sctp -C 10 -S 4096`
# between the guest kernel's SCTP and usrsctp, both directions): each lab-sctp-*.pcap in DIR
# analyses as one SCTP DDP stream in full operation, set up by session control with the DDP
# adaptation indication, with no warning or error finding, and with rping's messages: 20 Sends
# each way, 10 RDMA Writes of 4096 octets (server to client), 10 Read Requests (server to
# client) answered by 10 Read Responses of 4096 octets.
#   check_sctp.py DDPSCOPE DIR
import glob
import json
import os
import subprocess
import sys


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
        if problems:
            print(f"FAIL {name}: " + "; ".join(problems))
            failed += 1
        else:
            print(f"{name}: one SCTP DDP stream, rping's messages, no finding")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
