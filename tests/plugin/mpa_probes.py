# SPDX-License-Identifier: GPL-2.0-or-later
"""A capture of MPA probes against a listener (issue 39): one TCP connection per MPA Request
variant, each answered as Linux siw answers it: a Request it cannot parse (a foreign key, an
unknown revision) by a reset, a valid one by its MPA Reply (RFC 5044 §7.1, RFC 6581 §3: the
Enhanced flag and the IRD/ORD word in the private data) and an orderly close.
PROBES lists (name, MPA revision sent or None, CRC flag, answered with a Reply)."""
import struct

REQ_KEY = b"MPA ID Req Frame"
REP_KEY = b"MPA ID Rep Frame"
CLIENT, SERVER, PORT = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 7174


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _frame(src, dst, sport, dport, seq, ack, flags, payload=b"", options=b"", sll=False):
    """One TCP segment over IPv4 (4-octet addresses) or IPv6 (16), on Ethernet or in a Linux
    cooked (SLL2) header as `tcpdump -i any` writes it."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (20 + len(options)) // 4 << 4, flags,
                      65535, 0, 0) + options
    v6 = len(src) == 16
    if v6:
        pseudo = src + dst + struct.pack("!I3xB", len(tcp) + len(payload), 6)
    else:
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
    tcp = tcp[:16] + struct.pack("!H", _csum(pseudo + tcp + payload)) + tcp[18:]
    if v6:
        ip = struct.pack("!IHBB16s16s", 0x60000000, len(tcp) + len(payload), 6, 64, src, dst)
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64,
                         6, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    ethertype = 0x86DD if v6 else 0x0800
    if sll:
        link = struct.pack("!HHIHBB8s", ethertype, 0, 1, 772, 0, 6, bytes(8))
    else:
        link = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + struct.pack("!H", ethertype)
    return link + ip + tcp + payload


def _mpa(key, flags, rev, pd=b""):
    return key + bytes([flags, rev]) + struct.pack("!H", len(pd)) + pd


# RFC 6581 §3: A (peer-to-peer) with IRD 8; C (a zero-length RDMA Write as the RTR, siw's
# default) with ORD 8.
_IRD_ORD = struct.pack("!HH", 0x8000 | 8, 0x8000 | 8)
_M, _C, _ENHANCED = 0x80, 0x40, 0x10

# (name, request octets, reply octets or None for a reset, revision, crc)
_PROBES = [
    ("garbage key", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", None, None, False),
    ("wrong revision", _mpa(REQ_KEY, 0, 7), None, 7, False),
    ("v1", _mpa(REQ_KEY, 0, 1), _mpa(REP_KEY, 0, 1), 1, False),
    ("v2", _mpa(REQ_KEY, _ENHANCED, 2, _IRD_ORD), _mpa(REP_KEY, _ENHANCED, 2, _IRD_ORD), 2, False),
    ("v2 crc", _mpa(REQ_KEY, _ENHANCED | _C, 2, _IRD_ORD),
     _mpa(REP_KEY, _ENHANCED | _C, 2, _IRD_ORD), 2, True),
]
PROBES = [(name, rev, crc, reply is not None) for name, _, reply, rev, crc in _PROBES]


# How a real prober's capture may differ from the plain one (each also checked by the plugin
# test): TCP timestamps on every segment, a listener on an unregistered port, `tcpdump -i any`
# on loopback (SLL2, 127.0.0.1 both ways), IPv6, one client port with random initial sequence
# numbers, a listener that closes (FIN) rather than resets, a capture started after the TCP
# handshakes. ("split", a Request written in two parts, key then the rest, is written too but
# not in VARIANTS: its finding lies on the first part's frame, which the test does not model.)
VARIANTS = ("timestamps", "port", "loopback", "ipv6", "reused-port", "fin", "no-handshake")


def write(path, one_port=False, variants=()):
    """Writes the capture; returns per probe (client port, request frame, reply frame or None).
    one_port: every connection from the same client port (a prober reusing its 4-tuple);
    variants: names from VARIANTS."""
    variants = set(variants)
    one_port = one_port or "reused-port" in variants
    client, server, port = CLIENT, SERVER, PORT
    if "loopback" in variants:
        client = server = bytes([127, 0, 0, 1])
    if "ipv6" in variants:
        client, server = bytes(15) + b"\x01", bytes(15) + b"\x02"
    if "port" in variants:
        port = 38211
    sll = "loopback" in variants
    stamp = [0]

    def options():
        if "timestamps" not in variants:
            return b""
        stamp[0] += 1
        return b"\x01\x01\x08\x0a" + struct.pack("!II", stamp[0], stamp[0])

    frames, where = [], []

    def add(to_server, cport, seq, ack, flags, payload=b""):
        src, dst, sp, dp = ((client, server, cport, port) if to_server
                            else (server, client, port, cport))
        frames.append(_frame(src, dst, sp, dp, seq, ack, flags, payload, options(), sll))

    for i, (_, req, rep, _, _) in enumerate(_PROBES):
        cport = 40001 + (0 if one_port else i)
        if "reused-port" in variants:
            cseq, sseq = ((5 - i) * 0x1234567) & 0xFFFFFFFF, ((i * 0x9876543) ^ 0x5A5A5A5A)
        else:
            cseq, sseq = 1000 * (i + 1), 5000 * (i + 1)
        if "no-handshake" not in variants:
            add(True, cport, cseq, 0, 0x02)
            add(False, cport, sseq, cseq + 1, 0x12)
            add(True, cport, cseq + 1, sseq + 1, 0x10)
        if "split" in variants:
            add(True, cport, cseq + 1, sseq + 1, 0x18, req[:16])
        add(True, cport, cseq + 1 + ("split" in variants) * 16, sseq + 1, 0x18,
            req[16:] if "split" in variants else req)
        req_frame = len(frames)
        cend = cseq + 1 + len(req)
        if rep is None:
            if "fin" in variants:
                add(False, cport, sseq + 1, cend, 0x11)
                where.append((cport, req_frame, None))
                add(True, cport, cend, sseq + 2, 0x11)
                add(False, cport, sseq + 2, cend + 1, 0x10)
            else:
                add(False, cport, sseq + 1, cend, 0x14)  # RST
                where.append((cport, req_frame, None))
            continue
        add(False, cport, sseq + 1, cend, 0x18, rep)
        where.append((cport, req_frame, len(frames)))
        send = sseq + 1 + len(rep)
        add(True, cport, cend, send, 0x11)
        add(False, cport, send, cend + 1, 0x11)
        add(True, cport, cend + 1, send + 1, 0x10)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 276 if sll else 1))
        for n, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000, 20 * n, len(fr), len(fr)) + fr)
    return where
