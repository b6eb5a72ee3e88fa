#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Regions learned from the upper layer (issue 14): on the real NVMe-oF/RDMA capture every
tagged segment's STag has a region the NVMe decoder learned (advertisement with enforced bounds,
or the sink of a Read a command's buffer was read into), none is only observed, and nothing is
reported; without advertisements the same STags are only observed. A capture cut after the
handshakes, analysed with --port 4420, learns them from content and the port hint. The synthetic
fault sample draws each ULP finding at its frame. Drives the real binary."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

DDPSCOPE = sys.argv.pop(1)
SAMPLES = sys.argv.pop(1)
NVMEOF = os.path.join(SAMPLES, "siw", "siw-nvmeof.pcap")
FAULT = os.path.join(SAMPLES, "synthetic", "fault-nvmeof.pcap")
ISER = os.path.join(SAMPLES, "synthetic", "fault-iser.pcap")
RPCRDMA = os.path.join(SAMPLES, "synthetic", "fault-rpcrdma.pcap")
SMBDIRECT = os.path.join(SAMPLES, "synthetic", "fault-smbdirect.pcap")
CLEAN = os.path.join(SAMPLES, "synthetic", "clean-ulp.pcap")


def cut(src, dst, first):
    """Records from `first` (1-based) on of a classic little-endian pcap file."""
    with open(src, "rb") as f:
        data = f.read()
    out, pos, n = [data[:24]], 24, 0
    while pos + 16 <= len(data):
        incl = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        n += 1
        if n >= first:
            out.append(data[pos:pos + 16 + incl])
        pos += 16 + incl
    with open(dst, "wb") as f:
        f.write(b"".join(out))


def analyze(*args):
    p = subprocess.run([DDPSCOPE, "analyze", *map(str, args), "--json"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def used_stags(report):
    return [t for s in report["streams"] for t in s["stags"] if t["segments"] > 0]


class RealLabCaptures(unittest.TestCase):
    """The storage captures recorded in the siw lab (tests/interop/scenarios/storage.sh): every
    STag a tagged segment uses has a region learned from the ULP (or a Read Response's sink,
    named by its Read Request), with bounds enforced, and no finding."""

    def check_learned(self, path, ulp, commands):
        r = analyze(path)
        self.assertEqual(r["findings"], [])
        self.assertIn(ulp, [s.get("ulp", {}).get("name") for s in r["streams"]])
        used = used_stags(r)
        self.assertTrue(used)
        for t in used:
            self.assertIn(t["source"], ("advertisement", "read-request-sink"), t)
            self.assertEqual(t.get("ulp"), ulp, t)
            self.assertTrue(t["command"], t)
            if t["source"] == "advertisement":
                self.assertTrue(t["bounds_enforced"], t)
        names = {t["command"].split(" xid ")[0].split(" cid ")[0] for t in used}
        for c in commands:
            self.assertIn(c, names)

    def test_nfs_over_rdma(self):
        self.check_learned(os.path.join(SAMPLES, "siw", "siw-nfs-rdma.pcap"), "rpc-rdma",
                           ["NFSv3 READ", "NFSv3 WRITE"])

    def test_nvmeof_with_in_capsule_data(self):
        path = os.path.join(SAMPLES, "siw", "siw-nvmeof-inline.pcap")
        self.check_learned(path, "nvme-rdma", ["NVMe Read", "NVMe Write", "NVMe Identify"])
        # The 4 KiB write travels in its capsule: of the three writes, two are RDMA READ by the
        # target (Read Requests for 64 and 256 KiB).
        r = analyze(path)
        reads = [t for s in r["streams"] for t in s["stags"] if t["source"] == "read-request-sink"
                 and t["command"].startswith("NVMe Write")]
        self.assertEqual(sorted(t["length"] for t in reads), [65536, 262144])


class NvmeOf(unittest.TestCase):
    def test_every_tagged_segment_lands_in_a_region_learned_from_nvme(self):
        r = analyze(NVMEOF)
        self.assertEqual(r["findings"], [])
        self.assertEqual([s["ulp"]["name"] for s in r["streams"]], ["nvme-rdma", "nvme-rdma"])
        self.assertIn("qid 1", r["streams"][1]["ulp"]["detail"])
        self.assertIn("subnqn ddpscope-nqn", r["streams"][1]["ulp"]["detail"])
        stags = [t for s in r["streams"] for t in s["stags"]]
        self.assertEqual([t["stag"] for t in stags if t["source"] == "observed"], [])
        used = used_stags(r)
        self.assertEqual(len(used), 16)  # 14 RDMA Write STags, 2 Read Response sinks
        for t in used:
            self.assertEqual(t["ulp"], "nvme-rdma", t)
            self.assertTrue(t["command"], t)
            if t["source"] == "advertisement":
                self.assertTrue(t["bounds_enforced"], t)
                self.assertEqual(t["ulp_access"], ["remote_write"], t)
                self.assertEqual(t["invalidated_frame"], t["completed_frame"], t)
            else:
                # A Read Response lands in the controller's own buffer, named by its Read
                # Request (no ULP advertises it); the buffer it reads is the command's.
                self.assertEqual(t["source"], "read-request-sink", t)
                self.assertIn("the Read's sink", t["command"])
        read_sources = [t for t in stags if t.get("ulp_access") == ["remote_read"]]
        self.assertEqual(sorted(t["command"] for t in read_sources),
                         ["NVMe Write cid 100 nsid 1", "NVMe-oF Connect cid 0 qid 0"])
        for t in read_sources:
            self.assertEqual(t["source"], "advertisement")
            self.assertTrue(t["bounds_enforced"])

    def test_without_advertisements_the_stags_are_only_observed(self):
        r = analyze(NVMEOF, "--no-advertisements")
        writes = [t for t in used_stags(r) if t["source"] == "observed"]
        self.assertEqual(len(writes), 14)
        self.assertFalse(any("ulp" in t for t in used_stags(r)))

    def test_mid_stream_capture_learns_from_content_with_the_port_hint(self):
        with tempfile.TemporaryDirectory() as tmp:
            mid = os.path.join(tmp, "mid.pcap")
            cut(NVMEOF, mid, 140)  # after both handshakes and the I/O queue's Connect
            r = analyze(mid, "--port", 4420)
            io = [s for s in r["streams"] if s["client"].endswith(":50146")][0]
            self.assertIn("port 4420", io["ulp"]["detail"])
            learned = [t for t in io["stags"] if t["source"] == "advertisement"]
            self.assertEqual(len(learned), 5)
            # The queue id came with the Connect, before the cut: both names of opcode 0x02.
            self.assertIn("NVMe Read or Get Log Page cid 97 nsid 1", [t["command"] for t in learned])
            self.assertEqual([f for f in r["findings"] if f["severity"] != "note"], [])

    def test_fault_sample_draws_each_ulp_finding_at_its_frame(self):
        r = analyze(FAULT)
        got = {(f["code"], f["frame"]) for f in r["findings"]}
        for want in [("ulp.length-mismatch", 27), ("ddp.tagged.bounds", 35),
                     ("ulp.access-mismatch", 41), ("ulp.incomplete-transfer", 59),
                     ("ulp.invalidate-mismatch", 65), ("rdmap.stag-invalidated-use", 67)]:
            self.assertIn(want, got)
        access = [f for f in r["findings"] if f["code"] == "ulp.access-mismatch"][0]
        self.assertEqual(access["terminate"]["name"],
                         "RDMAP / Remote Protection / Access rights violation")


class Iser(unittest.TestCase):
    def test_fault_sample_draws_each_ulp_finding_at_its_frame(self):
        r = analyze(ISER)
        got = sorted((f["code"], f["frame"]) for f in r["findings"])
        self.assertEqual(got, [("ddp.tagged.bounds", 18), ("rdmap.stag-invalidated-use", 50),
                               ("ulp.access-mismatch", 24), ("ulp.incomplete-transfer", 42),
                               ("ulp.invalidate-mismatch", 48), ("ulp.length-mismatch", 57)])
        self.assertEqual(r["streams"][0]["ulp"]["name"], "iser")
        self.assertIn("iSCSI Login over iSER", r["streams"][0]["ulp"]["detail"])
        learned = {t["stag"]: t for t in r["streams"][0]["stags"] if t["source"] == "advertisement"}
        self.assertEqual(len(learned), 5)
        read = learned["0x00002001"]
        self.assertEqual(read["ulp"], "iser")
        self.assertEqual(read["command"], "SCSI READ(10) ITT 0x1f LUN 0")
        self.assertEqual(read["ulp_access"], ["remote_write"])
        self.assertTrue(read["bounds_enforced"])
        self.assertEqual(learned["0x00002002"]["ulp_access"], ["remote_read"])
        self.assertEqual(learned["0x00002002"]["command"], "SCSI WRITE(10) ITT 0x20 LUN 0")

    def test_without_advertisements_only_the_bounds_free_findings_remain(self):
        r = analyze(ISER, "--no-advertisements")
        self.assertFalse([f for f in r["findings"] if f["code"].startswith("ulp.")])
        self.assertFalse(any("ulp" in t for s in r["streams"] for t in s["stags"]))


class RpcRdma(unittest.TestCase):
    def test_fault_sample_draws_each_ulp_finding_at_its_frame(self):
        r = analyze(RPCRDMA)
        got = sorted((f["code"], f["frame"]) for f in r["findings"])
        self.assertEqual(got, [("ddp.tagged.bounds", 18), ("rdmap.stag-invalidated-use", 50),
                               ("ulp.access-mismatch", 24), ("ulp.incomplete-transfer", 42),
                               ("ulp.invalidate-mismatch", 48), ("ulp.length-mismatch", 57)])
        self.assertEqual(r["streams"][0]["ulp"]["name"], "rpc-rdma")
        learned = {t["stag"]: t for t in r["streams"][0]["stags"] if t["source"] == "advertisement"}
        self.assertEqual(len(learned), 5)
        self.assertEqual(learned["0x00003001"]["command"], "NFSv3 READ xid 0x101")
        self.assertEqual(learned["0x00003001"]["ulp_access"], ["remote_write"])
        self.assertEqual(learned["0x00003002"]["command"], "NFSv3 WRITE xid 0x102")
        self.assertEqual(learned["0x00003002"]["ulp_access"], ["remote_read"])


class SmbDirect(unittest.TestCase):
    def test_fault_sample_draws_each_ulp_finding_at_its_frame(self):
        r = analyze(SMBDIRECT)
        got = sorted((f["code"], f["frame"]) for f in r["findings"])
        self.assertEqual(got, [("ddp.tagged.bounds", 18), ("rdmap.stag-invalidated-use", 52),
                               ("ulp.access-mismatch", 26), ("ulp.incomplete-transfer", 44),
                               ("ulp.invalidate-mismatch", 50), ("ulp.length-mismatch", 61)])
        self.assertEqual(r["streams"][0]["ulp"]["name"], "smb-direct")
        learned = {t["stag"]: t for t in r["streams"][0]["stags"] if t["source"] == "advertisement"}
        self.assertEqual(len(learned), 5)
        self.assertEqual(learned["0x00004001"]["command"], "SMB2 READ mid 1")
        self.assertEqual(learned["0x00004001"]["ulp_access"], ["remote_write"])
        # The WRITE came in two fragments: its descriptor was in the second.
        self.assertEqual(learned["0x00004002"]["command"], "SMB2 WRITE mid 2")
        self.assertEqual(learned["0x00004002"]["ulp_access"], ["remote_read"])


class CleanUlp(unittest.TestCase):
    def test_no_finding_where_the_ulp_says_less_or_uses_less(self):
        """Immediate data, a residual underflow, an unused reply chunk, a short NFS READ, an
        interim SMB2 response, a fragmented WRITE: every buffer learned, nothing reported."""
        r = analyze(CLEAN)
        self.assertEqual(r["findings"], [])
        self.assertEqual([s["ulp"]["name"] for s in r["streams"]],
                         ["iser", "rpc-rdma", "smb-direct"])
        learned = [t for s in r["streams"] for t in s["stags"] if t["source"] == "advertisement"]
        self.assertEqual(len(learned), 10)
        for t in learned:
            self.assertTrue(t["bounds_enforced"], t)
            self.assertTrue(t["command"], t)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]])
