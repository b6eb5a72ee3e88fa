#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The endpoint commands end to end over loopback (needs root for the capture on lo):
rping -s vs rping -c, live capture vs the saved file, replay against a live endpoint (no
difference) and against one scripted differently (the difference is reported), and the
scripted endpoint listen/connect."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from ddpscope_cli import DDPSCOPE, free_port, run, start, wait_port_file  # noqa: E402


class Endpoint(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def rping_pair(self, *extra, count=3, size=1000):
        port = free_port()
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", count, *extra)
        time.sleep(0.2)
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", count, "-S", size,
                     "-v", *extra)
        sout, serr = server.communicate(timeout=30)
        return client, server.returncode, serr

    def test_rping_server_vs_client(self):
        for extra in ([], ["--crc"], ["--mpa-rev", "1"], ["--markers", "--crc"],
                      ["--busy-poll-us", "0"], ["--busy-poll-us", "1000"]):
            with self.subTest(extra=extra):
                client, server_rc, serr = self.rping_pair(*extra)
                self.assertEqual(client.returncode, 0, client.stderr)
                self.assertEqual(server_rc, 0, serr)
                self.assertIn("ping data: rdma-ping-2: ", client.stdout)

    def capture_rping(self, pcap, count=3):
        """An rping session captured by `ddpscope live`; returns the live output."""
        port = free_port()
        live = start("live", "-i", "lo", "-f", f"tcp port {port}", "--write", pcap,
                     "--duration", "60")
        self.assertIn("capturing on lo", live.stderr.readline())
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", count)
        time.sleep(0.2)
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", count, "-S", 1000)
        server.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stderr)
        time.sleep(0.3)
        live.send_signal(signal.SIGINT)
        out, err = live.communicate(timeout=30)
        self.assertIn(live.returncode, (0, 1), err)
        return out

    def test_live_findings_equal_saved_file(self):
        pcap = os.path.join(self.tmp.name, "live.pcap")
        out = self.capture_rping(pcap)
        # Live prints each finding as the text report lists it, the same lines.
        live = sorted(l for l in out.splitlines() if l.startswith("  frame "))
        text = run("analyze", pcap).stdout
        saved = sorted(l for l in text.splitlines() if l.startswith("  frame "))
        self.assertEqual(live, saved)
        rep = json.loads(run("analyze", pcap, "--json").stdout)
        self.assertEqual(len(live), len(rep["findings"]))
        self.assertFalse([f for f in rep["findings"] if f["severity"] == "error"])
        self.assertEqual(len(rep["streams"]), 1)

    def test_replay_against_live_endpoint(self):
        pcap = os.path.join(self.tmp.name, "session.pcap")
        self.capture_rping(pcap)
        # The same kind of peer: no difference.
        port = free_port()
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 3)
        time.sleep(0.2)
        r = run("replay", pcap, "--stream-index", 0, "--side", "client", "--peer", f"127.0.0.1:{port}")
        server.communicate(timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0 differences", r.stdout)
        self.assertEqual(server.returncode, 0)
        # The server side, against a live rping client.
        port = free_port()
        rep = start("replay", pcap, "--side", "server", "--peer", f"127.0.0.1:{port}")
        self.assertIn("waiting for the live client", rep.stdout.readline())
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", 3, "-S", 1000)
        out, err = rep.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stderr)
        self.assertEqual(rep.returncode, 0, out + err)
        # A peer scripted differently (echoes every Send): the differences are reported.
        portfile = os.path.join(self.tmp.name, "port")
        echo = start("endpoint", "listen", "-p", 0, "--echo", "-q", "--port-file", portfile)
        port = wait_port_file(portfile)
        r = run("replay", pcap, "--side", "client", "--peer", f"127.0.0.1:{port}",
                "--wait-ms", 500)
        echo.communicate(timeout=30)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("DIFF #2 server->client: expected RDMA Read Request of 1000 octets; ",
                      r.stdout)
        self.assertNotIn(" 0 differences", r.stdout)

    def test_endpoint_script(self):
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
                               {"op": "cswap", "remote": 0, "offset": 8, "compare": 0,
                                "swap": 1},
                               {"op": "immediate", "value": 77},
                               {"op": "send", "text": "bye", "se": True},
                               {"op": "close"}]}, f)
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile, "--script",
                       server_script, "--crc")
        port = wait_port_file(portfile)
        client = run("endpoint", "connect", "-p", port, "--script", client_script)
        out, err = server.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, out + err)
        self.assertIn("read_completed length=8192", client.stdout)
        self.assertIn("atomic_completed", client.stdout)
        self.assertIn("write_placed length=4000", out)
        self.assertIn("immediate_received length=8 value=77", out)
        self.assertIn("recv_completed length=3", out)

    def test_endpoint_reject(self):
        portfile = os.path.join(self.tmp.name, "port")
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile, "--reject",
                       "--private-data", "busy")
        port = wait_port_file(portfile)
        client = run("endpoint", "connect", "-p", port, "--send", "x")
        server.communicate(timeout=30)
        self.assertEqual(client.returncode, 1)
        self.assertIn("rejected", client.stdout)

    def test_endpoint_half_open_peer_times_out(self):
        portfile = os.path.join(self.tmp.name, "port")
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile,
                       "--handshake-timeout-ms", 200, "--teardown-timeout-ms", 200)
        port = wait_port_file(portfile)
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(5)  # under the 10 s default: the option must have taken effect
            # Never sends an MPA Request: the listener fails the handshake and closes.
            try:
                self.assertEqual(s.recv(16), b"")
            except ConnectionResetError:
                pass
            out, err = server.communicate(timeout=30)
        self.assertIn("MPA handshake timed out", out + err)

    def test_endpoint_max_connections(self):
        portfile = os.path.join(self.tmp.name, "port")
        server = start("endpoint", "listen", "-p", 0, "--port-file", portfile, "--forever",
                       "--max-connections", 1, "--timeout", 20)
        port = wait_port_file(portfile)
        try:
            with socket.create_connection(("127.0.0.1", port)) as first:
                first.settimeout(1)
                # The first connection holds the only slot (it sends nothing: the handshake
                # timer, 10 s by default, keeps it open); a second one is reset at accept.
                time.sleep(0.3)
                with socket.create_connection(("127.0.0.1", port)) as second:
                    second.settimeout(5)
                    try:
                        self.assertEqual(second.recv(16), b"")
                    except ConnectionResetError:
                        pass
                with self.assertRaises(socket.timeout):
                    first.recv(16)  # still open
        finally:
            server.kill()
            server.communicate(timeout=30)


if __name__ == "__main__":
    unittest.main(verbosity=2)
