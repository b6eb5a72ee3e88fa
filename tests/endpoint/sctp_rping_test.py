#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 13's acceptance line over a real SCTP stack: `ddpscope rping --llp sctp -s` and `-c`
complete over 127.0.0.1 with verified data (usrsctp over raw IPv4 where the kernel has no SCTP:
needs root), captured on lo by `ddpscope live`; the capture is real SCTP as tshark reads it
(CRC32c good on every packet, the Adaptation Layer Indication in INIT and INIT-ACK, two session
control messages on PPID 17, one PPID 16 message per DDP segment), and the analyzer's SCTP LLP
finds one DDP stream with every segment and message and no finding. `--sctp-stack kernel`
where the kernel has no SCTP fails with a clear message."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from ddpscope_cli import free_port, run, start, wait_port_file  # noqa: E402

TSHARK = shutil.which("tshark")
PPID_DDP_SEGMENT = 16
PPID_SESSION_CONTROL = 17
ADAPTATION_CODE_POINT_DDP = 1  # wire::kAdaptationCodePointDdp (RFC 5043 §5.1, §12)


def kernel_has_sctp():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).close()
        return True
    except OSError:
        return False


def tshark_fields(pcap, *fields, display_filter=None):
    cmd = [TSHARK, "-r", pcap, "-o", "sctp.checksum:CRC-32C", "-T", "fields"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    return [line.split("\t") for line in out.stdout.splitlines()]


@unittest.skipUnless(os.geteuid() == 0, "usrsctp over raw IP and the capture on lo need root")
class SctpRping(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def rping(self, *extra, count=3, size=1000, pcap=None):
        """rping -s / -c over SCTP; with `pcap`, captured by `ddpscope live -f sctp`."""
        port = free_port()
        live = None
        if pcap:
            live = start("live", "-i", "lo", "-f", f"sctp port {port}", "--write", pcap,
                         "--duration", "60", "-q")
            time.sleep(0.5)  # the capture is open before the first INIT
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", count, "--llp",
                       "sctp", *extra)
        time.sleep(0.3)
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", count, "-S", size,
                     "-v", "--llp", "sctp", *extra, timeout=60)
        _, serr = server.communicate(timeout=30)
        if live:
            time.sleep(0.5)  # SHUTDOWN ... SHUTDOWN COMPLETE
            live.send_signal(signal.SIGINT)
            live.communicate(timeout=30)
        return client, server.returncode, serr

    def test_rping_completes_with_verified_data(self):
        for stack in ("user", "auto"):
            with self.subTest(stack=stack):
                client, server_rc, serr = self.rping("--sctp-stack", stack)
                self.assertEqual(client.returncode, 0, client.stderr)
                self.assertEqual(server_rc, 0, serr)
                for i in range(3):
                    self.assertIn(f"ping data: rdma-ping-{i}: ", client.stdout)

    def test_large_buffers_segment_to_the_path_mtu(self):
        client, server_rc, serr = self.rping("--sctp-stack", "user", count=2, size=200000)
        self.assertEqual(client.returncode, 0, client.stderr)
        self.assertEqual(server_rc, 0, serr)
        self.assertIn("rping: 2 iterations verified", client.stdout)

    @unittest.skipUnless(TSHARK, "tshark not installed")
    def test_capture_is_real_sctp(self):
        pcap = os.path.join(self.tmp.name, "rping-sctp.pcap")
        count = 3
        client, server_rc, serr = self.rping("--sctp-stack", "user", count=count, pcap=pcap)
        self.assertEqual(client.returncode, 0, client.stderr)
        self.assertEqual(server_rc, 0, serr)
        rows = tshark_fields(pcap, "sctp.checksum.status", "sctp.chunk_type",
                             "sctp.data_payload_proto_id", "sctp.data_u_bit", "data.data",
                             "sctp.srcport")
        self.assertTrue(rows, "nothing captured")
        # Every packet's CRC32c verifies (usrsctp computes it on loopback too).
        self.assertEqual({r[0] for r in rows}, {"1"}, rows[:5])
        chunk_types = [t for r in rows for t in r[1].split(",")]
        for t in ("1", "2", "10", "11", "0", "3", "7"):  # INIT .. DATA SACK SHUTDOWN
            self.assertIn(t, chunk_types)
        ppids = [int(p) for r in rows if r[2] for p in r[2].split(",")]
        # Session control: one Initiate, one Accept, and a Session Terminate from the side that
        # closed (RFC 5043 §6.1; both may). DDP segments (size 1000 < MULPDU, one segment per
        # message): the initiator's Write RTR, per iteration its two advertisement Sends and one
        # Read Response; the responder's Read Request, RDMA Write, two go-aheads.
        self.assertIn(ppids.count(PPID_SESSION_CONTROL), (3, 4), ppids)
        self.assertEqual(ppids.count(PPID_DDP_SEGMENT), 1 + count * 3 + count * 4, ppids)
        self.assertEqual(set(ppids), {PPID_DDP_SEGMENT, PPID_SESSION_CONTROL})
        # RFC 5043 §4, §10 read back with tshark's own SCTP fields: every DATA chunk unordered
        # (U = 1); every user message opens with its DDP-SSN, 0, 1, 2, ... per direction (tshark
        # hands the PPID 16/17 payloads to its data dissector: data.data is the whole message).
        u_bits = [b for r in rows if r[3] for b in r[3].split(",")]
        self.assertEqual(len(u_bits), len(ppids))
        self.assertEqual(set(u_bits), {"1"}, u_bits)
        by_side = {}
        for r in rows:
            for d in (r[4].split(",") if r[4] else []):
                by_side.setdefault(r[5], []).append(int(d[:4], 16))
        self.assertEqual(len(by_side), 2, by_side)
        self.assertEqual(sum(len(v) for v in by_side.values()), len(ppids))
        for side, ssns in by_side.items():
            self.assertEqual(sorted(set(ssns)), list(range(len(set(ssns)))), side)
        # The Adaptation Layer Indication in INIT and INIT-ACK (RFC 5061), DDP's code point.
        ali = tshark_fields(pcap, "sctp.chunk_type", "sctp.adaptation_layer_indication",
                            display_filter="sctp.chunk_type == 1 || sctp.chunk_type == 2")
        self.assertEqual(sorted(r[0] for r in ali), ["1", "2"], ali)
        for r in ali:
            self.assertEqual(int(r[1], 0), ADAPTATION_CODE_POINT_DDP, r)
        # The analyzer's SCTP LLP: one DDP stream, every PPID 16 message one DDP segment, rping's
        # messages (per iteration 2 + 1 and 1 + 1 + 2, and the RTR), no finding at all.
        rep = json.loads(run("analyze", pcap, "--json").stdout)
        self.assertEqual(rep["summary"]["frames_not_tcp"], 0)
        self.assertEqual(len(rep["streams"]), 1, rep["streams"])
        stream = rep["streams"][0]
        if "llp" in stream:  # the report's LLP fields (branch sctp's JSON)
            self.assertEqual(stream["llp"], "sctp")
        segments = sum(o["segments"] for d in stream["directions"]
                       for o in d["opcodes"].values())
        self.assertEqual(segments, ppids.count(PPID_DDP_SEGMENT))
        self.assertEqual(rep["summary"]["messages"], 1 + count * 3 + count * 4)
        self.assertEqual(rep["findings"], [])

    def rping_over_udp(self, name, server_udp, client_udp):
        """rping -s / -c over usrsctp's SCTP in UDP (RFC 6951), two rounds, the server on UDP
        port `server_udp` and the client on `client_udp`, captured on the server's UDP port."""
        pcap = os.path.join(self.tmp.name, name)
        port = free_port()
        live = start("live", "-i", "lo", "-f", f"udp port {server_udp}", "--write", pcap,
                     "--duration", "60", "-q")
        time.sleep(0.5)
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 2, "--llp", "sctp",
                       "--sctp-udp-port", server_udp)
        time.sleep(0.3)
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", 2, "-v", "--llp", "sctp",
                     "--sctp-udp-port", client_udp, "--sctp-peer-udp-port", server_udp,
                     timeout=60)
        _, serr = server.communicate(timeout=30)
        time.sleep(0.5)
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stderr)
        self.assertEqual(server.returncode, 0, serr)
        return pcap

    @unittest.skipUnless(TSHARK, "tshark not installed")
    def test_rping_over_udp_encapsulation(self):
        """usrsctp's fallback: SCTP over UDP (RFC 6951), the server on 9899, the client on another
        UDP port (one host)."""
        pcap = self.rping_over_udp("rping-sctp-udp.pcap", 9899, 9898)
        rows = tshark_fields(pcap, "udp.port", "sctp.checksum.status",
                             "sctp.data_payload_proto_id", display_filter="sctp")
        self.assertTrue(rows, "no SCTP over UDP captured")
        self.assertEqual({r[1] for r in rows}, {"1"})
        ppids = [int(p) for r in rows if r[2] for p in r[2].split(",")]
        self.assertIn(ppids.count(PPID_SESSION_CONTROL), (3, 4), ppids)  # and the Terminate
        self.assertEqual(ppids.count(PPID_DDP_SEGMENT), 1 + 2 * 3 + 2 * 4, ppids)

    @unittest.skipUnless(TSHARK, "tshark not installed")
    def test_rping_over_udp_on_other_ports_is_analysed(self):
        """SCTP in UDP on ports other than 9899 (RFC 6951 §5.1 lets them be configured): the
        analyzer recognises it by the packets' CRC32c (issue 41). tshark reads it as SCTP only
        when told (-d udp.port==...,sctp): its segments are what the analyzer counts."""
        pcap = self.rping_over_udp("rping-sctp-udp-other.pcap", 5801, 5802)
        cmd = [TSHARK, "-r", pcap, "-d", "udp.port==5801,sctp", "-o", "sctp.checksum:CRC-32C",
               "-Y", "sctp", "-T", "fields", "-e", "sctp.checksum.status", "-e",
               "sctp.data_payload_proto_id"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = [line.split("\t") for line in out.stdout.splitlines()]
        self.assertTrue(rows, "tshark found no SCTP in UDP")
        self.assertEqual({r[0] for r in rows}, {"1"})
        ppids = [int(p) for r in rows if r[1] for p in r[1].split(",")]
        rep = json.loads(run("analyze", pcap, "--json").stdout)
        self.assertEqual(len(rep["streams"]), 1, rep["summary"])
        stream = rep["streams"][0]
        self.assertEqual(stream["llp"], "sctp")
        segments = sum(o["segments"] for d in stream["directions"]
                       for o in d["opcodes"].values())
        self.assertEqual(segments, ppids.count(PPID_DDP_SEGMENT))
        self.assertEqual(rep["findings"], [])
        # Every datagram captured on those ports was taken as SCTP.
        self.assertEqual(rep["summary"]["frames_not_tcp"], 0)

    def test_endpoint_script_over_sctp(self):
        """`ddpscope endpoint listen/connect --llp sctp`: every operation of a script (Write,
        Read, atomics, Immediate Data, Send) over usrsctp, on a port the stack picked."""
        portfile = os.path.join(self.tmp.name, "port")
        server_script = os.path.join(self.tmp.name, "server.json")
        with open(server_script, "w") as f:
            json.dump({"regions": [{"name": "buf", "size": 8192, "access": "rwa",
                                    "fill": "pattern", "seed": 4}],
                       "ops": [{"op": "advertise", "region": "buf"}, {"op": "wait_write"},
                               {"op": "wait_recv"}]}, f)
        client_script = os.path.join(self.tmp.name, "client.json")
        with open(client_script, "w") as f:
            json.dump({"regions": [{"name": "buf", "size": 8192}],
                       "ops": [{"op": "wait_recv"},
                               {"op": "write", "remote": 0, "offset": 16, "size": 4000},
                               {"op": "read", "remote": 0, "offset": 0, "size": 8192,
                                "into": "buf"},
                               {"op": "fetch_add", "remote": 0, "offset": 8, "add": 3},
                               {"op": "immediate", "value": 77},
                               {"op": "send", "text": "bye", "se": True},
                               {"op": "close"}]}, f)
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile, "--script",
                       server_script, "--llp", "sctp", "--sctp-stack", "user")
        port = wait_port_file(portfile)
        self.assertNotEqual(port, 0)
        client = run("endpoint", "connect", "-p", port, "--script", client_script, "--llp",
                     "sctp", "--sctp-stack", "user")
        out, err = server.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, out + err)
        self.assertIn("read_completed length=8192", client.stdout)
        self.assertIn("atomic_completed", client.stdout)
        self.assertIn("write_placed length=4000", out)
        self.assertIn("immediate_received length=8 value=77", out)
        self.assertIn("recv_completed length=3", out)

    def test_endpoint_reject_over_sctp(self):
        """A Session Reject with the responder's private data (RFC 5043's Reject)."""
        portfile = os.path.join(self.tmp.name, "port")
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile, "--reject",
                       "--private-data", "busy", "--llp", "sctp", "--sctp-stack", "user")
        port = wait_port_file(portfile)
        client = run("endpoint", "connect", "-p", port, "--send", "x", "--llp", "sctp",
                     "--sctp-stack", "user")
        server.communicate(timeout=30)
        self.assertEqual(client.returncode, 1)
        self.assertIn("rejected", client.stdout)

    @unittest.skipIf(kernel_has_sctp(), "this kernel has SCTP")
    def test_kernel_stack_without_kernel_sctp_says_so(self):
        out = run("rping", "-c", "-a", "127.0.0.1", "-p", free_port(), "-C", 1, "--llp", "sctp",
                  "--sctp-stack", "kernel", timeout=20)
        self.assertEqual(out.returncode, 1)
        self.assertIn("--sctp-stack kernel: this kernel has no SCTP", out.stderr)


if __name__ == "__main__":
    unittest.main()
