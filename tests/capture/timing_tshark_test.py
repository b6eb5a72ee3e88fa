#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope timing` against Wireshark's own dissectors (issue 42): on real siw captures, every
RDMA Read's latency to its first and last Read Response segment, and every RPC-over-RDMA call's
latency to its reply, as computed here from tshark's built-in iwarp_ddp_rdmap and rpcordma fields
(ddpscope's plugin is not loaded: HOME is an empty folder), and every NVMe-oF command's
latency to its completion on the two siw NVMe/RDMA captures, paired here from tshark's raw TCP
payloads (nvme_figures). Times are compared to the nanosecond, completion frames exactly, and
the counts must match."""
import collections
import os
import subprocess
import sys
import tempfile

DDPSCOPE, SAMPLES = sys.argv[1:3]
CASES = ["siw/siw-read-bw.pcap", "siw/siw-nfs-rdma.pcap"]
# Wireshark 4.0's MPA heuristic does not claim these NVMe/RDMA streams (nor does Decode As
# iwarp_mpa), and its nvme-rdma dissector runs over InfiniBand only: their NVMe commands are
# paired here from tshark's raw TCP payloads by a small framer of this file's own.
NVME_CASES = ["siw/siw-nvmeof.pcap", "siw/siw-nvmeof-inline.pcap"]


def ns(epoch):
    sec, _, frac = epoch.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def tshark(pcap, filt, fields, home, extra=()):
    cmd = ["tshark", "-r", pcap, *extra, "-Y", filt, "-T", "fields", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, HOME=home))
    assert p.returncode == 0, p.stderr
    return [line.split("|") for line in p.stdout.splitlines() if line]


def wireshark_figures(pcap, home):
    """{kind: {completion_frame: (request_frame, ns)}} from tshark."""
    out = collections.defaultdict(dict)
    rows = tshark(pcap, "iwarp_rdma", ["frame.number", "frame.time_epoch", "tcp.stream",
                                       "tcp.srcport", "iwarp_rdma.opcode", "iwarp_ddp.last_flag"],
                  home)
    # Read Requests wait in order (RFC 5040 §5.2: Read Responses come back in request order).
    orq = collections.defaultdict(collections.deque)  # (stream, requester port) -> [req, first]
    for frame, epoch, stream, port, opcode, last in rows:
        frame, t = int(frame), ns(epoch)
        for op, l in zip(opcode.split(","), last.split(",")):
            op = int(op, 16)
            if op == 0x01:
                orq[(stream, port)].append([frame, t, False])
            elif op == 0x02:
                peers = [k for k in orq if k[0] == stream and k[1] != port and orq[k]]
                if not peers:
                    continue
                head = orq[peers[0]][0]
                if not head[2]:
                    head[2] = True
                    out["rdma-read-first"][frame] = (head[0], t - head[1])
                if l in ("1", "True"):
                    orq[peers[0]].popleft()
                    out["rdma-read"][frame] = (head[0], t - head[1])
    calls = {}
    for frame, epoch, stream, xid in tshark(pcap, "rpcordma", ["frame.number", "frame.time_epoch",
                                                               "tcp.stream", "rpcordma.xid"], home):
        key = (stream, xid)
        if key in calls:
            req, t0 = calls.pop(key)
            out["rpc-call"][int(frame)] = (req, ns(epoch) - t0)
        else:
            calls[key] = (int(frame), ns(epoch))
    return out


def nvme_figures(pcap, home):
    """{"nvme-command": {completion_frame: (request_frame, ns)}} from the raw TCP payloads that
    tshark gives (its iWARP dissectors off), framed here: MPA Request/Reply (RFC 5044 §7.1),
    then FPDUs without markers (2-octet ULPDU_Length, ULPDU, pad to 4, CRC field), the DDP
    untagged header (RFC 5041 §5.2: 18 octets), Sends on QN 0; a command capsule's CID in the
    SQE's octets 2-3, a completion's in the CQE's octets 12-13 (NVMe Base Specification 2.0,
    4.2 and 4.6). A message is taken when its last segment's last octet arrives."""
    rows = tshark(pcap, "tcp.len>0", ["frame.number", "frame.time_epoch", "tcp.stream",
                                      "tcp.srcport", "tcp.seq", "tcp.payload"], home,
                  ["-o", "tcp.desegment_tcp_streams:FALSE", "--disable-protocol", "iwarp_mpa"])
    streams = collections.defaultdict(dict)  # stream -> port -> [buffer, next seq, setup done]
    first_port = {}
    messages = []  # (stream, from initiator, frame, ns, first octets of the message)
    building = {}
    for frame, epoch, stream, port, seq, payload in rows:
        first_port.setdefault(stream, port)
        d = streams[stream].setdefault(port, {"buf": b"", "seq": int(seq), "setup": False})
        if int(seq) != d["seq"]:
            continue  # a retransmission (none expected in this capture)
        data = bytes.fromhex(payload)
        d["seq"] += len(data)
        d["buf"] += data
        while True:
            buf = d["buf"]
            if not d["setup"]:
                if len(buf) < 20:
                    break
                size = 20 + int.from_bytes(buf[18:20], "big")
                if len(buf) < size:
                    break
                d["buf"], d["setup"] = buf[size:], True
                continue
            if len(buf) < 2:
                break
            ulpdu = int.from_bytes(buf[0:2], "big")
            size = 2 + ulpdu + (-(2 + ulpdu) % 4) + 4
            if len(buf) < size:
                break
            u, d["buf"] = buf[2:2 + ulpdu], buf[size:]
            tagged, last, opcode = u[0] & 0x80, u[0] & 0x40, u[1] & 0x0F
            if tagged or opcode not in (3, 4, 5, 6):
                continue
            qn, msn, mo = (int.from_bytes(u[i:i + 4], "big") for i in (6, 10, 14))
            if qn != 0:
                continue
            key = (stream, port, msn)
            if mo == 0:
                building[key] = u[18:18 + 64]
            if last and key in building:
                messages.append((stream, port == first_port[stream], int(frame), ns(epoch),
                                 building.pop(key)))
    out = {}
    pending = {}
    for stream, from_host, frame, t, body in messages:
        if from_host and len(body) >= 64:
            pending[(stream, int.from_bytes(body[2:4], "little"))] = (frame, t)
        elif not from_host and len(body) == 16:
            key = (stream, int.from_bytes(body[12:14], "little"))
            if key in pending:
                req, t0 = pending.pop(key)
                out[frame] = (req, t - t0)
    return {"nvme-command": out}


def ddpscope_figures(pcap):
    p = subprocess.run([DDPSCOPE, "timing", pcap, "--csv", "--top", "1000", "-q"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    header = lines[0].split(",")
    out = collections.defaultdict(dict)
    counts = collections.Counter()
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        counts[row["kind"]] += int(row["count"])
        for s in row["slowest"].split():
            frames, _, t = s.partition(":")
            req, _, done = frames.partition("-")
            out[row["kind"]][int(done)] = (int(req), int(t))
    return out, counts


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as home:
        for case in CASES + NVME_CASES:
            pcap = os.path.join(SAMPLES, case)
            ws = wireshark_figures(pcap, home) if case in CASES else nvme_figures(pcap, home)
            ours, counts = ddpscope_figures(pcap)
            kinds = {"rdma-read", "rdma-read-first", "rpc-call"} if case in CASES else set(ws)
            for kind in sorted(set(ws) | kinds):
                w, o = ws.get(kind, {}), ours.get(kind, {})
                if counts[kind] != len(o):
                    print(f"FAIL {case} {kind}: {counts[kind]} completions, {len(o)} listed")
                    failures += 1
                if set(w) != set(o):
                    print(f"FAIL {case} {kind}: completion frames differ: tshark "
                          f"{sorted(set(w) - set(o))[:10]} ddpscope {sorted(set(o) - set(w))[:10]}")
                    failures += 1
                    continue
                for done in sorted(w):
                    (wreq, wns), (oreq, ons) = w[done], o[done]
                    # A request spanning frames: tshark names its last, ddpscope its first.
                    if wns != ons or oreq > wreq:
                        print(f"FAIL {case} {kind} completed in frame {done}: tshark {wreq} "
                              f"{wns} ns, ddpscope {oreq} {ons} ns")
                        failures += 1
                if w:
                    print(f"ok {case} {kind}: {len(w)} operations agree")
    if failures:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
