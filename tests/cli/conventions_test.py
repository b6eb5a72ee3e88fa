#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Inputs and conventions Wireshark and rdma-core users have (issue 16): gzip captures, -r, a
BPF read filter that keeps frame numbers, live -w / -D, rping's -P / -d / -I, and replay's
--stream-index (apart from analyze's --stream IP:PORT, its old spelling refused by name), rping
-q, accepted without effect (issue 39). Drives the real binary."""
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

DDPSCOPE = sys.argv.pop(1)
SAMPLES = sys.argv.pop(1)
BOUNDS = os.path.join(SAMPLES, "synthetic", "fault-bounds.pcap")
CRC = os.path.join(SAMPLES, "siw", "siw-rping-crc.pcap")


def run(*args, timeout=60):
    return subprocess.run([DDPSCOPE, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def report(*args):
    p = run("analyze", *args, "--json")
    assert p.returncode in (0, 1), p.stderr
    rep = json.loads(p.stdout)
    rep.pop("capture", None)  # the file's name
    return rep


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conventions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_gzip_captures_analyse_as_their_plain_forms(self):
        for sample in (BOUNDS, CRC):
            gz = os.path.join(self.tmp.name, os.path.basename(sample) + ".gz")
            with open(sample, "rb") as src, gzip.open(gz, "wb") as dst:
                shutil.copyfileobj(src, dst)
            self.assertEqual(report(gz), report(sample), sample)
        # A truncated gzip stream: analysed up to the cut, said to be truncated.
        cut = os.path.join(self.tmp.name, "cut.pcap.gz")
        with open(gz, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        rep = report(cut)
        self.assertIn("capture.truncated-file", [f["code"] for f in rep["findings"]])
        # gzip of something that is not a capture.
        junk = os.path.join(self.tmp.name, "junk.gz")
        with gzip.open(junk, "wb") as f:
            f.write(b"not a capture at all, just text" * 4)
        p = run("analyze", junk)
        self.assertEqual(p.returncode, 2)
        self.assertIn("gzip-compressed, but not a capture inside", p.stderr)

    def test_r_is_the_file(self):
        self.assertEqual(report("-r", BOUNDS), report(BOUNDS))

    def test_read_filter_keeps_frame_numbers(self):
        full = report(BOUNDS)
        # Drop the TCP handshake (SYN and SYN-ACK): the MPA exchange and every finding remain,
        # at the frame numbers the whole file gives them.
        filtered = report(BOUNDS, "-Y", "tcp[tcpflags] & tcp-syn == 0")
        self.assertEqual([(f["code"], f["frame"]) for f in filtered["findings"]],
                         [(f["code"], f["frame"]) for f in full["findings"]])
        self.assertEqual(filtered["frames"], full["frames"] - 2, "SYN and SYN-ACK skipped")
        self.assertEqual(filtered["streams"][0]["last_frame"], full["streams"][0]["last_frame"])
        nothing = report(BOUNDS, "-Y", "udp")
        self.assertEqual(nothing["streams"], [])
        p = run("analyze", BOUNDS, "-Y", "tcp port")
        self.assertEqual(p.returncode, 2)
        self.assertIn('filter "tcp port"', p.stderr)

    def test_live_lists_interfaces_and_takes_w(self):
        p = run("live", "-D")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^\d+\. lo\b")
        p = run("live")
        self.assertEqual(p.returncode, 2)
        self.assertIn("-i INTERFACE is required (-D lists them)", p.stderr)
        if os.geteuid() != 0:
            self.skipTest("capturing on lo needs root")
        out = os.path.join(self.tmp.name, "w.pcap")
        p = run("live", "-i", "lo", "-f", "tcp port 9", "-w", out, "--duration", "0.3", "-q")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(out))

    def test_rping_persistent_server_debug_and_source(self):
        port = free_port()
        server = subprocess.Popen([DDPSCOPE, "rping", "-s", "-P", "-p", str(port), "-C", "2"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.3)
            first = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", 2, "-d")
            self.assertEqual(first.returncode, 0, first.stderr)
            self.assertIn("rping: connected", first.stderr)
            time.sleep(0.3)
            second = run("rping", "-c", "-a", "127.0.0.1", "-I", "127.0.0.1", "-p", port, "-C",
                         2)
            self.assertEqual(second.returncode, 0, second.stderr)
            self.assertIsNone(server.poll(), "a persistent server keeps serving")
        finally:
            server.kill()
            server.communicate()
        p = run("rping", "-c", "-a", "127.0.0.1", "-I", "192.0.2.1", "-p", port, "-C", 1,
                "--timeout", 5)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("bind to 192.0.2.1", p.stderr)
        p = run("rping", "-s", "-I", "127.0.0.1")
        self.assertEqual(p.returncode, 2)

    def test_one_stag_form_everywhere(self):
        # The 8-digit form GUI and tshark show (0x00003c03): JSON, text, the export's index and
        # file names (issue 16).
        eight = re.compile(r"^0x[0-9a-f]{8}$")
        out = os.path.join(self.tmp.name, "export")
        p = run("analyze", BOUNDS, "--json", "--export-dir", out)
        rep = json.loads(p.stdout)
        stags = [t["stag"] for s in rep["streams"] for t in s["stags"]]
        stags += [t["stag"] for t in rep.get("regions", [])]
        self.assertIn("0x00003c03", stags)
        for v in stags:
            self.assertRegex(v, eight)
        with open(os.path.join(out, "index.json")) as f:
            index = json.load(f)
        for e in index:
            self.assertRegex(e["stag"], eight)
            self.assertTrue(e["file"].endswith("-stag-" + e["stag"] + ".bin"), e["file"])
            self.assertTrue(os.path.exists(os.path.join(out, e["file"])))
        text = run("analyze", BOUNDS).stdout
        found = re.findall(r"STag (0x[0-9a-f]+)", text)
        self.assertTrue(found)
        for v in found:
            self.assertRegex(v, eight)

    def test_terminate_said_once(self):
        term = os.path.join(SAMPLES, "synthetic", "fault-terminate.pcap")
        lines = [l for l in run("analyze", term).stdout.splitlines() if "rdmap.terminate " in l]
        self.assertEqual(len(lines), 1)
        self.assertEqual(lines[0].count("peer sent Terminate"), 1, lines[0])
        self.assertEqual(lines[0].count("DDP / Tagged Buffer / Base or bounds violation"), 1,
                         lines[0])
        self.assertNotIn("sink would send", lines[0])

    def test_replay_names_its_stream_by_index(self):
        p = run("replay", "--help")
        self.assertIn("--stream-index", p.stdout)
        self.assertNotIn("--stream ", p.stdout)
        p = run("analyze", "--help")
        self.assertIn("--stream", p.stdout)
        # One meaning per option name (issue 39): --stream is IP:PORT wherever it is accepted;
        # replay's old spelling of the number is refused with the name to use.
        p = run("replay", BOUNDS, "--stream", 0, "--peer", "127.0.0.1:9")
        self.assertEqual(p.returncode, 2)
        self.assertIn("replay: the stream's number is --stream-index N (--stream, in analyze, "
                      "is an endpoint IP:PORT)", p.stderr)

    def test_rping_q_accepted_without_effect(self):
        # rdma-core's rping -q (a QP the program creates itself, not rdma_cm's): accepted, so
        # rping command lines run as they are, with a note that it changes nothing here.
        port = free_port()
        server = subprocess.Popen([DDPSCOPE, "rping", "-s", "-q", "-p", str(port), "-C", "1"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.3)
            client = run("rping", "-c", "-q", "-a", "127.0.0.1", "-p", port, "-C", 1)
            self.assertEqual(client.returncode, 0, client.stderr)
            self.assertEqual(server.wait(timeout=30), 0)
        finally:
            server.kill()
            _, server_err = server.communicate()
        note = "rping: -q has no effect here"
        self.assertIn(note, client.stderr)
        self.assertIn(note, server_err)
        self.assertNotIn(note, run("rping", "--help").stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
