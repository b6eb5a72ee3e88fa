#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The real CLI on bundled samples: every finding's text line shows its direction as endpoints,
the Terminate a compliant sink would send is labelled apart from the one a peer sent, notes
after a CRC failure are attributed to the dropped FPDU (text and JSON), and tagged findings
name the STag in its 8-digit form with the region's bounds (issue 16)."""
import json
import os
import subprocess
import sys

ARROW = "\u2192"


def run(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True, encoding="utf-8")
    if r.returncode not in (0, 1):
        sys.exit(f"FAIL {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def finding_lines(text):
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("Findings:"))
    return [l for l in lines[start + 1:] if l.strip()]


def main():
    binary, samples = sys.argv[1], sys.argv[2]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    def sample(name):
        return os.path.join(samples, name + ".pcap")

    # Direction on every line; the sink's Terminate labelled as such.
    text = run(binary, "analyze", sample("fault-stag-wrong-stream"))
    lines = finding_lines(text)
    check(len(lines) == 1, f"fault-stag-wrong-stream: one finding line, got {lines}")
    line = lines[0] if lines else ""
    check(f"10.0.0.1:40002 {ARROW} 10.0.0.2:7174" in line, f"direction missing: {line}")
    check("STag 0x00002b02" in line, f"8-digit STag missing: {line}")
    check("[0x7f0000200000, +8192)" in line, f"region bounds missing: {line}")
    check("[sink would send Terminate DDP / Tagged Buffer" in line, f"sink label missing: {line}")

    # rdmap.terminate: what the peer sent.
    lines = finding_lines(run(binary, "analyze", sample("fault-terminate")))
    term = [l for l in lines if "rdmap.terminate " in l]
    check(len(term) == 1 and term[0].count("peer sent Terminate") == 1 and
          "sink would send" not in term[0], f"fault-terminate label: {lines}")
    check(all(ARROW in l for l in lines), f"fault-terminate direction: {lines}")

    # fault-crc: nothing was lost to the capture; the notes are the dropped FPDU's.
    lines = finding_lines(run(binary, "analyze", sample("fault-crc")))
    notes = [l for l in lines if " note " in l]
    check(len(notes) == 2, f"fault-crc: two notes, got {lines}")
    for l in notes:
        check("(consequence of an FPDU dropped for its CRC)" in l and "capture loss" not in l and
              "missing from the capture" not in l, f"fault-crc note: {l}")
    report = json.loads(run(binary, "analyze", "--json", sample("fault-crc")))
    check(all(d["bytes_lost"] == 0 for s in report["streams"] for d in s["directions"]),
          "fault-crc: bytes_lost")
    for f in report["findings"]:
        check("from" in f and "to" in f, f"fault-crc JSON from/to: {f}")
        if f["severity"] == "note":
            check(f.get("consequence_of") == "crc" and "consequence_of_gap" not in f,
                  f"fault-crc JSON consequence: {f}")

    # fault-gap: capture loss keeps consequence_of_gap (compatibility) next to consequence_of.
    report = json.loads(run(binary, "analyze", "--json", sample("fault-gap")))
    gap_notes = [f for f in report["findings"] if f.get("consequence_of")]
    check(gap_notes and all(f["consequence_of"] == "gap" and f.get("consequence_of_gap")
                            for f in gap_notes), f"fault-gap consequences: {gap_notes}")

    for f in failures:
        print("FAIL", f)
    if failures:
        sys.exit(1)
    print("ok  text report: directions, Terminate labels, STags, consequences")


if __name__ == "__main__":
    main()
