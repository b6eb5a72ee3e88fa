#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope timing` held to figures it did not compute (issue 42), on the lab's timing samples
(tests/interop/scenarios/timing.sh: real siw traffic in the qemu VM):

- Delay: siw-timing-read-lat (unloaded) and siw-timing-read-lat-delay5ms (netem delay on lo, as the sample's
  .netem.txt shows tc's qdisc). netem sits before tcpdump's tap on lo, so each packet is captured
  one delay after it was sent: a Read's Request -> last Response octet in the capture grows by
  one delay over the unloaded figure, while perftest's ib_read_lat (.client.txt, timing both
  directions at the client) grows by two. In the lab's emulated guest (qemu TCG) netem's timer
  overshoots: perftest itself sees about 6.2 ms per direction for the 5 ms set. So the growth
  ddpscope measures is held within 10 % of perftest's own per-direction growth (the effective
  delay), and printed beside the configured one.
- Loss: siw-timing-read-loss (netem loss 2 %): the Reads the report says were stalled name their stall
  events' frames; every frame named as a retransmission is one tshark's own TCP analysis flags
  as filling a hole or repeating octets (tcp.analysis.retransmission, fast_retransmission or
  out_of_order: netem drops before tcpdump's tap, so each hole is a loss, and tshark calls its
  filler out-of-order rather than a retransmission when it came within its 3 ms threshold), and
  at least one Read is stalled by one.
- NVMe-oF: siw-timing-nvmeof-fio, fio on the kernel host over siw with its JSON report (.fio.json).
  The I/O queues carry fio's I/Os, each queue's Connect, and the few reads the kernel makes when
  the namespace appears (its partition scan): ddpscope must time at least fio's count and at
  most 8 more. fio's completion latency (clat: submission to completion at the host, so it
  includes the host's block layer and, here, an emulated CPU) cannot be below the wire's:
  fio's minimum is at least ddpscope's, and fio's median at least ddpscope's. They are not
  expected to agree further (printed side by side).
Usage: check_timing_lab.py DDPSCOPE SAMPLES_SIW_DIR
"""
import json
import os
import re
import subprocess
import sys


def timing(ddpscope, pcap):
    p = subprocess.run([ddpscope, "analyze", pcap, "--timing", "--json"], capture_output=True,
                       text=True, timeout=600)
    if p.returncode not in (0, 1):
        sys.exit(f"{pcap}: ddpscope exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)["timing"]


def ops(t, kind):
    return [o for o in t["operations"] if o["kind"] == kind]


def one(t, kind, name):
    o = ops(t, kind)
    if len(o) != 1:
        sys.exit(f"{name}: expected one {kind} entry, found {len(o)}")
    return o[0]


def netem_delay_ns(path):
    text = open(path).read()
    m = re.search(r"delay (\d+(?:\.\d+)?)(us|ms|s)\b", text)
    if not m:
        sys.exit(f"{path}: no netem delay in {text!r}")
    scale = {"us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
    return float(m.group(1)) * scale


def perftest_typical_us(path):
    # ib_read_lat's table: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
            return float(f[4])
    return None


def check_delay(ddpscope, d, failures):
    base = one(timing(ddpscope, os.path.join(d, "siw-timing-read-lat.pcap")), "rdma-read", "unloaded")
    delayed = one(timing(ddpscope, os.path.join(d, "siw-timing-read-lat-delay5ms.pcap")), "rdma-read",
                  "delay5ms")
    delay = netem_delay_ns(os.path.join(d, "siw-timing-read-lat-delay5ms.netem.txt"))
    grown = delayed["median_ns"] - base["median_ns"]
    p0 = perftest_typical_us(os.path.join(d, "siw-timing-read-lat.client.txt"))
    p1 = perftest_typical_us(os.path.join(d, "siw-timing-read-lat-delay5ms.client.txt"))
    effective = (p1 - p0) * 1e3 / 2  # perftest's growth, per direction
    print(f"delay: netem {delay / 1e6:.3f} ms set; Read median unloaded"
          f" {base['median_ns'] / 1e6:.3f} ms ({base['count']} Reads), delayed"
          f" {delayed['median_ns'] / 1e6:.3f} ms ({delayed['count']} Reads): grown"
          f" {grown / 1e6:.3f} ms; perftest t_typical {p0} us -> {p1} us: {effective / 1e6:.3f} ms"
          f" per direction ({100 * (effective / delay - 1):+.0f} % over the set delay)")
    if abs(grown - effective) > 0.10 * effective:
        failures.append(f"Read median grew {grown} ns, not within 10 % of perftest's"
                        f" {effective:.0f} ns per direction")
    if delayed["count"] < 100:
        failures.append(f"only {delayed['count']} Reads timed in the delayed sample")


def tshark_retransmissions(pcap):
    p = subprocess.run(["tshark", "-r", pcap, "-n", "-Y",
                        "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"
                        " || tcp.analysis.out_of_order",
                        "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"tshark failed on {pcap}: {p.stderr}")
    return {int(x) for x in p.stdout.split()}


def check_loss(ddpscope, d, failures):
    pcap = os.path.join(d, "siw-timing-read-loss.pcap")
    reads = ops(timing(ddpscope, pcap), "rdma-read")
    retrans = tshark_retransmissions(pcap)
    named = 0
    stalled = sum(o["stalled"] for o in reads)
    for o in reads:
        for s in o["slowest"]:
            for e in s.get("stall_events", []):
                if e["kind"] != "retransmission":
                    continue
                named += 1
                if e["frame"] not in retrans:
                    failures.append(f"loss: frame {e['frame']} named as a retransmission on the"
                                    f" Read of frame {s['request_frame']}; tshark flags it neither"
                                    " a retransmission nor out of order")
    print(f"loss: {sum(o['count'] for o in reads)} Reads, {stalled} stalled; {named}"
          f" retransmissions named on the slowest; tshark flags {len(retrans)} segments as"
          " retransmitted or out of order")
    if not retrans:
        failures.append("loss: tshark finds no retransmission (is it the loss sample?)")
    if named == 0:
        failures.append("loss: no slowest Read names a retransmission")


def fio_stats(path):
    text = open(path).read()
    text = text[text.index("{"):]  # fio may print notes before its JSON
    jobs = json.loads(text)["jobs"]
    ios = 0
    clats = []  # (min, median) per job and direction
    for j in jobs:
        for rw in ("read", "write"):
            s = j[rw]
            if s["total_ios"]:
                ios += s["total_ios"]
                c = s["clat_ns"]
                clats.append((c["min"], c["percentile"]["50.000000"], rw))
    return ios, clats


def check_nvme(ddpscope, d, failures):
    t = timing(ddpscope, os.path.join(d, "siw-timing-nvmeof-fio.pcap"))
    cmds = ops(t, "nvme-command")
    ios, clats = fio_stats(os.path.join(d, "siw-timing-nvmeof-fio.fio.json"))
    # The admin queue (the first stream) carries Connect, Identify, features: not fio's.
    by_stream = sorted(cmds, key=lambda o: o["stream"])
    io_cmds = by_stream[1:] if len(by_stream) > 1 else by_stream
    timed = sum(o["count"] for o in io_cmds)
    # Each I/O queue's own Connect (a Fabrics command) is on its stream too.
    connects = len(io_cmds)
    print(f"nvme: fio issued {ios} I/Os; ddpscope timed {timed} commands on {len(io_cmds)} I/O"
          f" queue streams ({connects} of them Connects)")
    for o in io_cmds:
        print(f"  stream {o['stream']}: {o['count']} commands, min {o['min_ns'] / 1e3:.0f} us,"
              f" median {o['median_ns'] / 1e3:.0f} us, p99 {o['p99_ns'] / 1e3:.0f} us")
    for mn, med, rw in clats:
        print(f"  fio {rw}: clat min {mn / 1e3:.0f} us, median {med / 1e3:.0f} us")
    if not ios <= timed - connects <= ios + 8:
        failures.append(f"nvme: {timed - connects} I/O commands timed, fio issued {ios}")
    wire_min = min(o["min_ns"] for o in io_cmds)
    wire_med = sorted(o["median_ns"] for o in io_cmds)[len(io_cmds) // 2]
    if min(c[0] for c in clats) < wire_min:
        failures.append("nvme: fio's minimum clat is below the wire's minimum command latency")
    if max(c[1] for c in clats) < wire_med:
        failures.append("nvme: every fio median clat is below the wire's median")


def main():
    ddpscope, d = sys.argv[1], sys.argv[2]
    failures = []
    check_delay(ddpscope, d, failures)
    check_loss(ddpscope, d, failures)
    check_nvme(ddpscope, d, failures)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
