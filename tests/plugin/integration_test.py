#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The plugin inside Wireshark (issue 18), with real tshark loading the built plugin:

  tables   -z ddpscope,opcodes and -z ddpscope,findings (the stat-tap tables Wireshark shows
           under Statistics › iWARP (ddpscope)) print per stream the opcode counts core's model
           holds, and per finding code the counts `ddpscope analyze` reports;
  filters  every display filter and column of the README's table compiles, and the ones that
           name a frame of a sample select it.

usage: integration_test.py --plugin SO --analyzer DDPSCOPE --samples DIR --readme README TEST
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plugin_tests import Failure, Tshark, check, run_test  # noqa: E402


def analyzer_json(analyzer, capture, extra=()):
    p = subprocess.run([analyzer, "analyze", capture, "--json", *extra], capture_output=True,
                       text=True)
    check(p.returncode in (0, 1), f"ddpscope analyze {capture}: {p.stderr}")
    return json.loads(p.stdout)


def table_rows(out, title):
    """Rows of one table of tshark's stat-tap table output: the lines of cells ("a |b |c |")
    after the line naming the table, up to the next line without cells."""
    rows, inside = [], False
    for line in out.splitlines():
        if line.strip() == title:
            inside = True
            continue
        if inside:
            if "|" not in line:
                break
            rows.append([c.strip() for c in line.rstrip().rstrip("|").split("|")])
    return rows


def test_tables(ts, args):
    synth = os.path.join(args.samples, "synthetic")
    # fault-bounds: Writes and the bounds error; fault-msn: untagged Sends with MSN findings.
    for name in ["fault-bounds", "fault-msn", "clean-rping"]:
        cap = ts.stage(os.path.join(synth, name + ".pcap"))
        regions = os.path.join(synth, name + ".regions.json")
        extra, tshark_extra = [], []
        if os.path.exists(regions):
            extra = ["--regions", regions]
            tshark_extra = ["-o", f"iwarp.mpa.regions_file:{ts.stage(regions)}"]
        doc = analyzer_json(args.analyzer, os.path.join(synth, name + ".pcap"), extra)
        # Two passes: the taps run once the first pass has finished the model, as in Wireshark.
        out = ts.run(["-2", "-r", cap, "-q", "-z", "ddpscope,opcodes", "-z",
                      "ddpscope,findings"] + tshark_extra).stdout
        check("Opcodes per Stream" in out and "Findings" in out, f"{name}: no tables:\n{out}")
        # Each statistic prints between lines of '='; the stream tables share their titles.
        blocks = re.split(r"^=+$", out, flags=re.M)
        opcodes = next(b for b in blocks if "iWARP (ddpscope) Opcodes per Stream:" in b)
        findings = next(b for b in blocks if "iWARP (ddpscope) Findings:" in b)
        # Findings, all streams: code -> count, as the analyzer counts them.
        want = {}
        for f in doc["findings"]:
            want[f["code"]] = want.get(f["code"], 0) + 1
        got = {r[0]: int(r[2]) for r in table_rows(findings, "All streams") if len(r) >= 3}
        check(got == want, f"{name}: findings table {got}, analyzer {want}\n{out}")
        # Opcodes: every (direction, opcode) with its messages and octets.
        for s in doc["streams"]:
            title = f"Stream {s['id']}: {s['client']} \u2194 {s['server']}"
            rows = table_rows(opcodes, title)
            got = {(r[0], r[1]): (int(r[2]), int(r[3]), int(r[4])) for r in rows if len(r) >= 5}
            want = {}
            for d in s["directions"]:
                for op, c in d["opcodes"].items():
                    if c["segments"] == 0 and c["messages"] == 0:
                        continue
                    want[(f"{d['from']} \u2192 {d['to']}", op)] = (c["segments"], c["messages"],
                                                                   c["bytes"])
            # Per-stream findings: code -> count, from the analyzer's list.
            want_f = {}
            for f in doc["findings"]:
                if f.get("stream") == s["id"]:
                    want_f[f["code"]] = want_f.get(f["code"], 0) + 1
            got_f = {r[0]: int(r[2]) for r in table_rows(findings, title) if len(r) >= 3}
            check(got_f == want_f, f"{name} {title}: findings {got_f}, analyzer {want_f}")
            check(len(got) == len(want) and len(got) > 0,
                  f"{name} {title}: {len(got)} opcode rows, the analyzer has {len(want)}:\n"
                  f"{got}\n{want}\n{out}")
            check(sorted(got.values()) == sorted(want.values()) and
                  sorted(k[0] for k in got) == sorted(k[0] for k in want),
                  f"{name} {title}: counts differ:\n{sorted(got.values())}\n"
                  f"{sorted(want.values())}")
        print(f"{name}: {len(got)} opcode rows (last stream), "
              f"{len(doc['findings'])} findings agree")


def readme_filters(readme):
    """The rows of the README's display filter table: (filter, meaning)."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"<!-- display filters -->(.*?)<!-- /display filters -->", text, re.S)
    check(m, "README has no <!-- display filters --> table")
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            rows.append((cells[0].strip("`"), cells[1]))
    return rows


def test_filters(ts, args):
    synth = os.path.join(args.samples, "synthetic")
    bounds = ts.stage(os.path.join(synth, "fault-bounds.pcap"))
    regions = ts.stage(os.path.join(synth, "fault-bounds.regions.json"))
    rows = readme_filters(args.readme)
    check(len(rows) >= 10, f"only {len(rows)} filters in the README table")
    hits = {}
    for flt, _ in rows:
        p = ts.run(["-r", bounds, "-o", f"iwarp.mpa.regions_file:{regions}", "-2", "-Y", flt,
                    "-T", "fields", "-e", "frame.number"], check_rc=False)
        check(p.returncode == 0, f"README filter `{flt}` does not work: {p.stderr}")
        hits[flt] = [int(x) for x in p.stdout.split()]
    # The ones that name fault-bounds' error select its frames (14 and 23, as the analyzer
    # reports them), and only those.
    for flt in ['iwarp.mpa.finding == "ddp.tagged.bounds"', "iwarp.ddp.tagged.bounds"]:
        check(flt in hits, f"README table lacks `{flt}`")
        check(hits[flt] == [14, 23], f"`{flt}` selects {hits[flt]}, want [14, 23]")
    check(len(hits["iwarp.mpa"]) > 10, f"`iwarp.mpa` selects {hits['iwarp.mpa']}")
    # Columns: each one a field tshark knows.
    text = open(args.readme, encoding="utf-8").read()
    m = re.search(r"<!-- columns -->(.*?)<!-- /columns -->", text, re.S)
    check(m, "README has no <!-- columns --> list")
    cols = re.findall(r"`(iwarp\.[a-z_.]+)`", m.group(1))
    check(len(cols) >= 5, f"columns: {cols}")
    args_e = sum((["-e", c] for c in cols), [])
    p = ts.run(["-r", bounds, "-c", "1", "-T", "fields"] + args_e, check_rc=False)
    check(p.returncode == 0, f"README columns {cols}: {p.stderr}")
    print(f"{len(rows)} filters and {len(cols)} columns work")


TESTS = {"tables": test_tables, "filters": test_filters}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--analyzer", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--readme", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    return run_test(TESTS, args)


if __name__ == "__main__":
    sys.exit(main())
