#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The engine's caps on the CLI: `ddpscope analyze --limit NAME=VALUE` and `list-limits`.
# A small cap on a bundled sample raises engine.limit-reached at the frame where it is hit and
# the analysis goes on; a bad --limit is a usage error (exit 2) on analyze and live alike.
#   limits_cli_test.py DDPSCOPE SAMPLES_DIR
import json
import os
import subprocess
import sys
import tempfile


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def run(ddpscope, *args):
    return subprocess.run([ddpscope] + list(args), capture_output=True, text=True, timeout=60)


def analyze(ddpscope, capture, *extra):
    p = run(ddpscope, "analyze", capture, "--json", *extra)
    check(p.returncode in (0, 1), f"analyze {capture} {extra} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def findings(doc, code=None):
    return [(f["frame"], f["stream"], f["code"]) for f in doc["findings"]
            if code is None or f["code"] == code]


def test_max_streams(ddpscope, samples):
    # Two streams; with room for one, the second stream's first frame hits the cap.
    cap = f"{samples}/synthetic/fault-stag-wrong-stream.pcap"
    full = analyze(ddpscope, cap)
    check(len(full["streams"]) == 2, "the sample should have two streams")
    capped = analyze(ddpscope, cap, "--limit", "max_streams=1")
    hits = [f for f in capped["findings"] if f["code"] == "engine.limit-reached"]
    check(len(hits) == 1, f"one engine.limit-reached expected, got {hits}")
    check("max_streams" in hits[0]["message"], f"names the cap: {hits[0]}")
    check(hits[0]["frame"] == full["streams"][1]["first_frame"],
          f"hit at the second stream's first frame {full['streams'][1]['first_frame']}: {hits[0]}")
    check(len(capped["streams"]) == 1, "only the first stream is kept")
    # The first stream was analysed to its end, exactly as without the cap (its regions may
    # differ: the second stream used one of them).
    for key in ("directions", "mpa", "last_frame", "state"):
        check(capped["streams"][0][key] == full["streams"][0][key],
              f"the first stream's {key} changed under the cap")
    check(capped["frames"] == full["frames"], "every frame was read")


def test_max_message_records(ddpscope, samples):
    cap = f"{samples}/synthetic/fault-msn.pcap"
    full = analyze(ddpscope, cap)
    capped = analyze(ddpscope, cap, "--limit", "max_message_records=2")
    hits = findings(capped, "engine.limit-reached")
    check(len(hits) == 1, f"one engine.limit-reached expected, got {hits}")
    frame = hits[0][0]
    # Every protocol finding is still reported, those after the cap's frame included.
    rest = [f for f in findings(capped) if f[2] != "engine.limit-reached"]
    check(rest == findings(full), f"findings changed under the cap:\n{rest}\n{findings(full)}")
    check(any(f[0] > frame for f in rest), f"no finding after frame {frame} to show it went on")
    # The summary counts every message, not the records kept for views.
    check(capped["summary"]["messages"] == full["summary"]["messages"] > 2,
          f"summary messages {capped['summary']['messages']} under the cap, "
          f"{full['summary']['messages']} without")


def test_defaults_round_trip(ddpscope, samples):
    # list-limits names every cap with its default; giving them all back changes nothing.
    p = run(ddpscope, "list-limits")
    check(p.returncode == 0, f"list-limits exited {p.returncode}")
    rows = [line.split(None, 2) for line in p.stdout.splitlines()[1:] if line.strip()]
    check(len(rows) >= 13, f"too few limits listed:\n{p.stdout}")
    args = []
    for name, default, _ in rows:
        args += ["--limit", f"{name}={default}"]
    cap = f"{samples}/synthetic/fault-crc.pcap"
    check(analyze(ddpscope, cap, *args) == analyze(ddpscope, cap), "explicit defaults differ")


def exported(ddpscope, capture, *extra):
    """The shadow buffers --export-dir writes: {file name: content}."""
    with tempfile.TemporaryDirectory() as d:
        p = run(ddpscope, "analyze", capture, "--export-dir", d, *extra)
        check(p.returncode in (0, 1), f"analyze --export-dir {extra} exited {p.returncode}")
        return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))}


def test_retention_spellings(ddpscope, samples):
    # payload_retention decides what the exported shadow buffers hold: --retain-mib (MiB) and
    # --limit (octets, K/M/G) set the same cap; --limit is applied after --retain-mib.
    cap = f"{samples}/synthetic/clean-rping.pcap"
    full = exported(ddpscope, cap)
    none = exported(ddpscope, cap, "--retain-mib", "0")
    check(full != none, "retaining nothing should change the exported buffers")
    check(exported(ddpscope, cap, "--limit", "payload_retention=0") == none,
          "--limit payload_retention=0 differs from --retain-mib 0")
    check(exported(ddpscope, cap, "--retain-mib", "0", "--limit", "payload_retention=1M") == full,
          "--limit did not override --retain-mib")


def test_usage_errors(ddpscope, samples):
    cap = f"{samples}/synthetic/fault-crc.pcap"
    for bad, says in (("no_such_cap=5", "unknown limit 'no_such_cap'"),
                      ("max_streams=ten", "bad value 'ten'"),
                      ("max_streams=5X", "bad value '5X'"),
                      ("max_regions=99999999999999999999", "bad value"),
                      ("max_streams", "NAME=VALUE")):
        for cmd in (["analyze", cap, "--json"], ["live", "-i", "lo", "-c", "1", "--duration", "1"]):
            p = run(ddpscope, *cmd, "--limit", bad)
            check(p.returncode == 2, f"{cmd[0]} --limit {bad}: exit {p.returncode}, want 2")
            check(says in p.stderr, f"{cmd[0]} --limit {bad}: stderr lacks {says!r}: {p.stderr}")
            check(p.stdout == "", f"{cmd[0]} --limit {bad} wrote a report")


def test_regions_file_errors(ddpscope, samples):
    """A bad regions file is a usage error (exit 2) naming the entry and the key; no report."""
    cap = f"{samples}/synthetic/fault-bounds.pcap"
    cases = (('[{"stag": 1, "base": 0, "length": 8, "sinkk": "10.0.0.2"}]',
              'region 0: unknown key "sinkk"'),
             ('[{"stag": 1, "base": 0, "length": -5}]', 'region 0: missing or invalid "length"'),
             ('[{"stag": 1, "base": "0xffffffffffffff00", "length": 4096}]', "past 2^64"),
             ('[{"stag": 1, "base": 0, "length": 8}, {"stag": 1, "base": 8, "length": 8}]',
              "region 1: STag 1 is already region 0's"))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "regions.json")
        for text, says in cases:
            with open(path, "w") as f:
                f.write(text)
            p = run(ddpscope, "analyze", cap, "--json", "--regions", path)
            check(p.returncode == 2, f"--regions {text}: exit {p.returncode}, want 2")
            check(says in p.stderr, f"--regions {text}: stderr lacks {says!r}: {p.stderr}")
            check(p.stdout == "", f"--regions {text} wrote a report")


def main():
    ddpscope, samples = sys.argv[1], sys.argv[2]
    status = 0
    for t in (test_max_streams, test_max_message_records, test_defaults_round_trip,
              test_retention_spellings, test_usage_errors, test_regions_file_errors):
        try:
            t(ddpscope, samples)
            print(f"PASS {t.__name__}")
        except Failure as e:
            print(f"FAIL {t.__name__}: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
