#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The endpoint and the analyzer agree, end to end (issue 12): `ddpscope endpoint listen`
receives a violation from a scripted peer over loopback, `ddpscope live` captures the exchange
with libpcap, and `ddpscope analyze --json` on that capture gives the finding whose "terminate"
is exactly the Terminate the listener sent, which the capture also shows (the analyzer decodes
it as `rdmap.terminate` in the other direction). Needs root (or CAP_NET_RAW) for the capture.

The peers: `ddpscope endpoint connect` running a script that names what the listener advertised
(its rping-style advertisement, which the analyzer learns from the capture too), and a raw TCP
peer in this file that speaks MPA revision 1 itself and puts a hand-built DDP segment on the
wire (what no well-behaved endpoint would send)."""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from ddpscope_cli import DDPSCOPE, free_port, run, start, wait_port_file  # noqa: E402

# RFC 5041 §5 / RFC 5040 §4: DDP control (T, L, DV = 1) and RDMAP control (RV = 1, opcode).
DDP_LAST_UNTAGGED = 0x41
RDMAP_READ_REQUEST = 0x41
RDMAP_SEND = 0x43


def untagged(rdmap_control, qn, msn, body, rsvd_ulp=0):
    """One DDP untagged segment, the last of its message, MO 0 (RFC 5041 §4.3)."""
    return struct.pack(">BBIIII", DDP_LAST_UNTAGGED, rdmap_control, rsvd_ulp, qn, msn,
                       0) + body


def fpdu(ulpdu):
    """An MPA FPDU without markers or CRC (neither side asked): length, ULPDU, pad, CRC 0."""
    out = struct.pack(">H", len(ulpdu)) + ulpdu
    out += b"\0" * (-len(out) % 4)
    return out + b"\0\0\0\0"


def raw_peer(port, segment):
    """MPA revision 1 initiator (RFC 5044 §7.1): Request, wait for the Reply, one FPDU; then
    reads what the listener sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"MPA ID Req Frame" + bytes([0, 1]) + b"\0\0")
        reply = b""
        while len(reply) < 20:
            chunk = s.recv(20 - len(reply))
            if not chunk:
                raise AssertionError("listener closed before its MPA Reply")
            reply += chunk
        if not reply.startswith(b"MPA ID Rep Frame") or reply[16] & 0x20:
            raise AssertionError(f"not an accepting MPA Reply: {reply!r}")
        s.sendall(fpdu(segment))
        try:
            while s.recv(4096):
                pass
        except (ConnectionResetError, socket.timeout):
            pass


def terminate_triple(t):
    return (t["layer"], t["etype"], t["code"])


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.pcap = os.path.join(self.tmp.name, "exchange.pcap")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def exchange(self, listen_args, peer):
        """Starts the capture and the listener, runs `peer(port)`, returns the listener's
        stdout and the analysis of the capture."""
        portfile = self.path("port")
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile, "--timeout", 20,
                       *listen_args)
        port = wait_port_file(portfile)
        live = start("live", "-i", "lo", "-f", f"tcp port {port}", "--write", self.pcap,
                     "--duration", 60)
        self.assertIn("capturing on lo", live.stderr.readline())
        try:
            peer(port)
            out, err = server.communicate(timeout=30)
        finally:
            time.sleep(0.3)  # the last segments (the Terminate, FIN or RST) reach the capture
            live.send_signal(signal.SIGINT)
            live.communicate(timeout=30)
        rep = run("analyze", self.pcap, "--json")
        self.assertIn(rep.returncode, (0, 1), rep.stderr)
        return out + err, json.loads(rep.stdout)

    def assert_agreement(self, listener_out, report, code):
        """The listener sent exactly one Terminate; the analyzer's one error from the peer is
        `code` with that Terminate; the capture shows the listener's Terminate as sent."""
        sent = [l for l in listener_out.splitlines() if l.startswith("terminate_sent ")]
        self.assertEqual(len(sent), 1, listener_out)
        layer, etype, code_hex = sent[0].split("terminate=")[1].split()[0].split("/")
        sent_triple = (int(layer), int(etype), int(code_hex, 16))
        self.assertEqual(len(report["streams"]), 1, report["findings"])
        errors = [f for f in report["findings"]
                  if f["severity"] == "error" and f["direction"] == "client-to-server"]
        self.assertEqual([f["code"] for f in errors], [code], report["findings"])
        self.assertEqual(terminate_triple(errors[0]["terminate"]), sent_triple, errors[0])
        on_wire = [f for f in report["findings"]
                   if f["code"] == "rdmap.terminate" and f["direction"] == "server-to-client"]
        self.assertEqual(len(on_wire), 1, report["findings"])
        self.assertEqual(terminate_triple(on_wire[0]["terminate"]), sent_triple, on_wire[0])
        self.assertGreater(on_wire[0]["frame"], errors[0]["frame"])
        return sent_triple

    def scripted(self, server_ops, client_ops, *mpa):
        server_script = self.path("server.json")
        with open(server_script, "w") as f:
            json.dump({"regions": [{"name": "buf", "size": 4096, "access": "rw"}],
                       "ops": [{"op": "advertise", "region": "buf"}, *server_ops]}, f)
        client_script = self.path("client.json")
        with open(client_script, "w") as f:
            json.dump({"regions": [{"name": "buf", "size": 8192}],
                       "ops": [{"op": "wait_recv"}, *client_ops, {"op": "sleep", "ms": 500}]},
                      f)
        return self.exchange(["--script", server_script, *mpa],
                             lambda port: run("endpoint", "connect", "-p", port, "--script",
                                              client_script, *mpa))

    def test_rdma_write_past_the_advertised_region(self):
        out, rep = self.scripted([{"op": "wait_write"}],
                                 [{"op": "write", "remote": 0, "offset": 4000, "size": 200}],
                                 "--crc")
        # RFC 5041 §7.2: DDP / Tagged Buffer / Base or bounds violation (0x01).
        self.assertEqual(self.assert_agreement(out, rep, "ddp.tagged.bounds"), (1, 1, 0x01))

    def test_rdma_read_of_more_than_the_advertised_region(self):
        out, rep = self.scripted([{"op": "wait_write"}],
                                 [{"op": "read", "remote": 0, "offset": 0, "size": 8192,
                                   "into": "buf"}])
        # RFC 5040 §5.2 / §7.2: the Read Request's source is out of bounds: RDMAP / Remote
        # Protection / Base or bounds violation.
        self.assertEqual(self.assert_agreement(out, rep, "ddp.tagged.bounds"),
                         (0, 1, 0x01))

    def test_send_on_a_queue_that_does_not_exist(self):
        out, rep = self.exchange(["--mpa-rev", 1, "--send", "x"],
                                 lambda port: raw_peer(port, untagged(RDMAP_SEND, 3, 1, b"ab")))
        # RFC 5041 §7.2: DDP / Untagged Buffer / Invalid QN.
        self.assertEqual(self.assert_agreement(out, rep, "ddp.untagged.invalid-qn"),
                         (1, 2, 0x01))

    def test_read_request_longer_than_28_octets(self):
        body = struct.pack(">IQIIQ", 0x1234, 0, 16, 0x5678, 0) + b"\0" * 8
        out, rep = self.exchange(
            ["--mpa-rev", 1], lambda port: raw_peer(port, untagged(RDMAP_READ_REQUEST, 1, 1,
                                                                   body)))
        # RFC 5041 §7.2 (the first example): a message longer than the Read Request
        # queue's 28-octet buffer is DDP / Untagged Buffer / Message too long.
        self.assertEqual(self.assert_agreement(out, rep, "ddp.untagged.message-too-long"),
                         (1, 2, 0x05))


if __name__ == "__main__":
    unittest.main(verbosity=2)
