#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`analyze --timing` and `ddpscope timing` (issue 42) on the real binary: the JSON member and
the text section appear only when asked for, the figures are the same with one thread or two,
the exact-sample cap turns percentiles into estimates, and the tables' --by, --top and --csv.
The figures themselves are checked against tshark in tests/capture/timing_tshark_test.py."""
import csv
import io
import json
import os
import subprocess
import sys
import unittest

DDPSCOPE = sys.argv.pop(1)
SAMPLES = sys.argv.pop(1)
NFS = os.path.join(SAMPLES, "siw", "siw-nfs-rdma.pcap")
ULP = os.path.join(SAMPLES, "synthetic", "clean-ulp.pcap")
GAP = os.path.join(SAMPLES, "synthetic", "fault-gap.pcap")


def run(*args):
    p = subprocess.run([DDPSCOPE, *args], capture_output=True, text=True, timeout=120)
    return p


class Timing(unittest.TestCase):
    def test_analyze_without_timing_has_no_timing(self):
        p = run("analyze", NFS, "--json", "-q")
        self.assertNotIn("timing", json.loads(p.stdout))
        self.assertNotIn("\nTiming", run("analyze", NFS, "-q").stdout)

    def test_analyze_timing_json_and_text(self):
        j = json.loads(run("analyze", NFS, "--json", "--timing", "-q").stdout)["timing"]
        ops = {(o["kind"], o["stream"], o["direction"]): o for o in j["operations"]}
        rpc = ops[("rpc-call", 2, "client-to-server")]
        self.assertEqual((rpc["requests"], rpc["count"], rpc["unanswered"]), (40, 40, 0))
        self.assertLessEqual(rpc["min_ns"], rpc["median_ns"])
        self.assertLessEqual(rpc["median_ns"], rpc["p99_ns"])
        self.assertLessEqual(rpc["p99_ns"], rpc["max_ns"])
        self.assertEqual(sum(b["count"] for b in rpc["histogram"]), 40)
        self.assertEqual(rpc["slowest"][0]["ns"], rpc["max_ns"])
        self.assertEqual(len(rpc["slowest"]), 10)
        self.assertFalse(rpc["estimated"])
        text = run("analyze", NFS, "--timing", "-q").stdout
        self.assertIn("\nTiming (", text)
        self.assertIn("rpc-call: 40 of 40 answered", text)

    def test_the_same_with_two_threads(self):
        one = run("analyze", ULP, "--json", "--timing", "--threads", "1", "-q").stdout
        two = run("analyze", ULP, "--json", "--timing", "--threads", "2", "-q").stdout
        self.assertEqual(one, two)

    def test_past_the_sample_cap_percentiles_are_estimated(self):
        self.assertIn("max_timing_samples", run("list-limits").stdout)
        j = json.loads(run("analyze", NFS, "--json", "--timing", "-q", "--limit",
                           "max_timing_samples=5").stdout)["timing"]
        self.assertEqual(j["max_samples"], 5)
        self.assertLessEqual(j["samples_kept"], 5)
        rpc = [o for o in j["operations"] if o["kind"] == "rpc-call"][0]
        self.assertTrue(rpc["estimated"])
        self.assertEqual(rpc["count"], 40)

    def test_stalls_are_counted_per_stream(self):
        j = json.loads(run("analyze", GAP, "--json", "--timing", "-q").stdout)["timing"]
        kinds = {k["kind"]: k["events"] for s in j["stalls"] for k in s["by_kind"]}
        self.assertEqual(kinds.get("capture-loss"), 1)

    def test_tables(self):
        p = run("timing", ULP, "--csv", "--top", "1", "-q")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        kinds = {r["kind"] for r in rows}
        self.assertTrue({"iser-command", "rpc-call", "smb-request", "rdma-read"} <= kinds, kinds)
        for r in rows:
            self.assertLessEqual(len(r["slowest"].split()), 1)
        by_ulp = list(csv.DictReader(io.StringIO(run("timing", ULP, "--csv", "--by", "ulp",
                                                     "-q").stdout)))
        self.assertTrue(all(r["stream"] == "all" for r in by_ulp))
        self.assertEqual(sum(int(r["count"]) for r in by_ulp if r["kind"] == "rpc-call"),
                         sum(int(r["count"]) for r in rows if r["kind"] == "rpc-call"))
        stag = run("timing", NFS, "--by", "stag", "-q").stdout
        self.assertTrue(stag.startswith("stream "))
        self.assertIn("0x", stag)
        text = run("timing", NFS, "-q").stdout
        self.assertIn("rpc-call", text)
        self.assertIn("octets/s", text)  # the throughput table after the operations
        self.assertEqual(run("timing", NFS, "--by", "host").returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
