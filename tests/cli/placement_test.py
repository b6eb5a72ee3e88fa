#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Placing octets again (issue 16), on the real binary: buffer reuse after delivery is counted,
not reported; a conflict while the earlier message is in flight is
ddp.tagged.conflicting-placement at the overwriting segment's frame; the text report and JSON
say the same. Rule: core/include/ddpscope/ddp/shadow.h.

Usage: placement_test.py DDPSCOPE SAMPLES_DIR"""
import json
import os
import subprocess
import sys


def main():
    binary, samples = sys.argv[1], sys.argv[2]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    def run(*args):
        p = subprocess.run([binary, "analyze", *args], capture_output=True, text=True)
        check(p.returncode in (0, 1), f"{args}: exit {p.returncode}: {p.stderr}")
        return p

    conflict = os.path.join(samples, "synthetic", "fault-conflict.pcap")
    p = run(conflict, "--json")
    check(p.returncode == 1, "fault-conflict: exit 1 (its ddp.tagged.bounds error)")
    report = json.loads(p.stdout)
    found = [(f["code"], f["frame"], f["severity"]) for f in report["findings"]]
    check(("ddp.tagged.conflicting-placement", 17, "warning") in found,
          f"fault-conflict: the conflict at frame 17 as a warning, got {found}")
    check(sum(1 for f in found if f[0] == "ddp.tagged.conflicting-placement") == 1,
          f"fault-conflict: one conflict (the reuse is none), got {found}")
    stags = {int(t["stag"], 16): t for s in report["streams"] for t in s["stags"]}
    reused, raced = stags.get(0x4D04, {}), stags.get(0x5E05, {})
    check(reused.get("overwrites") == 2 and reused.get("reused_octets") == 2048 and
          reused.get("conflicts") == 0, f"fault-conflict: the reused buffer's counts {reused}")
    check(raced.get("conflicts") == 1 and raced.get("overwrites") == 0,
          f"fault-conflict: the conflicting buffer's counts {raced}")

    text = run(conflict).stdout
    check("reused: 2048 octets rewritten by 2 later segments" in text,
          f"fault-conflict text: the reuse line missing:\n{text}")
    check("1 conflicting placement" in text, f"fault-conflict text: the conflict count:\n{text}")
    lines = [l for l in text.splitlines() if "ddp.tagged.conflicting-placement" in l]
    check(len(lines) == 1 and lines[0].split()[:3] == ["frame", "17", "warning"] and
          "placed again by their own message" in lines[0] and "first placed in frame 16" in lines[0],
          f"fault-conflict text: the finding line {lines}")

    # A real capture of buffer reuse: rping writes a new pattern into the same buffers on its
    # second iteration. Counted, never a finding.
    rping = os.path.join(samples, "siw", "siw-rping-4000.pcap")
    report = json.loads(run(rping, "--json").stdout)
    check(not any(f["code"] == "ddp.tagged.conflicting-placement" for f in report["findings"]),
          "siw-rping-4000: buffer reuse reported as a conflict")
    counts = [(t["overwrites"], t["reused_octets"], t["conflicts"])
              for s in report["streams"] for t in s["stags"] if t["overwrites"]]
    check(counts == [(3, 3987, 0), (3, 3987, 0)], f"siw-rping-4000: reuse counts {counts}")

    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
