#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks freshly recorded siw lab captures against the committed samples' expectations.

usage: check_samples.py DDPSCOPE OUTDIR SAMPLESDIR

For every SAMPLESDIR/NAME.expected.json, OUTDIR/NAME.pcap (recorded by `lab.sh samples OUTDIR`)
must exist and analyze with exactly the warning/error findings of the committed sample's golden
report (NAME.golden.json; NAME.expected.json when there is none), compared by code, severity,
consequence flag and Terminate triple: frames, STags and the numbers in messages may differ
from the committed capture (a new recording is a new conversation). Notes are printed, not
judged. Exit 0 when every sample matches."""
import collections
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import golden as canon  # noqa: E402  (tests/golden.py)


def key(finding, with_terminate):
    """What a re-recorded conversation must reproduce of a warning or error finding (an
    expected.json entry carries no Terminate triple)."""
    return (finding["code"], finding["severity"], bool(finding.get("consequence_of_gap")),
            canon.terminate_triple(finding) if with_terminate else None)


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
        golden = exp_path[: -len(".expected.json")] + ".golden.json"
        full = os.path.exists(golden)
        if full:
            with open(golden) as f:
                reference = json.load(f)["findings"]
        else:
            reference = exp["expected"]
        got = collections.Counter(key(f, full) for f in report["findings"]
                                  if f["severity"] != "note")
        want = collections.Counter(key(e, full) for e in reference if e.get("severity") != "note")
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
