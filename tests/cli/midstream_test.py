#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Mid-stream captures (issue 16, "Trust"): a capture cut after the MPA handshake, analysed with
--port, frames every FPDU the whole capture has after the cut whichever CRC setting the stream
uses, and says which one framed (mpa.crc-detected); told the wrong setting, it says where
framing gave up, how many octets went unframed and what to try (mpa.no-fpdu-boundary). Drives
the real binary on bundled samples cut in two."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

DDPSCOPE = sys.argv.pop(1)
SAMPLES = sys.argv.pop(1)
SEND_BW = os.path.join(SAMPLES, "siw", "siw-send-bw.pcap")  # CRC off, port 18515
RPING_CRC = os.path.join(SAMPLES, "siw", "siw-rping-crc.pcap")  # CRC on, port 7174


def cut(src, dst, first, last=None):
    """Records first..last (1-based, inclusive) of a classic pcap file."""
    with open(src, "rb") as f:
        data = f.read()
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, pos, n = [data[:24]], 24, 0
    while pos + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[pos + 8:pos + 12])[0]
        n += 1
        if n >= first and (last is None or n <= last):
            out.append(data[pos:pos + 16 + incl])
        pos += 16 + incl
    with open(dst, "wb") as f:
        f.write(b"".join(out))


def run(*args):
    return subprocess.run([DDPSCOPE, *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def analyze_json(*args):
    p = run("analyze", *args, "--json")
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def fpdus_by_stream(report):
    return {s["client"]: [d["fpdus"] for d in s["directions"]] for s in report["streams"]}


class MidStream(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def split(self, sample, after):
        """The sample's frames up to `after` (with the handshakes) and the mid-stream rest."""
        head = os.path.join(self.tmp.name, "head.pcap")
        tail = os.path.join(self.tmp.name, "mid.pcap")
        cut(sample, head, 1, after)
        cut(sample, tail, after + 1)
        return head, tail

    def assert_frames_the_rest(self, sample, after, port, crc):
        head, mid = self.split(sample, after)
        whole = fpdus_by_stream(analyze_json(sample))
        before = fpdus_by_stream(analyze_json(head))
        rep = analyze_json(mid, "--port", port)
        self.assertTrue(rep["streams"])
        for s in rep["streams"]:
            self.assertTrue(s["mpa"]["mid_stream"])
            self.assertEqual(s["mpa"]["crc"], crc)
            for d, dw, db in zip(s["directions"], whole[s["client"]],
                                 before.get(s["client"], [0, 0])):
                self.assertEqual(d["fpdus"], dw - db, s["client"])
                self.assertEqual(d["bytes_unframed"], 0, s["client"])
        codes = [f["code"] for f in rep["findings"]]
        self.assertNotIn("mpa.no-fpdu-boundary", codes)
        detected = [f for f in rep["findings"] if f["code"] == "mpa.crc-detected"]
        self.assertTrue(detected)
        for f in detected:
            self.assertEqual(f["severity"], "note")
            self.assertIn("framed with CRC " + ("on" if crc else "off"), f["message"])
        self.assertEqual(rep["summary"]["errors"], 0)
        self.assertEqual(rep["summary"]["warnings"], 0)
        return mid

    def test_crc_off_stream_is_framed_without_a_crc_setting(self):
        mid = self.assert_frames_the_rest(SEND_BW, 23, 18515, crc=False)
        # The text report says the same.
        text = run("analyze", mid, "--port", "18515")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("mpa.crc-detected", text.stdout)
        self.assertIn("framed with CRC off", text.stdout)
        self.assertIn("CRC off", text.stdout)
        # auto is the default: saying it changes nothing.
        self.assertEqual(run("analyze", mid, "--port", "18515", "--mid-stream-crc", "auto").stdout,
                         text.stdout)

    def test_crc_on_stream_is_framed_without_a_crc_setting(self):
        self.assert_frames_the_rest(RPING_CRC, 6, 7174, crc=True)

    def test_the_wrong_crc_setting_says_where_framing_gave_up_and_what_to_try(self):
        for sample, after, port, told, hint in (
                (SEND_BW, 23, 18515, "true", "try --mid-stream-crc false"),
                (RPING_CRC, 6, 7174, "false", "try --mid-stream-crc true")):
            with self.subTest(sample=os.path.basename(sample), told=told):
                _, mid = self.split(sample, after)
                rep = analyze_json(mid, "--port", port, "--mid-stream-crc", told)
                lost = [f for f in rep["findings"] if f["code"] == "mpa.no-fpdu-boundary"]
                unframed = sum(d["bytes_unframed"] for s in rep["streams"]
                               for d in s["directions"])
                self.assertGreater(unframed, 0)
                self.assertEqual(sum(d["fpdus"] for s in rep["streams"]
                                     for d in s["directions"]), 0)
                # One per direction that carried octets.
                carried = sum(1 for s in rep["streams"] for d in s["directions"]
                              if d["tcp_bytes"] > 0)
                self.assertEqual(len(lost), carried)
                said = 0
                for f in lost:
                    self.assertEqual(f["severity"], "warning")
                    self.assertNotIn("terminate", f)
                    self.assertIn(hint, f["message"])
                    # Markers are never located mid-stream: not suggested, the limit said.
                    self.assertNotIn("--mid-stream-markers", f["message"])
                    self.assertIn("MPA markers is framed only from its handshake", f["message"])
                    said += int(f["message"].split(": ", 1)[1].split(" octets unframed")[0])
                self.assertEqual(said, unframed)
                self.assertNotIn("mpa.crc-detected", [f["code"] for f in rep["findings"]])
                text = run("analyze", mid, "--port", port, "--mid-stream-crc", told)
                self.assertIn("mpa.no-fpdu-boundary", text.stdout)
                self.assertIn(hint, text.stdout)

    def test_mid_stream_crc_takes_auto_true_or_false_only(self):
        p = run("analyze", SEND_BW, "--port", "18515", "--mid-stream-crc", "maybe")
        self.assertEqual(p.returncode, 2)
        self.assertIn("auto, true or false", p.stderr)
        self.assertIn("default auto", run("analyze", "--help").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
