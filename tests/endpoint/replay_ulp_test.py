#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope replay` of the storage samples (NVMe-oF, iSER, NFS/RDMA, SMB Direct) over loopback
against ddpscope's own endpoint: the capture's server side is replayed by one `replay --side
server` and its client side by another, so each side's live peer is the other. Clean captures
replay without a difference; the fault samples' differences are each one their faults explain;
an injected fault is a DIFF that names the ULP command."""
import json
import os
import re
import struct
import tempfile
import unittest

from ddpscope_cli import free_port, start, run  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples")


def sample(name):
    return os.path.join(SAMPLES, name)


def diffs(text):
    return [l for l in text.splitlines() if l.startswith("DIFF ")]


class ReplayUlp(unittest.TestCase):
    def pair(self, pcap, *extra, server_extra=(), client_extra=(), json_client=False):
        """Replays both sides of `pcap` against each other; (server stdout, client result)."""
        port = free_port()
        common = ["--peer", f"127.0.0.1:{port}", *extra]
        # A command the client leaves out: the server gives up on it (1.5 s) before the client
        # gives up on its data and completion (2 x 1 s) and sends the next one, which the server,
        # waiting for it up to 1.5 s more, answers while the client waits for the answer.
        server = start("replay", pcap, "--side", "server", "--wait-ms", 1500, *common,
                       *server_extra)
        first = server.stdout.readline()
        if first.startswith("== stream"):  # several streams: each is headed by its number
            first = server.stdout.readline()
        self.assertIn("waiting for the live client", first)
        client = run("replay", pcap, "--side", "client", "--wait-ms", 1000, *common, *client_extra,
                     *(["--json"] if json_client else []), timeout=120)
        out, err = server.communicate(timeout=120)
        return out, server.returncode, client

    def test_clean_captures_replay_without_a_difference(self):
        for pcap, args, ulp in (("siw/siw-nvmeof.pcap", [], "nvme-rdma"),
                                ("siw/siw-nvmeof-inline.pcap", [], "nvme-rdma"),
                                ("siw/siw-nfs-rdma.pcap", ["--all-streams"], "rpc-rdma"),
                                # Recorded in the lab VM (admin and I/O queue side by side).
                                ("siw/replay/lab-replay-nvmeof.pcap", ["--all-streams"],
                                 "nvme-rdma"),
                                # The admin queue of the fault sample (its faults are all on
                                # the I/O queue, below).
                                ("synthetic/fault-nvmeof.pcap", [], "nvme-rdma")):
            with self.subTest(pcap=pcap):
                out, rc, client = self.pair(sample(pcap), *args)
                self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
                self.assertEqual(rc, 0, out)
                self.assertIn(f"ULP: {ulp}", client.stdout)
                self.assertIn(" 0 differences", client.stdout)
                self.assertIn(" 0 differences", out)

    # ddp.tagged.bounds: a second Write overlaps the end of the first's buffer; when both are
    # placed before the first is looked at, the first's octets are the second's there.
    OVERLAP = {"iser": "SCSI READ\\(10\\) ITT 0x1f LUN 0", "rpcrdma": "NFSv3 READ xid 0x101",
               "smbdirect": "SMB2 READ mid 1", "nvmeof": "NVMe Read cid 1 nsid 1"}

    # Each fault sample's differences, and the fault of the sample (its .json) that explains
    # each: the replaying endpoint is a compliant Data Sink, the captured peer was not.
    EXPLAINED = {
        # The I/O queue (stream 1) of the NVMe-oF sample.
        "nvmeof": [
            (r"DIFF #1[56] server->client: expected (NVMe Read cid 4 nsid 1 \(response\)|"
             r"RDMA Write for NVMe Read cid 4 nsid 1); .*\(connection ended\)", "client"),
            (r"DIFF extra: the live peer sent Terminate RDMAP / Remote Protection / STag cannot "
             r"be invalidated, not in the capture", "server"),
            (r"DIFF #8 client->server: expected RDMA Read Response for NVMe Write cid 2 nsid 1; "
             r"data differs at offset 0x0 of 8192", "server"),
        ],
        "iser": [
            # ulp.invalidate-mismatch: the response invalidates an STag the initiator never
            # registered; the client's endpoint answers with a Terminate, ending the stream.
            (r"DIFF #1[78] server->client: expected (SCSI READ\(10\) ITT 0x22 LUN 0 \(response\)|"
             r"RDMA Write for SCSI READ\(10\) ITT 0x22 LUN 0); .*\(connection ended\)", "client"),
            (r"DIFF #19 client->server: expected SCSI READ\(10\) ITT 0x23 LUN 0; SCSI READ\(10\) "
             r"ITT 0x23 LUN 0: the live peer did not send it \(connection ended\)", "server"),
            (r"DIFF extra: the live peer sent Terminate RDMAP / Remote Protection / STag cannot "
             r"be invalidated, not in the capture", "server"),
            # ulp.access-mismatch: the target Writes into the WRITE(10)'s buffer before it
            # reads it; the synthetic capture's Read Response has the data from before.
            (r"DIFF #10 client->server: expected RDMA Read Response for SCSI WRITE\(10\) ITT 0x20 "
             r"LUN 0; data differs at offset 0x0 of 8192", "server"),
        ],
        "rpcrdma": [
            (r"DIFF #1[78] server->client: expected (NFSv3 READ xid 0x104 \(response\)|"
             r"RDMA Write for NFSv3 READ xid 0x104); .*\(connection ended\)", "client"),
            (r"DIFF #19 client->server: expected NFSv3 READ xid 0x105; NFSv3 READ xid 0x105: the "
             r"live peer did not send it \(connection ended\)", "server"),
            (r"DIFF extra: the live peer sent Terminate RDMAP / Remote Protection / STag cannot "
             r"be invalidated, not in the capture", "server"),
            (r"DIFF #10 client->server: expected RDMA Read Response for NFSv3 WRITE xid 0x102; "
             r"data differs at offset 0x0 of 8192", "server"),
        ],
        "smbdirect": [
            (r"DIFF #1[89] server->client: expected (SMB2 READ mid 4 \(response\)|"
             r"RDMA Write for SMB2 READ mid 4); .*\(connection ended\)", "client"),
            (r"DIFF #20 client->server: expected SMB2 READ mid 5; SMB2 READ mid 5: the live peer "
             r"did not send it \(connection ended\)", "server"),
            (r"DIFF extra: the live peer sent Terminate RDMAP / Remote Protection / STag cannot "
             r"be invalidated, not in the capture", "server"),
            (r"DIFF #11 client->server: expected RDMA Read Response for SMB2 WRITE mid 2; data "
             r"differs at offset 0x0 of 8192", "server"),
        ],
    }

    def test_fault_samples_differ_only_where_their_faults_say(self):
        for name, explained in self.EXPLAINED.items():
            with self.subTest(sample=name):
                args = ["--stream-index", 1] if name == "nvmeof" else []
                out, rc, client = self.pair(sample(f"synthetic/fault-{name}.pcap"), *args)
                self.assertEqual(rc, 1, out)
                self.assertEqual(client.returncode, 1, client.stdout + client.stderr)
                overlap = re.compile(rf"DIFF #[24] server->client: expected RDMA Write for "
                                     rf"{self.OVERLAP[name]}; data differs at offset 0xf00 of "
                                     rf"4096")
                for side, text in (("server", out), ("client", client.stdout)):
                    rules = [re.compile(r) for r, s in explained if s == side]
                    for line in diffs(text):
                        self.assertTrue(any(r.fullmatch(line) for r in rules + [overlap]),
                                        f"{side}: unexplained {line!r}\n{text}")
                    for r in rules:
                        self.assertTrue(any(r.fullmatch(l) for l in diffs(text)),
                                        f"{side}: no {r.pattern!r}\n{text}")

    def test_injected_faults_name_the_command(self):
        pcap = sample("siw/siw-nvmeof.pcap")
        # The target's data for Identify cid 14 corrupted: the host names the command.
        out, rc, client = self.pair(pcap, server_extra=["--fault", "corrupt:20"],
                                    json_client=True)
        self.assertEqual(client.returncode, 1, client.stdout + client.stderr)
        rep = json.loads(client.stdout)
        self.assertEqual(rep["differences"], 1)
        (stream,) = rep["streams"]
        self.assertEqual(stream["ulp"], "nvme-rdma")
        # "frame": the captured message's first frame. Frame 27's TCP payload, read by hand:
        # MPA length 0x05a2, DDP control 0x81 (tagged, not last), RDMAP 0x40 (RDMA Write),
        # from the target's port 4420.
        self.assertEqual(stream["differences"], [{
            "message": 20, "direction": "server->client",
            "expected": "RDMA Write for NVMe Identify cid 14 (admin)",
            "difference": "data differs at offset 0x0 of 4096", "frame": 27}])
        self.assertEqual(rc, 0, out)
        # The host does not send Get Log Page cid 15: the target names it, and skips its data.
        out, rc, client = self.pair(pcap, client_extra=["--fault", "skip:22"])
        self.assertEqual(rc, 1, out)
        self.assertEqual(diffs(out), [
            "DIFF #22 client->server: expected NVMe Get Log Page cid 15 (admin); NVMe Get Log "
            "Page cid 15 (admin): the live peer did not send it"])
        self.assertIn("SKIP #23 server->client RDMA Write for NVMe Get Log Page cid 15 (admin)",
                      out)
        self.assertEqual(diffs(client.stdout), [
            "DIFF #23 server->client: expected RDMA Write for NVMe Get Log Page cid 15 (admin); "
            "the live peer sent nothing",
            "DIFF #24 server->client: expected NVMe Get Log Page cid 15 (admin) (response); "
            "NVMe Get Log Page cid 15 (admin) (response): the live peer did not send it"])

    def test_faults_the_host_terminates_are_named_before_what_it_never_sent(self):
        pcap = sample("siw/siw-nvmeof.pcap")
        # Our message #20 is the RDMA Write of Identify cid 14's data (4096 octets into the
        # host's 4096), #21 its response, a Send with Invalidate. Our endpoint replaying the
        # host is a compliant Data Sink: it answers each fault with the Terminate the rule layer
        # names, and the replayed target reports that Terminate, then the command the host
        # never sent because the stream ended, and stops there.
        for fault, term in (("overrun:20", "DDP / Tagged Buffer / Base or bounds violation"),
                            ("invalidate-key:21",
                             "RDMAP / Remote Protection / STag cannot be invalidated")):
            with self.subTest(fault=fault):
                out, rc, client = self.pair(pcap, server_extra=["--fault", fault])
                self.assertEqual(rc, 1, out)
                self.assertIn(f"live: we sent Terminate {term}", client.stdout)
                self.assertEqual(diffs(out), [
                    f"DIFF extra: the live peer sent Terminate {term}, not in the capture",
                    "DIFF #22 client->server: expected NVMe Get Log Page cid 15 (admin); NVMe Get "
                    "Log Page cid 15 (admin): the live peer did not send it (connection ended)"])
                self.assertIn("22 of 57 captured messages replayed (the connection ended), "
                              "2 differences", out)

    def test_fault_option_is_checked(self):
        for bad in ("overrun", "overrun:0", "overrun:x", "bogus:3", "skip:3:", "skip:3:1x"):
            with self.subTest(fault=bad):
                r = run("replay", sample("siw/siw-nvmeof.pcap"), "--peer", "127.0.0.1:9",
                        "--fault", bad)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("--fault wants KIND:N[:STREAM]", r.stderr)

    @staticmethod
    def nvme_session(path):
        """An NVMe-oF session written by `ddpscope synth`: the admin queue's Connect (CNTLID
        FFFFh: any) answered with controller ID 1, then an I/O queue whose Connect names
        controller 1, and a Read on it."""
        def connect(qid, cntlid):
            sqe = struct.pack("<BBHB3x16xQI3xB", 0x7F, 0x40, 0, 0x01, 0, 1024, 0x01)
            sqe += struct.pack("<III12x", qid << 16, 31, 5000 if qid == 0 else 0)
            data = bytearray(1024)
            data[0:16] = bytes(range(16))
            data[16:18] = struct.pack("<H", cntlid)
            data[256:256 + 12] = b"nqn.test:sub"
            data[512:512 + 13] = b"nqn.test:host"
            return (sqe + bytes(data)).hex()

        def cqe(cid, dw0=0):
            return struct.pack("<IIHHHH", dw0, 0, 0, 0, cid, 0).hex()

        def cm(qid):
            return struct.pack("<HHHHH22x", 0, qid, 32, 31, 0).hex()

        # Read cid 7 nsid 1: a keyed data block (le64 address, le24 length, le32 key,
        # identifier 40h) of 4096 octets under key 0x1001; CDW12 NLB 7 (eight 512-octet blocks).
        read = struct.pack("<BBHI16xQ", 0x02, 0x40, 7, 1, 0x7F0001000000)
        read += (4096).to_bytes(3, "little") + (0x1001).to_bytes(4, "little") + b"\x40"
        read += struct.pack("<IIIIII", 0, 0, 7, 0, 0, 0)
        conns = []
        for port, qid in ((40001, 0), (40002, 1)):
            conns.append({"client": {"ip": "10.0.0.1", "port": port, "mss": 1460},
                          "server": {"ip": "10.0.0.2", "port": 4420, "mss": 1460},
                          "mpa": {"revision": 2, "enhanced": True, "client_ird": 16,
                                  "client_ord": 16, "server_ird": 16, "server_ord": 16,
                                  "client_private_data": {"hex": cm(qid)},
                                  "server_private_data": {"hex": struct.pack(
                                      "<HH28x", 0, 32).hex()}}})
        ops = [{"op": "send", "connection": 0, "from": "client", "hex": connect(0, 0xFFFF)},
               {"op": "send", "connection": 0, "from": "server", "hex": cqe(0, 1)},
               {"op": "send", "connection": 1, "from": "client", "hex": connect(1, 1)},
               {"op": "send", "connection": 1, "from": "server", "hex": cqe(0)},
               {"op": "send", "connection": 1, "from": "client", "hex": read.hex()},
               {"op": "write", "connection": 1, "from": "server", "stag": "0x00001001",
                "to": "0x7f0001000000", "size": 4096},
               {"op": "send", "connection": 1, "from": "server", "hex": cqe(7)}]
        scenario = path + ".json"
        with open(scenario, "w") as f:
            json.dump({"name": "nvme-session", "description": "admin and I/O queue",
                       "connections": conns, "operations": ops}, f)
        r = run("synth", scenario, "-o", path)
        assert r.returncode == 0, r.stdout + r.stderr

    def test_whole_session_carries_the_controller_id(self):
        with tempfile.TemporaryDirectory() as tmp:
            pcap = os.path.join(tmp, "nvme-session.pcap")
            self.nvme_session(pcap)
            text = run("analyze", pcap).stdout
            self.assertIn("qid 1, hrqsize 32, hsqsize 31, crqsize 32; Connect sqsize 31", text)
            self.assertIn("Findings: 0 ", text)
            # Both streams, in captured order, without a difference.
            out, rc, client = self.pair(pcap, "--all-streams", json_client=True)
            self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
            self.assertEqual(rc, 0, out)
            rep = json.loads(client.stdout)
            self.assertEqual([s["stream"] for s in rep["streams"]], [0, 1])
            self.assertEqual(rep["streams"][0]["nvme_cntlid"], 1)
            self.assertEqual(rep["differences"], 0)
            # The live controller gives another ID (its Connect response's DW0 changed): no
            # difference (nvme.cntlid), and the I/O queue's Connect carries the live one.
            out, rc, client = self.pair(pcap, "--all-streams", server_extra=["--fault", "corrupt:2"])
            self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
            self.assertIn("NVMe-oF controller ID 0xfe (the live controller's) goes into this "
                          "stream's Connect", client.stdout)
            self.assertEqual(rc, 0, out)

    def test_ignore_names_only_known_fields(self):
        r = run("replay", sample("siw/siw-nvmeof.pcap"), "--help")
        self.assertIn("nvme.cntlid (default)", r.stdout)
        self.assertIn("smb2.session_id (default)", r.stdout)
        r = run("replay", sample("siw/siw-nvmeof.pcap"), "--peer", "127.0.0.1:1", "--ignore",
                "nvme.nonsense")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nvme.nonsense", r.stderr)


if __name__ == "__main__":
    unittest.main()
