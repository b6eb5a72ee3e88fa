#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks freshly recorded siw lab captures against the committed samples' expectations.

usage: check_samples.py DDPSCOPE OUTDIR SAMPLESDIR

For every SAMPLESDIR/NAME.expected.json, OUTDIR/NAME.pcap (recorded by `lab.sh samples OUTDIR`)
must exist and analyze with exactly the expected warning/error finding codes (frames may differ
from the committed capture: a new recording is a new conversation). Notes are printed, not
judged. Exit 0 when every sample matches."""
import collections
import glob
import json
import os
import subprocess
import sys


def main():
    ddpscope, outdir, samples = sys.argv[1:4]
    bad = 0
    for exp_path in sorted(glob.glob(os.path.join(samples, "*.expected.json"))):
        name = os.path.basename(exp_path)[: -len(".expected.json")]
        pcap = os.path.join(outdir, name + ".pcap")
        if not os.path.exists(pcap):
            print(f"FAIL {name}: not recorded")
            bad += 1
            continue
        with open(exp_path) as f:
            exp = json.load(f)
        proc = subprocess.run([ddpscope, "analyze", pcap, "--json"], capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            print(f"FAIL {name}: ddpscope exit {proc.returncode}: {proc.stderr.strip()}")
            bad += 1
            continue
        report = json.loads(proc.stdout)
        got = collections.Counter(f["code"] for f in report["findings"] if f["severity"] != "note")
        want = collections.Counter(e["code"] for e in exp["expected"] if e.get("severity") != "note")
        notes = sorted({f["code"] for f in report["findings"] if f["severity"] == "note"})
        if got != want:
            print(f"FAIL {name}: findings {dict(got)}, expected {dict(want)}")
            for f in report["findings"]:
                print(f"     frame {f['frame']}: {f['code']} ({f['severity']}) {f['message']}")
            bad += 1
        else:
            print(f"ok   {name}: {dict(got) or 'no warning or error'}" + (f"; notes {notes}" if notes else ""))
    print(f"{bad} failed" if bad else "all samples match")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
