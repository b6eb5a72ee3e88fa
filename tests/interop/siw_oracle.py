#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The siw Data Sink oracle's crafting peer (issue 40). Runs in the siw lab guest (Debian 12's
python3, stdlib only) against siw's `rping -s -P` (persistent server: one server thread per
connection, each with its own PD and memory regions), which this script starts and restarts.

Per case it opens one TCP connection (two for the STag-of-another-stream case), speaks MPA
revision 2 with the RFC 6581 enhanced word (IRD 1, ORD 1, no peer-to-peer: siw takes P2P mode
from the client's Request, and the iwcm kernel bug of the reference needs P2P), waits 0.3 s after
the Reply, plays a correct rping client up to the case's phase, sends ONE violation and records
siw's answer within ANSWER_SECONDS:

  terminate  a Terminate FPDU (raw octets; triple read in siw's little-endian bit-field layout)
  close      the connection ended with FIN (no Terminate)
  reset      the connection ended with RST (kept apart from close; a checker maps it to close)
  reject     an MPA Reply with the R bit (handshake cases)
  accept     a normal answer (a Read Request, a Read Response, a Send) and nothing else
  wait       silence

rping's wire (samples/siw/siw-rping-64.pcap): the client Sends its start buffer's advertisement
{be64 address, be32 STag, be32 size}; the server RDMA Reads it (a Read Request naming its own
sink STag); the client answers with Read Responses; the server Sends a go-ahead; the client Sends
its sink buffer's advertisement; the server RDMA Writes into it, then Sends a go-ahead.

Phases: "est" (connection established, nothing sent), "read" (the start advertisement sent and
siw's Read Request received: its sink STag, TO and size known, the Read outstanding), "go" (the
Read answered and the go-ahead received).

Each case names the ddpscope finding code the violation must draw and which siw behaviours it
exercises. Results: one JSON object per line in OUT/cases.jsonl (appended and synced per case, so
a guest that dies keeps what it wrote), OUT/progress names the case under way. A case after
which the guest kernel logged a BUG (the iwcm bug) or no connection succeeds any more is marked
"vm-died" and the script exits 3 (the host driver reboots the VM and continues)."""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time

ANSWER_SECONDS = 3.0   # TCG guest: siw answers in softirq, rping's userspace takes longer
SETTLE_SECONDS = 0.3   # after the MPA Reply (the reference's iwcm-bug guard)
AD_SIZE = 64           # rping -S 64 on the server; our advertised start buffer
PEER_STAG = 0x00A0B100  # the STag our advertisements name (our own, only we know it)
PEER_ADDR = 0x0000100000000000

# RFC 5041 §4 / RFC 5040 §4 control octets.
T_BIT, L_BIT, DV1 = 0x80, 0x40, 0x01
RV1 = 0x40
OP = {"write": 0, "read-request": 1, "read-response": 2, "send": 3, "send-inv": 4, "send-se": 5,
      "send-se-inv": 6, "terminate": 7}
OPNAME = {0: "RDMA Write", 1: "Read Request", 2: "Read Response", 3: "Send",
          4: "Send with Invalidate", 5: "Send with SE", 6: "Send with SE and Invalidate",
          7: "Terminate", 8: "Immediate Data", 9: "Immediate Data with SE",
          10: "Atomic Request", 11: "Atomic Response"}


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def untagged(op, qn, msn, mo=0, body=b"", last=True, ddp=None, rdmap=None, inval=0):
    """One untagged DDP segment (RFC 5041 §4.3); ddp/rdmap override the control octets."""
    d = (L_BIT if last else 0) | DV1 if ddp is None else ddp
    r = RV1 | op if rdmap is None else rdmap
    return struct.pack(">BBIIII", d, r, inval, qn, msn, mo) + body


def tagged(op, stag, to, payload=b"", last=True, ddp=None, rdmap=None):
    """One tagged DDP segment (RFC 5041 §4.2)."""
    d = T_BIT | (L_BIT if last else 0) | DV1 if ddp is None else ddp
    r = RV1 | op if rdmap is None else rdmap
    return struct.pack(">BBIQ", d, r, stag, to) + payload


def advertisement(size=AD_SIZE, stag=PEER_STAG, addr=PEER_ADDR):
    return struct.pack(">QII", addr, stag, size)


def read_request_body(sink_stag, sink_to, size, src_stag, src_to):
    return struct.pack(">IQIIQ", sink_stag, sink_to, size, src_stag, src_to)


def decode_terminate(ulpdu):
    """A Terminate's control word read in siw's layout (RFC fields as little-endian bit fields
    in a big-endian word: EType high nibble and Layer low nibble of octet 0, M/D/R at bits
    0/1/2 of octet 2), and in the RFC's layout, for the record."""
    w = ulpdu[18:22]
    if len(w) < 4:
        return None
    return {"layer": w[0] & 0x0F, "etype": w[0] >> 4, "code": w[1],
            "m": bool(w[2] & 1), "d": bool(w[2] & 2), "r": bool(w[2] & 4),
            "rfc_layout": {"layer": w[0] >> 4, "etype": w[0] & 0x0F, "code": w[1],
                           "m": bool(w[2] & 0x80), "d": bool(w[2] & 0x40),
                           "r": bool(w[2] & 0x20)}}


def describe(ulpdu):
    if len(ulpdu) < 2:
        return {"kind": "short", "hex": ulpdu.hex()}
    op = ulpdu[1] & 0x0F
    d = {"opcode": op, "name": OPNAME.get(op, f"opcode {op}"), "tagged": bool(ulpdu[0] & T_BIT),
         "last": bool(ulpdu[0] & L_BIT), "len": len(ulpdu)}
    if d["tagged"] and len(ulpdu) >= 14:
        d["stag"], d["to"] = struct.unpack(">IQ", ulpdu[2:14])
    elif len(ulpdu) >= 18:
        d["qn"], d["msn"], d["mo"] = struct.unpack(">III", ulpdu[6:18])
    return d


class Peer:
    """One TCP connection to siw, MPA initiator, FPDUs without markers (CRC when asked)."""

    def __init__(self, host, port, crc=False, ird=1, ord_=1, p2p=False):
        self.crc = crc
        self.ird, self.ord = ird, ord_
        if p2p:  # RFC 6581: A (peer-to-peer) with IRD; C (Write RTR) and D (Read RTR) with ORD
            self.ird, self.ord = 0x8000 | ird, 0xC000 | ord_
        self.s = socket.create_connection((host, port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.local_port = self.s.getsockname()[1]
        self.rx = b""
        self.eof = None  # None, "close", "reset"
        self.msn = {0: 1, 1: 1, 2: 1}
        self.sent = []

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def request(self, flags=0x10, rev=2, pd=None, key=b"MPA ID Req Frame"):
        if self.crc:
            flags |= 0x40
        if pd is None:
            pd = struct.pack(">HH", self.ird, self.ord)
        return key + bytes([flags, rev]) + struct.pack(">H", len(pd)) + pd

    def handshake(self, req=None, settle=True):
        """Sends the MPA Request, reads the Reply; returns the Reply's octets or raises."""
        self.s.sendall(req if req is not None else self.request())
        rep = self._read_exact(20, 10)
        rep += self._read_exact(struct.unpack(">H", rep[18:20])[0], 10)
        self.reply = rep
        if not rep.startswith(b"MPA ID Rep Frame") or rep[16] & 0x20:
            raise ConnectionError(f"MPA Reply refused: {rep.hex()}")
        if settle:
            time.sleep(SETTLE_SECONDS)
        return rep

    def _read_exact(self, n, secs):
        self.s.settimeout(secs)
        while len(self.rx) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.rx += chunk
        out, self.rx = self.rx[:n], self.rx[n:]
        return out

    def frame(self, ulpdu, length=None, bad_crc=False):
        out = struct.pack(">H", len(ulpdu) if length is None else length) + ulpdu
        out += b"\0" * (-len(out) % 4)
        c = crc32c(out) if self.crc else 0
        if bad_crc:
            c ^= 0x5A5A5A5A
        return out + struct.pack("<I", c)

    def send(self, data):
        self.sent.append(data)
        self.s.sendall(data)

    def send_ulpdu(self, ulpdu, **kw):
        self.send(self.frame(ulpdu, **kw))

    def next_send_msn(self):
        m = self.msn[0]
        self.msn[0] += 1
        return m

    def recv_fpdu(self, deadline):
        """The next FPDU from siw as its ULPDU, or None at EOF / RST / deadline (self.eof)."""
        while True:
            if len(self.rx) >= 2:
                n = struct.unpack(">H", self.rx[:2])[0]
                total = 2 + n + (-(2 + n) % 4) + 4
                if len(self.rx) >= total:
                    ulpdu, self.rx = self.rx[2:2 + n], self.rx[total:]
                    return ulpdu
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                return None
            except ConnectionResetError:
                self.eof = "reset"
                return None
            if not chunk:
                self.eof = "close"
                return None
            self.rx += chunk

    def expect(self, opcode, secs=ANSWER_SECONDS + 3):
        """Reads FPDUs until one with `opcode` (setup steps); returns it or raises."""
        deadline = time.monotonic() + secs
        while True:
            u = self.recv_fpdu(deadline)
            if u is None:
                raise ConnectionError(f"no {OPNAME[opcode]} from siw ({self.eof or 'timeout'})")
            if len(u) >= 2 and (u[1] & 0x0F) == opcode:
                return u

    def observe(self, secs=ANSWER_SECONDS):
        """siw's answer to the violation: see the module comment for the kinds."""
        deadline = time.monotonic() + secs
        fpdus, term = [], None
        while True:
            u = self.recv_fpdu(deadline)
            if u is None:
                break
            d = describe(u)
            fpdus.append(d)
            if d.get("opcode") == OP["terminate"] and not d.get("tagged") and term is None:
                term = {"raw": u.hex(), "triple": decode_terminate(u)}
                deadline = min(deadline, time.monotonic() + 1.0)  # then FIN or RST
        if term:
            kind = "terminate"
        elif self.eof:
            kind = self.eof
        elif fpdus:
            kind = "accept"
        else:
            kind = "wait"
        return {"answer": kind, "then": self.eof or ("open" if kind != "wait" else None),
                "terminate": term, "fpdus": fpdus}


# ---- phases: a correct rping client up to the case's violation ----

def phase_est(ctx, **kw):
    p = Peer(ctx.host, ctx.port, **kw)
    p.handshake()
    return p


def phase_read(ctx, **kw):
    p = phase_est(ctx, **kw)
    p.send_ulpdu(untagged(OP["send"], 0, p.next_send_msn(), body=advertisement()))
    u = p.expect(OP["read-request"])
    (p.sink_stag, p.sink_to, p.read_size, p.src_stag,
     p.src_to) = struct.unpack(">IQIIQ", u[18:46])
    return p


def phase_go(ctx, **kw):
    p = phase_read(ctx, **kw)
    p.send_ulpdu(tagged(OP["read-response"], p.sink_stag, p.sink_to, b"R" * p.read_size))
    p.expect(OP["send"])
    return p


PHASES = {"est": phase_est, "read": phase_read, "go": phase_go}


# ---- the cases: (name, finding code, phase, violation builder, siw behaviours exercised) ----
# A builder gets the Peer (in its phase) and returns the octets to send (framed).

def send_ad(p, msn=None, **kw):
    return untagged(OP["send"], 0, p.next_send_msn() if msn is None else msn,
                    body=advertisement(), **kw)


def frame(fn):
    return lambda p: p.frame(fn(p))


CASES = []


def case(name, code, phase, build, behaviours, mpa=None, note="", rule=None):
    """code: the finding the violation must draw (None: an informative case, not judged; rule
    then names the catalog rule it is about, when there is one)."""
    CASES.append({"name": name, "code": code, "phase": phase, "build": build,
                  "behaviours": behaviours, "mpa": mpa or {}, "note": note,
                  "rule": rule or code})


# DDP control field (RFC 5041 §4.1)
case("ddp-version-0-untagged", "ddp.version-invalid", "est",
     frame(lambda p: send_ad(p, ddp=L_BIT | 0)), ["DDP version check (untagged: 0x06)"])
case("ddp-version-2-untagged", "ddp.version-invalid", "est",
     frame(lambda p: send_ad(p, ddp=L_BIT | 2)), ["DDP version check (untagged: 0x06)"])
case("ddp-version-0-tagged", "ddp.version-invalid", "read",
     frame(lambda p: tagged(OP["write"], p.sink_stag, p.sink_to, b"w" * 8, ddp=T_BIT | L_BIT)),
     ["DDP version check (tagged: 0x04)"])
case("ddp-reserved-bits", "ddp.reserved-nonzero", "est",
     frame(lambda p: send_ad(p, ddp=L_BIT | 0x3C | DV1)),
     ["reserved DDP control bits ignored"])
# RDMAP control field (RFC 5040 §4.2, §4.3)
case("rdmap-version-0", "rdmap.version-invalid", "est",
     frame(lambda p: send_ad(p, rdmap=0x00 | OP["send"])), ["RDMAP version check (0x05)"])
case("rdmap-version-2", "rdmap.version-invalid", "est",
     frame(lambda p: send_ad(p, rdmap=0x80 | OP["send"])), ["RDMAP version check (0x05)"])
case("rdmap-version-3-tagged", "rdmap.version-invalid", "read",
     frame(lambda p: tagged(OP["write"], p.sink_stag, p.sink_to, b"w" * 8, rdmap=0xC0)),
     ["RDMAP version check on a tagged segment"])
case("opcode-reserved-0xc", "rdmap.opcode-invalid", "est",
     frame(lambda p: untagged(0xC, 0, 1, body=advertisement())),
     ["opcode > 7 (0x06 Unexpected OpCode)"])
case("opcode-reserved-0xf", "rdmap.opcode-invalid", "est",
     frame(lambda p: untagged(0xF, 0, 1, body=advertisement())),
     ["opcode > 7 (0x06 Unexpected OpCode)"])
NO_7306 = ("informative: RFC 7306 defines this message and has no negotiation, so the analyzer "
           "reports no rule broken; siw does not implement RFC 7306")
case("rfc7306-immediate-data", None, "est",
     frame(lambda p: untagged(0x8, 0, 1, body=b"\x11" * 8)),
     ["RFC 7306 opcodes 8-11 -> Remote Operation 0x06"], note=NO_7306)
case("rfc7306-immediate-data-se", None, "est",
     frame(lambda p: untagged(0x9, 0, 1, body=b"\x11" * 8)),
     ["RFC 7306 opcodes 8-11 -> Remote Operation 0x06"], note=NO_7306)
case("rfc7306-atomic-request", "ddp.tagged.access-rights", "read",
     frame(lambda p: untagged(0xA, 3, 1, body=struct.pack(">IIIQQQQQ", 0, 1, p.sink_stag,
                                                           p.sink_to, 1, 0, 0, 0))),
     ["RFC 7306 opcodes 8-11 -> Remote Operation 0x06", "atomic FetchAdd on QN 3"],
     note="a FetchAdd on rping's rdma_buf, registered without remote atomic access")
case("rfc7306-atomic-response", "rdmap.atomic-response-unmatched", "est",
     frame(lambda p: untagged(0xB, 3, 1, body=struct.pack(">IQ", 7, 0))),
     ["RFC 7306 opcodes 8-11 -> Remote Operation 0x06", "no Atomic Request outstanding"])
# Buffer model vs opcode (RFC 5040 §4.3: Write and Read Response tagged, the rest untagged)
case("send-in-tagged-segment", "rdmap.opcode-invalid", "read",
     frame(lambda p: tagged(OP["send"], p.sink_stag, p.sink_to, b"s" * 8)),
     ["buffer model taken from the opcode, not the T bit (MSN check 0x03)"])
case("write-in-untagged-segment", "rdmap.opcode-invalid", "est",
     frame(lambda p: untagged(OP["write"], 0, 1, body=advertisement())),
     ["buffer model taken from the opcode, not the T bit"])
case("read-request-in-tagged-segment", "rdmap.opcode-invalid", "read",
     frame(lambda p: tagged(OP["read-request"], p.sink_stag, p.sink_to, b"\0" * 28)),
     ["buffer model taken from the opcode, not the T bit"])
case("read-response-in-untagged-segment", "rdmap.opcode-invalid", "read",
     frame(lambda p: untagged(OP["read-response"], 0, 1, body=b"R" * p.read_size)),
     ["buffer model taken from the opcode, not the T bit"])
# Queue numbers (RFC 5040 §5.1, RFC 5041 §7.2)
case("send-on-qn3", "ddp.untagged.invalid-qn", "est",
     frame(lambda p: untagged(OP["send"], 3, 1, body=advertisement())),
     ["Send: QN != 0 -> Untagged 0x01"])
case("send-on-qn1", "ddp.untagged.invalid-qn", "est",
     frame(lambda p: untagged(OP["send"], 1, 1, body=advertisement())),
     ["Send: QN != 0 -> Untagged 0x01"])
case("send-on-qn2", "ddp.untagged.invalid-qn", "est",
     frame(lambda p: untagged(OP["send"], 2, 1, body=advertisement())),
     ["Send: QN != 0 -> Untagged 0x01"])
case("read-request-on-qn0", "ddp.untagged.invalid-qn", "read",
     frame(lambda p: untagged(OP["read-request"], 0, 1, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag, p.sink_to))),
     ["a Read Request on QN 0 is answered"])
case("read-request-on-qn2", "ddp.untagged.invalid-qn", "read",
     frame(lambda p: untagged(OP["read-request"], 2, 1, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag, p.sink_to))),
     ["Read Request QN check"])
case("terminate-on-qn0", "ddp.untagged.invalid-qn", "est",
     frame(lambda p: untagged(OP["terminate"], 0, 1, body=bytes([0x00, 0x00, 0x00, 0x00]))),
     ["a Terminate on QN 0: no Terminate, FIN"])
case("terminate-on-qn1", "ddp.untagged.invalid-qn", "est",
     frame(lambda p: untagged(OP["terminate"], 1, 1, body=bytes([0x00, 0x00, 0x00, 0x00]))),
     ["incoming Terminate QN check (bogus TERM)"])
# MSN (RFC 5041 §5.3, §7.2)
case("send-msn-gap", "ddp.untagged.msn-gap", "est",
     frame(lambda p: send_ad(p, msn=2)), ["Send MSN check 0x03"])
case("send-msn-far-ahead", "ddp.untagged.msn-gap", "est",
     frame(lambda p: send_ad(p, msn=0x10000)), ["Send MSN check 0x03"])
case("send-msn-duplicate", "ddp.untagged.msn-duplicate", "go",
     frame(lambda p: send_ad(p, msn=1)), ["Send MSN check 0x03 (a repeated MSN)"])
case("read-request-msn-gap", "ddp.untagged.msn-gap", "read",
     frame(lambda p: untagged(OP["read-request"], 1, 2, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag, p.sink_to))),
     ["Read Request MSN check on QN 1 (0x03)"])
case("terminate-msn-gap", "ddp.untagged.msn-gap", "est",
     frame(lambda p: untagged(OP["terminate"], 2, 5, body=bytes([0x00, 0x00, 0x00, 0x00]))),
     ["incoming Terminate MSN check (bogus TERM)"])
# MO (RFC 5041 §7.2)
case("send-first-mo-not-0", "ddp.untagged.invalid-mo", "est",
     frame(lambda p: send_ad(p, mo=8)), ["Send MO check 0x04"])
case("send-mo-gap", "ddp.untagged.invalid-mo", "est",
     lambda p: p.frame(untagged(OP["send"], 0, 1, 0, advertisement()[:8], last=False))
     + p.frame(untagged(OP["send"], 0, 1, 12, advertisement()[8:])),
     ["Send MO check 0x04 on a continuation segment"])
case("terminate-mo-not-0", "ddp.untagged.invalid-mo", "est",
     frame(lambda p: untagged(OP["terminate"], 2, 1, mo=4, body=bytes(4))),
     ["incoming Terminate MO check (bogus TERM)"])
# Receive buffers (RFC 5041 §7.2)
case("send-no-buffer", None, "est",
     lambda p: p.frame(send_ad(p)) + p.frame(send_ad(p)),
     ["Send with no posted receive (0x02): rping posts one 16-octet receive"],
     note="informative: a capture does not show posted receives, so the analyzer cannot tell; "
          "racy: when rping posts its next receive before the second Send arrives, the Send is "
          "taken as its next message and rping disconnects (FIN) instead",
     rule="ddp.untagged.no-buffer")
case("send-too-long", "ddp.untagged.message-too-long", "est",
     frame(lambda p: untagged(OP["send"], 0, 1, body=advertisement() + b"x" * 48)),
     ["a too-long Send -> Untagged 0x02, not 0x05"])
case("send-segment-after-last", "ddp.segment-after-last", "est",
     lambda p: p.frame(send_ad(p, msn=1)) + p.frame(untagged(OP["send"], 0, 1, 16, b"y" * 8)),
     ["a segment of a completed message (MSN check 0x03)"])
# RDMAP message bodies (RFC 5040 §4.4-4.8)
case("read-request-short", "rdmap.body-invalid", "read",
     frame(lambda p: untagged(OP["read-request"], 1, 1, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag, p.sink_to)[:20])),
     ["a short Read Request: siw waits for more octets"])
case("read-request-long", "ddp.untagged.message-too-long", "read",
     frame(lambda p: untagged(OP["read-request"], 1, 1, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag, p.sink_to) + b"\0" * 8)),
     ["a Read Request with extra body octets: FIN, no Terminate"],
     note="longer than the Read Request queue's 28-octet buffer (RFC 5041 §7.2)")
case("terminate-short", "rdmap.body-invalid", "est",
     frame(lambda p: untagged(OP["terminate"], 2, 1, body=b"\x00\x10")),
     ["a Terminate shorter than its control word"])
# Tagged buffers (RFC 5041 §7.2, RFC 5040 §5.3)
case("write-unknown-stag", "ddp.tagged.invalid-stag", "read",
     frame(lambda p: tagged(OP["write"], (p.sink_stag ^ 0x00555500), 0, b"w" * 8)),
     ["Write STag lookup (0x00)"])
case("write-wrong-key", "ddp.tagged.invalid-stag", "read",
     frame(lambda p: tagged(OP["write"], p.sink_stag ^ 0x5A, p.sink_to, b"w" * 8)),
     ["Write STag key octet check (0x00)"])
case("write-bounds", "ddp.tagged.bounds", "read",
     frame(lambda p: tagged(OP["write"], p.sink_stag, p.sink_to + AD_SIZE - 8, b"w" * 16)),
     ["Write bounds check (0x01)"])
case("write-below-base", "ddp.tagged.bounds", "read",
     frame(lambda p: tagged(OP["write"], p.sink_stag, p.sink_to - 8, b"w" * 8)),
     ["Write bounds check (0x01), below the base"])
case("write-to-wrap", "ddp.tagged.to-wrap", "read",
     frame(lambda p: tagged(OP["write"], p.sink_stag, 0xFFFFFFFFFFFFFFF8, b"w" * 16)),
     ["no TO-wrap check"])
ZERO_LENGTH = ("informative: neither siw nor the analyzer checks the STag of a zero-length "
               "transfer (the RTR forms of RFC 6581)")
case("write-zero-length-unknown-stag", None, "read",
     frame(lambda p: tagged(OP["write"], (p.sink_stag ^ 0x00555500), 0)),
     ["a zero-length Write (siw's own RTR form) to an STag that does not exist"],
     rule="ddp.tagged.invalid-stag", note=ZERO_LENGTH)
case("write-stag-of-other-stream", "ddp.tagged.stag-wrong-stream", "other-stream",
     None, ["Write PD check (0x02): the STag of another connection's PD"])
case("write-continuation-to-gap", "ddp.tagged.bounds", "read",
     lambda p: p.frame(tagged(OP["write"], p.sink_stag, p.sink_to, b"w" * 8, last=False))
     + p.frame(tagged(OP["write"], p.sink_stag, p.sink_to + 16, b"w" * 8)),
     ["Write continuation TO check (0x01)"],
     note="the second segment's TO is not the first's TO + length; the range is in bounds")
case("write-after-remote-invalidate", "rdmap.stag-invalidated-use", "read",
     lambda p: p.frame(untagged(OP["send-inv"], 0, p.next_send_msn(), body=advertisement(),
                                inval=p.sink_stag))
     + p.frame(tagged(OP["write"], p.sink_stag, p.sink_to, b"w" * 8)),
     ["Send with Invalidate of rping's rdma_buf STag (an MR) accepted", "Write STag validity"],
     note="the Send with Invalidate is legal; the Write after it is the violation")
# Read Requests as the Data Source (RFC 5040 §5.2, §7)
case("read-request-source-invalid-stag", "ddp.tagged.invalid-stag", "read",
     frame(lambda p: untagged(OP["read-request"], 1, 1, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag ^ 0x00555500, 0))),
     ["outbound Read Response: source STag lookup (RDMAP Remote Protection)"])
case("read-request-source-bounds", "ddp.tagged.bounds", "read",
     frame(lambda p: untagged(OP["read-request"], 1, 1, body=read_request_body(
         PEER_STAG, 0, AD_SIZE * 2, p.sink_stag, p.sink_to))),
     ["outbound Read Response: source bounds (RDMAP Remote Protection)"])
case("read-request-zero-length-invalid-stag", None, "read",
     frame(lambda p: untagged(OP["read-request"], 1, 1, body=read_request_body(
         PEER_STAG, 0, 0, p.sink_stag ^ 0x00555500, 0))),
     ["a zero-length Read Request (the Read RTR form) naming an STag that does not exist"],
     rule="ddp.tagged.invalid-stag", note=ZERO_LENGTH)
case("ird-exceeded", "rdmap.ird-exceeded", "read",
     lambda p: p.frame(untagged(OP["read-request"], 1, 1, body=read_request_body(
         PEER_STAG, 0, 16, p.sink_stag, p.sink_to)))
     + p.frame(untagged(OP["read-request"], 1, 2, body=read_request_body(
         PEER_STAG, 16, 16, p.sink_stag, p.sink_to + 16))),
     ["IRD 1 admits a second Read Request"])
# Read Responses (RFC 5040 §5.2)
case("read-response-unmatched", "rdmap.read-response-unmatched", "est",
     frame(lambda p: tagged(OP["read-response"], 0x00001200, 0, b"R" * 16)),
     ["Read Response with nothing outstanding (DDP Local Catastrophic)"])
case("read-response-after-complete", "rdmap.read-response-unmatched", "go",
     frame(lambda p: tagged(OP["read-response"], p.sink_stag, p.sink_to, b"R" * p.read_size)),
     ["a second Read Response after the Read completed (ORQ empty)"])
case("read-response-short", "rdmap.read-response-size-mismatch", "read",
     frame(lambda p: tagged(OP["read-response"], p.sink_stag, p.sink_to, b"R" * (p.read_size - 8))),
     ["Read Response total length check (0x01)"])
case("read-response-long", "rdmap.read-response-size-mismatch", "read",
     frame(lambda p: tagged(OP["read-response"], p.sink_stag, p.sink_to, b"R" * (p.read_size + 8))),
     ["Read Response total length check (0x01)"])
case("read-response-wrong-to", "ddp.tagged.bounds", "read",
     frame(lambda p: tagged(OP["read-response"], p.sink_stag, p.sink_to + 8, b"R" * (p.read_size - 8))),
     ["Read Response TO check (0x01)"],
     note="starts 8 octets into the requested sink range: outside what the Read Request named")
case("read-response-wrong-stag", "ddp.tagged.invalid-stag", "read",
     frame(lambda p: tagged(OP["read-response"], p.sink_stag ^ 0x5A, p.sink_to, b"R" * p.read_size)),
     ["Read Response sink STag check (0x00)"])
# Send with Invalidate (RFC 5040 §5.3, §6.2)
case("send-invalidate-unknown-stag", "rdmap.invalidate-refused", "est",
     frame(lambda p: untagged(OP["send-inv"], 0, 1, body=advertisement(), inval=0x00ABCD00)),
     ["Send with Invalidate: invalidation fails (0x09)"])
case("send-se-invalidate-unknown-stag", "rdmap.invalidate-refused", "est",
     frame(lambda p: untagged(OP["send-se-inv"], 0, 1, body=advertisement(), inval=0x00ABCD00)),
     ["Send with SE and Invalidate: invalidation fails (0x09)"])
# MPA framing (RFC 5044 §4)
case("ulpdu-length-short", "mpa.ulpdu-length-invalid", "est",
     lambda p: p.frame(send_ad(p)[:10]),
     ["a ULPDU_Length shorter than a header: siw waits"])
case("ulpdu-length-zero", "mpa.ulpdu-length-invalid", "est",
     lambda p: p.frame(b""), ["ULPDU_Length 0"])
case("crc-mismatch", "mpa.crc-mismatch", "est",
     lambda p: p.frame(send_ad(p), bad_crc=True), ["CRC check (LLP / MPA / 0x02)"],
     mpa={"crc": True})
case("crc-mismatch-no-crc-nonzero", "mpa.crc-unexpected", "est",
     lambda p: p.frame(send_ad(p), bad_crc=True), ["a non-zero CRC field without CRC"],
     note="not a violation that a sink must refuse: a note")
# The iwcm kernel bug (reference): peer-to-peer mode, a bad first message in the same segment as
# the RTR. Expected to kill siw's connection manager: the driver reboots and goes on.
case("p2p-bad-send-with-the-rtr", "ddp.untagged.msn-gap", "p2p-immediate",
     frame(lambda p: send_ad(p, msn=2)),
     ["RFC 6581 peer-to-peer responder: the first frame after the RTR fails",
      "the iwcm BUG (drivers/infiniband/core/iwcm.c): the guest is rebooted"],
     mpa={"p2p": True})
# MPA handshake (RFC 5044 §7.1, RFC 6581)
case("mpa-request-rev3", "mpa.handshake-invalid", "handshake",
     lambda p: p.request(rev=3), ["MPA revision > 2 (-EPROTO)"])
case("mpa-request-bad-key", None, "handshake",
     lambda p: p.request(key=b"MPA ID Req Fram3"), ["MPA key check"],
     note="informative: without the key the stream is not recognised as MPA, so no finding")
case("mpa-request-markers", None, "handshake",
     lambda p: p.request(flags=0x90), ["markers not supported (Reply R=1)"], rule="mpa.rejected",
     note="informative: asking for markers breaks no rule (RFC 5044 §7.1); siw rejects them, "
          "the analyzer reports the responder's reject (mpa.rejected), not a peer violation")
case("mpa-enhanced-pd-short", "mpa.handshake-invalid", "handshake",
     lambda p: p.request(pd=b"\x00\x01"),
     ["a revision 2 Request with the Enhanced bit and fewer than 4 private data octets"])
case("mpa-fpdu-before-reply", "mpa.handshake-invalid", "handshake",
     lambda p: p.request() + p.frame(untagged(OP["send"], 0, 1, body=advertisement())),
     ["octets after the Request before the Reply (-EPROTO)"])


class Ctx:
    pass


def run_handshake_case(ctx, c, rec):
    p = Peer(ctx.host, ctx.port, **c["mpa"])
    rec["ports"] = [p.local_port]
    data = c["build"](p)
    rec["sent"] = data.hex()
    p.send(data)
    deadline = time.monotonic() + ANSWER_SECONDS
    while len(p.rx) < 20 and not p.eof and time.monotonic() < deadline:
        p.s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = p.s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            p.eof = "reset"
            break
        if not chunk:
            p.eof = "close"
        p.rx += chunk
    if len(p.rx) >= 20 and p.rx.startswith(b"MPA ID Rep Frame"):
        rec["mpa_reply"] = p.rx[:20 + struct.unpack(">H", p.rx[18:20])[0]].hex()
        if p.rx[16] & 0x20:
            rec["answer"] = "reject"
            p.rx = p.rx[20 + struct.unpack(">H", p.rx[18:20])[0]:]
            obs = p.observe(1.0)
            rec["then"] = p.eof
        else:
            p.rx = p.rx[20 + struct.unpack(">H", p.rx[18:20])[0]:]
            rec.update(p.observe())
    else:
        rec["answer"] = p.eof or "wait"
        rec["then"] = p.eof
    p.close()


def run_other_stream(ctx, c, rec):
    a = phase_read(ctx)
    b = phase_est(ctx)
    rec["ports"] = [a.local_port, b.local_port]
    data = b.frame(tagged(OP["write"], a.sink_stag, a.sink_to, b"w" * 8))
    rec["sent"] = data.hex()
    rec["sink_stag"] = f"{a.sink_stag:#010x}"
    rec["sink_to"] = f"{a.sink_to:#x}"
    b.send(data)
    rec.update(b.observe())
    b.close()
    a.close()


def run_case(ctx, c):
    rec = {"name": c["name"], "code": c["code"], "rule": c["rule"], "phase": c["phase"],
           "behaviours": c["behaviours"], "mpa": c["mpa"] or {"crc": False}}
    if c["note"]:
        rec["note"] = c["note"]
    rec["started"] = time.time()
    try:
        if c["phase"] == "p2p-immediate":
            p = Peer(ctx.host, ctx.port, **c["mpa"])
            rec["ports"] = [p.local_port]
            p.handshake(settle=False)
            rec["mpa_reply"] = p.reply.hex()
            # the RTR siw's own initiator sends: a zero-length RDMA Write, STag 1, TO 0
            data = p.frame(tagged(OP["write"], 1, 0)) + c["build"](p)
            rec["sent"] = data.hex()
            p.send(data)
            rec.update(p.observe())
            p.close()
        elif c["phase"] == "handshake":
            run_handshake_case(ctx, c, rec)
        elif c["phase"] == "other-stream":
            run_other_stream(ctx, c, rec)
        else:
            p = PHASES[c["phase"]](ctx, **c["mpa"])
            rec["ports"] = [p.local_port]
            if hasattr(p, "sink_stag"):
                rec["sink_stag"] = f"{p.sink_stag:#010x}"
                rec["sink_to"] = f"{p.sink_to:#x}"
                rec["read_size"] = p.read_size
            data = c["build"](p)
            rec["sent"] = data.hex()
            p.send(data)
            rec.update(p.observe())
            p.close()
    except (OSError, ConnectionError) as e:
        rec["answer"] = "setup-failed"
        rec["error"] = str(e)
    rec["ended"] = time.time()
    time.sleep(0.3)  # the last segments reach the capture before the next connection
    return rec


def kernel_bug():
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [l for l in out.splitlines() if "BUG" in l or "Oops" in l or "invalid opcode" in l]
    return "\n".join(lines[-5:])


def start_rping(ctx):
    log = open(os.path.join(ctx.out, "rping.log"), "a")
    log.write(f"--- start {time.time()}\n")
    log.flush()
    ctx.rping = subprocess.Popen(["rping", "-s", "-P", "-a", ctx.host, "-p", str(ctx.port),
                                  "-S", str(AD_SIZE)], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        if subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout.find(
                f":{ctx.port} ") >= 0:
            return
        time.sleep(0.1)
    raise SystemExit("rping -s -P does not listen")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="10.0.2.15")
    ap.add_argument("--port", type=int, default=7174)
    ap.add_argument("--out", default="/out")
    ap.add_argument("--start", type=int, default=0, help="index of the first case to run")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for i, c in enumerate(CASES):
            print(i, c["name"], c["code"], c["phase"])
        return 0
    ctx = Ctx()
    ctx.host, ctx.port, ctx.out = a.host, a.port, a.out
    start_rping(ctx)
    results = open(os.path.join(a.out, "cases.jsonl"), "a")
    only = set(filter(None, a.only.split(",")))
    bug_before = kernel_bug()
    for i, c in enumerate(CASES):
        if i < a.start or (only and c["name"] not in only):
            continue
        with open(os.path.join(a.out, "progress"), "w") as f:
            f.write(f"{i} {c['name']}\n")
        if ctx.rping.poll() is not None:
            start_rping(ctx)
        rec = run_case(ctx, c)
        rec["index"] = i
        rec["rping_alive"] = ctx.rping.poll() is None
        bug = kernel_bug()
        died = bug != bug_before
        if not died and rec["answer"] == "setup-failed":
            # a dead iwcm accepts no connection: try one clean connection
            try:
                phase_est(ctx).close()
            except (OSError, ConnectionError):
                died = True
        if died:
            rec["answer_before_death"] = rec["answer"]
            rec["answer"] = "vm-died"
            rec["kernel"] = bug
        results.write(json.dumps(rec) + "\n")
        results.flush()
        os.fsync(results.fileno())
        print(f"[oracle] {i:2d} {c['name']:36s} {rec['answer']:9s} "
              f"{(rec.get('terminate') or {}).get('triple') or ''}", flush=True)
        if died:
            return 3
    with open(os.path.join(a.out, "progress"), "w") as f:
        f.write(f"{len(CASES)} done\n")
    ctx.rping.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
