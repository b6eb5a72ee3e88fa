#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Tests of the golden comparison itself (tests/golden.py), so that it can neither fail on a
reworded message nor silently pass a structural change.

usage: golden_test.py DDPSCOPE

  - on every committed golden report and expected-findings file: the file equals itself with
    every free-text string reworded around the same numbers, and differs from itself with any
    one finding's frame, code, severity, Terminate triple or consequence flag changed;
  - the canonical form of messages: numbers by value and in any order, citations ignored, a
    changed number noticed;
  - end to end, tests/capture/check_capture.py with the real CLI against a copy of a golden:
    passes with reworded messages, fails with a changed frame / code / Terminate triple, and
    DDPSCOPE_UPDATE_GOLDEN=1 rewrites the golden.
"""
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import golden as canon  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL " + what)


def reword(text):
    """The same numbers in other words: words reversed, re-cased, a citation and filler added,
    hex written in decimal."""
    text = re.sub(r"0x[0-9a-fA-F]+", lambda m: str(int(m.group(0), 16)), text)
    words = re.findall(r"\S*RFC\s*\d+\S*|\S+", text)  # a citation stays one word
    return "per RFC 5040 §4.8: " + " ".join(w.upper() if w[:1].isalpha() and "_" not in w else w
                                            for w in reversed(words)) + " (reworded)"


def reworded(doc):
    if isinstance(doc, dict):
        return {k: reword(v) if k in canon.FREE_TEXT and isinstance(v, str) else reworded(v)
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [reworded(v) for v in doc]
    return doc


def goldens():
    return sorted(glob.glob(os.path.join(ROOT, "samples", "*", "*.golden.json")) +
                  glob.glob(os.path.join(ROOT, "samples", "*", "*.expected.json")) +
                  glob.glob(os.path.join(ROOT, "tests", "capture", "golden", "*.golden.json")))


# Structural changes to one finding (or expected finding); each must be noticed.
def _frame(f):
    f["frame"] += 1


def _frames(f):
    f["frames"] = f.get("frames", []) + [999999]


def _code(f):
    f["code"] = "ddp.tagged.bounds" if f["code"] != "ddp.tagged.bounds" else "tcp.gap"


def _severity(f):
    f["severity"] = "note" if f["severity"] != "note" else "error"


def _terminate(f):
    if f.get("terminate"):
        f["terminate"]["code"] += 1
    else:
        f["terminate"] = {"layer": 0, "etype": 1, "code": 0, "name": "RDMAP / Remote Protection"}


def _consequence(f):
    f["consequence_of_gap"] = not f.get("consequence_of_gap", False)


MUTATIONS = {"frame": _frame, "frames": _frames, "code": _code, "severity": _severity,
             "terminate": _terminate, "consequence_of_gap": _consequence}


def test_every_golden():
    n = 0
    for path in goldens():
        name = os.path.relpath(path, ROOT)
        with open(path) as f:
            doc = json.load(f)
        check(canon.differences(doc, doc) == [], f"{name}: differs from itself")
        check(canon.differences(doc, reworded(doc)) == [],
              f"{name}: reworded free text fails: {canon.differences(doc, reworded(doc))[:3]}")
        key = "findings" if "findings" in doc else "expected"
        for i in range(len(doc[key])):
            for what, mutate in MUTATIONS.items():
                if key == "expected" and what in ("frames", "terminate", "consequence_of_gap"):
                    continue  # not fields of an expected finding
                bad = reworded(copy.deepcopy(doc))
                mutate(bad[key][i])
                check(canon.differences(doc, bad) != [],
                      f"{name}: {key}[{i}] with its {what} changed passes")
        shorter = copy.deepcopy(doc)
        if shorter[key]:
            shorter[key].pop()
            check(canon.differences(doc, shorter) != [], f"{name}: a finding removed passes")
        n += 1
    check(n >= 30, f"only {n} goldens found under {ROOT}")
    print(f"ok   {n} goldens: reworded messages pass, changed findings fail")


def test_report_fields():
    """Fields outside the findings are compared exactly too."""
    path = os.path.join(ROOT, "samples", "synthetic", "fault-invalidated-stag.golden.json")
    with open(path) as f:
        doc = json.load(f)
    stag = ["streams", 0, "stags", 0]
    edits = {  # what -> (where, new value)
        "summary count": (["summary", "errors"], 99),
        "STag": (stag + ["stag"], "0x00000001"),
        "region origin's frame": (stag + ["origin"], "rping advertisement (frame 9)"),
        "first MSN": (["streams", 0, "directions", 0, "queues", 0, "first_msn"], 7),
        "bytes placed": (["streams", 0, "directions", 1, "bytes_placed"], 1),
        "stream of a finding": (["findings", 0, "stream"], 5),
        "direction of a finding": (["findings", 0, "direction"], "server-to-client"),
    }
    for what, (where, value) in edits.items():
        bad = copy.deepcopy(doc)
        node = bad
        for k in where[:-1]:
            node = node[k]
        check(node[where[-1]] != value, f"{what}: the edit changes nothing")
        node[where[-1]] = value
        check(canon.differences(doc, bad) != [], f"a changed {what} passes")
    print(f"ok   {len(edits)} report fields outside finding codes are compared")


def test_message_canon():
    same = [
        ("CRC field 0x45eb57e, computed 0x5e5eb57e",
         "computed 1583265150 but the field says 73315710"),
        ("MO 2880, expected 2872 for MSN 1", "for MSN 1: expected MO 2872, got 2880"),
        ("limit reached: max_regions", "the max_regions cap was hit"),
        ("STag 0xdead is not a known region of 10.0.0.2",
         "unknown STag 0xDEAD at 10.0.0.2 (RFC 5041 §7.2)"),
        ("DDP version 2", "DV is 2 (RFC 5041 §4.1)"),
    ]
    for a, b in same:
        check(canon.canonical_text(a) == canon.canonical_text(b), f"{a!r} vs {b!r} differ")
    differ = [
        ("MSN 3 on QN 0, expected 2", "MSN 4 on QN 0, expected 2"),
        ("STag 0xdead is not a known region of 10.0.0.2", "STag 0xdead of 10.0.0.3"),
        ("limit reached: max_regions", "limit reached: max_streams"),
        ("1460 octets missing", "1460 octets missing at offset 0"),
    ]
    for a, b in differ:
        check(canon.canonical_text(a) != canon.canonical_text(b), f"{a!r} vs {b!r} compare equal")
    print(f"ok   {len(same)} rewordings equal, {len(differ)} changed numbers noticed")


def test_check_capture(ddpscope):
    """check_capture.py uses the canonical comparison and its update mode."""
    script = os.path.join(ROOT, "tests", "capture", "check_capture.py")
    pcap = os.path.join(ROOT, "samples", "synthetic", "fault-terminate-siw.pcap")
    with open(pcap[: -len(".pcap")] + ".golden.json") as f:
        doc = json.load(f)
    env = {k: v for k, v in os.environ.items() if k != canon.UPDATE_ENV}
    with tempfile.TemporaryDirectory() as tmp:
        gold = os.path.join(tmp, "g.golden.json")

        def run(golden_doc, update=False):
            canon.write_golden(gold, golden_doc)
            e = dict(env, **({canon.UPDATE_ENV: "1"} if update else {}))
            return subprocess.run([sys.executable, script, ddpscope, pcap, gold], env=e,
                                  capture_output=True, text=True)

        r = run(doc)
        check(r.returncode == 0, f"check_capture fails on the committed golden: {r.stdout}")
        r = run(reworded(doc))
        check(r.returncode == 0, f"check_capture fails on reworded messages: {r.stdout}")
        for what in ("frame", "code", "terminate"):
            bad = copy.deepcopy(doc)
            MUTATIONS[what](next(f for f in bad["findings"] if f.get("terminate")))
            r = run(bad)
            check(r.returncode == 1 and "differs from" in r.stdout,
                  f"check_capture passes a golden with a changed {what}: {r.stdout}")
        bad = reworded(copy.deepcopy(doc))
        bad["findings"][0]["frame"] += 1
        r = run(bad, update=True)
        check(r.returncode == 0 and "updated" in r.stdout, f"update mode failed: {r.stdout}")
        with open(gold) as f:
            written = json.load(f)
        check(canon.differences(doc, written) == [] and written != bad,
              "update mode did not write the report as it is now")
    print("ok   check_capture.py: rewording passes, frame/code/triple changes fail, update works")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    ddpscope = shutil.which(sys.argv[1]) or os.path.abspath(sys.argv[1])
    test_message_canon()
    test_every_golden()
    test_report_fields()
    test_check_capture(ddpscope)
    print(f"{len(failures)} failed" if failures else "all golden comparer tests pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
