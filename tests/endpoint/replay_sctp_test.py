#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ddpscope replay --llp sctp` (issue 41): the same plan over DDP-over-SCTP (RFC 5043) on
usrsctp, against live peers on loopback. An MPA capture's setup becomes the Session
Initiate/Accept with the captured private data and IRD/ORD/RTR word (rping, and NVMe-oF whose
RDMA CM private data names the queue); a capture recorded over SCTP replays over SCTP and over
MPA. A live peer that behaves like the captured one gives no DIFF; one that does not (an echo
endpoint, an injected fault) gives the DIFF it should. usrsctp runs over UDP (RFC 6951) on ports
of the test's own, so other SCTP users of the host do not see its associations."""
import json
import os
import signal
import socket
import tempfile
import time
import unittest

from ddpscope_cli import free_port, run, start, wait_port_file  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples")


def sample(name):
    return os.path.join(SAMPLES, name)


def diffs(text):
    return [l for l in text.splitlines() if l.startswith("DIFF ")]


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ReplaySctp(unittest.TestCase):
    def setUp(self):
        # Each process its own UDP port; the connecting one names the listener's.
        self.server_udp = free_udp_port()
        self.client_udp = free_udp_port()
        while self.client_udp == self.server_udp:
            self.client_udp = free_udp_port()

    def server_llp(self):
        return ["--llp", "sctp", "--sctp-stack", "user", "--sctp-udp-port", self.server_udp]

    def client_llp(self):
        return ["--llp", "sctp", "--sctp-stack", "user", "--sctp-udp-port", self.client_udp,
                "--sctp-peer-udp-port", self.server_udp]

    def rping_server(self, port, count):
        server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", count,
                       *self.server_llp())
        time.sleep(0.3)
        return server

    def test_mpa_rping_captures_over_sctp(self):
        """siw's rping as the client against `rping -s --llp sctp`: MPA rev 2 with the IRD/ORD
        word (two iterations of 4000 octets), and peer-to-peer with a Write RTR, which goes over
        SCTP as the Enhanced Session Initiate's word and a zero-length Write (RFC 6581 §7, §8).
        The same messages, no difference; the setup lines say what became what."""
        for pcap, count, p2p, messages in (("siw-rping-4000.pcap", 2, "no, RTR none", 14),
                                           ("siw-rping-p2p.pcap", 1, "yes, RTR write", 7)):
            with self.subTest(pcap=pcap):
                port = free_port()
                server = self.rping_server(port, count)
                r = run("replay", sample("siw/" + pcap), "--side", "client", "--peer",
                        f"127.0.0.1:{port}", *self.client_llp(), timeout=30)
                _, serr = server.communicate(timeout=30)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertEqual(server.returncode, 0, serr)
                self.assertIn(f"connected over sctp (usrsctp over UDP): peer-to-peer {p2p}\n",
                              r.stdout)
                self.assertIn("setup: the captured MPA Request becomes a DDP Stream Enhanced "
                              "Session Initiate with its 0 octets of private data and the "
                              "IRD/ORD/RTR word (RFC 5043 §6, RFC 6581 §8)", r.stdout)
                self.assertIn("setup: the MPA revision is not compared: SCTP has none",
                              r.stdout)
                self.assertEqual(diffs(r.stdout), [])
                self.assertIn(f"\n{messages} captured messages replayed, 0 differences\n",
                              r.stdout)

    def test_mpa_rping_capture_against_an_echo_peer_differs(self):
        """A peer scripted differently (it echoes every Send) over SCTP: the DIFF names the
        message the captured server sent and the live one did not."""
        with tempfile.TemporaryDirectory() as tmp:
            portfile = os.path.join(tmp, "port")
            echo = start("endpoint", "listen", "-p", 0, "--echo", "-q", "--port-file", portfile,
                         *self.server_llp())
            try:
                port = wait_port_file(portfile)
                r = run("replay", sample("siw/siw-rping-4000.pcap"), "--side", "client",
                        "--peer", f"127.0.0.1:{port}", "--wait-ms", 500, "--json",
                        *self.client_llp(), timeout=30)
            finally:
                echo.kill()
                echo.communicate(timeout=10)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual(rep["llp"], "sctp")
        (stream,) = rep["streams"]
        self.assertTrue(stream["connected"])
        self.assertGreater(rep["differences"], 0)
        self.assertEqual(stream["differences"][0]["direction"], "server->client")
        self.assertTrue(stream["differences"][0]["expected"].startswith("RDMA Read Request of "),
                        stream["differences"])

    def test_sctp_capture_over_sctp_and_over_mpa(self):
        """samples/sctp/usrsctp-rping.pcap (recorded on usrsctp) replayed as the client over
        either LLP against rping -s on it: no difference; over MPA the setup line says the
        Session Initiate became an MPA Request."""
        pcap = sample("sctp/usrsctp-rping.pcap")
        rep = json.loads(run("analyze", pcap, "--json").stdout)
        self.assertEqual(len(rep["streams"]), 1)
        for llp in ("sctp", "mpa"):
            with self.subTest(llp=llp):
                port = free_port()
                if llp == "sctp":
                    server = self.rping_server(port, 3)
                    extra = self.client_llp()
                else:
                    server = start("rping", "-s", "-a", "127.0.0.1", "-p", port, "-C", 3)
                    time.sleep(0.2)
                    extra = []
                r = run("replay", pcap, "--stream-index", 0, "--side", "client", "--peer",
                        f"127.0.0.1:{port}", *extra, timeout=30)
                _, serr = server.communicate(timeout=30)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertEqual(server.returncode, 0, serr)
                self.assertEqual(diffs(r.stdout), [])
                self.assertIn(" 0 differences", r.stdout)
                if llp == "mpa":
                    self.assertIn("connected: rev 2, CRC off, peer-to-peer yes, RTR write",
                                  r.stdout)
                    self.assertIn("setup: the captured DDP Stream Enhanced Session Initiate "
                                  "becomes an MPA rev 2 Request", r.stdout)
                else:
                    self.assertNotIn("setup:", r.stdout)  # as captured

    def test_sctp_capture_server_side_against_live_rping_client(self):
        pcap = sample("sctp/usrsctp-rping.pcap")
        port = free_port()
        rep = start("replay", pcap, "--side", "server", "--peer", f"127.0.0.1:{port}",
                    *self.server_llp())
        self.assertIn("waiting for the live client", rep.stdout.readline())
        client = run("rping", "-c", "-a", "127.0.0.1", "-p", port, "-C", 3, "-S", 4000,
                     *self.client_llp(), timeout=30)
        out, err = rep.communicate(timeout=30)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rep.returncode, 0, out + err)
        self.assertEqual(diffs(out), [])

    def nvme_pair(self, server_extra=(), client_extra=(), pcap=None, port=None, llp=None):
        """Both sides of siw-nvmeof.pcap's admin queue (or `pcap`'s stream 0), each the other's
        live peer, over SCTP on UDP (or `llp`: the same flags for both)."""
        pcap = pcap or sample("siw/siw-nvmeof.pcap")
        port = port or free_port()
        server_llp = self.server_llp() if llp is None else llp
        client_llp = self.client_llp() if llp is None else llp
        server = start("replay", pcap, "--side", "server", "--wait-ms", 1500, "--peer",
                       f"127.0.0.1:{port}", *server_llp, *server_extra)
        first = server.stdout.readline()
        if first.startswith("== stream"):  # several streams: each is headed by its number
            first = server.stdout.readline()
        self.assertIn("waiting for the live client", first)
        client = run("replay", pcap, "--side", "client", "--wait-ms", 1000, "--peer",
                     f"127.0.0.1:{port}", *client_llp, *client_extra, timeout=60)
        out, _ = server.communicate(timeout=60)
        return out, server.returncode, client

    def test_nvmeof_capture_over_sctp(self):
        """The RDMA CM private data (the queue's QID) goes in the Session Initiate/Accept: both
        replays of the whole session (the admin queue, then the I/O queue on a new association
        with the live controller's ID in its Connect) name its commands as over MPA, and find
        no difference."""
        out, rc, client = self.nvme_pair(server_extra=["--all-streams"],
                                         client_extra=["--all-streams"])
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rc, 0, out)
        self.assertIn("NVMe-oF controller ID 0x1 (the live controller's) goes into this "
                      "stream's Connect", client.stdout)
        for text in (out, client.stdout):
            self.assertIn("ULP: nvme-rdma (stream 0)", text)
            self.assertIn("ULP: nvme-rdma (stream 1)", text)
            self.assertIn("57 captured messages replayed, 0 differences", text)
            self.assertIn("18 captured messages replayed, 0 differences", text)
            self.assertRegex(text, r"setup: the captured MPA (Request|Reply) becomes a DDP Stream "
                                   r"Enhanced Session (Initiate|Accept) with its 32 octets of "
                                   r"private data")

    @unittest.skipUnless(os.geteuid() == 0, "native usrsctp and the capture on lo need root")
    def test_nvmeof_round_trip_through_an_sctp_capture(self):
        """The NVMe-oF replay over native SCTP, captured on lo: the analyzer reads the queue from
        the RDMA CM private data in the captured Session Initiate/Accept, as it did from the MPA
        frames; that SCTP capture then replays over MPA without a difference."""
        with tempfile.TemporaryDirectory() as tmp:
            pcap = os.path.join(tmp, "nvmeof-sctp.pcap")
            port = free_port()
            live = start("live", "-i", "lo", "-f", f"sctp port {port}", "--write", pcap,
                         "--duration", "30", "-q")
            time.sleep(0.7)  # the capture is open before the first INIT
            out, rc, client = self.nvme_pair(port=port, llp=["--llp", "sctp", "--sctp-stack",
                                                             "user"])
            time.sleep(0.5)  # SHUTDOWN ... SHUTDOWN COMPLETE
            live.send_signal(signal.SIGINT)
            live.communicate(timeout=30)
            self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
            self.assertEqual(rc, 0, out)
            rep = json.loads(run("analyze", pcap, "--json").stdout)
            self.assertEqual(rep["findings"], [])
            (stream,) = rep["streams"]
            self.assertEqual(stream["llp"], "sctp")
            self.assertEqual(stream["ulp"]["name"], "nvme-rdma")
            self.assertTrue(stream["ulp"]["detail"].startswith(
                "by RDMA CM private data; qid 0 (admin)"), stream["ulp"])
            self.assertEqual(rep["summary"]["messages"], 57)
            # (b): the capture recorded over SCTP, over MPA.
            out, rc, client = self.nvme_pair(pcap=pcap, llp=[])
            self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
            self.assertEqual(rc, 0, out)
            self.assertIn("setup: the captured DDP Stream Enhanced Session Initiate becomes an "
                          "MPA rev 2 Request with its 32 octets of private data",
                          client.stdout)
            self.assertIn("setup: the captured DDP Stream Enhanced Session Accept becomes an "
                          "MPA rev 2 Reply with its 32 octets of private data", out)
            for text in (out, client.stdout):
                self.assertIn("ULP: nvme-rdma", text)
                self.assertIn("57 captured messages replayed, 0 differences", text)

    def test_nvmeof_injected_fault_over_sctp(self):
        """The target's data for Identify cid 14 corrupted (as endpoint.replay-ulp does over
        MPA): the host's replay names the command."""
        out, rc, client = self.nvme_pair(server_extra=["--fault", "corrupt:20"])
        self.assertEqual(client.returncode, 1, client.stdout + client.stderr)
        self.assertEqual(diffs(client.stdout), [
            "DIFF #20 server->client: expected RDMA Write for NVMe Identify cid 14 (admin); data "
            "differs at offset 0x0 of 4096"])
        self.assertEqual(rc, 0, out)

    def test_no_session_setup_or_no_stack_is_a_clear_error(self):
        # A stream whose setup is not in the capture: nothing to repeat.
        r = run("replay", sample("siw/siw-rping-4000.pcap"), "--side", "client", "--stream-index",
                7, "--peer", "127.0.0.1:1", *self.client_llp(), timeout=20)
        self.assertEqual(r.returncode, 2)
        self.assertIn("replay: the capture has", r.stderr)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).close()
            return  # this kernel has SCTP
        except OSError:
            pass
        r = run("replay", sample("sctp/usrsctp-rping.pcap"), "--side", "client", "--peer",
                "127.0.0.1:1", "--llp", "sctp", "--sctp-stack", "kernel", timeout=20)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("replay: --sctp-stack kernel: this kernel has no SCTP", r.stderr)


if __name__ == "__main__":
    unittest.main()
