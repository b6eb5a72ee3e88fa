#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 13's acceptance line over a real SCTP stack: `ddpscope rping --llp sctp -s` and `-c`
complete over 127.0.0.1 with verified data (usrsctp over raw IPv4 where the kernel has no SCTP:
needs root), captured on lo by `ddpscope live`; the capture is real SCTP as tshark reads it
(CRC32c good on every packet, the Adaptation Layer Indication in INIT and INIT-ACK, two session
control messages on PPID 17, one PPID 16 message per DDP segment). `--sctp-stack kernel` where
the kernel has no SCTP fails with a clear message."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from ddpscope_cli import free_port, run, start  # noqa: E402

TSHARK = shutil.which("tshark")
PPID_DDP_SEGMENT = 16
PPID_SESSION_CONTROL = 17
ADAPTATION_CODE_POINT_DDP = 1  # wire::kAdaptationCodePointDdp (verify RFC 5043)


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
                             "sctp.data_payload_proto_id")
        self.assertTrue(rows, "nothing captured")
        # Every packet's CRC32c verifies (usrsctp computes it on loopback too).
        self.assertEqual({r[0] for r in rows}, {"1"}, rows[:5])
        chunk_types = [t for r in rows for t in r[1].split(",")]
        for t in ("1", "2", "10", "11", "0", "3", "7"):  # INIT .. DATA SACK SHUTDOWN
            self.assertIn(t, chunk_types)
        ppids = [int(p) for r in rows if r[2] for p in r[2].split(",")]
        # Session control: one Initiate, one Accept. DDP segments (size 1000 < MULPDU, one
        # segment per message): the initiator's Write RTR, per iteration its two advertisement
        # Sends and one Read Response; the responder's Read Request, RDMA Write, two go-aheads.
        self.assertEqual(ppids.count(PPID_SESSION_CONTROL), 2, ppids)
        self.assertEqual(ppids.count(PPID_DDP_SEGMENT), 1 + count * 3 + count * 4, ppids)
        self.assertEqual(set(ppids), {PPID_DDP_SEGMENT, PPID_SESSION_CONTROL})
        # The Adaptation Layer Indication in INIT and INIT-ACK (RFC 5061), DDP's code point.
        ali = tshark_fields(pcap, "sctp.chunk_type", "sctp.adaptation_layer_indication",
                            display_filter="sctp.chunk_type == 1 || sctp.chunk_type == 2")
        self.assertEqual(sorted(r[0] for r in ali), ["1", "2"], ali)
        for r in ali:
            self.assertEqual(int(r[1], 0), ADAPTATION_CODE_POINT_DDP, r)

    @unittest.skipUnless(TSHARK, "tshark not installed")
    def test_rping_over_udp_encapsulation(self):
        """usrsctp's fallback: SCTP over UDP (RFC 6951), the server on 9899, the client on another
        UDP port (one host)."""
        pcap = os.path.join(self.tmp.name, "rping-sctp-udp.pcap")
        port = free_port()
        live = start("live", "-i", "lo", "-f", "udp port 9899", "--write", pcap, "--duration",
                     "60", "-q")
        time.sleep(0.5)
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 2, "--llp", "sctp",
                       "--sctp-udp-port", 9899)
        time.sleep(0.3)
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", 2, "-v", "--llp", "sctp",
                     "--sctp-udp-port", 9898, "--sctp-peer-udp-port", 9899, timeout=60)
        _, serr = server.communicate(timeout=30)
        time.sleep(0.5)
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stderr)
        self.assertEqual(server.returncode, 0, serr)
        rows = tshark_fields(pcap, "udp.port", "sctp.checksum.status",
                             "sctp.data_payload_proto_id", display_filter="sctp")
        self.assertTrue(rows, "no SCTP over UDP captured")
        self.assertEqual({r[1] for r in rows}, {"1"})
        ppids = [int(p) for r in rows if r[2] for p in r[2].split(",")]
        self.assertEqual(ppids.count(PPID_SESSION_CONTROL), 2, ppids)
        self.assertEqual(ppids.count(PPID_DDP_SEGMENT), 1 + 2 * 3 + 2 * 4, ppids)

    @unittest.skipIf(kernel_has_sctp(), "this kernel has SCTP")
    def test_kernel_stack_without_kernel_sctp_says_so(self):
        out = run("rping", "-c", "-a", "127.0.0.1", "-p", free_port(), "-C", 1, "--llp", "sctp",
                  "--sctp-stack", "kernel", timeout=20)
        self.assertEqual(out.returncode, 1)
        self.assertIn("--sctp-stack kernel: this kernel has no SCTP", out.stderr)


if __name__ == "__main__":
    unittest.main()
