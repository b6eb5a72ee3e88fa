#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ddpscope-extcap driven as Wireshark drives an extcap: the interface, link type and option
listings, capture-filter validation, and --capture --fifo of a replay (an rping session
captured by `ddpscope live`, replayed against a live `ddpscope rping -s`) read from a real
FIFO while it runs; the frames read analyse to the captured session's exchange. The capture
needs root or CAP_NET_RAW (CI runs as root); without it that case is skipped."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

EXTCAP = sys.argv.pop(1)
DDPSCOPE = sys.argv.pop(1)
IFACE = "ddpscope-replay"
# rping over SCTP in UDP (RFC 6951) with usrsctp: the server on UDP port 9899, the client on 9898.
SCTP_UDP_SERVER = ("--llp", "sctp", "--sctp-stack", "user", "--sctp-udp-port", 9899)
SCTP_UDP_CLIENT = ("--llp", "sctp", "--sctp-stack", "user", "--sctp-udp-port", 9898,
                   "--sctp-peer-udp-port", 9899)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(exe, *args, timeout=30):
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def start(*args):
    return subprocess.Popen([DDPSCOPE, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def report(pcap):
    r = run(DDPSCOPE, "analyze", pcap, "--json")
    return json.loads(r.stdout)


def exchange(rep):
    """Per direction: FPDUs (MPA) and the opcode counts (what the replay repeats)."""
    return [[(d.get("fpdus"), json.dumps(d["opcodes"], sort_keys=True)) for d in s["directions"]]
            for s in rep["streams"]]


class Extcap(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_listings(self):
        r = run(EXTCAP, "--extcap-interfaces", "--extcap-version=4.0")
        self.assertEqual(r.returncode, 0, r.stderr)
        # The version Wireshark shows for the interface is the project's, as `ddpscope --version`.
        version = run(DDPSCOPE, "--version").stdout.split()[-1]
        self.assertIn("extcap {version=%s}" % version, r.stdout)
        self.assertIn("interface {value=%s}{display=ddpscope replay" % IFACE, r.stdout)
        r = run(EXTCAP, "--extcap-interface", IFACE, "--extcap-dlts")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^dlt \{number=1\}\{name=EN10MB\}")
        r = run(EXTCAP, f"--extcap-interface={IFACE}", "--extcap-config")
        self.assertEqual(r.returncode, 0, r.stderr)
        for call in ("--capture-file", "--stream-index", "--side", "--peer", "--ignore",
                     "--all-streams", "--fault"):
            self.assertIn("{call=%s}" % call, r.stdout)
        # The stream's number is --stream-index, as in `ddpscope replay`: --stream is an
        # endpoint (IP:PORT) wherever ddpscope accepts it (issue 39).
        self.assertNotIn("{call=--stream}", r.stdout)
        self.assertIn("value {arg=2}{value=server}", r.stdout)
        r = run(EXTCAP, "--extcap-interface", IFACE, "--capture", "--stream", 0)
        self.assertEqual(r.returncode, 2)
        self.assertIn("the stream's number is --stream-index N", r.stderr)
        r = run(EXTCAP, "--extcap-interface", "nope", "--extcap-dlts")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown interface", r.stderr)

    def test_capture_filter_validation(self):
        ok = run(EXTCAP, "--extcap-interface", IFACE, "--extcap-capture-filter", "tcp port 4420")
        self.assertEqual((ok.returncode, ok.stdout), (0, ""))
        bad = run(EXTCAP, "--extcap-interface", IFACE, "--extcap-capture-filter", "tcp port")
        self.assertEqual(bad.returncode, 1)
        self.assertIn("syntax error", bad.stdout)

    def read_fifo(self):
        """A FIFO read into a bytearray by a thread, opened before the extcap starts as Wireshark
        opens it: (path, the octets read, the thread)."""
        fifo = os.path.join(self.tmp.name, "fifo")
        os.mkfifo(fifo)
        received = bytearray()

        def read():
            with open(fifo, "rb") as f:
                while True:
                    chunk = f.read(65536)
                    if not chunk:
                        break
                    received.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        return fifo, received, reader

    def capture_session(self, pcap, llp=()):
        """An rping session captured by `ddpscope live`: over MPA, or with `llp` the rping
        options of another LLP (SCTP over UDP: the server on UDP port 9899)."""
        port = free_port()
        udp = bool(llp)
        live = start("live", "-i", "lo", "-f", "udp port 9899" if udp else f"tcp port {port}",
                     "--write", pcap, "--duration", "60")
        line = live.stderr.readline()
        if "permission" in line.lower() or "not permitted" in line.lower():
            live.communicate(timeout=10)
            self.skipTest("live capture needs root or CAP_NET_RAW: " + line.strip())
        self.assertIn("capturing on lo", line)
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 3,
                       *(SCTP_UDP_SERVER if udp else ()))
        time.sleep(0.2)
        client = run(DDPSCOPE, "rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", 3, "-S", 1000,
                     *(SCTP_UDP_CLIENT if udp else ()), timeout=60)
        server.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stderr)
        time.sleep(0.3)
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=30)

    def test_capture_streams_the_replay_into_the_fifo(self):
        orig = os.path.join(self.tmp.name, "session.pcap")
        self.capture_session(orig)
        port = free_port()
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 3)
        time.sleep(0.2)
        fifo, received, reader = self.read_fifo()
        r = run(EXTCAP, "--capture", "--extcap-interface", IFACE, "--fifo", fifo,
                "--extcap-capture-filter", "tcp", "--capture-file", orig, "--stream-index", 0,
                "--side", "client", "--peer", f"127.0.0.1:{port}", timeout=60)
        reader.join(timeout=30)
        server.communicate(timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(" 0 differences", r.stderr)
        self.assertEqual(server.returncode, 0)
        out = os.path.join(self.tmp.name, "out.pcap")
        with open(out, "wb") as f:
            f.write(received)
        rep, want = report(out), report(orig)
        self.assertGreater(rep["frames"], 10)
        self.assertEqual(len(rep["streams"]), 1)
        self.assertEqual(rep["streams"][0]["state"], "full-operation")
        self.assertEqual(rep["streams"][0]["server"], f"127.0.0.1:{port}")
        self.assertEqual(exchange(rep), exchange(want))
        self.assertFalse([f for f in rep["findings"] if f["severity"] == "error"])
        # Wireshark reads the same stream: as many frames, all TCP on the peer's port.
        tshark = shutil.which("tshark")
        if tshark:
            t = run(tshark, "-r", out, "-Y", f"tcp.port == {port}", "-T", "fields", "-e",
                    "frame.number")
            self.assertEqual(t.returncode, 0, t.stderr)
            self.assertEqual(len(t.stdout.split()), rep["frames"])


    def test_fault_goes_to_the_replay(self):
        orig = os.path.join(self.tmp.name, "session.pcap")
        self.capture_session(orig)
        fifo, received, reader = self.read_fifo()
        r = run(EXTCAP, "--capture", "--extcap-interface", IFACE, "--fifo", fifo,
                "--capture-file", orig, "--stream-index", 0, "--side", "client",
                "--peer", f"127.0.0.1:{free_port()}", "--fault", "bogus:1", timeout=60)
        if reader.is_alive():  # the FIFO was never opened for writing: let the reader go
            with open(fifo, "wb"):
                pass
        reader.join(timeout=30)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("replay: --fault wants KIND:N[:STREAM]", r.stderr)

    def test_capture_of_a_replay_over_sctp_in_udp(self):
        """The extcap takes replay's LLP options (issue 41): an rping session over SCTP in UDP
        (RFC 6951, usrsctp: no kernel SCTP needed) replayed against a live rping server over
        the same, captured on the UDP ports into the FIFO."""
        orig = os.path.join(self.tmp.name, "session-sctp.pcap")
        self.capture_session(orig, llp=SCTP_UDP_CLIENT)
        want = report(orig)
        self.assertEqual([s.get("llp") for s in want["streams"]], ["sctp"])
        port = free_port()
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 3, *SCTP_UDP_SERVER)
        time.sleep(0.3)
        fifo, received, reader = self.read_fifo()
        r = run(EXTCAP, "--capture", "--extcap-interface", IFACE, "--fifo", fifo,
                "--capture-file", orig, "--stream-index", 0, "--side", "client",
                "--peer", f"127.0.0.1:{port}", "--llp", "sctp", "--sctp-stack", "user",
                "--sctp-udp-port", 9898, "--sctp-peer-udp-port", 9899,
                "--ignore", "rpc.verifier,smbd.credits", timeout=90)
        reader.join(timeout=30)
        server.communicate(timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(" 0 differences", r.stderr)
        self.assertEqual(server.returncode, 0)
        out = os.path.join(self.tmp.name, "out.pcap")
        with open(out, "wb") as f:
            f.write(received)
        rep = report(out)
        self.assertEqual(len(rep["streams"]), 1)
        self.assertEqual(rep["streams"][0].get("llp"), "sctp")
        self.assertEqual(exchange(rep), exchange(want))
        self.assertFalse([f for f in rep["findings"] if f["severity"] == "error"])
        # Wireshark sees SCTP in UDP on 9899 with good checksums (its own SCTP dissector).
        tshark = shutil.which("tshark")
        if tshark:
            t = run(tshark, "-r", out, "-Y", "sctp", "-T", "fields", "-e",
                    "sctp.checksum.status", "-o", "sctp.checksum:CRC-32C")
            self.assertEqual(t.returncode, 0, t.stderr)
            self.assertEqual(set(t.stdout.split()), {"1"}, t.stdout[:300])


if __name__ == "__main__":
    unittest.main(verbosity=2)
