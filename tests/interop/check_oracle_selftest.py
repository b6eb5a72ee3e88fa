#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""check_oracle.py can fail (issue 40): without the VM, the real `ddpscope analyze --sink-profile
siw` against a copy of the committed oracle records (tests/interop/oracle/) in which one case's
observed answer is altered. The checker must name that case as a mismatch and exit 1, and pass
the unaltered records (ctest interop.siw-oracle-committed runs those too).

  check_oracle_selftest.py DDPSCOPE"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(HERE, "oracle", "siw-6.1-cases.json")
CAPTURES = os.path.join(REPO, "samples", "siw", "oracle")


def check(ddpscope, cases):
    return subprocess.run([sys.executable, os.path.join(HERE, "check_oracle.py"), ddpscope, cases,
                           "--captures", CAPTURES], capture_output=True, text=True)


def main():
    ddpscope = os.path.abspath(sys.argv[1])
    problems = []
    p = check(ddpscope, CASES)
    if p.returncode != 0:
        problems.append(f"the committed records fail: exit {p.returncode}: "
                        f"{[l for l in p.stdout.splitlines() if 'MISMATCH' in l]}")
    doc = json.load(open(CASES))
    for name, alter in (("write-bounds", {"answer": "wait"}),
                        ("read-request-on-qn0", {"answer": "close"}),
                        ("send-too-long", {"terminate": {"triple": {"layer": 1, "etype": 2,
                                                                    "code": 5}}})):
        altered = json.loads(json.dumps(doc))
        for r in altered["cases"]:
            if r["name"] == name:
                r.update(alter)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cases.json")
            with open(path, "w") as f:
                json.dump(altered, f)
            p = check(ddpscope, path)
        bad = [l.split()[1] for l in p.stdout.splitlines() if "MISMATCH" in l]
        if bad != [name] or p.returncode != 1:
            problems.append(f"{name} altered ({alter}): exit {p.returncode}, mismatches {bad}")
    print("PASS" if not problems else "FAIL: " + "; ".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
