#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 42, the Wireshark part: operation response times in the plugin against the CLI's
timing model. For one capture, `ddpscope analyze --timing --json` (per kind, all streams) against
  - the plugin's per-PDU fields (iwarp.rdmap.read.rtt, .read.first_rtt, .atomic.response_time,
    iwarp.ulp.command.latency with iwarp.ulp.command.kind) in tshark -2 and in one pass: the same
    count per kind, min and max to the nanosecond (the fields carry core's value as it is);
  - the request links: every answer's request_in frame holds a request whose response_in names
    the answer's frame (tshark -2);
  - the service response time table, tshark -q -z ddpscope,srt, one pass and -2: the same count
    per kind, min and max within the table's printed precision (microseconds).
A capture without timing operations checks that the plugin shows none either.
Usage: srt_test.py --plugin ddpscope.so --analyzer ddpscope srt_agree SAMPLE.pcap"""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plugin_tests as pt  # noqa: E402  (tests/plugin/plugin_tests.py)

# Latency field of each kind, and (for ULP kinds) the field that names the kind.
RDMAP_FIELDS = {"rdma-read": "iwarp.rdmap.read.rtt",
                "rdma-read-first": "iwarp.rdmap.read.first_rtt",
                "atomic": "iwarp.rdmap.atomic.response_time"}
ULP_LATENCY, ULP_KIND = "iwarp.ulp.command.latency", "iwarp.ulp.command.kind"
# (latency field of the answer, the answer's request_in, the request's response_in to it)
LINKS = [
    ("iwarp.rdmap.read.rtt", "iwarp.rdmap.read.request_in", "iwarp.rdmap.read.response_in"),
    ("iwarp.rdmap.read.first_rtt", "iwarp.rdmap.read.request_in",
     "iwarp.rdmap.read.first_response_in"),
    ("iwarp.rdmap.atomic.response_time", "iwarp.rdmap.atomic.request_in",
     "iwarp.rdmap.atomic.response_in"),
    (ULP_LATENCY, "iwarp.ulp.command.request_in", "iwarp.ulp.command.response_in"),
]
FIELDS = sorted(set([ULP_KIND] + [f for link in LINKS for f in link]))
# Captures whose analysis under Wireshark is fed other packets than the CLI's: counts are
# compared, times are not. esp-icv-retransmit: Wireshark decrypts and hands the plugin the ESP
# packet whose ICV fails (frame 13, the Read Response's last segment), which a receiver drops
# and the analyzer with the sample's keys drops too (esp.icv-mismatch); the CLI's Read
# completes with its retransmission (frame 16), the plugin's with frame 13.
COUNTS_ONLY = {"esp-icv-retransmit"}
# A PDU drawn in its own frame after a later frame released it, or flushed at the end.
LATE_PDU = ["iwarp.mpa.released_in", "iwarp.mpa.end_of_capture"]
# tshark -z ddpscope,srt rows: index, name (may hold spaces), calls, min, max, avg, sum (s).
SRT_ROW = re.compile(r"^\s*(\d+)\s+(.+?)\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+"
                     r"(\d+\.\d+)\s*$")


def ns(seconds):
    sec, _, frac = seconds.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def cli_kinds(analyzer, capture, extra):
    """{kind: (count, min_ns, max_ns)} over all streams from `ddpscope analyze --timing --json`
    (which, unlike `ddpscope timing`, takes a regions file and ESP keys; its operations are the
    same model's rows that `ddpscope timing --csv` prints)."""
    p = subprocess.run([analyzer, "analyze", capture, "--timing", "--json"] + extra,
                       capture_output=True, text=True)
    pt.check(p.returncode in (0, 1, 2), f"ddpscope analyze --timing failed: {p.stderr}")
    out = {}
    for r in json.loads(p.stdout)["timing"]["operations"]:
        if r["count"] == 0:
            continue
        c, lo, hi = r["count"], r["min_ns"], r["max_ns"]
        if r["kind"] in out:  # one row per stream and direction: merged here
            c0, lo0, hi0 = out[r["kind"]]
            c, lo, hi = c + c0, min(lo, lo0), max(hi, hi0)
        out[r["kind"]] = (c, lo, hi)
    return out


def field_samples(rows):
    """{kind: [ns, ...]} of the plugin's latency fields."""
    got = collections.defaultdict(list)
    for _frame, r in rows.items():
        for kind, f in RDMAP_FIELDS.items():
            got[kind] += [ns(v) for v in r[f].split("|") if v]
        lat = [v for v in r[ULP_LATENCY].split("|") if v]
        kinds = [v for v in r[ULP_KIND].split("|") if v]
        pt.check(len(lat) == len(kinds), f"ULP latencies and kinds do not pair up: {r}")
        for k, v in zip(kinds, lat):
            got[k].append(ns(v))
    return got


def summary(samples):
    return {k: (len(v), min(v), max(v)) for k, v in samples.items() if v}


def srt_table(ts, capture, extra):
    """{row name: (calls, min_ns, max_ns)} of the two tables of -z ddpscope,srt (by kind, by ULP
    command), and tshark's text."""
    out = ts.run(["-r", capture, "-q", "-z", "ddpscope,srt"] + extra).stdout
    pt.check("SRT Statistics:" in out, f"no SRT table in tshark -z ddpscope,srt:\n{out}")
    tables = out.split("SRT Statistics:", 1)[1].split("\nFilter:")[1:]
    # tshark leaves out a table without rows (the ULP table of a capture without ULP commands).
    pt.check(len(tables) in (1, 2), f"tshark -z ddpscope,srt printed {len(tables)} tables:\n{out}")
    tables += [""] * (2 - len(tables))
    rows = []
    for t in tables:
        rows.append({})
        for line in t.splitlines():
            m = SRT_ROW.match(line)
            if m:
                rows[-1][m.group(2).strip()] = (int(m.group(3)), ns(m.group(4)), ns(m.group(5)))
    return rows[0], rows[1], out


def compare(what, got, want, tolerance_ns):
    for kind in sorted(set(got) | set(want)):
        g, w = got.get(kind, (0, 0, 0)), want.get(kind, (0, 0, 0))
        pt.check(g[0] == w[0], f"{what}: {kind}: {g[0]} operations, the CLI counts {w[0]}")
        for i, name in ((1, "min"), (2, "max")):
            pt.check(abs(g[i] - w[i]) <= tolerance_ns,
                     f"{what}: {kind}: {name} {g[i]} ns, the CLI says {w[i]} ns")


def values(row, field):
    return [v for v in row[field].split("|") if v]


def check_links(rows):
    """Every answer names its request's frame, whose request names the answer's frame back (a
    Read Response segment that is both first and last answers two operations of one request).
    The request's frame is where its PDU is drawn: for a request whose octets span frames (in
    siw-timing-read-loss a segment carries 27 Read Requests and the start of a 28th whose rest
    was lost and sent again), the frame that completed it, not the one of its first octet."""
    n = 0
    for frame, r in rows.items():
        reads = max(len(values(r, "iwarp.rdmap.read.rtt")),
                    len(values(r, "iwarp.rdmap.read.first_rtt")))
        for latency, req_in, resp_in in LINKS:
            timed = len(values(r, latency))
            answers = values(r, req_in)
            expect = reads if req_in == "iwarp.rdmap.read.request_in" else timed
            pt.check(len(answers) == expect,
                     f"frame {frame}: {req_in} {answers} beside {expect} latencies")
            if not timed:
                continue
            for a in answers:
                back = values(rows.get(int(a), {resp_in: ""}), resp_in)
                pt.check(str(frame) in back, f"frame {frame} answers frame {a}, whose {resp_in} "
                         f"is {back}")
                n += 1
    return n


def test_srt_agree(ts, args):
    pt.check(args.analyzer, "needs --analyzer")
    cap = ts.stage(args.capture)
    extra, tshark_extra = [], []
    regions = re.sub(r"\.pcap$", ".regions.json", args.capture)
    if os.path.exists(regions):
        extra = ["--regions", regions]
        tshark_extra = ["-o", f"iwarp.mpa.regions_file:{ts.stage(regions)}"]
    keys = pt.esp_keys(ts, args.capture)
    if keys:
        extra += keys[0]
        tshark_extra += keys[1]
    want = cli_kinds(args.analyzer, args.capture, extra)
    tolerance = 1 << 62 if os.path.basename(args.capture)[:-5] in COUNTS_ONLY else 0

    two = ts.fields(cap, FIELDS + LATE_PDU, ["-2"] + tshark_extra)
    compare("fields (tshark -2)", summary(field_samples(two)), want, tolerance)
    links = check_links(two)
    # One pass: the same on every frame, but for PDUs drawn in a frame printed before they were
    # known (held behind a hole a later frame declared capture loss or filled, flushed at the
    # end of the capture): none or fewer there.
    one = ts.fields(cap, FIELDS, tshark_extra)
    late_frames = {f for f, r in two.items() if any(r[x] for x in LATE_PDU)}
    for frame in sorted(set(one) | set(two)):
        a = field_samples({frame: one[frame]} if frame in one else {})
        b = field_samples({frame: two[frame]} if frame in two else {})
        if frame in late_frames:
            for k, v in a.items():
                pt.check(not (collections.Counter(v) - collections.Counter(b.get(k, []))),
                         f"frame {frame}: one pass shows {k} {v}, two passes {b.get(k)}")
        else:
            pt.check({k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v},
                     f"frame {frame}: one pass {dict(a)}, two passes {dict(b)}")
    # The table of a one-pass run counts each operation when core paired it (the frame that
    # released a held PDU included); it misses only those paired at the end of the capture.
    at_end = field_samples({f: r for f, r in two.items() if r["iwarp.mpa.end_of_capture"]})
    want_one = {}
    for k, (n, lo, hi) in want.items():
        missing = len(at_end.get(k, []))
        if n - missing:
            want_one[k] = (n - missing, lo, hi) if not missing else None
    # The table prints seconds to the microsecond.
    for label, more, expect in (("-z ddpscope,srt (tshark -2)", ["-2"], want),
                                ("-z ddpscope,srt", [], want_one)):
        kinds, commands, text = srt_table(ts, cap, more + tshark_extra)
        try:
            kinds = {k: v for k, v in kinds.items() if v[0]}
            # Kinds some of whose operations were paired at the end: counts only.
            for k, v in expect.items():
                if v is None:
                    expect[k] = (want[k][0] - len(at_end[k]),) + kinds.get(k, (0, 0, 0))[1:]
            compare(label, kinds, expect, max(1000, tolerance))
            # The ULP table splits the ULP kinds' operations by command.
            ulp = sum(v[0] for k, v in expect.items() if k not in RDMAP_FIELDS)
            pt.check(sum(v[0] for v in commands.values()) == ulp,
                     f"{label}: the ULP command table counts "
                     f"{sum(v[0] for v in commands.values())} commands, the CLI {ulp}")
        except pt.Failure as e:
            raise pt.Failure(f"{e}\n{text}")
    total = sum(v[0] for v in want.values())
    print(f"{total} operations agree ({', '.join(f'{k} {v[0]}' for k, v in sorted(want.items()))});"
          f" {links} request links" if total else "no timing operations, none shown either")


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--analyzer")
    ap.add_argument("test", choices=["srt_agree"])
    ap.add_argument("capture")
    args = ap.parse_args()
    return pt.run_test({"srt_agree": test_srt_agree}, args)


if __name__ == "__main__":
    sys.exit(main())
