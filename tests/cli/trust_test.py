#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The CLI as a script depends on it (issue 16, "Trust"): exit codes that count every finding,
failed writes that are errors, inputs that are named for what they are, usage errors at
start-up. Drives the real binary on the bundled samples."""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

DDPSCOPE = sys.argv.pop(1)
SAMPLES = sys.argv.pop(1)
BOUNDS = os.path.join(SAMPLES, "synthetic", "fault-bounds.pcap")
BOUNDS_REGIONS = os.path.join(SAMPLES, "synthetic", "fault-bounds.regions.json")


def run(*args, **kw):
    return subprocess.run([DDPSCOPE, *map(str, args)], capture_output=True, text=True,
                          timeout=60, **kw)


class Trust(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_findings_past_the_cap_count_in_summary_and_exit_code(self):
        full = run("analyze", BOUNDS, "--regions", BOUNDS_REGIONS, "--json")
        self.assertEqual(full.returncode, 1, full.stderr)
        errors = json.loads(full.stdout)["summary"]["errors"]
        self.assertGreater(errors, 0)
        capped = run("analyze", BOUNDS, "--regions", BOUNDS_REGIONS, "--json", "--limit",
                     "max_findings=0")
        self.assertEqual(capped.returncode, 1, capped.stderr)
        rep = json.loads(capped.stdout)
        self.assertEqual(rep["findings"], [])
        self.assertEqual(rep["summary"]["errors"], errors)
        self.assertEqual(rep["findings_dropped"], errors)
        text = run("analyze", BOUNDS, "--regions", BOUNDS_REGIONS, "--limit", "max_findings=0")
        self.assertEqual(text.returncode, 1)
        self.assertIn(f"Findings: 0 (+{errors} not kept) ({errors} errors", text.stdout)

    def test_a_report_that_cannot_be_written_is_an_error(self):
        p = run("analyze", BOUNDS, "-o", "/dev/full")
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot write the report to /dev/full: No space left on device", p.stderr)
        with open("/dev/full", "w") as full:
            p = subprocess.run([DDPSCOPE, "analyze", BOUNDS, "--json"], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("standard output: No space left on device", p.stderr)

    def test_export_dir_checked_before_analysing(self):
        afile = self.path("afile")
        open(afile, "w").close()
        p = run("analyze", BOUNDS, "--export-dir", afile)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"--export-dir {afile} is not a directory", p.stderr)
        self.assertEqual(p.stdout, "", "no report before the usage error")
        ok = self.path("out")
        p = run("analyze", BOUNDS, "--export-dir", ok)
        self.assertEqual(p.returncode, 1, p.stderr)  # the sample's errors, no write failure
        self.assertTrue(os.path.exists(os.path.join(ok, "index.json")))
        self.assertFalse([n for n in os.listdir(ok) if n.startswith(".ddpscope")])

    def test_empty_and_short_files_are_named(self):
        empty = self.path("empty.pcap")
        open(empty, "wb").close()
        p = run("analyze", empty)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip(), f"ddpscope: {empty}: empty file")
        short = self.path("short.pcap")
        with open(short, "wb") as f:
            f.write(b"\xd4\xc3\xb2\xa1\x02\x00")
        p = run("analyze", short)
        self.assertEqual(p.returncode, 2)
        self.assertIn("6 octets, too short for a pcap or pcapng header", p.stderr)

    def test_unsupported_link_type_is_named(self):
        cap = self.path("user0.pcap")
        with open(cap, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 147))
            for _ in range(27):
                f.write(struct.pack("<IIII", 0, 0, 20, 20) + b"x" * 20)
        p = run("analyze", cap)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("27 of 27 frames have the unsupported link type USER0 (", p.stderr)

    def test_text_report_reads_as_written_english(self):
        # Issue 16's small things: singular counts, "nothing placed", 8-digit STags and CRCs.
        p = run("analyze", os.path.join(SAMPLES, "synthetic", "fault-to-wrap.pcap"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stdout, r"RDMA Write +1 segment +1 message +64 octets")
        self.assertIn("QN 0: MSN 1..1, 1 message\n", p.stdout)
        self.assertIn("STag 0x00008b08 [observed]: nothing placed", p.stdout)
        self.assertNotIn(" 1 segments", p.stdout)
        self.assertNotIn("placed in nothing", p.stdout)
        p = run("analyze", os.path.join(SAMPLES, "synthetic", "fault-crc.pcap"))
        self.assertIn(", 1 CRC error\n", p.stdout)
        self.assertRegex(p.stdout, r"CRC field 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}")

    def test_version_and_help(self):
        p = run("--version")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout.strip(), r"^ddpscope \d+\.\d+\.\d+$")
        p = run("help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("analyze", p.stdout)
        self.assertIn("endpoint", p.stdout)
        p = run("help", "endpoint", "listen")
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: ddpscope endpoint listen", p.stdout)
        self.assertIn("--script", p.stdout)
        p = run("help", "nosuch")
        self.assertEqual(p.returncode, 2)
        self.assertIn('no command "nosuch"', p.stderr)

    def test_no_command_lists_the_commands(self):
        # As git: the commands, one line each, not only "a subcommand is required" (issue 39).
        p = run()
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertIn("usage: ddpscope COMMAND", p.stderr)
        listed = re.findall(r"(?m)^   ([a-z-]+) +\S", p.stderr)
        self.assertEqual(listed, ["analyze", "timing", "synth", "list-findings", "list-limits",
                                  "endpoint", "rping", "live", "replay", "help"])
        self.assertIn("ddpscope help COMMAND", p.stderr)
        # Each line is the command's own description, as `ddpscope help` shows it.
        self.assertIn("Analyze a pcap/pcapng capture", p.stderr)
        p = run("analyse", "x.pcap")
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith('ddpscope: "analyse" is not a command\n'), p.stderr)
        self.assertIn("   analyze ", p.stderr)

    def test_an_output_in_a_missing_folder_is_named_once(self):
        scenario = os.path.join(SAMPLES, "synthetic", "clean-rping.json")
        out = self.path("no/such/folder/x.pcap")
        p = run("synth", scenario, "-o", out)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.count(out), 1, p.stderr)
        self.assertEqual(p.stderr, f"ddpscope synth: cannot write {out}: No such file or "
                         "directory\n")
        if os.geteuid() != 0:
            return  # live needs root to open lo before it opens the file
        p = run("live", "-i", "lo", "-f", "tcp port 9", "-w", out, "--duration", "0.1", "-q")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr.count(out), 1, p.stderr)
        self.assertIn(f"cannot write {out}: No such file or directory", p.stderr)

    def test_port_out_of_range_names_the_range(self):
        for cmd in (["analyze", BOUNDS], ["live", "-i", "lo", "-c", "1"]):
            p = run(*cmd, "--port", 70000)
            self.assertEqual(p.returncode, 2, cmd)
            self.assertIn("70000 not in range 1 to 65535", p.stderr)

    def test_endpoint_script_checked_at_start_up(self):
        script = self.path("s.json")
        for text, says in (('{"ops": [{"op": "sned"}]}', 'op 0: unknown op "sned"'),
                           ('{"ops": [', "is not a JSON object"),
                           ('{"ops": [{"op": "advertise", "region": "nope"}]}',
                            'op 0: "region" names no region'),
                           ('{"opps": []}', 'unknown key "opps"')):
            with open(script, "w") as f:
                f.write(text)
            # No peer ever connects: the error must come at once, not at --timeout.
            p = run("endpoint", "listen", "-p", 0, "--script", script, "--timeout", 20)
            self.assertEqual(p.returncode, 2, text)
            self.assertIn(says, p.stderr, text)
            self.assertNotIn("listening", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
