#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs `ddpscope analyze --json` on every synthetic sample and compares its findings with the
sample's NAME.expected.json (see docs/synth-scenarios.md).

Usage: samples/check_expected.py path/to/ddpscope [NAME ...]
Exit 0 when every expected finding is reported at its frame and, for exhaustive samples, no
other warning or error finding appears; 1 otherwise.
"""
import glob
import json
import os
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "synthetic")
    names = sys.argv[2:] or sorted(
        os.path.basename(p)[: -len(".expected.json")]
        for p in glob.glob(os.path.join(here, "*.expected.json")))
    failed = 0
    for name in names:
        exp = json.load(open(os.path.join(here, name + ".expected.json")))
        args = [binary, "analyze", "--json", os.path.join(here, exp["pcap"])]
        if exp.get("regions_file"):
            args += ["--regions", os.path.join(here, exp["regions_file"])]
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode not in (0, 1):
            print(f"FAIL {name}: ddpscope exited {run.returncode}: {run.stderr.strip()}")
            failed += 1
            continue
        got = [(f["code"], f["frame"], f["severity"]) for f in json.loads(run.stdout)["findings"]]
        want = {(x["code"], x["frame"]) for x in exp["expected"]}
        have = {(c, f) for c, f, _ in got}
        missing = sorted(want - have)
        extra = sorted((c, f, s) for c, f, s in got
                       if (c, f) not in want and s != "note" and exp["exhaustive"])
        if missing or extra:
            failed += 1
            print(f"FAIL {name}: missing {missing} unexpected {extra}")
        else:
            print(f"ok   {name} ({len(want)} expected{'' if exp['exhaustive'] else ', at least'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
